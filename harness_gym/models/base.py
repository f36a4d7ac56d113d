"""The chat-model backend contract and global request batching.

Every target — simulated or real — answers OpenAI-style conversations with structured
tool calls through ``ChatBackend.generate``. Episodes never call a backend directly: they
``submit`` one request to a ``RequestBatcher``, which coalesces every request pending
across concurrent episodes (and across candidate patches) into one ``generate`` call.

**Reply memo.** A real target at a fixed sampling seed is meant to be a function of its input,
and Δ_B assumes it: a patched episode whose conversation still equals the baseline's must get the
baseline's reply. Batched engines do not guarantee that — vLLM's bfloat16 kernels gave a
different reply to 48 of 477 identical SmolLM2 requests when the baseline ran in a batch of 10
and the patched episodes in batches of ~300 (docs/agreement_smol.md, stop 31), so a ``noop``
patch "fixed" and "broke" tasks. For backends that set ``memoize`` (``hf``, ``vllm``,
``openai``; not the sim, which is a function of its input by construction) the batcher keys each
request by everything a backend sees — messages, tools, sampling and seed — and serves a request
it has answered before, or one already waiting, from that first answer (``ReplyMemo``: least
recently used dropped beyond ``max_entries``). Within one evaluator, the same input always gets
the same reply, and the requests of K patches that have not yet diverged from the baseline cost
one model call, not K. Not covered: across evaluators (a rerun; each Ray worker keeps its own
memo, and a baseline and a patch may run on different workers) and a baseline whose episodes
came from the rollout cache (a ``cache_dir`` written by another process, or kept longer than its
replies) — there replies can still differ as the engine differs; leaderboard verification's
``tolerance`` is for that.
"""
from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

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
    memoize: bool = False  # the batcher serves repeated requests from a ReplyMemo (module doc)

    @abstractmethod
    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        """Return one assistant message (with ``tool_calls`` when the model calls a tool) per request."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Release model resources."""


def request_key(request: ChatRequest) -> str:
    """sha256 of everything a real backend answers from: messages, tools, sampling and seed
    (``knowledge`` and ``meta`` are the sim's and the runtime's, never sent to a model)."""
    s = request.sampling
    sampling = dataclasses.asdict(s) if dataclasses.is_dataclass(s) else s  # every field: one added later is keyed too
    body = json.dumps([request.messages, request.tools, sampling, int(request.seed)],
                      sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class ReplyMemo:
    """Replies by ``request_key``, least recently used dropped beyond ``max_entries`` (a reply is
    ~1.6 KB with its key: the default, ~80 MB, holds the requests of ten 30-patch WebShop steps)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries={max_entries!r}: expected an integer >= 1")
        self.max_entries = max_entries
        self._replies: OrderedDict[str, Message] = OrderedDict()

    def get(self, key: str) -> Message | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def put(self, key: str, reply: Message) -> None:
        self._replies[key] = reply
        self._replies.move_to_end(key)
        while len(self._replies) > self.max_entries:
            self._replies.popitem(last=False)

    def size(self) -> int:
        return len(self._replies)


SETTLE_HOPS = 4  # event-loop passes with no new request before a batch is cut (RequestBatcher._gather)
SETTLE_WAIT_S = 0.05  # at most this long, a batch waits for running episodes still in a hook or a world step
SETTLE_SHARE = 0.25  # ... and at most this share of the last generate call's time (a fast target barely waits)
SPLIT_WITHIN_S = 5.0  # a batch whose generate call failed faster than this is split and retried in halves


class RequestBatcher:
    """Coalesces concurrent ``submit`` calls into batched ``generate`` calls.

    Requests that arrive while a batch is being generated wait for the next batch, so a
    backend always sees every request that is ready, up to ``max_batch``; a batch is cut once
    every episode running under ``episode()`` has asked or ended (``SETTLE_WAIT_S`` at most,
    ``_gather``), so the episodes of every harness version in an evaluation share it. With ``memo`` (by
    default, the backend's ``memoize``) a request answered before, or already waiting, is served
    from that answer and never reaches the backend (module doc, Reply memo).
    """

    def __init__(self, backend: ChatBackend, max_batch: int = 64, memo: ReplyMemo | bool | None = None) -> None:
        self.backend = backend
        self.max_batch = max_batch
        if memo is None:
            memo = backend.memoize
        self.memo: ReplyMemo | None = ReplyMemo() if memo is True else (memo or None)
        self._pending: list[tuple[ChatRequest, asyncio.Future[Message]]] = []
        self._waiting: dict[str, asyncio.Future[Message]] = {}  # memo key → the future of its first request
        self._worker: asyncio.Task[None] | None = None
        self._active = 0  # episodes inside ``episode()``
        self._asking = 0  # callers inside ``submit`` (waiting on a reply, their own or a duplicate's)
        self._changed: asyncio.Event | None = None  # set when a caller asks or an episode ends
        self._last_generate_s = float("inf")  # how long the last generate call took (none yet: assume slow)
        self.batches = 0
        self.requests = 0
        self.memo_hits = 0  # requests served by the memo (counted in neither batches nor requests)

    @contextlib.asynccontextmanager
    async def episode(self) -> AsyncIterator[None]:
        """Count one running episode while inside: a batch waits (``SETTLE_WAIT_S`` at most) until every
        counted episode has asked for its next reply or ended, so episodes whose hooks run in a sandbox
        (pipe I/O the event loop waits on) still share a batch with those that asked first."""
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1
            self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def submit(self, request: ChatRequest) -> Message:
        self._asking += 1
        self._notify()
        try:
            return await self._submit(request)
        finally:
            self._asking -= 1

    async def _submit(self, request: ChatRequest) -> Message:
        key = request_key(request) if self.memo is not None else None
        if key is not None:
            known = self.memo.get(key)
            if known is None and key in self._waiting:
                known = await asyncio.shield(self._waiting[key])
            if known is not None:
                self.memo_hits += 1
                return copy.deepcopy(known)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Message] = loop.create_future()
        if key is not None:
            self._waiting[key] = fut
            fut.add_done_callback(lambda f, key=key: self._settled(key, f))
        self._pending.append((request, fut))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        if key is None:
            return await fut
        # shielded: cancelling this caller must not cancel the reply other callers wait on
        return copy.deepcopy(await asyncio.shield(fut))

    def _settled(self, key: str, fut: asyncio.Future[Message]) -> None:
        """A memoized request's reply is kept (a failure is not: the next identical request tries again)."""
        if self._waiting.get(key) is fut:
            del self._waiting[key]
        if self.memo is not None and not fut.cancelled() and fut.exception() is None:
            self.memo.put(key, fut.result())  # no caller holds this object: each gets its own copy

    async def _drain(self) -> None:
        while self._pending:
            await self._gather()
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.batches += 1
            self.requests += len(batch)
            await self._generate(batch)

    async def _gather(self) -> None:
        """Wait until every running episode has reached its next model call, or the batch is full.

        First yield until ``SETTLE_HOPS`` event-loop passes in a row bring no new request: a reply
        reaches its episode through a chain of callbacks (a shielded future, a waiting duplicate), so
        episodes woken by the same batch arrive some passes apart. Then, while episodes counted by
        ``episode()`` have not all asked (one is in a hook's sandbox call or a world step, which no
        number of passes waits out), wait for them: ``SETTLE_WAIT_S`` at most, and at most
        ``SETTLE_SHARE`` of the last generate call's time, so a target that answers in milliseconds
        (the sim) is not slowed to the pace of its slowest hook. A batch cut too early splits the
        harness versions that should share it (and with them the reply memo's reuse)."""
        quiet, seen = 0, len(self._pending)
        while quiet < SETTLE_HOPS and len(self._pending) < self.max_batch:
            await asyncio.sleep(0)
            quiet, seen = (quiet + 1, seen) if len(self._pending) == seen else (0, len(self._pending))
        self._changed = asyncio.Event()  # made here, in the running loop (the batcher may outlive a loop)
        deadline = time.monotonic() + min(SETTLE_WAIT_S, SETTLE_SHARE * self._last_generate_s)
        while self._asking < self._active and len(self._pending) < self.max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
                break

    async def _generate(self, batch: list[tuple[ChatRequest, asyncio.Future[Message]]]) -> None:
        """One ``generate`` call for ``batch``; if it fails, its halves are tried apart, so a request
        that makes the backend fail (a malformed tool list, text the server refuses) fails alone and
        never takes the other episodes of the batch — another harness's, say — down with it. A call
        that failed slowly (a timeout: the server is gone) is not split, so a dead server costs one
        wait per batch, not one per request."""
        started = time.monotonic()
        try:
            replies = await self.backend.generate([r for r, _ in batch])
            self._last_generate_s = time.monotonic() - started
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
