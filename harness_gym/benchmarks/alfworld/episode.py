"""The ALFWorld episode loop with Harness-R1's four hook points (spec §3, ALFWorld column).

- ``on_init`` after reset: skills go into the system prompt; ``tool_hint`` is appended to
  the ``take_action`` description.
- ``make_pre_hint`` every step before the model call: a user message.
- ``on_before_action`` after the raw action is mapped to a command (``process_action``)
  and any pending force is applied. ``block_and_prompt``: no env step, the step is used;
  the call gets a "not executed" tool result and the block text follows as a user message.
  ``rewrite_action``/``force_action``: the command is replaced (lowercased; a numbered
  instance must be admissible, see ``runtime/hooks.py``).
- ``on_post_step`` after the tool observation: ``inject_hint`` is a user message,
  ``force_action`` replaces the next action.

50 steps; a text-only turn costs a step; three identical raw outputs in a row end the
episode as a failure (AgentBench v0.2). Only the first tool call of a reply is used.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from harness_gym.benchmarks.alfworld.spec import PROTOCOL
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.benchmarks.alfworld.ctx import AlfState, process_action
from harness_gym.runtime.context import derive_seed, system_with_init, tools_with_hint, window
from harness_gym.runtime.episode import EpisodeHooks, clean_reply, tool_message
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import (
    AGENT_INVALID_ACTION,
    COMPLETED,
    TASK_LIMIT_REACHED,
    EpisodeResult,
)
from harness_gym.benchmarks.alfworld.observe import first_observation
from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.alfworld.world import TOOL, action_of
from harness_gym.benchmarks.base import World
from harness_gym.types import Message, ToolCall, tool_calls_of

Submit = Callable[[ChatRequest], Awaitable[Message]]
NOT_EXECUTED = "The action was not executed."
EXTRA_CALL = "Ignored: only the first tool call of a reply is executed."


def format_observation(observation: str, admissible: list[str]) -> str:
    return f"{observation}\nAVAILABLE ACTIONS: " + "\n".join(admissible)


def first_message(observation: str, admissible: list[str]) -> str:
    return "Here is your task. " + format_observation(observation, admissible)


def _admissible_of(world: World) -> list[str]:
    return list(getattr(world, "admissible_commands", []) or [])


async def run_episode(
    task: AlfTask,
    world: World,
    harness: Harness,
    hooks: HookRunner | None,
    submit: Submit,
    *,
    seed: int,
    sampling: Sampling = Sampling(),
    protocol: Mapping[str, Any] | None = None,
) -> EpisodeResult:
    """Run one ALFWorld episode; ``WorldError`` propagates (the evaluator retries it)."""
    cfg = harness.config()
    rules = PROTOCOL if protocol is None else protocol  # limits come from the protocol, never from config.json
    max_steps = int(rules["max_rounds"])
    repeat_limit = int(rules["repeat_limit"])
    mapping = str(cfg.get("action_mapping", "exact"))
    text_only_message = str(cfg.get("text_only_message", "You must call a tool! NEVER respond with only text."))
    keep_last = int(cfg.get("history_window", 0))
    result = EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed)
    ep = EpisodeHooks(result, hooks)
    obs0 = first_observation(world.reset(task))
    state = AlfState.start(obs0, _admissible_of(world), max_steps)

    skills, tool_hint = await ep.init(state.ctx(phase="init"))
    messages: list[Message] = [
        {"role": "system", "content": system_with_init(harness.system_prompt(), skills, "")},
        {"role": "user", "content": first_message(obs0, state.admissible)},
    ]
    tools = tools_with_hint(harness.tools(), tool_hint, (TOOL,))
    outputs: list[str] = []
    pending_force = ""
    done = repeated = False
    step = 0
    for step in range(max_steps):
        state.step = step
        for eff in await ep.hook("make_pre_hint", state.ctx(phase="pre_hint"), step):
            messages.append({"role": "user", "content": eff["message"]})
        request = ChatRequest(
            messages=window(messages, keep_last), tools=tools, sampling=sampling,
            seed=derive_seed(seed, result.task_identity, step), knowledge=task,
            meta={"benchmark": "alfworld", "round": step, "episode_seed": seed, "executed": len(state.actions)},
        )
        reply = clean_reply(await submit(request))
        messages.append(reply)
        calls = tool_calls_of(reply)
        if not calls:
            outputs.append(str(reply.get("content") or ""))
            state.note_output(outputs[-1])
            result.events.append({"kind": "text_only", "round": step})
            messages.append({"role": "user", "content": text_only_message})
        else:
            call = calls[0]
            raw = action_of(call) if call.name == TOOL else ""
            outputs.append(raw if call.name == TOOL else f"{call.name}:{call.raw_arguments}")
            state.note_output(raw)
            done = await _act(ep, state, world, messages, call, raw, mapping, pending_force, step)
            pending_force = ""
            for extra in calls[1:]:
                messages.append(tool_message(extra, EXTRA_CALL))
            if not done:
                pending_force = await _post_step(ep, state, messages, step) if state.stepped else ""
        if done:
            break
        if len(outputs) >= repeat_limit and len(set(outputs[-repeat_limit:])) == 1:
            repeated = True
            result.events.append({"kind": "repeated_output", "round": step})
            break
    result.rounds = step + 1
    result.messages = messages
    result.status = COMPLETED if done else (AGENT_INVALID_ACTION if repeated else TASK_LIMIT_REACHED)
    result.reward = float(world.score) if done else 0.0
    result.success = result.reward >= 1.0
    return result


async def _act(ep: EpisodeHooks, state: AlfState, world: World, messages: list[Message], call: ToolCall, raw: str,
               mapping: str, pending_force: str, step: int) -> bool:
    """Map, force, guard and execute one action; return whether the episode is won."""
    state.stepped = False
    normalized = process_action(raw, state.admissible, mapping) if call.name == TOOL else ""
    final = normalized
    if pending_force:
        final = pending_force
        ep.note(step, "on_post_step", {"type": "force_action"}, True, "pending force replaced the action")
    after: list[str] = []
    ctx = state.ctx(phase="before_action", raw=raw, normalized=normalized, final_action=final)
    for eff in await ep.hook("on_before_action", ctx, step):
        if eff["type"] == "block_and_prompt":
            ep.note(step, "on_before_action", eff, True, "blocked: no env step, the step is used")
            messages.append(tool_message(call, NOT_EXECUTED))
            messages.append({"role": "user", "content": eff["message"]})
            return False
        final = eff["action"]
        ep.note(step, "on_before_action", eff, True, f"{eff['type']} replaced the action")
        if eff.get("message"):
            after.append(eff["message"])
    if call.name != TOOL and not final:
        messages.append(tool_message(call, f"Unknown tool {call.name!r}; use {TOOL}(action)."))
        return False
    if final.startswith("think:"):
        messages.append(tool_message(call, "OK."))
        return False
    res = world.step(ToolCall(call.id, TOOL, {"action": final}))
    admissible = list(res.info.get("admissible_commands", _admissible_of(world)))
    result_event = {"kind": "step", "round": step, "tool": TOOL, "arguments": {"action": final},
                    "observation": res.observation}
    ep.result.events.append(result_event)
    messages.append(tool_message(call, format_observation(res.observation, admissible)))
    messages.extend({"role": "user", "content": m} for m in after)
    state.after_step(final, res.observation, admissible)
    state.stepped = True
    return bool(res.done)


async def _post_step(ep: EpisodeHooks, state: AlfState, messages: list[Message], step: int) -> str:
    force = ""
    for eff in await ep.hook("on_post_step", state.ctx(phase="post_step", final_action=state.actions[-1]), step):
        if eff["type"] == "inject_hint":
            messages.append({"role": "user", "content": eff["message"]})
            ep.note(step, "on_post_step", eff, True, "user message after the observation")
        elif eff["type"] == "force_action" and not force:
            force = eff["action"]
            if eff.get("message"):
                messages.append({"role": "user", "content": eff["message"]})
            ep.note(step, "on_post_step", eff, True, "replaces the next action")
    return force
