"""HarnessSelectEnv (Discrete over a patch library, Box packet features) and the PPO selector."""
from __future__ import annotations

import importlib.util
import os

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from harness_gym.envs.select import (
    FEATURES,
    N_FEATURES,
    HarnessSelectEnv,
    default_library,
    packet_features,
)
from harness_gym.errors import ConfigError

ARMS = ("noop", "template", "co-harness", "template:numeric_text")


def _small_library():
    lib = {e.name: e for e in default_library("dbbench")}
    return [lib[n] for n in ARMS]


def test_default_library_has_every_kind_of_arm():
    names = [e.name for e in default_library("dbbench")]
    for n in ("noop", "self-refine", "template", "co-harness", "template:commit_before_sql",
              "example:dbbench_batch022", "example:dbbench_stage_guards"):
        assert n in names
    assert len(names) == len(set(names))


def test_registered_id_passes_check_env_and_features_are_deterministic():
    import harness_gym  # noqa: F401 - registers every id, HarnessSelect-DBBench-v0 included

    env = gym.make("HarnessSelect-DBBench-v0", library=_small_library(), batch_size=5, seed_pool=4)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        a, _ = env.reset(seed=3)
        b, _ = env.reset(seed=3)
        assert a.shape == (N_FEATURES,) == (len(FEATURES),) and a.dtype == np.float32
        assert np.array_equal(a, b) and env.observation_space.contains(a)
        obs, reward, terminated, truncated, info = env.step(1)
        assert terminated and not truncated and info["candidate"] == "template" and info["patch_valid"]
        with pytest.raises(ValueError, match="expected an int"):
            env.step(len(ARMS))
    finally:
        env.close()


def test_features_read_signatures_from_the_packet():
    packet = {"benchmark": "dbbench", "batch_size": 10, "baseline_pass": 6, "failures": [
        {"task_id": "t", "index": 0, "status": "completed", "reward": 0.0, "turns": 1, "task_type": "other",
         "messages": ['ASSISTANT_TOOL commit_final_answer: {"answers": ["x"]}'], "signals": {"commits": 1}}]}
    f = dict(zip(FEATURES, packet_features(packet)))
    assert f["pass_rate"] == pytest.approx(0.6) and f["sig:commit_before_sql"] == 1.0
    assert f["cat:middleware_mismatch"] == 1.0 and f["sig:identifier_error"] == 0.0


def test_select_env_rejects_sequential_editing():
    with pytest.raises(ConfigError, match="single-step"):
        HarnessSelectEnv(max_edits=2)


def test_ppo_selector_trains_and_is_usable_as_a_policy(tmp_path, monkeypatch):
    if importlib.util.find_spec("stable_baselines3") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but stable-baselines3 is not installed (pip install stable-baselines3)")
        pytest.skip("needs stable-baselines3 (pip install 'torch==2.13.0' stable-baselines3)")
    import harness_gym.envs.select as select_mod
    from baselines.base import PolicyInput
    from baselines.sb3_select.policy import SB3SelectPolicy
    from baselines.sb3_select.train import SelectTrainConfig, meta_path, train_selector

    monkeypatch.setattr(select_mod, "default_library", lambda benchmark: _small_library())
    cfg = SelectTrainConfig(timesteps=192, seed_pool=4, batch_size=5, n_steps=64)
    model, log = train_selector(cfg, tmp_path / "sel.zip")
    assert [row["timesteps"] for row in log] == [64, 128, 192]
    assert meta_path(tmp_path / "sel.zip").exists()
    # the learned choice beats noop's 0 on the training batches
    assert log[-1]["mean_reward"] > 0
    pol = SB3SelectPolicy(str(tmp_path / "sel.zip"))
    env = HarnessSelectEnv(library=_small_library(), batch_size=5)
    try:
        env.reset(seed=0)
        text, packet = env._text, env._packet
        patch = pol.propose([PolicyInput(text, packet, "dbbench")])[0][0]
        assert pol.last_choice in ARMS
        _, _, _, _, info = env.edit.step(patch)
        assert info["patch_valid"]
    finally:
        env.close()
    with pytest.raises(ConfigError, match="not found"):
        SB3SelectPolicy(str(tmp_path / "missing.zip"))
