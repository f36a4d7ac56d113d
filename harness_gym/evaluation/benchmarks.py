"""What evaluation needs from each target, behind one record per benchmark."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from harness_gym.errors import ConfigError
from harness_gym.harness.files import Harness
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.targets.base import World

HARNESS_ROOT = Path(__file__).resolve().parents[1] / "targets"


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to load tasks, build worlds, get the default harness and run one episode."""

    name: str
    load_tasks: Callable[[str, Path | None], list[Any]]
    world_factory: Callable[[str], Callable[[], World]]
    run_episode: Callable[..., Awaitable[EpisodeResult]]
    splits: tuple[str, ...] = ("train", "valid", "test")

    def default_harness(self) -> Harness:
        return Harness.from_dir(self.name, HARNESS_ROOT / self.name / "harness")


def _dbbench() -> BenchmarkSpec:
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

    return BenchmarkSpec("dbbench", load_tasks, world_factory, runtime.run_episode)


_SPECS: dict[str, Callable[[], BenchmarkSpec]] = {"dbbench": _dbbench}


def get_benchmark(name: str) -> BenchmarkSpec:
    if name not in _SPECS:
        raise ConfigError(f"unknown benchmark {name!r}: expected one of {sorted(_SPECS)}")
    return _SPECS[name]()
