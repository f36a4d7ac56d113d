"""A clean ALFWorld expert: a PDDL-valid plan from the scene, played one command at a time.

``respond`` has the sim policy's contract (a ``ChatRequest`` whose ``knowledge`` is the
task; an assistant message with one ``take_action`` call back). It knows the scene (where
every object starts) and the goal; everything else it reads from the conversation — the
observations (``You pick up the …``, ``You put the …``, ``You clean the …``, ``You turn on
the …``, ``You open the …``) and the ``AVAILABLE ACTIONS`` list — so it follows the world
whatever its rules (which receptacles hold what, which need opening):

1. go to where the next target object is, open it if it is closed, take the object;
2. clean/heat/cool it at the sink basin/microwave/fridge (opening the appliance when the
   transform is not yet available);
3. go to a destination receptacle where putting it is admissible (open it if needed) and
   put it; for two objects, both into the same receptacle;
4. for the look tasks: with the object in hand, go to the lamp and use it.

Every command it sends is taken from the current available actions when it can be; a
scene where no plan works (an unwinnable task) ends with the expert looking around, and
the episode fails as it must.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from harness_gym.benchmarks.alfworld.tasks import APPLIANCE_OF, AlfTask, kind
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
_OPEN = re.compile(r"You open the (.+?)\.")
_CLOSE = re.compile(r"You close the (.+?)\.")
_AT = re.compile(r"You arrive at .*?(?:On the (.+?), you see|The (.+?) is (?:open|closed))")
_AT_MOVE = re.compile(r"You arrive at (.+?)\.")


@dataclass
class Scene:
    """The scene as the expert knows it: the task's start state, updated from the observations."""

    where: dict[str, str]
    location: str | None = None
    held: str | None = None
    opened: set[str] = field(default_factory=set)
    done: dict[str, set[str]] = field(default_factory=dict)  # object -> transforms applied
    lamps_on: set[str] = field(default_factory=set)
    placed: dict[str, str] = field(default_factory=dict)  # object -> receptacle put into
    admissible: list[str] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)  # command -> times it did nothing

    @classmethod
    def read(cls, task: AlfTask, messages: list[Message]) -> Scene:
        scene = cls(where={o: r for o, r in task.objects})
        scene.opened = {n for n, op, st in task.receptacles if op and st}
        last_call = ""
        for msg in messages[1:]:
            role, text = msg.get("role"), str(msg.get("content") or "")
            if role == "assistant":
                calls = msg.get("tool_calls") or []
                last_call = ""
                if calls:
                    call = ToolCall.from_message_call(calls[0])
                    args = call.arguments if isinstance(call.arguments, dict) else {}
                    last_call = str(args.get("action", "")).strip().lower()
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
        m = _AT.search(obs)
        if obs.startswith("You arrive at"):
            if m:
                self.location = m.group(1) or m.group(2)
            elif command.startswith("go to "):
                self.location = command[6:]
            else:
                m2 = _AT_MOVE.match(obs)
                self.location = m2.group(1) if m2 else self.location
            if "is open" in obs and self.location:
                self.opened.add(self.location)
        if m := _PICK.search(obs):
            self.held = m.group(1)
            self.where[m.group(1)] = ""
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
        if m := _OPEN.search(obs):
            self.opened.add(m.group(1))
        if m := _CLOSE.search(obs):
            self.opened.discard(m.group(1))


class Planner:
    """The next command for a scene (module doc)."""

    def __init__(self, task: AlfTask, scene: Scene) -> None:
        self.task, self.s = task, scene
        self.rooms = [n for n, _, _ in task.receptacles]
        self.openable = {n: op for n, op, _ in task.receptacles}

    def can(self, cmd: str) -> bool:
        return cmd in self.s.admissible

    def goto(self, rec: str, why: str) -> tuple[str, str]:
        return f"go to {rec}", why

    def at(self, rec: str) -> bool:
        """At ``rec``'s location: there, or at a receptacle beside it (``AlfTask.shared``), where
        the world lists ``examine rec`` and refuses ``go to rec``."""
        return self.s.location == rec or (self.s.location is not None and f"examine {rec}" in self.s.admissible)

    def reach(self, rec: str, then: str, why: str) -> tuple[str, str]:
        """Go to ``rec``, open it when it is closed, then ``then``."""
        if not self.at(rec):
            return self.goto(rec, f"{why.split(';')[0].rstrip('.')}; first I go to the {rec}.")
        if self.can(then):
            return then, why
        if self.can(f"open {rec}"):
            return f"open {rec}", f"The {rec} is closed; let me open it."
        return then, why

    def plan(self) -> tuple[str, str]:
        t, s = self.task, self.s
        targets = [o for o in s.where if kind(o) == t.target_type]
        if t.task_type == "look_at_obj_in_light":
            return self.plan_look(targets)
        need = 2 if t.task_type == "pick_two_obj_and_place" else 1
        verb = t.transform
        placed = {o: r for o, r in s.placed.items() if kind(o) == t.target_type and kind(r) == t.destination_type
                  and (not verb or verb in s.done.get(o, set()))}
        held = s.held
        if held is not None and kind(held) != t.target_type:
            return self.put_anywhere(held)
        if held is None:
            into = next(iter(placed.values()), None)
            left = [o for o in targets if o not in placed and s.where.get(o) and not (into and s.where[o] == into)]
            if not left:
                return "look", "Let me look around."
            obj = min(left, key=lambda o: (self.s.where[o] != self.s.location, self.rooms.index(self.s.where[o])
                                           if self.s.where[o] in self.rooms else 99))
            rec = s.where[obj]
            return self.reach(rec, f"take {obj} from {rec}", f"The {obj} is in the {rec}; I take it.")
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

    def plan_look(self, targets: list[str]) -> tuple[str, str]:
        t, s = self.task, self.s
        lamps = [o for o in s.where if kind(o) == t.toggle_type and s.where[o]]
        if s.held is None or kind(s.held) != t.target_type:
            if s.held is not None:
                return self.put_anywhere(s.held)
            avail = [o for o in targets if s.where.get(o)]
            if not avail:
                return "look", "Let me look around."
            obj = min(avail, key=lambda o: (s.where[o] != s.location, self.rooms.index(s.where[o]) if s.where[o] in self.rooms else 99))
            rec = s.where[obj]
            return self.reach(rec, f"take {obj} from {rec}", f"The {obj} is in the {rec}; I take it.")
        if not lamps:
            return "look", "Let me look around."
        lamp = lamps[0]
        rec = s.where[lamp]
        if lamp in s.lamps_on and self.at(rec):
            return f"use {lamp}", f"Switching the {lamp} again."
        return self.reach(rec, f"use {lamp}", f"I look at the {s.held} under the {lamp}.")


def respond(request: ChatRequest) -> Message:
    """The expert's next message for the conversation in ``request`` (module doc)."""
    task: AlfTask = request.knowledge
    rnd = int(request.meta.get("round", 0))
    scene = Scene.read(task, request.messages)
    command, thought = Planner(task, scene).plan()
    return assistant_message(thought, [ToolCall(f"call_{rnd}_0", "take_action", {"action": command})])


def run_expert_episode(task: AlfTask, world: World, harness: Harness | None = None, *, seed: int = 0) -> EpisodeResult:
    """One episode with the expert as the model, through the ALFWorld runtime (default harness unless given)."""
    from harness_gym.benchmarks.alfworld.episode import run_episode
    from harness_gym.evaluation.benchmarks import get_benchmark

    async def submit(request: ChatRequest) -> Message:
        return respond(request)

    harness = harness or get_benchmark("alfworld").default_harness()
    return asyncio.run(run_episode(task, world, harness, None, submit, seed=seed))
