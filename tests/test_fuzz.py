"""Arbitrary text and bytes as actions: every registered env answers with a clear error or a valid patch.

One env per id, reset once and reused across examples (an invalid patch never rolls out,
so examples are cheap). Strategies mix raw noise with near-misses of each patch format,
which reach deeper into the parsers than pure noise does.
"""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_gym  # noqa: F401
from harness_gym.envs.registration import ENV_IDS

_ENVS: dict[str, Any] = {}

PREFIXES = [
    "", "{", '{"actions": [', "<think>x</think><patch>", "<patch>{", "--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1 @@\n",
    "--- /dev/null\n+++ b/hooks/01_on_init.py\n@@ -0,0 +1,2 @@\n+", "def on_init(ctx, nb):\n    return ",
    "def on_post_step(ctx, nb):\n    ", "```python\n", "diff --git a/config.json b/config.json\n",
]
actions = st.one_of(
    st.text(max_size=400),
    st.binary(max_size=400),
    st.builds(lambda p, t: p + t, st.sampled_from(PREFIXES), st.text(max_size=300)),
    st.builds(lambda p, b: p.encode() + b, st.sampled_from(PREFIXES), st.binary(max_size=200)),
)


def _env(env_id: str) -> Any:
    if env_id not in _ENVS:
        env = gym.make(env_id, batch_size=2)
        env.reset(seed=0)
        _ENVS[env_id] = env
    return _ENVS[env_id]


@pytest.fixture(scope="module", autouse=True)
def _close_envs() -> Any:
    yield
    for env in _ENVS.values():
        env.close()
    _ENVS.clear()


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(action=actions)
def test_any_action_gives_a_clear_error_or_a_valid_patch(env_id: str, action: Any) -> None:
    env = _env(env_id)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and math.isfinite(reward)
    assert truncated is False and isinstance(terminated, bool)
    if info["patch_valid"]:
        assert info["patch_error"] is None and isinstance(info["delta"], float)
    else:
        err = info["patch_error"]
        assert isinstance(err, str) and err.strip() and "\n" not in err and len(err) <= 300, repr(err)
        assert reward == env.unwrapped.config.invalid_patch_reward


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_env_still_scores_a_real_patch_after_fuzzing(env_id: str) -> None:
    env = _env(env_id)
    text = "def on_init(ctx, nb):\n    return None\n"
    _, reward, _, _, info = env.step(text)
    assert info["patch_valid"], info["patch_error"]
    assert reward == 0.0
