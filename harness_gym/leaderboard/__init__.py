"""Leaderboards: one table per (env, target) with a written protocol; ``submit``, ``verify`` (protocol
checks + rerun, recorded separately with the verifier's own secret held-out draws), ``check-record``
(reruns a record's draws) and ``render`` (escaped Markdown, ranked on the verifier's held-out Δ)."""
from __future__ import annotations

from harness_gym.leaderboard.protocol import TABLES, Protocol, table_for
from harness_gym.leaderboard.schema import FORMAT, SCHEMA, SubmissionError, validate
from harness_gym.leaderboard.submission import (
    SubmissionFile,
    build_submission,
    load_submission,
    packet_sha256,
    save_submission,
)
from harness_gym.leaderboard.verify import (
    HeldoutDraw,
    Verdict,
    draw_heldout_seed,
    protocol_violation,
    recompute_heldout,
    verify_submission,
)

__all__ = ["FORMAT", "SCHEMA", "TABLES", "HeldoutDraw", "Protocol", "SubmissionError", "SubmissionFile", "Verdict",
           "build_submission", "draw_heldout_seed", "load_submission", "packet_sha256", "protocol_violation",
           "recompute_heldout", "save_submission", "table_for", "validate", "verify_submission"]
