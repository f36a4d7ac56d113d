"""``self-refine``: one fixed, generic reflect-and-retry patch, the same for every packet.

Modelled on the Self-Refine baseline of Harness-R1's comparison: the target is told to
reflect on its last result and retry, with no diagnosis of the batch's failures.
"""
from __future__ import annotations

from typing import Sequence

from baselines.base import Policy, PolicyInput
from baselines.hr1 import harness_r1_patch

ON_INIT = '''def hook(ctx, nb):
    return {"skills": ["Before you answer, reflect on whether your result really answers the question, and refine it if not."]}
'''
ON_POST_STEP = '''def hook(ctx, nb):
    p = ctx["predicates"]
    if p["last_result_error"] or p["last_result_empty"]:
        msg = "Reflect on the last result: what went wrong? Refine your approach and try again."
        if nb.get("last_hint") != msg:
            nb["last_hint"] = msg
            return {"type": "inject_hint", "message": msg}
    return None
'''


class SelfRefinePolicy(Policy):
    name = "self-refine"

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        patch = {"on_init": ON_INIT, "on_post_step": ON_POST_STEP}
        return [[harness_r1_patch(p.benchmark, "Generic reflect-and-retry.", patch)] * k for p in packets]
