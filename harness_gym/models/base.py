"""The chat-model backend contract and global request batching.

Every target — simulated or real — answers OpenAI-style conversations with structured
tool calls through ``ChatBackend.generate``. Episodes never call a backend directly: they
``submit`` one request to a ``RequestBatcher``, which coalesces every request pending
across concurrent episodes (and across candidate patches) into one ``generate`` call.
"""
from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from harness_gym.types import Message


@dataclass(frozen=True)
class Sampling:
    """Target sampling settings (Harness-R1 evaluates at temperature 0)."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 4096


@dataclass
class ChatRequest:
    """One model call of one episode.

    ``seed`` is derived from (task, episode seed, round) so baseline and patched runs draw
    the same random numbers (common random numbers). ``knowledge`` is privileged task
    data for simulated targets only; real backends ignore it and hooks never see it.
    """

    messages: list[Message]
    tools: list[dict[str, Any]]
    sampling: Sampling
    seed: int
    knowledge: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


class ChatBackend(ABC):
    """A chat model that answers a batch of conversations with assistant messages."""

    name: str = "backend"

    @abstractmethod
    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        """Return one assistant message (with ``tool_calls`` when the model calls a tool) per request."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Release model resources."""


SPLIT_WITHIN_S = 5.0  # a batch whose generate call failed faster than this is split and retried in halves


class RequestBatcher:
    """Coalesces concurrent ``submit`` calls into batched ``generate`` calls.

    Requests that arrive while a batch is being generated wait for the next batch, so a
    backend always sees every request that is ready, up to ``max_batch``.
    """

    def __init__(self, backend: ChatBackend, max_batch: int = 64) -> None:
        self.backend = backend
        self.max_batch = max_batch
        self._pending: list[tuple[ChatRequest, asyncio.Future[Message]]] = []
        self._worker: asyncio.Task[None] | None = None
        self.batches = 0
        self.requests = 0

    async def submit(self, request: ChatRequest) -> Message:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Message] = loop.create_future()
        self._pending.append((request, fut))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await fut

    async def _drain(self) -> None:
        while self._pending:
            # Let every runnable episode reach its next model call before batching.
            await asyncio.sleep(0)
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.batches += 1
            self.requests += len(batch)
            await self._generate(batch)

    async def _generate(self, batch: list[tuple[ChatRequest, asyncio.Future[Message]]]) -> None:
        """One ``generate`` call for ``batch``; if it fails, its halves are tried apart, so a request
        that makes the backend fail (a malformed tool list, text the server refuses) fails alone and
        never takes the other episodes of the batch — another harness's, say — down with it. A call
        that failed slowly (a timeout: the server is gone) is not split, so a dead server costs one
        wait per batch, not one per request."""
        started = time.monotonic()
        try:
            replies = await self.backend.generate([r for r, _ in batch])
            if len(replies) != len(batch):
                raise RuntimeError(f"backend {self.backend.name} returned {len(replies)} replies for {len(batch)} requests")
        except asyncio.CancelledError as exc:
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            raise
        except BaseException as exc:  # noqa: BLE001 - delivered to the waiting episodes
            if len(batch) > 1 and time.monotonic() - started < SPLIT_WITHIN_S:
                half = len(batch) // 2
                self.batches += 2
                await self._generate(batch[:half])
                await self._generate(batch[half:])
                return
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), reply in zip(batch, replies):
            if not fut.done():
                fut.set_result(reply)
