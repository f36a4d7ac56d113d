"""The WebShop episode loop with Harness-R1's four hook points (spec §3, WebShop column).

Message layout (Harness-R1 ``tasks/webshop/task.py``): the system prompt, then
``The initial observation:\\n{obs}\\n\\nAvailable Actions:\\n{dict}`` as a user message; each
later round starts with a tool message ``Action: {action}\\n\\nObservation:\\n{obs}\\n\\n
Available Actions:\\n{dict}`` (a user message ``Observation:…`` when the previous turn had
no action). A turn without a tool call gets the observation "You must call a tool! NEVER
respond with only text." Only the first tool call and its first argument are used.

Hooks:
- ``on_init`` after reset: skills go into the system prompt; ``tool_hint`` is appended to
  both tool descriptions.
- ``make_pre_hint`` each round after the observation, before the model call: a user message.
- ``on_before_action`` on the first tool call, after any pending force is applied
  (``action.final_action`` shows it). ``block_and_prompt`` → a user message, no env step,
  the round is used (the next round re-sends the unchanged observation under the blocked
  action, as the original does); ``rewrite_action``/``force_action`` replace the action
  (a bare value is wrapped as ``search[…]``/``click[…]`` per the current tool) and any
  message is a user message sent before the env step.
- ``on_post_step`` after the env step: ``inject_hint`` → a user message placed *before* the
  next round's observation; ``force_action`` (wrapped ``click[…]`` if bare) replaces the
  next tool call's action.
20 rounds; hitting the limit scores 0. Reward = the score at buy; success = reward ≥ 1.
"""
from __future__ import annotations

from typing import Any, Mapping

from harness_gym.benchmarks.webshop.spec import PROTOCOL
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.runtime.context import derive_seed, system_with_init, tools_with_hint, window
from harness_gym.runtime.episode import EpisodeHooks, Submit, clean_reply
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import COMPLETED, TASK_LIMIT_REACHED, EpisodeResult
from harness_gym.benchmarks.webshop.ctx import WSState
from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.webshop.reward import noun_extractor
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.types import Message, ToolCall, tool_calls_of

TOOL_NAMES = ("search_action", "click_action")
INVALID_CALL = "No valid tool call found from agent."


def wrap_action(action: str, tool: str) -> str:
    """A bracketed action is kept; a bare value becomes ``search[…]`` or ``click[…]``."""
    action = action.strip()
    if "[" in action and action.endswith("]"):
        return action
    return f"search[{action}]" if tool == "search_action" else f"click[{action}]"


def first_argument(call: ToolCall) -> str | None:
    args = call.arguments if isinstance(call.arguments, dict) else {}
    if not args or "__unparsed__" in args:
        return None
    value = next(iter(args.values()))
    return value if isinstance(value, str) else str(value)


def _available(world: World) -> dict[str, Any]:
    getter = getattr(world, "available_actions", None)
    return getter() if callable(getter) else {"has_search_bar": False, "clickables": []}


async def run_episode(
    task: WebShopTask,
    world: World,
    harness: Harness,
    hooks: HookRunner | None,
    submit: Submit,
    *,
    seed: int,
    sampling: Sampling = Sampling(),
    protocol: Mapping[str, Any] | None = None,
) -> EpisodeResult:
    """Run one WebShop episode; ``WorldError`` propagates (the evaluator retries it)."""
    cfg = harness.config()
    rules = PROTOCOL if protocol is None else protocol  # limits come from the protocol, never from config.json
    max_rounds = int(rules["max_rounds"])
    result = EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed)
    ep = EpisodeHooks(result, hooks)
    observation = world.reset(task)
    state = WSState.start(task.instruction, task.task_type, max_rounds)
    state.observation = observation

    skills, tool_hint = await ep.init(state.ctx(phase="init"))
    tools = tools_with_hint(harness.tools(), tool_hint, TOOL_NAMES)
    messages: list[Message] = [{"role": "system", "content": system_with_init(harness.system_prompt(), skills, "")}]
    state.see(observation, _available(world))
    keep_last = int(cfg.get("history_window", 0))
    text_only_message = str(cfg.get("text_only_message", "You must call a tool! NEVER respond with only text."))

    action: str | None = None
    call_id: str | None = None
    forced: str | None = None
    done = False
    for rnd in range(max_rounds):
        state.round = rnd
        available = state.available
        if rnd == 0:
            messages.append({"role": "user", "content": f"The initial observation:\n{observation}\n\nAvailable Actions:\n{available}"})
        elif action is None:
            messages.append({"role": "user", "content": f"Observation:\n{observation}\n\nAvailable Actions:\n{available}"})
        else:
            messages.append({"role": "tool", "tool_call_id": call_id, "content":
                             f"Action: {action}\n\nObservation:\n{observation}\n\nAvailable Actions:\n{available}"})
        for eff in await ep.hook("make_pre_hint", state.ctx(phase="pre_hint"), rnd):
            messages.append({"role": "user", "content": eff["message"]})
        request = ChatRequest(
            messages=window(messages, keep_last), tools=tools, sampling=sampling,
            seed=derive_seed(seed, result.task_identity, rnd), knowledge=task,
            meta={"benchmark": "webshop", "round": rnd, "episode_seed": seed},
        )
        reply = clean_reply(await submit(request))
        messages.append(reply)
        calls = tool_calls_of(reply)
        action = None
        if not calls:
            result.events.append({"kind": "text_only", "round": rnd})
            observation = text_only_message
            continue
        call = calls[0]
        call_id = call.id
        raw_value = first_argument(call)
        if raw_value is None:
            messages.append({"role": "user", "content": INVALID_CALL})
            result.events.append({"kind": "invalid_call", "round": rnd, "tool": call.name})
            continue
        final: str | None = f"search[{raw_value}]" if call.name == "search_action" else (
            f"click[{raw_value}]" if call.name == "click_action" else None)
        if forced is not None:
            final, forced = forced, None
            result.events.append({"kind": "effect", "round": rnd, "point": "on_post_step", "type": "force_action",
                                  "applied": True, "note": "forced action replaces this call's action"})
        blocked = False
        ctx = state.ctx(phase="before_action", tool=call.name, value=raw_value, final_action=final)
        for eff in await ep.hook("on_before_action", ctx, rnd):
            if eff["type"] == "block_and_prompt":
                messages.append({"role": "user", "content": eff["message"]})
                ep.note(rnd, "on_before_action", eff, True, "block: user message, no env step")
                blocked = True
                break
            final = wrap_action(eff["action"], call.name)
            if eff.get("message"):
                messages.append({"role": "user", "content": eff["message"]})
            ep.note(rnd, "on_before_action", eff, True, f"action replaced by {final}")
        action = final
        if blocked or final is None:
            continue
        step = world.step(ToolCall(call.id, "action", {"action": final}))
        result.events.append({"kind": "step", "round": rnd, "tool": call.name, "arguments": {"action": final},
                              "observation": step.observation, "valid": bool(step.info.get("valid"))})
        observation = step.observation
        done = bool(step.done)
        state.after_step(final, observation, step.info)
        for eff in await ep.hook("on_post_step", state.ctx(phase="post_step"), rnd):
            if eff["type"] == "inject_hint":
                messages.append({"role": "user", "content": eff["message"]})
                ep.note(rnd, "on_post_step", eff, True, "user message before the next observation")
            else:
                forced = wrap_action(eff["action"], "click_action")
                if eff.get("message"):
                    messages.append({"role": "user", "content": eff["message"]})
                ep.note(rnd, "on_post_step", eff, True, f"next action forced to {forced}")
        if done:
            break
    if not done:
        if call_id:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "Task limit reached."})
        else:
            messages.append({"role": "user", "content": "Task limit reached."})
    result.rounds = rnd + 1
    result.messages = messages
    result.status = COMPLETED if done else TASK_LIMIT_REACHED
    result.reward = float(world.score) if done else 0.0
    result.success = result.reward >= 1.0
    result.info = {"success": result.success, "score": result.reward, "noun_extractor": noun_extractor()[0],
                   "webshop_task_manifest": task.manifest()}
    return result
