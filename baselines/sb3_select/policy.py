"""``sb3-select:<path>``: a trained PPO selector used as a policy (it picks one library arm per packet)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from baselines.base import Policy, PolicyInput
from harness_gym.errors import ConfigError


class SB3SelectPolicy(Policy):
    name = "sb3-select"

    def __init__(self, path: str) -> None:
        from baselines.sb3_select.train import _sb3, meta_path
        from harness_gym.envs.select import default_library

        model_path = Path(path)
        if not model_path.exists() and not model_path.with_suffix(".zip").exists():
            raise ConfigError(f"sb3-select model {path!r} not found; train one with python -m baselines.sb3_select.train --out {path}")
        meta = json.loads(meta_path(model_path).read_text(encoding="utf-8"))
        self.model = _sb3().PPO.load(str(model_path), device="cpu")
        lib = {e.name: e for e in default_library(meta["benchmark"])}
        missing = [n for n in meta["library"] if n not in lib]
        if missing:
            raise ConfigError(f"sb3-select model {path!r} was trained with library arms {missing} that this version lacks; retrain it")
        self.library = [lib[n] for n in meta["library"]]
        self.last_choice = ""

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        from harness_gym.envs.select import packet_features

        out = []
        for p in packets:
            action, _ = self.model.predict(packet_features(p.packet), deterministic=True)
            entry = self.library[int(action)]
            self.last_choice = entry.name
            out.append([entry.make(p.text, p.packet, p.benchmark)] * k)
        return out
