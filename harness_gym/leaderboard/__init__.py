"""Leaderboards: a submission format, ``submit`` from bench rows, ``verify`` by rerunning, ``render``."""
from __future__ import annotations

from harness_gym.leaderboard.schema import FORMAT, SCHEMA, SubmissionError, validate
from harness_gym.leaderboard.submission import (
           build_submission,
           load_submission,
           packet_sha256,
           save_submission,
)
from harness_gym.leaderboard.verify import Verdict, verify_submission

__all__ = ["FORMAT", "SCHEMA", "SubmissionError", "Verdict", "build_submission", "load_submission", "packet_sha256",
           "save_submission", "validate", "verify_submission"]
