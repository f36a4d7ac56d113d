"""Hook runtime: entries in path order sharing nb, failures recorded, effects normalized."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness_gym.harness.files import Harness
from harness_gym.runtime.hooks import HookRunner, normalize_effect
from harness_gym.sandbox.pool import SandboxPool

BASE = {"system_prompt.md": "You are a SQL agent.\n", "tools.json": "[]", "config.json": '{"max_rounds": 20, "history_window": 0}'}


# ------------------------------------------------------------------ normalization (spec §3)

def test_non_dict_returns_have_no_effect() -> None:
    for value in (None, "block", 3, ["x"], ("type", "force_action")):
        assert normalize_effect("on_before_action", value, {}) is None


def test_on_init_skills_and_tool_hint() -> None:
    value = {"skills": [{"text": "  Quote\n identifiers  "}, "Use CAST", "", {"text": ""}, {"nope": 1}, "six", "seven"], "tool_hint": " Backtick\tnames "}
    assert normalize_effect("on_init", value, {}) == {"type": "init", "skills": ["Quote identifiers", "Use CAST"], "tool_hint": "Backtick names"}
    # Harness-R1 takes the first 5 items, then drops empty ones.
    assert normalize_effect("on_init", {"skills": ["a", "b", "c", "d", "e", "f"]}, {})["skills"] == ["a", "b", "c", "d", "e"]
    assert normalize_effect("on_init", {"skills": [], "tool_hint": "  "}, {}) is None
    assert normalize_effect("on_init", {"skills": "not a list", "tool_hint": 5}, {}) is None


def test_make_pre_hint_message() -> None:
    assert normalize_effect("make_pre_hint", {"message": " a\n\nb "}, {}) == {"type": "message", "message": "a b"}
    assert normalize_effect("make_pre_hint", {"message": ""}, {}) is None
    assert normalize_effect("make_pre_hint", {"message": 7}, {}) is None


def test_text_is_collapsed_and_cut_to_900_chars() -> None:
    effect = normalize_effect("make_pre_hint", {"message": "word " * 500}, {})
    assert effect is not None and len(effect["message"]) == 900 and "  " not in effect["message"]


def test_before_action_kinds_type_key_and_kind_alias() -> None:
    assert normalize_effect("on_before_action", {"type": "block_and_prompt", "message": "Run SQL first"}, {}) == {
        "type": "block_and_prompt", "message": "Run SQL first", "action": ""}
    assert normalize_effect("on_before_action", {"kind": "block_and_prompt", "message": "x"}, {})["type"] == "block_and_prompt"
    assert normalize_effect("on_before_action", {"kind": "rewrite_action", "action": "  SELECT\n 1 "}, {}) == {
        "type": "rewrite_action", "message": "", "action": "select 1"}
    assert normalize_effect("on_before_action", {"type": "force_action", "action": "Click[Buy Now]", "message": "m"}, {}) == {
        "type": "force_action", "message": "m", "action": "click[buy now]"}


def test_blocks_and_hints_need_a_message() -> None:
    assert normalize_effect("on_before_action", {"type": "block_and_prompt", "message": "  "}, {}) is None
    assert normalize_effect("on_post_step", {"type": "inject_hint"}, {}) is None


def test_kinds_not_allowed_at_a_point_are_dropped() -> None:
    assert normalize_effect("on_before_action", {"type": "inject_hint", "message": "x"}, {}) is None
    assert normalize_effect("on_post_step", {"type": "block_and_prompt", "message": "x"}, {}) is None
    assert normalize_effect("on_post_step", {"type": "rewrite_action", "action": "look"}, {}) is None
    assert normalize_effect("on_post_step", {"type": "explode", "message": "x"}, {}) is None


def test_numbered_alfworld_actions_must_be_admissible() -> None:
    ctx = {"admissible": ["go to shelf 1", "Take Egg 2 from countertop 1"]}
    ok = normalize_effect("on_before_action", {"type": "force_action", "action": "take egg 2 from countertop 1"}, ctx)
    assert ok is not None and ok["action"] == "take egg 2 from countertop 1"
    assert normalize_effect("on_before_action", {"type": "rewrite_action", "action": "go to shelf 7"}, ctx) is None
    # post-step force with a message degrades to a hint once its action is dropped
    assert normalize_effect("on_post_step", {"type": "force_action", "action": "go to shelf 7", "message": "Look on shelves"}, ctx) == {
        "type": "inject_hint", "message": "Look on shelves", "action": ""}
    assert normalize_effect("on_post_step", {"type": "force_action", "action": "go to shelf 7"}, ctx) is None
    # applies on every benchmark; DBBench/WebShop ctx have no admissible list
    assert normalize_effect("on_before_action", {"type": "force_action", "action": "use desklamp 1"}, {}) is None
    assert normalize_effect("on_post_step", {"type": "force_action", "action": "", "message": "hint"}, {})["type"] == "inject_hint"


# ------------------------------------------------------------------ HookRunner

R1_FIRST = "def hook(ctx, nb):\n    nb['order'] = nb.get('order', []) + ['first']\n    return {'type': 'inject_hint', 'message': 'one'}\n"
R1_FAILS = "def hook(ctx, nb):\n    nb['order'] = nb.get('order', []) + ['failed']\n    return ctx.missing\n"
MODULE = (
    "def on_post_step(ctx, nb):\n    nb['order'] = nb.get('order', []) + ['module']\n"
    "    return {'kind': 'force_action', 'action': 'go to shelf 3', 'message': 'two'}\n\n"
    "def on_init(ctx, nb):\n    return {'skills': ['Quote identifiers'], 'tool_hint': ''}\n"
)


def make_harness() -> Harness:
    files = dict(BASE)
    files["hooks/01_on_post_step.py"] = R1_FIRST
    files["hooks/02_on_post_step.py"] = R1_FAILS
    files["hooks/03_module.py"] = MODULE
    files["hooks/04_on_before_action.py"] = "def hook(ctx, nb):\n    return 'not a dict'\n"
    return Harness("dbbench", files)


@pytest.fixture
def pool() -> Any:
    p = SandboxPool(workers=1, call_timeout_s=1.0)
    yield p
    asyncio.run(p.close())


def test_runner_runs_entries_in_path_order_sharing_nb(pool: SandboxPool) -> None:
    runner = HookRunner(make_harness(), pool)
    assert runner.active
    run = asyncio.run(runner.run("on_post_step", {"admissible": []}, {"order": ["start"]}))
    assert run.nb == {"order": ["start", "first", "module"]}  # the failed entry's nb change is dropped
    assert run.effects == [
        {"type": "inject_hint", "message": "one", "action": ""},
        {"type": "inject_hint", "message": "two", "action": ""},
    ]
    assert [(e["kind"], e["point"], e["file"]) for e in run.events] == [
        ("hook", "on_post_step", "hooks/01_on_post_step.py"),
        ("hook", "on_post_step", "hooks/02_on_post_step.py"),
        ("hook", "on_post_step", "hooks/03_module.py"),
    ]
    assert run.events[0]["error"] is None and run.events[1]["effect"] is None
    assert "AttributeError" in run.events[1]["error"]


def test_runner_other_points(pool: SandboxPool) -> None:
    runner = HookRunner(make_harness(), pool)
    init = asyncio.run(runner.run("on_init", {}, {}))
    assert init.effects == [{"type": "init", "skills": ["Quote identifiers"], "tool_hint": ""}]
    before = asyncio.run(runner.run("on_before_action", {}, {"k": 1}))
    assert before.effects == [] and before.nb == {"k": 1}
    assert before.events[0]["effect"] is None and before.events[0]["error"] is None
    none = asyncio.run(runner.run("make_pre_hint", {}, {"k": 1}))
    assert none.effects == [] and none.events == [] and none.nb == {"k": 1}
    with pytest.raises(ValueError, match="unknown hook point"):
        asyncio.run(runner.run("on_exit", {}, {}))


def test_runner_without_hooks_is_inactive(pool: SandboxPool) -> None:
    runner = HookRunner(Harness("dbbench", BASE), pool)
    assert not runner.active
    assert asyncio.run(runner.run("on_init", {}, {})).effects == []
