"""Batch rollouts: every episode of a batch (and of several harness versions) runs concurrently.

Episodes are coroutines on one event loop owned by the evaluator (in a background thread, so
synchronous callers such as ``env.step`` work anywhere). Model requests from all running
episodes are coalesced by one ``RequestBatcher``; hook calls go to a shared sandbox pool.
Environment failures are retried with a fresh world, then reported as ``env_error`` —
never scored as a task failure.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any, Coroutine, Sequence, TypeVar

from harness_gym.errors import BackendError, SandboxError, WorldError, one_line
from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.evaluation.cache import RolloutCache, rollout_context
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatBackend, RequestBatcher, Sampling
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import ENV_ERROR, EpisodeResult
from harness_gym.sandbox.pool import SandboxPool

T = TypeVar("T")
RETRYABLE = (WorldError, BackendError, SandboxError, ConnectionError, TimeoutError)


class Evaluator:
    def __init__(
        self,
        spec: BenchmarkSpec,
        backend: ChatBackend,
        *,
        world_backend: str = "sqlite",
        world_label: str | None = None,
        target_name: str = "sim",
        sampling: Sampling = Sampling(),
        max_concurrency: int = 64,
        retries: int = 2,
        sandbox_workers: int = 2,
        sandbox_isolation: str | None = None,
        sandbox_timeout_s: float = 2.0,
        cache: RolloutCache | None = None,
        progress: bool = False,
    ) -> None:
        self.spec = spec
        self.progress = progress
        self.target_name = target_name
        self.backend = backend
        self.sampling = sampling
        self.retries = retries
        self.max_concurrency = max_concurrency
        self.cache = cache if cache is not None else RolloutCache()
        self.context = rollout_context(spec, target_name, world_label or world_backend, sampling, sandbox_timeout_s)
        self._make_world = spec.world_factory(world_backend)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="harness-gym-eval", daemon=True)
        self._thread.start()
        self.sandbox = SandboxPool(workers=sandbox_workers, call_timeout_s=sandbox_timeout_s, isolation=sandbox_isolation)
        self.batcher = RequestBatcher(backend, max_batch=max_concurrency)
        self.episodes_run = 0

    # --- sync facade ----------------------------------------------------------------
    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result()

    def evaluate(self, harness: Harness, tasks: Sequence[Any], seeds: Sequence[int]) -> list[EpisodeResult]:
        return self.evaluate_many([harness], tasks, seeds)[0]

    def evaluate_many(self, harnesses: Sequence[Harness], tasks: Sequence[Any], seeds: Sequence[int], *,
                      fresh: bool = False) -> list[list[EpisodeResult]]:
        """Evaluate several harness versions on the same tasks and seeds, all concurrently, cached;
        ``fresh``: a control run — every episode runs now, nothing is read from or written to the cache."""
        return self.run_sync(self.arun_many(harnesses, tasks, seeds, fresh=fresh))

    # --- async core -----------------------------------------------------------------
    async def arun_many(self, harnesses: Sequence[Harness], tasks: Sequence[Any], seeds: Sequence[int], *,
                        fresh: bool = False) -> list[list[EpisodeResult]]:
        keys, out, todo = self.cache.lookup(self.context, harnesses, tasks, seeds)
        if fresh:
            out, todo = {}, dict(zip(keys, harnesses))
        sem = asyncio.Semaphore(self.max_concurrency)
        bar = progress_bar(self.progress, len(todo) * len(tasks), f"{self.spec.name} on {self.target_name}")

        async def run(key: str, harness: Harness) -> tuple[str, list[EpisodeResult]]:
            results = list(await asyncio.gather(*(self._episode(harness, t, s, sem, bar) for t, s in zip(tasks, seeds))))
            if not fresh:  # cached as soon as this version's batch is done: a call stopped later still keeps it
                self.cache.put(key, results)
            return key, results

        try:
            out.update(await asyncio.gather(*(run(key, h) for key, h in todo.items())))
        finally:
            bar.close()
        return [out[k] for k in keys]

    async def _episode(self, harness: Harness, task: Any, seed: int, sem: asyncio.Semaphore, bar: Any) -> EpisodeResult:
        try:
            return await self._run_episode(harness, task, seed, sem)
        finally:
            bar.update(1)

    async def _run_episode(self, harness: Harness, task: Any, seed: int, sem: asyncio.Semaphore) -> EpisodeResult:
        async with sem, self.batcher.episode():
            hooks = HookRunner(harness, self.sandbox)
            error = ""
            for _attempt in range(self.retries + 1):
                world = None
                try:
                    world = self._make_world()  # a failed connect is an environment failure too
                    result = await self.spec.run_episode(task, world, harness, hooks, self.batcher.submit, seed=seed,
                                                      sampling=self.sampling, protocol=self.spec.protocol or None)  # none: the module's PROTOCOL
                    self.episodes_run += 1
                    return result
                except RETRYABLE as exc:
                    error = one_line(f"{type(exc).__name__}: {exc}")
                except Exception as exc:  # a bug or an unexpected failure: recorded, not retried
                    error = one_line(f"{type(exc).__name__}: {exc}")
                    break
                finally:
                    if world is not None:
                        world.close()
            return EpisodeResult(task.task_id, task.identity(), task.task_type, harness.version, seed,
                                 status=ENV_ERROR, error=error)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self.run_sync(self._aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    async def _aclose(self) -> None:
        await self.sandbox.close()
        await self.backend.close()
        # a factory object that holds resources (e.g. a database server it started) has close();
        # a World class used as its own factory does not count
        if not isinstance(self._make_world, type) and callable(getattr(self._make_world, "close", None)):
            self._make_world.close()  # type: ignore[attr-defined]


def progress_bar(show: bool, total: int, desc: str) -> Any:
    """A tqdm bar on stderr over ``total`` episodes (one evaluation call), or a silent one when ``show`` is
    false or there is nothing to run. Redrawn at most every 10 s, so a log file gets a line now and then."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="episode", disable=not show or total == 0, mininterval=10, dynamic_ncols=True)
