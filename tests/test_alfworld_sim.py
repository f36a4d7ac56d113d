"""The simulated ALFWorld target: calibration, determinism, and reactions to hooks."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.harness.patch import parse_patch
from harness_gym.models.factory import make_backend
from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld.sim import CONCEPTS, INTRINSIC, TEXT_COST, Persona
from harness_gym.benchmarks.sim_reading import Advice

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


def test_baseline_success_is_calibrated_on_the_default_unseen_split(unseen_baseline: list) -> None:
    rate = sum(r.reward for r in unseen_baseline) / len(unseen_baseline)
    assert 0.35 <= rate <= 0.50, rate
    by_type = defaultdict(list)
    for r in unseen_baseline:
        by_type[r.task_type].append(r.reward)
    assert all(0.1 <= sum(v) / len(v) <= 0.8 for v in by_type.values())
    assert not any(r.is_env_error for r in unseen_baseline)


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


def test_stage_patch_repairs_fixable_flaws_deterministically(unseen_baseline: list) -> None:
    tasks = generator.generate_split("valid_unseen")[:60]
    text = (ROOT / "examples" / "patches" / "alfworld_stages.txt").read_text()
    harness = SPEC.default_harness()
    patched = parse_patch(text, harness).apply(harness)
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        a, b = ev.evaluate_many([harness, patched], tasks, list(range(60)))
        b2 = ev.evaluate(patched, tasks, list(range(60)))
    finally:
        ev.close()
    assert [r.reward for r in a] == [r.reward for r in unseen_baseline[:60]]
    gain = sum(y.reward - x.reward for x, y in zip(a, b)) / 60
    assert 0.03 <= gain <= 0.25, gain
    assert [r.reward for r in b] == [r.reward for r in b2]
    # premature "done" stays unfixed; a misread destination only by a refusal that names the right one
    for task, x, y in zip(tasks, a, b):
        p = Persona.draw(task, x.seed)
        corrected = any(e.get("kind") == "hook" and (e.get("effect") or {}).get("type") == "block_and_prompt"
                        and task.destination_type and task.destination_type in str((e.get("effect") or {}).get("message", ""))
                        for e in y.events)
        if "premature_done" in p.flaws or ("misread_goal" in p.flaws and not corrected):
            assert not y.success


def test_advice_is_focus_weighted_and_generic_advice_costs() -> None:
    focused = Advice(["Heat it with the microwave before you put it in place."])
    stuffed = Advice(["Open closed cabinets, use exact available actions, the exact object, the destination receptacle "
                      "named in the task, heat it with the microwave before placing, another one, turn on the lamp."])
    assert focused.weight("transform", CONCEPTS) == 1.0
    assert stuffed.weight("transform", CONCEPTS) < 0.5
    generic = Advice(["Think step by step.", "Be careful."])
    assert generic.distraction(CONCEPTS, TEXT_COST) > Advice([]).distraction(CONCEPTS, TEXT_COST) == 0.0
