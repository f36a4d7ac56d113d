"""harness-gym-calc: a unit-conversion agent as a harness-gym benchmark (entry point ``calc``:
``HarnessEdit-Calc-v0`` and ``HarnessSelect-Calc-v0``). Every part is light, so all import here."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_gym.benchmarks.api import Benchmark, BenchmarkSpec, PromptParts, SelectSpec, SimPolicy, TemplateRules
from harness_gym.errors import ConfigError
from harness_gym_calc import episode, packet, prompt, rules, sim, tasks, world


def world_factory(backend: str) -> Any:
    if backend != "local":
        raise ConfigError(f"backend={backend!r}: calc has one world backend, 'local'")
    return world.CalcWorld


class Calc(Benchmark):
    name = "calc"
    display = "Calc"

    def spec(self) -> BenchmarkSpec:
        return BenchmarkSpec("calc", lambda split, data_dir: tasks.generate_split(split), world_factory,
                             episode.run_episode, splits=tuple(tasks.SPLITS), harness_dir=Path(__file__).parent / "harness",
                             gold_strings=lambda batch: [t.gold for t in batch],  # answers a patch must not contain
                             protocol=episode.PROTOCOL)

    def build_packet(self, results: Any, *, batch_tag: str, batch_digest: str, harness: Any) -> Any:
        return packet.build_packet(results, batch_tag=batch_tag, batch_digest=batch_digest, harness=harness)

    def prompt(self) -> PromptParts:
        return prompt.PROMPT

    def sim(self) -> SimPolicy:
        return sim.respond

    def template(self) -> TemplateRules:
        return rules  # type: ignore[return-value] - a module with detect() and build_hooks()

    def select(self) -> SelectSpec:
        return SelectSpec(signatures=rules.SIGNATURES, signals=(("lookups", 5), ("calculations", 5)),
                          kinds=(("temperature", ("temperature",)), ("other", ())))
