"""The clean DBBench expert (for expert trajectories): reference SQL, then the right commit, through the tools."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness_gym.benchmarks.dbbench.data import verify
from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.expert import run_expert_episode
from harness_gym.benchmarks.dbbench.generator import generate_split
from harness_gym.benchmarks.dbbench.loader import load_split
from harness_gym.benchmarks.dbbench.ctx import parse_rows
from harness_gym.benchmarks.dbbench.sim import reference_of
from harness_gym.benchmarks.dbbench.world import DBBenchWorld
from harness_gym.types import ToolCall

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dbbench"


@pytest.mark.parametrize("split", ["valid", "test"])
def test_expert_solves_every_generated_task(split):
    """Generated labels are the reference's reply, so the expert must solve every task."""
    world = DBBenchWorld(open_database("sqlite"))
    failed = []
    for i, task in enumerate(generate_split(split)):
        result = run_expert_episode(task, world, seed=i)
        if not result.success:
            failed.append(task.task_id)
    world.close()
    assert failed == []


def test_expert_trajectory_is_the_reference_then_the_reply_committed():
    task = next(t for t in generate_split("test") if t.task_type == "counting")
    world = DBBenchWorld(open_database("sqlite"))
    result = run_expert_episode(task, world)
    world.close()
    calls = [ToolCall.from_message_call(c) for m in result.messages if m["role"] == "assistant" for c in m["tool_calls"]]
    assert [c.name for c in calls] == ["execute_sql", "commit_final_answer"] and result.success and result.rounds == 2
    assert calls[0].arguments == {"query": reference_of(task)}
    reply = next(m["content"] for m in result.messages if m["role"] == "tool")
    assert calls[1].arguments == {"answers": [str(v) for row in parse_rows(reply) for v in row]}


def test_expert_matches_the_reference_verification_on_original_files():
    """On the original files the expert passes exactly where the (repaired) reference does."""
    tasks = load_split("valid", DATA)
    report = verify(tasks, "sqlite")
    world = DBBenchWorld(open_database("sqlite"))
    solved = {t.task_id for t in tasks if run_expert_episode(t, world).success}
    world.close()
    assert solved == {v.task_id for v in report.verdicts if v.repaired_pass}
