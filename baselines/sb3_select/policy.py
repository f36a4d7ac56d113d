"""``sb3-select[:<path>]``: a trained PPO selector used as a policy (it picks one library arm per packet).

``<path>`` is one model (a PPO ``.zip`` or an exported weights-only ``.pt``, with its
``.library.json`` beside it) or a pattern with ``{benchmark}``, filled in from each
packet's benchmark. Plain ``sb3-select`` means ``runs/sb3_select_{benchmark}.zip`` (where
``python -m baselines.sb3_select.train`` writes) if it exists, else the selector shipped
in ``baselines/sb3_select/models/<benchmark>.pt`` (how each was trained, and its sha256,
is in its ``.library.json``), so it runs from a fresh clone. The selector never trains on
the fly: a missing model is a ``ConfigError`` naming the command that trains it.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.base import Policy, PolicyInput
from baselines.sb3_select.train import DEFAULT_OUT, SHIPPED_DIR, _sb3, meta_path
from harness_gym.errors import ConfigError


def train_command(benchmark: str, out: str) -> str:
    return f"python -m baselines.sb3_select.train --benchmark {benchmark} --out {out}"


@dataclass(frozen=True)
class Selector:
    """One loaded model, its benchmark and its library arms in action order."""

    benchmark: str
    model: Any
    library: list[Any]


def default_path(benchmark: str) -> Path:
    """Where plain ``sb3-select`` finds the selector of ``benchmark``: yours in runs/, else the shipped one."""
    own = Path(DEFAULT_OUT.replace("{benchmark}", benchmark))
    shipped = SHIPPED_DIR / f"{benchmark}.pt"
    return shipped if not own.exists() and shipped.exists() else own


def _load_policy(model_path: Path, meta: dict[str, Any]) -> Any:
    """An exported weights-only policy (``export_policy``), checked against the sha256 its metadata records."""
    import hashlib

    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3.common.policies import ActorCriticPolicy

    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    if meta.get("sha256") != digest:
        raise ConfigError(f"sb3-select model {str(model_path)!r} has sha256 {digest[:16]}…, its library file records "
                          f"{str(meta.get('sha256'))[:16]}…; re-export it with --export")
    policy = ActorCriticPolicy(gym.spaces.Box(0.0, 1.0, (int(meta["features"]),), np.float32),
                               gym.spaces.Discrete(len(meta["library"])), lambda _: 0.0, net_arch=list(meta["net_arch"]))
    policy.load_state_dict(torch.load(str(model_path), map_location="cpu", weights_only=True))
    policy.set_training_mode(False)
    return policy


def load_selector(path: str | Path, benchmark: str | None = None) -> Selector:
    """Load a model saved by ``train_selector`` or ``export_policy``; ``benchmark``: the one it must be for."""
    from harness_gym.envs.registration import SELECT_ENV_IDS
    from harness_gym.envs.select import default_library, feature_names

    model_path = Path(path)
    with_tables = sorted(v["benchmark"] for v in SELECT_ENV_IDS.values())
    bench = f" --benchmark {benchmark or '<' + '|'.join(with_tables) + '>'}"
    if not model_path.exists() and not model_path.with_name(model_path.name + ".zip").exists():
        raise ConfigError(f"sb3-select model {str(path)!r} not found{f' (for {benchmark})' if benchmark else ''}; "
                          f"train one with python -m baselines.sb3_select.train{bench} --out {path}")
    meta_file = meta_path(model_path)
    if not meta_file.exists():
        raise ConfigError(f"sb3-select model {str(path)!r} has no library file {str(meta_file)!r} beside it; "
                          f"retrain it with python -m baselines.sb3_select.train{bench} --out {path}")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    if benchmark and meta["benchmark"] != benchmark:
        raise ConfigError(f"sb3-select model {str(path)!r} was trained on {meta['benchmark']}, not {benchmark}; "
                          f"train one with {train_command(benchmark, str(path))}")
    model = (_load_policy(model_path, meta) if meta.get("format") == "policy-state-dict"
             else _sb3().PPO.load(str(model_path), device="cpu"))
    n = len(feature_names(meta["benchmark"]))
    if tuple(model.observation_space.shape) != (n,):
        raise ConfigError(f"sb3-select model {str(path)!r} reads {model.observation_space.shape[0]} packet features, "
                          f"this version writes {n} for {meta['benchmark']}; retrain it")
    lib = {e.name: e for e in default_library(meta["benchmark"])}
    missing = [name for name in meta["library"] if name not in lib]
    if missing:
        raise ConfigError(f"sb3-select model {str(path)!r} was trained with library arms {missing} that this "
                          "version lacks; retrain it")
    return Selector(meta["benchmark"], model, [lib[name] for name in meta["library"]])


class SB3SelectPolicy(Policy):
    name = "sb3-select"

    def __init__(self, path: str = DEFAULT_OUT) -> None:
        _sb3()  # a missing extra fails here, before any episode runs
        self.path = path
        self._selectors: dict[str, Selector] = {}
        if "{benchmark}" not in path:  # one model: load it now, so a bad path fails before anything runs
            sel = load_selector(path)
            self._selectors[sel.benchmark] = sel
        self.last_choice = ""

    def selector(self, benchmark: str) -> Selector:
        if benchmark not in self._selectors:
            if "{benchmark}" not in self.path:
                trained = next(iter(self._selectors))
                default = DEFAULT_OUT.replace("{benchmark}", benchmark)
                raise ConfigError(
                    f"sb3-select model {self.path!r} was trained on {trained}, but the packet is from {benchmark}; "
                    f"train one with {train_command(benchmark, default)} and use "
                    f"sb3-select (or sb3-select:<path with {{benchmark}}>) to pick the model per benchmark")
            path = default_path(benchmark) if self.path == DEFAULT_OUT else self.path.replace("{benchmark}", benchmark)
            self._selectors[benchmark] = load_selector(path, benchmark)
        return self._selectors[benchmark]

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        from harness_gym.envs.select import packet_features

        out = []
        for p in packets:
            sel = self.selector(p.benchmark)
            action, _ = sel.model.predict(packet_features(p.packet, p.benchmark), deterministic=True)
            entry = sel.library[int(action)]
            self.last_choice = entry.name
            out.append([entry.make(p.text, p.packet, p.benchmark)] * k)
        return out
