"""One rule table per benchmark, behind one interface the critic and the proposer share.

A ``BenchmarkRules`` says, for one benchmark, which signatures a failure trace shows (read
from the packet only), which category each signature points to (``rules``, in priority
order; ``agent_error`` marks an intrinsic signature that no edit answers), which further
categories are worth trying when the first fix does not pay off (``also``), and the
ordered catalogue of local edits keyed by (category, signature) (``fixes``). The critic,
the ranking and the acceptance loop are the same for every benchmark.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baselines.co_harness.edits import Fix


@dataclass(frozen=True)
class BenchmarkRules:
    benchmark: str
    rules: tuple[tuple[str, str], ...]  # signature -> category, priority order
    signatures: Callable[[dict[str, Any]], list[str]]  # one failure trace -> its signatures
    fixes: Callable[[], list[Fix]]  # ordered catalogue of local edits
    also: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # signature -> secondary categories


def rules_for(benchmark: str) -> BenchmarkRules:
    """The rule table of ``benchmark``; benchmarks without their own get the generic one."""
    if benchmark == "dbbench":
        from baselines.co_harness import critic, edits

        return BenchmarkRules("dbbench", critic.DBBENCH_RULES, critic.dbbench_signatures, edits.dbbench_fixes,
                              {k: (v,) for k, v in critic.ALSO.items()})
    if benchmark == "webshop":
        from baselines.co_harness import webshop_rules as w

        return BenchmarkRules("webshop", w.RULES, w.signatures, w.fixes, w.ALSO)
    if benchmark == "alfworld":
        from baselines.co_harness import alfworld_rules as a

        return BenchmarkRules("alfworld", a.RULES, a.signatures, a.fixes, a.ALSO)
    from baselines.co_harness import critic, edits

    return BenchmarkRules(benchmark, critic.GENERIC_RULES, critic.generic_signatures, edits.generic_fixes)
