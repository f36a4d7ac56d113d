"""Tool calls written as text, target strings, and the protocol for replies without a tool call.

No model and no extra needed: these run everywhere.
"""
from __future__ import annotations

import asyncio
import json

import pytest

from harness_gym.errors import ConfigError
from harness_gym.models.base import ChatBackend, ChatRequest, RequestBatcher, Sampling
from harness_gym.models.factory import make_backend, split_options
from harness_gym.models.hf import HFConfig
from harness_gym.models.openai_compat import OpenAIConfig
from harness_gym.models.toolcalls import (
    parse_tool_calls,
    reply_from_text,
    template_messages,
)
from harness_gym.types import Message, tool_calls_of


@pytest.mark.parametrize(
    "text, expected",
    [
        ('<tool_call>\n{"name": "execute_sql", "arguments": {"query": "SELECT 1"}}\n</tool_call>',
         [("execute_sql", {"query": "SELECT 1"})]),
        # two blocks, the second unterminated (cut at the token limit)
        ('I will look.<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": 1}}',
         [("a", {}), ("b", {"x": 1})]),
        # bare JSON, arguments as a JSON string, "parameters" alias, a list of calls
        ('Sure: {"name": "commit_final_answer", "arguments": "{\\"answers\\": [\\"3\\"]}"} done',
         [("commit_final_answer", {"answers": ["3"]})]),
        ('{"name": "execute_sql", "parameters": {"query": "SELECT 2"}}', [("execute_sql", {"query": "SELECT 2"})]),
        ('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]', [("a", {}), ("b", {})]),
        ('{"function": {"name": "a", "arguments": "{}"}}', [("a", {})]),
    ],
)
def test_parses_tool_calls_written_as_text(text: str, expected: list) -> None:
    _content, calls = parse_tool_calls(text)
    assert calls == expected


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '<tool_call>{"name": "execute_sql", "arguments": {"query": "SELECT 1"</tool_call>',  # broken JSON
        '<tool_call>{"arguments": {"query": "x"}}</tool_call>',  # no name
        '{"name": "", "arguments": {}}',
        '{"name": "a", "arguments": [1, 2]}',  # arguments not an object
        '{"name": "a", "arguments": "not json"}',
        '{"query": "SELECT 1"}',  # JSON, but not a call
        'It returns {"name": "Tom Murphy", "laps": "1"}.',  # data with a name key, no arguments
        "",
    ],
)
def test_unparseable_replies_are_text_only_turns(text: str) -> None:
    msg = reply_from_text(text, seed=5)
    assert "tool_calls" not in msg and tool_calls_of(msg) == []
    assert msg["role"] == "assistant" and msg["content"] == text.strip()


def test_reply_is_structured_and_deterministic() -> None:
    text = 'Let me check.\n<tool_call>\n{"name": "execute_sql", "arguments": {"query": "SELECT 1"}}\n</tool_call>'
    a, b = reply_from_text(text, seed=123456789), reply_from_text(text, seed=123456789)
    assert a == b and a["content"] == "Let me check."
    (call,) = tool_calls_of(a)
    assert (call.name, call.arguments, call.id) == ("execute_sql", {"query": "SELECT 1"}, "call_23456789_0")
    assert json.loads(a["tool_calls"][0]["function"]["arguments"]) == {"query": "SELECT 1"}


def test_template_messages_turn_argument_strings_into_dicts() -> None:
    msgs = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"}]
    out = template_messages(msgs)
    assert out[0]["tool_calls"][0]["function"]["arguments"] == {"a": 1} and out[0]["content"] == ""
    assert out[1] == {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "f"}


def test_target_strings_parse_options_and_reject_bad_ones() -> None:
    assert split_options("/m/x?max_tokens=64&dtype=bfloat16", HFConfig) == ("/m/x", {"max_tokens": 64, "dtype": "bfloat16"})
    assert split_options("model?probe=0&timeout=2.5", OpenAIConfig) == ("model", {"probe": False, "timeout": 2.5})
    with pytest.raises(ConfigError, match="unknown.*expected one of"):
        split_options("/m/x?max_token=64", HFConfig)
    with pytest.raises(ConfigError, match="expected a value of type"):
        split_options("/m/x?max_tokens=many", HFConfig)
    with pytest.raises(ConfigError, match="unknown target"):
        make_backend("gpt4")
    with pytest.raises(ConfigError, match="#<model>"):
        make_backend("openai:http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="model folder"):
        make_backend("hf:")


def test_openai_probe_fails_fast_with_one_line_when_nothing_listens() -> None:
    from harness_gym.errors import BackendError
    from harness_gym.models.testing import need

    need("httpx")
    with pytest.raises(BackendError) as info:
        make_backend("openai:http://127.0.0.1:9/v1#m?timeout=2")
    assert "\n" not in str(info.value) and "is it running" in str(info.value)


class _Counting(ChatBackend):
    def __init__(self) -> None:
        self.sizes: list[int] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        self.sizes.append(len(requests))
        await asyncio.sleep(0.01)
        return [reply_from_text("no call", r.seed) for r in requests]


def test_batcher_coalesces_concurrent_requests() -> None:
    backend = _Counting()

    async def main() -> None:
        batcher = RequestBatcher(backend, max_batch=16)
        req = ChatRequest([{"role": "user", "content": "hi"}], [], Sampling(), 0)
        await asyncio.gather(*(batcher.submit(req) for _ in range(40)))

    asyncio.run(main())
    assert backend.sizes == [16, 16, 8]
