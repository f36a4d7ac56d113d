"""Verification records: what the maintainers' ``verify --record`` reran, kept apart from the submission.

``leaderboards/verified/<name>.json`` holds the sha256 of the exact submission bytes that
were rerun, the table and the digest of its protocol at the time, the verifier's package
version and git commit, the date, the outcome and — for a reproduced entry of a table with
a held-out batch — ``verifier_heldout``: per episode the secret seed the verifier drew
after the file was fixed and the held-out Δ of the patch on the batch drawn from it (the
number tables rank on). ``render`` shows ✓ only when a record's submission digest equals
the current file's bytes and its protocol digest equals the table's current rules — so
editing a verified file, or changing the protocol, drops the ✓. A record of the older
format (``harness-gym-verification-v1``, no verifier draws) leaves its row unranked until
it is verified again. ``harness-gym leaderboard check-record`` reruns a record's draws.

The trust anchor is the maintainers' commit of the record: a pull request adds only
``submissions/<name>.json`` (CONTRIBUTING.md), never a file under ``verified/``.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness_gym
from harness_gym.leaderboard.protocol import Protocol
from harness_gym.leaderboard.schema import MAX_INT, SubmissionError
from harness_gym.leaderboard.submission import SubmissionFile, _git_sha, no_constant, no_duplicate_keys
from harness_gym.sandbox.pool import address_fingerprint
from harness_gym.leaderboard.verify import (
    HELDOUT_SEED_BOUND,
    OTHER_VERSION,
    REJECTED,
    REPRODUCED,
    HeldoutDraw,
    Verdict,
)

RECORD_FORMAT = "harness-gym-verification-v2"
OLD_RECORD_FORMATS = ("harness-gym-verification-v1",)  # reproduced, but no verifier held-out draws: unranked
# every field of a record and the types it may hold (table and protocol_sha256 are null for a file of no table)
_V1_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (str,), "submission": (str,), "submission_sha256": (str,), "table": (str, type(None)),
    "protocol_sha256": (str, type(None)), "outcome": (str,), "episodes_checked": (int,), "message": (str,),
    "submitted_version": (str,), "verifier": (dict,), "date": (str,)}
_FIELDS: dict[str, tuple[type, ...]] = {**_V1_FIELDS, "verifier_heldout": (list, type(None))}
_DRAW_FIELDS = ("seed", "heldout_seed", "patch_valid", "heldout_delta")
RERUN = "rerun `harness-gym leaderboard verify --record`"


def record_path(directory: Path, submission: Path) -> Path:
    """Where the record of ``submission`` (a file in ``directory/submissions/``) lives."""
    directory, submission = Path(directory), Path(submission)
    if submission.resolve().parent != (directory / "submissions").resolve():
        raise SubmissionError(f"{submission}: records are kept only for files in {directory / 'submissions'}/; "
                              "move the submission there or pass --dir")
    return directory / "verified" / f"{submission.stem}.json"


def write_record(directory: Path, sub: SubmissionFile, verdict: Verdict, protocol: Protocol | None) -> Path:
    """Write (or replace) the record of a full rerun of ``sub``; returns its path.

    An accepted verdict on a table with a held-out batch must carry the verifier's draws (one per
    episode, ``verify_submission(..., heldout_seeds=draw_heldout_seed)``): without them the row
    could only be ranked on the submitter's own held-out numbers."""
    path = record_path(directory, sub.path)
    draws = verdict.heldout if verdict.accepted and protocol is not None and protocol.heldout_batch_size else None
    if draws is None and verdict.accepted and protocol is not None and protocol.heldout_batch_size:
        raise ValueError(f"{sub.path}: an accepted verdict on {protocol.key} needs the verifier's held-out draws; "
                         "verify with heldout_seeds=draw_heldout_seed")
    if draws is not None and [d.seed for d in draws] != [e["seed"] for e in sub.data["episodes"]]:
        raise ValueError(f"{sub.path}: the verdict's held-out draws are not one per episode, in order")
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
        # the commit the rerun started on, if the checkout is still there: one that moved during the rerun is unknown
        "verifier": {"version": harness_gym.__version__, "git_sha": verdict.git_sha if verdict.git_sha == _git_sha() else None,
                     "python": platform.python_version(),
                     "addresses": address_fingerprint()},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "verifier_heldout": [d.to_dict() for d in draws] if draws is not None else None,
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
    """What the table shows for one submission: ✓, rejected, stale (file or rules changed), outdated
    (reproduced under a record format with no verifier draws) or unverified."""

    state: str  # "verified", "rejected", "stale", "outdated", "unverified"
    verifier_version: str | None = None
    other_version: bool = False
    date: str | None = None
    draws: tuple[HeldoutDraw, ...] | None = None  # the verifier's held-out draws (a ✓ row of a held-out table)
    addresses: str | None = None  # the verifier's object-address fingerprint (records since stop 49)


def read_record(path: Path) -> dict[str, Any]:
    """A record's JSON, its shape checked (either format); every breakage is one ``SubmissionError`` line naming
    ``path``. Records come only from the maintainers' commits, so a broken one stops render rather than
    silently dropping a ✓ (or ranking on numbers of the wrong shape)."""
    path = Path(path)
    if not path.is_file():
        raise SubmissionError(f"{path}: not a regular file; a record is a JSON file: remove it and {RERUN}")
    try:
        rec = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=no_duplicate_keys, parse_constant=no_constant)
    except SubmissionError as exc:
        raise SubmissionError(f"{path}: {exc}; {RERUN}") from None
    except OSError as exc:
        raise SubmissionError(f"{path}: unreadable ({exc.strerror or type(exc).__name__}); {RERUN}") from None
    except ValueError as exc:
        raise SubmissionError(f"{path}: not valid JSON ({str(exc).splitlines()[0][:80]}); rerun verify --record") from None
    except RecursionError:
        raise SubmissionError(f"{path}: nested too deeply to be a record; {RERUN}") from None
    fields = _V1_FIELDS if isinstance(rec, dict) and rec.get("format") in OLD_RECORD_FORMATS else _FIELDS
    if not isinstance(rec, dict) or set(rec) != set(fields) or rec["format"] not in (RECORD_FORMAT, *OLD_RECORD_FORMATS) \
            or not all(isinstance(rec[k], types) and not isinstance(rec[k], bool) for k, types in fields.items()) \
            or not isinstance(rec["verifier"].get("version"), str):
        raise SubmissionError(f"{path}: not a {RECORD_FORMAT} record; {RERUN}")
    if rec.get("verifier_heldout") is not None:
        _check_draws(path, rec["verifier_heldout"])
    return rec


def _check_draws(path: Path, draws: list[Any]) -> None:
    """Each draw: exactly seed, heldout_seed (an integer in [0, 2**53), none repeated), patch_valid, heldout_delta."""
    seen: set[int] = set()
    for i, d in enumerate(draws):
        where = f"{path}: verifier_heldout[{i}]"
        if not isinstance(d, dict) or set(d) != set(_DRAW_FIELDS):
            raise SubmissionError(f"{where}: expected an object with exactly {', '.join(_DRAW_FIELDS)}; {RERUN}")
        h = d["heldout_seed"]
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < HELDOUT_SEED_BOUND:
            raise SubmissionError(f"{where}.heldout_seed: {_short(h)} is not an integer in [0, 2**53), the range the "
                                  f"verifier draws from; {RERUN}")
        if h in seen:
            raise SubmissionError(f"{where}.heldout_seed: {h} repeats an earlier episode's; the verifier draws 53 "
                                  f"fresh bits per episode; {RERUN}")
        seen.add(h)
        if isinstance(d["seed"], bool) or not isinstance(d["seed"], int):
            raise SubmissionError(f"{where}.seed: {_short(d['seed'])} is not an integer; {RERUN}")
        if not isinstance(d["patch_valid"], bool):
            raise SubmissionError(f"{where}.patch_valid: {_short(d['patch_valid'])} is not true or false; {RERUN}")
        x = d["heldout_delta"]
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > MAX_INT:
            raise SubmissionError(f"{where}.heldout_delta: {_short(x)} is not a finite number; {RERUN}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def record_draws(path: Path, rec: dict[str, Any], protocol: Protocol) -> tuple[HeldoutDraw, ...] | None:
    """The verifier's draws of a current (same file, same rules), reproduced record, checked against the table:
    one per protocol episode, on its seeds, in order; None for a table with no held-out batch."""
    draws = rec["verifier_heldout"]
    if not protocol.heldout_batch_size:
        if draws is not None:
            raise SubmissionError(f"{path}: verifier_heldout on {protocol.key}, a table with no held-out batch; {RERUN}")
        return None
    if draws is None:
        raise SubmissionError(f"{path}: a reproduced record on {protocol.key} without verifier_heldout, the verifier's "
                              f"held-out draws this table ranks on; {RERUN}")
    seeds = [d["seed"] for d in draws]
    if seeds != protocol.seeds:
        raise SubmissionError(f"{path}: verifier_heldout covers seeds {_short(seeds)}, but {protocol.key} runs seeds "
                              f"{protocol.seeds[0]}–{protocol.seeds[-1]}, one draw each, in order; {RERUN}")
    return tuple(HeldoutDraw(d["seed"], d["heldout_seed"], d["patch_valid"], float(d["heldout_delta"])) for d in draws)


def status(directory: Path, sub: SubmissionFile, protocol: Protocol) -> Status:
    """The verification status of ``sub`` under ``protocol``'s current rules, from its record."""
    path = Path(directory) / "verified" / f"{sub.path.stem}.json"
    if not path.exists() and not path.is_symlink():
        return Status("unverified")
    rec = read_record(path)
    if rec["submission_sha256"] != sub.sha256 or rec["protocol_sha256"] != protocol.digest():
        return Status("stale")
    if rec["outcome"] == REJECTED:
        if rec.get("verifier_heldout") is not None:
            raise SubmissionError(f"{path}: a rejected record with verifier_heldout; draws follow a full reproduction; "
                                  f"{RERUN}")
        return Status("rejected", date=rec["date"])
    if rec["outcome"] not in (REPRODUCED, OTHER_VERSION) or rec["table"] != protocol.key:
        return Status("stale")
    if rec["format"] in OLD_RECORD_FORMATS:
        return Status("outdated", rec["verifier"]["version"], rec["outcome"] == OTHER_VERSION, rec["date"])
    addresses = rec["verifier"].get("addresses")
    return Status("verified", rec["verifier"]["version"], rec["outcome"] == OTHER_VERSION, rec["date"],
                  record_draws(path, rec, protocol), addresses if isinstance(addresses, str) else None)
