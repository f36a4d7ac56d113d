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
- text costs: a target is trained with its default harness, and every word it reads that
  the default harness never showed it (system-prompt lines, skills, hints, block messages)
  raises its chance of losing its way in the episode (``TextCost``: a per-word rate, a cap;
  words of a unit that is actionable help cost ``help_share`` as much; per channel, skills
  ``skills`` and injected messages ``injected`` times a prompt word). Each sim calibrates
  its rate against the real target (docs/agreement_smol.md): a 135M agent fine-tuned on the
  default prompt loses tasks to a few nonsense lines. Words are runs of letters or digits
  (``count_words``), every unit costs at least one, and a unit with fewer than two words with
  letters (``readable``) is never help.

Advice is read as a model would: a unit counts for a concept only when it is *actionable in
the current state*. Each sim sets ``ground(unit, concept)``, which looks at the observable
state (the page's clickables and option values, the table's columns, the room's receptacles
and admissible commands) and says whether the unit names something the agent can act on
now — an action, a value or column it can use, a check it can run. A unit whose content
words are all trigger words of the sim's own concept patterns (``vocabulary``) never
counts, whatever the state: repeating "backtick cast" teaches a model nothing. Nor does a
unit that is no instruction (``instructive``: no verb of one, nothing quoted to copy) — the
same trigger words with a filler, a digit or a noun of the room added ("microwave fridge
sinkbasin zebra", "title brand") still name no action. Nor do a concept's own trigger words
ground it on the WebShop and ALFWorld sims (``blank``): they test the state against what is
left of a unit once that concept's words are taken out, so an instruction verb before them
("run cheaper zebra", "keep fridge") names nothing of this task. (The DBBench sim keeps its
generic schema words — "column names that contain spaces" is how advice names the schema.)

Advice works both ways. Each sim also names, per concept, the instructions *against* it
(``against``: "Never use backticks or CAST", "skip the option groups and click buy now at
once", "commit each answer as a full sentence"). Such a unit never counts as help for that
concept, even though it contains its words, and a model follows it as it follows help:
``discouraged`` fires with the same ``u < responsiveness * weight`` rule (no state
grounding: an explicit instruction needs none; trigger-word-only units still never count),
and the sim then makes the mistake the concept would have prevented, flaw drawn or not.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import Stemmer  # PyStemmer

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


def own_words(concepts: dict[str, re.Pattern[str]]) -> dict[str, frozenset[str]]:
    """Per concept, the trigger words of its own pattern (``vocabulary`` of that pattern alone)."""
    return {name: vocabulary({name: pattern}) for name, pattern in concepts.items()}


_ANY_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'\-]*")


@lru_cache(maxsize=8192)  # a sim tests the same units against the same concept on every turn of every episode
def blank(unit: str, words: frozenset[str]) -> str:
    """``unit`` with every word of ``words`` (a concept's trigger words, matched as ``trigger_only`` matches them)
    blanked: what is left of it to ground that concept. A concept's own trigger words never ground it, even where
    they also name something every task has (a product page's ``buy now`` and ``size``, a room's fridge): "run
    cheaper zebra", "keep fridge" name the concept and nothing of this task (such lines earned +0.04 to +0.06 on
    the WebShop and ALFWorld sims before stop 51)."""
    out, at = [], 0
    for code in _CODE.finditer(unit):  # quoted or backticked text is something to copy: kept whole ...
        out += [_blank_words(unit[at:code.start()], words), " " if trigger_only(code.group(0).strip("`'\""), words)
                else code.group(0)]  # ... unless it is only trigger words: `Stuck: "buy now"` (stall), review 51
        at = code.end()
    return "".join(out) + _blank_words(unit[at:], words)


def _blank_words(text: str, words: frozenset[str]) -> str:
    # an identifier (``click_action``, ``product_id``) names a tool or a field to use, never a trigger word
    return _ANY_WORD.sub(lambda m: m.group(0) if "_" in m.group(0) or not _in_vocab(m.group(0).lower(), words)
                         else " ", text)


# something the agent can copy: quoted or backticked text, SQL written in capitals (a bare digit is not: "backtick
# column 1" says no more than "backtick column", review 49; nor two apostrophes: "microwave's fridge's" quotes nothing)
_CODE = re.compile(r"`[^`]*[A-Za-z0-9][^`]*`|(?<![A-Za-z])'[^'\n]*[A-Za-z0-9][^'\n]*'(?![A-Za-z])|"
                   r"\"[^\"]*[A-Za-z0-9][^\"]*\"|\b[A-Z]{3,}\b")


def trigger_only(unit: str, vocab: frozenset[str]) -> bool:
    """True when every content word of ``unit`` is one of the sim's trigger words.

    Quoted or backticked text and SQL written in capitals are things the agent can copy, never
    mere trigger words.
    """
    if _CODE.search(unit):
        return False
    words = [w for w in _WORD.findall(unit.lower()) if w not in STOPWORDS]
    return bool(words) and all(_in_vocab(w, vocab) for w in words)


# Advice is an instruction: it tells the agent to do or to check something. The verbs of one (the three benchmarks'
# actions and the checks any agent can run, with the advisory ones), compared stemmed (Snowball, PyStemmer). Words
# that are mostly nouns here ("answer", "order", "match", "limit", "list", "place") are left out: a line of trigger
# words with one of them added ("cast answer", "title match") is still no instruction.
INSTRUCTION_VERBS = frozenset("""
use try check verify confirm ensure make keep stay avoid remember prefer consider follow read reread look find search
query requery run rerun retry repeat write rewrite quote escape wrap convert cast compare filter sort join count sum
include exclude remove add insert update delete select choose pick click buy purchase submit commit report give open
close heat cool chill warm clean wash rinse slice cut toggle turn switch examine inspect visit go move walk navigate
take grab get put carry bring browse scroll copy apply call stop start trim compute calculate skip leave fix replace
change finish complete went goes gone took taken made got brought did done do
""".split())


_STEMMER = Stemmer.Stemmer("english")
_VERB_STEMS = frozenset(_STEMMER.stemWords(sorted(INSTRUCTION_VERBS)))
_VERBISH = re.compile(r"[a-z][a-z'\-]+")


def instructive(unit: str) -> bool:
    """Does ``unit`` tell the agent to do something: an instruction verb (``INSTRUCTION_VERBS``, any inflection), or
    something to copy (quoted or backticked text, SQL in capitals)? Trigger words with a filler, a digit or a noun of
    the room added ("microwave fridge sinkbasin zebra", "title brand", "backtick column 1") name no action (review
    49: such lines earned +0.075 on ALFWorld, more than the template)."""
    if _CODE.search(unit):
        return True
    return not _VERB_STEMS.isdisjoint(_STEMMER.stemWords(_VERBISH.findall(unit.lower())))

NEGATION = r"(?:never|don't|do not|avoid|skip|ignore|no need to|not necessary to)"


def clause_without(*words: str, ends: str = ".;!?\n", absent: str = "") -> str:
    """A regex prefix: a clause's start (from the last of ``ends``, up to the point) where none of ``words`` (regexes
    of whole words) stands before the point, and, given ``absent`` (a regex), a clause where it occurs nowhere."""
    nowhere = r"(?![^" + ends + r"]*(?:" + absent + r"))" if absent else ""
    return r"(?:^|[" + ends + r"])" + nowhere + r"(?:(?!\b(?:" + "|".join(words) + r")\b)[^" + ends + r"])*?"


def unnegated(*also: str, ends: str = ".;!?\n", absent: str = "") -> str:
    """``clause_without`` a negation or a failure named before the point (nor any word of ``also``, e.g. conditions):
    "never pick one that costs more", "do not grab or take a similar object", "you shouldn't put it anywhere but …",
    "common mistake: buying above the limit" say the opposite of what follows."""
    return clause_without("never", "not", "cannot", r"\w+n't", "avoid", "no", "nobody", "without", r"fail\w*",
                          "mistakes?", "wrong", "errors?", *also, ends=ends, absent=absent)


# ... and nothing after it in its clause saying that this fails, nor a "no" answering it: "grab a similar one and the
# task fails", "put it anywhere? No, put it where the task says"
NO_FAILURE_AFTER = (r"(?![^.;!?\n]*\b(?:fails?|failure|wrong|mistakes?|errors?)\b)"
                    r"(?![^.;!\n]*\?\s*(?:no|never|nope|don't|do not)\b)")


# a final act refused until a condition holds: the condition is what to do ("don't buy until you choose the size"); a
# wait refused until one holds is not ("never wait until it is cooled" is against cooling)
_LIFTED = (r"\b(?:buy\w*|purchas\w*|put\w*|plac\w*|give up|stop\w*|leave|finish\w*|click\w*|decid\w*|submit\w*|"
           r"mov\w*|go|commit\w*|answer\w*)\s+(?:[\w'<>\[\]-]+\s+){0,3}?(?:until|till|before|unless|once|after)\b")


def discourages(cue: str) -> re.Pattern[str]:
    """An instruction against ``cue``: a negation, then ``cue`` in the same clause
    ("Never use backticks or CAST" discourages both ``backtick`` and ``cast``). A negated
    negation is not one ("do not skip the size option"), nor is a negation whose object comes
    first ("avoid errors by quoting names", "do not fail: quote names"), nor one whose ``cue`` is the
    condition that lifts a final act (``_LIFTED``: "don't buy until you choose the size", "do not give up until you
    open every drawer": the size and the drawer are what to do), nor one against doing it again ("never pick the
    same option twice", "don't keep clicking the selected color"), nor one whose cue is qualified by a negation
    ("never buy a product in a color not asked for")."""
    gap = (r"(?:(?!\b(?:skip|ignore|forget|miss|omit|leave|without|never|not|avoid|by|so|otherwise|else|"
           r"errors?|fail\w*|mistakes?|problems?|wrong|same|selected|chosen|already|hesitate)\b|" + _LIFTED + r")"
           r"[^.;:!?\n]){0,40}?")
    # "never pick an option twice" is against a repeat
    repeat = r"(?!\w*[^.,;:!?\n]{0,25}?\b(twice|again|more than once)\b)"
    # ... nor is one whose cue a negation right after qualifies: "never buy in a color not asked for" is for the colors
    qualified = r"(?!\w*(?:\s+[\w']+){0,3}?\s+(?:not|isn't|aren't|doesn't|don't|wrong)\b)"
    return re.compile(r"(?<!not )(?<!n't )(?<!never )\b" + NEGATION + r"\b" + gap + cue + repeat + qualified, re.I)


def draw_against(rng: "random.Random", concepts: Iterable[str]) -> dict[str, float]:
    """The per-episode uniforms ``Advice.discouraged`` reads, one per concept (of a sim's ``against``); a sim
    draws them after all its other draws, so its baselines stay as they were, and draws those of a concept it
    adds later after those, so no earlier draw moves."""
    return {f"against_{c}": rng.random() for c in concepts}


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
    # per concept: the instructions against it (never help for it; followed as harm by ``discouraged``)
    against: dict[str, re.Pattern[str]] = field(default_factory=dict)
    # units[:prompt_units] came with the system prompt; the rest were injected during the episode
    prompt_units: int | None = None
    # the prompt units a hook's ``on_init`` added (skills under the tips header, the tool hint, a tool
    # description's addition): the channel ``TextCost.skills`` prices
    skills: set[str] = field(default_factory=set)
    # how much a skill is read: its weight (as help and as an instruction against) is scaled by this
    skill_weight: float = 1.0

    def trigger_only(self, unit: str) -> bool:
        return bool(self.vocab) and trigger_only(unit, self.vocab)

    def actionable(self, unit: str, concept: str) -> bool:
        if self.trigger_only(unit) or not readable(unit) or not instructive(unit):
            return False
        return self.ground is None or self.ground(unit, concept)

    @classmethod
    def read(cls, messages: list[Message], base_system_prompt: str, ignore: tuple[str, ...] = ()) -> "Advice":
        """Collect advice units: system-prompt additions and hook-injected user/tool texts.

        ``base_system_prompt`` is the part of the system prompt the target was trained with
        (the default harness); any other system text counts as advice, line by line.
        """
        units: list[str] = []
        skills: set[str] = set()
        if messages and messages[0].get("role") == "system":
            system = str(messages[0].get("content") or "")
            trained = {line.strip() for line in base_system_prompt.splitlines()}
            in_tips = False  # past a tips header, every line is an ``on_init`` skill or tool hint
            for line in system.splitlines():
                if line.strip() in trained:
                    continue  # the prompt the target was trained with is not advice
                line = line.strip().lstrip("-").strip()
                if line in TIPS_HEADERS:
                    in_tips = True
                elif line:
                    units.append(line)
                    if in_tips:
                        skills.add(line)
        prompt_units = len(units)
        for msg in messages[2:]:
            if msg.get("role") == "user":
                text = str(msg.get("content") or "")
                if text and not is_notice(text) and text not in ignore:
                    units.append(text)
        return cls(units, prompt_units=prompt_units, skills=skills)

    def add(self, text: str) -> None:
        self.units.append(text)

    def read_tools(self, tools: list[dict] | None, harness_dir: Path) -> None:
        """What a patch added to a tool's description (beyond the default harness's ``tools.json``
        in ``harness_dir``), read with the system prompt."""
        base = _base_tool_descriptions(harness_dir)
        for tool in tools or []:
            fn = tool.get("function") or {}
            extra = str(fn.get("description", "")).replace(base.get(str(fn.get("name")), ""), "").strip()
            if extra and extra not in self.units:
                self.add_prompt(extra)
                self.skills.add(extra)

    def add_prompt(self, text: str) -> None:
        """A unit read with the system prompt (a tool description's addition), before the injected ones."""
        at = len(self.units) if self.prompt_units is None else self.prompt_units
        self.units.insert(at, text)
        if self.prompt_units is not None:
            self.prompt_units += 1

    def weight(self, concept: str, concepts: dict[str, re.Pattern[str]]) -> float:
        """The best weight any actionable unit gives ``concept`` (0 when none mentions it)."""
        best = 0.0
        pattern = concepts[concept]
        for unit in self.units:
            if not self._helps(unit, concept, pattern):
                continue
            best = max(best, self._unit_weight(unit, concepts))
        return best

    def _helps(self, unit: str, concept: str, pattern: re.Pattern[str]) -> bool:
        """``unit`` is help for ``concept``: it mentions it, is not an instruction against it, and is actionable."""
        opposed = self.against.get(concept)
        return bool(pattern.search(unit)) and not (opposed is not None and opposed.search(unit)) \
            and self.actionable(unit, concept)

    def _unit_weight(self, unit: str, concepts: dict[str, re.Pattern[str]]) -> float:
        k = sum(1 for p in concepts.values() if p.search(unit))
        k += sum(1 for p in self.against.values() if p.search(unit))
        w = min(1.0, 2.0 / max(k, 1))
        if len(unit) > LONG_UNIT:
            w *= LONG_UNIT / len(unit)
        return w * (self.skill_weight if unit in self.skills else 1.0)

    def follows(self, concept: str, concepts: dict[str, re.Pattern[str]], u: float, responsiveness: float) -> bool:
        return u < responsiveness * self.weight(concept, concepts)

    def discouraged(self, concept: str, concepts: dict[str, re.Pattern[str]], draws: dict[str, float],
                    responsiveness: float) -> bool:
        """Is an instruction against ``concept`` followed? Same rule as ``follows``, over the units
        that match ``against[concept]`` (trigger-word-only units never count), with the episode's
        uniform from ``draw_against`` (none drawn: never)."""
        opposed = self.against.get(concept)
        if opposed is None:
            return False
        weights = [self._unit_weight(unit, concepts) for unit in self.units
                   if opposed.search(unit) and not self.trigger_only(unit)]
        return draws.get(f"against_{concept}", 1.0) < responsiveness * max(weights, default=0.0)

    def distraction(self, concepts: dict[str, re.Pattern[str]], cost: "TextCost") -> float:
        """Chance of a slip this episode. Every word of a system-prompt unit costs
        ``cost.per_word``, ``cost.help_share`` of that when the unit is actionable help
        for some concept (a model can use it); trigger-word-only, generic and against-advice units
        cost in full. A skill (``on_init``: tips, tool hint) costs ``cost.skills`` times what the same
        line costs in the prompt. A message injected during the episode (hint, block message) costs
        ``cost.injected`` times as much a word, helpful or not — an unexpected turn derails a small
        model whatever it says — and the same message repeated costs once. Capped at ``cost.cap``."""
        start = len(self.units) if self.prompt_units is None else self.prompt_units
        words = 0.0
        for unit in self.units[:start]:
            helps = any(self._helps(unit, c, p) for c, p in concepts.items())
            channel = cost.skills if unit in self.skills else 1.0
            words += channel * max(1, count_words(unit)) * (cost.help_share if helps else 1.0)
        words += cost.injected * sum(max(1, count_words(unit)) for unit in dict.fromkeys(self.units[start:]))
        return min(cost.cap, cost.per_word * words)


@lru_cache(maxsize=None)
def _base_tool_descriptions(harness_dir: Path) -> dict[str, str]:
    tools = json.loads((harness_dir / "tools.json").read_text(encoding="utf-8"))
    return {t["function"]["name"]: t["function"]["description"] for t in tools}


_TOKEN = re.compile(r"[^\W_]+")


def count_words(text: str) -> int:
    """Words as a reader sees them: runs of letters or digits, so text glued with punctuation or
    underscores ("select_every_option,then-buy") costs what the same words with spaces cost."""
    return len(_TOKEN.findall(text))


def readable(unit: str) -> bool:
    """Advice has to say something: at least two words with letters in them (a bare ``` `` ``` or
    `` ` +0`` names nothing a model can act on, whatever patterns it matches)."""
    return sum(1 for t in _TOKEN.findall(unit) if any(c.isalpha() for c in t)) >= 2


_NOTICE = re.compile(r"\[NOTICE\] \d+ messages are omitted\.")


def is_notice(text: str) -> bool:
    """The runtime's own notice that older messages were dropped (never advice, never a cost); a hook's
    message that merely starts with "[NOTICE]" is advice like any other."""
    return _NOTICE.fullmatch(text.strip()) is not None


@dataclass(frozen=True)
class TextCost:
    """How much unfamiliar text costs a sim's target (``Advice.distraction``)."""

    per_word: float  # slip probability per word of system-prompt text the default harness never showed
    cap: float  # the most text can cost one episode
    help_share: float = 0.25  # a system-prompt unit that is actionable help costs this share a word
    injected: float = 1.0  # a word of a message injected mid-episode costs this many prompt words
    skills: float = 1.0  # a word of an ``on_init`` skill or tool hint costs this many prompt words
