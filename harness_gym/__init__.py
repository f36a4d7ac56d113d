"""harness-gym: harness editing as a reinforcement-learning environment.

Importing the package registers the environment ids with Gymnasium.
"""
from __future__ import annotations

__version__ = "0.1.0"

from harness_gym.envs.registration import register_envs

register_envs()

__all__ = ["__version__", "register_envs"]
