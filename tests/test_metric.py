"""The env's ``metric``: Δ score or Δ success (Harness-R1's delta_pass_rate), both always in ``info``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_gym.envs.config import EnvConfig, default_metric
from harness_gym.envs.harness_edit import HarnessEditEnv
from harness_gym.errors import ConfigError
from harness_gym.leaderboard.protocol import tables

ROOT = Path(__file__).resolve().parents[1]
GUARD = (ROOT / "examples" / "patches" / "webshop_buy_guard.txt").read_text(encoding="utf-8")


def test_defaults_follow_harness_r1() -> None:
    assert default_metric("webshop") == "success"
    assert default_metric("dbbench") == default_metric("alfworld") == "score"
    with pytest.raises(ConfigError, match="metric='pass'"):
        EnvConfig(benchmark="webshop", metric="pass")


def test_info_reports_both_and_the_reward_follows_the_metric() -> None:
    infos = {}
    for metric in ("score", "success", None):
        env = HarnessEditEnv(benchmark="webshop", batch_size=10, metric=metric)
        try:
            _, rinfo = env.reset(seed=3)
            _, reward, _, _, info = env.step(GUARD)
        finally:
            env.close()
        assert info["metric"] == rinfo["metric"] == (metric or "success")
        assert reward == info["delta"] == info["delta_" + (metric or "success")]
        rows = [r for r in info["per_task"]]
        solved = lambda x: 1.0 if x >= 1.0 else 0.0  # noqa: E731
        assert info["delta_success"] == pytest.approx(
            sum(solved(r["patched_reward"]) - solved(r["baseline_reward"]) for r in rows) / len(rows))
        assert info["delta_score"] == pytest.approx(sum(r["patched_reward"] - r["baseline_reward"] for r in rows) / len(rows))
        assert 0.0 <= info["baseline_success"] <= info["baseline_score"] + 1e-9
        infos[metric] = info
    assert infos["score"]["delta_score"] == infos["success"]["delta_score"]  # same rollouts, two readings


def test_dbbench_score_is_success() -> None:
    env = HarnessEditEnv(benchmark="dbbench", batch_size=10)
    try:
        env.reset(seed=0)
        out = env.evaluate_patches([(ROOT / "examples" / "patches" / "dbbench_stage_guards.txt").read_text()])[0]
    finally:
        env.close()
    assert out["reward"] == out["delta_score"] == out["delta_success"]


def test_leaderboard_tables_fix_the_env_default() -> None:
    for p in tables():
        bench = p.env_id.split("-")[1].lower()
        assert p.metric == default_metric(bench), p.key
    data = json.loads((ROOT / "leaderboards" / "protocol.json").read_text(encoding="utf-8"))
    assert {t["key"]: t["metric"] for t in data["tables"]}["HarnessEdit-WebShop-v0/sim"] == "success"


def test_bench_flag(tmp_path: Path) -> None:
    from harness_gym.cli import main

    out = tmp_path / "b.jsonl"
    assert main(["bench", "--env", "HarnessEdit-WebShop-v0", "--policy", "noop", "--episodes", "1", "--metric", "score",
                 "--out", str(out), "--no-progress", "--no-plot"]) == 0
    row = json.loads(out.read_text().splitlines()[0])
    assert row["metric"] == "score" and row["delta_score"] == row["reward"] == 0.0 and row["delta_success"] == 0.0
