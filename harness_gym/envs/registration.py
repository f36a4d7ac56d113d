"""Every env id is registered here, in one place, on import of ``harness_gym``."""
from __future__ import annotations

import gymnasium as gym

ENV_IDS = {"HarnessEdit-DBBench-v0": {"benchmark": "dbbench"},
          "HarnessEdit-ALFWorld-v0": {"benchmark": "alfworld"}}


def register_envs() -> None:
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="harness_gym.envs.harness_edit:HarnessEditEnv", kwargs=dict(kwargs))
