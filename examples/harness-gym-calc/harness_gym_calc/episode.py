"""The calc agent loop with the four hook points, and the ctx its hooks read.

Each round: ``make_pre_hint`` (a user message), one model call, its first tool call
through ``on_before_action`` (``block_and_prompt`` answers the call with the message and
skips the step; rewrite/force are not supported and recorded as ignored), the world step,
then ``on_post_step`` (``inject_hint``: a user message). ``submit_answer`` ends the episode.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_gym.benchmarks.api import (COMPLETED, TASK_LIMIT_REACHED, ChatRequest, EpisodeHooks, EpisodeResult,
                                        Sampling, ToolCall, World, clean_reply, derive_seed, system_with_init,
                                        tool_calls_of, tool_message)


def decimals_of(text: str) -> int:
    return len(text.strip().partition(".")[2])


@dataclass
class CalcState:
    """The ctx builder: what hooks may read (no gold: the answer is never here)."""

    task: Any
    max_rounds: int
    round: int = 0
    lookups: int = 0
    calculations: int = 0
    errors: int = 0
    last_result: str = ""
    history: list[str] = field(default_factory=list)

    def ctx(self, phase: str, call: ToolCall | None = None) -> dict[str, Any]:
        tool = call.name if call else ""
        value = str(next(iter(call.arguments.values()), "")) if call and call.arguments else ""
        submitting = tool == "submit_answer"
        return {
            "phase": phase, "step": self.round, "max_step": self.max_rounds,
            "remaining_steps": self.max_rounds - self.round, "observation": self.last_result,
            "action": {"tool": tool, "value": value},
            "task": {"task_type": self.task.task_type, "from_unit": self.task.from_unit, "to_unit": self.task.to_unit,
                     "decimals": self.task.decimals},
            "state": {"lookups": self.lookups, "calculations": self.calculations, "errors": self.errors,
                      "tools_used": list(self.history)},
            "predicates": {"no_lookup_yet": self.lookups == 0,
                           "answer_decimals_wrong": submitting and decimals_of(value) != self.task.decimals,
                           "last_call_failed": self.last_result.startswith(("Error", "No conversion"))},
        }

    def after(self, call: ToolCall, observation: str) -> None:
        self.history.append(call.name)
        self.lookups += call.name == "lookup_factor"
        self.calculations += call.name == "calculate"
        self.errors += observation.startswith(("Error", "No conversion"))
        self.last_result = observation


async def run_episode(task: Any, world: World, harness: Any, hooks: Any, submit: Any, *, seed: int,
                      sampling: Sampling = Sampling()) -> EpisodeResult:
    cfg = harness.config()
    state = CalcState(task, int(cfg.get("max_rounds", 8)))
    result = EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed)
    ep = EpisodeHooks(result, hooks)
    question = world.reset(task)
    skills, hint = await ep.init(state.ctx("init"))
    messages = [{"role": "system", "content": system_with_init(harness.system_prompt(), skills, hint)},
                {"role": "user", "content": question}]
    done = False
    for rnd in range(state.max_rounds):
        state.round = rnd
        for eff in await ep.hook("make_pre_hint", state.ctx("pre_hint"), rnd):
            messages.append({"role": "user", "content": eff["message"]})
        request = ChatRequest(messages=list(messages), tools=harness.tools(), sampling=sampling,
                              seed=derive_seed(seed, result.task_identity, rnd), knowledge=task,
                              meta={"benchmark": "calc", "round": rnd, "episode_seed": seed})
        reply = clean_reply(await submit(request))
        messages.append(reply)
        calls = tool_calls_of(reply)
        if not calls:
            result.events.append({"kind": "text_only", "round": rnd})
            messages.append({"role": "user", "content": str(cfg.get("text_only_message", "Call a tool."))})
            continue
        call, blocked = calls[0], False
        for eff in await ep.hook("on_before_action", state.ctx("before_action", call), rnd):
            if eff["type"] == "block_and_prompt":
                messages.append(tool_message(call, "Blocked by the harness: " + eff["message"]))
                ep.note(rnd, "on_before_action", eff, True, "block: the call is answered with the message")
                blocked = True
                break
            ep.note(rnd, "on_before_action", eff, False, "calc runs calls as made: rewrite/force ignored")
        if blocked:
            continue
        step = world.step(call)
        messages.append(tool_message(call, step.observation))
        state.after(call, step.observation)
        result.events.append({"kind": "step", "round": rnd, "tool": call.name, "arguments": call.arguments,
                              "observation": step.observation})
        if step.done:
            done = True
            break
        for eff in await ep.hook("on_post_step", state.ctx("post_step", call), rnd):
            if eff["type"] == "inject_hint":
                messages.append({"role": "user", "content": eff["message"]})
    result.rounds, result.messages = rnd + 1, messages
    result.status = COMPLETED if done else TASK_LIMIT_REACHED
    result.reward = float(world.score) if done else 0.0
    result.success = result.reward >= 1.0
    return result
