"""Test patches for the simulated targets: trigger-word-only lines, guards, the agreement panel.

- ``trigger_word_patches(benchmark)``: nonsense advice made only of the words the sim's own
  concept patterns look for (pairs and triples drawn across concepts), carried by the
  system prompt (a diff), ``on_init`` skills or a ``make_pre_hint`` hint. A sim that reads
  advice as a model does pays nothing for them (issue 13, item 1).
- ``padded_trigger_patches(benchmark)``: the same lines with a filler, a digit or a noun of the world
  added to each (review 49): still no instruction, still nothing earned.
- ``instructed_trigger_patches(benchmark)``: one concept's trigger words after an instruction verb, with or
  without such a word ("run cheaper zebra", stop 50): an instruction that names nothing of the task.
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


# Words a trigger line can carry to look like more than trigger words (review 49): a filler, a digit, a noun every
# world of the benchmark has (a room's countertop, a product's brand, a database's answer). None names an action.
PADS = {
    "alfworld": ("zebra", "purple", "banana", "countertop", "cabinet"),  # a digit: numbered commands are refused
    "webshop": ("zebra", "purple", "1", "brand", "back"),
    "dbbench": ("zebra", "purple", "1", "answer", "value"),
}


def padded_trigger_patches(benchmark: str, count: int = 6, seed: int = 0) -> list[tuple[str, str, str]]:
    """``count`` patches of trigger lines, each with a word of ``PADS`` added (one pad per patch, at the end of every
    line), rotating over the carriers. Before review 49 such lines were read as help: on ALFWorld five of them earned
    +0.075 over 20 batches, more than the template."""
    rng = random.Random(f"padded:{benchmark}:{seed}")
    pads = PADS[benchmark]
    out = []
    for i in range(count):
        carrier, pad = CARRIERS[i % len(CARRIERS)], pads[i % len(pads)]
        lines = [f"{line} {pad}" for line in trigger_lines(benchmark, rng, n_lines=5)]
        out.append((f"padded-{carrier}-{pad}-{i}", "trigger-words", carry(benchmark, carrier, lines, "Reminders.")))
    return out


# Verbs an attacker puts in front of trigger words to make them read as an instruction (stop 50): the benchmarks'
# own actions and the checks any agent can run.
ATTACK_VERBS = ("use", "check", "click", "take", "turn", "run", "select", "put", "keep", "compare")


def instructed_trigger_lines(benchmark: str) -> list[tuple[str, str]]:
    """Every trigger phrase of every concept (``concept_words``) after an instruction verb, every other line with a
    word of ``PADS`` after it, verbs and pads in turn: ``(concept, line)`` pairs, one attack line each ("run cheaper",
    "keep quot table zebra", "keep fridge"). A page to go to is advice ("go back over budget" names an action),
    so no verb here names one."""
    pads = ("",) + PADS[benchmark]
    out, i = [], 0
    for concept, phrases in concept_words(benchmark).items():
        for phrase in phrases:
            verb, pad = ATTACK_VERBS[i % len(ATTACK_VERBS)], pads[i % len(pads)]
            out.append((concept, " ".join(x for x in (verb, phrase, pad) if x)))
            i += 1
    return out


def instructed_trigger_patches(benchmark: str, count: int = 6, seed: int = 0) -> list[tuple[str, str, str]]:
    """``count`` patches of five lines each: an instruction verb, one concept's trigger phrase and, in every other
    patch, a word of ``PADS`` ("run cheaper zebra", "keep quot table", "keep fridge"), rotating over the carriers.
    Before stop 51 a concept's own trigger words could ground it (a budget word counted as a page to go to, a
    room's fridge as this task's appliance) and single such lines earned +0.04 to +0.06 on the sims."""
    rng = random.Random(f"instructed:{benchmark}:{seed}")
    words = concept_words(benchmark)
    concepts = sorted(words)
    pads = PADS[benchmark]
    out = []
    for i in range(count):
        carrier = CARRIERS[i % len(CARRIERS)]
        pad = pads[(i // 2) % len(pads)] if i % 2 else ""
        lines = [" ".join(x for x in (rng.choice(ATTACK_VERBS), rng.choice(words[c]), pad) if x)
                 for c in rng.sample(concepts, 5)]
        out.append((f"instructed-{carrier}-{pad or 'bare'}-{i}", "trigger-words", carry(benchmark, carrier, lines, "Reminders.")))
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
    verb = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", "pick_cool_then_place": "cool"}.get(t["task_type"], "")
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
    verb = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", "pick_cool_then_place": "cool"}.get(t["task_type"], "")
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


# --- hand-written variants for the agreement panel -------------------------------------------
def _hook(body: str) -> str:
    return "def hook(ctx, nb):\n" + body + "    return None\n"


def _post_hint(cond: str, message: str, once: bool = True) -> str:
    guard = '    if nb.get("said"):\n        return None\n    nb["said"] = True\n' if once else ""
    return _hook(f"    if not ({cond}):\n        return None\n" + guard.replace("return None\n    nb", "return None\n    nb")
                 + f"    return {{\"type\": \"inject_hint\", \"message\": {message}}}\n")


WEBSHOP_VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "ws-guard-bounded-1": ("guard-bounded", {"on_before_action": _hook('''    a = ctx["action"]
    if a["value_normalized"] != "buy now" or nb.get("n", 0) >= 1:
        return None
    p = ctx["predicates"]
    if p["required_options_unselected"] or p["product_price_over_budget"]:
        nb["n"] = 1
        return {"type": "block_and_prompt", "message": "Check first: click the size/color values the instruction names, and go back with '< prev' if the price is above its limit."}
''')}),
    "ws-guard-vague-unbounded": ("guard-unbounded", {"on_before_action": _hook('''    if ctx["action"]["value_normalized"] == "buy now" and ctx["predicates"]["required_options_unselected"]:
        return {"type": "block_and_prompt", "message": "Not yet."}
''')}),
    "ws-hint-stall": ("hints", {"on_post_step": _post_hint('ctx["predicates"]["product_page_stalled"] and ctx["predicates"]["buy_now_available"]',
                                                          '"Decide now: click \'buy now\' if this item fits, otherwise \'back to search\'."', once=False)}),
    "ws-hint-search-loop": ("hints", {"on_post_step": _post_hint('ctx["predicates"]["duplicate_search_repeated"]',
                                                                '"Same keywords again. Open one of the product ids in the results instead."')}),
    "ws-hint-options-prehint": ("hints", {"make_pre_hint": _hook('''    s = ctx["state"]
    t = ctx["task"]
    want = [v for v in (t["required_color"], t["required_size"]) if v]
    if s["page_type"] == "product_detail" and want and not nb.get("said"):
        nb["said"] = True
        return {"message": "On this page select " + " and ".join(want) + " before clicking buy now."}
''')}),
    "ws-skills-only": ("skills", {"on_init": _hook('''    return {"skills": ["Before clicking 'buy now', click the value in each option group that the instruction names (for example its size or color).", "If the price shown is above the instruction's limit, click '< prev' and open a cheaper product."]}
''')}),
    "ws-tool-hint-only": ("skills", {"on_init": _hook('''    return {"tool_hint": "Click values are copied from the clickables list: a product id on result pages, an option value on product pages."}
''')}),
    "ws-rewrite-only": ("rewrites", {"on_before_action": _hook('''    a = ctx["action"]
    if a["value_normalized"] != "buy now" or not ctx["predicates"]["required_options_unselected"]:
        return None
    t = ctx["task"]
    for want in (t["required_color"], t["required_size"]):
        if want and want in ctx["state"]["clickables"]:
            return {"type": "rewrite_action", "action": want}
''')}),
    "ws-harmful-block-all-buys": ("harmful", {"on_before_action": _hook('''    if ctx["action"]["value_normalized"] == "buy now":
        return {"type": "block_and_prompt", "message": "No."}
''')}),
    "ws-harmful-force-back": ("harmful", {"on_post_step": _hook('''    if ctx["state"]["page_type"] == "product_detail":
        return {"type": "force_action", "action": "back to search"}
''')}),
    "ws-harmful-misleading-skill": ("harmful", {"on_init": _hook('''    return {"skills": ["Buy the first product you open right away: skip the option groups and click 'buy now' at once."]}
''')}),
    "ws-generic-skills": ("generic", {"on_init": _hook('''    return {"skills": ["Think step by step.", "Be careful.", "Double-check your work."]}
''')}),
}

DBBENCH_VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "db-guard-bounded-1": ("guard-bounded", {"on_before_action": _hook('''    p = ctx["predicates"]
    if p["commit_empty_answer"] and p["last_result_empty"] and not nb.get("n"):
        nb["n"] = 1
        return {"type": "block_and_prompt", "message": "Empty result: check the stored spelling with SELECT DISTINCT on the filtered column, then query again."}
''')}),
    "db-guard-vague-unbounded": ("guard-unbounded", {"on_before_action": _hook('''    p = ctx["predicates"]
    if p["commit_final_answer"] and p["last_result_empty"]:
        return {"type": "block_and_prompt", "message": "No."}
''')}),
    "db-hint-backticks": ("hints", {"on_post_step": _post_hint('ctx["predicates"]["last_result_error"]',
                                                             '"Names with spaces need backticks, e.g. `Year of intro`."', once=False)}),
    "db-hint-cast": ("hints", {"on_post_step": _post_hint('not ctx["predicates"]["last_result_error"] and "cast" not in ctx["state"]["last_sql"].lower()',
                                                        '"Values are TEXT: order or compare them with CAST(col AS DECIMAL)."')}),
    "db-hint-like": ("hints", {"on_post_step": _post_hint('ctx["predicates"]["last_result_empty"] and not ctx["predicates"]["mutation_task"]',
                                                        '"No rows matched. Retry with WHERE col LIKE \'%word%\'."')}),
    "db-skills-only": ("skills", {"on_init": _hook('''    return {"skills": ["Quote table and column names that contain spaces with backticks, e.g. `Player name`.", "Before an INSERT or UPDATE, SELECT a few rows and copy how values are written."]}
''')}),
    "db-rewrite-only": ("rewrites", {"on_before_action": _hook('''    if ctx["predicates"]["commit_before_sql"]:
        return {"type": "rewrite_action", "action": "execute_sql"}
''')}),
    "db-harmful-block-all-commits": ("harmful", {"on_before_action": _hook('''    if ctx["predicates"]["commit_final_answer"]:
        return {"type": "block_and_prompt", "message": "No."}
''')}),
    "db-harmful-block-all-sql": ("harmful", {"on_before_action": _hook('''    if ctx["predicates"]["execute_sql"]:
        return {"type": "block_and_prompt", "message": "Do not query; answer from the question."}
''')}),
    "db-harmful-misleading-skill": ("harmful", {"on_init": _hook('''    return {"skills": ["Never use backticks or CAST: write plain SQL and commit the first result you get."]}
''')}),
    "db-generic-skills": ("generic", {"on_init": _hook('''    return {"skills": ["Think step by step.", "Be careful.", "Double-check your work."]}
''')}),
    # graded harm, for spread: one refusal of the first commit (the agent can commit again), and a skill that asks
    # for answers in sentences (DBBench checks the bare values)
    "db-harmful-block-first-commit": ("harmful", {"on_before_action": _hook('''    if ctx["predicates"]["commit_final_answer"] and not nb.get("n"):
        nb["n"] = 1
        return {"type": "block_and_prompt", "message": "No."}
''')}),
    "db-harmful-sentence-answers": ("harmful", {"on_init": _hook('''    return {"skills": ["Commit each answer as a full sentence that explains the value, for example 'The total is 5 players.'"]}
''')}),
}

ALFWORLD_VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "alf-guard-bounded-1": ("guard-bounded", {"on_before_action": _KIND + _hook('''    t = ctx["task"]
    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    words = act.split()
    if words and words[0] in ("put", "move") and t["destination_type"] and not nb.get("n"):
        dest = act.split(" to ")[-1] if words[0] == "move" else act.split(" in/on ")[-1]
        if kind_of(dest) != t["destination_type"]:
            nb["n"] = 1
            return {"type": "block_and_prompt", "message": "Wrong place: go to a " + t["destination_type"] + " and put it there."}
''')}),
    "alf-guard-vague-unbounded": ("guard-unbounded", {"on_before_action": _KIND + _hook('''    t = ctx["task"]
    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    words = act.split()
    if words and words[0] in ("put", "move") and t["destination_type"]:
        dest = act.split(" to ")[-1] if words[0] == "move" else act.split(" in/on ")[-1]
        if kind_of(dest) != t["destination_type"]:
            return {"type": "block_and_prompt", "message": "No."}
''')}),
    "alf-hint-transform": ("hints", {"make_pre_hint": _hook('''    t = ctx["task"]
    verb = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", "pick_cool_then_place": "cool"}.get(t["task_type"], "")
    if verb and not nb.get("said"):
        nb["said"] = True
        place = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}[verb]
        return {"message": "Before placing the " + t["target_type"] + ", " + verb + " it with the " + place + "."}
''')}),
    "alf-hint-open": ("hints", {"make_pre_hint": _hook('''    if not nb.get("said"):
        nb["said"] = True
        return {"message": "Cabinets and drawers start closed: open each one you visit to see what is inside."}
''')}),
    "alf-skills-only": ("skills", {"on_init": _hook('''    return {"skills": ["Pick commands exactly as written in AVAILABLE ACTIONS.", "Take only the object type the task names; a look-alike does not count."]}
''')}),
    "alf-rewrite-only": ("rewrites", {"on_before_action": _hook('''    act = ctx["action"]["normalized"]
    adm = ctx["admissible"]
    words = act.split()
    if act and act not in adm and words and words[0] == "put":
        for cmd in adm:
            if cmd.split()[0] in ("put", "move") and len(words) > 2 and words[1] + " " + words[2] in cmd:
                return {"type": "rewrite_action", "action": cmd}
''')}),
    "alf-harmful-block-all-takes": ("harmful", {"on_before_action": _hook('''    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    if act.startswith("take "):
        return {"type": "block_and_prompt", "message": "No."}
''')}),
    "alf-harmful-force-look": ("harmful", {"on_post_step": _hook('''    if ctx["step"] % 2 == 0:
        return {"type": "force_action", "action": "look"}
''')}),
    "alf-harmful-misleading-hint": ("harmful", {"make_pre_hint": _hook('''    if not nb.get("said"):
        nb["said"] = True
        return {"message": "Put the object into the first receptacle you reach; the task type does not matter."}
''')}),
    "alf-hint-destination": ("hints", {"make_pre_hint": _hook('''    t = ctx["task"]
    if t["destination_type"] and ctx["world"]["inventory"] and not nb.get("said"):
        nb["said"] = True
        return {"message": "You hold it now: go to a " + t["destination_type"] + " and put it there."}
''')}),
    "alf-guard-substitute-bounded": ("guard-bounded", {"on_before_action": _KIND + _hook('''    t = ctx["task"]
    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]
    words = act.split()
    if words and words[0] == "take" and "from" in words and nb.get("n", 0) < 2:
        obj = " ".join(words[1:words.index("from")])
        if kind_of(obj) != t["target_type"]:
            nb["n"] = nb.get("n", 0) + 1
            return {"type": "block_and_prompt", "message": "That is not a " + t["target_type"] + "; find a " + t["target_type"] + " instead."}
''')}),
    "alf-generic-skills": ("generic", {"on_init": _hook('''    return {"skills": ["Think step by step.", "Be careful.", "Double-check your work."]}
''')}),
}

STUFFED = {
    "webshop": "Select every option, respect the budget, stop repeating searches, make a decision, click exact clickables, do not repeat clicks, match all key terms in the title.",
    "dbbench": "Use backticks, CAST numbers, check empty results with LIKE, inspect the stored format, run SQL before committing, execute the INSERT before committing, commit exact values, do not repeat the same query.",
    "alfworld": "Clean it first, use the correct receptacle, the exact object, open closed cabinets, copy admissible actions, find another one, do not heat it again, use the lamp.",
}


def hand_written(benchmark: str) -> list[tuple[str, str, str]]:
    table = {"webshop": WEBSHOP_VARIANTS, "dbbench": DBBENCH_VARIANTS, "alfworld": ALFWORLD_VARIANTS}[benchmark]
    out = [(name, family, _patch(benchmark, f"Panel variant {name}.", hooks)) for name, (family, hooks) in table.items()]
    out.append((f"{benchmark[:3]}-stuffed-skill", "stuffed", skills_patch(benchmark, [STUFFED[benchmark]], "One line naming every fix.")))
    return out


def examples(benchmark: str) -> list[tuple[str, str, str]]:
    return [(p.stem, "example", p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "examples" / "patches").glob(f"{benchmark}_*.txt"))]


def panel(benchmark: str) -> list[tuple[str, str, str]]:
    """The fixed part of the agreement panel (the policies' outputs are added per packet)."""
    return (examples(benchmark) + guard_patches(benchmark) + hand_written(benchmark)
            + trigger_word_patches(benchmark, count=6))
