"""From attributions to ranked candidate diffs, and the ``co-harness`` Policy.

A fix is implicated by a failure when the failure shows the fix's signature and the fix's
category is the failure's category (weight 1) or one of its secondary categories (0.5).
Candidates are ranked by total weight, then by catalogue order; ``agent_error`` failures
implicate nothing.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from baselines.base import Policy, PolicyInput
from baselines.co_harness.critic import Attribution, HarnessCritic, make_critic
from baselines.co_harness.edits import Candidate, Fix, candidate, combine, fixes_for
from harness_gym.errors import ConfigError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.harness.files import Harness


def rank_fixes(benchmark: str, attributions: Sequence[Attribution]) -> list[tuple[float, Fix]]:
    ranked = []
    for order, fix in enumerate(fixes_for(benchmark)):
        score = 0.0
        for a in attributions:
            if a.category == "agent_error" or fix.key not in a.signatures:
                continue
            score += 1.0 if fix.category == a.category else 0.5 if fix.category in a.secondary else 0.0
        if score > 0:
            ranked.append((score, order, fix))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    return [(s, f) for s, _, f in ranked]


def propose_candidates(harness: Harness, attributions: Sequence[Attribution], max_candidates: int = 6) -> list[Candidate]:
    """Ranked local diffs against ``harness`` (fixes that change nothing there are dropped)."""
    out: list[Candidate] = []
    for _, fix in rank_fixes(harness.benchmark, attributions):
        c = candidate(harness, fix)
        if c is not None and all(c.harness.version != o.harness.version for o in out):
            out.append(c)
        if len(out) >= max_candidates:
            break
    return out


def harness_for_packet(p: PolicyInput) -> Harness:
    """The harness the packet was built under: the benchmark default when the version
    matches, else the files rendered in the observation text (``=== path ===`` blocks)."""
    version = p.packet.get("harness_version")
    default = get_benchmark(p.benchmark).default_harness()
    if version in (None, default.version):
        return default
    parsed = files_from_observation(p.text)
    # render() drops each file's final newline. First guess: a file of the default harness ends
    # as it does there, any other file (co-harness edits, hooks) with a newline; then try both
    # endings per file until the version matches.
    guess = {q: t + ("\n" if default.files.get(q, "\n").endswith("\n") else "") for q, t in parsed.items()}
    if Harness(benchmark=p.benchmark, files=guess).version == version:
        return Harness(benchmark=p.benchmark, files=guess)
    paths = sorted(parsed)
    if len(paths) <= 12:
        for mask in range(2 ** len(paths)):
            files = {q: parsed[q] + ("\n" if mask >> i & 1 else "") for i, q in enumerate(paths)}
            h = Harness(benchmark=p.benchmark, files=files)
            if h.version == version:
                return h
    raise ConfigError(f"co-harness could not rebuild harness {version!r} from the observation; "
                      "pass the observation text rendered by HarnessEditEnv")


_FILE_RE = re.compile(r"^=== (\S+) ===$", re.MULTILINE)


def files_from_observation(text: str) -> dict[str, str]:
    start = text.find("Your patch is applied on top of these files.")
    end = text.find("\n\nObserved no-harness rollout evidence:", start)
    if start < 0 or end < 0:
        return {}
    body = text[start:end]
    heads = list(_FILE_RE.finditer(body))
    files = {}
    for i, m in enumerate(heads):
        stop = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        files[m.group(1)] = body[m.end() + 1: stop].rstrip("\n")
    return files


class CoHarnessPolicy(Policy):
    """``co-harness`` as a one-shot policy: one critic-attributed diff per packet, no acceptance test."""

    name = "co-harness"

    def __init__(self, critic: str | HarnessCritic = "rule") -> None:
        self.critic = make_critic(critic)

    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        from baselines.noop import NoopPolicy

        out = []
        for p in packets:
            harness = harness_for_packet(p)
            attributions = self.critic.attribute(p.packet)
            seen: set[tuple[str, str]] = set()
            fixes = []
            for _, fix in rank_fixes(p.benchmark, attributions):
                if (fix.category, fix.key) not in seen:
                    seen.add((fix.category, fix.key))
                    fixes.append(fix)
            c = combine(harness, fixes)
            out.append([c.diff] * k if c is not None else NoopPolicy().propose([p], k)[0])
        return out
