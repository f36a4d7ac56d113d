"""The ALFWorld episode loop: hook placement, effects and ctx exactly as Harness-R1's ALFWorld column."""
from __future__ import annotations

import asyncio
from typing import Any

from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.harness.patch import parse_patch
from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.alfworld import episode as runtime
from harness_gym.benchmarks.alfworld.ctx import process_action
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import (
    AGENT_INVALID_ACTION,
    COMPLETED,
    TASK_LIMIT_REACHED,
)
from harness_gym.sandbox.pool import SandboxPool
from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.alfworld.world import ALFWorldWorld
from harness_gym.types import ToolCall, assistant_message

SPEC = get_benchmark("alfworld")
TASK = AlfTask("t", "pick_heat_then_place_in_recep", "heat some apple and put it in countertop", "apple", "countertop", "",
               "kitchen", "FloorPlan1",
               (("cabinet 1", True, False), ("countertop 1", False, False), ("microwave 1", True, False),
                ("cabinet 2", True, False)),
               (("apple 1", "cabinet 1"), ("tomato 1", "countertop 1"), ("apple 2", "cabinet 2")))
SOLUTION = ["go to cabinet 1", "open cabinet 1", "take apple 1 from cabinet 1", "go to microwave 1",
            "heat apple 1 with microwave 1", "go to countertop 1", "put apple 1 in/on countertop 1"]
CTX_FIELDS = {
    "action": {"raw", "normalized", "final_action", "in_admissible"},
    "state": {"nothing_happens_count", "repeated_observation_count", "repeated_action_count", "invalid_action_count",
              "remaining_steps"},
    "task": {"task_type", "target_type", "destination_type"},
    "predicates": {"action_not_admissible", "nothing_happens_repeated", "same_observation_repeated",
                   "same_action_repeated", "remaining_steps_low"},
    "history": {"last_actions", "last_observations"},
    "world": {"current_location", "inventory", "object_at", "visited", "unvisited", "target_found", "target_location",
              "placed_count", "placed_items", "placed_locations", "lamp_location"},
}


class Scripted:
    def __init__(self, script: list[str | None]) -> None:
        self.script = list(script)
        self.seen: list[ChatRequest] = []

    async def submit(self, request: ChatRequest) -> dict:
        self.seen.append(request)
        action = self.script.pop(0) if self.script else None
        if action is None:
            return assistant_message("thinking...")
        return assistant_message("", [ToolCall(f"c{len(self.seen)}", "take_action", {"action": action})])


def run(script: list[str | None], module: str | None = None, task: AlfTask = TASK) -> tuple[Any, Scripted]:
    harness = SPEC.default_harness()
    if module:
        harness = parse_patch(module, harness).apply(harness)
    model = Scripted(script)

    async def go() -> Any:
        pool = SandboxPool(workers=1)
        try:
            return await runtime.run_episode(task, ALFWorldWorld(), harness, HookRunner(harness, pool), model.submit, seed=0)
        finally:
            await pool.close()

    return asyncio.run(go()), model


def test_solution_wins_and_first_message_format() -> None:
    res, model = run(SOLUTION)
    assert res.status == COMPLETED and res.reward == 1.0 and res.success and res.rounds == 7
    first = res.messages[1]["content"]
    assert first.startswith("Here is your task. You are in the middle of a room.") and "Welcome" not in first
    assert "Your task is to: heat some apple and put it in countertop.\nAVAILABLE ACTIONS: go to cabinet 1\n" in first
    tool = res.messages[3]
    assert tool["role"] == "tool" and tool["content"].startswith("You arrive at loc ")
    assert "\nAVAILABLE ACTIONS: " in tool["content"] and "open cabinet 1" in tool["content"]
    assert model.seen[0].tools[0]["function"]["name"] == "take_action"


def test_step_limit_text_only_and_three_identical_outputs() -> None:
    res, model = run(["look", "inventory"] * 30)
    assert res.status == TASK_LIMIT_REACHED and res.rounds == 50 and len(model.seen) == 50 and res.reward == 0.0
    res, _ = run(["go to cabinet 1", "dance", "dance", "dance", "look"])
    assert res.status == AGENT_INVALID_ACTION and res.rounds == 4 and res.reward == 0.0
    res, _ = run([None, None, None])
    assert res.status == AGENT_INVALID_ACTION and res.rounds == 3
    assert "You must call a tool" in res.messages[3]["content"]


def test_process_action_normalizes_and_optionally_maps() -> None:
    adm = ["go to cabinet 1", "put apple 1 in/on countertop 1"]
    assert process_action("  Action: Go to Cabinet 1. ", adm) == "go to cabinet 1"
    assert process_action("put apple 1 on countertop 1", adm) == "put apple 1 on countertop 1"
    assert process_action("put apple 1 on countertop 1", adm, "closest") == "put apple 1 in/on countertop 1"


CAPTURE = '''
def on_init(ctx, nb):
    return {"skills": ["Heat before placing."], "tool_hint": "Copy actions exactly."}

def make_pre_hint(ctx, nb):
    nb["pre"] = nb.get("pre", 0) + 1
    return {"message": "PRE step=" + str(ctx["step"]) + " loc=" + str(ctx["world"]["current_location"])}

def on_before_action(ctx, nb):
    nb["ctx_keys"] = sorted(ctx.keys())
    if ctx["action"]["normalized"].startswith("put ") and not nb.get("heated"):
        return {"type": "block_and_prompt", "message": "BLOCK not heated"}
    return None

def on_post_step(ctx, nb):
    if ctx["observation"].startswith("You heat"):
        nb["heated"] = True
    if ctx["observation"].startswith("You pick up"):
        return {"type": "inject_hint", "message": "POST held=" + str(ctx["world"]["inventory"])}
    return None
'''


def test_hook_placement_and_effects() -> None:
    script = SOLUTION[:3] + ["go to countertop 1", "put apple 1 in/on countertop 1", "go to microwave 1",
                             "heat apple 1 with microwave 1", "go to countertop 1", "put apple 1 in/on countertop 1"]
    res, model = run(script, CAPTURE)
    assert res.reward == 1.0 and res.rounds == 9
    system = model.seen[0].messages[0]["content"]
    assert "Some tips that may help for this task:\n- Heat before placing." in system
    assert model.seen[0].tools[0]["function"]["description"].endswith("Copy actions exactly.")
    assert model.seen[0].messages[-1] == {"role": "user", "content": "PRE step=0 loc="}
    msgs = res.messages
    i = next(k for k, m in enumerate(msgs) if m.get("content") == "BLOCK not heated")
    assert msgs[i - 1]["role"] == "tool" and msgs[i - 1]["content"] == runtime.NOT_EXECUTED
    j = next(k for k, m in enumerate(msgs) if m.get("content") == "POST held=apple 1")
    assert msgs[j - 1]["role"] == "tool" and msgs[j - 1]["content"].startswith("You pick up the apple 1")
    assert [m["content"] for m in msgs if str(m.get("content", "")).startswith("PRE step=1")] == ["PRE step=1 loc=cabinet 1"]


FORCE = '''
def on_post_step(ctx, nb):
    if ctx["observation"].startswith("You open"):
        return {"type": "force_action", "action": [a for a in ctx["admissible"] if a.startswith("take apple")][0]}
    if ctx["observation"].startswith("You pick up"):
        return {"type": "force_action", "action": "go to cabinet " + str(7), "message": "FORCED hint"}
    return None

def on_before_action(ctx, nb):
    if ctx["action"]["normalized"].startswith("put ") and not ctx["action"]["in_admissible"]:
        return {"type": "rewrite_action", "action": [a for a in ctx["admissible"] if a.startswith("put ")][0]}
    return None
'''


def test_force_and_rewrite_are_admissible_only() -> None:
    res, _ = run(["go to cabinet 1", "open cabinet 1", "look", "go to microwave 1", "heat apple 1 with microwave 1",
                  "go to countertop 1", "put apple 1 on countertop 1"], FORCE)
    steps = [e["arguments"]["action"] for e in res.events if e["kind"] == "step"]
    assert steps[2] == "take apple 1 from cabinet 1"  # the model said "look"; the pending force replaced it
    assert steps[-1] == "put apple 1 in/on countertop 1" and res.reward == 1.0
    assert any(m.get("content") == "FORCED hint" for m in res.messages)  # non-admissible force became a hint
    assert "go to cabinet 7" not in steps


CTX_DUMP = '''
def on_post_step(ctx, nb):
    w = ctx["world"]
    nb["log"] = nb.get("log", []) + [{"world": w, "state": ctx["state"], "predicates": ctx["predicates"], "task": ctx["task"], "keys": sorted(ctx.keys()), "history": sorted(ctx["history"].keys()), "action": ctx["action"]}]
    return None

def on_before_action(ctx, nb):
    if ctx["step"] == 5:
        return {"type": "block_and_prompt", "message": "LOG " + str(nb["log"])[:10]}
    return None
'''


def test_ctx_fields_follow_harness_r1_and_only_observed_facts(monkeypatch: Any) -> None:
    logs: list[dict] = []
    real = HookRunner.run

    async def spy(self: HookRunner, point: str, ctx: dict, nb: dict, *rest: Any) -> Any:
        out = await real(self, point, ctx, nb, *rest)
        if point == "on_post_step":
            logs.append(out.nb["log"][-1])
        return out

    monkeypatch.setattr(HookRunner, "run", spy)
    run(["go to cabinet 1", "open cabinet 1", "take apple 1 from cabinet 1", "bogus", "bogus"], CTX_DUMP)
    assert len(logs) == 5
    first = logs[1]
    assert set(first["keys"]) >= {"observation", "admissible", "output", "step", "max_step", "remaining_steps", "action",
                                  "state", "task", "predicates", "history", "world"}
    for name, fields in CTX_FIELDS.items():
        got = first[name] if name != "history" else set(first["history"])
        assert fields <= set(got), name
    assert first["task"] == {"task_type": "pick_heat_then_place", "target_type": "apple", "destination_type": "countertop",
                             "toggle_type": ""}
    world = first["world"]  # only what was observed: apple 2 in the closed cabinet 2 is unknown
    assert world["object_at"] == {"apple 1": "cabinet 1"} and world["target_found"] and world["target_location"] == "cabinet 1"
    assert world["visited"] == ["cabinet 1"] and "cabinet 2" in world["unvisited"] and world["inventory"] is None
    assert first["action"]["final_action"] == "open cabinet 1" and first["action"]["in_admissible"] is True
    assert logs[3]["action"]["in_admissible"] is False
    assert logs[2]["world"]["inventory"] == "apple 1" and logs[2]["world"]["object_at"] == {}
    last = logs[4]
    assert last["state"]["nothing_happens_count"] == 2 and last["state"]["invalid_action_count"] == 2
    assert last["predicates"]["nothing_happens_repeated"] and last["predicates"]["same_action_repeated"]
    assert last["state"]["repeated_action_count"] == 2


def test_placed_items_and_two_object_tracking() -> None:
    task = AlfTask("t2", "pick_two_obj_and_place", "put two apple in countertop", "apple", "countertop", "", "kitchen",
                   "FloorPlan1", TASK.receptacles, TASK.objects)
    dump = 'def on_post_step(ctx, nb):\n    return {"type": "inject_hint", "message": "W " + str(ctx["world"]["placed_items"]) + str(ctx["world"]["placed_locations"]) + str(ctx["world"]["placed_count"])}\n'
    res, _ = run(SOLUTION[:3] + ["go to countertop 1", "put apple 1 in/on countertop 1", "take apple 1 from countertop 1"],
                 dump, task)
    hints = [m["content"] for m in res.messages if str(m.get("content", "")).startswith("W ")]
    assert hints[4] == "W ['apple 1']['countertop 1']1" and hints[5] == "W [][]0"
