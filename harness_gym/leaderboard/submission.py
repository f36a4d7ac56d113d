"""Build, read and write submissions; the env that ``submit`` and ``verify`` run.

A submission is one policy on one leaderboard table (env id + target). Episode ``i`` ran on
the protocol's seed ``base_seed + i``; it records the batch the env drew for that seed, the
sha256 of the observation (the packet the policy read), the exact patch text and the
claimed numbers. Reading a submission only parses JSON: nothing in it is imported,
executed or unpickled; its patches reach code only through ``env.step`` (the sandbox).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.leaderboard.protocol import Protocol, table_for
from harness_gym.leaderboard.schema import FORMAT, MAX_INT, SubmissionError, validate
from harness_gym.sandbox.pool import address_fingerprint

CLAIM_FIELDS = ("reward", "baseline_score", "patched_score", "heldout_delta")
MAX_FILE_BYTES = 8 * 1024 * 1024  # 1000 episodes of patches are far smaller; a bigger file is not a submission


@dataclass(frozen=True)
class SubmissionFile:
    """A submission as read from disk: its data and the sha256 of the exact bytes it was parsed from."""

    path: Path
    data: dict[str, Any]
    sha256: str


def packet_sha256(observation: str) -> str:
    return hashlib.sha256(observation.encode("utf-8")).hexdigest()


def _metric_kwargs(protocol: Protocol) -> dict[str, Any]:
    """``metric`` goes to the env when this version's env takes it; before that only "score" can be run."""
    from harness_gym.envs.config import EnvConfig

    if "metric" in {f.name for f in dataclasses.fields(EnvConfig)}:
        return {"metric": protocol.metric}
    if protocol.metric != "score":
        raise ConfigError(f"table {protocol.key} uses metric={protocol.metric!r}, but this harness-gym's env has no "
                          "`metric` kwarg (it reports mean score only); upgrade harness-gym")
    return {}


def make_kwargs(protocol: Protocol) -> dict[str, Any]:
    """``gym.make`` kwargs of a table's env: the protocol's values, target and temperature — never a submission's."""
    return {"target": protocol.target, "temperature": protocol.temperature, "split": protocol.split,
            "batch_size": protocol.batch_size, "heldout_batch_size": protocol.heldout_batch_size,
            "backend": protocol.backend, **_metric_kwargs(protocol)}


def make_env(protocol: Protocol) -> Any:
    """The env of a table, built from its protocol (everything else at the verifier's defaults)."""
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers env ids

    if protocol.env_id not in gym.registry:
        raise ConfigError(f"env {protocol.env_id!r} of table {protocol.key} is not registered in this harness-gym")
    return gym.make(protocol.env_id, **make_kwargs(protocol))


def env_sampling(env: Any) -> dict[str, Any]:
    """The target sampling settings the env's evaluator runs with (recorded and checked, never taken from a file)."""
    s = env.unwrapped.evaluator.sampling
    return {"temperature": float(s.temperature), "top_p": float(s.top_p), "max_tokens": int(s.max_tokens)}


def _git_sha() -> str | None:
    """The commit of the code that runs, or None when unknown or when the package has uncommitted changes."""
    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, check=False,
                                  cwd=Path(__file__).resolve().parent)
        except (OSError, subprocess.SubprocessError):
            return None

    head = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":/harness_gym", ":/baselines")
    if head is None or dirty is None or head.returncode != 0 or dirty.returncode != 0 or dirty.stdout.strip():
        return None
    return head.stdout.strip() or None


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise SubmissionError(f"bench results {str(path)!r} not found; run `harness-gym bench --out {path}` first")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a torn last line from a crashed bench
    return rows


def _protocol_rows(rows: Iterable[dict[str, Any]], policy: str, protocol: Protocol) -> list[dict[str, Any]]:
    """The bench rows of ``policy`` on the protocol's seeds, one per seed, in seed order."""
    mine = [r for r in rows if r.get("policy") == policy and r.get("env") == protocol.env_id]
    by_seed: dict[int, dict[str, Any]] = {}
    for r in mine:
        seed = int(r["seed"])
        if seed in by_seed:
            raise SubmissionError(f"bench rows hold two results of {policy!r} for seed {seed}; keep one run per seed")
        by_seed[seed] = r
    missing = [s for s in protocol.seeds if s not in by_seed]
    if missing:
        raise SubmissionError(
            f"bench rows of {policy!r} on {protocol.env_id} lack seeds {missing[:5]}{'…' if len(missing) > 5 else ''}; "
            f"table {protocol.key} needs seeds {protocol.seeds[0]}–{protocol.seeds[-1]}: run "
            f"`{protocol.bench_command()} --policy {policy}`")
    return [by_seed[s] for s in protocol.seeds]


def build_submission(
    rows: Iterable[dict[str, Any]],
    *,
    name: str,
    policy: str,
    env_id: str,
    target: str = "sim",
    attempts: int = 1,
    description: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """A submission to table (``env_id``, ``target``) from ``harness-gym bench`` rows of one policy.

    Takes exactly the protocol's seeds, resets the env on each (which also proves the bench
    ran under the protocol: the row's batch must be the env's draw for that seed) and hashes
    the observation. Everything ``verify`` checks without a rerun is checked here too.
    """
    from harness_gym.leaderboard.verify import protocol_violation

    protocol = table_for(env_id, target)
    chosen = _protocol_rows(rows, policy, protocol)
    if protocol.heldout_batch_size and any(r.get("heldout_delta") is None and r["patch_valid"] for r in chosen):
        raise SubmissionError(f"bench rows have no held-out deltas; table {protocol.key} needs "
                              f"--heldout-batch-size {protocol.heldout_batch_size}: run `{protocol.bench_command()}`")
    import harness_gym

    sub: dict[str, Any] = {
        "format": FORMAT, "name": name, "policy": policy,
        "env": {"id": protocol.env_id, "kwargs": protocol.env_kwargs()},
        "package": {"name": "harness-gym", "version": harness_gym.__version__, "git_sha": _git_sha(),
                    "addresses": address_fingerprint()},
        "target": {"model": protocol.target, "sampling": {}},
        "attempts": int(attempts), "episodes": [],
    }
    if description:
        sub["description"] = description
    env = make_env(protocol)
    try:
        sub["target"]["sampling"] = env_sampling(env)
        for r in chosen:
            obs, info = env.reset(seed=int(r["seed"]))
            if info["batch"] != list(r["batch"]) or info["batch_digest"] != r["batch_digest"]:
                raise SubmissionError(
                    f"bench row seed {r['seed']}: its batch is not the one table {protocol.key}'s env draws for that seed; "
                    f"the bench ran with other settings: run `{protocol.bench_command()} --policy {policy}`")
            if progress:
                progress(f"seed {r['seed']}: packet {packet_sha256(obs)[:12]}")
            sub["episodes"].append({
                "seed": int(r["seed"]), "batch": list(r["batch"]), "batch_digest": r["batch_digest"],
                "packet_sha256": packet_sha256(obs), "patch": r["patch"], "patch_valid": bool(r["patch_valid"]),
                "claimed": {k: r.get(k) for k in CLAIM_FIELDS},
            })
    finally:
        env.close()
    validate(sub)
    problem = protocol_violation(sub)
    if problem:
        raise SubmissionError(problem)
    return sub


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` hook for submissions and records: every field is named once."""
    keys = [k for k, _ in pairs]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup is not None:
        raise SubmissionError(f"key {dup!r} appears twice in one object; each field is named once")
    return dict(pairs)


def no_constant(name: str) -> Any:
    """``json.loads`` hook for submissions and records: NaN and infinities are refused."""
    raise SubmissionError(f"{name} is not a number JSON allows; claims are finite numbers")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise SubmissionError(f"{text[:20]} overflows to {value}; claims are finite numbers")
    if abs(value) > MAX_INT:  # finite, but sums and squares of such claims overflow in render's interval
        raise SubmissionError(f"number {text[:20]} is over 2**53 in magnitude; claims are ordinary numbers")
    return value


def _bounded_int(text: str) -> int:
    """An integer a float can hold exactly: a longer one would overflow ``float()`` in verify and render."""
    digits = text.lstrip("-")
    if len(digits) > 16 or int(digits) > MAX_INT:
        raise SubmissionError(f"integer {text[:20]}{'…' if len(text) > 20 else ''} is over 2**53; "
                              "seeds, sizes, counts and claims are ordinary numbers")
    return int(text)


def parse_submission(raw: bytes, path: Path) -> dict[str, Any]:
    """Parse and schema-check submission bytes; every failure is one ``SubmissionError`` line."""
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicate_keys, parse_constant=no_constant,
                          parse_float=_finite, parse_int=_bounded_int)
    except SubmissionError as exc:
        raise SubmissionError(f"{path}: {exc}") from None
    except RecursionError:
        raise SubmissionError(f"{path}: nested too deeply to be a submission") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError
        raise SubmissionError(f"{path}: not valid UTF-8 JSON ({str(exc).splitlines()[0][:120]})") from None
    try:
        validate(data)
    except SubmissionError as exc:
        raise SubmissionError(f"{path}: {exc}") from None
    if data["name"] != path.stem:
        raise SubmissionError(f"{path}: name {data['name']!r} differs from the file name; save it as {data['name']}.json "
                              f"or set name to {path.stem!r}")
    return data


def load_submission(path: Path) -> SubmissionFile:
    """Read a submission file once: the data and the digest come from the same bytes."""
    path = Path(path)
    if path.is_symlink():
        raise SubmissionError(f"{path}: a symbolic link; a submission is a plain file")
    try:
        info = path.stat()
        if path.is_dir():
            raise IsADirectoryError(str(path))
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            raise SubmissionError(f"{path}: not a regular file; a submission is a plain file")
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise SubmissionError(f"{path}: {size} bytes; a submission is at most {MAX_FILE_BYTES} bytes")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SubmissionError(f"{path}: a directory, expected a submission .json file") from None
    return SubmissionFile(path, parse_submission(raw, path), hashlib.sha256(raw).hexdigest())


def save_submission(sub: dict[str, Any], path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sub, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
