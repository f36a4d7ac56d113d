"""Rollout cache: a batch run of (target, harness version, tasks, seeds) is computed once.

Patched runs are cached the same way: equivalent patches give the same harness content,
so a repeated patch costs no rollout. The key holds the full sha256 of the harness content
(``Harness.content_sha256``, not the 16-hex ``version``), and a run is served only if every
result in it names that harness's version, so a cached run was produced by the patch it is
keyed on. With ``directory`` set, entries persist as JSON.

The in-memory layer is an LRU bounded to ``max_entries`` batch runs (default
``DEFAULT_MAX_ENTRIES``; a batch-10 run is ~40 KB of JSON, a few times that as objects),
so a long training or soak run over ever new batches does not grow without bound. An
evicted entry is recomputed (or re-read from ``directory``) if it is needed again; the
current batch's baseline stays hot because every step touches it.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from harness_gym.harness.files import Harness
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.benchmarks.base import digest

CACHE_PROTOCOL = "harness-gym-rollout-v2"  # v2: keyed on the full harness content sha256
DEFAULT_MAX_ENTRIES = 256


def rollout_context(spec: Any, target_name: str, world: str, sampling: Any, sandbox_timeout_s: float) -> dict[str, Any]:
    """What besides the harness, tasks and seeds decides a run, so a cache shared by two evaluators never
    serves one's run to the other: target, world backend, sampling, the benchmark's protocol (the
    short-run callers override ``max_rounds``), the weights behind a real target's string
    (``target_identity``) and the hook limits (a hook that takes 3 s is a
    timeout at 2 s and an effect at 5 s)."""
    from harness_gym.models.factory import target_identity
    from harness_gym.runtime.hooks import EPISODE_BUDGET_CALLS
    from harness_gym.sandbox.pool import DEFAULT_LINE_BUDGET
    context = {"benchmark": spec.name, "target": target_name, "world_backend": world.split("@")[-1],
               "sampling": [sampling.temperature, sampling.top_p, sampling.max_tokens],
               "protocol": dict(getattr(spec, "protocol", None) or {}),
               "hooks": {"call_timeout_s": float(sandbox_timeout_s), "episode_budget_calls": EPISODE_BUDGET_CALLS,
                         "line_budget": DEFAULT_LINE_BUDGET}}
    identity = target_identity(target_name, spec.name)  # the weights behind the string (a new adapter, a folder rewritten)
    if identity is not None:
        context["model"] = identity
    return context


def rollout_key(context: dict[str, Any], harness_sha256: str, task_identities: list[str], seeds: list[int]) -> str:
    return digest(
        {"protocol": CACHE_PROTOCOL, "context": context, "harness": harness_sha256, "tasks": task_identities, "seeds": seeds}
    )


class RolloutCache:
    def __init__(self, directory: str | Path | None = None, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if int(max_entries) < 1:
            raise ValueError(f"max_entries={max_entries!r}: expected an integer >= 1 (batch runs kept in memory)")
        self._mem: OrderedDict[str, list[EpisodeResult]] = OrderedDict()
        self.directory = Path(directory) if directory else None
        self.max_entries = int(max_entries)
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def entries(self) -> int:
        """Batch runs held in memory now (at most ``max_entries``). No ``__len__``: an empty
        cache must stay truthy for ``cache or RolloutCache()`` callers."""
        return len(self._mem)

    def _remember(self, key: str, results: list[EpisodeResult]) -> None:
        self._mem[key] = results
        self._mem.move_to_end(key)
        while len(self._mem) > self.max_entries:
            self._mem.popitem(last=False)
            self.evictions += 1

    def get(self, key: str) -> list[EpisodeResult] | None:
        if key in self._mem:
            self.hits += 1
            self._mem.move_to_end(key)
            return self._mem[key]
        if self.directory is not None:
            path = self.directory / f"{key}.json"
            if path.exists():
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                    results = [EpisodeResult.from_dict(d) for d in data]
                except (ValueError, TypeError):
                    path.unlink(missing_ok=True)  # a torn or foreign file is recomputed, never trusted
                else:
                    self._remember(key, results)
                    self.hits += 1
                    return results
        self.misses += 1
        return None

    def put(self, key: str, results: list[EpisodeResult]) -> None:
        if any(r.is_env_error for r in results):
            return  # incomplete evaluations are never cached
        self._remember(key, results)
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump([r.to_dict() for r in results], fh)
            os.replace(tmp, self.directory / f"{key}.json")

    def lookup(
        self, context: dict[str, Any], harnesses: Sequence[Harness], tasks: Sequence[Any], seeds: Sequence[int]
    ) -> tuple[list[str], dict[str, list[EpisodeResult]], dict[str, Harness]]:
        """Keys in ``harnesses`` order, the cached runs by key, and the harness versions still to run by key."""
        identities = [t.identity() for t in tasks]
        keys = [rollout_key(context, h.content_sha256, identities, list(seeds)) for h in harnesses]
        found: dict[str, list[EpisodeResult]] = {}
        todo: dict[str, Harness] = {}
        for h, key in zip(harnesses, keys):
            cached = self.get(key)
            if cached is not None and not _produced_by(cached, h, identities, list(seeds)):
                self._mem.pop(key, None)  # a run of another harness (or batch) under this key: never served
                cached = None
            if cached is not None:
                found[key] = cached
            else:
                todo.setdefault(key, h)
        return keys, found, todo


def _produced_by(results: list[EpisodeResult], harness: Harness, identities: list[str], seeds: list[int]) -> bool:
    """Whether ``results`` are the run of ``harness`` on exactly these tasks and seeds, in order."""
    return (len(results) == len(identities)
            and all(r.harness_version == harness.version and r.task_identity == t and r.seed == s
                    for r, t, s in zip(results, identities, seeds)))
