"""The GRPO reward: Δ_B from the env, one batched and cached ``evaluate_patches`` call per group.

TRL calls the reward function with every completion of a generation batch plus the dataset
columns (``batch_seed``, ``task_ids``, …) as lists. Completions are grouped by their batch;
for each group the env is reset to that batch (its baseline is cached, so this is cheap) and
all K candidates are scored in one call. Each call appends one JSON line to ``log_path``:
step, reward mean/std, validity rate, Δ over valid patches, and per-group rewards; with
``echo`` it also prints a one-line summary per call (the CPU run's per-step log).
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from baselines.grpo.dataset import check_training_env, reset_to_row


def completion_text(completion: Any) -> str:
    """TRL completion (a string, or a conversational ``[{"role": "assistant", "content": …}]``) → text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content") or "") for m in completion if isinstance(m, dict))
    return str(completion)


class EnvReward:
    """A TRL reward function backed by a HarnessEdit env on the training split."""

    __name__ = "harness_delta"

    def __init__(self, env: Any, log_path: str | Path | None = None, *, echo: bool = False) -> None:
        check_training_env(env)
        self.env = env
        self.log_path = Path(log_path) if log_path else None
        self.echo = echo
        self.calls = 0
        self.history: list[dict[str, Any]] = []

    def __call__(self, prompts: list[Any], completions: list[Any], batch_seed: list[int], task_ids: list[list[str]],
                 trainer_state: Any = None, log_metric: Any = None, **_: Any) -> list[float]:
        texts = [completion_text(c) for c in completions]
        groups: dict[tuple[int, tuple[str, ...]], list[int]] = {}
        for i, (seed, ids) in enumerate(zip(batch_seed, task_ids)):
            groups.setdefault((int(seed), tuple(ids)), []).append(i)
        rewards: list[float] = [0.0] * len(texts)
        valid: list[bool] = [False] * len(texts)
        per_group = []
        for (seed, group_ids), idx in groups.items():
            reset_to_row(self.env, seed, list(group_ids))
            results = self.env.unwrapped.evaluate_patches([texts[i] for i in idx])
            for i, res in zip(idx, results):
                rewards[i] = float(res["reward"])
                valid[i] = bool(res["patch_valid"])
            per_group.append({"batch_seed": seed, "rewards": [rewards[i] for i in idx],
                              "valid": [valid[i] for i in idx],
                              "errors": sorted({str(r["patch_error"])[:120] for r in results if not r["patch_valid"]})[:3]})
        deltas = [r for r, v in zip(rewards, valid) if v]
        row = {
            "call": self.calls,
            "step": int(getattr(trainer_state, "global_step", self.calls) or 0),
            "n": len(texts),
            "reward_mean": statistics.fmean(rewards) if rewards else 0.0,
            "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            "valid_rate": sum(valid) / len(valid) if valid else 0.0,
            "delta_mean_valid": statistics.fmean(deltas) if deltas else None,
            "delta_max": max(deltas) if deltas else None,
            "completion_chars_mean": statistics.fmean(len(t) for t in texts) if texts else 0.0,
            "groups": per_group,
            "unix_time": round(time.time(), 1),
        }
        self.calls += 1
        self.history.append(row)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
        if self.echo:
            print(summary_line(row), flush=True)
        if callable(log_metric):
            log_metric("valid_rate", row["valid_rate"])
            if deltas:
                log_metric("delta_valid", row["delta_mean_valid"])
        return rewards


def summary_line(row: dict[str, Any]) -> str:
    """One line per reward call: step, mean reward, valid rate, mean Δ of valid patches, group rewards."""
    delta = row["delta_mean_valid"]
    groups = " ".join("[" + ",".join(f"{r:+.2f}" for r in g["rewards"]) + "]" for g in row["groups"])
    return (f"[reward] step={row['step']} n={row['n']} reward_mean={row['reward_mean']:+.3f} "
            f"reward_std={row['reward_std']:.3f} valid_rate={row['valid_rate']:.2f} "
            f"delta_mean_valid={'n/a' if delta is None else f'{delta:+.3f}'} groups={groups}")
