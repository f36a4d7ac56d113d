"""Pieces every target's episode loop shares: hook calls with the episode's notebook,
recorded effects, and chat-message helpers."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from harness_gym.models.base import ChatRequest
from harness_gym.runtime.hooks import HookBudget, HookRunner
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.types import Message, ToolCall

Submit = Callable[[ChatRequest], Awaitable[Message]]


class EpisodeHooks:
    """Runs hooks for one episode: one live ``nb`` shared by all hooks, every call recorded."""

    def __init__(self, result: EpisodeResult, hooks: HookRunner | None) -> None:
        self.result = result
        self.hooks = hooks if hooks is not None and hooks.active else None
        self.nb: dict[str, Any] = {}
        self.budget = HookBudget.for_sandbox(getattr(self.hooks, "sandbox", None)) if self.hooks is not None else None

    async def hook(self, point: str, ctx: dict[str, Any], round_index: int) -> list[dict[str, Any]]:
        if self.hooks is None:
            return []
        run = await self.hooks.run(point, ctx, self.nb, self.budget)
        self.nb = run.nb
        for ev in run.events:
            self.result.events.append({**ev, "round": round_index})
        return run.effects

    async def init(self, ctx: dict[str, Any]) -> tuple[list[str], str]:
        """Run ``on_init``: the skills (first 5) and the joined tool hint of every entry."""
        skills: list[str] = []
        hints: list[str] = []
        for eff in await self.hook("on_init", ctx, 0):
            skills.extend(eff.get("skills", []))
            hints.append(eff.get("tool_hint", ""))
        return skills[:5], " ".join(h for h in hints if h)

    def note(self, round_index: int, point: str, effect: dict[str, Any], applied: bool, note: str) -> None:
        self.result.events.append(
            {"kind": "effect", "round": round_index, "point": point, "type": effect.get("type"), "applied": applied, "note": note}
        )


def clean_reply(reply: Message) -> Message:
    """Keep only the fields a chat history needs (role, content, tool_calls)."""
    msg: Message = {"role": "assistant", "content": str(reply.get("content") or "")}
    if reply.get("tool_calls"):
        msg["tool_calls"] = reply["tool_calls"]
    return msg


def tool_message(call: ToolCall, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}
