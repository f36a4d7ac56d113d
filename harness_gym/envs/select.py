"""``HarnessSelectEnv``: pick one patch from a fixed library — a Discrete-action wrapper for stable-baselines3.

Description
    The same loop as ``HarnessEditEnv`` (single step), but the action is an index into a
    library of candidate patches for the benchmark (see ``default_library``): noop,
    self-refine, template, co-harness, template restricted to the packet's most frequent
    signature, one fixed template patch per failure signature, every template rule at once,
    and the example patches in ``examples/patches/``. Each entry turns the packet into a
    patch text, so packet-adaptive editors are arms too.
Observation
    ``Box(0, 1, (len(feature_names(benchmark)),), float32)``: features of the failure
    packet — pass rate, failure share, the share of failures showing each of the
    benchmark's failure signatures, critic category shares, mean runtime signals (scaled
    and clipped) and task-kind shares. The per-benchmark table is ``Benchmark.select()``.
Action
    ``Discrete(len(library))``.
Reward
    Δ_B of the chosen patch (as ``HarnessEditEnv``).
Termination
    After one step (``terminated=True``).
Ids
    ``HarnessSelect-DBBench-v0``, ``HarnessSelect-WebShop-v0``, ``HarnessSelect-ALFWorld-v0``
    and ``HarnessSelect-<display>-v0`` of every plugin benchmark with a ``select()`` table
    (registered in ``envs/registration.py``).

Signatures are detected and arms written by the benchmark's ``template()`` rules and the
generic ``baselines`` (imported lazily); pass ``library=`` to use other arms.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.benchmarks import plugins
from harness_gym.benchmarks.api import CATEGORIES, SelectSpec
from harness_gym.envs.harness_edit import HarnessEditEnv
from harness_gym.errors import ConfigError

__all__ = ["CATEGORIES", "HarnessSelectEnv", "LibraryEntry", "SelectSpec", "default_library", "feature_names",
           "packet_features", "select_spec"]

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "patches"


def select_spec(benchmark: str) -> SelectSpec:
    """The benchmark's feature table (``Benchmark.select()``)."""
    return plugins.select_spec(benchmark)


def feature_names(benchmark: str) -> tuple[str, ...]:
    """The names of ``packet_features`` entries for ``benchmark``, in order."""
    return select_spec(benchmark).feature_names()


def trace_signatures(benchmark: str, trace: dict[str, Any]) -> set[str]:
    """The table's failure signatures shown by one failure trace of the packet."""
    found = plugins.template_rules(benchmark).detect({"failures": [trace]})
    return set(found) & set(select_spec(benchmark).signatures)


def _trace_value(trace: dict[str, Any], key: str) -> float:
    signals = trace.get("signals", {})
    return float(signals[key] if key in signals else trace.get(key, 0))


def packet_features(packet: dict[str, Any], benchmark: str | None = None) -> np.ndarray:
    """The packet as a fixed-length vector in [0, 1] (order: ``feature_names(benchmark)``)."""
    from baselines.co_harness.critic import RuleCritic

    bench = benchmark or packet.get("benchmark", "")
    spec = select_spec(bench)
    fails = packet.get("failures", [])
    n = max(1, len(fails))
    size = max(1, int(packet.get("batch_size") or len(packet.get("task_ids", [])) or 1))
    sigs = [trace_signatures(bench, t) for t in fails]
    cats = [a.category for a in RuleCritic().attribute({**packet, "benchmark": bench})]
    vec = [packet.get("baseline_pass", 0) / size, len(fails) / size]
    vec += [sum(s in x for x in sigs) / n for s in spec.signatures]
    vec += [cats.count(c) / n for c in CATEGORIES]
    vec += [float(np.mean([_trace_value(t, k) for t in fails])) / scale if fails else 0.0 for k, scale in spec.signals]
    listed = {v for _, values in spec.kinds for v in values}
    for _, values in spec.kinds:
        vec.append(sum((t.get("task_type") in values) if values else (t.get("task_type") not in listed)
                       for t in fails) / n)
    return np.clip(np.asarray(vec, dtype=np.float32), 0.0, 1.0)


@dataclass(frozen=True)
class LibraryEntry:
    """One arm: a name and a function (observation text, structured packet, benchmark) -> patch text."""

    name: str
    make: Callable[[str, dict[str, Any], str], str]


def default_library(benchmark: str) -> list[LibraryEntry]:
    """The candidate patches for ``benchmark``, the same recipe for every benchmark.

    Packet-adaptive: noop, self-refine, template, co-harness, ``template:top`` (the template
    rule of the packet's most frequent signature only). Fixed: ``template:<sig>`` per
    signature of ``select_spec(benchmark)``, ``template:all`` (every rule, needed or not) and
    ``example:<stem>`` per ``examples/patches/<benchmark>_*.txt``. The partial and
    unconditional variants are there so the choice matters: each helps some packets only.
    """
    from baselines.base import PolicyInput
    from baselines.co_harness.propose import CoHarnessPolicy
    from baselines.hr1 import harness_r1_patch
    from baselines.noop import NOOP_HOOK, NoopPolicy
    from baselines.self_refine import SelfRefinePolicy
    from baselines.template import TemplatePolicy

    spec = select_spec(benchmark)
    rules = plugins.template_rules(benchmark)

    def from_policy(policy: Any) -> Callable[[str, dict[str, Any], str], str]:
        return lambda text, packet, bench: policy.propose([PolicyInput(text, packet, bench)], k=1)[0][0]

    def fixed(text: str) -> Callable[[str, dict[str, Any], str], str]:
        return lambda t, p, b: text

    def top(text: str, packet: dict[str, Any], bench: str) -> str:
        counts = Counter(s for t in packet.get("failures", []) for s in trace_signatures(bench, t))
        best = max(spec.signatures, key=lambda s: counts[s]) if counts else ""  # ties: table order
        hooks = (rules.build_hooks([best]) if best else {}) or {"on_init": NOOP_HOOK}
        return harness_r1_patch(bench, f"Template rule for the most frequent failure only: {best or 'none'}.", hooks)

    lib = [LibraryEntry("noop", from_policy(NoopPolicy())), LibraryEntry("self-refine", from_policy(SelfRefinePolicy())),
           LibraryEntry("template", from_policy(TemplatePolicy())), LibraryEntry("co-harness", from_policy(CoHarnessPolicy())),
           LibraryEntry("template:top", top)]
    for sig in spec.signatures:
        hooks = rules.build_hooks([sig])
        if hooks:
            lib.append(LibraryEntry(f"template:{sig}", fixed(harness_r1_patch(benchmark, f"Template rule for {sig}.", hooks))))
    every = rules.build_hooks(list(spec.signatures))
    lib.append(LibraryEntry("template:all", fixed(harness_r1_patch(benchmark, "Every template rule.", every))))
    for path in sorted(EXAMPLES_DIR.glob(f"{benchmark}_*.txt")):
        lib.append(LibraryEntry(f"example:{path.stem}", fixed(path.read_text(encoding="utf-8"))))
    return lib


class HarnessSelectEnv(gym.Env):
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium reads it from the class

    def __init__(self, benchmark: str = "dbbench", library: Sequence[LibraryEntry] | None = None,
                 seed_pool: int | None = None, **kwargs: Any) -> None:
        if int(kwargs.get("max_edits", 1)) != 1:
            raise ConfigError(f"max_edits={kwargs['max_edits']}: HarnessSelectEnv is single-step; drop max_edits")
        if seed_pool is not None and seed_pool < 1:
            raise ConfigError(f"seed_pool={seed_pool}: expected None (any batch) or an integer >= 1")
        self.features = feature_names(benchmark)
        self.edit = HarnessEditEnv(benchmark=benchmark, **kwargs)
        self.benchmark = benchmark
        self.library = list(library) if library is not None else default_library(benchmark)
        if not self.library:
            raise ConfigError("library is empty: give at least one LibraryEntry")
        self.seed_pool = seed_pool
        self.action_space = gym.spaces.Discrete(len(self.library))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (len(self.features),), np.float32)
        self._text = ""
        self._packet: dict[str, Any] = {}
        self._batch_key: int | None = None  # the batch seed of a reset without options (memo key)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.library]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        # The inner batch seed: any batch, or one of ``seed_pool`` batches (cached rollouts after a first visit).
        high = self.seed_pool if self.seed_pool is not None else 2**31 - 1
        batch_seed = int(self.np_random.integers(0, high))
        self._batch_key = None if options else batch_seed
        self._text, info = self._inner_reset(batch_seed, options)
        self._packet = info["packet"]
        return packet_features(self._packet, self.benchmark), {
            "batch_seed": batch_seed, "batch_digest": info["batch_digest"], "baseline_score": info["baseline_score"]}

    # ``HarnessEditEnv.reset`` is deterministic per seed but re-hashes the whole task pool
    # each time (~0.5 s on DBBench); a revisited batch restores the inner env's batch state
    # instead (its private fields below), which gives the same batch, seeds and baseline.
    # Likewise ``step`` is deterministic per (batch, patch) but renders the patched run's
    # packet (~50 ms on ALFWorld, more than the cached rollouts), so its result is kept too.
    _STATE = ("_batch", "_seeds", "_heldout", "_heldout_seeds", "_base", "_base_results")
    _MEMO = 256
    _STEP_MEMO = 4096

    def _inner_reset(self, batch_seed: int, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        memo = self.__dict__.setdefault("_memo", {})
        if options or batch_seed not in memo:
            text, info = self.edit.reset(seed=batch_seed, options=options)
            if not options and len(memo) < self._MEMO:
                memo[batch_seed] = (text, info, {k: getattr(self.edit, k) for k in self._STATE})
            return text, info
        text, info, state = memo[batch_seed]
        for k, v in state.items():
            setattr(self.edit, k, v)
        self.edit._edits = 0
        return text, info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._packet:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action={action!r}: expected an int in [0, {len(self.library)})")
        entry = self.library[int(action)]
        patch = entry.make(self._text, self._packet, self.benchmark)
        memo = self.__dict__.setdefault("_step_memo", {})
        key = None if self._batch_key is None else (self._batch_key, hashlib.sha256(patch.encode()).hexdigest())
        if key is None or key not in memo:
            _, reward, _, _, info = self.edit.step(patch)
            result = (packet_features(info["packet"], self.benchmark), float(reward),
                      {k: info.get(k) for k in ("patch_valid", "patch_error", "delta", "heldout_delta")})
            if key is not None and len(memo) < self._STEP_MEMO:
                memo[key] = result
        else:
            result = memo[key]
        obs, reward, info = result
        return obs.copy(), reward, True, False, {"candidate": entry.name, **info}

    def patch_for(self, action: int) -> str:
        """The patch text arm ``action`` writes for the current packet."""
        return self.library[int(action)].make(self._text, self._packet, self.benchmark)

    def close(self) -> None:
        self.edit.close()
        super().close()
