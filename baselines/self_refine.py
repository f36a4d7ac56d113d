"""``self-refine``: one fixed, generic reflect-and-retry patch, the same for every packet.

Modelled on the Self-Refine baseline of Harness-R1's comparison: the target is told to
reflect on its progress and refine its approach, with no diagnosis of the batch's
failures. It reads only ctx fields every benchmark has (``step``), so the same patch runs
on every target.
"""
from __future__ import annotations

from typing import Sequence

from baselines.base import Policy, PolicyInput
from baselines.hr1 import harness_r1_patch

ON_INIT = '''def hook(ctx, nb):
    return {"skills": ["Before you answer, reflect on whether your result really answers the task, and refine it if not."]}
'''
PRE_HINT = '''def hook(ctx, nb):
    if ctx["step"] > 0 and ctx["step"] % 3 == 0:
        return {"message": "Reflect on your progress so far: what went wrong? Refine your approach and continue."}
    return None
'''


class SelfRefinePolicy(Policy):
    name = "self-refine"

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        hooks = {"on_init": ON_INIT, "make_pre_hint": PRE_HINT}
        return [[harness_r1_patch(p.benchmark, "Generic reflect-and-retry.", hooks)] * k for p in packets]
