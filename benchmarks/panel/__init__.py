"""Test patches for the simulated targets: trigger-word-only lines, guards, the agreement panel.

- ``trigger_word_patches(benchmark)``: nonsense advice made only of the words the sim's own
  concept patterns look for (pairs and triples drawn across concepts), carried by the
  system prompt (a diff), ``on_init`` skills or a ``make_pre_hint`` hint. A sim that reads
  advice as a model does pays nothing for them (issue 13, item 1).
- ``guard_patches(benchmark)``: guards of the Harness-R1 demo's kind — unbounded blocks
  (no per-episode cap) whose messages name the fix — in phrasings written here, plus for
  WebShop the published demo patch (``tests/fixtures/harness_r1/``, Apache-2.0, unchanged).
- ``panel(benchmark)``: the agreement benchmark's hand-written and generated patches
  (``benchmarks/agreement.py`` adds the baselines' outputs on the batch's packet).

Every patch is a ``(name, family, text)`` triple; ``text`` is what ``env.step`` takes.
"""
from __future__ import annotations

import difflib
import importlib
import json
import random
from pathlib import Path

from harness_gym.benchmarks.sim_reading import STOPWORDS, vocabulary

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PUBLISHED_WEBSHOP_GUARD = ROOT / "tests" / "fixtures" / "harness_r1" / "webshop_demo_patch.json"
CARRIERS = ("prompt", "skills", "hints")


def _patch(benchmark: str, description: str, hooks: dict[str, str]) -> str:
    body = {"schema_version": "harness-r1-patch-v1", "benchmark": benchmark, "description": description,
            "actions": [{"type": "add_code_hook", "hook": point, "code": code} for point, code in hooks.items()]}
    return f"<think>\n{description}\n</think>\n<patch>{json.dumps(body, indent=1)}</patch>"


def _default_prompt(benchmark: str) -> str:
    from harness_gym.evaluation.benchmarks import get_benchmark

    return get_benchmark(benchmark).default_harness().system_prompt()


def prompt_diff(benchmark: str, lines: list[str]) -> str:
    """A unified diff appending ``lines`` to the default ``system_prompt.md``."""
    old = _default_prompt(benchmark)
    new = old + ("" if old.endswith("\n") else "\n") + "".join(line + "\n" for line in lines)
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        "a/system_prompt.md", "b/system_prompt.md"))


def skills_patch(benchmark: str, lines: list[str], description: str) -> str:
    code = "def hook(ctx, nb):\n    return {\"skills\": " + json.dumps(lines) + "}\n"
    return _patch(benchmark, description, {"on_init": code})


def hints_patch(benchmark: str, lines: list[str], description: str) -> str:
    """A pre-hint that cycles through ``lines``, one per round."""
    code = ("def hook(ctx, nb):\n    lines = " + json.dumps(lines) + "\n"
            "    i = nb.get(\"i\", 0)\n    nb[\"i\"] = i + 1\n"
            "    return {\"message\": lines[i % len(lines)]}\n")
    return _patch(benchmark, description, {"make_pre_hint": code})


def carry(benchmark: str, carrier: str, lines: list[str], description: str) -> str:
    if carrier == "prompt":
        return prompt_diff(benchmark, lines)
    if carrier == "skills":
        return skills_patch(benchmark, lines, description)
    if carrier == "hints":
        return hints_patch(benchmark, lines, description)
    raise ValueError(f"carrier={carrier!r}: expected one of {CARRIERS}")


# --- trigger words ---------------------------------------------------------------------------
def concept_words(benchmark: str) -> dict[str, list[str]]:
    """Per concept of the sim, short trigger phrases (one or two of its literal words) its pattern matches."""
    sim = importlib.import_module(f"harness_gym.benchmarks.{benchmark}.sim")
    out: dict[str, list[str]] = {}
    for name, pattern in sim.CONCEPTS.items():
        words = sorted(vocabulary({name: pattern}))
        singles = [w for w in words if w not in STOPWORDS and pattern.search(w)]
        pairs = [f"{a} {b}" for a in words for b in words if a != b and not pattern.search(a)
                 and not pattern.search(b) and pattern.search(f"{a} {b}")]
        out[name] = singles + pairs
    return {k: v for k, v in out.items() if v}


def trigger_lines(benchmark: str, rng: random.Random, n_lines: int = 4) -> list[str]:
    """``n_lines`` lines, each two or three trigger phrases of different concepts."""
    words = concept_words(benchmark)
    concepts = sorted(words)
    lines = []
    for _ in range(n_lines):
        k = rng.choice((2, 2, 3))
        picked = rng.sample(concepts, k)
        lines.append(" ".join(rng.choice(words[c]) for c in picked))
    return lines


def trigger_word_patches(benchmark: str, count: int = 6, seed: int = 0) -> list[tuple[str, str, str]]:
    """``count`` trigger-word-only patches, rotating over the three carriers."""
    rng = random.Random(f"trigger:{benchmark}:{seed}")
    out = []
    for i in range(count):
        carrier = CARRIERS[i % len(CARRIERS)]
        lines = trigger_lines(benchmark, rng)
        out.append((f"trigger-{carrier}-{i}", "trigger-words", carry(benchmark, carrier, lines, "Reminders.")))
    return out


# --- guards ------------------------------------------------------------------------------------
def _guard_code(body: str, helpers: str = "") -> str:
    return helpers + "def hook(ctx, nb):\n" + body + "    return None\n"


WEBSHOP_GUARDS = {
    # phrasing A: terse, names the page action
    "webshop-guard-a": '''    a = ctx["action"]
    if a["tool"] != "click_action" or a["value_normalized"] != "buy now":
        return None
    p = ctx["predicates"]
    if p["product_price_over_budget"]:
        return {"type": "block_and_prompt", "message": "Too expensive for this task. Click '< prev' and open a cheaper item from the results."}
    if p["required_options_unselected"]:
        t = ctx["task"]
        want = [v for v in (t["required_color"], t["required_size"], t["required_material"]) if v]
        named = (" (" + ", ".join(want) + ")") if want else ""
        return {"type": "block_and_prompt", "message": "Pick the values the instruction asks for" + named + " on this page first; click buy now after that."}
''',
    # phrasing B: explanatory, quotes the numbers it checked
    "webshop-guard-b": '''    a = ctx["action"]
    if a["tool"] != "click_action" or a["value_normalized"] != "buy now":
        return None
    p = ctx["predicates"]
    s = ctx["state"]
    if p["product_price_over_budget"]:
        return {"type": "block_and_prompt", "message": "Purchase refused: the price shown ($" + str(s["current_price"]) + ") is above the limit of $" + str(s["price_max"]) + ". Return to the result list and choose another product."}
    if p["required_options_unselected"]:
        return {"type": "block_and_prompt", "message": "Purchase refused: an option group on this page still has no value. Click the size/color value that the instruction specifies for each group, then try again."}
''',
}

DBBENCH_GUARDS = {
    "dbbench-guard-a": '''    p = ctx["predicates"]
    if p["commit_before_sql"]:
        return {"type": "block_and_prompt", "message": "Nothing has been queried yet. Call execute_sql with a SELECT on the table, then commit its values."}
    if p["commit_final_answer"] and p["mutation_not_attempted"]:
        return {"type": "block_and_prompt", "message": "The table is unchanged: run the INSERT or UPDATE with execute_sql, then commit []."}
    if p["commit_empty_answer"] and p["last_result_empty"] and not p["mutation_task"]:
        return {"type": "block_and_prompt", "message": "Your SELECT matched no rows. Look up how the value is stored (SELECT DISTINCT on that column, or WHERE col LIKE '%part%') and query again."}
''',
    "dbbench-guard-b": '''    p = ctx["predicates"]
    if p["commit_final_answer"] and p["no_sql_yet"]:
        return {"type": "block_and_prompt", "message": "Refused: answers must come from the database. Run a query with execute_sql first."}
    if p["commit_final_answer"] and p["mutation_task"] and p["mutation_not_attempted"]:
        return {"type": "block_and_prompt", "message": "Refused: this task changes the table. Execute the UPDATE/INSERT statement before committing."}
    if p["commit_final_answer"] and not p["mutation_task"] and p["last_result_empty"]:
        return {"type": "block_and_prompt", "message": "Refused: an empty result usually means the WHERE value is spelled differently in the table. Check it with a LIKE filter and re-run the query."}
''',
}

_KIND = '''def kind_of(name):
    parts = str(name).split()
    if parts and parts[-1].isdigit():
        parts = parts[:-1]
    return " ".join(parts)

'''
ALFWORLD_GUARDS = {
    "alfworld-guard-a": '''    t = ctx["task"]
    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    words = act.split()
    if not words:
        return None
    verb = {"pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat", "pick_cool_then_place_in_recep": "cool"}.get(t["task_type"], "")
    if verb and words[0] == verb:
        nb["done"] = True
    if words[0] == "take" and len(words) > 2 and kind_of(" ".join(words[1:words.index("from")] if "from" in words else words[1:3])) != t["target_type"]:
        return {"type": "block_and_prompt", "message": "Wrong item: the task needs a " + t["target_type"] + ". Leave this one and look for a " + t["target_type"] + "."}
    if words[0] in ("put", "move"):
        sep = " to " if words[0] == "move" else " in/on "
        dest = act.split(sep)[-1]
        if t["destination_type"] and kind_of(dest) != t["destination_type"]:
            return {"type": "block_and_prompt", "message": "Not here: the task says to place it in/on a " + t["destination_type"] + ". Go to a " + t["destination_type"] + "."}
        if verb and not nb.get("done"):
            place = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}[verb]
            return {"type": "block_and_prompt", "message": "First " + verb + " the " + t["target_type"] + " with the " + place + ", then come back and put it here."}
''',
    "alfworld-guard-b": '''    t = ctx["task"]
    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    words = act.split()
    if not words:
        return None
    verb = {"pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat", "pick_cool_then_place_in_recep": "cool"}.get(t["task_type"], "")
    if verb and words[0] == verb:
        nb["ok"] = True
    held = ctx["world"]["inventory"]
    if words[0] in ("put", "move") and held:
        sep = " to " if words[0] == "move" else " in/on "
        dest = act.split(sep)[-1]
        if kind_of(held) != t["target_type"]:
            return {"type": "block_and_prompt", "message": "Refused: you hold a " + kind_of(held) + ", but the goal object is a " + t["target_type"] + "."}
        if verb and not nb.get("ok"):
            place = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}[verb]
            return {"type": "block_and_prompt", "message": "Refused: the " + t["target_type"] + " must be " + verb + "ed at the " + place + " before it is placed."}
        if t["destination_type"] and kind_of(dest) != t["destination_type"]:
            return {"type": "block_and_prompt", "message": "Refused: the target receptacle is a " + t["destination_type"] + ", not a " + kind_of(dest) + "."}
''',
}


def guard_patches(benchmark: str) -> list[tuple[str, str, str]]:
    """Unbounded guards whose messages name the fix: two phrasings written here (+ the published one)."""
    table = {"webshop": WEBSHOP_GUARDS, "dbbench": DBBENCH_GUARDS, "alfworld": ALFWORLD_GUARDS}[benchmark]
    helpers = _KIND if benchmark == "alfworld" else ""
    out = [(name, "guard-unbounded", _patch(benchmark, f"Unbounded guard ({name}).",
                                             {"on_before_action": _guard_code(body, helpers)}))
           for name, body in table.items()]
    if benchmark == "webshop":
        out.insert(0, ("hr1-published-demo", "guard-unbounded", PUBLISHED_WEBSHOP_GUARD.read_text(encoding="utf-8")))
    return out
