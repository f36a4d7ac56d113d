"""``HarnessSelectEnv``: pick one patch from a fixed library — a Discrete-action wrapper for stable-baselines3.

Description
    The same loop as ``HarnessEditEnv`` (single step), but the action is an index into a
    library of candidate patches (noop, self-refine, template, co-harness, one template
    patch per failure signature, the example patches in ``examples/patches/``). Each
    library entry turns the packet into a patch text, so packet-adaptive editors are arms too.
Observation
    ``Box(0, 1, (N_FEATURES,), float32)``: features of the failure packet — pass rate,
    failure share, the share of failures showing each failure signature, critic category
    shares, mean runtime signals (scaled and clipped) and task-kind shares (see ``FEATURES``).
Action
    ``Discrete(len(library))``.
Reward
    Δ_B of the chosen patch (as ``HarnessEditEnv``).
Termination
    After one step (``terminated=True``).
Ids
    ``HarnessSelect-DBBench-v0`` (registered in ``envs/registration.py``).

The default library and the signature features come from ``baselines`` (imported lazily);
pass ``library=`` to use other arms.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from harness_gym.envs.harness_edit import HarnessEditEnv
from harness_gym.errors import ConfigError

SIGNATURES = ("commit_before_sql", "commit_before_mutation", "empty_commit", "verbose_answer", "identifier_error",
              "empty_result", "numeric_text", "repeated_sql", "mutation_format")
CATEGORIES = ("prompt_ambiguity", "tool_schema_error", "skill_missing", "middleware_mismatch", "memory_overflow",
              "agent_error")
SIGNALS = (("sql_calls", 20), ("error_results", 20), ("empty_results", 20), ("max_same_sql", 20),
           ("text_only_turns", 20), ("commits", 5))
FEATURES = (("pass_rate", "failure_share") + tuple(f"sig:{s}" for s in SIGNATURES)
            + tuple(f"cat:{c}" for c in CATEGORIES) + tuple(f"signal:{k}" for k, _ in SIGNALS)
            + ("kind:mutation", "kind:select"))
N_FEATURES = len(FEATURES)
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "patches"


@dataclass(frozen=True)
class LibraryEntry:
    """One arm: a name and a function (observation text, structured packet, benchmark) -> patch text."""

    name: str
    make: Callable[[str, dict[str, Any], str], str]


def packet_features(packet: dict[str, Any]) -> np.ndarray:
    """The packet as a fixed-length vector in [0, 1] (order: ``FEATURES``)."""
    from baselines.co_harness.critic import RuleCritic, dbbench_signatures, generic_signatures

    fails = packet.get("failures", [])
    n = max(1, len(fails))
    size = max(1, int(packet.get("batch_size") or len(packet.get("task_ids", [])) or 1))
    bench = packet.get("benchmark", "")
    sigs = [set(dbbench_signatures(t) if bench == "dbbench" else generic_signatures(t)) for t in fails]
    cats = [a.category for a in RuleCritic().attribute(packet)]
    vec = [packet.get("baseline_pass", 0) / size, len(fails) / size]
    vec += [sum(s in x for x in sigs) / n for s in SIGNATURES]
    vec += [cats.count(c) / n for c in CATEGORIES]
    vec += [float(np.mean([float(t.get("signals", {}).get(k, 0)) for t in fails])) / scale if fails else 0.0
            for k, scale in SIGNALS]
    mut = sum(t.get("task_type") in ("INSERT", "UPDATE") for t in fails)
    vec += [mut / n, (len(fails) - mut) / n if fails else 0.0]
    return np.clip(np.asarray(vec, dtype=np.float32), 0.0, 1.0)


def default_library(benchmark: str) -> list[LibraryEntry]:
    """noop, self-refine, template, co-harness, template per signature, example patches."""
    import importlib

    from baselines.base import PolicyInput
    from baselines.co_harness.propose import CoHarnessPolicy
    from baselines.hr1 import harness_r1_patch
    from baselines.noop import NoopPolicy
    from baselines.self_refine import SelfRefinePolicy
    from baselines.template import TemplatePolicy

    def from_policy(policy: Any) -> Callable[[str, dict[str, Any], str], str]:
        return lambda text, packet, bench: policy.propose([PolicyInput(text, packet, bench)], k=1)[0][0]

    lib = [LibraryEntry("noop", from_policy(NoopPolicy())), LibraryEntry("self-refine", from_policy(SelfRefinePolicy()))]
    try:
        rules = importlib.import_module(f"baselines.template_{benchmark}")
    except ModuleNotFoundError:
        rules = None
    if rules is not None:
        lib.append(LibraryEntry("template", from_policy(TemplatePolicy())))
    lib.append(LibraryEntry("co-harness", from_policy(CoHarnessPolicy())))
    if rules is not None:
        for sig in SIGNATURES if benchmark == "dbbench" else ():
            hooks = rules.build_hooks([sig])
            if hooks:
                text = harness_r1_patch(benchmark, f"Template rule for {sig}.", hooks)
                lib.append(LibraryEntry(f"template:{sig}", lambda t, p, b, text=text: text))
    for path in sorted(EXAMPLES_DIR.glob(f"{benchmark}_*.txt")):
        text = path.read_text(encoding="utf-8")
        lib.append(LibraryEntry(f"example:{path.stem}", lambda t, p, b, text=text: text))
    return lib


class HarnessSelectEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, benchmark: str = "dbbench", library: Sequence[LibraryEntry] | None = None,
                 seed_pool: int | None = None, **kwargs: Any) -> None:
        if int(kwargs.get("max_edits", 1)) != 1:
            raise ConfigError(f"max_edits={kwargs['max_edits']}: HarnessSelectEnv is single-step; drop max_edits")
        if seed_pool is not None and seed_pool < 1:
            raise ConfigError(f"seed_pool={seed_pool}: expected None (any batch) or an integer >= 1")
        self.edit = HarnessEditEnv(benchmark=benchmark, **kwargs)
        self.benchmark = benchmark
        self.library = list(library) if library is not None else default_library(benchmark)
        if not self.library:
            raise ConfigError("library is empty: give at least one LibraryEntry")
        self.seed_pool = seed_pool
        self.action_space = gym.spaces.Discrete(len(self.library))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (N_FEATURES,), np.float32)
        self._text = ""
        self._packet: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.library]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        # The inner batch seed: any batch, or one of ``seed_pool`` batches (cached rollouts after a first visit).
        high = self.seed_pool if self.seed_pool is not None else 2**31 - 1
        batch_seed = int(self.np_random.integers(0, high))
        self._text, info = self._inner_reset(batch_seed, options)
        self._packet = info["packet"]
        return packet_features(self._packet), {"batch_seed": batch_seed, "batch_digest": info["batch_digest"],
                                               "baseline_score": info["baseline_score"]}

    # ``HarnessEditEnv.reset`` is deterministic per seed but re-hashes the whole task pool
    # each time (~0.5 s on DBBench); a revisited batch restores the inner env's batch state
    # instead (its private fields below), which gives the same batch, seeds and baseline.
    _STATE = ("_batch", "_seeds", "_heldout", "_heldout_seeds", "_base", "_base_results")
    _MEMO = 256

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
            raise ValueError(f"action={action!r}: expected an int in [0, {self.action_space.n})")
        entry = self.library[int(action)]
        patch = entry.make(self._text, self._packet, self.benchmark)
        _, reward, _, _, info = self.edit.step(patch)
        obs = packet_features(info["packet"])
        return obs, float(reward), True, False, {"candidate": entry.name, "patch_valid": info["patch_valid"],
                                                 "patch_error": info["patch_error"], "delta": info["delta"],
                                                 "heldout_delta": info.get("heldout_delta")}

    def patch_for(self, action: int) -> str:
        """The patch text arm ``action`` writes for the current packet."""
        return self.library[int(action)].make(self._text, self._packet, self.benchmark)

    def close(self) -> None:
        self.edit.close()
        super().close()
