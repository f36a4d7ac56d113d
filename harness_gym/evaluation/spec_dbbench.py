"""DBBench's ``BenchmarkSpec``: generated or original tasks, SQLite or MySQL worlds."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.targets.base import World


def spec() -> BenchmarkSpec:
    from harness_gym.runtime import dbbench as runtime
    from harness_gym.targets.dbbench import generator, loader
    from harness_gym.targets.dbbench.db import open_database
    from harness_gym.targets.dbbench.world import DBBenchWorld

    def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
        if data_dir is None:
            return generator.generate_split(split)
        return loader.load_split(split, Path(data_dir))

    def world_factory(backend: str) -> Callable[[], World]:
        database = open_database(backend)
        return lambda: DBBenchWorld(database)

    return BenchmarkSpec("dbbench", load_tasks, world_factory, runtime.run_episode, default_backend="sqlite")
