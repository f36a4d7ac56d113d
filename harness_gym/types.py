"""Plain data shared by every layer: chat messages, tool calls, step results.

Messages follow the OpenAI chat format (dicts with ``role``/``content``/``tool_calls``)
so a real model served by any OpenAI-compatible server is a drop-in target.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One structured tool call from an assistant message."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""

    @classmethod
    def from_message_call(cls, call: dict[str, Any]) -> "ToolCall":
        fn = call.get("function") or {}
        raw = fn.get("arguments", "")
        if isinstance(raw, dict):
            args, raw_text = raw, json.dumps(raw, ensure_ascii=False)
        else:
            raw_text = str(raw)
            try:
                parsed = json.loads(raw_text) if raw_text.strip() else {}
            except json.JSONDecodeError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else {"__unparsed__": raw_text}
        return cls(id=str(call.get("id", "")), name=str(fn.get("name", "")), arguments=args, raw_arguments=raw_text)

    def to_message_call(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


def assistant_message(content: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
    msg: Message = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = [c.to_message_call() for c in tool_calls]
    return msg


def tool_calls_of(message: Message) -> list[ToolCall]:
    return [ToolCall.from_message_call(c) for c in message.get("tool_calls") or []]


@dataclass
class StepResult:
    """What a world returns for one tool call."""

    observation: str
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)
