"""harness-gym-calc: a unit-conversion tool-use agent as a harness-gym benchmark.

Registered by this package's ``harness_gym.benchmarks`` entry point (``calc``), so after
``pip install examples/harness-gym-calc`` there are ``HarnessEdit-Calc-v0`` and
``HarnessSelect-Calc-v0`` with no change to harness-gym. Heavy parts load on first use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_gym.benchmarks.api import Benchmark, BenchmarkSpec, PromptParts, SelectSpec, SimPolicy, TemplateRules


class Calc(Benchmark):
    name = "calc"
    display = "Calc"

    def spec(self) -> BenchmarkSpec:
        from harness_gym_calc import episode, tasks, world

        def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
            return tasks.generate_split(split)

        def world_factory(backend: str) -> Any:
            if backend != "local":
                from harness_gym.errors import ConfigError

                raise ConfigError(f"backend={backend!r}: calc has one world backend, 'local'")
            return world.CalcWorld

        return BenchmarkSpec("calc", load_tasks, world_factory, episode.run_episode, splits=tuple(tasks.SPLITS),
                             gold_strings=lambda batch: [t.gold for t in batch],
                             harness_dir=Path(__file__).parent / "harness")

    def build_packet(self, results: Any, *, batch_tag: str, batch_digest: str, harness: Any) -> Any:
        from harness_gym_calc.packet import build_packet

        return build_packet(results, batch_tag=batch_tag, batch_digest=batch_digest, harness=harness)

    def prompt(self) -> PromptParts:
        from harness_gym_calc.prompt import PROMPT

        return PROMPT

    def sim(self) -> SimPolicy:
        from harness_gym_calc.sim import respond

        return respond

    def template(self) -> TemplateRules:
        from harness_gym_calc import rules

        return rules  # type: ignore[return-value] - a module with detect and build_hooks

    def select(self) -> SelectSpec:
        return SelectSpec(signatures=("no_lookup", "unrounded"), signals=(("lookups", 5), ("calculations", 5)),
                          kinds=(("temperature", ("temperature",)), ("other", ())))
