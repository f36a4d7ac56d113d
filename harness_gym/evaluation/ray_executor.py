"""``RayEvaluator``: the ``Evaluator`` interface with episodes spread over a Ray cluster.

Each Ray task runs a chunk of whole episodes (one harness version, consecutive tasks of the
batch) in a worker process, through an ordinary local ``Evaluator`` that the worker process
builds once and reuses: its own chat backend, sandbox pool and worlds, the same retry loop,
so a ``WorldError`` comes back as an ``env_error`` result exactly as it does locally. The
driver keeps the ``RolloutCache`` (same keys as the local executor), submits at most
``max_in_flight`` tasks at a time (backpressure), and reassembles results in task order.
A worker process that dies (killed, OOM, node lost) is retried by Ray up to
``max_retries`` times; a chunk that still fails becomes ``env_error`` results, never a
scored failure. Results equal the local executor's for the same tasks and seeds because
each episode depends only on (harness, task, seed).

Workers build their backend from the target string (``make_backend(target_name)``), so an
``openai:http://host:8000/v1#model`` target makes every worker a client of the same server
pool; an in-process model (``hf:``/``vllm:``) is loaded once per worker process.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import ConfigError, one_line
from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.evaluation.cache import RolloutCache, rollout_context
from harness_gym.evaluation.evaluator import progress_bar
from harness_gym.harness.files import Harness
from harness_gym.models.base import Sampling
from harness_gym.runtime.trajectory import ENV_ERROR, EpisodeResult

INSTALL_HINT = "the Ray executor needs ray: pip install 'ray>=2.40' (or executor='local')"


def require_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc
    return ray


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker process needs to build its local ``Evaluator`` (hashable: the reuse key)."""

    benchmark: str
    target_name: str
    world_backend: str
    sampling: Sampling
    retries: int
    sandbox_workers: int
    max_concurrency: int
    sandbox_isolation: str | None = None
    sandbox_timeout_s: float = 2.0


# --- worker side: one local Evaluator per worker process and config ----------------------
_WORKER_EVALUATORS: dict[Any, Any] = {}


def _worker_evaluator(cfg: WorkerConfig, spec: BenchmarkSpec | None) -> Any:
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    key = (cfg, None if spec is None else id(spec.world_factory))
    ev = _WORKER_EVALUATORS.get(key)
    if ev is None:
        ev = Evaluator(spec or get_benchmark(cfg.benchmark), make_backend(cfg.target_name, benchmark=cfg.benchmark), world_backend=cfg.world_backend,
                       target_name=cfg.target_name, sampling=cfg.sampling, max_concurrency=cfg.max_concurrency,
                       retries=cfg.retries, sandbox_workers=cfg.sandbox_workers, cache=RolloutCache(max_entries=1),
                       sandbox_isolation=cfg.sandbox_isolation, sandbox_timeout_s=cfg.sandbox_timeout_s)
        _WORKER_EVALUATORS[key] = ev
    return ev


def run_chunk(cfg: WorkerConfig, spec: BenchmarkSpec | None, harness: Harness, tasks: list[Any], seeds: list[int]) -> dict[str, Any]:
    """Run whole episodes in this process; plain dicts back (``EpisodeResult.to_dict()``)."""
    ev = _worker_evaluator(cfg, spec)
    batches, requests, hits = ev.batcher.batches, ev.batcher.requests, ev.batcher.memo_hits
    results = ev.evaluate(harness, tasks, seeds)
    return {"results": [r.to_dict() for r in results], "pid": os.getpid(), "batches": ev.batcher.batches - batches,
            "requests": ev.batcher.requests - requests, "memo_hits": ev.batcher.memo_hits - hits,
            "layers": ev.sandbox.layers()}


# --- driver side ------------------------------------------------------------------------
@dataclass
class _Counters:
    """``report()``'s view of model batching, summed over workers."""

    batches: int = 0
    requests: int = 0
    memo_hits: int = 0  # each worker keeps its own reply memo (models/base.py)


@dataclass
class _SandboxView:
    reported: list[str] = field(default_factory=list)

    def layers(self) -> list[str]:
        return list(self.reported)


class RayEvaluator:
    """Same interface as ``Evaluator`` (``evaluate``, ``evaluate_many``, ``close``, ``cache``,
    ``episodes_run``, ``batcher``, ``sandbox``, ``sampling``), episodes run on Ray workers."""

    def __init__(
        self,
        spec: BenchmarkSpec,
        *,
        world_backend: str = "sqlite",
        world_label: str | None = None,
        target_name: str = "sim",
        sampling: Sampling = Sampling(),  # noqa: B008 - frozen dataclass, same default as Evaluator
        max_concurrency: int = 64,
        retries: int = 2,
        sandbox_workers: int = 1,
        sandbox_isolation: str | None = None,
        sandbox_timeout_s: float = 2.0,
        cache: RolloutCache | None = None,
        max_in_flight: int | None = None,
        max_retries: int = 3,
        episodes_per_task: int | None = None,
        num_cpus_per_task: float = 1.0,
        ship_spec: bool = False,
        progress: bool = False,
    ) -> None:
        self._ray = require_ray()
        self.progress = progress
        if not self._ray.is_initialized():
            raise ConfigError("RayEvaluator needs ray.init() first; use make_evaluator('ray', …), which starts or joins a cluster")
        if max_retries < 0 or (max_in_flight is not None and max_in_flight < 1):
            raise ConfigError(f"max_retries={max_retries} must be >= 0 and max_in_flight={max_in_flight} >= 1")
        self.spec = spec
        self.sampling = sampling
        self.retries = retries
        self.max_retries = max_retries
        self.cache = cache or RolloutCache()
        self.context = rollout_context(spec, target_name, world_label or world_backend, sampling, sandbox_timeout_s)
        self.config = WorkerConfig(spec.name, target_name, world_backend, sampling, retries, sandbox_workers, max_concurrency,
                                   sandbox_isolation, sandbox_timeout_s)
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, int(cpus // max(num_cpus_per_task, 1e-9)))
        self.max_in_flight = max_in_flight or 2 * self.workers
        self.episodes_per_task = episodes_per_task
        self.episodes_run = 0
        self.tasks_submitted = 0
        self.batcher = _Counters()
        self.sandbox = _SandboxView()
        self._spec_ref = self._ray.put(spec) if ship_spec else None
        self._remote = self._ray.remote(run_chunk).options(max_retries=max_retries, num_cpus=num_cpus_per_task)

    def evaluate(self, harness: Harness, tasks: Sequence[Any], seeds: Sequence[int]) -> list[EpisodeResult]:
        return self.evaluate_many([harness], tasks, seeds)[0]

    def evaluate_many(self, harnesses: Sequence[Harness], tasks: Sequence[Any], seeds: Sequence[int], *,
                      fresh: bool = False) -> list[list[EpisodeResult]]:
        """Evaluate several harness versions on the same tasks and seeds over the cluster, cached;
        ``fresh``: a control run — every episode runs now, nothing is read from or written to the cache."""
        tasks, seeds = list(tasks), [int(s) for s in seeds]
        keys, out, todo = self.cache.lookup(self.context, harnesses, tasks, seeds)
        if fresh:
            out, todo = {}, dict(zip(keys, harnesses))
        if todo:
            out.update(self._run(todo, tasks, seeds, store=not fresh))
        return [out[k] for k in keys]

    def _chunks(self, n: int, versions: int) -> list[tuple[int, int]]:
        # enough chunks to keep every worker busy, whole episodes per chunk
        size = self.episodes_per_task or -(-n * versions // (2 * self.workers))
        size = max(1, min(size, n))
        return [(i, min(i + size, n)) for i in range(0, n, size)]

    def _run(self, todo: dict[str, Harness], tasks: list[Any], seeds: list[int], store: bool = True) -> dict[str, list[EpisodeResult]]:
        ray = self._ray
        jobs = [(key, lo, hi) for key in todo for lo, hi in self._chunks(len(tasks), len(todo))]
        harness_refs = {key: ray.put(h) for key, h in todo.items()}
        slots: dict[tuple[str, int], list[EpisodeResult]] = {}
        pending: dict[Any, tuple[str, int, int]] = {}
        queue = list(jobs)
        left = {key: sum(1 for k, _, _ in jobs if k == key) for key in todo}  # chunks still out, per version
        out: dict[str, list[EpisodeResult]] = {key: [] for key, n in left.items() if not n}  # no tasks: no chunks
        if store:
            for key, results in out.items():
                self.cache.put(key, results)
        bar = progress_bar(self.progress, len(todo) * len(tasks), f"{self.spec.name} on {self.config.target_name} (ray)")
        try:
            while queue or pending:
                while queue and len(pending) < self.max_in_flight:  # backpressure: bounded in-flight tasks
                    key, lo, hi = queue.pop(0)
                    ref = self._remote.remote(self.config, self._spec_ref, harness_refs[key], tasks[lo:hi], seeds[lo:hi])
                    pending[ref] = (key, lo, hi)
                    self.tasks_submitted += 1
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    key, lo, hi = pending.pop(ref)
                    slots[(key, lo)] = self._collect(ref, todo[key], tasks[lo:hi], seeds[lo:hi])
                    bar.update(hi - lo)
                    left[key] -= 1
                    if not left[key]:  # cached as soon as this version's batch is done, as the Evaluator does
                        out[key] = [r for (k, _), rs in sorted(slots.items(), key=lambda x: x[0][1]) if k == key for r in rs]
                        if store:
                            self.cache.put(key, out[key])
        finally:
            bar.close()
        return out

    def _collect(self, ref: Any, harness: Harness, tasks: list[Any], seeds: list[int]) -> list[EpisodeResult]:
        try:
            payload = self._ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - retries exhausted (worker lost) or an unexpected worker failure
            cause = getattr(exc, "cause", None) or exc
            error = one_line(f"{type(cause).__name__} on a Ray worker after {self.max_retries} retries: {cause}")
            return [EpisodeResult(t.task_id, t.identity(), t.task_type, harness.version, s, status=ENV_ERROR, error=error)
                    for t, s in zip(tasks, seeds)]
        results = [EpisodeResult.from_dict(d) for d in payload["results"]]
        self.episodes_run += sum(1 for r in results if not r.is_env_error)
        self.batcher.batches += payload["batches"]
        self.batcher.requests += payload["requests"]
        self.batcher.memo_hits += payload.get("memo_hits", 0)
        if not self.sandbox.reported:
            self.sandbox.reported = list(payload["layers"])
        return results

    def close(self) -> None:
        """Workers and their evaluators belong to the Ray cluster; nothing held here but refs."""
        self._spec_ref = None
