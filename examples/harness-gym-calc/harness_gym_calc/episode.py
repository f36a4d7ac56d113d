"""The calc agent loop with the four hook points (see prompt.hook_api), and the ctx its hooks read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_gym.benchmarks.api import (COMPLETED, TASK_LIMIT_REACHED, ChatRequest, EpisodeHooks, EpisodeResult,
                                        Sampling, ToolCall, World, clean_reply, derive_seed, system_with_init,
                                        tool_calls_of, tool_message)

FAILED = ("Error", "No conversion")


@dataclass
class CalcState:
    """What hooks may read; never the answer."""

    task: Any
    max_rounds: int
    round: int = 0
    lookups: int = 0
    calculations: int = 0
    last_result: str = ""

    def ctx(self, phase: str, call: ToolCall | None = None) -> dict[str, Any]:
        value = str(next(iter(call.arguments.values()), "")) if call and call.arguments else ""
        t = self.task
        return {"phase": phase, "step": self.round, "max_step": self.max_rounds,
                "remaining_steps": self.max_rounds - self.round, "observation": self.last_result,
                "action": {"tool": call.name if call else "", "value": value},
                "task": {"task_type": t.task_type, "from_unit": t.from_unit, "to_unit": t.to_unit, "decimals": t.decimals},
                "state": {"lookups": self.lookups, "calculations": self.calculations},
                "predicates": {"no_lookup_yet": self.lookups == 0, "last_call_failed": self.last_result.startswith(FAILED),
                               "answer_decimals_wrong": bool(call and call.name == "submit_answer"
                                                             and len(value.strip().partition(".")[2]) != t.decimals)}}


# The rules the score means, never read from the patchable config.json (patches cannot change them).
PROTOCOL = {"max_rounds": 8, "metric": "score"}


async def run_episode(task: Any, world: World, harness: Any, hooks: Any, submit: Any, *, seed: int,
                      sampling: Sampling = Sampling(), protocol: Any = None) -> EpisodeResult:
    state = CalcState(task, int((protocol or PROTOCOL)["max_rounds"]))
    result = EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed)
    ep = EpisodeHooks(result, hooks)
    question = world.reset(task)
    skills, hint = await ep.init(state.ctx("init"))
    messages = [{"role": "system", "content": system_with_init(harness.system_prompt(), skills, hint)},
                {"role": "user", "content": question}]
    done = False
    for rnd in range(state.max_rounds):
        state.round = rnd
        messages += [{"role": "user", "content": e["message"]} for e in await ep.hook("make_pre_hint", state.ctx("pre_hint"), rnd)]
        reply = clean_reply(await submit(ChatRequest(
            messages=list(messages), tools=harness.tools(), sampling=sampling, knowledge=task,
            seed=derive_seed(seed, result.task_identity, rnd), meta={"benchmark": "calc", "round": rnd, "episode_seed": seed})))
        messages.append(reply)
        calls = tool_calls_of(reply)
        if not calls:
            result.events.append({"kind": "text_only", "round": rnd})
            messages.append({"role": "user", "content": harness.config().get("text_only_message", "Call a tool.")})
            continue
        call, blocked = calls[0], ""
        for eff in await ep.hook("on_before_action", state.ctx("before_action", call), rnd):
            applied = eff["type"] == "block_and_prompt"
            ep.note(rnd, "on_before_action", eff, applied, "block" if applied else "rewrite/force ignored")
            blocked = blocked or (eff["message"] if applied else "")
        if blocked:
            messages.append(tool_message(call, "Blocked by the harness: " + blocked))
            continue
        step = world.step(call)
        messages.append(tool_message(call, step.observation))
        state.lookups += call.name == "lookup_factor"
        state.calculations += call.name == "calculate"
        state.last_result = step.observation
        result.events.append({"kind": "step", "round": rnd, "tool": call.name, "arguments": call.arguments,
                              "observation": step.observation})
        if step.done:
            done = True
            break
        messages += [{"role": "user", "content": e["message"]} for e in await ep.hook("on_post_step", state.ctx("post_step", call), rnd)
                     if e["type"] == "inject_hint"]
    result.rounds, result.messages, result.status = rnd + 1, messages, COMPLETED if done else TASK_LIMIT_REACHED
    result.reward = float(world.score) if done else 0.0
    result.success = result.reward >= 1.0
    return result
