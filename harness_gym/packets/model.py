"""The failure packet: what an editing policy sees of one baseline batch.

A packet is plain, JSON-able data plus its rendered evidence text. It is built only from
what the target agent saw (its messages) and from rewards and statuses — never from gold
answers — and the same episodes always give a byte-identical packet.
"""
from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from harness_gym.benchmarks.base import digest

# Categories removed from every rendered text: control, format, surrogate, private-use,
# unassigned, line/paragraph separators. "\n" and "\t" are kept.
_DROP_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class HarnessView(Protocol):
    """What packets need of a harness: its version id, benchmark and rendered files."""

    @property
    def version(self) -> str: ...

    @property
    def benchmark(self) -> str: ...

    def render(self) -> str: ...


@dataclass
class FailureTrace:
    """One failed episode as rendered into the packet (lines already sanitized and capped)."""

    task_id: str
    index: int
    status: str
    reward: float
    turns: int
    messages: list[str] = field(default_factory=list)
    signals: dict[str, Any] = field(default_factory=dict)
    task_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Packet:
    """A failure packet for one batch.

    ``baseline_rewards`` holds the completed episodes only; episodes that ended in an
    environment error are listed in ``incomplete`` (they are not agent failures).
    ``failures`` are the traces actually included in ``text``.
    """

    benchmark: str
    batch_tag: str
    task_ids: list[str]
    batch_digest: str
    baseline_rewards: dict[str, float]
    baseline_pass: int
    batch_size: int
    harness_version: str
    failures: list[FailureTrace]
    overview: str
    text: str
    incomplete: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def digest(self) -> str:
        """SHA-256 over the canonical JSON of the packet: equal digests, equal packets."""
        return digest(self.to_dict())


def clean_text(text: str) -> str:
    """Drop control and other non-printing characters, keeping newlines and tabs."""
    if text.isprintable():
        return text
    return "".join(
        c for c in text if c in "\n\t" or unicodedata.category(c) not in _DROP_CATEGORIES
    )
