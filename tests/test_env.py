"""The Gymnasium contract of every registered env id (no per-id test code needed)."""
from __future__ import annotations

import pickle

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, make_policy
from harness_gym.envs.registration import ENV_IDS
from harness_gym.errors import ConfigError

SMALL = {"batch_size": 4}


@pytest.fixture(params=sorted(ENV_IDS))
def env_id(request: pytest.FixtureRequest) -> str:
    return request.param


def _template_patch(env: gym.Env, obs: str, info: dict) -> str:
    return make_policy("template").propose([PolicyInput(obs, info["packet"], env.unwrapped.config.benchmark)])[0][0]


def test_check_env_passes(env_id: str) -> None:
    env = gym.make(env_id, **SMALL)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_same_seed_gives_byte_identical_packet_and_reward(env_id: str) -> None:
    a = gym.make(env_id, **SMALL)
    b = gym.make(env_id, **SMALL)
    try:
        obs_a, info_a = a.reset(seed=7)
        obs_b, info_b = b.reset(seed=7)
        assert obs_a == obs_b and info_a == info_b
        patch = _template_patch(a, obs_a, info_a)
        ra = a.step(patch)
        rb = b.step(patch)
        assert ra[0] == rb[0] and ra[1] == rb[1] and ra[4] == rb[4]
        obs_c, _ = a.reset(seed=8)
        assert obs_c != obs_a
    finally:
        a.close()
        b.close()


def test_invalid_patch_scores_below_noop_without_rollout(env_id: str) -> None:
    env = gym.make(env_id, **SMALL)
    try:
        obs, info = env.reset(seed=0)
        before = env.unwrapped.report()["episodes_run"]
        _, reward, terminated, _, sinfo = env.step("<think>x</think><patch>{not json</patch>")
        assert sinfo["patch_valid"] is False
        assert reward == env.unwrapped.config.invalid_patch_reward < 0
        assert "\n" not in sinfo["patch_error"] and sinfo["patch_error"]
        assert env.unwrapped.report()["episodes_run"] == before
        assert terminated
        env.reset(seed=0)
        noop = make_policy("noop").propose([PolicyInput(obs, info["packet"], env.unwrapped.config.benchmark)])[0][0]
        _, reward_noop, _, _, ninfo = env.step(noop)
        assert ninfo["patch_valid"] and reward_noop == 0.0 > reward
    finally:
        env.close()


def test_info_fields_and_cached_repeat(env_id: str) -> None:
    env = gym.make(env_id, **SMALL)
    try:
        obs, info = env.reset(seed=1)
        assert set(info) >= {"packet", "harness_version", "batch", "batch_digest", "baseline_score"}
        patch = _template_patch(env, obs, info)
        _, reward, _, _, sinfo = env.step(patch)
        for key in ("patch_valid", "patch_error", "baseline_score", "patched_score", "delta", "per_task", "harness_version"):
            assert key in sinfo
        assert sinfo["harness_version"] != info["harness_version"]
        assert len(sinfo["per_task"]) == 4
        assert {"task_id", "baseline_reward", "patched_reward", "baseline_status", "patched_status"} <= set(sinfo["per_task"][0])
        m = sinfo["metric"]  # WebShop: success (Harness-R1's delta_pass_rate), else score
        assert reward == pytest.approx(sinfo[f"patched_{m}"] - sinfo[f"baseline_{m}"])
        run = env.unwrapped.report()["episodes_run"]
        env.reset(seed=1)
        _, reward2, _, _, _ = env.step(patch)  # same patch, same batch: 0 rollouts
        assert reward2 == reward and env.unwrapped.report()["episodes_run"] == run
    finally:
        env.close()


def test_heldout_delta_uses_disjoint_tasks(env_id: str) -> None:
    env = gym.make(env_id, batch_size=4, heldout_batch_size=6)
    try:
        obs, info = env.reset(seed=3)
        held = {t.identity() for t in env.unwrapped._heldout}
        batch = {t.identity() for t in env.unwrapped._batch}
        assert len(held) == 6 and not held & batch
        _, _, _, _, sinfo = env.step(_template_patch(env, obs, info))
        assert isinstance(sinfo["heldout_delta"], float) and len(sinfo["heldout_ci"]) == 2
    finally:
        env.close()


def test_sequential_editing_rebases_on_each_valid_patch(env_id: str) -> None:
    env = gym.make(env_id, batch_size=4, max_edits=2)
    try:
        obs, info = env.reset(seed=2)
        patch = _template_patch(env, obs, info)
        obs2, _, terminated, _, s1 = env.step(patch)
        assert not terminated and s1["base_harness_version"] == info["harness_version"]
        noop = make_policy("noop").propose([PolicyInput(obs2, s1["packet"], env.unwrapped.config.benchmark)])[0][0]
        _, r2, terminated, _, s2 = env.step(noop)
        assert terminated and s2["base_harness_version"] == s1["harness_version"] and r2 == 0.0
    finally:
        env.close()


def test_evaluate_patches_scores_a_group_in_one_call(env_id: str) -> None:
    env = gym.make(env_id, **SMALL)
    try:
        obs, info = env.reset(seed=4)
        good = _template_patch(env, obs, info)
        out = env.unwrapped.evaluate_patches([good, "garbage", good])
        assert [o["patch_valid"] for o in out] == [True, False, True]
        assert out[0]["reward"] == out[2]["reward"]
        assert out[1]["reward"] == env.unwrapped.config.invalid_patch_reward
        _, reward, _, _, _ = env.step(good)
        assert reward == out[0]["reward"]
    finally:
        env.close()


def test_packet_observation_is_in_space_and_pickles(env_id: str) -> None:
    env = gym.make(env_id, **SMALL)
    try:
        obs, info = env.reset(seed=5)
        assert env.observation_space.contains(obs)
        assert "Observed no-harness rollout evidence:" in obs
        pickle.dumps(info)
    finally:
        env.close()


@pytest.mark.parametrize(
    "kwargs, fragment",
    [({"split": "dev"}, "split"), ({"batch_size": 0}, "batch_size"), ({"invalid_patch_reward": 0.5}, "invalid_patch_reward"),
     ({"target": "gpt:x"}, "unknown target"), ({"backend": "postgres://x"}, "backend"),
     ({"executor": "spark"}, "executor"), ({"sandbox_timeout_s": 0}, "sandbox_timeout_s"), ({"progress": "no"}, "progress"),
     ({"progress": 1}, "progress")],
)
def test_bad_kwargs_give_one_line_errors(kwargs: dict, fragment: str) -> None:
    with pytest.raises((ConfigError, ValueError)) as err:
        gym.make("HarnessEdit-DBBench-v0", **kwargs)
    assert fragment in str(err.value) and "\n" not in str(err.value)
