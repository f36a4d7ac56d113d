"""Leaderboards: one table per (env, target) with a written protocol; ``submit``, ``verify`` (protocol
checks + rerun, recorded separately) and ``render`` (escaped Markdown)."""
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
from harness_gym.leaderboard.verify import Verdict, protocol_violation, verify_submission

__all__ = ["FORMAT", "SCHEMA", "TABLES", "Protocol", "SubmissionError", "SubmissionFile", "Verdict", "build_submission",
           "load_submission", "packet_sha256", "protocol_violation", "save_submission", "table_for", "validate",
           "verify_submission"]
