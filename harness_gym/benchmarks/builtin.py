"""The three built-in benchmarks behind the public contract: one ``Benchmark`` whose parts are modules.

A built-in benchmark ``b`` keeps each part in its own module of ``harness_gym/benchmarks/b/``
(``spec.spec()``, ``packet.build_packet``, ``prompt.PROMPT``, ``sim.respond``, ``data``)
and its template rules in ``baselines/template_b.py``; the modules are imported on first
use, so registering the benchmark imports none of them.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from harness_gym.benchmarks.api import Benchmark, BenchmarkSpec, DataCommands, SimPolicy, TemplateRules

if TYPE_CHECKING:
    from harness_gym.packets.model import HarnessView, Packet
    from harness_gym.packets.registry import PromptParts
    from harness_gym.runtime.trajectory import EpisodeResult


class ModuleBenchmark(Benchmark):
    """A benchmark laid out as ``harness_gym.benchmarks.<name>.{spec,packet,prompt,sim,data}``."""

    def _part(self, module: str) -> ModuleType:
        return importlib.import_module(f"harness_gym.benchmarks.{self.name}.{module}")

    def spec(self) -> BenchmarkSpec:
        return cast(BenchmarkSpec, self._part("spec").spec())

    def build_packet(self, results: list[EpisodeResult], *, batch_tag: str, batch_digest: str,
                     harness: HarnessView) -> Packet:
        return cast("Packet", self._part("packet").build_packet(results, batch_tag=batch_tag, batch_digest=batch_digest,
                                                                harness=harness))

    def prompt(self) -> PromptParts:
        return cast("PromptParts", self._part("prompt").PROMPT)

    def sim(self) -> SimPolicy | None:
        return cast(SimPolicy, self._part("sim").respond)

    def template(self) -> TemplateRules | None:
        return cast(TemplateRules, importlib.import_module(f"baselines.template_{self.name}"))

    def data(self) -> DataCommands | None:
        return cast(Any, self._part("data"))
