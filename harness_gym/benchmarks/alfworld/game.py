"""The ALFWorld game: PDDL dynamics, command grammar and observation strings.

State: receptacles (open/closed), where every object is, the one held object, the
agent's location, object states (clean/hot/cool) and lamps used. ``step(command)`` accepts
exactly one admissible command after stripping surrounding whitespace (case and inner
spacing must match, as TextWorld matches them); anything else returns ``Nothing happens.``
and changes nothing. ``grammar`` selects the classic ``put X in/on Y`` / ``You arrive at
loc N.`` strings or the 2024 ``move X to Y`` / ``You arrive at Y.`` ones (alfworld >= 0.4).

The rules are the original PDDL domain's, quirks included (``oracle.py`` checks them step by
step against the original engine): only the held object can be examined; a lamp, once used,
stays "toggled" and every use says "You turn on"; objects of the task's target type that start
in the fridge are already cool; heating removes cool and cooling removes hot; clean/heat/cool
only for the object types the original marks cleanable/heatable/coolable; ``put`` only where
the receptacle type accepts the object type. Receptacles and objects are listed in the order
of their lower-cased PDDL ids (AI2-THOR class name, then number descending), as the engine
lists them.
"""
from __future__ import annotations

import random

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.alfworld.scenes import BASINS, ELIGIBLE, LAMPS, THOR_NAME, can_contain
from harness_gym.benchmarks.alfworld.tasks import APPLIANCE_OF, STATE_OF, AlfTask, kind

GRAMMARS = ("classic", "move")
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"
NOTHING = "Nothing happens."
_VERB_OF = {v: k for k, v in APPLIANCE_OF.items()}  # sinkbasin -> clean, ...
# the move grammar's help action (alfworld >= 0.4), as the engine prints it
HELP = ("Available commands:\n"
        "  look:                             look around your current location\n"
        "  inventory:                        check your current inventory\n"
        "  go to (receptacle):               move to a receptacle\n"
        "  open (receptacle):                open a receptacle\n"
        "  close (receptacle):               close a receptacle\n"
        "  take (object) from (receptacle):  take an object from a receptacle\n"
        "  move (object) to (receptacle):  place an object in or on a receptacle\n"
        "  examine (something):              examine a receptacle or an object\n"
        "  use (object):                     use an object\n"
        "  heat (object) with (receptacle):  heat an object using a receptacle\n"
        "  clean (object) with (receptacle): clean an object using a receptacle\n"
        "  cool (object) with (receptacle):  cool an object using a receptacle\n"
        "  slice (object) with (object):     slice an object using a sharp object\n")


def listing(items: list[str]) -> str:
    """TextWorld's list: ``a A``, ``a A, and a B``, ``a A, a B, and a C``."""
    parts = [f"a {x}" for x in items]
    if len(parts) <= 1:
        return parts[0] if parts else "nothing"
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def pddl_ids(task: AlfTask) -> dict[str, str]:
    """The PDDL id of every receptacle and object of ``task``, AI2-THOR style (``Cabinet_bar_0002``,
    ``Sink_bar_0000_bar_SinkBasin``). ALFWorld's demangler numbers each class by sorted id, the
    first id getting the highest number, so ``cabinet 3`` of 3 gets rank 0; the engine lists
    things in (lower-cased) id order."""
    count: dict[str, int] = {}
    names = [n for n, _, _ in task.receptacles] + [o for o, _ in task.objects]
    for n in names:
        count[kind(n)] = count.get(kind(n), 0) + 1
    out = {}
    for n in names:
        t = kind(n)
        if t not in THOR_NAME:
            raise ConfigError(f"{task.task_id}: type {t!r} has no AI2-THOR class name")
        rank = count[t] - int(n.rsplit(" ", 1)[1])
        out[n] = f"{BASINS[t]}_bar_{rank:04d}_bar_{THOR_NAME[t]}" if t in BASINS else f"{THOR_NAME[t]}_bar_{rank:04d}"
    return out


class Game:
    def __init__(self, task: AlfTask, grammar: str = "classic") -> None:
        if grammar not in GRAMMARS:
            raise ConfigError(f"grammar={grammar!r}: expected one of {list(GRAMMARS)} (classic = put X in/on Y)")
        self.task, self.grammar = task, grammar
        self.openable = {n: op for n, op, _ in task.receptacles}
        self.is_open = {n: st for n, _, st in task.receptacles}
        self.contents: dict[str, list[str]] = {n: [] for n, _, _ in task.receptacles}
        for obj, rec in task.objects:
            self.contents[rec].append(obj)
        self.where = {obj: rec for obj, rec in task.objects}
        self.held: str | None = None
        self.location: str | None = None
        self.states: dict[str, set[str]] = {o: set() for o, _ in task.objects}
        for obj, rec in task.objects:  # the original marks target-type objects found in the fridge cool
            if kind(obj) == task.target_type and kind(rec) == "fridge":
                self.states[obj].add("cool")
        self.toggled: set[str] = set()
        self.ids = pddl_ids(task)
        # locations: one per receptacle, except the groups in ``task.shared`` (stove burners side by side)
        self.spot: dict[str, str] = {n: n for n, _, _ in task.receptacles}
        for group in task.shared:
            for n in group:
                self.spot[n] = group[0]
        spots = list(dict.fromkeys(self.spot.values()))
        order = list(range(1, len(spots) + 1))
        random.Random(f"alfworld-locs:{task.identity()}").shuffle(order)
        number = {sp: order[i] for i, sp in enumerate(spots)}
        self.loc_number = {n: number[self.spot[n]] for n, _, _ in task.receptacles}
        self.won = False
        self.moves = 0

    # --- text -----------------------------------------------------------------------
    def order(self, names: list[str]) -> list[str]:
        """``names`` in the engine's listing order: by PDDL id, lower-cased as Fast Downward reads it."""
        return sorted(names, key=lambda n: self.ids[n].lower())

    def intro(self) -> str:
        names = self.order(list(self.contents))
        return (f"{WELCOME}\n\nYou are in the middle of a room. Looking quickly around you, you see "
                f"{listing(names)}.\n\nYour task is to: {self.task.goal}.")

    def at_hand(self) -> list[str]:
        """The receptacles at the agent's location (in id order); none in the middle of the room."""
        if self.location is None:
            return []
        here = self.spot[self.location]
        return self.order([r for r in self.contents if self.spot[r] == here])

    def _accessible(self, rec: str) -> bool:
        return not self.openable[rec] or self.is_open[rec]

    def _describe(self, rec: str) -> str:
        items = listing(self.order(self.contents[rec]))
        if self.openable[rec]:
            if not self.is_open[rec]:
                return f"The {rec} is closed."
            return f"The {rec} is open. In it, you see {items}."
        return f"On the {rec}, you see {items}."

    # --- commands -------------------------------------------------------------------
    def admissible(self) -> list[str]:
        cmds = {"inventory", "look"}
        hand = self.at_hand()
        cmds.update(f"go to {r}" for r in self.contents if r not in hand)
        if self.held:
            cmds.add(f"examine {self.held}")
        for here in hand:
            cmds.add(f"examine {here}")
            if self.openable[here]:
                cmds.add(f"close {here}" if self.is_open[here] else f"open {here}")
            for obj in self.contents[here]:
                if kind(obj) in LAMPS:  # the engine lets a lamp be used even inside a closed receptacle
                    cmds.add(f"use {obj}")
                elif self.held is None and self._accessible(here):
                    cmds.add(f"take {obj} from {here}")
            if self.held and self._accessible(here) and can_contain(kind(here), kind(self.held)):
                cmds.add(f"move {self.held} to {here}" if self.grammar == "move" else f"put {self.held} in/on {here}")
            verb = _VERB_OF.get(kind(here))
            if verb and self.held and kind(self.held) in ELIGIBLE[verb]:
                cmds.add(f"{verb} {self.held} with {here}")
        if self.grammar == "move":
            cmds.add("help")
        return sorted(cmds)

    def step(self, command: str) -> str:
        cmd = str(command).strip()
        if cmd not in self.admissible():
            return NOTHING
        self.moves += 1
        out = self._apply(cmd)
        self.won = self.goal_met()  # the goal as it holds now, as the engine checks it (walking away undoes a look task)
        return out

    def _apply(self, cmd: str) -> str:
        if cmd == "look":
            hand = self.at_hand()
            if not hand:  # the engine lists the receptacles at the agent's location: none, in the middle
                return "You are in the middle of a room. Looking quickly around you, you see nothing."
            names = hand[0] if len(hand) == 1 else ", ".join(hand[:-1]) + ", and " + hand[-1]
            return f"You are facing the {names}. Next to it, you see nothing."
        if cmd == "inventory":
            return f"You are carrying: a {self.held}." if self.held else "You are not carrying anything."
        if cmd == "help":
            return HELP
        if cmd.startswith("go to "):
            rec = cmd[6:]
            self.location = rec
            head = f"You arrive at {rec}." if self.grammar == "move" else f"You arrive at loc {self.loc_number[rec]}."
            return f"{head} {self._describe(rec)}"
        if cmd.startswith("open "):
            rec = cmd[5:]
            self.is_open[rec] = True
            return f"You open the {rec}. {self._describe(rec)}"
        if cmd.startswith("close "):
            rec = cmd[6:]
            self.is_open[rec] = False
            return f"You close the {rec}."
        if cmd.startswith("take "):
            obj, _, here = cmd[5:].partition(" from ")
            self.contents[here].remove(obj)
            self.where[obj], self.held = "", obj
            return f"You pick up the {obj} from the {here}."
        if cmd.startswith(("put ", "move ")):
            held = self.held
            here = cmd.split(" in/on ", 1)[1] if cmd.startswith("put ") else cmd.split(" to ", 1)[1]
            assert held is not None
            self.contents[here].append(held)
            self.where[held], self.held = here, None
            return f"You move the {held} to the {here}." if self.grammar == "move" else f"You put the {held} in/on the {here}."
        if cmd.startswith("use "):
            lamp = cmd[4:]
            self.toggled.add(lamp)  # the PDDL sets isToggled on every use: it never reads "off"
            return f"You turn on the {lamp}."
        if cmd.startswith("examine "):
            thing = cmd[8:]
            if thing in self.contents:
                return self._describe(thing)
            st = self.states.get(thing, set())
            for need, text in ((("clean", "hot"), "hot and clean"), (("clean", "cool"), "cool and clean"),
                               (("hot",), "hot"), (("clean",), "clean"), (("cool",), "cold")):
                if all(x in st for x in need):
                    return f"This is a {text} {thing}."
            return f"There's nothing special about {thing}."
        verb = cmd.split()[0]
        held = self.held
        here = cmd.rsplit(" with ", 1)[1]
        assert held is not None
        st = self.states.setdefault(held, set())
        st.add(STATE_OF[verb])
        st.discard({"heat": "cool", "cool": "hot"}.get(verb, ""))
        return f"You {verb} the {held} using the {here}."

    # --- goal -----------------------------------------------------------------------
    def goal_met(self) -> bool:
        t = self.task
        if t.task_type == "look_at_obj_in_light":
            if not self.held or kind(self.held) != t.target_type or self.location is None:
                return False
            return any(kind(o) == t.toggle_type and o in self.toggled for r in self.at_hand() for o in self.contents[r])
        need = STATE_OF.get(t.transform, "")
        good: dict[str, int] = {}
        for rec, objs in self.contents.items():
            if kind(rec) != t.destination_type:
                continue
            good[rec] = sum(1 for o in objs if kind(o) == t.target_type and (not need or need in self.states.get(o, set())))
        want = 2 if t.task_type == "pick_two_obj_and_place" else 1
        return any(v >= want for v in good.values())
