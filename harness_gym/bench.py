"""``harness-gym bench``: every policy on the same env seeds, one table, JSON lines out.

Each (episode seed, policy) pair is one env reset (the baseline is cached, so every policy
sees the same batch and packet) and one step. Rows are appended as they finish; with
``resume`` finished rows are read back and not redone. Cost per row: the rollouts and
target-model calls the step ran (patched batch plus held-out batch; the shared baseline is
not charged to any policy, a cached rerun costs 0) and the patch's length in approximate
tokens (characters / 4, the packets' estimate).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from harness_gym.evaluation.stats import MeanCI, mean_ci


@dataclass
class BenchRows:
    rows: list[dict[str, Any]] = field(default_factory=list)

    def by_policy(self, env_id: str) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.rows:
            if r["env"] == env_id:
                out.setdefault(r["policy"], []).append(r)
        return out


def _read_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a torn last line from a crash is redone
    return rows


def run_bench(
    env_ids: list[str],
    policies: list[str],
    episodes: int,
    out: Path,
    *,
    resume: bool = False,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
) -> BenchRows:
    from baselines.base import PolicyInput, make_policy
    from tqdm import tqdm

    out.parent.mkdir(parents=True, exist_ok=True)
    done_rows = _read_rows(out) if resume else []
    # rewrite the file with the complete rows only: a torn last line from a crash is dropped
    out.write_text("".join(json.dumps(r) + "\n" for r in done_rows), encoding="utf-8")
    done = {(r["env"], r["policy"], r["seed"]) for r in done_rows}
    result = BenchRows(list(done_rows))
    made = {name: make_policy(name) for name in policies}
    total = len(env_ids) * episodes * len(policies)
    bar = tqdm(total=total, desc="bench", unit="patch", disable=not progress, initial=len(done))
    with out.open("a", encoding="utf-8") as fh:
        for env_id in env_ids:
            env = gym.make(env_id, **(env_kwargs or {}))
            benchmark = env.unwrapped.config.benchmark
            try:
                for e in range(episodes):
                    s = seed + e
                    for name, policy in made.items():
                        if (env_id, name, s) in done:
                            continue
                        obs, info = env.reset(seed=s)
                        patch = policy.propose([PolicyInput(obs, info["packet"], benchmark)], k=1)[0][0]
                        before = env.unwrapped.report()
                        _, reward, _, _, sinfo = env.step(patch)
                        after = env.unwrapped.report()
                        row = {
                            "env": env_id, "policy": name, "episode": e, "seed": s, "reward": reward,
                            "patch_valid": sinfo["patch_valid"], "patch_error": sinfo["patch_error"],
                            "baseline_score": sinfo["baseline_score"], "patched_score": sinfo["patched_score"],
                            "delta": sinfo["delta"], "heldout_delta": sinfo.get("heldout_delta"),
                            "metric": sinfo.get("metric"), "delta_score": sinfo.get("delta_score"),
                            "delta_success": sinfo.get("delta_success"), "baseline_success": sinfo.get("baseline_success"),
                            "patched_success": sinfo.get("patched_success"),
                            "incomplete": sinfo.get("incomplete", []), "batch_digest": info["batch_digest"],
                            "batch": info["batch"], "harness_version": sinfo["harness_version"], "patch": patch,
                            "cost": {"rollouts": after["episodes_run"] - before["episodes_run"],
                                     "target_calls": after["model_requests"] - before["model_requests"],
                                     "patch_tokens": approx_tokens(patch)},
                        }
                        fh.write(json.dumps(row) + "\n")
                        fh.flush()
                        result.rows.append(row)
                        bar.update(1)
            finally:
                env.close()
    bar.close()
    return result


def approx_tokens(text: str) -> int:
    """Approximate token count (characters / 4), the estimate the packets print."""
    return (len(text) + 3) // 4


def _cost(rs: list[dict[str, Any]], key: str) -> float:
    vals = [r["cost"][key] for r in rs if isinstance(r.get("cost"), dict)]
    return sum(vals) / len(vals) if vals else float("nan")


def _fmt_ci(ci: MeanCI) -> str:
    if ci.n == 0 or math.isnan(ci.mean):
        return "-"
    if ci.n == 1:
        return f"{ci.mean:+.3f}"
    return f"{ci.mean:+.3f} [{ci.lo:+.3f}, {ci.hi:+.3f}]"


def summarize(rows: BenchRows, env_id: str) -> list[dict[str, Any]]:
    table = []
    for name, rs in rows.by_policy(env_id).items():
        rewards = [r["reward"] for r in rs]
        valid = [r for r in rs if r["patch_valid"]]
        # baseline/patched in the unit Δ_B is measured in (rows written before the metric existed: score)
        unit = "success" if rs[0].get("metric") == "success" and rs[0].get("baseline_success") is not None else "score"
        held = [r["heldout_delta"] for r in rs if r.get("heldout_delta") is not None]
        # same-batch minus held-out Δ, paired per episode: the transductive overfitting gap
        gap = [r["delta"] - r["heldout_delta"] for r in rs if r.get("heldout_delta") is not None and r.get("delta") is not None]
        table.append({
            "policy": name, "n": len(rs), "delta": mean_ci(rewards), "valid_rate": len(valid) / len(rs) if rs else 0.0,
            "metric": unit,
            "baseline": sum(r[f"baseline_{unit}"] for r in rs) / len(rs),
            "patched": sum(r[f"patched_{unit}"] for r in valid) / len(valid) if valid else float("nan"),
            "heldout": mean_ci(held) if held else None,
            "gap": mean_ci(gap) if gap else None,
            "rollouts": _cost(rs, "rollouts"), "target_calls": _cost(rs, "target_calls"),
            "patch_tokens": _cost(rs, "patch_tokens"),
        })
    return table


def render_table(rows: BenchRows, env_id: str) -> str:
    table = summarize(rows, env_id)
    heads = ["policy", "n", "mean Δ_B [95% CI]", "valid", "baseline", "patched"]
    has_held = any(t["heldout"] is not None for t in table)
    if has_held:
        heads += ["held-out Δ [95% CI]", "same − held-out [95% CI]"]
    heads += ["rollouts/ep", "target calls/ep", "patch ≈tok"]
    num = lambda v, spec: "-" if math.isnan(v) else format(v, spec)  # noqa: E731
    lines = [[t["policy"], str(t["n"]), _fmt_ci(t["delta"]), f"{t['valid_rate']:.0%}", f"{t['baseline']:.3f}",
              "-" if math.isnan(t["patched"]) else f"{t['patched']:.3f}"]
             + ([_fmt_ci(t["heldout"]) if t["heldout"] else "-", _fmt_ci(t["gap"]) if t["gap"] else "-"] if has_held else [])
             + [num(t["rollouts"], ".1f"), num(t["target_calls"], ".0f"), num(t["patch_tokens"], ".0f")]
             for t in table]
    widths = [max(len(h), *(len(row[i]) for row in lines)) for i, h in enumerate(heads)]
    fmt = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    title = f"## {env_id}" + (" (Δ_B, baseline, patched: share solved)" if table and table[0]["metric"] == "success" else "")
    out = [title, fmt(heads), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [fmt(row) for row in lines]
    return "\n".join(out)


def save_plot(rows: BenchRows, env_ids: list[str], path: Path) -> Path | None:
    """Bar chart of mean Δ_B with 95% CIs per policy and env (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(env_ids), figsize=(5 * len(env_ids), 3.5), squeeze=False)
    for ax, env_id in zip(axes[0], env_ids):
        table = summarize(rows, env_id)
        names = [t["policy"] for t in table]
        means = [t["delta"].mean for t in table]
        errs = [[max(0.0, t["delta"].mean - t["delta"].lo) if t["delta"].n > 1 else 0 for t in table],
                [max(0.0, t["delta"].hi - t["delta"].mean) if t["delta"].n > 1 else 0 for t in table]]
        ax.bar(names, means, yerr=errs, capsize=4, color="#4C72B0")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(env_id)
        unit = " of success" if table and table[0]["metric"] == "success" else ""
        ax.set_ylabel(f"mean Δ_B{unit} (95% CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
