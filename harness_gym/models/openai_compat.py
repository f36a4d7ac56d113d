"""``openai:<base_url>#<model>`` — any OpenAI-compatible chat server (``vllm serve``, hosted APIs).

Requests follow the target protocol (Harness-R1 §4): structured ``tools``, ``tool_choice``
auto, the request's temperature/top_p/max_tokens and ``seed``, and ``chat_template_kwargs``
``{"enable_thinking": false}``. Calls run concurrently on an ``httpx.AsyncClient`` under a
concurrency limit, with timeouts and retries with exponential backoff on connection errors,
429 and 5xx. A server that answers tool calls as text would silently score zero, so the
backend probes the server once at start and fails fast with a one-line ``BackendError``.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
from dataclasses import dataclass
from typing import Any

from harness_gym.errors import BackendError, ConfigError, one_line
from harness_gym.models.base import ChatBackend, ChatRequest
from harness_gym.models.extras import require
from harness_gym.models.toolcalls import parse_tool_calls, reply_from_text
from harness_gym.types import Message

PROBE_TOOL = {"type": "function", "function": {
    "name": "ping", "description": "Answer the ping.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}
PROBE_MESSAGES = [{"role": "system", "content": "You are a tool-calling assistant. Always answer by calling a tool."},
                  {"role": "user", "content": 'Call the tool ping with text "ok".'}]
FIX = ("start vLLM with `vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes` "
       "(the parser that matches the model's template), or use a server that returns structured tool_calls")


@dataclass(frozen=True)
class OpenAIConfig:
    """Options of ``openai:<base_url>#<model>?key=value&…``; the key comes from ``api_key_env``."""

    base_url: str
    model: str
    max_tokens: int | None = None  # cap on Sampling.max_tokens
    concurrency: int = 64
    timeout: float = 300.0
    retries: int = 4
    backoff: float = 0.5
    probe: bool = True
    text_tool_calls: bool = False  # parse tool calls written as text (off: the protocol scores them zero)
    thinking_off: bool = True  # send chat_template_kwargs {"enable_thinking": false} (vLLM/SGLang)
    api_key_env: str = "OPENAI_API_KEY"

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"openai:{self.base_url}#{self.model}: expected a base URL like http://127.0.0.1:8000/v1")
        if not self.model:
            raise ConfigError(f"openai:{self.base_url}: name the model after '#', e.g. openai:{self.base_url}#Qwen/Qwen3-8B")
        if self.concurrency < 1 or self.retries < 0 or self.timeout <= 0:
            raise ConfigError("openai: concurrency must be >= 1, retries >= 0 and timeout > 0")


class OpenAIBackend(ChatBackend):
    name = "openai"
    memoize = True  # the batcher keeps its replies (models/base.py, Reply memo)

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self._httpx = require("httpx", "openai")
        key = os.environ.get(config.api_key_env, "")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.requests_sent = 0
        self.retried = 0
        if config.probe:
            self.probe()

    @property
    def url(self) -> str:
        return self.config.base_url.rstrip("/") + "/chat/completions"

    # --- the request ------------------------------------------------------------------
    def body(self, messages: list[Message], tools: list[dict[str, Any]], temperature: float, top_p: float,
             max_tokens: int, seed: int, tool_choice: Any = "auto") -> dict[str, Any]:
        cap = max_tokens if self.config.max_tokens is None else min(max_tokens, self.config.max_tokens)
        body: dict[str, Any] = {"model": self.config.model, "messages": [_wire(m) for m in messages],
                                "temperature": temperature, "top_p": top_p, "max_tokens": cap, "seed": seed & 0x7FFF_FFFF}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        if self.config.thinking_off:
            body["chat_template_kwargs"] = {"enable_thinking": False}
        return body

    def message_of(self, data: dict[str, Any], seed: int) -> Message:
        try:
            msg = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(one_line(f"openai:{self.config.base_url}: expected choices[0].message in the reply, got {str(data)[:200]}")) from exc
        out: Message = {"role": "assistant", "content": str(msg.get("content") or "")}
        calls = msg.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [{"id": str(c.get("id") or f"call_{seed % 10**8:08d}_{i}"), "type": "function",
                                  "function": {"name": str((c.get("function") or {}).get("name", "")),
                                               "arguments": _arg_text((c.get("function") or {}).get("arguments", ""))}}
                                 for i, c in enumerate(calls)]
        elif self.config.text_tool_calls:
            return reply_from_text(out["content"], seed)
        return out

    # --- async path -------------------------------------------------------------------
    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._loop = loop
            self._sem = asyncio.Semaphore(self.config.concurrency)
            self._client = self._httpx.AsyncClient(timeout=self._httpx.Timeout(self.config.timeout, connect=10.0),
                                                   headers=self._headers, limits=self._httpx.Limits(max_connections=self.config.concurrency))
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, r: ChatRequest) -> Message:
        body = self.body(r.messages, r.tools, r.sampling.temperature, r.sampling.top_p, r.sampling.max_tokens, r.seed)
        assert self._sem is not None
        async with self._sem:
            data = await self._post(body)
        return self.message_of(data, r.seed)

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        httpx = self._httpx
        last = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                self.retried += 1
                await asyncio.sleep(self.config.backoff * 2 ** (attempt - 1) * (1 + 0.1 * random.random()))
            try:
                self.requests_sent += 1
                resp = await self._client.post(self.url, json=body)
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                continue
            if resp.status_code != 200:
                raise BackendError(one_line(f"openai:{self.config.base_url}#{self.config.model}: HTTP {resp.status_code}: {resp.text[:300]}"))
            return dict(resp.json())
        raise BackendError(one_line(f"openai:{self.config.base_url}: no answer after {self.config.retries + 1} tries ({last})"))

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # --- probe --------------------------------------------------------------------------
    def probe(self) -> None:
        """Fail fast unless the server returns structured ``tool_calls`` (one short request, or two)."""
        httpx = self._httpx
        where = f"openai:{self.config.base_url}#{self.config.model}"
        with httpx.Client(timeout=httpx.Timeout(min(self.config.timeout, 120.0), connect=10.0), headers=self._headers) as client:
            def ask(tool_choice: Any) -> Message:
                body = self.body(PROBE_MESSAGES, [PROBE_TOOL], 0.0, 1.0, 64, 0, tool_choice)
                try:
                    resp = client.post(self.url, json=body)
                except httpx.HTTPError as exc:
                    raise BackendError(one_line(f"{where}: the server did not answer the probe ({type(exc).__name__}: {exc}); is it running?")) from exc
                if resp.status_code != 200:
                    raise BackendError(one_line(f"{where}: the probe with tools was refused (HTTP {resp.status_code}: {resp.text[:200]}); {FIX}"))
                try:
                    return dict(resp.json()["choices"][0]["message"])
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise BackendError(one_line(f"{where}: the probe reply is not a chat completion: {resp.text[:200]}")) from exc

            msg = ask("auto")
            if msg.get("tool_calls"):
                return
            _, text_calls = parse_tool_calls(str(msg.get("content") or ""))
            if text_calls and not self.config.text_tool_calls:
                raise BackendError(one_line(f"{where}: the server returned tool calls as text, not structured tool_calls "
                                            f"(the protocol scores them zero); {FIX}"))
            if text_calls:
                return
            # The model chose not to call: check that the server can return structured calls at all.
            forced = ask({"type": "function", "function": {"name": "ping"}})
            if not forced.get("tool_calls"):
                raise BackendError(one_line(f"{where}: the server returned no structured tool_calls, even with tool_choice "
                                            f"naming the tool; {FIX}"))


def _arg_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _wire(m: Message) -> Message:
    """A chat message as the API wants it (assistant tool-call arguments as JSON strings)."""
    out: Message = {"role": m["role"], "content": str(m.get("content") or "")}
    if m.get("tool_calls"):
        out["tool_calls"] = [{"id": c.get("id", ""), "type": "function",
                              "function": {"name": (c.get("function") or {}).get("name", ""),
                                           "arguments": _arg_text((c.get("function") or {}).get("arguments", ""))}}
                             for c in m["tool_calls"]]
    if m["role"] == "tool":
        out["tool_call_id"] = m.get("tool_call_id", "")
    return out
