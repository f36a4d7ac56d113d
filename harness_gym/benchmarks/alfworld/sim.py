"""The simulated ALFWorld target: an exploring household agent with a seeded catalogue of flaws.

It reads the conversation like an LLM agent: the room listing and goal of the first
message, each observation and the AVAILABLE ACTIONS list, hints and blocks. Its belief
comes from observations only (``observe.Tracker``); its knowledge of the task is used for
nothing but drawing its persona. It searches receptacles in a commonsense order (where an
object of that type usually is), opens what is closed, takes the target, transforms it at
the appliance, places it, or holds it under the lamp. The flaws (``docs/sim_alfworld.md``)
come from the ALFWorld case studies of Harness-R1 §7; each is drawn per episode from
(task identity, episode seed), so baseline and patched runs are paired.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.alfworld import scenes as S
from harness_gym.benchmarks.alfworld.game import NOTHING
from harness_gym.benchmarks.alfworld.goals import parse_goal
from harness_gym.benchmarks.alfworld.observe import Tracker
from harness_gym.benchmarks.alfworld.tasks import (
    APPLIANCE_OF,
    STATE_OF,
    TRANSFORM_OF,
    AlfTask,
    kind,
)
from harness_gym.benchmarks.sim_reading import (
    NO_FAILURE_AFTER,
    Advice,
    TextCost,
    blank,
    count_words,
    discourages,
    draw_against,
    is_notice,
    mentions,
    own_words,
    readable,
    unnegated,
    vocabulary,
)
from harness_gym.types import Message, ToolCall, assistant_message

CONCEPTS: dict[str, re.Pattern[str]] = {
    "transform": re.compile(r"\b(clean|heat|cool|wash|warm|chill)\w* (it|the \w+|them|this|that)\b.{0,40}(first|before)|before (you )?(put|plac|mov)\w*.{0,60}\b(clean|heat|hot|cool|cold|sink|microwave|fridge)|not (yet )?(been )?(clean|hot|heated|cool|cooled|washed)|(sinkbasin|microwave|fridge)", re.IGNORECASE),
    "destination": re.compile(r"destination|(exact|correct|right|required|named) (receptacle|place|location|type)|receptacle (type )?(named|given|required)|wrong (receptacle|place|location)", re.IGNORECASE),
    "target_object": re.compile(r"substitut|similar (object|item)|look-?alike|(exact|correct|right|required) (object|item)|wrong (object|item)|not the (target|requested)|object (type )?(named|requested) in the task", re.IGNORECASE),
    "open": re.compile(r"\bopen\b.{0,40}(closed|receptacle|cabinet|drawer|fridge|inside)|closed (receptacle|cabinet|drawer|container)s?|look inside", re.IGNORECASE),
    "admissible": re.compile(r"admissible|available actions|exactly as (it is )?listed|(copy|choose|pick) (an |one )?(action )?(exactly )?from|nothing happens|invalid (action|command)|valid (action|command)", re.IGNORECASE),
    "placed": re.compile(r"already (placed|put|in)|do not (take|pick up|remove) .{0,40}(back|again|placed)|placed (object|item)s?|(second|another|different) (one|object|item|instance)", re.IGNORECASE),
    "progress": re.compile(r"already (clean|hot|heated|cool|cooled|washed|transformed)|is now (clean|hot|cool)|do not (clean|heat|cool) (it )?again|(now|next),? (go|put|place|move|bring|carry)", re.IGNORECASE),
    "lamp": re.compile(r"\blamp\b|\blight\b|turn on|switch on|\buse the\b", re.IGNORECASE),
}
# a clause (to a comma or colon: "no matter what the destination is, put it ...") that no negation governs and that is
# no time before or until something else ("before you put it anywhere, cool it")
_CLAUSE = unnegated("before", "until", ends=".;:,!?\n")
# Instructions against a concept: never help for it, and followed as harm (sim_reading, "Advice works both ways")
AGAINST: dict[str, re.Pattern[str]] = {
    # where to put it does not matter (not where to take it from: "take the apple from the first place you find it"),
    # in a clause no negation governs and no failure follows ("place it as the task says, not at the first place")
    "destination": re.compile(_CLAUSE + r"(\b(put|place|leave|drop|set|move|store)\w*\b(?:(?!\b(?:not|never|rather|"
                              r"instead|than)\b)[^.;!?\n]){0,40}?\bfirst (receptacle|place|spot|location) you (reach|"
                              r"see|find|come to)|\b(put|place|leave|drop|set|move|store)\w* (it|them|the \w+) "
                              r"anywhere\b(?! (else|but|except|other))|any (receptacle|place|spot|location) (will do|"
                              r"is fine|works)|"
                              r"(receptacle|destination|location|task)( type)? (does not|doesn't) matter)"
                              + NO_FAILURE_AFTER, re.I),
    "transform": discourages(r"\b(clean|heat|cool|wash|warm|chill)"),
    "open": discourages(r"\bopen"),
    # a look-alike will do, even on a condition ("if you cannot find it, take a similar one"), in a clause no negation
    # governs ("do not grab or take a similar object" is for it) and no failure follows
    "target_object": re.compile(_CLAUSE + r"(any (similar|other) (object|item|one) (will do|is fine|works)|"
                                r"\b(substitut\w*|use|take|grab|pick( up)?)\b (a |any )?(similar|look-?alike) "
                                r"(object|item|one))" + NO_FAILURE_AFTER, re.I),
}
# per-episode flaw probabilities (see docs/sim_alfworld.md); applicability is checked per task
FLAWS = {
    "skip_transform": 0.18, "transform_loop": 0.08, "wrong_receptacle": 0.06, "substitute_object": 0.12,
    "retake_placed": 0.20, "invalid_grammar": 0.05, "not_opening": 0.08, "examine_instead": 0.15,
    "misread_goal": 0.20, "poor_search": 0.25, "premature_done": 0.18,
}
# Per task type, where the trained real target's baseline differs from the rates above (stop 42, fitted on its
# run of the whole valid_unseen split and the baseline episodes of agreement batches 0-14; docs/sim_alfworld.md,
# "Per task type"): it fails pick-two tasks almost always, after placing the first object, and little else
# (walked on by a rewrite there, it solved 5 of 6)
FLAWS_BY_TYPE: dict[str, dict[str, float]] = {
    "pick_two_obj_and_place": {"retake_placed": 0.95, "misread_goal": 0.05, "poor_search": 0.1, "premature_done": 0.05},
    "pick_and_place_simple": {"misread_goal": 0.05, "premature_done": 0.06},
    "look_at_obj_in_light": {"examine_instead": 0.3, "lamp_from_afar": 0.8},
}
# Flaws added since, drawn after every other draw so no earlier episode moves; their rates are per type above.
# lamp_from_afar: holding the object, the real agent uses (or takes) a lamp it saw elsewhere from where it stands;
# like the second object, only being walked to the lamp sets it right (stop 42)
LATE_FLAWS = ("lamp_from_afar",)
INTRINSIC = ("misread_goal", "poor_search", "premature_done")
VOCAB = vocabulary(CONCEPTS)
OWN = own_words(CONCEPTS)
RESPONSIVENESS = 0.55  # chance a focused, relevant hint is followed
BLOCK_RESPONSIVENESS = 0.9  # chance a refusal whose message names what to do instead is followed
MAX_SAME_BLOCK = 2     # a refused command is retried at most once; then the agent does something else
# Standing text the default harness never showed (system-prompt lines, skills, tool text) re-rolls the real
# ALFWorld agent: it gets stuck, resending a command until the repeat rule ends the episode (stop 41,
# fitted on the real agent's rows of batches 0-13; docs/sim_alfworld.md, "Standing text"). Skills, shown
# under "Some tips that may help", cost TEXT_COST.skills times a prompt word. Messages that arrive mid-episode are
# read per round instead (JUMP, SLIP_PER_WORD), so they cost nothing here.
TEXT_COST = TextCost(per_word=0.002, cap=0.5, injected=0.0, skills=5.0)
STUCK_AFTER = (2, 10)  # a stuck episode starts resending after this many executed steps (drawn, end excluded)
# A message that arrives mid-episode (a hint, a refusal's message) as the real ALFWorld agent reads it
# (stop 39, fitted on its transcripts of batches 0-9; docs/sim_alfworld.md, "Fresh messages"):
# a message naming the task's transform or the lamp is acted on at once, literally: a hint 42 of 72 times,
# one that says not to 12 of 28, a refusal's message 60 of 60 (the real agent, stop 39)
JUMP = {"hint": 0.6, "negated": 0.43, "refusal": 0.95}
# Words that name a transform (any form: heated, washing), its appliances and the states it makes, per transform
TRANSFORM_STEMS = {
    "clean": ("clean", "cleans", "wash", "rins", "scrub", "sink", "sinkbasin"),
    "heat": ("heat", "preheat", "warm", "hot", "microwav"),
    "cool": ("cool", "chill", "cold", "refrigerat", "freez", "fridge", "refrigerator"),
}
# a message naming one of them, or one the concept reader takes as transform or lamp advice, names the command
TRANSFORM_WORDS = re.compile(r"\b(?:" + "|".join(s for stems in TRANSFORM_STEMS.values() for s in stems)
                             + r")(?:e|ed|es|ing|s|d|er)?\b", re.IGNORECASE)
# ... by what they do: a line names the task's transform only in words of its own kind ("heat the apple" is no help
# for a cool task: review 51's "Heat it first: apple, mug, potato, egg" grounded every transform of those objects)
TRANSFORM_KIND = {kind: re.compile(r"\b(?:" + "|".join(stems) + r")\w*", re.IGNORECASE)
                  for kind, stems in TRANSFORM_STEMS.items()}
# the commands that act on each concept (``grounds``); a concept not named here (admissible, a notice): any command
COMMAND_HEADS = {"open": ("open",), "lamp": ("use",), "destination": ("put", "move"), "placed": ("put", "move"),
                 "progress": ("put", "move"), "target_object": ("take",)}
# A line singles out the task's object or destination only among a few of its kind: a transform word before a list of
# every object it applies to ("Cool it first: apple, tomato, ..., winebottle", review 52) names each task's object, as
# a list of receptacles names each task's destination, and says which to take or where to go for no task
OBJECT_TYPES = frozenset(o for room in S.OBJECTS.values() for o in room) | frozenset(S.LAMPS)
RECEPTACLE_TYPES = frozenset(r for room in S.RECEPTACLES.values() for r in room)
MAX_NAMED = {"object": 2, "receptacle": 3}
LAMP_WORDS = re.compile(r"\b(?:desk|floor)?[ -]?lamps?\b|\blights?\b", re.IGNORECASE)
# ... and says not to when every mention follows one of these within three words, in one clause
NEGATION = re.compile(r"\b(?:do not|don't|dont|never|no need to|should not|shouldn't|must not|mustn't|avoid)\s+"
                      r"(?!forget\b|fail\b|hesitate\b|skip\w*\b|ignor\w*\b|miss\w*\b|omit\w*\b|leav\w*\b)"
                      r"(?:\w+\s+){0,2}?$", re.IGNORECASE)
# A walk a hook replaced (a forced `look` in place of my `go to`; alf-harmful-force-look, the real agent's transcripts
# of seeds 10-14, stop 44): searching, the real agent took it as made and went on to the next place 178 of 205 times,
# so the place it never reached counts as searched; holding the object it resent the walk 21 of 28 times, and the
# sim resends every such walk (a place it saw the object at or its destination is not searched for)
BELIEVE_UNMADE_WALK = 0.87
# A `take` a hook replaced (the same forced look; stop 45, the real agent's transcripts of seeds 10-15, seed 15 held
# out when it was read): the real agent resent it 46 of 88 times and moved on the other 42, leaving the object where
# it was; the sim resent every one before. It moves on with this p, the object no longer believed there
ABANDON_REPLACED_TAKE = 0.48
# Before its first command the real agent keeps to its trained opening (stop 44, its transcripts of seeds 10-14): a
# message there that names no command (no transform, no lamp) derailed none of 90 first commands ("Cabinets and
# drawers start closed: ...", "Put the object into the first receptacle you reach; ..."), so the slip below starts
# with the second command. One naming a command is still acted on as a hint is (JUMP)
SLIP_PER_WORD = 0.035  # a message that names nothing of this room derails the next command, per word ...
SLIP_CAP = 0.6         # ... up to this chance
GROUNDED_SHARE = 0.25  # a message naming an object, receptacle or listed command of this room derails this share as often
SELF_FIX = 0.35        # chance the agent fixes a "Nothing happens." on its own
MOVE_GRAMMAR_SLIP = 0.45  # in the 2024 grammar, the classic-trained agent writes `put` this often
DONE_TEXT = "I have completed the task."
NOT_EXECUTED = "The action was not executed."
TOLD = "As I was told."  # the thought of a command written from a message's words
_SPLIT = "\nAVAILABLE ACTIONS: "
_NUDGE = "You must call a tool! NEVER respond with only text."


@lru_cache(maxsize=1)
def _base_prompt() -> str:
    return (Path(__file__).parent / "harness" / "system_prompt.md").read_text(encoding="utf-8")


@lru_cache(maxsize=8192)
def singles_out(unit: str, name: str) -> bool:
    """``unit`` names ``name`` (an object or receptacle type) among at most ``MAX_NAMED`` of its kind."""
    if not mentions(unit, name):
        return False
    kind_, types = ("receptacle", RECEPTACLE_TYPES) if name in RECEPTACLE_TYPES else ("object", OBJECT_TYPES)
    return sum(1 for t in types | {name} if mentions(unit, t)) <= MAX_NAMED[kind_]


@cache
def usual_places(obj_type: str) -> tuple[str, ...]:
    """Receptacle types where an object type usually is, most typical first (commonsense prior)."""
    if obj_type in S.LAMPS:
        return S.SPOTS_OF_LAMP[obj_type]
    out: list[str] = []
    for room in S.OBJECTS.values():
        for t in room.get(obj_type, ()):
            if t not in out:
                out.append(t)
    return tuple(out)


@dataclass(frozen=True)
class Persona:
    flaws: frozenset[str]
    u: dict[str, float]
    seed: int

    @classmethod
    def draw(cls, task: AlfTask, episode_seed: int) -> Persona:
        rng = random.Random(hashlib.sha256(f"sim-alfworld:{task.identity()}:{episode_seed}".encode()).digest())
        rates = FLAWS_BY_TYPE.get(task.task_type, {})  # the same draws: only thresholds move
        flaws = {name for name, p in FLAWS.items() if rng.random() < rates.get(name, p) and _applicable(name, task)}
        if "skip_transform" in flaws:
            flaws.discard("transform_loop")
        u = {k: rng.random() for k in (*CONCEPTS, "self_fix", "distraction", "move_slip", "misread")}
        seed = rng.randrange(2**31)
        u["block"] = rng.random()  # drawn after the others: the earlier draws (and the no-hook baseline) stay as they were
        u.update(draw_against(rng, AGAINST))  # likewise, after block
        for name in LATE_FLAWS:  # after all of the above: nothing earlier moves
            if rng.random() < rates.get(name, 0.0):
                flaws.add(name)
        return cls(frozenset(flaws), u, seed)


def _applicable(flaw: str, task: AlfTask) -> bool:
    types = {kind(r) for r, _, _ in task.receptacles}
    objs = {kind(o) for o, _ in task.objects}
    if flaw in ("skip_transform", "transform_loop"):
        return bool(task.transform)
    if flaw == "retake_placed":
        return task.task_type == "pick_two_obj_and_place"
    if flaw == "examine_instead":
        return task.task_type == "look_at_obj_in_light"
    if flaw == "substitute_object":
        return S.SIMILAR_OBJECT.get(task.target_type) in objs
    if flaw == "misread_goal":
        return True
    if flaw == "wrong_receptacle":
        return bool(task.destination_type) and any(t in types for t in S.SIMILAR_RECEPTACLE.get(task.destination_type, ()))
    return True


@dataclass
class View:
    """The conversation as the agent reads it."""

    tracker: Tracker
    goal: dict[str, str]
    admissible: list[str]
    steps: list[tuple[str, str]] = field(default_factory=list)  # (my action, observation) executed
    blocked: list[str] = field(default_factory=list)
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (refused command, the hook's message)
    last: tuple[str, str] | None = None  # my last action and what came back (NOT_EXECUTED for blocks)
    advice: Advice = field(default_factory=Advice)
    fresh: list[str] = field(default_factory=list)  # messages (hints, a refusal's message) since my last action
    # (my command, where I arrived, new there) where a take of mine after my first put became a walk (a rewrite)
    walked: list[tuple[str, str, bool]] = field(default_factory=list)
    # (my call's id, receptacle, holding the object then?) where my `go to` came back as something else than an
    # arrival (a hook replaced it); keyed by the call, which a history window does not renumber
    unmade: list[tuple[str, str, bool]] = field(default_factory=list)
    # (my call's id, object, receptacle) where my `take` came back as something else than a pickup or a walk
    untaken: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def read(cls, messages: list[Message]) -> View:
        first = str(messages[1].get("content") or "") if len(messages) > 1 else ""
        head, _, adm = first.partition(_SPLIT)
        view = cls(Tracker.start(head), parse_goal(head), adm.split("\n") if adm else [])
        view.advice = Advice.read(messages, _base_prompt(), ignore=(_NUDGE,))
        pending = call_id = ""
        for msg in messages[2:]:
            role = msg.get("role")
            if role == "user":
                text = str(msg.get("content") or "")
                if text.strip() and not is_notice(text) and text != _NUDGE:
                    view.fresh.append(text)
            if role == "assistant":
                view.fresh = []
                calls = msg.get("tool_calls") or []
                pending, call_id = "", ""
                if calls:
                    call = ToolCall.from_message_call(calls[0])
                    pending, call_id = str(call.arguments.get("action", "")), call.id
                else:
                    view.last = (str(msg.get("content") or ""), "")
            elif role == "user" and view.refusals and not view.refusals[-1][1] and view.last and view.last[1] == NOT_EXECUTED:
                view.refusals[-1] = (view.refusals[-1][0], str(msg.get("content") or ""))
            elif role == "tool" and pending:
                text = str(msg.get("content") or "")
                if text == NOT_EXECUTED:
                    view.blocked.append(pending)
                    view.refusals.append((pending, ""))
                    view.last = (pending, NOT_EXECUTED)
                else:
                    obs, _, adm = text.partition(_SPLIT)
                    view.admissible = adm.split("\n") if adm else view.admissible
                    seen_before, put_before = set(view.tracker.visited) | set(view.tracker.seen), bool(view.tracker.puts)
                    # a command that came back as neither "Nothing happens." nor an arrival was replaced by a hook
                    # unless it came back as its own pickup; the draw on what I make of it is keyed by my call
                    nothing, key = obs.strip() == NOTHING, call_id or f"step{len(view.steps)}"
                    replaced = not nothing and not obs.startswith("You arrive at")
                    taken = re.match(r"take (.+?) from (.+)$", pending)
                    if replaced and pending.startswith("go to "):
                        view.unmade.append((key, pending[6:], view.tracker.inventory is not None))
                    elif replaced and taken and not obs.startswith("You pick up"):
                        view.untaken.append((key, taken.group(1), taken.group(2)))
                    view.steps.append((pending, obs))
                    view.last = (pending, obs)
                    if not nothing:
                        view.tracker.update(pending, obs)
                    loc = view.tracker.location
                    if put_before and obs.startswith("You arrive at") and pending.startswith("take ") and loc:
                        view.walked.append((pending, loc, loc not in seen_before))
                pending = ""
        return view


def respond(request: ChatRequest) -> Message:
    task: AlfTask = request.knowledge
    seed = int(request.meta.get("episode_seed", 0))
    view = View.read(request.messages)
    view.advice.read_tools(request.tools, Path(__file__).parent / "harness")
    agent = _Agent(task, Persona.draw(task, seed), view, int(request.meta.get("round", 0)),
                   int(request.meta.get("executed", 0)))
    view.advice.vocab, view.advice.ground, view.advice.against = VOCAB, agent.grounds, AGAINST
    return agent.act()


class _Agent:
    def __init__(self, task: AlfTask, persona: Persona, view: View, round_index: int, executed: int = 0) -> None:
        self.task, self.p, self.v, self.round = task, persona, view, round_index
        # commands the world executed so far in this episode: more than are in view under a history window
        self.executed = max(executed, len(view.steps))
        self.t = view.tracker
        for key, rec, holding in view.unmade:  # search walks I take as made though a hook replaced them: searched
            if not holding and rec != self.t.location and random.Random(f"{persona.seed}:unmade:{key}").random() < BELIEVE_UNMADE_WALK:
                self.t.seen.add(rec)
        for key, obj, rec in view.untaken:  # takes I give up on though a hook replaced them: not there, I believe
            if self.t.inventory != obj and random.Random(f"{persona.seed}:untaken:{key}").random() < ABANDON_REPLACED_TAKE:
                if self.t.object_at.get(obj) == rec:
                    del self.t.object_at[obj]
                self.t.seen.add(rec)
        g = view.goal
        self.target, self.dest, self.ttype = g["target_type"], g["destination_type"], g["task_type"]
        self.transform = TRANSFORM_OF.get(self.ttype, "")
        self.move_grammar = any(a.startswith("move ") for a in view.admissible) or any(
            o.startswith("You arrive at ") and not o.startswith("You arrive at loc") for _, o in view.steps)

    # --- advice ----------------------------------------------------------------------
    def has(self, flaw: str) -> bool:
        return flaw in self.p.flaws

    def follows(self, concept: str) -> bool:
        return self.v.advice.follows(concept, CONCEPTS, self.p.u[concept], RESPONSIVENESS) or self.told_by_block(concept)

    def told_by_block(self, concept: str) -> bool:
        units = [m for _, m in self.v.refusals if m]
        return bool(units) and Advice(units, ground=self.grounds, vocab=VOCAB, against=AGAINST).follows(
            concept, CONCEPTS, self.p.u["block"], BLOCK_RESPONSIVENESS)

    def kinds_here(self) -> set[str]:
        """Receptacle and object types the agent has seen in this room."""
        return {kind(r) for r in self.t.receptacles} | {kind(o) for o in self.t.object_at} | {self.target, self.dest} - {""}

    def grounds(self, unit: str, concept: str) -> bool:
        """Does ``unit`` name something actionable for this task here: an admissible command (of two words or
        more: "inventory" alone names nothing of this room), the task's object or destination, the appliance of
        its transform (one appliance: "use microwave fridge sinkbasin" says which to use for no task), the
        action list; for opening, any receptacle type of this room (a closed one may hold the object)? A
        receptacle of the room the task never needs grounds nothing else: every room has a countertop, so a
        line naming one named nothing of this task (review 49: "put destination zebra countertop" paid on
        every batch)."""
        if concept == "transform":
            # the object with what to do to it ("cool the apple in the fridge"); the appliance alone is a trigger
            # word every room has ("keep fridge" earned +0.06 on the sim, stop 51), and another appliance is no help
            named_kinds = {k for k, words in TRANSFORM_KIND.items() if words.search(unit)}
            return self.transform != "" and named_kinds == {self.transform} and singles_out(unit, self.target)
        if any(singles_out(unit, k) for k in {self.target, self.dest} - {""}):
            return True
        # the concept's own trigger words ground nothing (``blank``): "check open fridge" names every room's fridge
        bare = blank(unit, OWN[concept]) if concept in OWN else unit
        if concept in ("open", "") and any(mentions(bare, k) for k in self.kinds_here()):
            return True  # "": a message naming something of this room (derails less often, ``_fresh_reaction``)
        # a command of this room grounds what that command does: a hook that names "go to cabinet 1" beside
        # "wrong place" names no destination (review 51: a numbered command grounded every concept)
        heads = COMMAND_HEADS.get(concept)
        if any(mentions(unit, a) for a in self.v.admissible if " " in a and (heads is None or a.split()[0] in heads)):
            return True
        if concept == "admissible":
            return any(mentions(bare, w) for w in ("in/on", "list", "listed", "move", "put"))
        return concept == "lamp" and any(mentions(bare, lamp) for lamp in S.LAMPS)

    def told(self) -> dict[str, str]:
        """What refusals told the agent to do instead, when it complies: the destination type,
        the object type, or the transform, as named in a block message about that command."""
        out: dict[str, str] = {}
        if self.p.u["block"] >= BLOCK_RESPONSIVENESS:
            return out
        rec_kinds = {kind(r) for r in self.t.receptacles}
        for cmd, msg in self.v.refusals:
            if not msg:
                continue
            words = cmd.split()
            head = words[0] if words else ""
            named_recs = [k for k in rec_kinds if mentions(msg, k)]
            if head in ("put", "move"):
                rec = cmd.split(" to ")[-1] if head == "move" else cmd.split(" in/on ")[-1].split(" in ")[-1].split(" on ")[-1]
                if self.transform and (mentions(msg, self.transform) or mentions(msg, APPLIANCE_OF[self.transform])):
                    out["transform"] = self.transform
                others = [k for k in named_recs if k != kind(rec) and k != APPLIANCE_OF.get(self.transform)]
                if others:
                    out["dest"] = others[0]
            if head in ("take", "put", "move") and mentions(msg, self.target):
                out["target"] = self.target
        return out

    def active(self, flaw: str, concept: str) -> bool:
        """A fixable flaw is active — drawn for this episode, or asked for by an instruction against
        ``concept`` — unless relevant advice has been followed."""
        return (self.has(flaw) or self.told_against(concept)) and not self.follows(concept)

    def told_against(self, concept: str) -> bool:
        return self.v.advice.discouraged(concept, CONCEPTS, self.p.u, RESPONSIVENESS)

    # --- beliefs ---------------------------------------------------------------------
    def my_dest(self) -> str:
        d = self.dest
        if self.has("misread_goal"):  # intrinsic: a refusal naming the right type does not make it re-read its goal
            others = sorted({kind(r) for r in self.t.receptacles} - {d, *APPLIANCE_OF.values()}) or [d]
            return others[int(self.p.u["misread"] * len(others)) % len(others)]
        if "dest" in self.told():
            return self.told()["dest"]
        similar = [t for t in S.SIMILAR_RECEPTACLE.get(d, ()) if any(kind(r) == t for r in self.t.receptacles)]
        if not similar:
            return d
        if self.active("wrong_receptacle", "destination"):
            return similar[0]
        return d

    def acceptable(self) -> set[str]:
        ok = {self.target}
        sub = S.SIMILAR_OBJECT.get(self.target)
        if sub and self.active("substitute_object", "target_object") and "target" not in self.told():
            ok.add(sub)
        return ok

    def needs_transform(self) -> bool:
        return bool(self.transform) and (not self.active("skip_transform", "transform") or "transform" in self.told())

    def done_ok(self, obj: str) -> bool:
        return not self.needs_transform() or STATE_OF[self.transform] in self.t.transformed.get(obj, set())

    def placed(self) -> list[str]:
        dest, ok = self.my_dest(), self.acceptable()
        out = []
        for obj, rec in self.t.puts:
            if kind(obj) in ok and kind(rec) == dest and self.t.object_at.get(obj) == rec and self.done_ok(obj):
                if obj not in out:
                    out.append(obj)
        return out

    # --- acting ----------------------------------------------------------------------
    def act(self) -> Message:
        if self._stuck():
            return self._do(self.v.steps[-1][0], "Let me do that again.")
        last = self.v.last
        now = self._fresh_reaction()
        if last and last[1].strip() == NOTHING and not self._fixes_nothing():
            # after "Nothing happens." the real agent resent its command (174 of 239 messages naming no action
            # were ignored so); a message naming one is acted on first, whenever it comes (stop 40's review:
            # hints timed after failures got the advice read without the literal reading)
            return self._do(*now) if now is not None and now[1] == TOLD else self._do(last[0], "Let me try that again.")
        if now is not None:
            return self._do(*now)
        cmd, thought = self.plan()
        if cmd is None:
            return assistant_message(DONE_TEXT)
        cmd = self._phrase(cmd)
        if self.v.blocked.count(cmd) >= MAX_SAME_BLOCK:
            cmd, thought = self._instead(cmd)
        return self._do(cmd, thought)

    def _stuck(self) -> bool:
        """Does standing text the default harness never showed have this episode stuck by now? With p
        ``Advice.distraction`` (``TEXT_COST``) an episode resends its last executed command from a drawn
        step on (``STUCK_AFTER``, counted over the whole episode, not only the steps a history window leaves in
        view), as the real agent did — a second ``heat`` after heating, a ``go to`` where it stood — until the repeat
        rule ends it; an episode that finishes sooner is not hurt."""
        if not self.v.steps or self.p.u["distraction"] >= self.v.advice.distraction(CONCEPTS, TEXT_COST):
            return False
        return self.executed >= random.Random(f"{self.p.seed}:stuck").randrange(*STUCK_AFTER)

    def _instead(self, refused: str) -> tuple[str, str]:
        """Something else admissible than a command refused twice: another receptacle, the next place to search."""
        t = self.t
        options = [a for a in self.v.admissible if a.startswith("go to ") and a[6:] != t.location
                   and self.v.blocked.count(a) < MAX_SAME_BLOCK]
        order = self._search_order(self.my_dest() if t.inventory else self.target)
        for rec in order:
            if f"go to {rec}" in options and rec not in t.visited:
                return f"go to {rec}", "That was refused; let me try somewhere else."
        for rec in order:
            if f"go to {rec}" in options:
                return f"go to {rec}", "That was refused; let me try somewhere else."
        return ("look" if refused != "look" else "inventory"), "That was refused; let me look around."

    def _fresh_reaction(self) -> tuple[str, str] | None:
        """What a message that arrived since the last action makes the agent do at once, before its own
        plan (the real ALFWorld agent's transcripts, stop 39): one that names the task's transform
        (clean/heat/cool, a synonym, its appliance or the state it makes, or anything the concept reader takes
        as transform advice; negated or not) or the lamp (any lamp or light) is acted on literally, here
        and now, wherever the agent stands — ``heat egg 2 with microwave 1`` from the countertop is
        "Nothing happens." (a hint with p ``JUMP["hint"]``, one that says not to with ``JUMP["negated"]``,
        the message of the refusal of my last command with ``JUMP["refusal"]``); one that names nothing of
        this room (no object, receptacle or listed command of two words or more) derails the next command
        into one the room does not offer, with p ``SLIP_PER_WORD`` a word up to ``SLIP_CAP``. Drawn per
        round, so episodes without such messages are unchanged."""
        msgs = [m for m in dict.fromkeys(self.v.fresh) if readable(m)]
        if not msgs:
            return None
        u = random.Random(f"{self.p.seed}:fresh:{self.round}").random()
        refused = bool(self.v.last) and self.v.last[1] == NOT_EXECUTED and bool(self.v.refusals)
        said = {self.v.refusals[-1][1]} if refused else set()
        for from_refusal in (True, False):
            named = self._named_action([m for m in msgs if (m in said) == from_refusal])
            if named is not None:
                how = "refusal" if from_refusal else "negated" if named[1] else "hint"
                return (named[0], TOLD) if u < JUMP[how] else None
        if self.round == 0:  # before my first command: no slip (see SLIP_PER_WORD)
            return None
        share = GROUNDED_SHARE if any(self.grounds(m, "") for m in msgs) else 1.0
        words = sum(count_words(m) for m in msgs)
        if u < min(SLIP_CAP, SLIP_PER_WORD * share * words):
            where = self.t.location or next(iter(self._search_order(self.target)), "")
            n = next(n for n in range(1, 100) if f"take {self.target} {n} from {where}" not in self.v.admissible)
            return f"take {self.target} {n} from {where}", f"Let me take the {self.target}."
        return None

    def _named_action(self, msgs: list[str]) -> tuple[str, bool] | None:
        """The command a message names, as a small model writes it from the message's words — the task's
        transform on what it holds (or the task's object) with the first appliance of that type, or
        ``use`` of the lamp — and whether every mention of it says not to; None when no message names either.
        What the concept reader would credit as advice always names the command: no wording earns the one
        without the other."""
        text = " ".join(msgs)
        said = list(TRANSFORM_WORDS.finditer(text))
        if self.transform and (said or CONCEPTS["transform"].search(text)):
            app_type = APPLIANCE_OF[self.transform]
            app = self._first_of(app_type) or f"{app_type} 1"
            negated = bool(said) and all(NEGATION.search(text[:m.start()]) for m in said)
            return f"{self.transform} {self.t.inventory or self.target} with {app}", negated
        if self.ttype == "look_at_obj_in_light" and (LAMP_WORDS.search(text) or CONCEPTS["lamp"].search(text)):
            want = self._lamp_type()
            lamp = next((o for o in self.t.object_at if kind(o) == want), want)
            return f"use {lamp}", False
        return None

    def _fixes_nothing(self) -> bool:
        return self.p.u["self_fix"] < SELF_FIX or self.follows("admissible")

    def _phrase(self, cmd: str) -> str:
        """How the agent writes a command: its grammar slips are here."""
        if not (cmd.startswith("put ") or cmd.startswith("move ")):
            return cmd
        if self.v.last and self.v.last[1].strip() == NOTHING:
            return cmd  # it just failed: it copies the listed form now
        slip = self.has("invalid_grammar") or (self.move_grammar and self.p.u["move_slip"] < MOVE_GRAMMAR_SLIP)
        if not slip or self.follows("admissible"):
            return cmd
        m = re.match(r"(?:put (.+) in/on|move (.+) to) (.+)$", cmd)
        if not m:
            return cmd
        obj, rec = m.group(1) or m.group(2), m.group(3)
        if self.move_grammar:
            return f"put {obj} in/on {rec}"
        return f"put {obj} {'in' if kind(rec) in ('cabinet', 'drawer', 'fridge', 'microwave', 'safe', 'garbagecan') else 'on'} {rec}"

    def _put(self, obj: str, rec: str) -> str:
        return f"move {obj} to {rec}" if self.move_grammar else f"put {obj} in/on {rec}"

    def plan(self) -> tuple[str | None, str]:
        t = self.t
        if self.has("poor_search") and self._waste():
            return "look", "Let me look around."
        if self.ttype == "look_at_obj_in_light":
            return self._plan_look()
        need = 2 if self.ttype == "pick_two_obj_and_place" else 1
        placed = self.placed()
        held = t.inventory
        if held is None and len(placed) >= need:
            return None, DONE_TEXT
        if held is not None:
            if self.has("premature_done") and kind(held) in self.acceptable():
                return None, DONE_TEXT
            if kind(held) not in self.acceptable() or (held in placed and len(placed) >= need):
                return self._put_back(held)
            if self.needs_transform() and not self.done_ok(held):
                app = self._first_of(APPLIANCE_OF[self.transform])
                if app is None:
                    return self._explore()
                if not self._at(app):
                    return f"go to {app}", f"I need to {self.transform} the {held}."
                return f"{self.transform} {held} with {app}", f"Now I {self.transform} the {held}."
            loop = self.transform and self.active("transform_loop", "progress") and self.v.steps and \
                self.v.steps[-1][0].startswith(f"{self.transform} {held} with")
            if loop:
                return self.v.steps[-1][0], f"Let me {self.transform} it properly."
            rec = self._first_of(self.my_dest())
            if rec is None:
                return self._explore()
            if not self._at(rec):
                return f"go to {rec}", f"Now I take the {held} to the {kind(rec)}."
            if rec in t.closed:
                return f"open {rec}", f"The {rec} is closed."
            return self._put(held, rec), f"I put the {held} here."
        return self._fetch(exclude=set(placed))

    def _plan_look(self) -> tuple[str | None, str]:
        t = self.t
        held = t.inventory
        if held is None or kind(held) not in self.acceptable():
            if held is not None:
                return self._put_back(held)
            return self._fetch(exclude=set())
        want = self._lamp_type()
        lamp = next((o for o, r in t.object_at.items() if kind(o) == want), None)
        if lamp is None:
            return self._explore(want=want)
        lamp_loc = t.object_at[lamp]
        if not self._at(lamp_loc):
            if self.has("lamp_from_afar"):  # as the real agent did: "Nothing happens.", resent until the repeat rule
                return f"use {lamp}", f"I turn on the {lamp}."
            return f"go to {lamp_loc}", "Now I need the lamp."
        if self.active("examine_instead", "lamp") or self.has("misread_goal"):
            if any(a == f"examine {held}" for a, _ in self.v.steps[-3:]):
                return None, DONE_TEXT
            return f"examine {held}", f"Let me examine the {held} here."
        if lamp in t.lamps_on:
            return f"use {lamp}", "The lamp is on."
        return f"use {lamp}", f"I turn on the {lamp}."

    def _lamp_type(self) -> str:
        """The lamp the goal names (a desk lamp or a floor lamp), the desk lamp when it names none."""
        return self.v.goal["toggle_type"] if self.v.goal["toggle_type"] in S.LAMPS else S.LAMPS[0]

    def _fetch(self, exclude: set[str]) -> tuple[str, str]:
        t, ok = self.t, self.acceptable()
        # the second object of a pick-two task, as the real agent went for it (stop 42): no message sets this
        # right (0 of 324 real episodes under the other panel patches); a take of mine after the
        # first put turned into a walk to where that take named or to a place I had not searched (mediation's
        # rewrites: 5 of 6) does, for the rest of the episode; a walk anywhere else does not
        walked = any(cmd.endswith(f" from {loc}") or new for cmd, loc, new in self.v.walked)
        retake = self.has("retake_placed") and bool(exclude) and not walked
        if retake:
            others = [(o, r) for o, r in t.object_at.items() if kind(o) in ok and o not in exclude]
            here = [(o, r) for o, r in others if self._at(r)]
            if not here and others:  # it saw another one: it takes it from where it stands ("Nothing happens.")
                obj, rec = others[0]
                return f"take {obj} from {rec}", f"I saw another {kind(obj)} at the {rec}."
        blocked = set(self.v.blocked) if self.follows("target_object") or self.follows("placed") else set()
        cands = [(o, r) for o, r in t.object_at.items() if kind(o) in ok and (retake or o not in exclude)
                 and f"take {o} from {r}" not in blocked]
        if self.follows("target_object") or self.follows("placed"):
            cands = [(o, r) for o, r in cands if kind(o) == self.target]
        cands.sort(key=lambda c: (c[1] != t.location, kind(c[0]) != self.target and False))
        if cands:
            obj, rec = cands[0]
            if not self._at(rec):
                return f"go to {rec}", f"I saw a {obj} at the {rec}."
            return f"take {obj} from {rec}", f"I take the {obj}."
        return self._explore()

    def _explore(self, want: str = "") -> tuple[str, str]:
        t = self.t
        opens = not self.active("not_opening", "open")
        if t.location and t.location in t.closed and opens:
            return f"open {t.location}", f"Let me look inside the {t.location}."
        order = self._search_order(want or self.target)
        beside = [r for r in order if r != t.location and self._at(r)]  # at this location too (shared)
        for rec in beside:
            if rec in t.closed and opens:
                return f"open {rec}", f"Let me look inside the {rec}."
        for rec in order:
            if rec not in t.visited and rec not in t.seen:
                if rec in beside:  # no walking: the world refuses "go to" where the agent stands
                    return f"examine {rec}", f"The {rec} is right here; let me check it."
                return f"go to {rec}", f"Next I check the {rec}."
        for rec in order:  # second pass: open what was left closed
            if rec in t.closed and not self._at(rec):
                return f"go to {rec}", f"The {rec} was closed; let me open it."
        return "look", "I cannot find it."

    def _at(self, rec: str) -> bool:
        """Is ``rec`` at the agent's location: where it went, or beside it (a shared location,
        where the actions list ``examine rec`` and no ``go to rec``)?"""
        loc = self.t.location
        return loc == rec or (loc is not None and f"examine {rec}" in self.v.admissible
                              and f"go to {rec}" not in self.v.admissible)

    def _search_order(self, obj_type: str) -> list[str]:
        rng = random.Random(f"{self.p.seed}:{obj_type}")
        places = usual_places(obj_type)
        if self.has("poor_search"):
            recs = list(self.t.receptacles)
            rng.shuffle(recs)
            return recs
        def rank(rec: str) -> tuple[int, float]:
            k = kind(rec)
            return (places.index(k) if k in places else len(places), rng.random())
        return sorted(self.t.receptacles, key=rank)

    def _first_of(self, rtype: str) -> str | None:
        recs = sorted((r for r in self.t.receptacles if kind(r) == rtype), key=lambda r: int(r.rsplit(" ", 1)[1]))
        return recs[0] if recs else None

    def _put_back(self, held: str) -> tuple[str, str]:
        t = self.t
        if t.location and kind(t.location) != self.dest and t.location not in t.closed and S.can_contain(kind(t.location), kind(held)):
            return self._put(held, t.location), f"This is not the right object; I put the {held} down."
        src = next((r for o, r in reversed(t.takes) if o == held), None)
        if src and not self._at(src):
            return f"go to {src}", f"I put the {held} back where it was."
        spot = next((r for r in t.receptacles if kind(r) != self.dest and r not in t.closed and not self._at(r)
                     and S.can_contain(kind(r), kind(held))), None)
        return (f"go to {spot}" if spot else "look"), "I need somewhere to put this down."

    def _waste(self) -> bool:
        rng = random.Random(f"{self.p.seed}:waste:{self.round}")
        return rng.random() < 0.4

    def _do(self, action: str, thought: str) -> Message:
        return assistant_message(thought, [ToolCall(f"call_{self.round}_0", "take_action", {"action": action})])
