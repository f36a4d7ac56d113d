"""Verification records: what the maintainers' ``verify --record`` reran, kept apart from the submission.

``leaderboards/verified/<name>.json`` holds the sha256 of the exact submission bytes that
were rerun, the table and the digest of its protocol at the time, the verifier's package
version and git commit, the date and the outcome. ``render`` shows ✓ only when a record's
submission digest equals the current file's bytes and its protocol digest equals the
table's current rules — so editing a verified file, or changing the protocol, drops the ✓.

The trust anchor is the maintainers' commit of the record: a pull request adds only
``submissions/<name>.json`` (CONTRIBUTING.md), never a file under ``verified/``.
"""
from __future__ import annotations

import datetime
import json
import platform
from dataclasses import dataclass
from pathlib import Path

import harness_gym
from harness_gym.leaderboard.protocol import Protocol
from harness_gym.leaderboard.schema import SubmissionError
from harness_gym.leaderboard.submission import SubmissionFile, _git_sha
from harness_gym.leaderboard.verify import OTHER_VERSION, REJECTED, REPRODUCED, Verdict

RECORD_FORMAT = "harness-gym-verification-v1"
_FIELDS = {"format", "submission", "submission_sha256", "table", "protocol_sha256", "outcome", "episodes_checked",
           "message", "submitted_version", "verifier", "date"}


def record_path(directory: Path, submission: Path) -> Path:
    """Where the record of ``submission`` (a file in ``directory/submissions/``) lives."""
    directory, submission = Path(directory), Path(submission)
    if submission.resolve().parent != (directory / "submissions").resolve():
        raise SubmissionError(f"{submission}: records are kept only for files in {directory / 'submissions'}/; "
                              "move the submission there or pass --dir")
    return directory / "verified" / f"{submission.stem}.json"


def write_record(directory: Path, sub: SubmissionFile, verdict: Verdict, protocol: Protocol | None) -> Path:
    """Write (or replace) the record of a full rerun of ``sub``; returns its path."""
    path = record_path(directory, sub.path)
    record = {
        "format": RECORD_FORMAT,
        "submission": f"submissions/{sub.path.name}",
        "submission_sha256": sub.sha256,
        "table": protocol.key if protocol else None,
        "protocol_sha256": protocol.digest() if protocol else None,
        "outcome": verdict.outcome,
        "episodes_checked": verdict.episodes_checked,
        "message": verdict.message,
        "submitted_version": sub.data["package"]["version"],
        "verifier": {"version": harness_gym.__version__, "git_sha": _git_sha(), "python": platform.python_version()},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Status:
    """What the table shows for one submission: ✓, rejected, stale (file or rules changed) or unverified."""

    state: str  # "verified", "rejected", "stale", "unverified"
    verifier_version: str | None = None
    other_version: bool = False
    date: str | None = None


def status(directory: Path, sub: SubmissionFile, protocol: Protocol) -> Status:
    """The verification status of ``sub`` under ``protocol``'s current rules, from its record."""
    path = Path(directory) / "verified" / f"{sub.path.stem}.json"
    if not path.exists():
        return Status("unverified")
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SubmissionError(f"{path}: not valid JSON ({str(exc).splitlines()[0][:80]}); rerun verify --record") from None
    if not isinstance(rec, dict) or set(rec) != _FIELDS or rec.get("format") != RECORD_FORMAT \
            or not isinstance(rec.get("verifier"), dict) or not all(isinstance(rec.get(k), str) for k in ("outcome", "date")):
        raise SubmissionError(f"{path}: not a {RECORD_FORMAT} record; rerun `harness-gym leaderboard verify --record`")
    if rec["submission_sha256"] != sub.sha256 or rec["protocol_sha256"] != protocol.digest():
        return Status("stale")
    if rec["outcome"] == REJECTED:
        return Status("rejected", date=rec["date"])
    if rec["outcome"] not in (REPRODUCED, OTHER_VERSION) or rec["table"] != protocol.key:
        return Status("stale")
    return Status("verified", str(rec["verifier"]["version"]), rec["outcome"] == OTHER_VERSION, str(rec["date"]))
