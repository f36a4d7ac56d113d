"""Rollout cache: a batch run of (target, harness version, tasks, seeds) is computed once.

Patched runs are cached the same way: equivalent patches give the same harness version,
so a repeated patch costs no rollout. With ``directory`` set, entries persist as JSON.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.targets.base import digest

CACHE_PROTOCOL = "harness-gym-rollout-v1"


def rollout_key(context: dict[str, Any], harness_version: str, task_identities: list[str], seeds: list[int]) -> str:
    return digest(
        {"protocol": CACHE_PROTOCOL, "context": context, "harness": harness_version, "tasks": task_identities, "seeds": seeds}
    )[:24]


class RolloutCache:
    def __init__(self, directory: str | Path | None = None) -> None:
        self._mem: dict[str, list[EpisodeResult]] = {}
        self.directory = Path(directory) if directory else None
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> list[EpisodeResult] | None:
        if key in self._mem:
            self.hits += 1
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
                    self._mem[key] = results
                    self.hits += 1
                    return results
        self.misses += 1
        return None

    def put(self, key: str, results: list[EpisodeResult]) -> None:
        if any(r.is_env_error for r in results):
            return  # incomplete evaluations are never cached
        self._mem[key] = results
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump([r.to_dict() for r in results], fh)
            os.replace(tmp, self.directory / f"{key}.json")
