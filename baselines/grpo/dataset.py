"""Engineer RL/SFT rows from env resets on the TRAINING split only.

A row is ``{"prompt": [system, user], "benchmark", "batch_tag", "batch_seed", "task_ids",
"baseline_rewards"}`` (Harness-R1's RL row, flattened for ``datasets``): ``batch_seed``
reproduces the batch with ``env.reset(seed=batch_seed)``, ``task_ids``/``baseline_rewards``
(aligned lists) identify it and carry its cached baseline. Like Harness-R1, only batches
with at least one failure are kept by default. Validation and test tasks never enter:
the builder refuses an env on any split but ``train``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from baselines.frontier.prompt import engineer_messages
from baselines.grpo.config import TRAINING_SPLIT
from harness_gym.errors import ConfigError


def check_training_env(env: Any) -> Any:
    """The unwrapped env, after checking it draws from the training split."""
    u = env.unwrapped
    if u.split != TRAINING_SPLIT:
        raise ConfigError(f"engineer training data must come from split {TRAINING_SPLIT!r}, got split={u.split!r}: "
                          f"make the env with split={TRAINING_SPLIT!r} (validation/test tasks never enter SFT or RL data)")
    return u


def build_rows(env: Any, seeds: Iterable[int], *, prefill: bool = False, prompt_prefix: str | None = None,
               require_failure: bool = True, limit: int | None = None,
               count_tokens: Callable[[list[dict[str, str]]], int] | None = None, max_prompt_tokens: int | None = None,
               ) -> list[dict[str, Any]]:
    """One row per reset seed (batches without failures and over-long prompts skipped), up to ``limit`` rows."""
    u = check_training_env(env)
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        if limit is not None and len(rows) >= limit:
            break
        obs, info = env.reset(seed=int(seed))
        packet = info["packet"]
        rewards = [float(packet["baseline_rewards"][t]) for t in info["batch"]]
        if require_failure and all(r >= 1.0 for r in rewards):
            continue
        prompt = engineer_messages(obs, prefill=prefill, prefix=prompt_prefix)
        if count_tokens is not None and max_prompt_tokens is not None and count_tokens(prompt) > max_prompt_tokens:
            continue
        rows.append({"prompt": prompt, "benchmark": u.config.benchmark, "batch_tag": packet["batch_tag"],
                     "batch_seed": int(seed), "task_ids": list(info["batch"]), "baseline_rewards": rewards})
    return rows


def reset_to_row(env: Any, batch_seed: int, task_ids: list[str]) -> tuple[str, dict[str, Any]]:
    """Reset ``env`` to a row's batch and check it is the same batch (same task ids, in order)."""
    check_training_env(env)
    obs, info = env.reset(seed=int(batch_seed))
    if list(info["batch"]) != list(task_ids):
        raise ConfigError(f"env.reset(seed={batch_seed}) drew tasks {info['batch'][:3]}…, but the row was built from "
                          f"{list(task_ids)[:3]}…: build rows and reward with the same env settings (split, batch_size, data_dir)")
    return obs, info


def task_identities(env: Any, rows: list[dict[str, Any]]) -> set[str]:
    """Content identities (not just ids) of every task the rows were built from."""
    u = env.unwrapped
    return {u._by_id[t].identity() for row in rows for t in row["task_ids"]}
