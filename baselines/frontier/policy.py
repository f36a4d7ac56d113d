"""``frontier:<target>``: prompt a model (``openai:…``, ``vllm:…``, ``hf:…``) as the harness engineer.

K samples per packet, each with its own seed (derived from ``FrontierConfig.seed``, the packet
text and the sample index, so reruns are reproducible). Where the backend can continue a
message (``hf``/``vllm``: they expose ``formatter`` and ``generate_ids``) the assistant turn is
prefilled with ``<think>\\n`` (Harness-R1's ``prefill_think_patch``); elsewhere the system
prompt asks for both blocks. Replies are returned as text: an unparseable one is scored as an
invalid patch by the env.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from baselines.base import Policy, PolicyInput
from baselines.frontier.prompt import PREFILL, engineer_messages
from harness_gym.errors import ConfigError
from harness_gym.models.base import ChatBackend, ChatRequest, Sampling
from harness_gym.types import Message


@dataclass(frozen=True)
class FrontierConfig:
    """Settings of the frontier editor (Harness-R1 §5 sampling by default; temperature 0 = greedy eval)."""

    target: str
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 12288
    seed: int = 0
    prefill: str = "auto"  # "auto" | "on" | "off"
    prompt_prefix: str | None = None  # replaces the static text before the marker (see prompt.py)

    def __post_init__(self) -> None:
        if not self.target:
            raise ConfigError("frontier: give a model target, e.g. frontier:openai:http://host:8000/v1#model or frontier:hf:/models/x")
        if self.prefill not in ("auto", "on", "off"):
            raise ConfigError(f"frontier: prefill={self.prefill!r}: expected 'auto', 'on' or 'off'")
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.max_tokens < 1:
            raise ConfigError(f"frontier: temperature={self.temperature}, top_p={self.top_p}, max_tokens={self.max_tokens}: "
                              "expected temperature >= 0, 0 < top_p <= 1, max_tokens >= 1")


def can_prefill(backend: ChatBackend) -> bool:
    """True when the backend renders prompts itself and can generate from raw ids (hf, vllm)."""
    return hasattr(backend, "formatter") and callable(getattr(backend, "generate_ids", None))


class FrontierPolicy(Policy):
    name = "frontier"

    def __init__(self, path: str = "", backend: ChatBackend | None = None, **kwargs: Any) -> None:
        self.config = FrontierConfig(target=path or kwargs.pop("target", ""), **kwargs)
        if backend is None:
            from harness_gym.models.factory import make_backend

            backend = make_backend(self.config.target)
        self.backend = backend
        mode = self.config.prefill
        self.prefill = can_prefill(backend) if mode == "auto" else mode == "on"
        if self.prefill and not can_prefill(backend):
            raise ConfigError(f"frontier: prefill='on' but backend {backend.name!r} cannot continue a message; use prefill='auto'")

    def requests(self, packets: Sequence[PolicyInput], k: int) -> list[ChatRequest]:
        cfg = self.config
        sampling = Sampling(temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens)
        out = []
        for p in packets:
            messages = engineer_messages(p.text, prefill=self.prefill, prefix=cfg.prompt_prefix)
            for j in range(k):
                out.append(ChatRequest(messages=messages, tools=[], sampling=sampling, seed=sample_seed(cfg.seed, p.text, j),
                                       meta={"sample": j}))
        return out

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        if k < 1:
            raise ConfigError(f"frontier: k={k}: expected >= 1")
        reqs = self.requests(packets, k)
        replies = _run(self._generate(reqs))
        texts = [reply_text(m) for m in replies]
        if self.prefill:
            texts = [PREFILL + t for t in texts]
        return [texts[i * k : (i + 1) * k] for i in range(len(packets))]

    async def _generate(self, reqs: list[ChatRequest]) -> list[Message]:
        if not self.prefill:
            return await self.backend.generate(reqs)
        fmt = self.backend.formatter  # type: ignore[attr-defined]
        extra = list(fmt.tokenizer(PREFILL, add_special_tokens=False)["input_ids"])
        prompts = [fmt.prompt_ids(r.messages, []) + extra for r in reqs]
        return await asyncio.to_thread(self.backend.generate_ids, prompts, reqs)  # type: ignore[attr-defined]

    def close(self) -> None:
        _run(self.backend.close())


def sample_seed(base: int, text: str, index: int) -> int:
    h = hashlib.sha256(f"{base}\x00{index}\x00{text}".encode()).hexdigest()
    return int(h[:8], 16)


def reply_text(message: Message) -> str:
    """The assistant reply as text; tool calls a text parser lifted out are written back."""
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        text += "\n" + json.dumps({"name": fn.get("name"), "arguments": fn.get("arguments")}, ensure_ascii=False)
    return text


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    raise RuntimeError("FrontierPolicy.propose is synchronous: call it outside a running event loop (or await _generate)")
