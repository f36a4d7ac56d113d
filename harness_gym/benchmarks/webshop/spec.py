"""WebShop's ``BenchmarkSpec``: generated or original catalogues, in-process or HTTP worlds.

``backend="local"`` (default) runs the world in this process; ``backend="http://host:port"``
talks to ``harness_gym.benchmarks.webshop.server`` (one session per episode).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.benchmarks.base import World


# The rules, not the harness (``BenchmarkSpec.protocol``): the episode loop reads its limits
# here; config.json keeps ``max_rounds`` for Harness-R1's file layout, equal to this value,
# and a patch changing it is rejected.
PROTOCOL: dict[str, Any] = {
    "max_rounds": 20,  # model turns per episode; hitting the limit scores 0
    "metric": "success rate: WebShop reward at buy >= 1.0 (the reward itself is recorded too)",
}

def spec() -> BenchmarkSpec:
    from harness_gym.benchmarks.webshop import episode as runtime
    from harness_gym.benchmarks.webshop.catalog import load_split

    def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
        return load_split(split, Path(data_dir) if data_dir else None)

    def world_factory(backend: str) -> Callable[[], World]:
        from harness_gym.benchmarks.webshop.client import world_factory as make

        return make(backend)

    return BenchmarkSpec("webshop", load_tasks, world_factory, runtime.run_episode, default_backend="local",
                         gold_strings=gold_strings, protocol=PROTOCOL)


def gold_strings(tasks: Sequence[Any]) -> list[str]:
    """What a WebShop patch must not contain: each goal's product id (ASIN) and product title.

    The instruction, its attributes and options are shown to the agent and are not gold."""
    out: list[str] = []
    for task in tasks:
        goal = task.goal
        out += [str(goal.get("asin", "")), str(goal.get("name", ""))]
    return [s for s in out if s.strip()]
