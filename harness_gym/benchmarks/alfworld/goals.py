"""Goal templates of ALFWorld (``alfworld/gen/goal_library.py``) and their inverse.

The world shows ``Your task is to: <goal>.``; ``parse_goal`` recovers the task type,
target and destination from that visible text alone (what the ctx ``task`` fields use).
"""
from __future__ import annotations

import re

TEMPLATES: dict[str, tuple[str, str]] = {
    "pick_and_place_simple": ("put a {obj} in {recep}", "put some {obj} on {recep}"),
    "pick_clean_then_place_in_recep": ("put a clean {obj} in {recep}", "clean some {obj} and put it in {recep}"),
    "pick_heat_then_place_in_recep": ("put a hot {obj} in {recep}", "heat some {obj} and put it in {recep}"),
    "pick_cool_then_place_in_recep": ("put a cool {obj} in {recep}", "cool some {obj} and put it in {recep}"),
    "pick_two_obj_and_place": ("put two {obj} in {recep}", "find two {obj} and put them in {recep}"),
    "look_at_obj_in_light": ("look at {obj} under the {toggle}", "examine the {obj} with the {toggle}"),
}
# Harness-R1 / Life-Harness short names used in ctx["task"]["task_type"]
SHORT_TYPE = {
    "pick_and_place_simple": "pick_and_place",
    "pick_clean_then_place_in_recep": "pick_clean_then_place",
    "pick_heat_then_place_in_recep": "pick_heat_then_place",
    "pick_cool_then_place_in_recep": "pick_cool_then_place",
    "pick_two_obj_and_place": "pick_two_obj",
    "look_at_obj_in_light": "look_at_obj",
}
_W = r"([a-z]+)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("pick_clean_then_place_in_recep", re.compile(rf"^put a clean {_W} in {_W}$")),
    ("pick_clean_then_place_in_recep", re.compile(rf"^clean some {_W} and put it in {_W}$")),
    ("pick_heat_then_place_in_recep", re.compile(rf"^put a hot {_W} in {_W}$")),
    ("pick_heat_then_place_in_recep", re.compile(rf"^heat some {_W} and put it in {_W}$")),
    ("pick_cool_then_place_in_recep", re.compile(rf"^put a cool {_W} in {_W}$")),
    ("pick_cool_then_place_in_recep", re.compile(rf"^cool some {_W} and put it in {_W}$")),
    ("pick_two_obj_and_place", re.compile(rf"^put two {_W} in {_W}$")),
    ("pick_two_obj_and_place", re.compile(rf"^find two {_W} and put them in {_W}$")),
    ("look_at_obj_in_light", re.compile(rf"^look at {_W} under the {_W}$")),
    ("look_at_obj_in_light", re.compile(rf"^examine the {_W} with the {_W}$")),
    ("pick_and_place_simple", re.compile(rf"^put a {_W} in {_W}$")),
    ("pick_and_place_simple", re.compile(rf"^put some {_W} on {_W}$")),
]
_TASK_LINE = re.compile(r"Your task is to: ([a-z ]+?)\s*(?:\.|$)", re.MULTILINE)


def render_goal(task_type: str, obj: str, recep: str, toggle: str, variant: int) -> str:
    template = TEMPLATES[task_type][variant % 2]
    return template.format(obj=obj, recep=recep, toggle=toggle)


def parse_goal(text: str) -> dict[str, str]:
    """``{task_type, target_type, destination_type, toggle_type}`` from a goal or an observation."""
    m = _TASK_LINE.search(text)
    goal = (m.group(1) if m else text).strip().rstrip(".").lower()
    for task_type, pattern in _PATTERNS:
        g = pattern.match(goal)
        if g:
            look = task_type == "look_at_obj_in_light"
            return {"task_type": task_type, "target_type": g.group(1),
                    "destination_type": "" if look else g.group(2), "toggle_type": g.group(2) if look else ""}
    return {"task_type": "", "target_type": "", "destination_type": "", "toggle_type": ""}
