"""Building what the model sees: system prompt with hook skills, history window, seeds."""
from __future__ import annotations

import copy
import hashlib
from typing import Any, Iterable

from harness_gym.types import Message

SKILLS_HEADER = "Some tips that may help for this task:"
TOOL_HINT_HEADER = "Additional reusable tool-use hint from the harness:"


def system_with_init(system_prompt: str, skills: list[str], tool_hint: str) -> str:
    """Skills go under Harness-R1's tips header as ``- text`` lines; the tool hint after it."""
    text = system_prompt.rstrip()
    if skills:
        text += "\n\n" + SKILLS_HEADER + "\n" + "\n".join(f"- {s}" for s in skills)
    if tool_hint:
        text += "\n\n" + TOOL_HINT_HEADER + "\n" + tool_hint
    return text


def tools_with_hint(tools: list[dict[str, Any]], hint: str, names: Iterable[str]) -> list[dict[str, Any]]:
    """Append an ``on_init`` tool hint to the descriptions of the named tools (WebShop, ALFWorld)."""
    if not hint:
        return tools
    wanted = set(names)
    out = copy.deepcopy(tools)
    for tool in out:
        fn = tool.get("function") or {}
        if fn.get("name") in wanted:
            fn["description"] = (str(fn.get("description", "")).rstrip() + " " + hint).strip()
    return out


def window(messages: list[Message], keep_last: int) -> list[Message]:
    """Keep the system and first user message plus the last ``keep_last`` messages (0 = all).

    The cut never separates tool results from the assistant message that called them, and
    a notice says how many messages were omitted (AgentBench's ``[NOTICE]``).
    """
    head, tail = messages[:2], messages[2:]
    if keep_last <= 0 or len(tail) <= keep_last:
        return list(messages)
    start = len(tail) - keep_last
    while start < len(tail) and tail[start].get("role") == "tool":
        start += 1
    notice = {"role": "user", "content": f"[NOTICE] {start} messages are omitted."}
    return head + [notice] + tail[start:]


def derive_seed(seed: int, task_identity: str, round_index: int) -> int:
    """Per (task, episode seed, round) sampling seed: common random numbers across harness versions."""
    h = hashlib.sha256(f"{seed}:{task_identity}:{round_index}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1
