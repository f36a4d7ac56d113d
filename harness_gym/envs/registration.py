"""Every env id is registered here, in one place, on import of ``harness_gym``."""
from __future__ import annotations

import gymnasium as gym

# Text-action envs: observation = failure packet, action = patch text, reward = Δ_B.
ENV_IDS = {
    "HarnessEdit-DBBench-v0": {"benchmark": "dbbench"},
    "HarnessEdit-WebShop-v0": {"benchmark": "webshop"},
    "HarnessEdit-ALFWorld-v0": {"benchmark": "alfworld"},
}
# Discrete patch-library wrappers with a Box packet feature vector (for stable-baselines3).
SELECT_ENV_IDS = {
    "HarnessSelect-DBBench-v0": {"benchmark": "dbbench"},
    "HarnessSelect-WebShop-v0": {"benchmark": "webshop"},
    "HarnessSelect-ALFWorld-v0": {"benchmark": "alfworld"},
}


def register_envs() -> None:
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="harness_gym.envs.harness_edit:HarnessEditEnv", kwargs=dict(kwargs))
    for env_id, kwargs in SELECT_ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="harness_gym.envs.select:HarnessSelectEnv", kwargs=dict(kwargs))
