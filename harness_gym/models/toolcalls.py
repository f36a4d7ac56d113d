"""Tool calls written as text by open models → structured ``tool_calls``; tool-aware chat templates.

Small open models emit tool calls as text in their chat template's format. We accept:

- Hermes/Qwen style ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (one or more;
  an unterminated last block at the token limit is still parsed);
- bare JSON objects ``{"name": …, "arguments": …}`` anywhere in the reply (``parameters``
  is accepted for ``arguments``; arguments may be a JSON string);
- a JSON list of such objects.

What cannot be parsed stays text: a reply without a parseable tool call is a text-only
turn, which the runtime answers with the protocol's "You must call a tool!" message.

``TOOL_CHAT_TEMPLATE`` is a ChatML template with Hermes-style tools (the format of Qwen2.5),
used for models whose own template ignores ``tools`` (e.g. SmolLM2, whose template is plain
ChatML). Without tools it renders exactly as plain ChatML.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from harness_gym.types import Message, ToolCall

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_DECODER = json.JSONDecoder()

TOOL_CHAT_TEMPLATE = r"""{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\n\n' }}{%- endif %}
{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\n<tool_response>\n' + (message.content or '') + '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""


def template_supports_tools(template: str | None) -> bool:
    """Whether a chat template renders ``tools`` (a template that never reads it drops them)."""
    return bool(template) and "tools" in str(template)


def template_messages(messages: Iterable[Message]) -> list[Message]:
    """OpenAI messages → the form HF chat templates expect (tool-call arguments as dicts)."""
    out: list[Message] = []
    for m in messages:
        msg: Message = {"role": m["role"], "content": str(m.get("content") or "")}
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function") or {}
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        args = {"__unparsed__": args}
                calls.append({"id": c.get("id", ""), "type": "function",
                              "function": {"name": fn.get("name", ""), "arguments": args}})
            msg["tool_calls"] = calls
        if m["role"] == "tool":
            msg["tool_call_id"] = m.get("tool_call_id", "")
            if m.get("name"):
                msg["name"] = m["name"]
        out.append(msg)
    return out


def _as_call(obj: Any, bare: bool = False) -> tuple[str, dict[str, Any]] | None:
    """``{"name": str, "arguments": dict|str}`` → (name, arguments); anything else → None.

    Bare JSON (outside ``<tool_call>``) must carry ``arguments``/``parameters``: a model that
    writes ``{"name": "Tom", "age": 3}`` as data has not called a tool named Tom.
    """
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape written as text
        obj = obj["function"]
    if bare and "arguments" not in obj and "parameters" not in obj:
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return name.strip(), args


def _json_values(text: str) -> Iterable[tuple[int, int, Any]]:
    """Every top-level JSON object or list in ``text``: (start, end, value)."""
    i = 0
    while True:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        yield start, end, value
        i = end


def parse_tool_calls(text: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Split a completion into (remaining text, [(tool name, arguments)…])."""
    calls: list[tuple[str, dict[str, Any]]] = []
    if "<tool_call>" in text:
        for block in _BLOCK.findall(text):
            for _s, _e, value in _json_values(block):
                for item in value if isinstance(value, list) else [value]:
                    call = _as_call(item)
                    if call:
                        calls.append(call)
                break  # one JSON value per block
        content = _BLOCK.sub("", text).strip()
        return (content if calls else text.strip()), calls
    spans: list[tuple[int, int]] = []
    for start, end, value in _json_values(text):
        found = [c for c in (_as_call(v, bare=True) for v in (value if isinstance(value, list) else [value])) if c]
        if found:
            calls.extend(found)
            spans.append((start, end))
    content = text
    for start, end in reversed(spans):
        content = content[:start] + content[end:]
    return content.strip(), calls


def reply_from_text(text: str, seed: int) -> Message:
    """An assistant message with structured ``tool_calls`` parsed from a completion's text.

    Call ids are derived from the request's seed, so a rerun produces byte-identical messages.
    """
    content, calls = parse_tool_calls(text)
    msg: Message = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            ToolCall(id=f"call_{seed % 10**8:08d}_{i}", name=name, arguments=args).to_message_call()
            for i, (name, args) in enumerate(calls)
        ]
    return msg
