"""``template`` on WebShop: detect failure signatures in the packet, write matching hooks.

Signatures (from the rendered transcripts only): buying without selecting any option on
a page that offers options, buying over the instruction's price bound, repeated searches,
repeated clicks on one value, clicks on values that are not clickable, stalling on a
product page until the round limit, text-only turns. Rules are generic (predicates,
never product ids or titles). ``baselines/template.py`` dispatches here for "webshop".
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

NAV = {"back to search", "next >", "< prev", "description", "features", "reviews", "buy now", "search"}
_AA = re.compile(r"Available Actions: (\{.*\})\s*$")
_PRICE = re.compile(r"Price: \$([\d,]+(?:\.\d+)?)")
_BOUND = re.compile(r"price lower than ([\d,]+(?:\.\d+)?) dollars")

GUARDS = {
    "buy_without_options": '''    if buy and p["required_options_unselected"] and nb.get("option_blocks", 0) < 2:
        nb["option_blocks"] = nb.get("option_blocks", 0) + 1
        return {"type": "block_and_prompt", "message": "Select the required options (color, size and the other option groups the instruction asks for) before you buy, then click 'buy now'."}''',
    "over_budget": '''    if buy and p["product_price_over_budget"] and nb.get("budget_blocks", 0) < 2:
        nb["budget_blocks"] = nb.get("budget_blocks", 0) + 1
        return {"type": "block_and_prompt", "message": "This product is over your budget. Click '< prev' and choose a cheaper product that matches the instruction."}''',
    "invalid_click": '''    a = ctx["action"]
    if a["tool"] == "click_action" and a["value_normalized"] not in ctx["state"]["clickables"] and nb.get("invalid_blocks", 0) < 3:
        nb["invalid_blocks"] = nb.get("invalid_blocks", 0) + 1
        return {"type": "block_and_prompt", "message": "That value is not clickable. Click exactly one of the available clickables (for a product, its product id)."}''',
}
HINTS = {
    "search_loop": '''    if p["duplicate_search_repeated"] or p["search_loop_detected"]:
        out.append("You searched the same keywords again. Stop searching and click the closest matching product in the results.")''',
    "repeat_click": '''    if p["same_click_repeated"] and ctx["state"]["page_type"] == "product_detail":
        out.append("You already clicked that option; it is selected. Select the next option or click 'buy now'.")''',
    "stall": '''    if p["product_page_stalled"] and p["buy_now_available"]:
        out.append("You have been on this product page too long. Make a decision now: click 'buy now' if it matches, else 'back to search'.")''',
}
SKILL_TEXT_ONLY = '''def hook(ctx, nb):
    return {"skills": ["Every turn must be a tool call: search_action or click_action."]}
'''


def _transcripts(packet: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    return [(t, list(t.get("messages", []))) for t in packet.get("failures", [])]


def _clickables(line: str) -> list[str]:
    m = _AA.search(line)
    if not m:
        return []
    try:
        return [str(c) for c in ast.literal_eval(m.group(1)).get("clickables", [])]
    except (ValueError, SyntaxError, AttributeError):
        return []


def _value(line: str) -> str:
    try:
        args = json.loads(line.split(" ", 2)[2])
        return str(next(iter(args.values()), "")).strip().lower() if isinstance(args, dict) and args else ""
    except (ValueError, IndexError):
        return ""


def detect(packet: dict[str, Any]) -> list[str]:
    """Failure signatures present in the packet's traces, sorted."""
    found: set[str] = set()
    for trace, lines in _transcripts(packet):
        sig = trace.get("signals", {})
        if sig.get("text_only_turns", 0):
            found.add("text_only")
        if "search[" in str(sig.get("repeated", "")):
            found.add("search_loop")
        clickables: list[str] = []
        obs = ""
        since_product: list[str] = []
        last_click = ""
        same = 0
        for line in lines:
            if line.startswith("OBSERVATION: "):
                obs, clickables = line, [c.lower() for c in _clickables(line)] or clickables
                continue
            if not line.startswith("ASSISTANT_TOOL: click_action"):
                continue
            v = _value(line)
            same = same + 1 if v == last_click else 1
            last_click = v
            if same >= 3 and v not in NAV:
                found.add("repeat_click")
            if clickables and v not in clickables:
                found.add("invalid_click")
            if v == "[product_id]":
                since_product = []
            elif v == "buy now":
                options_here = [c for c in clickables if c not in NAV and c != "[product_id]"]
                if options_here and not any(c in options_here for c in since_product):
                    found.add("buy_without_options")
                price, bound = _PRICE.search(obs), _BOUND.search(obs)
                if price and bound and float(price.group(1).replace(",", "")) > float(bound.group(1).replace(",", "")):
                    found.add("over_budget")
            else:
                since_product.append(v)
        subs = sum(1 for line in lines if line.startswith("ASSISTANT_TOOL: click_action") and _value(line) in ("description", "features", "reviews"))
        if sig.get("task_limit_reached") and subs >= 3:
            found.add("stall")
    return sorted(found)


def build_hooks(signatures: list[str]) -> dict[str, str]:
    hooks: dict[str, str] = {}
    guards = [GUARDS[s] for s in ("invalid_click", "buy_without_options", "over_budget") if s in signatures]
    if guards:
        hooks["on_before_action"] = ("def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n"
                                     "    buy = ctx[\"action\"][\"value_normalized\"] == \"buy now\"\n"
                                     + "\n".join(guards) + "\n    return None\n")
    hints = [HINTS[s] for s in ("search_loop", "repeat_click", "stall") if s in signatures]
    if hints:
        hooks["on_post_step"] = (
            "def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n    out = []\n" + "\n".join(hints)
            + "\n    for msg in out:\n        if nb.get(\"last_hint\") != msg:\n            nb[\"last_hint\"] = msg\n"
            "            return {\"type\": \"inject_hint\", \"message\": msg}\n    return None\n"
        )
    if "text_only" in signatures:
        hooks["on_init"] = SKILL_TEXT_ONLY
    return hooks
