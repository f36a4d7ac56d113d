"""Text helpers every packet builder shares: sanitizing, message parts, head+tail cuts, the trace section."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from harness_gym.packets.model import clean_text
from harness_gym.types import Message

_PRODUCT_ID = re.compile(r"\b[bB]0[0-9a-zA-Z]{8}\b")
_PATH = re.compile(r"(?<![\w.~])/(?:mnt|root|home|tmp)(?:/[^\s'\"`,;)\]}>]*)?(?![\w-])")


def sanitize(text: str) -> str:
    """Mask product ids and local paths (Harness-R1 §1) and drop control characters."""
    text = _PRODUCT_ID.sub("[PRODUCT_ID]", clean_text(text))
    return _PATH.sub("[PATH]", text)


def message_text(message: Message) -> str:
    """A message's content as text (OpenAI content parts joined)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):  # OpenAI content parts
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return " ".join(str(p) for p in parts)
    return str(content)


def call_function(call: Any) -> dict[str, Any]:
    """The ``function`` dict of a tool call ({} when malformed)."""
    fn = call.get("function") if isinstance(call, dict) else None
    return fn if isinstance(fn, dict) else {}


def head_tail(text: str, cap: int, middle: str) -> str:
    """Whitespace-collapsed, sanitized text cut to its head and tail halves around ``middle``."""
    flat = sanitize(" ".join(str(text).split()))
    if len(flat) <= cap:
        return flat
    half = (cap - len(middle)) // 2
    return flat[:half].rstrip() + middle + flat[-half:].lstrip()


NO_TRACES = "(no failure traces: every completed task passed)"


def trace_section(traces: Sequence[Any], render: Callable[[Any], str]) -> list[str]:
    """The lines under ``## Failure Traces``: each rendered trace after a blank line, or the all-passed line."""
    if not traces:
        return ["", NO_TRACES]
    return [line for trace in traces for line in ("", render(trace))]


def with_size_footer(text: str, traces: int) -> str:
    """``text`` plus the footer WebShop and ALFWorld packets end with (approximate tokens, chars / 4)."""
    return text + f"\n\n---\nIncluded traces: {traces}; approx tokens: {(len(text) + 60) // 4}"
