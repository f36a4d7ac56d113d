"""Δ_B on the simulated target: the spec's DBBench case-study patches and the baselines."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, make_policy
from harness_gym.evaluation.stats import mean_ci

PATCHES = sorted((Path(__file__).resolve().parents[1] / "examples" / "patches").glob("dbbench_*.txt"))
EPISODES = 20


def _deltas(env: gym.Env, policy: str | None = None, patch: str | None = None, episodes: int = EPISODES) -> list[float]:
    out = []
    for seed in range(episodes):
        obs, info = env.reset(seed=seed)
        text = patch or make_policy(policy).propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
        _, reward, _, _, sinfo = env.step(text)
        assert sinfo["patch_valid"], sinfo["patch_error"]
        assert not sinfo["incomplete"]
        out.append(reward)
    return out


# Examples the calibrated sim does not pay for, and why (what they did to the real DBBench target, stop 35):
# after a good ranking or aggregation result the stage guards inject a cast hint, right before the commit — the
# real agent copied its words or the value again into 9 of those 16 answers (−0.038 over twenty-six real batches).
NOT_PAID = {"dbbench_stage_guards"}


@pytest.mark.parametrize("path", PATCHES, ids=lambda p: p.stem)
def test_case_study_patches_on_the_embedded_default(path: Path) -> None:
    env = gym.make("HarnessEdit-DBBench-v0")
    try:
        ci = mean_ci(_deltas(env, patch=path.read_text(encoding="utf-8")))
    finally:
        env.close()
    if path.stem in NOT_PAID:
        assert ci.mean < 0, f"{path.name}: mean Δ_B {ci}"
    else:
        assert ci.lo > 0, f"{path.name}: mean Δ_B {ci}"


def test_case_study_patch_files_exist() -> None:
    assert len(PATCHES) >= 2


@pytest.mark.parametrize("data", ["embedded", "original"])
def test_template_beats_noop(data: str, request: pytest.FixtureRequest) -> None:
    kwargs = {} if data == "embedded" else {"data_dir": str(request.getfixturevalue("dbbench_data_dir"))}
    env = gym.make("HarnessEdit-DBBench-v0", **kwargs)
    try:
        template = _deltas(env, "template")
        noop = _deltas(env, "noop")
    finally:
        env.close()
    assert noop == [0.0] * EPISODES  # a patch that changes nothing changes nothing (paired seeds)
    ci = mean_ci([t - n for t, n in zip(template, noop)])
    if data == "embedded":
        assert ci.lo > 0, f"template − noop: {ci}"
    else:
        # the original SELECT failures are mostly ones no harness fixes (README), and the sim calibrated to the
        # real DBBench target follows few hints and pays for injected ones (stop 35): the template's help and its
        # hints' cost about cancel here (−0.025 [−0.055, +0.005]); it still fixes tasks and is not clearly harmful
        assert ci.hi > 0 and any(t > 0 for t in template), f"template − noop: {ci}"


@pytest.mark.mysql
def test_template_is_not_clearly_harmful_on_the_original_standard_split_on_mysql(dbbench_data_dir: Path, mysql_url: str) -> None:
    env = gym.make("HarnessEdit-DBBench-v0", data_dir=str(dbbench_data_dir), backend=mysql_url)
    try:
        deltas = _deltas(env, "template")
    finally:
        env.close()
    ci = mean_ci(deltas)  # as on SQLite above: help and the cost of its hints about cancel on the original split
    assert ci.hi > 0 and any(d > 0 for d in deltas), f"template on MariaDB: {ci}"
