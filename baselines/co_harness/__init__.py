"""Co-Harness: critic-attributed local diffs, two-set acceptance, a versioned registry,
alternating with SFT of the target (see docs/co_harness.md)."""
from baselines.co_harness.critic import (
    CATEGORIES,
    Attribution,
    HarnessCritic,
    ModelCritic,
    RuleCritic,
    make_critic,
)
from baselines.co_harness.edits import Candidate, Fix, make_diff
from baselines.co_harness.loop import CoHarnessResult, run_co_harness
from baselines.co_harness.propose import CoHarnessPolicy, propose_candidates
from baselines.co_harness.rules import BenchmarkRules, rules_for

__all__ = ["CATEGORIES", "Attribution", "BenchmarkRules", "Candidate", "CoHarnessPolicy", "CoHarnessResult", "Fix",
           "HarnessCritic", "ModelCritic", "RuleCritic", "make_critic", "make_diff", "propose_candidates", "rules_for",
           "run_co_harness"]
