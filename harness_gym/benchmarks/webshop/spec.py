"""WebShop's ``BenchmarkSpec``: generated or original catalogues, in-process or HTTP worlds.

``backend="local"`` (default) runs the world in this process; ``backend="http://host:port"``
talks to ``harness_gym.targets.webshop.server`` (one session per episode).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.benchmarks.base import World


def spec() -> BenchmarkSpec:
    from harness_gym.benchmarks.webshop import episode as runtime
    from harness_gym.benchmarks.webshop.catalog import load_split

    def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
        return load_split(split, Path(data_dir) if data_dir else None)

    def world_factory(backend: str) -> Callable[[], World]:
        from harness_gym.benchmarks.webshop.client import world_factory as make

        return make(backend)

    return BenchmarkSpec("webshop", load_tasks, world_factory, runtime.run_episode, default_backend="local",
                         gold_strings=gold_strings)


def gold_strings(tasks: Sequence[Any]) -> list[str]:
    """What a WebShop patch must not contain: each goal's product id (ASIN) and product title.

    The instruction, its attributes and options are shown to the agent and are not gold."""
    out: list[str] = []
    for task in tasks:
        goal = task.goal
        out += [str(goal.get("asin", "")), str(goal.get("name", ""))]
    return [s for s in out if s.strip()]
