"""WebShop rules of the Co-Harness critic: failure signatures read from packet transcripts,
their categories, and the local edits that answer them.

Signatures come from the rendered messages and ``signals`` only (the instruction, page
texts, clickables, the agent's calls), never from gold data. They name what went wrong in
a way every task shares: ``buy_without_options`` (bought while an option group holding a
value the instruction names was left unselected), ``over_budget`` (bought above the
instruction's price bound), ``invalid_click`` (clicked a value that is not a clickable,
e.g. a product title), ``search_loop`` (the same search repeated), ``repeat_click`` (the
same option clicked again and again), ``stall`` (browsing a product's sub-pages until the
round limit), ``text_only`` (turns without a tool call), ``title_mismatch`` (opened a
product whose title covers fewer of the instruction's terms than another visible title)
and ``wrong_option`` (selected a value the instruction does not name while it names
another on the page: a misread, so ``agent_error``).
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

from baselines.co_harness.edits import (
    Fix,
    add_hook,
    add_skill,
    guard_hook,
    hint_hook,
    reword_prompt,
    tool_hint,
)

NAV = {"back to search", "next >", "< prev", "description", "features", "reviews", "buy now", "search"}
SUBPAGES = ("description", "features", "reviews")
PRODUCT = "[product_id]"
_AA = re.compile(r"Available Actions: (\{.*\})\s*$")
_PRICE = re.compile(r"Price: \$([\d,]+(?:\.\d+)?)")
_BOUND = re.compile(r"price lower than ([\d,]+(?:\.\d+)?) dollars")
_INSTRUCTION = re.compile(r"Instruction: \[SEP\] (.*?) \[SEP\]")
_WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset({"i", "a", "an", "the", "and", "or", "with", "in", "of", "for", "to", "is", "that", "which", "me",
                  "my", "need", "want", "buy", "find", "looking", "am", "it", "its", "size", "color", "colour", "pack",
                  "price", "lower", "than", "dollars", "please"})

# signature -> category, in priority order when a failure shows several; agent_error = intrinsic
RULES: tuple[tuple[str, str], ...] = (
    ("buy_without_options", "middleware_mismatch"),
    ("over_budget", "middleware_mismatch"),
    ("invalid_click", "tool_schema_error"),
    ("stall", "middleware_mismatch"),
    ("search_loop", "memory_overflow"),
    ("repeat_click", "memory_overflow"),
    ("title_mismatch", "prompt_ambiguity"),
    ("text_only", "prompt_ambiguity"),
    ("wrong_option", "agent_error"),
)
ALSO: dict[str, tuple[str, ...]] = {
    "buy_without_options": ("skill_missing",),
    "over_budget": ("prompt_ambiguity",),
    "invalid_click": ("middleware_mismatch",),
    "search_loop": ("skill_missing",),
}


# ----------------------------------------------------------------------------- signatures

def _clickables(line: str) -> list[str] | None:
    m = _AA.search(line)
    if not m:
        return None
    try:
        return [str(c).lower() for c in ast.literal_eval(m.group(1)).get("clickables", [])]
    except (ValueError, SyntaxError, AttributeError):
        return None


def _value(line: str) -> str:
    try:
        args = json.loads(line.split(" ", 2)[2])
    except (ValueError, IndexError):
        return ""
    return " ".join(str(next(iter(args.values()), "")).lower().split()) if isinstance(args, dict) and args else ""


def _named(value: str, instruction: str) -> bool:
    """``value`` appears in the instruction as a whole phrase (``large`` is not in ``x-large``)."""
    return bool(value) and re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", instruction) is not None


def _segments(obs: str) -> list[str]:
    return [s.strip() for s in obs.split("[SEP]")]


def _terms(instruction: str) -> set[str]:
    return {w for w in _WORD.findall(instruction.split(", and price lower")[0]) if w not in STOP and not w.isdigit()}


def _coverage(title: str, terms: set[str]) -> float:
    return len(terms & set(_WORD.findall(title.lower()))) / len(terms) if terms else 1.0


def _result_titles(obs: str) -> list[str]:
    seg = _segments(obs)
    return [seg[i + 1] for i, s in enumerate(seg[:-1]) if s == "[PRODUCT_ID]"]


def _product_title(obs: str) -> str:
    seg = _segments(obs)
    at = next((i for i, s in enumerate(seg) if s.startswith("Price: $")), 0)
    return seg[at - 1] if at > 0 else ""


def signatures(trace: dict[str, Any]) -> list[str]:
    """The WebShop signatures one failure trace shows, sorted."""
    found: set[str] = set()
    sig = trace.get("signals", {})
    lines = [str(x) for x in trace.get("messages", [])]
    if sig.get("text_only_turns", 0):
        found.add("text_only")
    if "search[" in str(sig.get("repeated", "")):
        found.add("search_loop")
    instruction = next((m.group(1).lower() for line in lines if (m := _INSTRUCTION.search(line))), "")
    terms = _terms(instruction)
    obs, clickables = "", None
    selected: list[str] = []
    last, same, subs = "", 0, 0
    for line in lines:
        if line.startswith("OBSERVATION: "):
            obs, clickables = line, _clickables(line)  # None when cut off: validity unknown
            continue
        if not line.startswith("ASSISTANT_TOOL: click_action"):
            continue
        v = _value(line)
        same = same + 1 if v == last else 1
        last = v
        valid = clickables is None or v in clickables
        if not valid:
            found.add("invalid_click")
        elif same >= 3 and v not in NAV:
            found.add("repeat_click")
        if v in SUBPAGES:
            subs += 1
        if v == PRODUCT:
            selected = []
        elif v == "buy now":
            _at_buy(found, obs, clickables or [], selected, instruction)
        elif valid and v not in NAV:
            selected.append(v)
    if sig.get("task_limit_reached") and subs >= 3:
        found.add("stall")
    if title_mismatch(lines, terms):
        found.add("title_mismatch")
    return sorted(found)


def _groups(obs: str, options: list[str]) -> list[list[str]]:
    """Option groups of a product page: the clickable values after each group name, between
    '< Prev' and the title (one group of all options when the page text was cut)."""
    seg = [x.lower() for x in _segments(obs)]
    if "< prev" not in seg or "...[middle truncated]..." in obs:
        return [options] if options else []
    groups: list[list[str]] = []
    for x in seg[seg.index("< prev") + 1:]:
        if x in options and groups:
            groups[-1].append(x)
        elif x.startswith("price: $"):
            break
        else:
            groups.append([])
    return [g for g in groups if g]


def _at_buy(found: set[str], obs: str, clickables: list[str], selected: list[str], instruction: str) -> None:
    options = [c for c in clickables if c not in NAV and c != PRODUCT]
    for group in _groups(obs, options):
        named = [o for o in group if _named(o, instruction)]
        chosen = [o for o in group if o in selected]
        if named and not chosen:
            found.add("buy_without_options")
        elif named and any(o not in named for o in chosen):
            found.add("wrong_option")
    price, bound = _PRICE.search(obs), _BOUND.search(obs)
    if price and bound and float(price.group(1).replace(",", "")) > float(bound.group(1).replace(",", "")):
        found.add("over_budget")


def title_mismatch(lines: list[str], terms: set[str]) -> bool:
    """A product was opened whose title covers fewer instruction terms than another title on
    the results page it was opened from (titles on both pages are visible in the packet)."""
    results, opened = "", False
    for line in lines:
        if line.startswith("ASSISTANT_TOOL: click_action"):
            opened = _value(line) == PRODUCT
            continue
        if not line.startswith("OBSERVATION: "):
            continue
        if opened and results and "Price: $" in line:
            titles = _result_titles(results)
            chosen = _coverage(_product_title(line), terms)
            if titles and max(_coverage(t, terms) for t in titles) > chosen + 1e-9:
                return True
        opened = False
        c = _clickables(line) or []
        if "next >" in c and PRODUCT in c:
            results = line
    return False


# ----------------------------------------------------------------------------- fixes

_BUY = '    a = ctx["action"]\n    p = ctx["predicates"]\n    buy = a["value_normalized"] == "buy now"\n'
_WANT = '    t = ctx["task"]\n    want = [x for x in (t["required_color"], t["required_size"]) if x]\n'
_POST = '    p = ctx["predicates"]\n'


def fixes() -> list[Fix]:
    """Ordered catalogue: (category, signature) -> one local edit of the WebShop harness."""
    return [
        Fix("middleware_mismatch", "buy_without_options", "Block 'buy now' while required options are unselected.",
            add_hook("on_before_action", guard_hook(
                "buy and p[\"required_options_unselected\"]",
                "\"Select the required options (color, size and every other option group the instruction names) "
                "before you buy, then click 'buy now'.\" + (\" The instruction asks for: \" + \", \".join(want) + "
                "\".\" if want else \"\")", "option_blocks", setup=_BUY + _WANT))),
        Fix("skill_missing", "buy_without_options", "Skill: select every named option before buying.",
            add_skill("On a product page, select a value in every option group the instruction names "
                      "(color, size, ...) before you click 'buy now'.")),
        Fix("middleware_mismatch", "over_budget", "Block 'buy now' on a product over the price bound.",
            add_hook("on_before_action", guard_hook(
                "buy and p[\"product_price_over_budget\"]",
                "\"This product costs more than your budget. Click '< prev' and choose a cheaper product that "
                "matches the instruction.\"", "budget_blocks", setup=_BUY))),
        Fix("prompt_ambiguity", "over_budget", "Add a prompt rule about the price bound.",
            reword_prompt(r"^8\. ", "8. Never buy a product that costs more than the instruction's price bound; "
                                     "go back and choose a cheaper one.")),
        Fix("tool_schema_error", "invalid_click", "Say in the click_action description to click product ids.",
            tool_hint("click_action", "To open a product, click its product id as listed in the clickables, "
                                      "never its title.")),
        Fix("middleware_mismatch", "invalid_click", "Block clicks on values that are not clickable.",
            add_hook("on_before_action", guard_hook(
                "a[\"tool\"] == \"click_action\" and a[\"value_normalized\"] not in ctx[\"state\"][\"clickables\"]",
                "\"That value is not clickable. Click exactly one of the available clickables (for a product, "
                "its product id).\"", "invalid_blocks", limit=3, setup='    a = ctx["action"]\n'))),
        Fix("middleware_mismatch", "stall", "Hint to decide when the agent stalls on a product page.",
            add_hook("on_post_step", hint_hook(
                "on_post_step", "p[\"product_page_stalled\"] and p[\"buy_now_available\"]",
                "\"You have been on this product page too long. Make a decision now: click 'buy now' if it "
                "matches the instruction, else 'back to search'.\"", setup=_POST))),
        Fix("memory_overflow", "search_loop", "Hint when the same search is repeated.",
            add_hook("on_post_step", hint_hook(
                "on_post_step", "p[\"duplicate_search_repeated\"] or p[\"search_loop_detected\"]",
                "\"You already searched these keywords. Stop searching and click the closest matching product "
                "in the results.\"", setup=_POST))),
        Fix("skill_missing", "search_loop", "Skill: do not repeat a search.",
            add_skill("Do not run the same search again; if the results look close, click the best-matching product.")),
        Fix("memory_overflow", "repeat_click", "Hint when the same option is clicked again.",
            add_hook("on_post_step", hint_hook(
                "on_post_step", "p[\"same_click_repeated\"] and ctx[\"state\"][\"page_type\"] == \"product_detail\"",
                "\"You already clicked that option, so it is selected. Select the next option or click 'buy now'.\"",
                setup=_POST))),
        Fix("prompt_ambiguity", "title_mismatch", "Reword the results-page rule: compare titles with every term.",
            reword_prompt(r"^2\. On search results", "2. On search results: compare each title with ALL key terms "
                          "of the instruction (brand, product type, every listed feature) and click the product "
                          "whose title contains the most of them.")),
        Fix("prompt_ambiguity", "text_only", "Reword the tool-call rule: decide with a click, not text.",
            reword_prompt(r"^1\. You MUST call a tool", "1. You MUST call a tool EVERY turn (search_action or "
                          "click_action). When unsure on a product page, make a decision and click; a reply with "
                          "only text wastes a round.")),
    ]
