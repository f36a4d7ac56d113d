"""Build, read and write submissions; the env both ``submit`` and ``verify`` run.

A submission is one policy on one env. Each episode is named by its env seed and batch
task ids (``reset(seed=…, options={"task_ids": batch})`` reproduces the batch, the target
sampling seeds and the held-out batch), and carries the sha256 of the observation text
(the packet the policy read), the exact patch text and the claimed numbers.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness_gym.leaderboard.schema import FORMAT, SubmissionError, validate

CLAIM_FIELDS = ("reward", "baseline_score", "patched_score", "heldout_delta")
KWARG_FIELDS = ("batch_size", "heldout_batch_size", "split", "data_dir", "backend")


def packet_sha256(observation: str) -> str:
    return hashlib.sha256(observation.encode("utf-8")).hexdigest()


def env_version(env_id: str) -> int:
    m = re.search(r"-v(\d+)$", env_id)
    if not m:
        raise SubmissionError(f"env id {env_id!r}: expected a versioned id such as HarnessEdit-DBBench-v0")
    return int(m.group(1))


def make_env(sub_env: dict[str, Any], target: dict[str, Any]) -> Any:
    """``gym.make`` the env a submission ran on, with its kwargs, target and temperature."""
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers env ids

    env_id = sub_env["id"]
    if env_id not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("Harness"))
        raise SubmissionError(f"env {env_id!r} is not registered in this harness-gym version; known: {', '.join(known)}")
    kwargs = {k: v for k, v in sub_env["kwargs"].items() if v is not None}
    return gym.make(env_id, target=target["model"], temperature=float(target["sampling"]["temperature"]), **kwargs)


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


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


def build_submission(
    rows: Iterable[dict[str, Any]],
    *,
    name: str,
    policy: str,
    env_id: str | None = None,
    target: str = "sim",
    env_kwargs: dict[str, Any] | None = None,
    attempts: int = 1,
    description: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """A submission from ``harness-gym bench`` rows of one policy on one env.

    Rows carry the batch, patch and claimed numbers; the packet hash is taken from the row
    (``packet_sha256``) when present, else recomputed by resetting the env on the row's
    batch — which also checks that ``env_kwargs`` reproduce the bench run (batch digest).
    """
    rows = [r for r in rows if r.get("policy") == policy]
    envs = sorted({r["env"] for r in rows})
    if not rows:
        raise SubmissionError(f"no bench rows for policy {policy!r}")
    if env_id is None:
        if len(envs) > 1:
            raise SubmissionError(f"rows of policy {policy!r} cover {len(envs)} envs ({', '.join(envs)}); pick one with --env")
        env_id = envs[0]
    rows = sorted({r["seed"]: r for r in rows if r["env"] == env_id}.values(), key=lambda r: r["seed"])
    if not rows:
        raise SubmissionError(f"no bench rows for policy {policy!r} on {env_id!r}; rows cover: {', '.join(envs)}")
    sizes = {len(r["batch"]) for r in rows}
    if len(sizes) != 1:
        raise SubmissionError(f"rows mix batch sizes {sorted(sizes)}; a submission runs one env configuration")
    kw = {k: None for k in KWARG_FIELDS} | {"heldout_batch_size": 0} | dict(env_kwargs or {})
    kw["batch_size"] = sizes.pop()
    if any(r.get("heldout_delta") is not None for r in rows) and not kw["heldout_batch_size"]:
        raise SubmissionError("the rows have held-out deltas: pass the bench's --heldout-batch-size")
    unknown = set(kw) - set(KWARG_FIELDS)
    if unknown:
        raise SubmissionError(f"env kwargs {sorted(unknown)} are not recorded in submissions (allowed: {', '.join(KWARG_FIELDS)})")
    import harness_gym

    sub: dict[str, Any] = {
        "format": FORMAT, "name": name, "policy": policy,
        "env": {"id": env_id, "version": env_version(env_id), "kwargs": kw},
        "package": {"name": "harness-gym", "version": harness_gym.__version__, "git_sha": _git_sha()},
        "target": {"model": target, "revision": None, "sampling": {"temperature": 0.0}},
        "seeds": [int(r["seed"]) for r in rows], "attempts": int(attempts), "verified": False, "episodes": [],
    }
    if description:
        sub["description"] = description
    env = make_env(sub["env"], sub["target"])
    try:
        sampling = env.unwrapped.evaluator.sampling
        sub["target"]["sampling"] = {"temperature": float(sampling.temperature), "top_p": float(sampling.top_p),
                                     "max_tokens": int(sampling.max_tokens)}
        for r in rows:
            packet = r.get("packet_sha256")
            if packet is None:
                obs, info = env.reset(seed=int(r["seed"]), options={"task_ids": list(r["batch"])})
                if info["batch_digest"] != r["batch_digest"]:
                    raise SubmissionError(
                        f"bench row seed {r['seed']}: these env kwargs do not reproduce its batch (batch_digest differs); "
                        "pass the --split/--data-dir/--backend/--target the bench ran with")
                packet = packet_sha256(obs)
                if progress:
                    progress(f"seed {r['seed']}: packet {packet[:12]}")
            sub["episodes"].append({
                "seed": int(r["seed"]), "batch": list(r["batch"]), "batch_digest": r["batch_digest"],
                "packet_sha256": packet, "patch": r["patch"], "patch_valid": bool(r["patch_valid"]),
                "claimed": {k: r.get(k) for k in CLAIM_FIELDS},
            })
    finally:
        env.close()
    validate(sub)
    return sub


def load_submission(path: Path) -> dict[str, Any]:
    """Read and schema-check a submission; every failure is one ``SubmissionError`` line."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file") from None
    except ValueError as exc:
        raise SubmissionError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
    try:
        validate(data)
    except SubmissionError as exc:
        raise SubmissionError(f"{path}: {exc}") from None
    return data


def save_submission(sub: dict[str, Any], path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sub, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
