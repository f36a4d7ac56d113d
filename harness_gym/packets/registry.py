"""Per-benchmark packet builders and prompt parts, through the benchmark contract.

Each registered ``Benchmark`` (``harness_gym/benchmarks/api.py``) provides
``build_packet(results, *, batch_tag, batch_digest, harness) -> Packet`` and
``prompt() -> PromptParts``. Adding a benchmark needs no edit here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness_gym.errors import ConfigError


@dataclass(frozen=True)
class PromptParts:
    benchmark: str
    display: str
    scope: str
    roles: str
    example_patch: dict[str, Any]
    hook_api: Callable[[], str]
    runtime_context: str


def prompt_parts(benchmark: str) -> PromptParts:
    from harness_gym.benchmarks import plugins

    parts = plugins.get(benchmark).prompt()
    if not isinstance(parts, PromptParts) or parts.benchmark != benchmark:
        got = f"PromptParts for {parts.benchmark!r}" if isinstance(parts, PromptParts) else type(parts).__name__
        raise ConfigError(f"benchmark {benchmark!r} ({plugins.discover().packages[benchmark]}): prompt() returned "
                          f"{got}, expected harness_gym.benchmarks.api PromptParts for {benchmark!r}")
    return parts


def packet_builder(benchmark: str) -> Callable[..., Any]:
    from harness_gym.benchmarks import plugins

    return plugins.get(benchmark).build_packet
