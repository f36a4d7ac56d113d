"""Check a submission against its table's protocol, then rerun every patch and compare every claim.

Static checks first (no env): the table exists for (env id, target); every env kwarg equals
the protocol's; the sampling temperature is the protocol's; there are exactly
``episodes`` episodes and episode ``i`` ran on seed ``base_seed + i`` (so no duplicated,
skipped or hand-chosen seeds); every valid patch claims a held-out Δ where the table has a
held-out batch (render counts every episode there, an invalid patch at the env's invalid-patch
reward); the package version is a PEP 440 version no newer than the verifier's. Then, per
episode: ``reset(seed)`` — the env's own draw — must give exactly the submitted batch, batch
digest (task identities + sampling seeds) and packet hash; the patch is stepped (parsed,
policy-checked and run in the hook sandbox like any patch) and ``patch_valid``, ``reward``,
``baseline_score``, ``patched_score`` and ``heldout_delta`` must match within the protocol's
tolerance (0 for the sim: exactly). The first problem ends the check, as one line.

Verifier's held-out draw: the held-out batch above is the seed's public draw, so a submitter who
scored several patches per seed could submit the one with the best held-out Δ and every number
would reproduce. With ``heldout_seeds`` (``verify --record`` passes ``draw_heldout_seed``: the
OS's randomness), once every claim reproduced, each episode's patch is stepped again with
``reset(seed, options={"heldout_seed": h})`` — a held-out batch drawn from ``h`` alone, disjoint
from the batch and from the public held-out batch — and the verdict carries each ``h`` and the
held-out Δ at the table's metric (an invalid patch at the env's invalid-patch reward). The seeds
are drawn after the submission is fixed and revealed only in the record; ``recompute_heldout``
reruns them from a record, so an edited number is caught.

Version rule: a submission made with the verifier's own version that reproduces is
``reproduced``; one that claims another (older) version and reproduces is
``reproduced-with-other-version`` — the record and the table name the verifier's version,
so a forged version string is never silently taken as the one that produced the numbers.
"""
from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import harness_gym
from harness_gym.leaderboard.protocol import Protocol, table_for
from harness_gym.leaderboard.schema import SubmissionError, validate
from harness_gym.leaderboard.submission import CLAIM_FIELDS, _git_sha, env_sampling, make_env, packet_sha256
from harness_gym.sandbox.pool import address_fingerprint

REPRODUCED = "reproduced"
OTHER_VERSION = "reproduced-with-other-version"
REJECTED = "rejected"
HELDOUT_SEED_BOUND = 2 ** 53  # a verifier's held-out seed is below it: an integer every JSON reader holds exactly


def draw_heldout_seed() -> int:
    """One held-out seed nobody can know before it is drawn: 53 bits of the OS's randomness."""
    return secrets.randbelow(HELDOUT_SEED_BOUND)


@dataclass(frozen=True)
class HeldoutDraw:
    """The verifier's held-out result of one episode: the patch stepped again on the seed's batch with a
    held-out batch drawn from ``heldout_seed``; ``heldout_delta`` at the table's metric (an invalid patch:
    the env's invalid-patch reward)."""

    seed: int
    heldout_seed: int
    patch_valid: bool
    heldout_delta: float

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "heldout_seed": self.heldout_seed, "patch_valid": self.patch_valid,
                "heldout_delta": self.heldout_delta}


@dataclass(frozen=True)
class Verdict:
    outcome: str  # REPRODUCED, OTHER_VERSION or REJECTED
    episodes_checked: int
    message: str  # one line: "accepted: …" or "rejected: …"
    table: str = ""  # the table key, when known
    heldout: tuple[HeldoutDraw, ...] | None = None  # the verifier's held-out draws, one per episode, when made
    git_sha: str | None = None  # the verifier's commit when the rerun started (None: unknown or uncommitted changes)

    @property
    def accepted(self) -> bool:
        return self.outcome != REJECTED


def _fmt(v: Any) -> str:
    """A claimed or recomputed value for a one-line message: a string is quoted with ``repr``, which
    escapes every control, separator, format and lone surrogate character, so no submitted text can
    break the line, forge a second one or make printing and writing the record fail."""
    if isinstance(v, str):
        return repr(v[:16] + "…" if len(v) > 16 else v)
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v[:3]) + (", …]" if len(v) > 3 else "]")
    return "null" if v is None else repr(v)


def _differs(claimed: Any, recomputed: Any, tolerance: float) -> bool:
    if claimed is None or recomputed is None:
        return claimed is not recomputed
    if isinstance(claimed, bool) or isinstance(recomputed, bool):
        return claimed != recomputed
    if not (math.isfinite(float(claimed)) and math.isfinite(float(recomputed))):
        return True  # a NaN or infinite number never reproduces
    return abs(float(claimed) - float(recomputed)) > tolerance


def _version_problem(claimed: str) -> str | None:
    from packaging.version import InvalidVersion, Version

    try:
        theirs = Version(claimed)
    except InvalidVersion:
        return f"package.version {claimed!r} is not a PEP 440 version (e.g. {harness_gym.__version__})"
    if theirs > Version(harness_gym.__version__):
        return (f"package.version {claimed} is newer than the verifier's harness-gym {harness_gym.__version__}; "
                "verify with that version or newer")
    return None


def protocol_violation(sub: dict[str, Any]) -> str | None:
    """The first way ``sub`` (schema-valid) breaks its table's protocol, as one line; None if it keeps it."""
    try:
        p = table_for(sub["env"]["id"], sub["target"]["model"])
    except SubmissionError as exc:
        return str(exc)
    for key, want in p.env_kwargs().items():
        got = sub["env"]["kwargs"][key]
        if got != want or type(got) is not type(want):
            return f"env.kwargs.{key}: table {p.key} fixes {want!r}, the submission ran {got!r}"
    if float(sub["target"]["sampling"]["temperature"]) != p.temperature:
        return (f"target.sampling.temperature: table {p.key} fixes {p.temperature}, "
                f"the submission ran {sub['target']['sampling']['temperature']}")
    eps = sub["episodes"]
    seen: dict[int, int] = {}
    for i, ep in enumerate(eps[: p.episodes]):
        if ep["seed"] in seen:
            return (f"episode {i}: seed {ep['seed']} repeats episode {seen[ep['seed']]}'s; table {p.key} runs each of "
                    f"seeds {p.seeds[0]}–{p.seeds[-1]} once")
        seen[ep["seed"]] = i
        if ep["seed"] != p.base_seed + i:
            return (f"episode {i}: seed {ep['seed']}, but table {p.key}'s episode {i} runs seed {p.base_seed + i} "
                    f"(base seed {p.base_seed} + index)")
        if len(ep["batch"]) != p.batch_size:
            return f"episode {i}: batch of {len(ep['batch'])} tasks, table {p.key} runs batches of {p.batch_size}"
        if p.heldout_batch_size and ep["patch_valid"] and ep["claimed"]["heldout_delta"] is None:
            return (f"episode {i}: heldout_delta is null for a valid patch, but table {p.key} scores every valid patch "
                    f"on a held-out batch of {p.heldout_batch_size}; run `{p.bench_command()}`")
    if len(eps) != p.episodes:
        few = "too few" if len(eps) < p.episodes else "too many"
        return (f"{few} episodes: {len(eps)}, table {p.key} takes exactly {p.episodes} "
                f"(seeds {p.seeds[0]}–{p.seeds[-1]}; a fixed count leaves no choice of where to stop)")
    return _version_problem(sub["package"]["version"])


def verify_submission(
    sub: dict[str, Any],
    *,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    heldout_seeds: Callable[[], int] | None = None,
) -> Verdict:
    """Check ``sub`` against its protocol and rerun it (or its first ``limit`` episodes).

    ``heldout_seeds``: called once per episode, after every claim reproduced, for the seed of the
    verifier's own held-out draw (``draw_heldout_seed``; a test passes fixed ones); the accepted
    verdict then carries ``heldout``. Needs the full rerun and a table with a held-out batch. The verdict names the
    commit whose code reran it, read before the rerun (a record written an hour later must not name a checkout that
    moved in between)."""
    code = _git_sha()
    return replace(_verify(sub, limit=limit, progress=progress, heldout_seeds=heldout_seeds), git_sha=code)


def _verify(sub: dict[str, Any], *, limit: int | None, progress: Callable[[str], None] | None,
            heldout_seeds: Callable[[], int] | None) -> Verdict:
    if heldout_seeds is not None and limit is not None:
        raise ValueError("heldout_seeds needs the full rerun: the verifier's draws cover every episode; drop limit")
    validate(sub)
    problem = protocol_violation(sub)
    if problem:
        return Verdict(REJECTED, 0, f"rejected: {problem}")
    protocol = table_for(sub["env"]["id"], sub["target"]["model"])
    episodes = sub["episodes"][: limit or None]
    env = make_env(protocol)
    try:
        sampling = env_sampling(env)
        for key, want in sampling.items():
            if _differs(sub["target"]["sampling"][key], want, 0.0):
                return Verdict(REJECTED, 0, f"rejected: target.sampling.{key}: claimed {sub['target']['sampling'][key]!r}, "
                                            f"table {protocol.key}'s env runs {want!r}", protocol.key)
        for i, ep in enumerate(episodes):
            bad = _rerun_episode(env, protocol, i, ep)
            if bad:
                note = addresses_note(sub["package"].get("addresses"), "the submitter's machine")
                return Verdict(REJECTED, i, f"rejected: episode {i} (seed {ep['seed']}): {bad}{note}", protocol.key)
            if progress:
                progress(f"episode {i} (seed {ep['seed']}): ok (reward {ep['claimed']['reward']:+.3f})")
        draws = None
        if heldout_seeds is not None and protocol.heldout_batch_size:
            # drawn only now: the file is fixed and every claim reproduced; nothing drawn is shown before the record
            draws = tuple(heldout_step(env, ep["seed"], _checked_seed(heldout_seeds()), ep["patch"]) for ep in episodes)
            if progress:
                progress(f"verifier's held-out draws: {len(draws)} episodes, mean held-out Δ "
                         f"{sum(d.heldout_delta for d in draws) / len(draws):+.3f}")
    finally:
        env.close()
    how = "exactly" if protocol.tolerance == 0 else f"within {protocol.tolerance}"
    part = "" if len(episodes) == len(sub["episodes"]) else f" (first {len(episodes)} of {len(sub['episodes'])})"
    submitted = sub["package"]["version"]
    outcome, versions = REPRODUCED, ""
    if submitted != harness_gym.__version__:
        outcome = OTHER_VERSION
        versions = f" (submitted as harness-gym {submitted}, reproduced with {harness_gym.__version__})"
    return Verdict(outcome, len(episodes),
                   f"accepted: {sub['name']} on {protocol.key}: {len(episodes)} episodes{part} reproduce {how}{versions}",
                   protocol.key, draws)


def addresses_note(theirs: str | None, whose: str) -> str:
    """After a number that did not reproduce: whether the machine that made it saw other object addresses than this
    one (``address_fingerprint``), so a patch that reads addresses may be why; "" where they match or are unknown."""
    if theirs is None:
        return ""
    here = address_fingerprint()
    if here == theirs:
        return ""
    if here is None:
        return (f" (note: this machine randomizes object addresses and {whose} did not: a patch that reads addresses "
                "can score differently here; rerun where the sandbox has the fixed-addresses layer)")
    return (f" (note: hooks on {whose} saw other object addresses than here, fingerprint {theirs} against {here}: a "
            "patch that reads addresses can score differently on another kernel, libc or Python build)")


def _checked_seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < HELDOUT_SEED_BOUND:
        raise ValueError(f"held-out seed {_fmt(value)}: expected an integer in [0, 2**53) (draw_heldout_seed)")
    return value


def heldout_step(env: Any, seed: int, heldout_seed: int, patch: str) -> HeldoutDraw:
    """Step ``patch`` on ``seed``'s batch with the held-out batch drawn from ``heldout_seed``."""
    env.reset(seed=seed, options={"heldout_seed": heldout_seed})
    _, _, _, _, info = env.step(patch)  # parsed, policy-checked and sandboxed like any patch
    valid = bool(info["patch_valid"])
    delta = info["heldout_delta"] if valid else env.unwrapped.config.invalid_patch_reward
    return HeldoutDraw(int(seed), int(heldout_seed), valid, float(delta))


def _rerun_episode(env: Any, protocol: Protocol, i: int, ep: dict[str, Any]) -> str | None:
    """Reset on the episode's seed (the env draws the batch), step its patch, compare; the first mismatch or None."""
    obs, info = env.reset(seed=ep["seed"])
    if info["batch"] != ep["batch"]:
        first = next((j for j, (a, b) in enumerate(zip(ep["batch"], info["batch"])) if a != b), 0)
        return (f"batch: claimed {_fmt(ep['batch'])}, but the env draws {_fmt(info['batch'])} for seed {ep['seed']} "
                f"(first difference at position {first}); batches are not chosen, they are the seed's draw")
    if info["batch_digest"] != ep["batch_digest"]:
        return f"batch_digest: claimed {_fmt(ep['batch_digest'])}, recomputed {_fmt(info['batch_digest'])}"
    packet = packet_sha256(obs)
    if packet != ep["packet_sha256"]:
        return f"packet_sha256: claimed {_fmt(ep['packet_sha256'])}, recomputed {_fmt(packet)}"
    _, reward, _, _, sinfo = env.step(ep["patch"])  # parsed, policy-checked and sandboxed like any patch
    if sinfo["patch_valid"] != ep["patch_valid"]:
        return f"patch_valid: claimed {_fmt(ep['patch_valid'])}, recomputed {_fmt(sinfo['patch_valid'])}"
    recomputed = {"reward": float(reward), "baseline_score": sinfo["baseline_score"],
                  "patched_score": sinfo["patched_score"], "heldout_delta": sinfo.get("heldout_delta")}
    for field in CLAIM_FIELDS:
        if _differs(ep["claimed"][field], recomputed[field], protocol.tolerance):
            return f"{field}: claimed {_fmt(ep['claimed'][field])}, recomputed {_fmt(recomputed[field])}"
    return None


def recompute_heldout(sub: dict[str, Any], draws: Sequence[HeldoutDraw],
                      progress: Callable[[str], None] | None = None) -> str | None:
    """Rerun a record's held-out draws on ``sub`` (the file the record is of): the first draw whose
    ``patch_valid`` or held-out Δ differs from the recorded one beyond the table's tolerance, as one
    line, or None. Anyone can run it once a record reveals its seeds; a hand-edited number fails."""
    protocol = table_for(sub["env"]["id"], sub["target"]["model"])
    if [d.seed for d in draws] != [ep["seed"] for ep in sub["episodes"]]:
        return f"the record's draws are on seeds {_fmt([d.seed for d in draws])}, not one per episode of the file, in order"
    env = make_env(protocol)
    try:
        for i, (ep, d) in enumerate(zip(sub["episodes"], draws)):
            got = heldout_step(env, ep["seed"], d.heldout_seed, ep["patch"])
            where = f"episode {i} (seed {d.seed}, heldout_seed {d.heldout_seed})"
            if got.patch_valid != d.patch_valid:
                return f"{where}: patch_valid: recorded {_fmt(d.patch_valid)}, recomputed {_fmt(got.patch_valid)}"
            if _differs(d.heldout_delta, got.heldout_delta, protocol.tolerance):
                return f"{where}: heldout_delta: recorded {_fmt(d.heldout_delta)}, recomputed {_fmt(got.heldout_delta)}"
            if progress:
                progress(f"{where}: ok (held-out Δ {got.heldout_delta:+.3f})")
    finally:
        env.close()
    return None
