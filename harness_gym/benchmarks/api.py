"""The public benchmark contract: what a benchmark provides to harness-gym, and the types it uses.

A benchmark is one ``Benchmark`` subclass, registered under the ``harness_gym.benchmarks``
entry-point group of its package (the three built-ins are registered the same way)::

    [project.entry-points."harness_gym.benchmarks"]
    calc = "harness_gym_calc:Calc"

The entry point's name is the benchmark's ``name``. On ``import harness_gym`` every
registered benchmark gets ``HarnessEdit-<display>-v0`` and, if it has a ``select()`` table
and ``template()`` rules, ``HarnessSelect-<display>-v0``. A broken entry point (an import
error, a wrong type, a duplicate name) is skipped with a one-line warning naming its
package, and using it raises that line as a ``ConfigError``.

What each part must provide (docs/adding_a_target.md walks through a whole package):

- ``Task`` (protocol): ``task_id``, ``task_type`` and ``identity()``, a SHA-256 over the
  task's content (equal identities, same task: rollouts are cached and paired by it).
- ``World`` (abstract class): ``reset(task) -> first observation``, ``step(ToolCall) ->
  StepResult``, ``score`` in [0, 1] once the episode is over, optional ``close()``.
  Deterministic given the task; environment failures raise ``WorldError`` (retried).
- ``RunEpisode`` (protocol): the agent loop. It calls the four hooks through
  ``EpisodeHooks`` with a ctx dict built by the benchmark's ``CtxBuilder``, sends requests
  through ``submit`` with ``meta["benchmark"]`` set (the sim target dispatches on it) and
  ``knowledge`` (what the sim target may read, never the hooks), and returns an
  ``EpisodeResult``.
- ``CtxBuilder`` (protocol): what hooks read, per phase: plain JSON-able dicts
  (``action``, ``state``, ``task``, ``predicates`` …), documented in the hook API text.
- ``PacketBuilder`` (protocol): a batch's ``EpisodeResult`` list -> ``Packet``, built
  only from what the agent saw, byte-identical for the same episodes.
- ``PromptParts``: the engineer prompt's benchmark parts (scope, roles, example patch, the
  hook API text, the runtime context).
- default harness: a folder with ``system_prompt.md``, ``tools.json``, ``config.json``
  (``BenchmarkSpec.harness_dir``).
- ``SimPolicy`` (protocol): the simulated target, ``ChatRequest -> assistant Message``.
- ``TemplateRules`` (protocol, optional): ``detect(packet) -> signatures`` and
  ``build_hooks(signatures) -> {hook point: code}`` for the ``template`` policy.
- ``SelectSpec`` (optional): the packet-feature table of the ``HarnessSelect`` wrapper.
- ``DataCommands`` (protocol, optional): ``harness-gym data verify|download <name>``.

Docker images (``backend="docker"``) and leaderboard tables exist for the built-ins only.

Evaluation reads the ``BenchmarkSpec`` record that ``Benchmark.spec()`` returns (tasks,
world factories per backend, the episode loop, splits, backends, gold strings); new
fields of that record (e.g. a runtime ``protocol`` mapping) have defaults, so every
benchmark keeps working and opts in by passing them.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from harness_gym.benchmarks.base import Task, World, digest
from harness_gym.errors import WorldError
from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.packets.hook_api import _NORMALIZATION as NORMALIZATION_RULES
from harness_gym.packets.hook_api import _SANDBOX as SANDBOX_RULES
from harness_gym.packets.model import FailureTrace, Packet, clean_text
from harness_gym.packets.registry import PromptParts
from harness_gym.runtime.context import derive_seed, system_with_init
from harness_gym.runtime.episode import EpisodeHooks, clean_reply, tool_message
from harness_gym.runtime.trajectory import COMPLETED, ENV_ERROR, TASK_LIMIT_REACHED, EpisodeResult
from harness_gym.types import Message, StepResult, ToolCall, tool_calls_of

if TYPE_CHECKING:
    from harness_gym.harness.files import Harness
    from harness_gym.packets.model import HarnessView
    from harness_gym.runtime.hooks import HookRunner

__all__ = [
    # the contract
    "CATEGORIES", "Benchmark", "BenchmarkSpec", "CtxBuilder", "DataCommands", "PacketBuilder", "PromptParts",
    "RunEpisode", "SelectSpec", "SimPolicy", "Task", "TemplateRules", "World",
    # what an episode loop, a packet builder and a hook API text are written with
    "COMPLETED", "ENV_ERROR", "NORMALIZATION_RULES", "SANDBOX_RULES", "TASK_LIMIT_REACHED", "ChatRequest",
    "EpisodeHooks", "EpisodeResult", "FailureTrace", "Message", "Packet", "Sampling", "StepResult", "ToolCall",
    "WorldError", "clean_reply", "clean_text", "derive_seed", "digest", "system_with_init", "tool_calls_of",
    "tool_message",
]

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
DISPLAY_RE = re.compile(r"[A-Z][A-Za-z0-9]{0,31}")
# Critic categories (baselines/co_harness/critic.py): every SelectSpec's features include their shares.
CATEGORIES = ("prompt_ambiguity", "tool_schema_error", "skill_missing", "middleware_mismatch", "memory_overflow",
              "agent_error")


class RunEpisode(Protocol):
    """One episode of the target agent on ``task`` in ``world`` under ``harness``."""

    def __call__(self, task: Any, world: World, harness: Harness, hooks: HookRunner | None,
                 submit: Callable[[ChatRequest], Awaitable[Message]], *, seed: int,
                 sampling: Sampling = ...) -> Awaitable[EpisodeResult]: ...


class CtxBuilder(Protocol):
    """The benchmark's episode state, as the dict a hook receives at each phase."""

    def ctx(self, phase: str, **fields: Any) -> dict[str, Any]: ...


class PacketBuilder(Protocol):
    """Failure packet of one batch; deterministic, and never reads gold data (``info``/``knowledge``)."""

    def __call__(self, results: list[EpisodeResult], *, batch_tag: str, batch_digest: str,
                 harness: HarnessView) -> Packet: ...


class SimPolicy(Protocol):
    """The simulated target: one chat request (``request.knowledge`` = the task) -> an assistant message."""

    def __call__(self, request: ChatRequest) -> Message: ...


@runtime_checkable
class TemplateRules(Protocol):
    """Rules of the ``template`` policy: failure signatures in a packet, and hooks for exactly those."""

    def detect(self, packet: Mapping[str, Any]) -> list[str]: ...

    def build_hooks(self, signatures: Sequence[str]) -> dict[str, str]: ...


class DataCommands(Protocol):
    """``harness-gym data verify|download <benchmark>``; each returns an exit status; either may be absent
    (the command then says it is not available for the benchmark)."""

    def main_verify(self, split: str, data_dir: str | None, backend: str) -> int: ...

    def main_download(self, url: str | None, dest: Path) -> int: ...


@dataclass(frozen=True)
class SelectSpec:
    """One benchmark's row of the ``HarnessSelect`` feature table; its signatures also name the fixed arms.

    ``signatures``: failure signatures of the benchmark's ``TemplateRules``, detected per failure trace.
    ``signals``: (name, scale): a trace's runtime signal (else the trace field, e.g. ``turns``), mean / scale.
    ``kinds``: (name, task types): the share of failures of those types; ``()`` takes every type not listed.
    """

    signatures: tuple[str, ...]
    signals: tuple[tuple[str, float], ...]
    kinds: tuple[tuple[str, tuple[str, ...]], ...]

    def feature_names(self) -> tuple[str, ...]:
        return (("pass_rate", "failure_share") + tuple(f"sig:{s}" for s in self.signatures)
                + tuple(f"cat:{c}" for c in CATEGORIES) + tuple(f"signal:{k}" for k, _ in self.signals)
                + tuple(f"kind:{k}" for k, _ in self.kinds))


class Benchmark(ABC):
    """A benchmark harness-gym can train editors on. Subclass it and register it as an entry point.

    Class attributes: ``name`` (lower-case id: the patch's ``"benchmark"``, the env's
    ``benchmark=`` and the entry point's name) and ``display`` (the env id part:
    ``HarnessEdit-<display>-v0``). Implement ``spec``, ``build_packet`` and ``prompt``;
    ``sim`` is needed for ``target="sim"``, ``template``/``select`` for the ``template``
    policy and the ``HarnessSelect`` wrapper, ``data`` for ``harness-gym data``. Keep
    heavy imports inside the methods: every registered benchmark is imported with
    ``harness_gym``.
    """

    name: ClassVar[str]
    display: ClassVar[str]

    @abstractmethod
    def spec(self) -> BenchmarkSpec:
        """Tasks, world factories, the episode loop, splits, backends, gold strings, harness folder."""

    @abstractmethod
    def build_packet(self, results: list[EpisodeResult], *, batch_tag: str, batch_digest: str,
                     harness: HarnessView) -> Packet:
        """The failure packet of one batch (see ``PacketBuilder``)."""

    @abstractmethod
    def prompt(self) -> PromptParts:
        """The benchmark's parts of the engineer prompt, including the hook API text."""

    def sim(self) -> SimPolicy | None:
        """The simulated target's policy; None: only real-model targets can run this benchmark."""
        return None

    def template(self) -> TemplateRules | None:
        """Rules for the ``template`` policy (and the ``HarnessSelect`` arms); None: none."""
        return None

    def select(self) -> SelectSpec | None:
        """The ``HarnessSelect`` feature table; None: no ``HarnessSelect-<display>-v0``."""
        return None

    def data(self) -> DataCommands | None:
        """``harness-gym data`` commands; None: none."""
        return None

    # --- derived names --------------------------------------------------------------
    @classmethod
    def env_id(cls) -> str:
        return f"HarnessEdit-{cls.display}-v0"

    @classmethod
    def select_env_id(cls) -> str:
        return f"HarnessSelect-{cls.display}-v0"
