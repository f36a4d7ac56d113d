"""Every env id is registered here, in one place, on import of ``harness_gym``.

One ``HarnessEdit-<display>-v0`` per registered benchmark (the ``harness_gym.benchmarks``
entry points: the three built-ins and any installed plugin) and one
``HarnessSelect-<display>-v0`` per benchmark with a ``select()`` feature table.
"""
from __future__ import annotations

import gymnasium as gym

# Text-action envs: observation = failure packet, action = patch text, reward = Δ_B.
ENV_IDS: dict[str, dict[str, str]] = {}
# Discrete patch-library wrappers with a Box packet feature vector (for stable-baselines3).
SELECT_ENV_IDS: dict[str, dict[str, str]] = {}

EDIT_ENTRY = "harness_gym.envs.harness_edit:HarnessEditEnv"
SELECT_ENTRY = "harness_gym.envs.select:HarnessSelectEnv"


def register_envs(refresh: bool = False) -> None:
    """Register the env ids of every benchmark found (``refresh``: look for new entry points again)."""
    from harness_gym.benchmarks import plugins

    for name, bench in plugins.discover(refresh=refresh).benchmarks.items():
        ENV_IDS.setdefault(bench.env_id(), {"benchmark": name})
        if bench.select() is not None:
            SELECT_ENV_IDS.setdefault(bench.select_env_id(), {"benchmark": name})
    for ids, entry in ((ENV_IDS, EDIT_ENTRY), (SELECT_ENV_IDS, SELECT_ENTRY)):
        for env_id, kwargs in ids.items():
            if env_id not in gym.registry:
                gym.register(id=env_id, entry_point=entry, kwargs=dict(kwargs))


def edit_env_id(benchmark: str) -> str:
    """The ``HarnessEdit-*`` id of ``benchmark``."""
    from harness_gym.benchmarks import plugins

    return plugins.get(benchmark).env_id()
