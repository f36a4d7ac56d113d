"""An ALFWorld expert that acts only on what it has seen: explore, take, transform, put.

``respond`` has the sim policy's contract (a ``ChatRequest`` whose ``knowledge`` is the
task; an assistant message with one ``take_action`` call back). From the task it uses only
what the first observation shows a player — the goal and the room's receptacles — never
where objects are: everything else it reads from the conversation, the observations
(``On the …, you see …``, ``The … is open. In it, you see …``, ``You pick up the …``,
``You put the …``, ``You clean the …``, ``You turn on the …``) and the ``AVAILABLE ACTIONS``
list. Its policy is one a model can learn from transcripts, because every step is
derivable from them:

1. to find an object type, go to the unexplored receptacles in a fixed commonsense order
   (``search_order``: the receptacle types that type is usually found in, then the rest of
   the room, each type's instances in number order), opening closed ones, until an
   observation lists one; objects seen on the way are remembered. (A thought listing the
   receptacles still to check was tried: SmolLM2-135M trained on it for 320k tokens wrote
   the list into a loop — docs/models.md);
2. take it; clean/heat/cool it at the sink basin/microwave/fridge;
3. go to a destination receptacle where putting it is admissible (open it if needed) and
   put it; for two objects, both into the same receptacle;
4. for the look tasks: with the object in hand, find the lamp the same way and use it.

Its thoughts name only what the transcript has shown, and each one after an observation that
lists a receptacle's contents starts with the lookup that decides the next step — "I see a
book 1 here." or "No book here." (``sighting``), naming only what it looks for now
(``looking_for``): SmolLM2-135M trained without it for 736k tokens learned the exploration
but walked past the object it was looking for, the one decision an episode that the loss
barely weighs (docs/models.md). After a refused command
the thought starts "That did nothing." ``mistake`` makes the wrong steps that
``smol data --mistakes`` injects. The gold scene is used by nobody
here: the episode's success (the world's own check) decides which transcripts are kept
(``smol/data.py``). With nothing left to explore it looks around, and the episode fails.
"""
from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field

from harness_gym.benchmarks.alfworld import scenes as S
from harness_gym.benchmarks.alfworld.ctx import normalize_action
from harness_gym.benchmarks.alfworld.tasks import APPLIANCE_OF, AlfTask, kind
from harness_gym.benchmarks.alfworld.world import action_of
from harness_gym.benchmarks.base import World
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.types import Message, ToolCall, assistant_message

_MARK = "AVAILABLE ACTIONS: "
_PICK = re.compile(r"You pick up the (.+?) from the (.+?)\.")
_PUT = re.compile(r"You (?:put|move) the (.+?) (?:in/on|to) the (.+?)\.")
_TRANSFORM = re.compile(r"You (clean|heat|cool) the (.+?) using the (.+?)\.")
_ON = re.compile(r"You turn on the (.+?)\.")
_OFF = re.compile(r"You turn off the (.+?)\.")
_AT_MOVE = re.compile(r"You arrive at (.+?)\.")
_DESC = re.compile(r"(?:On the (?P<a>[a-z]+ \d+), you see (?P<ia>[^.]*)\.|"
                   r"The (?P<b>[a-z]+ \d+) is open\. In it, you see (?P<ib>[^.]*)\.)")
_ITEM = re.compile(r"\ban? ([a-z]+ \d+)")


def search_order(obj_type: str, room: str, receptacles: list[str]) -> list[str]:
    """Where to look for ``obj_type``: the receptacle types it usually starts in (this room kind's
    list first, then other rooms'), then every other receptacle, instances in number order."""
    if obj_type in S.LAMPS:
        likely = list(S.SPOTS_OF_LAMP[obj_type])
    else:
        likely = list(S.OBJECTS.get(room, {}).get(obj_type, ()))
        for other in S.OBJECTS.values():
            likely += [t for t in other.get(obj_type, ()) if t not in likely]
    rank = {t: i for i, t in enumerate(likely)}

    def key(rec: str) -> tuple[int, int, str]:
        head, _, tail = rec.rpartition(" ")
        return rank.get(kind(rec), len(rank)), int(tail) if tail.isdigit() else 0, head

    return sorted(receptacles, key=key)


@dataclass
class Scene:
    """What the conversation has shown: where objects were seen, what was explored, held, done."""

    receptacles: list[str]
    where: dict[str, str] = field(default_factory=dict)  # object -> receptacle it was last seen in
    seen: set[str] = field(default_factory=set)  # receptacles whose contents were shown
    location: str | None = None
    held: str | None = None
    done: dict[str, set[str]] = field(default_factory=dict)  # object -> transforms applied
    lamps_on: set[str] = field(default_factory=set)
    placed: dict[str, str] = field(default_factory=dict)  # object -> receptacle put into
    admissible: list[str] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)  # command -> times it did nothing

    @classmethod
    def read(cls, task: AlfTask, messages: list[Message]) -> Scene:
        scene = cls(receptacles=[n for n, _, _ in task.receptacles])
        last_call = ""
        for msg in messages[1:]:
            role, text = msg.get("role"), str(msg.get("content") or "")
            if role == "assistant":
                last_call = command_of(msg) or ""
                continue
            if role not in ("user", "tool") or _MARK not in text:
                continue
            obs, _, listed = text.partition(_MARK)
            scene.admissible = [a.strip() for a in listed.split("\n") if a.strip()]
            scene.observe(obs.strip(), last_call)
            last_call = ""
        return scene

    def observe(self, obs: str, command: str) -> None:
        if obs.startswith("Nothing happens") and command:
            self.failed[command] = self.failed.get(command, 0) + 1
        if obs.startswith("You arrive at"):
            if command.startswith("go to "):
                self.location = command[6:]
            elif m := _AT_MOVE.match(obs):
                self.location = m.group(1)
        for m in _DESC.finditer(obs):
            rec, items = (m.group("a"), m.group("ia")) if m.group("a") else (m.group("b"), m.group("ib"))
            self.seen.add(rec)
            for o in [o for o, r in self.where.items() if r == rec]:
                del self.where[o]
            for o in _ITEM.findall(items):
                self.where[o] = rec
        if m := _PICK.search(obs):
            self.held = m.group(1)
            self.where.pop(m.group(1), None)
            self.placed.pop(m.group(1), None)
        if m := _PUT.search(obs):
            self.where[m.group(1)], self.placed[m.group(1)] = m.group(2), m.group(2)
            if self.held == m.group(1):
                self.held = None
        if m := _TRANSFORM.search(obs):
            self.done.setdefault(m.group(2), set()).add(m.group(1))
        if m := _ON.search(obs):
            self.lamps_on.add(m.group(1))
        if m := _OFF.search(obs):
            self.lamps_on.discard(m.group(1))


class Planner:
    """The next command for a scene (module doc)."""

    def __init__(self, task: AlfTask, scene: Scene) -> None:
        self.task, self.s = task, scene
        self.rooms = scene.receptacles

    def can(self, cmd: str) -> bool:
        return cmd in self.s.admissible

    def at(self, rec: str) -> bool:
        """At ``rec``'s location: there, or at a receptacle beside it (``AlfTask.shared``), where
        the world lists ``examine rec`` and refuses ``go to rec``."""
        return self.s.location == rec or (self.s.location is not None and f"examine {rec}" in self.s.admissible)

    def reach(self, rec: str, then: str, why: str) -> tuple[str, str]:
        """Go to ``rec``, open it when it is closed, then ``then``."""
        if not self.at(rec):
            return f"go to {rec}", f"{why.split(';')[0].rstrip('.')}; first I go to the {rec}."
        if self.can(then):
            return then, why
        if self.can(f"open {rec}"):
            return f"open {rec}", f"The {rec} is closed; let me open it."
        return then, why

    def find(self, obj_type: str, exclude: set[str] = frozenset()) -> tuple[str, str] | None:
        """Take a seen ``obj_type`` object (not in ``exclude``'s receptacles), or explore toward one;
        None when every receptacle has been explored without seeing one."""
        s = self.s
        seen = [o for o, r in s.where.items() if kind(o) == obj_type and r and r not in exclude]
        if seen:
            order = {r: i for i, r in enumerate(self.rooms)}
            obj = min(seen, key=lambda o: (not self.at(s.where[o]), order.get(s.where[o], 99), o))
            rec = s.where[obj]
            return self.reach(rec, f"take {obj} from {rec}", f"I see a {obj} in the {rec}; I take it.")
        return self.explore(obj_type, exclude)

    def explore(self, obj_type: str, exclude: set[str] = frozenset()) -> tuple[str, str] | None:
        """The next step toward the first unexplored receptacle in ``search_order``."""
        s = self.s
        left = [r for r in search_order(obj_type, self.task.room, self.rooms) if r not in s.seen and r not in exclude]
        while left:
            rec = left[0]
            if not self.at(rec):
                return f"go to {rec}", f"I am looking for a {obj_type}. Next I check the {rec}."
            if self.can(f"open {rec}"):
                return f"open {rec}", f"The {rec} is closed; let me open it."
            if self.can(f"examine {rec}"):
                return f"examine {rec}", f"Let me see what is in the {rec}."
            s.seen.add(rec)  # nothing to open or examine here: nothing more to learn
            left.pop(0)
        return None

    def plan(self) -> tuple[str, str]:
        t, s = self.task, self.s
        if t.task_type == "look_at_obj_in_light":
            return self.plan_look()
        verb = t.transform
        placed = {o: r for o, r in s.placed.items() if kind(o) == t.target_type and kind(r) == t.destination_type
                  and (not verb or verb in s.done.get(o, set()))}
        held = s.held
        if held is not None and kind(held) != t.target_type:
            return self.put_anywhere(held)
        if held is None:
            into = next(iter(placed.values()), None)
            return self.find(t.target_type, {into} if into else set()) or ("look", "Let me look around.")
        if verb and verb not in s.done.get(held, set()):
            app = self.first(APPLIANCE_OF[verb])
            if app is None:
                return "look", "Let me look around."
            return self.reach(app, f"{verb} {held} with {app}", f"I {verb} the {held} with the {app}.")
        dests = [r for r in self.rooms if kind(r) == t.destination_type]
        if placed:
            dests = [next(iter(placed.values()))]
        for rec in dests:
            if self.s.failed.get(self.put_cmd(held, rec), 0) == 0:
                if self.at(rec) and not self.can(self.put_cmd(held, rec)) and not self.can(f"open {rec}"):
                    continue  # the world does not take it here; try the next one
                return self.reach(rec, self.put_cmd(held, rec), f"I put the {held} in/on the {rec}.")
        return "look", "Let me look around."

    def put_cmd(self, obj: str, rec: str) -> str:
        move = next((a for a in self.s.admissible if a.startswith("move ")), None) or ("help" in self.s.admissible)
        return f"move {obj} to {rec}" if move else f"put {obj} in/on {rec}"

    def put_anywhere(self, held: str) -> tuple[str, str]:
        here = self.s.location
        if here and self.can(self.put_cmd(held, here)):
            return self.put_cmd(held, here), f"I do not need the {held}; I put it down."
        return "look", "Let me look around."

    def first(self, rtype: str) -> str | None:
        return next((r for r in self.rooms if kind(r) == rtype), None)

    def plan_look(self) -> tuple[str, str]:
        t, s = self.task, self.s
        if s.held is None or kind(s.held) != t.target_type:
            if s.held is not None:
                return self.put_anywhere(s.held)
            return self.find(t.target_type) or ("look", "Let me look around.")
        lamps = [o for o, r in s.where.items() if kind(o) == t.toggle_type and r]
        if not lamps:
            return self.find_lamp()
        lamp = min(lamps)
        rec = s.where[lamp]
        if lamp in s.lamps_on and self.at(rec):
            return f"use {lamp}", f"Switching the {lamp} again."
        return self.reach(rec, f"use {lamp}", f"I look at the {s.held} under the {lamp}.")

    def find_lamp(self) -> tuple[str, str]:
        """Explore toward a lamp while holding the object (``find`` would try to take it)."""
        return self.explore(self.task.toggle_type) or ("look", "Let me look around.")


def respond(request: ChatRequest) -> Message:
    """The expert's next message for the conversation in ``request`` (module doc)."""
    task: AlfTask = request.knowledge
    rnd = int(request.meta.get("round", 0))
    scene = Scene.read(task, request.messages)
    command, thought = Planner(task, scene).plan()
    last = _last_observation(request.messages)
    if last.startswith("Nothing happens"):
        thought = "That did nothing. " + thought  # the recovery a model must learn after a refused command
    else:  # first say what the last observation shows of what the expert looks for now (sighting)
        thought = (sighting(task, last, scene) + " " + thought).strip()
    return assistant_message(thought, [ToolCall(f"call_{rnd}_0", "take_action", {"action": command})])


def looking_for(task: AlfTask, scene: Scene) -> list[str]:
    """The object types the expert is looking for now: the target while its hands are empty, the
    lamp once it holds the object of a look task, nothing while it holds something."""
    held = scene.held
    if task.task_type == "look_at_obj_in_light" and held is not None and kind(held) == task.target_type:
        return [task.toggle_type]
    return [] if held is not None else [task.target_type]


def sighting(task: AlfTask, observation: str, scene: Scene) -> str:
    """What the last observation shows of the types the expert looks for now (``looking_for``), when
    it lists a receptacle's contents ("I see a book 1 here." / "No book here."); "" otherwise, and
    "" while it looks for nothing. Objects it has already put in place are not named. Said on every
    exploration step, so a model learns the lookup that decides when to take something from every
    step, not from one turn an episode; and it is said only when it decides something, so "I see a
    book 2 here." is never followed by walking on."""
    wanted = looking_for(task, scene)
    listings = list(_DESC.finditer(observation))
    if not listings or not wanted:
        return ""
    found = [o for m in listings for o in _ITEM.findall(m.group("ia") or m.group("ib") or "")
             if kind(o) in wanted and o not in scene.placed]
    if found:
        return "I see " + ", ".join(f"a {o}" for o in found) + " here."
    return "No " + " or ".join(wanted) + " here."


MISTAKE_ID = "mistake_"  # the tool-call id prefix of an injected wrong step (not rendered by the chat template)


def command_of(message: Message) -> str | None:
    """The command the world runs for a message's first ``take_action`` call, normalized as the
    runtime normalizes it (case, spaces, a trailing period…); None without such a call."""
    calls = message.get("tool_calls") or []
    if not calls:
        return None
    call = ToolCall.from_message_call(calls[0])
    return normalize_action(action_of(call)) if call.name == "take_action" else None


def allowed(request: ChatRequest, command: str) -> bool:
    """Whether ``command`` may go into a transcript as an untrained wrong step here: not the expert's
    own next command, not a ``put``/``move``/``use`` (any can be the step that completes the goal,
    which would then be left out of the loss), not a third identical command in a row (the
    runtime's repeat limit). The one rule for ``mistake`` and ``smol data --learner``."""
    task: AlfTask = request.knowledge
    if command == Planner(task, Scene.read(task, request.messages)).plan()[0]:
        return False
    if command.startswith(("put ", "move ", "use ")):
        return False
    mine = [command_of(m) for m in request.messages if m.get("role") == "assistant"]
    return not (len(mine) >= 2 and mine[-1] == mine[-2] == command)


def mistake(request: ChatRequest, rng: random.Random) -> Message | None:
    """A wrong step of the kinds a small trained agent makes (``smol data --mistakes``), or None
    when none fits here: a ``go to`` an instance the room does not have, a revisit of a
    receptacle already seen, the previous command again, or any listed action — each only when
    ``allowed``. Its id starts with ``MISTAKE_ID`` so training leaves it out of the loss and the
    model learns the expert's recovery."""
    task: AlfTask = request.knowledge
    rnd = int(request.meta.get("round", 0))
    mine = [m for m in request.messages if m.get("role") == "assistant"]
    if rnd == 0 or not mine or any(str(c.get("id", "")).startswith(MISTAKE_ID) for c in mine[-1].get("tool_calls") or []):
        return None
    scene = Scene.read(task, request.messages)
    previous = command_of(mine[-1])
    counts: dict[str, int] = {}
    for r in scene.receptacles:
        counts[kind(r)] = max(counts.get(kind(r), 0), int(r.rpartition(" ")[2] or 0))
    options: list[tuple[str, str]] = []
    rtype = rng.choice(sorted(counts))
    options.append((f"go to {rtype} {counts[rtype] + 1}", f"I am looking for a {task.target_type}. Next I check the {rtype} {counts[rtype] + 1}."))
    revisit = sorted(r for r in scene.seen if r != scene.location)
    if revisit:
        r = rng.choice(revisit)
        options.append((f"go to {r}", f"I am looking for a {task.target_type}. Next I check the {r}."))
    if previous:
        options.append((previous, "Let me try that again."))
    if scene.admissible:
        a = rng.choice(scene.admissible)
        options.append((a, f"Let me {a}."))
    options = [(c, t) for c, t in options if allowed(request, c)]
    if not options:
        return None
    command, thought = rng.choice(options)
    return assistant_message(thought, [ToolCall(f"{MISTAKE_ID}{rnd}_0", "take_action", {"action": command})])


def _last_observation(messages: list[Message]) -> str:
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "tool"), "")


def run_expert_episode(task: AlfTask, world: World, harness: Harness | None = None, *, seed: int = 0) -> EpisodeResult:
    """One episode with the expert as the model, through the ALFWorld runtime (default harness unless given)."""
    from harness_gym.benchmarks.alfworld.episode import run_episode
    from harness_gym.evaluation.benchmarks import get_benchmark

    async def submit(request: ChatRequest) -> Message:
        return respond(request)

    harness = harness or get_benchmark("alfworld").default_harness()
    return asyncio.run(run_episode(task, world, harness, None, submit, seed=seed))
