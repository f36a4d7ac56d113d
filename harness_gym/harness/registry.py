"""A versioned harness registry: every proposed version, its parent, diff, decision and evidence.

Co-Harness keeps each candidate harness in a registry with the decision taken on it
(accepted, rejected, rolled back) and the evidence behind it (δ_in on the held-in
failures, δ_out on a held-out regression set, per-task numbers). Version ids are
``Harness.version`` (content hashes), so the same content is one record however often it
is proposed; repeated trials are appended to that record's ``trials``.

Persistence is JSON lines, append-only: every change writes the changed record (files
included) and the head, so a crashed run loses nothing and ``HarnessRegistry.load``
replays the log. Timestamps live in ``created_at``/``updated_at`` and are excluded from
``VersionRecord.digest`` and ``HarnessRegistry.digest``, so two runs with the same
decisions hash the same.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from harness_gym.errors import ConfigError
from harness_gym.harness.files import Harness
from harness_gym.benchmarks.base import digest

ROOT = "root"
ACCEPTED = "accepted"
REJECTED = "rejected"
ROLLED_BACK = "rolled_back"
DECISIONS = (ROOT, ACCEPTED, REJECTED, ROLLED_BACK)
_TIME_KEYS = ("created_at", "updated_at")


@dataclass
class VersionRecord:
    """One harness version and what was decided about it."""

    version: str
    parent: str | None
    benchmark: str
    files: dict[str, str]
    diff: str = ""
    decision: str = ROOT
    category: str = ""
    description: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    trials: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = 0.0
    updated_at: float = 0.0

    def harness(self) -> Harness:
        return Harness(benchmark=self.benchmark, files=self.files, parent=self.parent)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def digest(self) -> str:
        """SHA-256 of the record without its timestamps."""
        return digest({k: v for k, v in self.to_dict().items() if k not in _TIME_KEYS})


class HarnessRegistry:
    """Versions keyed by ``Harness.version``; ``head`` is the version in use."""

    def __init__(self, path: str | Path | None = None, *, clock: Any = time.time) -> None:
        self.path = Path(path) if path else None
        self._clock = clock
        self._records: dict[str, VersionRecord] = {}
        self._order: list[str] = []
        self.head: str | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    # --- writing ------------------------------------------------------------------------------
    def add_root(self, harness: Harness, description: str = "root") -> VersionRecord:
        """Register the starting harness and make it the head (a no-op if already present)."""
        if harness.version in self._records:
            self._same_content(self._records[harness.version], harness)
            self.head = harness.version
            self._write(self._records[harness.version])
            return self._records[harness.version]
        rec = VersionRecord(version=harness.version, parent=None, benchmark=harness.benchmark,
                            files=dict(harness.files), decision=ROOT, description=description)
        return self._put(rec, make_head=True)

    def record(
        self,
        harness: Harness,
        parent: str,
        diff: str,
        decision: str,
        evidence: dict[str, Any],
        *,
        category: str = "",
        description: str = "",
    ) -> VersionRecord:
        """Record a candidate ``harness`` proposed on ``parent``; an accepted one becomes the head."""
        if decision not in (ACCEPTED, REJECTED):
            raise ConfigError(f"decision={decision!r}: record() takes 'accepted' or 'rejected'; use rollback() to roll back")
        if parent not in self._records:
            raise ConfigError(f"parent {parent!r} is not in the registry; add_root() the starting harness first")
        trial = {"parent": parent, "decision": decision, "evidence": evidence}
        existing = self._records.get(harness.version)
        if existing is not None:
            self._same_content(existing, harness)
            # The same content proposed again: keep its first lineage, append the trial.
            # A later acceptance wins over an earlier rejection; a root stays the root.
            existing.trials.append(trial)
            if existing.decision != ROOT and (decision == ACCEPTED or existing.decision == REJECTED):
                existing.decision = decision
                existing.evidence = evidence
            return self._put(existing, make_head=decision == ACCEPTED)
        rec = VersionRecord(version=harness.version, parent=parent, benchmark=harness.benchmark,
                            files=dict(harness.files), diff=diff, decision=decision, category=category,
                            description=description, evidence=evidence, trials=[trial])
        return self._put(rec, make_head=decision == ACCEPTED)

    @staticmethod
    def _same_content(rec: "VersionRecord", harness: Harness) -> None:
        """A version is 64 bits of the content hash: two contents under one version (a crafted
        collision) must not be taken for one harness, whose record and lineage the second would reuse."""
        if rec.benchmark != harness.benchmark or dict(rec.files) != dict(harness.files):
            raise ConfigError(f"harness version {harness.version} is already recorded with other content "
                              "(a collision of the 16-hex version); refusing to merge two harnesses into one record")

    def rollback(self, version: str, reason: str = "") -> Harness:
        """Make ``version`` the head again; accepted versions after it on the head's lineage
        are marked ``rolled_back`` (with ``reason`` in their evidence). Returns its harness."""
        if version not in self._records:
            raise ConfigError(f"cannot roll back to {version!r}: not in the registry (known: {self._order[:5]}…)")
        if self._records[version].decision not in (ROOT, ACCEPTED):
            raise ConfigError(f"cannot roll back to {version!r}: its decision is {self._records[version].decision!r}, "
                              "expected an accepted version or the root")
        chain = self.lineage(self.head) if self.head else []
        if version not in chain:
            raise ConfigError(f"{version!r} is not an ancestor of the head {self.head!r}; roll back along the head's lineage")
        for v in chain[chain.index(version) + 1:]:
            rec = self._records[v]
            rec.decision = ROLLED_BACK
            rec.evidence = {**rec.evidence, "rollback_reason": reason, "rolled_back_to": version}
            self._put(rec, make_head=False)
        self.head = version
        self._write(self._records[version])
        return self._records[version].harness()

    # --- reading ------------------------------------------------------------------------------
    def get(self, version: str) -> VersionRecord:
        try:
            return self._records[version]
        except KeyError:
            raise ConfigError(f"unknown harness version {version!r}; known: {self._order[:8]}") from None

    def harness(self, version: str | None = None) -> Harness:
        """The harness of ``version`` (default: the head)."""
        v = version or self.head
        if v is None:
            raise ConfigError("the registry is empty; add_root() the starting harness first")
        return self.get(v).harness()

    def lineage(self, version: str) -> list[str]:
        """Versions from the root to ``version``, inclusive."""
        out: list[str] = []
        v: str | None = version
        while v is not None:
            if v in out:  # cannot happen with first-lineage-wins, but never loop
                break
            out.append(v)
            v = self.get(v).parent
        return out[::-1]

    def versions(self, decision: str | None = None) -> list[VersionRecord]:
        """Records in first-recorded order, optionally only those with ``decision``."""
        return [self._records[v] for v in self._order if decision is None or self._records[v].decision == decision]

    def __contains__(self, version: object) -> bool:
        return version in self._records

    def __iter__(self) -> Iterator[VersionRecord]:
        return iter(self.versions())

    def __len__(self) -> int:
        return len(self._records)

    def digest(self) -> str:
        """Hash of every record (timestamps excluded) and the head."""
        return digest({"head": self.head, "records": [self._records[v].digest() for v in self._order]})

    # --- persistence ----------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> "HarnessRegistry":
        """Replay a JSON-lines log (a torn last line from a crash is ignored)."""
        reg = cls(None)
        p = Path(path)
        if p.exists():
            for line in p.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                rec = VersionRecord(**row["record"])
                if rec.version not in reg._records:
                    reg._order.append(rec.version)
                reg._records[rec.version] = rec
                reg.head = row.get("head")
        reg.path = p
        return reg

    def _put(self, rec: VersionRecord, *, make_head: bool) -> VersionRecord:
        now = float(self._clock())
        if rec.version not in self._records:
            rec.created_at = now
            self._records[rec.version] = rec
            self._order.append(rec.version)
        rec.updated_at = now
        if make_head:
            self.head = rec.version
        self._write(rec)
        return rec

    def _write(self, rec: VersionRecord) -> None:
        if self.path is None:
            return
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"head": self.head, "record": rec.to_dict()}, sort_keys=True) + "\n")
