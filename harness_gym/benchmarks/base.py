"""Contracts every target (DBBench, WebShop, ALFWorld) implements.

A target owns its tasks, its world state machine, its scoring, its default harness and
its simulated target. It knows nothing of hooks, packets or envs.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, Protocol

from harness_gym.types import StepResult, ToolCall


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, compact separators, sets sorted (Harness-R1 §4)."""

    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return [[str(k), norm(v[k])] for k in sorted(v, key=str)]
        if isinstance(v, (set, frozenset)):
            return sorted(norm(x) for x in v)
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), ensure_ascii=False, separators=(",", ":"))


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class Task(Protocol):
    """What the runtime and evaluation need to know about any task."""

    task_id: str
    task_type: str

    def identity(self) -> str:
        """SHA-256 over the task's content: equal identities mean the same task."""
        ...


class World(ABC):
    """One episode's world. Deterministic given the task; exposes only what the original shows."""

    @abstractmethod
    def reset(self, task: Any) -> str:
        """Set up the task; return the first observation the agent sees."""

    @abstractmethod
    def step(self, call: ToolCall) -> StepResult:
        """Apply one tool call; environment failures raise ``WorldError``."""

    @property
    @abstractmethod
    def score(self) -> float:
        """Final score in [0, 1] (valid once the episode is over)."""

    @property
    def success(self) -> bool:
        return self.score >= 1.0

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (databases, sessions)."""
