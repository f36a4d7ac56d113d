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
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import harness_gym
from harness_gym.leaderboard.protocol import Protocol
from harness_gym.leaderboard.schema import SubmissionError
from harness_gym.leaderboard.submission import SubmissionFile, _git_sha
from harness_gym.leaderboard.verify import OTHER_VERSION, REJECTED, REPRODUCED, Verdict

RECORD_FORMAT = "harness-gym-verification-v1"
# every field of a record and the types it may hold (table and protocol_sha256 are null for a file of no table)
_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (str,), "submission": (str,), "submission_sha256": (str,), "table": (str, type(None)),
    "protocol_sha256": (str, type(None)), "outcome": (str,), "episodes_checked": (int,), "message": (str,),
    "submitted_version": (str,), "verifier": (dict,), "date": (str,)}


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
    data = (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8")  # fails before any file is touched
    path.parent.mkdir(parents=True, exist_ok=True)
    # a temp file in the same folder, then one rename: a crash or a full disk leaves the old record whole
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
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
    if not path.exists() and not path.is_symlink():
        return Status("unverified")
    # a broken record stops render with one line naming it, whatever the breakage: records come only from
    # the maintainers' commits, so a silent "unverified" would hide their mistake behind a dropped ✓
    rerun = "rerun `harness-gym leaderboard verify --record`"
    if not path.is_file():
        raise SubmissionError(f"{path}: not a regular file; a record is a JSON file: remove it and {rerun}")
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SubmissionError(f"{path}: unreadable ({exc.strerror or type(exc).__name__}); {rerun}") from None
    except ValueError as exc:
        raise SubmissionError(f"{path}: not valid JSON ({str(exc).splitlines()[0][:80]}); rerun verify --record") from None
    except RecursionError:
        raise SubmissionError(f"{path}: nested too deeply to be a record; {rerun}") from None
    if not isinstance(rec, dict) or set(rec) != set(_FIELDS) or rec["format"] != RECORD_FORMAT \
            or not all(isinstance(rec[k], types) and not isinstance(rec[k], bool) for k, types in _FIELDS.items()) \
            or not isinstance(rec["verifier"].get("version"), str):
        raise SubmissionError(f"{path}: not a {RECORD_FORMAT} record; {rerun}")
    if rec["submission_sha256"] != sub.sha256 or rec["protocol_sha256"] != protocol.digest():
        return Status("stale")
    if rec["outcome"] == REJECTED:
        return Status("rejected", date=rec["date"])
    if rec["outcome"] not in (REPRODUCED, OTHER_VERSION) or rec["table"] != protocol.key:
        return Status("stale")
    return Status("verified", rec["verifier"]["version"], rec["outcome"] == OTHER_VERSION, rec["date"])
