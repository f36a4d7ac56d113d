"""``run_co_harness``: the Co-Harness loop on the sequential env, with acceptance and rollback.

Per round: a fresh batch B (and a disjoint held-out batch H) is drawn with the registry's
head as the base harness. Versions accepted in the previous round are re-checked first on
B ∪ H against their parents; the first that regresses (Δ < 0) is rolled back, with every
version after it. Then up to ``iterations_per_round`` critic iterations: attribute the
failures of the current packet, propose ranked local diffs, score all of them on B in one
cached call (δ_in, ``evaluate_patches``), score them on H (δ_out), accept the best with
δ_in > 0 and δ_out ≥ 0 (and complete evidence) by stepping the env with it, so it becomes
the new base, and record every candidate's decision in the registry. Then, for an ``hf:``
target, the alignment phase: trajectories under the improved harness → SFT → the next
round's target is the new weights. A target without weights (``sim``) skips it.

Env internals used (``HarnessEditEnv``; documented here because they are not public API):
``default_harness`` (the base ``reset`` starts from: set to the registry head before each
round), ``_heldout``/``_heldout_seeds`` (the held-out batch ``reset`` drew, disjoint from
B) and ``evaluator`` (to score a candidate on H without making it the base).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from baselines.co_harness.critic import HarnessCritic, category_counts, make_critic
from baselines.co_harness.propose import propose_candidates
from harness_gym.harness.files import Harness
from harness_gym.harness.registry import ACCEPTED, REJECTED, HarnessRegistry


@dataclass
class CoHarnessResult:
    registry: HarnessRegistry
    log: list[dict[str, Any]] = field(default_factory=list)
    target: str = "sim"

    @property
    def head(self) -> Harness:
        return self.registry.harness()


def _score_delta(env: gym.Env, base: Harness, cand: Harness, tasks: list[Any], seeds: list[int]) -> tuple[float, list[dict[str, Any]], list[str]]:
    """Δ mean score of ``cand`` over ``base`` (the env's comparison: environment errors the patch caused count)."""
    _, [(_, (deltas, per_task, incomplete))] = env.unwrapped.compare(base, [cand], tasks, seeds)
    return deltas["score"], per_task, incomplete


def heldout_delta(env: gym.Env, base: Harness, cand: Harness) -> tuple[float, list[dict[str, Any]], list[str]]:
    """Δ of ``cand`` over ``base`` on the env's held-out batch (no state change)."""
    u = env.unwrapped
    if not u._heldout:
        raise ValueError("the env has no held-out batch: create it with heldout_batch_size > 0")
    return _score_delta(env, base, cand, list(u._heldout), list(u._heldout_seeds))


def fresh_delta(env: gym.Env, base: Harness, cand: Harness) -> float:
    """Δ of ``cand`` over ``base`` on the current batch and held-out batch together."""
    u = env.unwrapped
    return _score_delta(env, base, cand, list(u._batch) + list(u._heldout), list(u._seeds) + list(u._heldout_seeds))[0]


def run_co_harness(
    env_id: str = "HarnessEdit-DBBench-v0",
    rounds: int = 2,
    iterations_per_round: int = 5,
    *,
    target: str = "sim",
    critic: str | HarnessCritic = "rule",
    seed: int = 0,
    heldout_batch_size: int = 10,
    max_candidates: int = 6,
    registry_path: str | Path | None = None,
    sft: Any = None,
    env_kwargs: dict[str, Any] | None = None,
    log: Callable[[str], None] | None = print,
) -> CoHarnessResult:
    """Run ``rounds`` × (rollback check, ``iterations_per_round`` critic iterations, alignment)."""
    if rounds < 1 or iterations_per_round < 1 or heldout_batch_size < 1:
        raise ValueError(f"rounds={rounds}, iterations_per_round={iterations_per_round}, heldout_batch_size="
                         f"{heldout_batch_size}: each must be >= 1 (δ_out needs a held-out batch)")
    the_critic = make_critic(critic)
    registry = HarnessRegistry(registry_path)
    result = CoHarnessResult(registry, target=target)
    say = log or (lambda s: None)

    def emit(row: dict[str, Any], line: str) -> None:
        result.log.append(row)
        say(line)

    env = _make_env(env_id, target, heldout_batch_size, iterations_per_round, env_kwargs)
    try:
        registry.add_root(env.unwrapped.default_harness)
        previous_round: list[str] = []
        for r in range(rounds):
            env.unwrapped.default_harness = registry.harness()
            _, info = env.reset(seed=seed + r)
            if previous_round:
                _, info = _rollback_check(env, registry, previous_round, seed + r, emit, r)
            emit({"round": r, "event": "start", "head": registry.head, "baseline": info["baseline_score"]},
                 f"round {r}: head {registry.head} batch baseline {info['baseline_score']:.3f}")
            previous_round = []
            packet, tried = info["packet"], set()
            for it in range(iterations_per_round):
                base = env.unwrapped._base
                atts = the_critic.attribute(packet)
                cands = [c for c in propose_candidates(base, atts, max_candidates) if c.harness.version not in tried]
                tried.update(c.harness.version for c in cands)
                if not cands:
                    emit({"round": r, "iteration": it, "event": "stop", "base": base.version,
                          "attributions": dict(category_counts(atts))},
                         f"  iter {it}: no new candidate for {dict(category_counts(atts))}; round ends")
                    break
                scored = _score(env, base, cands)
                accepted = None
                for c, ev in sorted(zip(cands, scored), key=lambda t: -t[1]["delta_in"]):
                    ok = ev["complete"] and ev["delta_in"] > 0 and ev["delta_out"] >= 0 and accepted is None
                    ev["reason"] = ("accepted" if ok else "incomplete evidence" if not ev["complete"]
                                    else "δ_in <= 0" if ev["delta_in"] <= 0 else "δ_out < 0" if ev["delta_out"] < 0
                                    else "a better candidate was accepted")
                    if ok:
                        accepted = c
                        continue
                    registry.record(c.harness, base.version, c.diff, REJECTED, ev, category=c.category,
                                    description=c.description)
                row = {"round": r, "iteration": it, "event": "iteration", "base": base.version,
                       "attributions": dict(category_counts(atts)),
                       "candidates": [{"version": c.harness.version, "category": c.category, "key": c.key,
                                       "delta_in": ev["delta_in"], "delta_out": ev["delta_out"], "reason": ev["reason"]}
                                      for c, ev in zip(cands, scored)],
                       "accepted": accepted.harness.version if accepted else None}
                lines = [f"  iter {it}: base {base.version} attributions {row['attributions']}"]
                lines += [f"    {d['category']}/{d['key']} -> {d['version']}: δ_in={d['delta_in']:+.3f} "
                          f"δ_out={d['delta_out']:+.3f} {d['reason']}" for d in row["candidates"]]
                if accepted is not None:
                    ev = scored[cands.index(accepted)]
                    _, _, _, _, sinfo = env.step(accepted.diff)
                    assert sinfo["harness_version"] == accepted.harness.version
                    registry.record(accepted.harness, base.version, accepted.diff, ACCEPTED, ev,
                                    category=accepted.category, description=accepted.description)
                    previous_round.append(accepted.harness.version)
                    packet = sinfo["packet"]
                emit(row, "\n".join(lines))
            _align(env, registry, result, r, sft, emit)
            if result.target != target and r + 1 < rounds:
                env.close()
                env = _make_env(env_id, result.target, heldout_batch_size, iterations_per_round, env_kwargs)
                target = result.target
    finally:
        env.close()
    return result


def _make_env(env_id: str, target: str, heldout: int, iterations: int, kwargs: dict[str, Any] | None) -> gym.Env:
    return gym.make(env_id, target=target, heldout_batch_size=heldout, max_edits=iterations + 1, **(kwargs or {}))


def _score(env: gym.Env, base: Harness, cands: list[Any]) -> list[dict[str, Any]]:
    """δ_in on B via ``evaluate_patches`` (one concurrent, cached call), δ_out on H."""
    inside = env.unwrapped.evaluate_patches([c.diff for c in cands])
    out = []
    for c, ins in zip(cands, inside):
        if not ins["patch_valid"]:
            out.append({"delta_in": float(ins["reward"]), "delta_out": 0.0, "complete": False, "error": ins["patch_error"]})
            continue
        d_out, per_out, inc_out = heldout_delta(env, base, c.harness)
        per_in = ins["per_task"]
        out.append({  # δ_in in mean score like δ_out, whatever the env's metric (WebShop's default is success)
            "delta_in": float(ins.get("delta_score", ins["reward"])), "delta_out": float(d_out),
            "fixed_in": sum(1 for t in per_in if t["patched_reward"] > t["baseline_reward"]),
            "broken_in": sum(1 for t in per_in if t["patched_reward"] < t["baseline_reward"]),
            "per_task_in": per_in, "per_task_out": per_out,
            "complete": not ins["incomplete"] and not inc_out,
        })
    return out


def _rollback_check(env: gym.Env, registry: HarnessRegistry, versions: list[str], seed: int,
                    emit: Callable[[dict[str, Any], str], None], r: int) -> tuple[str, dict[str, Any]]:
    """Re-check last round's accepted versions on this round's fresh tasks; roll back the first regression."""
    obs, info = None, None
    for v in versions:
        rec = registry.get(v)
        d = fresh_delta(env, registry.harness(rec.parent), rec.harness())
        emit({"round": r, "event": "recheck", "version": v, "parent": rec.parent, "delta_fresh": d},
             f"round {r}: recheck {v} vs {rec.parent} on fresh B∪H: Δ={d:+.3f}")
        if d < 0:
            registry.rollback(rec.parent, reason=f"Δ={d:+.3f} on round {r}'s fresh batch and held-out set")
            emit({"round": r, "event": "rollback", "version": v, "to": rec.parent, "delta_fresh": d},
                 f"round {r}: ROLLED BACK {v} (and later versions) to {rec.parent}")
            env.unwrapped.default_harness = registry.harness()
            obs, info = env.reset(seed=seed)
            break
    if info is None:
        obs, info = env.reset(seed=seed)
    return obs, info


def _align(env: gym.Env, registry: HarnessRegistry, result: CoHarnessResult, r: int, sft: Any,
           emit: Callable[[dict[str, Any], str], None]) -> None:
    target = result.target
    if not target.startswith("hf:"):
        emit({"round": r, "event": "alignment", "skipped": True,
              "reason": f"target {target!r} has no weights to fine-tune (alignment needs an 'hf:' target)"},
             f"round {r}: alignment skipped: target {target!r} has no weights (needs an 'hf:' target)")
        return
    from baselines.co_harness.align import SFTConfig, collect_trajectories, sft_step

    cfg = sft or SFTConfig()
    rows = collect_trajectories(env, registry.harness(), cfg, seed=r)
    new_target = sft_step(target, rows, cfg, round_index=r)
    emit({"round": r, "event": "alignment", "skipped": False, "examples": len(rows), "target": new_target},
         f"round {r}: SFT on {len(rows)} successful trajectories -> {new_target}")
    result.target = new_target
