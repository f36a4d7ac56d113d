"""``noop``: a valid patch whose hook does nothing — the reference a policy must beat (Δ_B = 0)."""
from __future__ import annotations

from typing import Sequence

from baselines.base import Policy, PolicyInput
from baselines.hr1 import harness_r1_patch

NOOP_HOOK = "def hook(ctx, nb):\n    return None\n"


class NoopPolicy(Policy):
    name = "noop"

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        return [[harness_r1_patch(p.benchmark, "No change.", {"on_init": NOOP_HOOK})] * k for p in packets]
