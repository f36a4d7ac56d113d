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

Advice is read as a model would: a unit counts for a concept only when it is *actionable in
the current state*. Each sim sets ``ground(unit, concept)``, which looks at the observable
state (the page's clickables and option values, the table's columns, the room's receptacles
and admissible commands) and says whether the unit names something the agent can act on
now — an action, a value or column it can use, a check it can run. A unit whose content
words are all trigger words of the sim's own concept patterns (``vocabulary``) never
counts, whatever the state: repeating "backtick cast" teaches a model nothing.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from harness_gym.types import Message

# words that carry no instruction on their own (dropped before the trigger-word test)
STOPWORDS = frozenset(
    "the and for with that this these those you your are was were not all any its into from then than when "
    "have has had but before after can may must should will would could also only just very more most each "
    "every one two out off its it's them they their there here what which who how why about over under"
    .split()
)
_WORD = re.compile(r"[a-z][a-z'\-]{2,}")


def vocabulary(concepts: dict[str, re.Pattern[str]]) -> frozenset[str]:
    """Every literal word (3+ letters) of the concept patterns: the sim's trigger words.

    Stems cut by a regex suffix (``select\\w*``, ``colou?r``) are kept as stems;
    ``trigger_only`` matches a word to a stem by prefix.
    """
    words: set[str] = set()
    for pattern in concepts.values():
        source = re.sub(r"\\.", " ", pattern.pattern)  # drop escapes (\b, \w, \d)
        for w in re.findall(r"[A-Za-z]{3,}", source):
            words.add(w.lower())
    return frozenset(words)


def _in_vocab(word: str, vocab: frozenset[str]) -> bool:
    w = word.strip("'-")
    if w in vocab:
        return True
    return any(w.startswith(v) or (len(w) >= 4 and v.startswith(w)) for v in vocab if len(v) >= 3)


_CODE = re.compile(r"`[^`]+`|'[^']+'|\"[^\"]+\"|\b[A-Z]{3,}\b|\d")


def trigger_only(unit: str, vocab: frozenset[str]) -> bool:
    """True when every content word of ``unit`` is one of the sim's trigger words.

    Quoted or backticked text, SQL written in capitals and numbers are things the agent
    can copy, never mere trigger words.
    """
    if _CODE.search(unit):
        return False
    words = [w for w in _WORD.findall(unit.lower()) if w not in STOPWORDS]
    return bool(words) and all(_in_vocab(w, vocab) for w in words)


def mentions(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as whole words (case-insensitive)."""
    phrase = phrase.strip().lower()
    if not phrase:
        return False
    return re.search(r"(?<![a-z0-9])" + re.escape(phrase) + r"(?![a-z0-9])", text.lower()) is not None


TIPS_HEADERS = ("Some tips that may help for this task:", "Additional reusable tool-use hint from the harness:")
LONG_UNIT = 600


@dataclass
class Advice:
    units: list[str] = field(default_factory=list)
    # set by the sim from the current state: does this unit name something actionable for the concept?
    ground: Callable[[str, str], bool] | None = None
    vocab: frozenset[str] = frozenset()

    def actionable(self, unit: str, concept: str) -> bool:
        if self.vocab and trigger_only(unit, self.vocab):
            return False
        return self.ground is None or self.ground(unit, concept)

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
        """The best weight any actionable unit gives ``concept`` (0 when none mentions it)."""
        best = 0.0
        pattern = concepts[concept]
        for unit in self.units:
            if not pattern.search(unit) or not self.actionable(unit, concept):
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
