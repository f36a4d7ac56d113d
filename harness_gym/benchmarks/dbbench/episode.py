"""The DBBench episode loop with Harness-R1's four hook points (spec §3, DBBench column).

- ``on_init`` after reset: skills and tool hint go into the system prompt.
- ``make_pre_hint`` every round before the model call: a user message.
- ``on_before_action`` for every tool call of a reply: ``block_and_prompt`` becomes that
  call's tool result and the SQL/commit does not run; rewrite/force are ignored, as in the
  original, and the trajectory says so.
- ``on_post_step`` after each ``execute_sql`` result: ``inject_hint`` becomes a user
  message after the reply's tool results; ``force_action`` is ignored. No call after a commit.
"""
from __future__ import annotations

from typing import Any, Mapping


from harness_gym.benchmarks.dbbench.spec import PROTOCOL
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.runtime.context import derive_seed, system_with_init, window
from harness_gym.benchmarks.dbbench.ctx import DBState
from harness_gym.runtime.episode import EpisodeHooks, Submit, clean_reply, tool_message
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import COMPLETED, TASK_LIMIT_REACHED, EpisodeResult
from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.dbbench.tasks import DBTask
from harness_gym.types import Message, ToolCall, tool_calls_of

async def run_episode(
    task: DBTask,
    world: World,
    harness: Harness,
    hooks: HookRunner | None,
    submit: Submit,
    *,
    seed: int,
    sampling: Sampling = Sampling(),
    protocol: Mapping[str, Any] | None = None,
) -> EpisodeResult:
    """Run one DBBench episode; ``WorldError`` propagates (the evaluator retries it)."""
    cfg = harness.config()
    rules = PROTOCOL if protocol is None else protocol  # limits come from the protocol, never from config.json
    max_rounds = int(rules["max_rounds"])
    result = EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed)
    ep = EpisodeHooks(result, hooks)
    first = world.reset(task)
    state = DBState.start(task.task_type, task.table_name, task.description, first, max_rounds)

    skills, tool_hint = await ep.init(state.ctx(phase="init"))
    messages: list[Message] = [
        {"role": "system", "content": system_with_init(harness.system_prompt(), skills, tool_hint)},
        {"role": "user", "content": first},
    ]
    tools = harness.tools()
    keep_last = int(cfg.get("history_window", 0))
    text_only_message = str(cfg.get("text_only_message", "You must call a tool! NEVER respond with only text."))
    done = False
    rnd = 0
    for rnd in range(max_rounds):
        state.round = rnd
        for eff in await ep.hook("make_pre_hint", state.ctx(phase="pre_hint"), rnd):
            messages.append({"role": "user", "content": eff["message"]})
        request = ChatRequest(
            messages=window(messages, keep_last),
            tools=tools,
            sampling=sampling,
            seed=derive_seed(seed, result.task_identity, rnd),
            knowledge=task,
            meta={"benchmark": "dbbench", "round": rnd, "episode_seed": seed},
        )
        reply = clean_reply(await submit(request))
        messages.append(reply)
        calls = tool_calls_of(reply)
        if not calls:
            state.note_text_only()
            result.events.append({"kind": "text_only", "round": rnd})
            messages.append({"role": "user", "content": text_only_message})
            continue
        state.note_tool_call()
        hints: list[str] = []
        for call in calls:
            if done:
                messages.append(tool_message(call, "Skipped: the final answer was already committed."))
                continue
            blocked = await _before_action(ep, state, call, rnd)
            if blocked is not None:
                messages.append(tool_message(call, blocked))
                continue
            step = world.step(call)
            result.events.append(
                {"kind": "step", "round": rnd, "tool": call.name, "arguments": call.arguments, "observation": step.observation}
            )
            messages.append(tool_message(call, step.observation))
            state.after_step(call, step)
            if step.done:
                done = True
            elif call.name == "execute_sql":
                for eff in await ep.hook("on_post_step", state.ctx(call, phase="post_step"), rnd):
                    if eff["type"] == "inject_hint":
                        hints.append(eff["message"])
                        ep.note(rnd, "on_post_step", eff, True, "user message after the tool results")
                    else:
                        ep.note(rnd, "on_post_step", eff, False, "DBBench ignores force_action, as the original")
        messages.extend({"role": "user", "content": h} for h in hints)
        if done:
            break
    result.rounds = rnd + 1
    result.messages = messages
    result.status = COMPLETED if done else TASK_LIMIT_REACHED
    result.reward = float(world.score) if done else 0.0
    result.success = result.reward >= 1.0
    return result


async def _before_action(ep: EpisodeHooks, state: DBState, call: ToolCall, rnd: int) -> str | None:
    """Run ``on_before_action``; return the block message when a hook blocks the call."""
    blocked = None
    for eff in await ep.hook("on_before_action", state.ctx(call, phase="before_action"), rnd):
        if eff["type"] == "block_and_prompt" and blocked is None:
            blocked = eff["message"]
            ep.note(rnd, "on_before_action", eff, True, "block becomes the tool result")
        else:
            ep.note(rnd, "on_before_action", eff, False, "DBBench ignores rewrite/force, as the original")
    return blocked

