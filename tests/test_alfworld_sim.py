"""The simulated ALFWorld target: calibration, determinism, and reactions to hooks."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from baselines.hr1 import harness_r1_patch

from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.harness.patch import parse_patch
from harness_gym.models.factory import make_backend
from harness_gym.runtime.context import window
from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld.sim import (ABANDON_REPLACED_TAKE, BELIEVE_UNMADE_WALK, CONCEPTS, INTRINSIC, JUMP,
                                                 SLIP_CAP, SLIP_PER_WORD, TEXT_COST, Persona, View)
from harness_gym.benchmarks.sim_reading import Advice, count_words
from harness_gym.types import ToolCall

SPEC = get_benchmark("alfworld")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def unseen_baseline() -> list:
    tasks = generator.generate_split("valid_unseen")
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        return ev.evaluate(SPEC.default_harness(), tasks, list(range(len(tasks))))
    finally:
        ev.close()


# The trained real target (smol:alfworld, vllm, greedy) on the whole valid_unseen split: successes, tasks per type
# (docs/models.md, stop 37). The sim is fitted to these per type (stop 42, docs/sim_alfworld.md "Per task type").
REAL_BASELINE = {"look_at_obj_in_light": (8, 23), "pick_and_place_simple": (16, 23),
                 "pick_clean_then_place_in_recep": (7, 22), "pick_cool_then_place_in_recep": (9, 22),
                 "pick_heat_then_place_in_recep": (8, 22), "pick_two_obj_and_place": (0, 22)}


def test_baseline_success_is_calibrated_on_the_default_unseen_split(unseen_baseline: list) -> None:
    """Per task type the sim's baseline matches the real target's within the noise of its 22-23 tasks, on four
    draws of the split (536 episodes); the stop-41 sim, 40% on pick two against the real 0%, fails this."""
    tasks = generator.generate_split("valid_unseen")
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        more = [r for k in range(1, 4) for r in ev.evaluate(SPEC.default_harness(), tasks, [1000 * k + i for i in range(len(tasks))])]
    finally:
        ev.close()
    episodes = [*unseen_baseline, *more]
    rate = sum(r.reward for r in episodes) / len(episodes)
    assert 0.30 <= rate <= 0.45, rate
    by_type = defaultdict(list)
    for r in episodes:
        by_type[r.task_type].append(r.reward)
    assert set(by_type) == set(REAL_BASELINE)
    for task_type, (won, n) in REAL_BASELINE.items():
        sim = sum(by_type[task_type]) / len(by_type[task_type])
        assert abs(sim - won / n) <= 0.12, (task_type, round(sim, 3), won / n)
    assert not any(r.is_env_error for r in episodes)


def test_flawless_personas_succeed_and_every_flaw_occurs(unseen_baseline: list) -> None:
    tasks = generator.generate_split("valid_unseen")
    seen: set[str] = set()
    for task, r in zip(tasks, unseen_baseline):
        p = Persona.draw(task, r.seed)
        seen |= p.flaws
        if not p.flaws:
            assert r.success, task.task_id
    assert seen >= {"skip_transform", "wrong_receptacle", "substitute_object", "invalid_grammar", "not_opening",
                    "misread_goal", "poor_search", "premature_done"}
    assert set(INTRINSIC) <= seen


def _run(text: str, tasks: list, seeds: list[int], *more: str) -> list[list]:
    """The default harness's episodes, then each patch's (``text``, then ``more``), on the same draws."""
    harness = SPEC.default_harness()
    patched = [parse_patch(t, harness).apply(harness) for t in (text, *more)]
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        return ev.evaluate_many([harness, *patched], tasks, seeds)
    finally:
        ev.close()


def _steps(result) -> list[tuple[str, str]]:
    return [(str((e.get("arguments") or {}).get("action", "")), str(e.get("observation", "")))
            for e in result.events if e.get("kind") == "step"]


def _sent(result) -> list[tuple[str, str]]:
    """(the command the agent sent, the observation that came back): unlike ``_steps`` (what the world executed),
    a command a hook replaced appears as sent."""
    out, pending = [], None
    for m in result.messages:
        if m.get("role") == "assistant":
            calls = m.get("tool_calls") or []
            pending = ToolCall.from_message_call(calls[0]).arguments.get("action") if calls else None
        elif m.get("role") == "tool" and pending is not None:
            out.append((str(pending), str(m.get("content") or "").split("\nAVAILABLE ACTIONS: ")[0]))
            pending = None
    return out


def test_mediation_patch_repairs_fixable_flaws_deterministically(unseen_baseline: list) -> None:
    """The rewrite-only example (no message reaches the agent) fixes skipped transforms and re-takes; the
    baseline episodes are the uncalibrated baseline's exactly, and the run is deterministic."""
    tasks = generator.generate_split("valid_unseen")[:60]
    text = (ROOT / "examples" / "patches" / "alfworld_mediate.txt").read_text()
    a, b = _run(text, tasks, list(range(60)))
    _, b2 = _run(text, tasks, list(range(60)))
    assert [r.reward for r in a] == [r.reward for r in unseen_baseline[:60]]
    gain = sum(y.reward - x.reward for x, y in zip(a, b)) / 60
    assert 0.03 <= gain <= 0.25, gain
    assert [r.reward for r in b] == [r.reward for r in b2]
    fixed = [Persona.draw(t, x.seed).flaws for t, x, y in zip(tasks, a, b) if y.success and not x.success]
    assert any("skip_transform" in f for f in fixed)
    for task, x, y in zip(tasks, a, b):  # intrinsic flaws stay unfixed
        if {"premature_done", "misread_goal"} & Persona.draw(task, x.seed).flaws:
            assert not y.success


def test_second_objects_and_far_lamps_are_set_right_by_walking_not_by_messages() -> None:
    """Stop 42, the real agent's transcripts of batches 0-14: after placing the first of two objects it takes
    another one it saw from where it stands, or the placed one back, and loops (0 of 21 baseline pick-two
    episodes, 0 of 324 under the 30 other panel patches — hints, refusals, other rewrites —, stages' "one is already placed;
    find another" hints included); the mediation example, which rewrites such a command into a walk, solved 5
    of 6. On look tasks it uses a lamp it saw elsewhere from where it stands. The sim: a hint naming the fix
    changes nothing; the rewrite-only example fixes both; a rewrite walking it back to a searched place does not."""
    tasks = [t for t in generator.generate_split("valid_unseen")
             if t.task_type in ("pick_two_obj_and_place", "look_at_obj_in_light")]
    seeds = list(range(len(tasks)))
    hint = ('def hook(ctx, nb):\n    if ctx["step"] == 5:\n        return {"message": "One object is already placed; '
            'do not take it back. Find another one: go to a receptacle you have not searched."}\n    return None\n')
    mediate = (ROOT / "examples" / "patches" / "alfworld_mediate.txt").read_text()
    back = ('def hook(ctx, nb):\n    w = ctx["world"]\n    if w["placed_items"] and not nb.get("done"):\n'
            '        for name in w["visited"]:\n            if "go to " + name in ctx["admissible"] and name not in ctx["action"]["normalized"]:\n'
            '                nb["done"] = 1\n                return {"type": "rewrite_action", "action": "go to " + name}\n'
            '    return None\n')
    walk_back = harness_r1_patch("alfworld", "walk back", {"on_before_action": back})
    base, hinted, walked, back_walked = _run(harness_r1_patch("alfworld", "find another", {"make_pre_hint": hint}), tasks,
                                             seeds, mediate, walk_back)
    flawed = {"pick_two_obj_and_place": "retake_placed", "look_at_obj_in_light": "lamp_from_afar"}
    for task_type, flaw in flawed.items():
        mine = [(t, x, y, z) for t, x, y, z in zip(tasks, base, hinted, walked)
                if t.task_type == task_type and flaw in Persona.draw(t, x.seed).flaws]
        rows = [(x, y, z) for _, x, y, z in mine]
        assert len(rows) >= 8, (task_type, len(rows))
        assert not any(y.success and not x.success for x, y, _ in rows), task_type  # no message sets it right
        clear = [z for t, x, _, z in mine if not set(INTRINSIC) & Persona.draw(t, x.seed).flaws]
        assert len(clear) >= 4 and sum(z.success for z in clear) >= len(clear) / 2, task_type  # being walked does
    # a walk back to a place already searched (not the one its take named) does not set a pick-two agent right (only mediation's kind does)
    two = [(x, y) for t, x, y in zip(tasks, base, back_walked) if "retake_placed" in Persona.draw(t, x.seed).flaws]
    assert not any(y.success and not x.success for x, y in two)
    afar = [x for t, x in zip(tasks, base) if "lamp_from_afar" in Persona.draw(t, x.seed).flaws and not x.success]
    assert any(_steps(x)[-1][0].startswith("use ") and _steps(x)[-1][1].strip() == "Nothing happens." for x in afar)


def test_a_message_naming_the_transform_is_acted_on_at_once_and_literally() -> None:
    """Stop 39, the real ALFWorld agent's transcripts: a hint naming the task's clean/heat/cool was acted on
    as its next command in 42 of 72 cases, wherever the agent stood ("Nothing happens." in 39), a refusal
    naming it in 60 of 60. The sim does the same with p JUMP; a refusal naming the right destination does
    not make a misreading agent re-read its goal."""
    tasks = [t for t in generator.generate_split("valid_unseen") if t.transform][:40]
    hint = 'def hook(ctx, nb):\n    if ctx["step"] == 0:\n        return {"message": "Remember to {verb} it before you place it."}\n    return None\n'
    jumped = 0
    for task in tasks:
        text = harness_r1_patch("alfworld", "transform hint", {"make_pre_hint": hint.replace("{verb}", task.transform)})
        a, b = _run(text, [task], [0])
        first = _steps(b[0])[0]
        if first[0].startswith(task.transform + " "):
            jumped += 1
            assert first[1].strip() == "Nothing happens."  # from the start, nowhere near the appliance
        else:
            assert first[0] == _steps(a[0])[0][0]  # not acted on: its own plan, as without the hint
    assert 0.4 <= jumped / len(tasks) <= 0.8, jumped
    assert JUMP["refusal"] > JUMP["hint"]


def test_a_message_naming_nothing_of_the_room_derails_the_next_command() -> None:
    """The real agent's next command after self-refine's "Reflect on your progress ..." (14 words, naming
    nothing of the room) was "Nothing happens." or a repeat 66% of the time against 15% without a message;
    the sim derails with p SLIP_PER_WORD a word (capped), a quarter of that for a message naming the room.
    Here the message comes after the first command: before it, nothing derails (next test)."""
    tasks = generator.generate_split("valid_unseen")[:40]
    msg = "Reflect on your progress so far: what went wrong? Refine your approach and continue."
    hook = 'def hook(ctx, nb):\n    if ctx["step"] == 1:\n        return {"message": "' + msg + '"}\n    return None\n'
    text = harness_r1_patch("alfworld", "reflect", {"make_pre_hint": hook})
    a, b = _run(text, tasks, list(range(40)))
    assert [_steps(x)[0] for x in a] == [_steps(y)[0] for y in b]  # the first command came before the message
    pairs = [(_steps(x)[1], _steps(y)[1]) for x, y in zip(a, b) if len(_steps(x)) > 1 and _steps(x)[0][1].strip() != "Nothing happens."]
    derailed = sum(y[1].strip() == "Nothing happens." and x[1].strip() != "Nothing happens." for x, y in pairs)
    expected = min(SLIP_CAP, SLIP_PER_WORD * count_words(msg))
    assert len(pairs) >= 30 and abs(derailed / len(pairs) - expected) <= 0.2, (derailed, len(pairs), expected)
    for x, y in pairs:  # a derail is a command the room does not offer, never a lucky pick-up
        if y[0] != x[0]:
            assert y[1].strip() == "Nothing happens.", y


def test_a_message_before_the_first_command_naming_no_command_does_not_derail_it() -> None:
    """Stop 44, the real agent's transcripts of seeds 10-14: under a one-off message shown with the task ("Cabinets
    and drawers start closed: ...", "Put the object into the first receptacle you reach; ...") its first command
    was one the room lists 90 of 90 times, the one it sends without the message 80 times; the same message after
    the first command derails the next one as above. The sim keeps its first command; a command the message
    names is still acted on (the transform tests)."""
    tasks = generator.generate_split("valid_unseen")[:40]
    _, plain = _run(harness_r1_patch("alfworld", "silent", {"make_pre_hint": "def hook(ctx, nb):\n    return None\n"}),
                    tasks, list(range(len(tasks))))
    for msg in ("Reflect on your progress so far: what went wrong? Refine your approach and continue.",
                "Cabinets and drawers start closed: open each one you visit to see what is inside.",
                "Put the object into the first receptacle you reach; the task type does not matter."):
        assert _first_commands(msg, tasks) == [_steps(x)[0][0] for x in plain], msg


def test_a_walk_a_hook_replaced_is_taken_as_made() -> None:
    """Stop 44: under a hook forcing `look` after every second step (the panel's alf-harmful-force-look), the real
    agent, searching, took a `go to` answered by the look's observation as made and went on to the next place 178 of
    205 times; holding the object it resent the walk 21 of 28. It lost -0.16 on seeds 10-14, where the stop-42 sim,
    resending every time, lost -0.04. The sim takes a search walk as made with p BELIEVE_UNMADE_WALK; without the
    hook no walk is ever unmade. A `take` the look replaced was resent 46 of 88 times (seeds 10-15, stop 45); the
    sim moves on from one with p ABANDON_REPLACED_TAKE."""
    tasks = generator.generate_split("valid_unseen")
    hook = 'def hook(ctx, nb):\n    if ctx["step"] % 2 == 0:\n        return {"type": "force_action", "action": "look"}\n    return None\n'
    a, b = _run(harness_r1_patch("alfworld", "force look", {"on_post_step": hook}), tasks, list(range(len(tasks))))

    def unmade(r) -> list[tuple[bool, bool]]:  # per `go to` of mine answered by no arrival: (holding?, went on?)
        s, out, held = _sent(r), [], False
        for (cmd, obs), (nxt, _) in zip(s, s[1:]):
            held = obs.startswith("You pick up") or (held and not obs.startswith(("You put", "You move")))
            if cmd.startswith("go to ") and not obs.startswith("You arrive at") and obs.strip() != "Nothing happens.":
                out.append((held, nxt != cmd))
        return out
    searching = [on for r in b for held, on in unmade(r) if not held]
    holding = [on for r in b for held, on in unmade(r) if held]
    assert len(searching) >= 60 and abs(sum(searching) / len(searching) - BELIEVE_UNMADE_WALK) <= 0.1, (sum(searching), len(searching))
    assert len(holding) >= 10 and sum(holding) / len(holding) <= 0.1, (sum(holding), len(holding))
    assert not any(unmade(x) for x in a)

    def untaken(r) -> list[bool]:  # per `take` of mine answered by neither a pickup nor a walk: resent?
        s = _sent(r)
        return [nxt == cmd for (cmd, obs), (nxt, _) in zip(s, s[1:]) if cmd.startswith("take ")
                and not obs.startswith(("You pick up", "You arrive at")) and obs.strip() != "Nothing happens."]
    resent = [x for r in b for x in untaken(r)]  # stop 45: the real agent resent 46 of 88 (seeds 10-15)
    assert len(resent) >= 60 and abs(sum(resent) / len(resent) - (1 - ABANDON_REPLACED_TAKE)) <= 0.1, (sum(resent), len(resent))
    assert not any(untaken(x) for x in a)
    # the real agent lost -0.233 over seeds 10-15; the stop-42 sim -0.045 here, stop 45's -0.097
    assert sum(y.reward - x.reward for x, y in zip(a, b)) / len(tasks) <= -0.11
    checked = 0
    for r in b[:20]:  # each walk's draw is its own: a history window that drops old messages keeps its key
        whole = {key: rec for key, rec, _ in View.read(r.messages).unmade}
        assert len(whole) == len(View.read(r.messages).unmade)
        for keep in (8, 20):
            cut = View.read(window(r.messages, keep)).unmade
            checked += len(cut)
            assert all(whole.get(key) == rec for key, rec, _ in cut), keep
    assert checked >= 20, checked


def test_under_a_history_window_only_the_first_round_is_spared_the_slip() -> None:
    """A message naming no command is not acted on before the first command (round 0), and derails later ones
    whatever the history window keeps: with ``history_window`` 1 no command of the agent's is in view at round 1,
    which stop 44's sim took for "before the first command", so such a harness never slipped."""
    tasks = generator.generate_split("valid_unseen")[:40]
    msg = "Cabinets and drawers start closed: open each one you visit to see what is inside, then decide."
    hook = 'def hook(ctx, nb):\n    if ctx["step"] in (0, 1):\n        return {"message": ' + repr(msg) + '}\n    return None\n'
    patch = parse_patch(harness_r1_patch("alfworld", "two hints", {"make_pre_hint": hook}), SPEC.default_harness())
    narrow = patch.apply(SPEC.default_harness())
    narrow = narrow.with_files({"config.json": narrow.files["config.json"].replace('"history_window": 0', '"history_window": 1')})
    assert '"history_window": 1' in narrow.files["config.json"]
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        plain, wide, short = ev.evaluate_many([SPEC.default_harness(), patch.apply(SPEC.default_harness()), narrow],
                                              tasks, list(range(len(tasks))))
    finally:
        ev.close()
    for runs in (wide, short):
        assert [_sent(y)[0][0] for y in runs] == [_sent(x)[0][0] for x in plain]
        slipped = sum(cmd.startswith("take ") and obs == "Nothing happens." for cmd, obs in (_sent(y)[1] for y in runs))
        assert slipped >= 0.5 * min(SLIP_CAP, SLIP_PER_WORD * count_words(msg)) * len(tasks), slipped


def _first_commands(message: str, tasks: list) -> list[str]:
    hook = 'def hook(ctx, nb):\n    if ctx["step"] == 0:\n        return {"message": ' + repr(message) + '}\n    return None\n'
    _, b = _run(harness_r1_patch("alfworld", "one hint", {"make_pre_hint": hook}), tasks, list(range(len(tasks))))
    return [_steps(y)[0][0] for y in b]


@pytest.mark.parametrize(("task_type", "wordings"), [
    ("pick_heat_then_place_in_recep", ["Heat the object before you place it.", "Warm the object before you place it.",
                                       "Take the object to the microwave before you place it.", "Make it hot first.",
                                       "Don't forget to heat the object."]),
    ("pick_cool_then_place_in_recep", ["Cool the object before you place it.", "Chill the object before you place it.",
                                       "Put the object in the fridge before you place it.", "Refrigerate it."]),
    ("pick_clean_then_place_in_recep", ["Clean the object before you place it.", "Wash the object before you place it.",
                                        "Rinse the object before you place it.", "Use the sinkbasin.", "Cleanse it."]),
    ("look_at_obj_in_light", ["Turn on the desk lamp.", "Turn on the desklamp.", "Turn on the lamp.",
                              "Turn the lamp on.", "Turn on the light.", "Toggle the floorlamp."]),
])
def test_other_words_for_the_same_instruction_are_acted_on_alike(task_type: str, wordings: list[str]) -> None:
    """Stop 39's and 40's reviews: "warm"/"chill"/"wash", the appliance ("take it to the microwave"), the state
    ("make it hot") count as transform advice but dodged the literal jump, "desklamp" (the name the agent and
    hooks use) or "the light" dodged the lamp's, "don't forget to" passed for a negation; what the concept
    reader credits as advice is acted on alike, so a synonym cannot change the cost."""
    tasks = [t for t in generator.generate_split("valid_unseen") if t.task_type == task_type][:16]
    runs = [_first_commands(w, tasks) for w in wordings]
    assert all(r == runs[0] for r in runs[1:]), runs
    _, plain = _run(harness_r1_patch("alfworld", "silent", {"make_pre_hint": "def hook(ctx, nb):\n    return None\n"}), tasks, list(range(len(tasks))))
    assert runs[0] != [_steps(x)[0][0] for x in plain]  # the message is acted on at all


def test_a_hint_saying_not_to_is_acted_on_less_often() -> None:
    """The real agent acted on a negated transform hint 12 of 28 times (JUMP["negated"]) against 42 of 72
    for a plain one: same draws, so the negated hint's jumps are a subset of the plain hint's."""
    plain, negated, n = set(), set(), 0
    for verb in ("clean", "heat", "cool"):
        tasks = [t for t in generator.generate_split("valid_unseen") if t.transform == verb]
        for out, msg in ((plain, f"{verb.capitalize()} the object before you place it."),
                         (negated, f"Do not {verb} the object again.")):
            out |= {(verb, i) for i, c in enumerate(_first_commands(msg, tasks)) if c.startswith(verb + " ")}
        n += len(tasks)
    assert negated < plain
    assert abs(len(negated) / n - JUMP["negated"]) <= 0.15 and abs(len(plain) / n - JUMP["hint"]) <= 0.15
    assert JUMP["negated"] < JUMP["hint"]


def test_the_word_inventory_does_not_ground_a_message() -> None:
    """"inventory" is a listed command, but a message that mentions it names nothing of the room: it derails
    as often as the same message with another word there (stop 39's review: it cut the cost to a quarter)."""
    tasks = generator.generate_split("valid_unseen")[:30]
    with_word = _first_commands("Reflect on your progress so far and check your inventory before you continue.", tasks)
    other = _first_commands("Reflect on your progress so far and check your notebook before you continue.", tasks)
    assert with_word == other


def test_advice_is_focus_weighted_and_generic_advice_costs() -> None:
    focused = Advice(["Heat it with the microwave before you put it in place."])
    stuffed = Advice(["Open closed cabinets, use exact available actions, the exact object, the destination receptacle "
                      "named in the task, heat it with the microwave before placing, another one, turn on the lamp."])
    assert focused.weight("transform", CONCEPTS) == 1.0
    assert stuffed.weight("transform", CONCEPTS) < 0.5
    generic = Advice(["Think step by step.", "Be careful."])
    assert generic.distraction(CONCEPTS, TEXT_COST) > Advice([]).distraction(CONCEPTS, TEXT_COST) == 0.0


def test_standing_text_gets_episodes_stuck_as_the_real_agent_did() -> None:
    """Stop 41, fitted on the real agent's rows: skill lines the default harness never showed get an episode
    stuck (it resends its last executed command until the repeat rule ends it) with p ``TEXT_COST``: 1% a skill
    word, a fifth of that for the same words in the system prompt. Every other episode is the baseline's."""
    tasks = generator.generate_split("valid_unseen")[:120]
    seeds = list(range(len(tasks)))
    lines = ["required type now put", "not cooled already cool", "valid action different one microwave",
             "light correct type"]
    skills = harness_r1_patch("alfworld", "reminders", {"on_init": f"def hook(ctx, nb):\n    return {{'skills': {lines!r}}}\n"})
    prompt = ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -7,1 +7,5 @@\n"
              " The task ends when the goal is reached or after 50 steps.\n" + "".join(f"+{x}\n" for x in lines))
    base, skilled, prompted = _run(skills, tasks, seeds, prompt)

    def stuck_off(b, p) -> bool:
        """p walks b's way, then resends its last command of that way until the episode ends."""
        acts, way = [a for a, _ in _steps(p)], [a for a, _ in _steps(b)]
        k = next(i for i in range(len(acts), 0, -1) if acts[i - 1] != acts[-1]) if len(set(acts)) > 1 else 1
        return len(acts) - k >= 2 and acts[:k + 1] == way[:k + 1]

    for patched in (skilled, prompted):
        for b, p in zip(base, patched):
            assert _steps(p) == _steps(b) or stuck_off(b, p), b.task_id
    share = {name: sum(_steps(p) != _steps(b) for b, p in zip(base, rows)) / len(tasks)
             for name, rows in (("skills", skilled), ("prompt", prompted))}
    words = sum(count_words(x) for x in lines)
    assert 0.5 * TEXT_COST.per_word * TEXT_COST.skills * words <= share["skills"] <= 0.25, share
    assert share["prompt"] < share["skills"] / 2, share
    assert sum(p.reward - b.reward for b, p in zip(base, skilled)) < 0


def test_a_history_window_does_not_spare_standing_text_its_cost() -> None:
    """The stuck point is counted over the episode's executed commands, not those a history window leaves in view
    (stop 45's review: with 8 messages in view, at most four commands, the draws past four never came and the same
    skill lines cost nothing). Under the window the skill lines end about as many more episodes on the repeat rule
    as without one."""
    tasks = generator.generate_split("valid_unseen")[:120]
    lines = ["required type now put", "not cooled already cool", "valid action different one microwave",
             "light correct type"]
    skills = harness_r1_patch("alfworld", "reminders", {"on_init": f"def hook(ctx, nb):\n    return {{'skills': {lines!r}}}\n"})
    base = SPEC.default_harness()

    def narrow(h):
        return h.with_files({"config.json": h.files["config.json"].replace('"history_window": 0', '"history_window": 8')})
    harnesses = [base, parse_patch(skills, base).apply(base)]
    harnesses += [narrow(h) for h in harnesses]
    assert '"history_window": 8' in harnesses[2].files["config.json"]
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        plain, skilled, w_plain, w_skilled = ev.evaluate_many(harnesses, tasks, list(range(len(tasks))))
    finally:
        ev.close()

    def repeated(rows) -> int:
        return sum(r.status == "agent_invalid_action" for r in rows)
    wide, windowed = repeated(skilled) - repeated(plain), repeated(w_skilled) - repeated(w_plain)
    assert wide >= 3 and windowed >= max(3, wide / 2), (wide, windowed)


def test_a_message_after_nothing_happens_is_acted_on_as_after_a_valid_step() -> None:
    """Stop 40's review: the agent's retry of a failed command ran before the message was read, so a hint
    timed right after "Nothing happens." got the advice credit without the literal reading (39 jumps in 220
    against 130). A message naming an action is read first whenever it comes; the same draws, the same jumps."""
    from harness_gym.benchmarks.alfworld import sim
    from harness_gym.benchmarks.alfworld.episode import first_message, format_observation
    from harness_gym.benchmarks.alfworld.game import Game
    from harness_gym.models.base import ChatRequest, Sampling

    tasks = [t for t in generator.generate_split("valid_unseen") if t.transform == "heat"][:12]
    jumped: dict[bool, set] = {True: set(), False: set()}
    for after_nothing in (True, False):
        for t in tasks:
            game = Game(t)
            intro, adm = game.intro(), game.admissible()
            walk = next(a for a in adm if a.startswith("go to ") and "microwave" not in a)
            act = f"take {t.target_type} 9 from {walk[6:]}" if after_nothing else walk
            obs = game.step(act)
            assert (obs.strip() == "Nothing happens.") == after_nothing
            for seed in range(5):
                msgs = [{"role": "system", "content": sim._base_prompt()}, {"role": "user", "content": first_message(intro, adm)},
                        {"role": "assistant", "content": "x", "tool_calls": [{"id": "c0", "type": "function", "function": {
                            "name": "take_action", "arguments": '{"action": "%s"}' % act}}]},
                        {"role": "tool", "tool_call_id": "c0", "content": format_observation(obs, game.admissible())},
                        {"role": "user", "content": f"Heat the {t.target_type} before you place it."}]
                reply = sim.respond(ChatRequest(msgs, [], Sampling(), 0, knowledge=t, meta={"episode_seed": seed, "round": 1}))
                if "heat " in str(reply["tool_calls"][0]["function"]["arguments"]):
                    jumped[after_nothing].add((t.task_id, seed))
    assert jumped[True] == jumped[False] and 0.3 <= len(jumped[True]) / 60 <= 0.9
