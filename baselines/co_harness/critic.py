"""``HarnessCritic``: attribute each failure in a packet to the part of the harness at fault.

Categories (Co-Harness): ``prompt_ambiguity`` (the instructions leave the expected form
open), ``tool_schema_error`` (the tool description does not say how to call it right),
``skill_missing`` (a reusable piece of know-how is absent), ``middleware_mismatch`` (the
runtime lets an action through that it should stop: hooks), ``memory_overflow`` (long
repeated loops, history the agent cannot use) and ``agent_error`` (nothing in the harness
explains it — e.g. a misread question; never patched).

``RuleCritic`` (the CPU default) reads packet signatures only: the rendered messages and
``signals`` of each failure, never gold data, through the benchmark's rule table
(``rules.py``: DBBench here, WebShop and ALFWorld in their own modules, a generic one else). ``ModelCritic`` asks any chat backend
(``critic="model:<target string>"``) and falls back to the rules for a failure whose
reply names no category.
"""
from __future__ import annotations

import asyncio
import json
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness_gym.errors import ConfigError

CATEGORIES = ("prompt_ambiguity", "tool_schema_error", "skill_missing", "middleware_mismatch",
              "memory_overflow", "agent_error")
PATCHABLE = CATEGORIES[:-1]

# DBBench signature -> category (order = priority when a failure shows several).
DBBENCH_RULES: tuple[tuple[str, str], ...] = (
    ("commit_before_sql", "middleware_mismatch"),
    ("commit_before_mutation", "middleware_mismatch"),
    ("identifier_error", "tool_schema_error"),
    ("verbose_answer", "prompt_ambiguity"),
    ("empty_result", "skill_missing"),
    ("numeric_text", "skill_missing"),
    ("mutation_format", "skill_missing"),
    ("empty_commit", "middleware_mismatch"),
    ("repeated_sql", "memory_overflow"),
)
# A second category worth trying when the first one's fix does not pay off.
ALSO = {"identifier_error": "skill_missing"}
LONG_LOOP = 3  # the same call this many times, or a trace that hit the round limit / was cut


@dataclass(frozen=True)
class Attribution:
    """One failure's diagnosis: ``category`` first, ``secondary`` categories also implicated."""

    task_id: str
    index: int
    category: str
    signatures: tuple[str, ...]
    secondary: tuple[str, ...] = ()
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class HarnessCritic(ABC):
    """``attribute(packet) -> one Attribution per failure trace in the packet``."""

    name = "critic"

    @abstractmethod
    def attribute(self, packet: dict[str, Any]) -> list[Attribution]:
        ...


def category_counts(attributions: Sequence[Attribution]) -> Counter[str]:
    return Counter(a.category for a in attributions)


class RuleCritic(HarnessCritic):
    """Deterministic attribution from packet signatures (messages and signals)."""

    name = "rule"

    def attribute(self, packet: dict[str, Any]) -> list[Attribution]:
        bench = packet.get("benchmark", "")
        return [self._one(bench, t) for t in packet.get("failures", [])]

    def _one(self, bench: str, trace: dict[str, Any]) -> Attribution:
        from baselines.co_harness.rules import rules_for

        table = rules_for(bench)
        sigs = table.signatures(trace)
        cats = [c for s, c in table.rules if s in sigs]
        cats += [c for s in sigs for c in table.also.get(s, ())]
        patchable = [c for c in dict.fromkeys(cats) if c != "agent_error"]
        task_id, index = trace.get("task_id", ""), int(trace.get("index", -1))
        if not patchable:
            why = (f"only intrinsic signatures ({', '.join(sigs)}): an agent error no edit answers" if sigs
                   else "no harness signature explains it (misread question or intrinsic error)")
            return Attribution(task_id, index, "agent_error", tuple(sigs), reason=why)
        return Attribution(task_id, index, patchable[0], tuple(sigs), tuple(patchable[1:]),
                           reason=f"signatures: {', '.join(sigs)}")


def dbbench_signatures(trace: dict[str, Any]) -> list[str]:
    from baselines import template_dbbench

    sigs = set(template_dbbench.detect({"failures": [trace]}))
    if _long_loop(trace):
        sigs.add("repeated_sql")
    return sorted(sigs)


def _long_loop(trace: dict[str, Any]) -> bool:
    s = trace.get("signals", {})
    cut = any(m.startswith("...[trace truncated") or "[NOTICE]" in m for m in trace.get("messages", []))
    same = max((int(v) for k, v in s.items() if isinstance(v, (int, float))
                and k.startswith(("max_same", "repeated"))), default=0)
    return same >= LONG_LOOP or ((cut or trace.get("status") == "task_limit_reached") and same >= 2)


# Benchmarks without their own rules: read the generic signals every packet tends to have.
# (WebShop and ALFWorld have their own: webshop_rules.py, alfworld_rules.py.)
GENERIC_RULES: tuple[tuple[str, str], ...] = (
    ("text_only", "prompt_ambiguity"),
    ("tool_error", "tool_schema_error"),
    ("repeated_sql", "memory_overflow"),
)


def generic_signatures(trace: dict[str, Any]) -> list[str]:
    s = trace.get("signals", {})
    sigs = []
    if s.get("text_only_turns", 0):
        sigs.append("text_only")
    if s.get("error_results", 0) or s.get("invalid_actions", 0) or s.get("nothing_happens", 0):
        sigs.append("tool_error")
    if _long_loop(trace):
        sigs.append("repeated_sql")
    return sigs


# ----------------------------------------------------------------------------- model critic

CRITIC_SYSTEM = (
    "You attribute failed agent traces to the part of the agent's harness at fault. Categories: "
    "prompt_ambiguity (instructions leave the expected answer form open), tool_schema_error (a tool "
    "description does not say how to call it correctly), skill_missing (reusable know-how is absent), "
    "middleware_mismatch (the runtime lets through an action it should block), memory_overflow (long "
    "repeated loops or history the agent cannot use), agent_error (the harness cannot explain it). "
    'Reply with one JSON object: {"attributions": [{"index": <trace index>, "category": <category>, '
    '"reason": <one sentence>}]}.'
)


class ModelCritic(HarnessCritic):
    """Attribution by a chat model (any backend of ``make_backend``); rules fill the gaps."""

    name = "model"

    def __init__(self, target: str, backend: Any = None) -> None:
        from harness_gym.models.factory import make_backend

        self.target = target
        self.backend = backend if backend is not None else make_backend(target)
        self.fallback = RuleCritic()

    def attribute(self, packet: dict[str, Any]) -> list[Attribution]:
        from harness_gym.models.base import ChatRequest, Sampling

        rules = self.fallback.attribute(packet)
        req = ChatRequest(messages=[{"role": "system", "content": CRITIC_SYSTEM},
                                    {"role": "user", "content": packet.get("text", "")}],
                          tools=[], sampling=Sampling(temperature=0.0, max_tokens=1024), seed=0)
        reply = asyncio.run(self.backend.generate([req]))[0]
        by_index = parse_model_attributions(str(reply.get("content") or ""))
        out = []
        for a in rules:
            cat, reason = by_index.get(a.index, (None, ""))
            out.append(Attribution(a.task_id, a.index, cat, a.signatures, a.secondary, "model: " + reason)
                       if cat else a)
        return out


def parse_model_attributions(text: str) -> dict[int, tuple[str, str]]:
    """``{trace index: (category, reason)}`` from the critic model's reply (bad entries dropped)."""
    out: dict[int, tuple[str, str]] = {}
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("attributions"), list):
            for item in obj["attributions"]:
                if isinstance(item, dict) and item.get("category") in CATEGORIES:
                    try:
                        out[int(item.get("index"))] = (item["category"], str(item.get("reason", ""))[:300])
                    except (TypeError, ValueError):
                        continue
            break
    return out


def make_critic(spec: str | HarnessCritic = "rule") -> HarnessCritic:
    """``"rule"`` (default) or ``"model:<target string>"`` (e.g. ``model:openai:http://h:8000/v1#m``)."""
    if isinstance(spec, HarnessCritic):
        return spec
    if spec == "rule":
        return RuleCritic()
    if spec.startswith("model:"):
        return ModelCritic(spec[len("model:"):])
    raise ConfigError(f"critic={spec!r}: expected 'rule' or 'model:<target string>' (e.g. 'model:sim')")
