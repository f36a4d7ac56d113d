"""Issue 13: the sims read advice as a model does and handle refusals as models do (all on the sim).

- trigger-word-only advice (the sims' own concept words, in the prompt, skills or hints)
  earns nothing: mean Δ ≤ 0.02 per env (4 batches here; ``benchmarks/agreement.py`` has
  the ≥10-batch figure), nor do the same lines with a filler, a digit or a noun of the world added;
- guards of the Harness-R1 demo's kind — unbounded blocks whose messages name the fix — earn
  Δ > 0 where the real target rewards them: on DBBench and ALFWorld (no real evidence against)
  every phrasing; on WebShop the published guard (which clicks the option for the agent), not
  the two phrasings written here, which only block: the real agent resends a blocked ``buy now``
  and lost with both (docs/agreement_smol.md);
- a refused call is not resent to the round limit; a rewrite runs as the new action.
"""
from __future__ import annotations

import re

import pytest

from benchmarks.panel import (
    PADS,
    PUBLISHED_WEBSHOP_GUARD,
    concept_words,
    guard_patches,
    instructed_trigger_lines,
    instructed_trigger_patches,
    padded_trigger_patches,
    prompt_diff,
    trigger_word_patches,
)
from harness_gym.benchmarks.sim_reading import Advice, blank, own_words, trigger_only, vocabulary
from harness_gym.envs.harness_edit import HarnessEditEnv

BATCHES = 4


def _deltas(benchmark: str, patches: list[str], batches: int = BATCHES, **kw) -> list[list[dict]]:
    env = HarnessEditEnv(benchmark=benchmark, batch_size=10, **kw)
    out: list[list[dict]] = []
    try:
        for seed in range(batches):
            env.reset(seed=seed)
            out.append(env.evaluate_patches(patches))
    finally:
        env.close()
    return out


def _assert_earn_nothing(benchmark: str, patches: list[tuple[str, str, str]]) -> None:
    """Every patch is valid and earns mean Δ score and Δ success ≤ 0.02 over ``BATCHES`` batches."""
    runs = _deltas(benchmark, [text for _, _, text in patches])
    for i, (name, _, _) in enumerate(patches):
        assert all(r[i]["patch_valid"] for r in runs), runs[0][i].get("patch_error")
        score = sum(r[i]["delta_score"] for r in runs) / len(runs)
        success = sum(r[i]["delta_success"] for r in runs) / len(runs)
        assert score <= 0.02 and success <= 0.02, (name, score, success)


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_trigger_word_only_patches_earn_nothing(benchmark: str) -> None:
    patches = trigger_word_patches(benchmark, count=6)
    assert {name.split("-")[1] for name, _, _ in patches} == {"prompt", "skills", "hints"}
    _assert_earn_nothing(benchmark, patches)


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_trigger_lines_padded_with_a_word_earn_nothing(benchmark: str) -> None:
    """Review 49: one word outside the trigger vocabulary — a filler, a digit, a noun every world has — made the
    same lines count as help (ALFWorld +0.075 over 20 batches, above the template). A line counts only when it is
    an instruction grounded in this task."""
    patches = padded_trigger_patches(benchmark, count=6)
    assert {name.split("-")[2] for name, _, _ in patches} == set(PADS[benchmark])
    _assert_earn_nothing(benchmark, patches)


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_an_instruction_verb_before_trigger_words_earns_nothing(benchmark: str) -> None:
    """Stop 50/51: a verb in front of one concept's trigger words ("run cheaper zebra", "keep fridge") reads as an
    instruction, and the sims let the trigger words ground it — a budget word as a page to go back to, a room's
    fridge as this task's appliance — worth +0.04 to +0.06 a line. A concept's own words never ground it."""
    patches = instructed_trigger_patches(benchmark, count=6)
    assert {name.split("-")[1] for name, _, _ in patches} == {"prompt", "skills", "hints"}
    _assert_earn_nothing(benchmark, patches)


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_no_trigger_phrase_after_a_verb_earns_alone(benchmark: str) -> None:
    """Every trigger phrase of every concept, after a verb (and half of them with a filler), alone in the system
    prompt: none earns more than 0.02 over three batches. Before stop 51 "run cheaper" earned +0.040 on WebShop
    (a budget word counted as a page to go back to) and "keep fridge" +0.060 on ALFWorld."""
    lines = instructed_trigger_lines(benchmark)
    runs = _deltas(benchmark, [prompt_diff(benchmark, [line]) for _, line in lines], batches=3)
    paid = []
    for i, (concept, line) in enumerate(lines):
        assert all(r[i]["patch_valid"] for r in runs), (line, runs[0][i].get("patch_error"))
        score = sum(r[i]["delta_score"] for r in runs) / len(runs)
        success = sum(r[i]["delta_success"] for r in runs) / len(runs)
        if score > 0.02 or success > 0.02:
            paid.append((concept, line, round(score, 3), round(success, 3)))
    assert not paid, paid


def test_a_concepts_own_words_are_blanked_before_grounding() -> None:
    from harness_gym.benchmarks.alfworld import sim as alf
    from harness_gym.benchmarks.dbbench import sim as db
    from harness_gym.benchmarks.webshop import sim as ws

    assert blank("run cheaper zebra", own_words(ws.CONCEPTS)["budget"]).split() == ["run", "zebra"]
    assert blank("keep quoted table", own_words(db.CONCEPTS)["quote_identifiers"]).split() == ["keep"]
    assert blank("keep fridge", own_words(alf.CONCEPTS)["transform"]).split() == ["keep"]
    # what names this task survives: a value, a quoted name, a page to go to
    assert "'Player Name'" in blank("quote the column 'Player Name'", own_words(db.CONCEPTS)["quote_identifiers"])
    assert ws._NAVIGATE.search(blank("go back if it is over budget", own_words(ws.CONCEPTS)["budget"]))
    assert not ws._NAVIGATE.search(blank("put budget back", own_words(ws.CONCEPTS)["budget"]))
    # a tool's name is kept whole: "make a decision and click" names click_action
    assert "click_action" in blank("decide and call click_action", own_words(ws.CONCEPTS)["stall"])


# Review of stop 51 (a red team on the WebShop sim): what grounded a line there named nothing of this task. Written
# here in other words than the red team's, one class each: a number that is not this task's price bound, "another one"
# alone, quoted or backticked trigger words, "the instruction" as where the budget is. (Title advice that points at
# the instruction or its brand stays grounded: the instruction is in view, and without it the real co-harness prompt
# rewrite, +0.008 on the real target, fell from +0.058 to -0.209 on the sim. So does a stall line naming
# click_action: "make a decision and click" names the act that ends a stall, docs/sim_webshop.md.)
UNGROUNDED_WEBSHOP = [
    ("budget", "Keep it below $5."), ("budget", "Spend no more than 1000 dollars; stay in budget."),
    ("budget", "Over the limit? Try a different one."), ("budget", "Check the budget in the instruction."),
    ("stall", "Make a decision: `buy now`."),
    ("stall", "Taking too long: 'just buy'."),
]
# ... and advice to pay more, not negated, is advice against the budget: followed, it costs
OVERSPEND_WEBSHOP = ["Go for the pricier item.", "Pick the one that costs more than the others."]
# ... as advice against deciding, or to click an option again, is against the stall or the repeated click (review of
# stop 52): never help (before: +0.033 / +0.027 over 3 batches); followed, a few rounds lost (a tab read each, a click)
AGAINST_STALL_WEBSHOP = ["No need to decide now: go back to search.", "Tap the same button again, then buy now."]


def test_lines_that_name_nothing_of_the_task_earn_nothing_on_the_webshop_sim() -> None:
    texts = [prompt_diff("webshop", [line]) for _, line in UNGROUNDED_WEBSHOP]
    texts += [prompt_diff("webshop", [line]) for line in OVERSPEND_WEBSHOP + AGAINST_STALL_WEBSHOP]
    runs = _deltas("webshop", texts, batches=3)
    mean = [(sum(r[i]["delta_score"] for r in runs) / 3, sum(r[i]["delta_success"] for r in runs) / 3)
            for i in range(len(texts))]
    paid = [(line, m) for (_, line), m in zip(UNGROUNDED_WEBSHOP, mean) if m[0] > 0.02 or m[1] > 0.02]
    assert not paid, paid
    bad = mean[len(UNGROUNDED_WEBSHOP):]
    for line, (score, success) in zip(OVERSPEND_WEBSHOP, bad):
        assert score < -0.05 and success < -0.05, (line, score, success)
    for line, (score, success) in zip(AGAINST_STALL_WEBSHOP, bad[len(OVERSPEND_WEBSHOP):]):
        assert score < 0 and success < 0, (line, score, success)


def test_told_not_to_decide_the_webshop_sim_reads_each_tab_once_and_its_flaw_never_stops() -> None:
    """An instruction against deciding (or to click an option again) followed costs a few rounds, as a prompt line
    moves a model: each tab read once (one click more); the drawn flaw reads (clicks) until the rounds run out."""
    from types import SimpleNamespace

    from harness_gym.benchmarks.webshop import sim as ws

    shopper = object.__new__(ws._Shopper)
    shopper.flaws = set()
    shopper.advice = Advice(["Never decide now: go back to the results."], vocab=ws.VOCAB, against=ws.AGAINST,
                            ground=lambda unit, concept: False)
    shopper.p = SimpleNamespace(u={**{c: 0.99 for c in ws.CONCEPTS}, "against_stall": 0.0, "against_repeat_click": 0.0})
    tabs = [SimpleNamespace(value=v) for v in ws.TABS]
    assert shopper.stalls([]) and shopper.stalls(tabs[:2]) and not shopper.stalls(tabs)
    shopper.advice = Advice(["Tap the selected size again, to be certain."], vocab=ws.VOCAB, against=ws.AGAINST,
                            ground=lambda unit, concept: False)
    once, twice = [SimpleNamespace(value="large")], [SimpleNamespace(value="large")] * 2
    assert not shopper.stalls([]) and shopper.repeats(once, "large") and not shopper.repeats(twice, "large")
    shopper.flaws = {"stall", "repeat_click"}
    assert shopper.stalls(tabs * 3) and shopper.repeats(twice * 4, "large")


def test_a_list_of_every_object_grounds_no_task_on_the_alfworld_sim() -> None:
    """Review of stop 52: a transform word before a list of the objects it applies to named every task's object and
    earned +0.04..+0.06 on the ALFWorld sim; a list singles out none (``singles_out``). Other words, other lists."""
    lines = ["Chill it before placing: apple, bowl, bread, cup, egg, lettuce, mug, pan, plate, pot, potato, tomato, winebottle.",
             "Put it in the right place: countertop, cabinet, drawer, shelf, fridge, sinkbasin, diningtable, desk, "
             "sidetable, dresser, safe, garbagecan, coffeemachine, microwave."]  # +0.050 and +0.025 before (4 batches)
    _assert_earn_nothing("alfworld", [(line, "", prompt_diff("alfworld", [line])) for line in lines])


def test_a_number_grounds_the_budget_only_when_it_is_this_tasks_bound() -> None:
    from harness_gym.benchmarks.webshop import sim as ws

    stall = own_words(ws.CONCEPTS)["stall"]
    assert not blank('Stuck: "buy now"', stall).strip(": ")  # quoted trigger words are still trigger words
    assert "'back to search'" in blank("Stuck: click 'back to search'", stall)  # quoted text naming a page stays
    assert ws.AGAINST["budget"].search("Choose what costs more")
    assert not ws.AGAINST["budget"].search("Never choose one that costs more than the bound.")
    shopper = object.__new__(ws._Shopper)  # grounds reads the goal and the product on the page only
    shopper.goal, shopper.current_product = {"price_upper": 40.0, "attributes": ["gluten free"]}, lambda: None
    assert shopper.grounds("Stay under $40 here.", "budget") and shopper.grounds("Never pay over 40.00 dollars.", "budget")
    for unit in ("Stay under $45.", "Budget: 4 items max.", "Cheaper: another one.", "Budget: see the instruction."):
        assert not shopper.grounds(unit, "budget"), unit
    assert shopper.grounds("Stuck? Go back to search.", "stall") and not shopper.grounds("Stuck? Decide: 'just buy'.", "stall")


def test_alfworld_grounds_a_transform_in_its_own_words_and_a_command_in_what_it_does() -> None:
    """Review of stop 51: "Heat it first: apple, mug, potato, egg" grounded the transform of a cool-the-apple task (any
    transform word counted), and a numbered command of the room grounded every concept ("wrong place: go to
    cabinet 1"); a hook can build such lines at run time from the admissible list."""
    from types import SimpleNamespace

    from harness_gym.benchmarks.alfworld import sim as alf

    agent = object.__new__(alf._Agent)
    agent.target, agent.dest, agent.transform = "apple", "countertop", "cool"
    agent.t = SimpleNamespace(receptacles=["cabinet 1", "drawer 2", "fridge 1"], object_at={"apple 1": "fridge 1"})
    agent.v = SimpleNamespace(admissible=["go to cabinet 1", "open drawer 2", "go to fridge 1", "use desklamp 1", "look"])
    assert agent.grounds("Cool the apple in the fridge before you put it down.", "transform")
    assert agent.grounds("Chill the apple first.", "transform")
    for unit in ("Heat it first: apple, mug, potato, egg.", "Clean the apple first.",
                 "Cool the apple, or heat it in the microwave.", "Cool it first."):
        assert not agent.grounds(unit, "transform"), unit
    assert agent.grounds("Closed? open drawer 2.", "open") and agent.grounds("Pick from: go to cabinet 1.", "admissible")
    for concept, unit in (("destination", "Wrong place: go to cabinet 1."), ("target_object", "Wrong object: open drawer 2."),
                          ("lamp", "Turn on the light: go to cabinet 1."), ("placed", "Already placed: go to cabinet 1.")):
        assert not agent.grounds(unit, concept), (concept, unit)
    assert agent.grounds("Wrong place: put it on the countertop.", "destination")  # the task's destination
    # a list of every object a transform applies to (or every place) singles none out (review of stop 52)
    for concept, unit in (("transform", "Chill these before placing: egg, bread, apple, cup, mug."),
                          ("target_object", "Right item: apple, knife, spoon or bowl."),
                          ("destination", "Put it on the countertop, the shelf, the desk or the dresser.")):
        assert not agent.grounds(unit, concept), (concept, unit)
    assert agent.grounds("Chill the apple or the egg first.", "transform")  # two, the task's among them


def test_only_an_instruction_is_advice() -> None:
    """An instruction verb (any inflection) or something to copy makes a line an instruction; trigger words with a
    filler, a digit or a noun added do not."""
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS
    from harness_gym.benchmarks.sim_reading import instructive

    for line in ("microwave fridge sinkbasin zebra", "destination zebra countertop", "title brand", "budget back",
                 "backtick answer", "backtick column 1", "over budget $1", "stored format answer",
                 "microwave's fridge's zebra"):
        assert not instructive(line), line
    for line in ("Heat the mug in the microwave.", "Opened drawers hold more: open each one.", "Wrap `Year` in backticks.",
                 "Compare with CAST(x AS DECIMAL)", "Before buying, check the price against the budget."):
        assert instructive(line), line
    assert trigger_only("backtick column 1", vocabulary(CONCEPTS))  # a bare digit is nothing to copy
    assert trigger_only("backtick's cast's", vocabulary(CONCEPTS))  # nor are two apostrophes a quotation
    assert not trigger_only("Quote 'Player name' with backticks", vocabulary(CONCEPTS))


def test_trigger_lines_match_the_concepts_but_are_trigger_only() -> None:
    import random

    from benchmarks.panel import trigger_lines
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS

    lines = trigger_lines("dbbench", random.Random(0), n_lines=20)
    vocab = vocabulary(CONCEPTS)
    for line in lines:
        hits = [c for c, p in CONCEPTS.items() if p.search(line)]
        assert len(hits) >= 2, line  # each line names two or three concepts: the attack of issue 13
        assert trigger_only(line, vocab), line
    assert trigger_only("backtick cast", vocab) and trigger_only("stored format empty", vocab)
    # the same fix written as something to do is not trigger-only
    assert not trigger_only("Compare with CAST(col AS DECIMAL) instead of text order.", vocab)
    assert not trigger_only("Wrap names like `Year of intro` in backticks.", vocab)
    assert set(concept_words("webshop")) >= {"select_options", "budget"}


def test_advice_counts_only_when_grounded_in_the_state() -> None:
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS

    names = {"Player name"}
    ground = lambda unit, concept: any(n.lower() in unit.lower() for n in names) or "`" in unit  # noqa: E731
    adv = Advice(["Quote identifiers with spaces: remember the rule."], ground=ground, vocab=vocabulary(CONCEPTS))
    assert adv.weight("quote_identifiers", CONCEPTS) == 0.0
    adv.units.append("Quote identifiers with spaces, e.g. `Player name`.")
    assert adv.weight("quote_identifiers", CONCEPTS) == 1.0


# The real WebShop target (smol:webshop, 10 batches of 10, docs/agreement_smol.md): the published guard +0.100
# Δ success; the two block-only phrasings written here -0.080 and -0.090 (a blocked ``buy now`` is resent to the
# round limit, and a blocked purchase the fuzzy reward would have counted as a success is lost).
REAL_WEBSHOP_LOSERS = {"webshop-guard-a", "webshop-guard-b"}


@pytest.mark.parametrize("benchmark", ["webshop", "dbbench", "alfworld"])
def test_unbounded_guards_that_name_the_fix_earn_a_positive_delta_where_the_real_target_does(benchmark: str) -> None:
    patches = guard_patches(benchmark)
    assert len(patches) >= (3 if benchmark == "webshop" else 2)
    assert {n for n, _, _ in patches} >= (REAL_WEBSHOP_LOSERS if benchmark == "webshop" else set())
    runs = _deltas(benchmark, [text for _, _, text in patches])
    for i, (name, _, _) in enumerate(patches):
        assert all(r[i]["patch_valid"] for r in runs), runs[0][i].get("patch_error")
        metric = "delta_success" if benchmark == "webshop" else "delta_score"
        mean = sum(r[i][metric] for r in runs) / len(runs)
        if benchmark == "webshop" and name in REAL_WEBSHOP_LOSERS:
            assert mean <= 0.02, (name, mean)  # what the real target loses, the sim does not pay for
        else:
            assert mean > 0, (name, mean)


def test_the_published_demo_patch_is_the_unchanged_fixture() -> None:
    import json

    text = PUBLISHED_WEBSHOP_GUARD.read_text(encoding="utf-8")
    assert len(text) == 2296  # demo/artifacts/patch.json at e3e6e7a5e48d, as published
    code = json.loads(text)["actions"][0]["code"]
    assert '"kind": "rewrite_action"' in code and "over the task budget" in code
    assert "nb[" not in code  # unbounded: no per-episode cap on its blocks
    assert "Apache" in (PUBLISHED_WEBSHOP_GUARD.parent / "README.md").read_text(encoding="utf-8")


_BLOCK_EVERY_BUY = '''
def on_before_action(ctx, nb):
    if ctx["action"]["value_normalized"] == "buy now":
        return {"type": "block_and_prompt", "message": "No."}
    return None
'''


def test_a_refused_buy_is_resent_as_the_real_target_resends_it_or_left() -> None:
    """The real WebShop target met unbounded blocks of `buy now` by sending it again to the round limit
    in every blocked episode (docs/agreement_smol.md, stop 29). The sim, when it does not follow the
    block, does so with p = BLOCK_REPEAT; otherwise it sends the refused call at most twice in a row
    and leaves the product for another one."""
    from harness_gym.benchmarks.webshop.sim import BLOCK_REPEAT, BLOCK_RESPONSIVENESS
    from harness_gym.harness.patch import parse_patch

    env = HarnessEditEnv(benchmark="webshop", batch_size=10)
    looped = left = 0
    try:
        for seed in range(3):
            env.reset(seed=seed)
            patched = parse_patch(_BLOCK_EVERY_BUY, env._base).apply(env._base)
            for r in env.evaluator.evaluate(patched, env._batch, env._seeds):
                calls = [tc["function"]["arguments"] for m in r.messages if m.get("role") == "assistant"
                         for tc in (m.get("tool_calls") or [])[:1]]
                run = longest = 0
                for c in calls:  # consecutive refused clicks (the search-loop flaw repeats searches on its own)
                    run = run + 1 if "buy now" in c else 0
                    longest = max(longest, run)
                if longest >= 3:  # resent to the end of the episode
                    looped += 1
                    assert r.status == "task_limit_reached" and run == longest, (r.task_id, calls)
                elif longest:
                    assert longest <= 2, (r.task_id, calls)
                    left += 1
    finally:
        env.close()
    expected = (1 - BLOCK_RESPONSIVENESS) * BLOCK_REPEAT
    assert left >= 1 and abs(looped / (looped + left) - expected) < 0.2, (looped, left, expected)


def test_a_rewrite_runs_as_the_new_action_and_its_message_is_followed() -> None:
    env = HarnessEditEnv(benchmark="webshop", batch_size=10)
    published = PUBLISHED_WEBSHOP_GUARD.read_text(encoding="utf-8")
    try:
        found = False
        for seed in range(6):
            env.reset(seed=seed)
            h = __import__("harness_gym.harness.patch", fromlist=["parse_patch"]).parse_patch(published, env._base).apply(env._base)
            for r in env.evaluator.evaluate(h, env._batch, env._seeds):
                texts = [str(m.get("content") or "") for m in r.messages]
                for i, t in enumerate(texts):
                    if t == "Select the required visible option before using Buy Now." and i + 1 < len(texts) \
                            and not texts[i + 1].startswith("Task limit"):  # a rewrite in the last round
                        m = re.match(r"Action: click\[(.*?)\]", texts[i + 1])
                        assert m and m.group(1) != "buy now", texts[i + 1][:80]  # the rewritten click ran
                        found = True
        assert found, "no rewrite in six batches"
    finally:
        env.close()


@pytest.mark.parametrize("followed", [0.0, 1.0])
def test_a_silent_rewrite_is_seen_as_the_real_target_sees_it(monkeypatch: pytest.MonkeyPatch, followed: float) -> None:
    """A rewrite without a message (buy now -> the required color) shows the model what was done
    instead. As on the real target, a rewrite that completed the options lets the next buy through;
    one that did not is met by the same buy again (stubborn episodes, to the round limit) — and an
    episode that follows it (p = BLOCK_RESPONSIVENESS) selects what is still missing itself, which
    the sim never did while it did not see silent rewrites. Both ends are run here (no episode
    follows; every episode does), not the calibrated share, so that 80 episodes show each outcome."""
    from benchmarks.panel import panel
    from harness_gym.benchmarks.webshop import sim
    from harness_gym.harness.patch import parse_patch

    monkeypatch.setattr(sim, "BLOCK_RESPONSIVENESS", followed)
    text = {n: t for n, _, t in panel("webshop")}["ws-rewrite-only"]
    env = HarnessEditEnv(benchmark="webshop", batch_size=10)
    outcomes = {"bought": 0, "looped": 0, "selected itself": 0}
    try:
        for seed in range(8):
            env.reset(seed=seed)
            h = parse_patch(text, env._base).apply(env._base)
            for r in env.evaluator.evaluate(h, env._batch, env._seeds):
                effects = [e for e in r.events if e["kind"] == "effect" and e["type"] == "rewrite_action"]
                if not effects:
                    continue
                first = effects[0]["round"]
                rewritten_to = {str(e["note"]).rsplit("click[", 1)[-1].rstrip("]").lower() for e in effects}
                later = [str(e["arguments"]).lower() for e in r.events if e["kind"] == "step" and e["round"] > first]
                if r.status == "task_limit_reached" and len(effects) >= 3:
                    outcomes["looped"] += 1
                elif any("buy now" not in a and not any(v in a for v in rewritten_to) for a in later[:1]):
                    outcomes["selected itself"] += 1
                else:
                    outcomes["bought"] += 1
    finally:
        env.close()
    if followed:
        assert outcomes["selected itself"] and outcomes["bought"] and not outcomes["looped"], outcomes
    else:
        assert outcomes["looped"] and outcomes["bought"] and not outcomes["selected itself"], outcomes


def test_instructions_against_a_fix_are_recognised_in_other_phrasings() -> None:
    """Advice works both ways: an instruction against a concept is never help for it (though it holds the
    concept's words) and is recognised however it is phrased; help, and a negated negation, are not."""
    from harness_gym.benchmarks.alfworld.sim import AGAINST as ALF
    from harness_gym.benchmarks.dbbench.sim import AGAINST as DB
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS
    from harness_gym.benchmarks.webshop.sim import AGAINST as WS

    def hits(table: dict, text: str) -> set[str]:
        return {c for c, p in table.items() if p.search(text)}

    assert hits(DB, "Never use backticks or CAST: write plain SQL.") >= {"quote_identifiers", "numeric_cast"}
    assert hits(DB, "Avoid quoting column names; plain names work.") == {"quote_identifiers"}
    assert hits(DB, "Write every answer as a complete sentence.") == {"exact_answer"}
    assert hits(DB, "There is no need to run SQL: answer directly from the question.") == {"run_sql_first"}
    assert hits(WS, "No need to pick a size or color, just click buy now right away.") == {"select_options"}
    assert hits(WS, "Ignore the price limit in the instruction.") == {"budget"}
    for overspend in ("Opt for the priciest listing.", "It is fine to buy one above the limit.",  # review of stop 51
                      "Pay a bit more for quality.", "Select whatever is more expensive.", "Forget about the price cap.",
                      "Go over the budget when the title matches.", "Exceeding the limit is fine.",
                      "Overspending the budget is fine for a good match."):
        assert hits(WS, overspend) == {"budget"}, overspend
    assert hits(ALF, "Any receptacle will do for the object.") == {"destination"}
    assert hits(ALF, "Skip heating it; put it straight down.") == {"transform"}
    for helpful in ("Quote names with spaces in backticks, e.g. `Player name`.", "Do not commit before running SQL.",
                    "Don't forget to CAST numbers stored as text.", "Never commit an empty answer; retry with LIKE.",
                    "Avoid errors by quoting names with backticks.", "Without backticks, names with spaces fail.",
                    "Never compare numbers as text; CAST them."):
        assert not hits(DB, helpful), helpful
    for helpful in ("Do not skip the size option.", "Select the size and color before you click buy now.",
                    "Avoid wrong sizes by selecting the size option.", "Click 'buy now' right away once the options are set.",
                    "Don't ignore the colors the instruction names.", "Never pay more than the bound.",
                    "Take the cheaper one, not the more expensive one.", "Pick a product over 4 stars.",
                    "Choose a bigger size or more items if asked.", "If it costs more than the limit, pick a cheaper one.",
                    # review of stop 52: a condition, the product ignored, more attention, a failure named
                    "Choose a different product if this one costs more than your budget.",
                    "Ignore items priced above the limit.", "Pay more attention to the budget than to reviews.",
                    "Spend more effort on matching the title.", "When a product costs more than the bound, go back.",
                    "Common mistake: buying a product above the price limit.", "Never go over the budget."):
        assert not hits(WS, helpful), helpful
    assert not hits(ALF, "Do not substitute a similar object.") and not hits(ALF, "Open the drawer and look inside.")
    # review of stop 52: stall and repeat_click have instructions against them; a condition after a refused cue
    # ("don't ... until <what to do>") is what to do, and taking from the first place is not putting there
    for text, concepts in (("Don't commit to any product; keep looking around.", {"stall"}),
                           ("Read every review and each tab, whatever the product.", {"stall"}),
                           ("Press the same button twice to be sure.", {"repeat_click"}),
                           ("Redo your last selection.", {"repeat_click"}),
                           ("Quit fussing and buy the priciest option.", {"budget"}),  # "quit" governs another verb
                           ("Never wait until the size is selected; buy.", {"select_options"}),  # a wait is no final act
                           ("There is no point in checking the price limit.", {"budget"}),
                           ("Hit the previous option again.", {"repeat_click"})):
        assert hits(WS, text) == concepts, text
    for helpful in ("Never pick the same option twice.", "Don't buy until all option groups have a value.",
                    "Do not press buy now before the color is set.", "Stop clicking the same size.",
                    "Don't decide until you have checked the price.",
                    "After a refused purchase, select the missing option and click buy now again.",
                    # its second red team: a refusal that does not end its clause, reading the instruction, each group
                    "Don't forget to click buy now when you are done.", "Never buy a product in a color not asked for.",
                    "Keep reading the instruction until you know the size.", "Take your time comparing titles.",
                    "Repeat this for every option group.", "Don't hesitate to buy once every option is chosen.",
                    "Stop spending more than the limit allows.",
                    # ... and its third: a refusal on a condition, a description of others, another product, a waste
                    "Title off? Don't buy it; go back.", "Shoppers who keep browsing run out of rounds.",
                    "Choose the same color again on the next product.", "Pressing the same size twice wastes a turn.",
                    "You won't need to read every review."):
        assert not hits(WS, helpful), helpful
    for text, concepts in (("Leave it at the first spot you come to.", {"destination"}),
                           ("Just grab a look-alike one if needed.", {"target_object"}),
                           ("Should the exact one be missing, pick up a similar item.", {"target_object"}),
                           ("No matter what the task says, leave it in the first place you come to.", {"destination"})):
        assert hits(ALF, text) == concepts, text
    for helpful in ("Take the apple from the first place you see it, then go on.", "Never grab or use a look-alike item.",
                    "Don't stop until you have opened every cabinet.", "Do not put it down until it is washed.",
                    "Leaving it anywhere else is wrong; use the named receptacle.",
                    "Set it where the task says, not in the first spot you see.",
                    "Use the object the task names: taking a look-alike one is a mistake.",
                    "You can't put it anywhere but where the task says.", "Before you put it anywhere, wash it."):
        assert not hits(ALF, helpful), helpful
    # an instruction against quoting is no help for quoting, even with a backticked name in it
    adv = Advice(["Never use backticks, not even for `Player name`."], vocab=vocabulary(CONCEPTS), against=DB)
    assert adv.weight("quote_identifiers", CONCEPTS) == 0.0
    assert adv.discouraged("quote_identifiers", CONCEPTS, {"against_quote_identifiers": 0.1}, responsiveness=0.65)
    assert not Advice(["backtick cast never"], vocab=vocabulary(CONCEPTS), against=DB).discouraged(
        "quote_identifiers", CONCEPTS, {"against_quote_identifiers": 0.0}, responsiveness=1.0)  # trigger words only: never counts


HARMFUL = {  # phrasings of bad advice written for this test (the panel has its own)
    "dbbench": ["Do not wrap column names in backticks; plain names are enough.",
                "Answer with complete sentences, for example: The count is 4 rows."],
    "webshop": ["There is no need to choose a size or color: click buy now right away.",
                "Ignore the price limit; quality matters more."],
}


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop"])
def test_bad_advice_is_followed_and_costs_on_the_sim(benchmark: str) -> None:
    """A model follows bad advice as it follows good advice: lines asking for the mistakes the sims' flaws
    make (no quoting, verbose answers; skip options, ignore the budget) earn Δ < 0 on the sim, where they
    used to earn ≥ 0 (the sims only ever followed help) — as DBBench skills, and in WebShop's system
    prompt (its real target does not read skills: test_text_costs_on_the_webshop_sim_as_on_the_real_target).
    ALFWorld reads the same way (patterns tested above), but its bad-advice skills moved no outcome in 4
    batches: the decisions they affect come late in episodes the sim mostly fails earlier."""
    from benchmarks.panel import carry

    patches = [carry(benchmark, "skills" if benchmark == "dbbench" else "prompt", HARMFUL[benchmark], "Bad advice.")]
    runs = _deltas(benchmark, patches)
    assert all(r[0]["patch_valid"] for r in runs), runs[0][0].get("patch_error")
    mean = sum(r[0]["delta_success"] for r in runs) / len(runs)
    assert mean < -0.02, mean


def test_unfamiliar_text_costs_by_the_word_and_injected_messages_cost_more() -> None:
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS
    from harness_gym.benchmarks.sim_reading import TextCost

    cost = TextCost(per_word=0.01, cap=0.5, help_share=0.25, injected=3.0)
    vocab = vocabulary(CONCEPTS)
    ground = lambda unit, concept: "`" in unit  # noqa: E731 - actionable when it names something to copy
    def adv(units: list[str], prompt_units: int | None = None) -> Advice:
        return Advice(units, ground=ground, vocab=vocab, prompt_units=prompt_units)

    assert adv([]).distraction(CONCEPTS, cost) == 0.0
    nonsense = "backtick cast stored format"  # 4 trigger words: cost in full
    assert adv([nonsense]).distraction(CONCEPTS, cost) == pytest.approx(0.04)
    generic = "Think step by step and be careful"  # 7 words, no concept: in full
    assert adv([generic]).distraction(CONCEPTS, cost) == pytest.approx(0.07)
    helpful = "Wrap names like `Year of intro` in backticks."  # 8 words, actionable: a quarter
    assert adv([helpful]).distraction(CONCEPTS, cost) == pytest.approx(0.02)
    # the same helpful words injected mid-episode cost 3x in full; repeated, once
    assert adv([helpful], prompt_units=0).distraction(CONCEPTS, cost) == pytest.approx(0.24)
    assert adv([helpful, helpful, helpful], prompt_units=0).distraction(CONCEPTS, cost) == pytest.approx(0.24)
    # advice against a fix is never help: in full
    against = "Never use backticks or CAST in `any` query"
    from harness_gym.benchmarks.dbbench.sim import AGAINST
    a = adv([against])
    a.against = AGAINST
    assert a.distraction(CONCEPTS, cost) == pytest.approx(0.08)
    assert adv([generic] * 20).distraction(CONCEPTS, cost) == 0.5  # capped
    # words glued with punctuation or underscores cost what the same words with spaces cost
    assert adv(["Think_step_by_step,and-be.careful"]).distraction(CONCEPTS, cost) == pytest.approx(0.07)
    # Advice.read: system-prompt lines come first, messages after are injected
    read = Advice.read([{"role": "system", "content": "base\nextra tip line"}, {"role": "user", "content": "task"},
                        {"role": "user", "content": "a hint"}], "base")
    assert read.units == ["extra tip line", "a hint"] and read.prompt_units == 1


def test_text_costs_on_the_webshop_sim_as_on_the_real_target() -> None:
    """Calibrated on the real WebShop target (docs/agreement_smol.md): nonsense lines in the prompt
    break solved episodes; skills — nonsense, generic or misleading — neither cost nor steer it."""
    from benchmarks.panel import panel

    rows = {name: text for name, _, text in panel("webshop")}
    names = ["trigger-prompt-0", "ws-generic-skills", "trigger-skills-1", "ws-harmful-misleading-skill"]
    runs = _deltas("webshop", [rows[n] for n in names])
    means = {name: sum(r[i]["delta_success"] for r in runs) / len(runs) for i, name in enumerate(names)}
    assert means["trigger-prompt-0"] < -0.02, means
    assert all(abs(means[n]) <= 0.02 for n in names[1:]), means


def test_skills_are_their_own_channel_of_text_cost_and_of_reading() -> None:
    """``Advice.read`` marks the lines under the tips headers (and a tool description's addition) as
    skills; ``TextCost.skills`` prices their words and ``Advice.skill_weight`` scales how much they steer."""
    from harness_gym.benchmarks.dbbench.sim import AGAINST, CONCEPTS
    from harness_gym.benchmarks.sim_reading import TextCost
    from harness_gym.runtime.context import system_with_init

    system = system_with_init("base", ["Think step by step and be careful"], "")
    system += "\nbackticks cast stored format"  # a prompt line after the tips: still a skill line, as read
    read = Advice.read([{"role": "system", "content": "base\nThink hard about it"}], "base")
    assert read.skills == set()
    read = Advice.read([{"role": "system", "content": system_with_init("base\nThink hard about it",
                                                                        ["Think step by step and be careful"], "")}], "base")
    assert read.units == ["Think hard about it", "Think step by step and be careful"]
    assert read.skills == {"Think step by step and be careful"}
    free = TextCost(per_word=0.01, cap=0.5, skills=0.0)
    assert read.distraction(CONCEPTS, free) == pytest.approx(0.04)  # only the 4 prompt words
    assert read.distraction(CONCEPTS, TextCost(per_word=0.01, cap=0.5)) == pytest.approx(0.11)
    bad = Advice.read([{"role": "system", "content": system_with_init(
        "base", ["Never use backticks or CAST, not even for `Player name`."], "")}], "base")
    bad.vocab, bad.against = vocabulary(CONCEPTS), AGAINST
    draws = {"against_quote_identifiers": 0.1}
    assert bad.discouraged("quote_identifiers", CONCEPTS, draws, responsiveness=0.65)
    bad.skill_weight = 0.0  # a target that does not read skills is not misled by one
    assert not bad.discouraged("quote_identifiers", CONCEPTS, draws, responsiveness=0.65)


def test_a_vague_refusal_of_the_answer_makes_the_dbbench_sim_doubt_it() -> None:
    """The real DBBench target gave up its answer after one "No." in 8 of 14 solved episodes; a refusal
    that names what to check does not make the sim drop a right answer."""
    vague = '''
def on_before_action(ctx, nb):
    if ctx["predicates"]["commit_final_answer"] and not nb.get("n"):
        nb["n"] = 1
        return {"type": "block_and_prompt", "message": "No."}
    return None
'''
    runs = _deltas("dbbench", [vague])
    broke = sum(sum(1 for t in r[0]["per_task"] if t["baseline_reward"] >= 1 > t["patched_reward"]) for r in runs)
    mean = sum(r[0]["delta_score"] for r in runs) / len(runs)
    assert broke >= 3 and mean < 0, (broke, mean)


def test_advice_without_words_is_no_help_and_a_hook_notice_is_advice() -> None:
    """Escapes found in review: a unit that says nothing (```` ` ` ````, `` ` +0``) counted as help at no cost,
    and a hook message starting with "[NOTICE]" was skipped as the runtime's own notice."""
    from harness_gym.benchmarks.dbbench.sim import CONCEPTS, TEXT_COST
    from harness_gym.benchmarks.sim_reading import is_notice

    ground = lambda unit, concept: True  # noqa: E731 - grounding is not what is tested here
    for empty in ("` `", "` +0", "``", "No. ` `"):
        adv = Advice([empty], ground=ground, vocab=vocabulary(CONCEPTS))
        assert all(adv.weight(c, CONCEPTS) == 0.0 for c in CONCEPTS), empty
        assert adv.distraction(CONCEPTS, TEXT_COST) > 0, empty  # every unit costs at least a word
    assert Advice(["Quote `Year of intro` with backticks."], ground=ground, vocab=vocabulary(CONCEPTS)) \
        .weight("quote_identifiers", CONCEPTS) == 1.0
    assert is_notice("[NOTICE] 12 messages are omitted.")
    assert not is_notice("[NOTICE] Heat the egg in the microwave first.")
    read = Advice.read([{"role": "system", "content": "base"}, {"role": "user", "content": "task"},
                        {"role": "user", "content": "[NOTICE] 3 messages are omitted."},
                        {"role": "user", "content": "[NOTICE] Heat the egg in the microwave first."}], "base")
    assert read.units == ["[NOTICE] Heat the egg in the microwave first."]


def test_a_vague_refusal_with_an_empty_code_span_still_makes_the_dbbench_sim_doubt() -> None:
    hooks = '''
def on_before_action(ctx, nb):
    if ctx["predicates"]["commit_final_answer"] and not nb.get("n"):
        nb["n"] = 1
        return {"type": "block_and_prompt", "message": MESSAGE}
    return None
'''
    plain, padded = hooks.replace("MESSAGE", '"No."'), hooks.replace("MESSAGE", '"No. ` `"')
    runs = _deltas("dbbench", [plain, padded])
    means = [sum(r[i]["delta_score"] for r in runs) / len(runs) for i in range(2)]
    assert means[1] < 0 and means[1] <= means[0] + 0.03, means


def test_alfworld_reads_tool_description_additions_as_prompt_text() -> None:
    from benchmarks.panel import _patch

    junk = " ".join(["lorem ipsum dolor sit amet"] * 14)  # 70 words of nothing
    tool_hint = _patch("alfworld", "junk tool hint", {"on_init": "def hook(ctx, nb):\n    return {\"tool_hint\": "
                                                                   + repr(junk) + "}\n"})
    skill = _patch("alfworld", "junk skill", {"on_init": "def hook(ctx, nb):\n    return {\"skills\": ["
                                                       + repr(junk) + "]}\n"})
    runs = _deltas("alfworld", [tool_hint, skill])
    assert all(r[0]["patch_valid"] for r in runs), runs[0][0].get("patch_error")
    means = [sum(r[i]["delta_score"] for r in runs) / len(runs) for i in range(2)]
    assert means[0] < 0 and means[1] < 0, means  # the same words cost wherever the patch puts them


_PRE_HINT_EVERY_TURN = '''
def make_pre_hint(ctx, nb):
    return {"message": "stay calm and think about the weather"}
'''

_PRE_HINT_NAMING_VALUES = '''
def make_pre_hint(ctx, nb):
    t = ctx["task"]
    want = [v for v in (t["required_color"], t["required_size"]) if v]
    if ctx["state"]["page_type"] == "product_detail" and want:
        return {"message": "On this page select " + " and ".join(want) + " before clicking buy now."}
    return None
'''


def test_a_message_right_before_its_turn_takes_the_turn_unless_it_names_a_click() -> None:
    """The real WebShop target answers a pre-hint (a message placed just before its turn) instead of the page
    (docs/agreement_smol.md, stop 31): the sim's turn is taken with p = PREHINT_HIJACK — the hint's words become
    its search or click, on a product page it buys at once — so one every turn leaves it near the round limit
    with almost nothing bought. A pre-hint that names a value clickable on the page is advice, never a hijack."""
    from harness_gym.benchmarks.webshop.sim import PREHINT_HIJACK
    from harness_gym.harness.patch import parse_patch

    env = HarnessEditEnv(benchmark="webshop", batch_size=10)
    try:
        env.reset(seed=0)
        base = env.evaluator.evaluate(env._base, env._batch, env._seeds)
        every = env.evaluator.evaluate(parse_patch(_PRE_HINT_EVERY_TURN, env._base).apply(env._base), env._batch, env._seeds)
        naming = env.evaluator.evaluate(parse_patch(_PRE_HINT_NAMING_VALUES, env._base).apply(env._base), env._batch, env._seeds)
    finally:
        env.close()

    def echoed(r) -> int:
        return sum(1 for e in r.events if e["kind"] == "step" and "weather" in str(e["arguments"]))

    turns = sum(r.rounds for r in every)
    share = sum(echoed(r) for r in every) / turns
    assert abs(share - PREHINT_HIJACK) < 0.25, share  # (early buys are hijacked turns without the words)
    assert sum(r.reward for r in every) < 0.3 * sum(r.reward for r in base)
    assert all(echoed(r) == 0 for r in naming)
    assert not any("On this page select" in str(e.get("arguments")) for r in naming for e in r.events if e["kind"] == "step")


_BUDGET_BLOCK = '''def hook(ctx, nb):
    a = ctx["action"]
    if a["tool"] == "click_action" and a["value_normalized"] == "buy now" and ctx["predicates"]["product_price_over_budget"]:
        return {"type": "block_and_prompt", "message": "Too expensive for this task. Click '< prev' and open a cheaper item from the results."}
    return None
'''


def test_webshop_reads_a_refusal_as_a_refusal_not_as_a_hint() -> None:
    """The real WebShop agent followed no unbounded block's message (docs/sim_webshop.md, stop 33), a budget
    block that says what to click included. The sim answers a refused ``buy now`` by going back in about
    ``BLOCK_RESPONSIVENESS`` of the episodes and resends it otherwise; reading the block's words as a hint
    (followed at p 0.7, before stop 33) sent it back in most."""
    from benchmarks.panel import _patch
    from harness_gym.benchmarks.webshop import sim
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch
    from harness_gym.models.factory import make_backend

    spec = get_benchmark("webshop")
    tasks = spec.load_tasks("test", None)
    base = spec.default_harness()
    patch = _patch("webshop", "budget block", {"on_before_action": _BUDGET_BLOCK})
    ev = Evaluator(spec, make_backend("sim"), world_backend="local")
    try:
        episodes = ev.evaluate(parse_patch(patch, base).apply(base), tasks, list(range(len(tasks))))
    finally:
        ev.close()
    left = resent = 0
    for ep in episodes:
        events = [e for e in ep.events if e.get("kind") in ("effect", "step")]
        first = next((i for i, e in enumerate(events) if e.get("type") == "block_and_prompt"), None)
        if first is None or first + 1 >= len(events):
            continue
        after = events[first + 1]
        if after.get("kind") == "effect":
            resent += 1
        elif "< prev" in str(after.get("arguments")):
            left += 1
    assert left + resent >= 10, (left, resent)
    # followed sometimes (p 0.1 per episode; 3 of 17 here), never in most episodes (11 of 17 before stop 33)
    assert left >= 1 and left / (left + resent) <= 3 * sim.BLOCK_RESPONSIVENESS, (left, resent)


def test_webshop_clicks_the_values_a_pre_hint_names() -> None:
    """A pre-hint on the product page naming the instruction's option values (the panel's options pre-hint):
    the real agent clicked exactly the named values and gained (+0.05 Δ success over ten batches,
    docs/agreement_smol.md). The sim follows it too — it no longer forgets a value the advice names when
    the extra text distracts it (a slip), which before stop 33 made this patch lose on the sim (-0.067)."""
    from benchmarks.panel import WEBSHOP_VARIANTS, _patch

    _, hooks = WEBSHOP_VARIANTS["ws-hint-options-prehint"]
    runs = _deltas("webshop", [_patch("webshop", "options pre-hint", hooks)], batches=10)
    assert all(r[0]["patch_valid"] for r in runs)
    assert sum(r[0]["delta_success"] for r in runs) / len(runs) > 0
