"""``template``: a rule-based harness engineer that reads only the packet.

Per benchmark, its ``Benchmark.template()`` rules (``baselines/template_<b>.py`` for the
built-ins) provide ``detect(packet) -> signatures`` (failure signatures found in the
packet's traces) and ``build_hooks(signatures) -> {hook point: code}`` (Harness-R1 hooks
for exactly those signatures). Every rule is
generic: predicates, page types and task types, never ids, cell values or answers.
"""
from __future__ import annotations

from typing import Sequence

from baselines.base import Policy, PolicyInput
from baselines.hr1 import harness_r1_patch
from baselines.noop import NOOP_HOOK
from harness_gym.benchmarks import plugins

class TemplatePolicy(Policy):
    name = "template"

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        out = []
        for p in packets:
            rules = plugins.template_rules(p.benchmark)
            sigs = rules.detect(p.packet)
            hooks = rules.build_hooks(sigs) or {"on_init": NOOP_HOOK}
            desc = "Guards and hints for: " + (", ".join(sigs) if sigs else "no recurring failure found")
            think = (
                f"Failure pattern: {', '.join(sigs) or 'none'}. State kept: hints already given and block counts in nb. "
                "Hook ownership: guards in on_before_action, hints in on_post_step or make_pre_hint, skills in on_init. "
                "Regression risk: blocks only on clearly observable predicates."
            )
            out.append([harness_r1_patch(p.benchmark, desc, hooks, think)] * k)
        return out
