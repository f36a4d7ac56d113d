"""Rerun a submission's patches on the same task identities and compare every claim.

Per episode, in order: the batch must exist in the split, the batch digest (task
identities + target sampling seeds) and the packet hash must match, then the patch is
stepped and ``patch_valid``, ``reward``, ``baseline_score``, ``patched_score`` and
``heldout_delta`` are compared — exactly by default (the sim target is deterministic),
within ``tolerance`` for real models. The first mismatch ends the check. An accepted
submission made with another package version says so in its verdict (the rerun decides).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import harness_gym
from harness_gym.leaderboard.schema import SubmissionError, validate
from harness_gym.leaderboard.submission import CLAIM_FIELDS, make_env, packet_sha256


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    episodes_checked: int
    message: str  # one line: "accepted: …" or the first mismatch


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return v[:16] + "…" if len(v) > 16 else v
    return "null" if v is None else repr(v)


def _differs(claimed: Any, recomputed: Any, tolerance: float) -> bool:
    if claimed is None or recomputed is None:
        return claimed is not recomputed
    if isinstance(claimed, bool) or isinstance(recomputed, bool):
        return claimed != recomputed
    if math.isnan(float(claimed)) or math.isnan(float(recomputed)):
        return not (math.isnan(float(claimed)) and math.isnan(float(recomputed)))
    return abs(float(claimed) - float(recomputed)) > tolerance


def verify_submission(
    sub: dict[str, Any],
    *,
    tolerance: float = 0.0,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Rerun ``sub`` (or its first ``limit`` episodes) and return the verdict."""
    if tolerance < 0:
        raise SubmissionError(f"tolerance={tolerance}: expected >= 0 (0 = exact, for the deterministic sim target)")
    validate(sub)
    episodes = sub["episodes"][: limit or None]
    seeds = [e["seed"] for e in sub["episodes"]]
    if sorted(seeds) != sorted(sub["seeds"]):
        return Verdict(False, 0, f"rejected: seeds {sub['seeds']} do not match the episodes' seeds {seeds}")
    env = make_env(sub["env"], sub["target"])
    try:
        for i, ep in enumerate(episodes):
            where = f"episode {i} (seed {ep['seed']})"

            def bad(field: str, claimed: Any, recomputed: Any, _where: str = where, _i: int = i) -> Verdict:
                return Verdict(False, _i, f"rejected: {_where}: {field}: claimed {_fmt(claimed)}, recomputed {_fmt(recomputed)}")

            try:
                obs, info = env.reset(seed=ep["seed"], options={"task_ids": list(ep["batch"])})
            except ValueError as exc:
                missing = [t for t in ep["batch"] if t not in env.unwrapped._by_id]
                return bad("batch", missing[0] if missing else ep["batch"], str(exc).split(":")[0] if not missing else "not in split")
            if info["batch_digest"] != ep["batch_digest"]:
                return bad("batch_digest", ep["batch_digest"], info["batch_digest"])
            packet = packet_sha256(obs)
            if packet != ep["packet_sha256"]:
                return bad("packet_sha256", ep["packet_sha256"], packet)
            _, reward, _, _, sinfo = env.step(ep["patch"])
            if sinfo["patch_valid"] != ep["patch_valid"]:
                return bad("patch_valid", ep["patch_valid"], sinfo["patch_valid"])
            recomputed = {"reward": float(reward), "baseline_score": sinfo["baseline_score"],
                          "patched_score": sinfo["patched_score"], "heldout_delta": sinfo.get("heldout_delta")}
            for field in CLAIM_FIELDS:
                if _differs(ep["claimed"][field], recomputed[field], tolerance):
                    return bad(field, ep["claimed"][field], recomputed[field])
            if progress:
                progress(f"{where}: ok (reward {reward:+.3f})")
    finally:
        env.close()
    how = "exactly" if tolerance == 0 else f"within {tolerance}"
    part = "" if len(episodes) == len(sub["episodes"]) else f" (first {len(episodes)} of {len(sub['episodes'])})"
    submitted = str(sub.get("package", {}).get("version", "?"))
    versions = "" if submitted == harness_gym.__version__ else f" (submitted with harness-gym {submitted}, verified with {harness_gym.__version__})"
    return Verdict(True, len(episodes), f"accepted: {sub['name']}: {len(episodes)} episodes{part} reproduce {how}{versions}")
