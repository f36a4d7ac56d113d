"""harness-gym: harness editing as a reinforcement-learning environment.

Importing the package registers the environment ids with Gymnasium: one per benchmark of
the ``harness_gym.benchmarks`` entry-point group (``harness_gym.Benchmark`` is the contract).
"""
from __future__ import annotations

__version__ = "0.1.0"

from harness_gym.benchmarks.api import Benchmark, BenchmarkSpec
from harness_gym.envs.registration import register_envs

register_envs()

__all__ = ["Benchmark", "BenchmarkSpec", "__version__", "register_envs"]
