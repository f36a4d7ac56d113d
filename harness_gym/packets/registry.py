"""Per-benchmark packet builders and prompt parts, found by module name.

A benchmark ``b`` provides ``harness_gym/packets/b.py`` with
``build_packet(results, *, batch_tag, batch_digest, harness) -> Packet`` and
``harness_gym/packets/b_prompt.py`` with ``PROMPT: PromptParts``. Adding a benchmark
needs no edit here.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from harness_gym.errors import ConfigError

KNOWN = ("dbbench", "webshop", "alfworld")


@dataclass(frozen=True)
class PromptParts:
    benchmark: str
    display: str
    scope: str
    roles: str
    example_patch: dict[str, Any]
    hook_api: Callable[[], str]
    runtime_context: str


def _module(name: str, benchmark: str) -> Any:
    if benchmark not in KNOWN:
        raise ConfigError(f"unknown benchmark {benchmark!r}: expected one of {list(KNOWN)}")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"benchmark {benchmark!r} has no packet module {name!r} yet") from exc


def prompt_parts(benchmark: str) -> PromptParts:
    return _module(f"harness_gym.benchmarks.{benchmark}.prompt", benchmark).PROMPT


def packet_builder(benchmark: str) -> Callable[..., Any]:
    return _module(f"harness_gym.benchmarks.{benchmark}.packet", benchmark).build_packet
