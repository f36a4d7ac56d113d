"""How a simulated target reads advice, shared by every target's sim.

A real model follows a focused, relevant hint more often than a hint buried among many
others, and every extra piece of advice slightly raises its chance of being distracted.
``Advice`` models that, deterministically:

- every advice unit (a system-prompt tip line, a hint message, a block message) mentions
  some *concepts* (regex families defined by each target's sim);
- a unit that mentions ``k`` concepts has weight ``min(1, 2 / k)``, and a unit longer than
  600 characters loses weight in proportion — stuffing every keyword into one hint
  does not work;
- a flaw is fixed when ``u < responsiveness * weight`` for the best unit, with ``u`` a
  per-episode uniform draw (common random numbers across harness versions);
- distraction probability grows with the amount of advice (``cost_per_unit`` per unit,
  more for generic units that name no concept, capped): generic advice costs a little.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness_gym.types import Message

TIPS_HEADERS = ("Some tips that may help for this task:", "Additional reusable tool-use hint from the harness:")
LONG_UNIT = 600


@dataclass
class Advice:
    units: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, messages: list[Message], base_system_prompt: str, ignore: tuple[str, ...] = ()) -> "Advice":
        """Collect advice units: system-prompt additions and hook-injected user/tool texts.

        ``base_system_prompt`` is the part of the system prompt the target was trained with
        (the default harness); any other system text counts as advice, line by line.
        """
        units: list[str] = []
        if messages and messages[0].get("role") == "system":
            system = str(messages[0].get("content") or "")
            trained = {line.strip() for line in base_system_prompt.splitlines()}
            for line in system.splitlines():
                if line.strip() in trained:
                    continue  # the prompt the target was trained with is not advice
                line = line.strip().lstrip("-").strip()
                if line and line not in TIPS_HEADERS:
                    units.append(line)
        for msg in messages[2:]:
            if msg.get("role") == "user":
                text = str(msg.get("content") or "")
                if text and not text.startswith("[NOTICE]") and text not in ignore:
                    units.append(text)
        return cls(units)

    def add(self, text: str) -> None:
        self.units.append(text)

    def weight(self, concept: str, concepts: dict[str, re.Pattern[str]]) -> float:
        """The best weight any unit gives ``concept`` (0 when no unit mentions it)."""
        best = 0.0
        pattern = concepts[concept]
        for unit in self.units:
            if not pattern.search(unit):
                continue
            k = sum(1 for p in concepts.values() if p.search(unit))
            w = min(1.0, 2.0 / k)
            if len(unit) > LONG_UNIT:
                w *= LONG_UNIT / len(unit)
            best = max(best, w)
        return best

    def follows(self, concept: str, concepts: dict[str, re.Pattern[str]], u: float, responsiveness: float) -> bool:
        return u < responsiveness * self.weight(concept, concepts)

    def distraction(self, concepts: dict[str, re.Pattern[str]], cost_per_unit: float = 0.01,
                    cost_per_generic: float = 0.03, cap: float = 0.15) -> float:
        """Chance of a slip: every unit costs a little, generic ones (no concept) cost more."""
        generic = sum(1 for u in self.units if not any(p.search(u) for p in concepts.values()))
        return min(cap, cost_per_unit * len(self.units) + cost_per_generic * generic)
