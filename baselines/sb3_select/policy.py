"""``sb3-select[:<path>]``: a trained PPO selector used as a policy (it picks one library arm per packet).

``<path>`` is one model (``.zip``, with its ``.library.json`` beside it) or a pattern with
``{benchmark}``, filled in from each packet's benchmark; plain ``sb3-select`` means
``runs/sb3_select_{benchmark}.zip``, where ``python -m baselines.sb3_select.train`` writes.
The selector never trains on the fly: a missing model is a ``ConfigError`` naming the
command that trains it.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.base import Policy, PolicyInput
from baselines.sb3_select.train import DEFAULT_OUT, _sb3, meta_path
from harness_gym.errors import ConfigError


def train_command(benchmark: str, out: str) -> str:
    return f"python -m baselines.sb3_select.train --benchmark {benchmark} --out {out}"


@dataclass(frozen=True)
class Selector:
    """One loaded model, its benchmark and its library arms in action order."""

    benchmark: str
    model: Any
    library: list[Any]


def load_selector(path: str | Path, benchmark: str | None = None) -> Selector:
    """Load a model saved by ``train_selector``; ``benchmark``: the one it must have been trained on."""
    from harness_gym.envs.select import SPECS, default_library, feature_names

    model_path = Path(path)
    bench = f" --benchmark {benchmark or '<' + '|'.join(SPECS) + '>'}"
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
    model = _sb3().PPO.load(str(model_path), device="cpu")
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
            self._selectors[benchmark] = load_selector(self.path.replace("{benchmark}", benchmark), benchmark)
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
