"""What one episode leaves behind: the full conversation plus every step, hook call and effect.

Everything here is plain JSON-able data so results can be written as JSON lines,
rendered into packets and compared across runs byte for byte.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness_gym.types import Message

# Episode statuses (AgentBench names where they exist).
COMPLETED = "completed"
TASK_LIMIT_REACHED = "task_limit_reached"
AGENT_INVALID_ACTION = "agent_invalid_action"
ENV_ERROR = "env_error"  # an environment failure: never scored as a task failure
# An environment error under a patched harness that the base harness, rerun afresh on the same
# task and seed, does not hit: it followed the patch, so it is scored as a failure (reward 0).
CAUSED_ENV_ERROR = "caused_env_error"


@dataclass
class EpisodeResult:
    """One episode of the target agent on one task under one harness version.

    ``events`` records, in order, dicts with a ``kind`` key:
      - ``{"kind": "step", "round", "tool", "arguments", "observation"}`` — a world step;
      - ``{"kind": "hook", "round", "point", "file", "effect", "error"}`` — one hook call
        (``effect`` is the normalized effect or None; ``error`` a one-line reason or None);
      - ``{"kind": "effect", "round", "point", "type", "applied", "note"}`` — what the
        runtime did with an effect (e.g. DBBench ignores rewrite/force and says so);
      - ``{"kind": "text_only", "round"}`` — a model turn without a tool call.
    """

    task_id: str
    task_identity: str
    task_type: str
    harness_version: str
    seed: int
    reward: float = 0.0
    success: bool = False
    status: str = COMPLETED
    rounds: int = 0
    messages: list[Message] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def is_env_error(self) -> bool:
        return self.status == ENV_ERROR

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeResult":
        return cls(**data)
