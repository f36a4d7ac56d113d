"""A clean DBBench expert: the simulated target's knowledge with every flaw off.

``respond`` has the sim policy's contract (a ``ChatRequest`` whose ``knowledge`` is the
task, an assistant message back): it runs the task's reference statement (repaired as
``loader.repair_reference_sql`` does) through ``execute_sql``, then commits through
``commit_final_answer`` — for SELECT types every value of the reply, for mutations ``[]``.
It reads only the conversation and its knowledge, as the sim does, so it makes expert
trajectories for supervised fine-tuning of a real model (``run_expert_episode``): the
same runtime, tools and messages a model sees. Where the reference itself fails or its
reply differs from the label (many original SELECT tasks, whose labels came from the
source QA datasets), the expert fails too: it never reads the label.
"""
from __future__ import annotations

import asyncio

from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.dbbench.ctx import parse_rows
from harness_gym.benchmarks.dbbench.sim import History, _is_error, _is_mutation, reference_of
from harness_gym.benchmarks.dbbench.tasks import DBTask
from harness_gym.types import Message, ToolCall, assistant_message


def respond(request: ChatRequest) -> Message:
    """The expert's next message for the conversation in ``request`` (module doc)."""
    task: DBTask = request.knowledge
    rnd = int(request.meta.get("round", 0))
    ran = History.read(request.messages).sql
    if task.is_mutation:
        if any(not _is_error(r) and _is_mutation(q) for q, r in ran):
            return _call(rnd, "commit_final_answer", {"answers": []}, "The table is updated.")
        if ran and _is_error(ran[-1][1]):
            return _call(rnd, "commit_final_answer", {"answers": []}, "The statement fails; I cannot do more.")
        return _call(rnd, "execute_sql", {"query": reference_of(task)}, "Let me run the statement.")
    if not ran:
        return _call(rnd, "execute_sql", {"query": reference_of(task)}, "Let me query the table.")
    rows = parse_rows(ran[-1][1]) or []
    values = ["" if v is None else str(v) for row in rows for v in row]
    return _call(rnd, "commit_final_answer", {"answers": values}, "I have the answer.")


def _call(rnd: int, tool: str, args: dict[str, object], thought: str) -> Message:
    return assistant_message(thought, [ToolCall(f"call_{rnd}_0", tool, args)])


def run_expert_episode(task: DBTask, world: World, harness: Harness | None = None, *, seed: int = 0) -> EpisodeResult:
    """One episode with the expert as the model, through the DBBench runtime (default harness unless given);
    ``result.messages`` is the trajectory."""
    from harness_gym.benchmarks.dbbench.episode import run_episode
    from harness_gym.evaluation.benchmarks import get_benchmark

    async def submit(request: ChatRequest) -> Message:
        return respond(request)

    harness = harness or get_benchmark("dbbench").default_harness()
    return asyncio.run(run_episode(task, world, harness, None, submit, seed=seed))
