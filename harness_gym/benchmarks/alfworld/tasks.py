"""ALFWorld tasks: one immutable record per game (scene + goal).

A task holds the whole initial scene (receptacles, objects and where they are) and the
goal. It is gold data for the world and the simulated target; hooks only ever see what
the agent observes. ``identity()`` is a SHA-256 over the content.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness_gym.benchmarks.base import digest

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
TRANSFORM_OF = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
}
APPLIANCE_OF = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
STATE_OF = {"clean": "clean", "heat": "hot", "cool": "cool"}


@dataclass(frozen=True)
class AlfTask:
    """One ALFWorld game.

    ``receptacles`` are ``(name, openable, open_at_start)`` in room order; ``objects`` are
    ``(name, receptacle)`` in listing order. ``destination_type`` is empty for look tasks,
    ``toggle_type`` empty for the others. ``shared`` lists groups of receptacles that stand
    at one location (as ALFWorld's stove burners often do): arriving at one, the agent can
    use all of them.
    """

    task_id: str
    task_type: str
    goal: str
    target_type: str
    destination_type: str
    toggle_type: str
    room: str
    layout: str
    receptacles: tuple[tuple[str, bool, bool], ...]
    objects: tuple[tuple[str, str], ...]
    split: str = ""
    shared: tuple[tuple[str, ...], ...] = ()

    @property
    def transform(self) -> str:
        return TRANSFORM_OF.get(self.task_type, "")

    def identity(self) -> str:
        content: dict[str, Any] = {
            "type": self.task_type, "goal": self.goal, "target": self.target_type, "destination": self.destination_type,
            "toggle": self.toggle_type, "layout": self.layout, "receptacles": [list(r) for r in self.receptacles],
            "objects": [list(o) for o in self.objects]}
        if self.shared:
            content["shared"] = [list(g) for g in self.shared]
        return digest(content)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AlfTask:
        d = dict(data)
        d["receptacles"] = tuple((str(n), bool(o), bool(s)) for n, o, s in d["receptacles"])
        d["objects"] = tuple((str(n), str(r)) for n, r in d["objects"])
        d["shared"] = tuple(tuple(str(n) for n in g) for g in d.get("shared", ()))
        return cls(**d)


def kind(name: str) -> str:
    """The type of an instance name: ``cabinet 4`` -> ``cabinet``."""
    head, _, tail = name.rpartition(" ")
    return head if tail.isdigit() else name
