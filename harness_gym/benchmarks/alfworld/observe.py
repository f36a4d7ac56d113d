"""What an agent knows from ALFWorld observations alone (shared by ctx and the sim).

``Tracker`` reads the intro (receptacles in the room) and each executed command with its
observation, and keeps the agent's belief: where it is, what it holds, where it saw which
object, what it opened, put, transformed and switched on. It never reads the game state.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness_gym.benchmarks.alfworld.scenes import LAMPS
from harness_gym.benchmarks.alfworld.tasks import kind

_ROOM = re.compile(r"Looking quickly around you, you see (.+?)\.(?:\n|$)")
_ARRIVE = re.compile(r"^You arrive at (?:loc \d+|[a-z]+ \d+)\.\s*(.*)$", re.DOTALL)
_CLOSED = re.compile(r"The ([a-z]+ \d+) is closed\.")
_OPEN_IN = re.compile(r"The ([a-z]+ \d+) is open\. In it, you see (.+?)\.$")
_ON = re.compile(r"On the ([a-z]+ \d+), you see (.+?)\.$")
_OPEN = re.compile(r"^You open the ([a-z]+ \d+)\.\s*(.*)$", re.DOTALL)
_CLOSE = re.compile(r"^You close the ([a-z]+ \d+)\.$")
_TAKE = re.compile(r"^You pick up the ([a-z]+ \d+) from the ([a-z]+ \d+)\.$")
_PUT = re.compile(r"^You (?:put the ([a-z]+ \d+) in/on the|move the ([a-z]+ \d+) to the) ([a-z]+ \d+)\.$")
_TRANSFORM = re.compile(r"^You (clean|heat|cool) the ([a-z]+ \d+) using the ([a-z]+ \d+)\.$")
_USE = re.compile(r"^You turn (on|off) the ([a-z]+ \d+)\.$")
_STATE = {"clean": "clean", "heat": "hot", "cool": "cool"}


def split_listing(text: str) -> list[str]:
    """``a A, a B, and a C`` -> ``[A, B, C]``; ``nothing`` -> ``[]``."""
    text = text.strip()
    if text == "nothing":
        return []
    out = []
    for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", text):
        part = part.strip()
        part = part.removeprefix("a ")
        if part:
            out.append(part)
    return out


def first_observation(text: str) -> str:
    """Drop the welcome paragraph as harnesses do (``'\\n'.join(ob.split('\\n\\n')[1:])``)."""
    parts = text.split("\n\n")
    return "\n".join(parts[1:]) if len(parts) > 1 else text


@dataclass
class Tracker:
    receptacles: list[str] = field(default_factory=list)
    location: str | None = None
    inventory: str | None = None
    object_at: dict[str, str] = field(default_factory=dict)
    visited: list[str] = field(default_factory=list)
    opened: set[str] = field(default_factory=set)
    closed: set[str] = field(default_factory=set)
    puts: list[tuple[str, str]] = field(default_factory=list)
    takes: list[tuple[str, str]] = field(default_factory=list)
    transformed: dict[str, set[str]] = field(default_factory=dict)
    lamp_location: str | None = None
    lamps_on: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)  # receptacles whose description was read

    @classmethod
    def start(cls, intro: str) -> Tracker:
        m = _ROOM.search(intro)
        return cls(receptacles=split_listing(m.group(1)) if m else [])

    def _see(self, rec: str, items: list[str]) -> None:
        for obj, at in list(self.object_at.items()):
            if at == rec and obj not in items:
                del self.object_at[obj]
        for obj in items:
            self.object_at[obj] = rec
            if kind(obj) in LAMPS:
                self.lamp_location = rec

    def _describe(self, text: str) -> None:
        if m := _CLOSED.search(text) or _OPEN_IN.search(text) or _ON.search(text):
            self.seen.add(m.group(1))
        if m := _CLOSED.search(text):
            self.closed.add(m.group(1))
            self.opened.discard(m.group(1))
        elif m := _OPEN_IN.search(text):
            self.opened.add(m.group(1))
            self.closed.discard(m.group(1))
            self._see(m.group(1), split_listing(m.group(2)))
        elif m := _ON.search(text):
            self._see(m.group(1), split_listing(m.group(2)))

    def update(self, command: str, observation: str) -> None:
        """Apply one executed command and the observation it returned."""
        obs = observation.strip()
        cmd = " ".join(command.lower().split())
        if m := _ARRIVE.match(obs):
            named = re.search(r"(?:The|On the) ([a-z]+ \d+)", m.group(1))
            self.location = named.group(1) if named else (cmd[6:] if cmd.startswith("go to ") else self.location)
            if self.location and self.location not in self.visited:
                self.visited.append(self.location)
            self._describe(m.group(1))
        elif m := _OPEN.match(obs):
            self.opened.add(m.group(1))
            self.closed.discard(m.group(1))
            self._describe(m.group(2))
        elif m := _CLOSE.match(obs):
            self.closed.add(m.group(1))
            self.opened.discard(m.group(1))
        elif m := _TAKE.match(obs):
            self.inventory = m.group(1)
            self.object_at.pop(m.group(1), None)
            self.takes.append((m.group(1), m.group(2)))
        elif m := _PUT.match(obs):
            obj = m.group(1) or m.group(2)
            self.inventory = None
            self.object_at[obj] = m.group(3)
            self.puts.append((obj, m.group(3)))
        elif m := _TRANSFORM.match(obs):
            self.transformed.setdefault(m.group(2), set()).add(_STATE[m.group(1)])
        elif m := _USE.match(obs):
            (self.lamps_on.add if m.group(1) == "on" else self.lamps_on.discard)(m.group(2))
        elif cmd.startswith("examine ") and (cmd[8:] == self.location or cmd[8:] in self.receptacles):
            self._describe(obs)  # a receptacle at hand: where the agent stands, or beside it

    def placed(self, target_type: str, destination_type: str) -> list[tuple[str, str]]:
        """Objects of the target type the agent put into a receptacle of the destination type
        and has not taken back since."""
        out = []
        for obj, rec in self.puts:
            if kind(obj) == target_type and kind(rec) == destination_type and self.object_at.get(obj) == rec:
                if (obj, rec) not in out:
                    out.append((obj, rec))
        return out
