"""What evaluation needs from each benchmark, behind one record per benchmark (``BenchmarkSpec``).

Benchmarks are found through the ``harness_gym.benchmarks`` entry points
(``harness_gym/benchmarks/plugins.py``); ``get_benchmark(name)`` is the spec of one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Awaitable, Callable, Mapping, Sequence

from harness_gym.errors import ConfigError
from harness_gym.harness.files import Harness
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.benchmarks.base import World

HARNESS_ROOT = Path(__file__).resolve().parents[1] / "benchmarks"


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to load tasks, build worlds, get the default harness and run one episode."""

    name: str
    load_tasks: Callable[[str, Path | None], list[Any]]
    # backend -> world factory; a factory with a ``close()`` holds resources the evaluator releases on close
    world_factory: Callable[[str], Callable[[], World]]
    run_episode: Callable[..., Awaitable[EpisodeResult]]
    splits: tuple[str, ...] = ("train", "valid", "test")
    default_backend: str = "local"
    # the default world backend when tasks come from the original files (``data_dir``); None: default_backend
    original_backend: str | None = None
    default_split: str = "test"
    # Gold strings of a batch's tasks (reference answers, reference solutions, distinctive
    # data values) that a patch must not contain (``harness/leakage.py``); None: none known.
    gold_strings: Callable[[Sequence[Any]], Sequence[str]] | None = None
    # The default harness folder (system_prompt.md, tools.json, config.json, hooks/); None: the
    # built-in layout, ``harness_gym/benchmarks/<name>/harness``.
    harness_dir: Path | None = None
    # The rules a harness is scored by (round/step limits, repeat limits, time limits, metric):
    # the episode loop reads its limits from here, never from the patchable config.json, and
    # a patch that changes one of these keys in config.json is a PatchError (harness/patch.py).
    protocol: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocol", MappingProxyType(dict(self.protocol)))

    def backend_for(self, data_dir: str | Path | None) -> str:
        """The default world backend for tasks from ``data_dir`` (None: the embedded tasks)."""
        return self.original_backend if data_dir is not None and self.original_backend else self.default_backend

    def default_harness(self) -> Harness:
        return Harness.from_dir(self.name, self.harness_dir or HARNESS_ROOT / self.name / "harness")


def known_benchmarks() -> list[str]:
    """Names of every registered benchmark, built-ins first."""
    from harness_gym.benchmarks import plugins

    return plugins.names()


def get_benchmark(name: str) -> BenchmarkSpec:
    """The spec of benchmark ``name`` (its ``Benchmark.spec()``); unknown: a one-line ``ConfigError``."""
    from harness_gym.benchmarks import plugins

    bench = plugins.get(name)
    spec = bench.spec()
    if not isinstance(spec, BenchmarkSpec) or spec.name != name:
        got = f"a BenchmarkSpec named {spec.name!r}" if isinstance(spec, BenchmarkSpec) else type(spec).__name__
        raise ConfigError(f"benchmark {name!r} ({plugins.discover().packages[name]}): spec() returned {got}, "
                          f"expected a BenchmarkSpec named {name!r}")
    return spec


def protocol_of(name: str) -> Mapping[str, Any]:
    """Benchmark ``name``'s protocol mapping (its spec's ``protocol``); unknown: a one-line ``ConfigError``."""
    return get_benchmark(name).protocol
