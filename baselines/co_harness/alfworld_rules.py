"""ALFWorld rules of the Co-Harness critic: failure signatures read from packet transcripts,
their categories, and the local edits that answer them.

Signatures come from the goal line, the agent's commands and the observations in the
packet (never from gold data): ``skip_transform`` (put the target in the destination
type without the clean/heat/cool step), ``transform_loop`` (the same transform command
again right after it worked), ``substitute_object`` (picked up an object of another type),
``wrong_receptacle`` (put the target into another receptacle type), ``retake_placed``
(took back an object already placed, two-object tasks), ``invalid_grammar`` (a put/move/
take answered by "Nothing happens."), ``not_opening`` (walked away from a closed
receptacle), ``examine_instead`` (examined the object on a look task instead of using the
lamp), and two intrinsic ones (``agent_error``): ``premature_done`` (claimed success while
still holding the object) and ``idle_look`` (three or more idle ``look`` commands).
"""
from __future__ import annotations

import json
import re
from typing import Any

from baselines.co_harness.edits import (
    Fix,
    add_hook,
    add_prompt_line,
    add_skill,
    guard_hook,
    hint_hook,
    set_config,
    skill_hook,
    tool_hint,
)
from harness_gym.benchmarks.alfworld.goals import parse_goal

_ACTION = re.compile(r"^ASSISTANT_TOOL: take_action (\{.*\})$")
_TRANSFORM = re.compile(r"^You (clean|heat|cool) the ([a-z]+ \d+) using", re.IGNORECASE)
_PUT = re.compile(r"^You (?:put the ([a-z]+ \d+) in/on the|move the ([a-z]+ \d+) to the) ([a-z]+ \d+)")
_TAKE = re.compile(r"^You pick up the ([a-z]+ \d+) from the ([a-z]+ \d+)")
NOTHING = "nothing happens"
DONE_CLAIM = re.compile(r"\b(completed|finished|done with) the task\b", re.IGNORECASE)

RULES: tuple[tuple[str, str], ...] = (
    ("invalid_grammar", "middleware_mismatch"),
    ("skip_transform", "skill_missing"),
    ("substitute_object", "middleware_mismatch"),
    ("retake_placed", "memory_overflow"),
    ("transform_loop", "memory_overflow"),
    ("wrong_receptacle", "prompt_ambiguity"),
    ("examine_instead", "skill_missing"),
    ("not_opening", "skill_missing"),
    ("premature_done", "agent_error"),
    ("idle_look", "agent_error"),
)
ALSO: dict[str, tuple[str, ...]] = {
    "invalid_grammar": ("tool_schema_error",),
    "skip_transform": ("middleware_mismatch",),
    "substitute_object": ("prompt_ambiguity",),
    "retake_placed": ("middleware_mismatch",),
    "wrong_receptacle": ("middleware_mismatch",),
}


def kind(name: str) -> str:
    parts = name.split()
    return " ".join(parts[:-1]) if parts and parts[-1].isdigit() else name


def _steps(trace: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
    """The goal, (command, observation) pairs in order, and the assistant texts outside tool calls."""
    lines = [str(x) for x in trace.get("messages", [])]
    goal = next((parse_goal(x) for x in lines if x.startswith("USER:") and "Your task is to:" in x), parse_goal(""))
    steps: list[tuple[str, str]] = []
    texts: list[str] = []
    pending: str | None = None
    for line in lines:
        m = _ACTION.match(line)
        if m:
            try:
                pending = " ".join(str(json.loads(m.group(1)).get("action", "")).lower().split())
            except (ValueError, AttributeError):
                pending = ""
        elif line.startswith("OBSERVATION: ") and pending is not None:
            steps.append((pending, line[len("OBSERVATION: "):].split(" AVAILABLE ACTIONS:")[0].strip()))
            pending = None
        elif line.startswith("ASSISTANT_TEXT: ") and pending is None:
            texts.append(line[len("ASSISTANT_TEXT: "):])
    return goal, steps, texts


def signatures(trace: dict[str, Any]) -> list[str]:
    """The ALFWorld signatures one failure trace shows, sorted."""
    goal, steps, texts = _steps(trace)
    target, dest, task_type = goal["target_type"], goal["destination_type"], goal["task_type"]
    if not target:
        return []
    found: set[str] = set()
    transformed: set[str] = set()
    placed: set[str] = set()
    held: str | None = None
    for i, (act, obs) in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else ""
        if m := _TRANSFORM.match(obs):
            if m.group(2).lower() in transformed and steps[i - 1][0] == act:
                found.add("transform_loop")
            transformed.add(m.group(2).lower())
        elif m := _TAKE.match(obs):
            obj = m.group(1)
            held = obj
            if kind(obj) != target:
                found.add("substitute_object")
            elif obj in placed:
                found.add("retake_placed")
            placed.discard(obj)
        elif m := _PUT.match(obs):
            obj, rec = m.group(1) or m.group(2), m.group(3)
            held = None
            if kind(obj) == target and kind(rec) == dest:
                placed.add(obj)
                if "then_place" in task_type and obj not in transformed:
                    found.add("skip_transform")
            elif kind(obj) == target and dest:
                found.add("wrong_receptacle")
        elif obs.lower().rstrip(".") == NOTHING and act.split(" ")[0] in ("put", "move", "take"):
            found.add("invalid_grammar")
        if " is closed." in obs and act.startswith("go to ") and nxt.startswith("go to "):
            found.add("not_opening")
        if task_type == "look_at_obj_in_light" and act.startswith(f"examine {target} "):
            found.add("examine_instead")
    if held is not None and task_type != "look_at_obj_in_light" and any(DONE_CLAIM.search(t) for t in texts):
        found.add("premature_done")
    if sum(1 for a, _ in steps if a == "look") >= 3:
        found.add("idle_look")
    return sorted(found)


# ----------------------------------------------------------------------------- fixes

KIND_OF = '''def kind_of(name):
    parts = str(name).split()
    if parts and parts[-1].isdigit():
        parts = parts[:-1]
    return " ".join(parts)

'''
_TASK = ('    t = ctx["task"]\n'
         '    verb = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", '
         '"pick_cool_then_place": "cool"}.get(t["task_type"], "")\n'
         '    app = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}.get(verb, "")\n')
# on_before_action: remember transformed objects from the latest observation, read the command
_ACT = ('    w = ctx["world"]\n    held = w["inventory"]\n'
        '    m = re.match(r"you (clean|heat|cool) the (.+?) using", ctx["observation"].lower())\n'
        '    if m and m.group(2) not in nb.get("transformed", []):\n'
        '        nb["transformed"] = nb.get("transformed", []) + [m.group(2)]\n'
        '    act = ctx["action"]["final_action"] or ctx["action"]["normalized"]\n'
        '    words = act.split(" ")\n'
        '    md = re.match(r"(?:put|move) .+? (?:in/on|in|on|to) (.+)$", act)\n'
        '    dest = md.group(1) if md else ""\n')
_PUTTING = 'dest and held and kind_of(held) == t["target_type"]'


def fixes() -> list[Fix]:
    """Ordered catalogue: (category, signature) -> one local edit of the ALFWorld harness."""
    return [
        Fix("middleware_mismatch", "invalid_grammar", "Map near-miss commands to the closest admissible one.",
            set_config("action_mapping", "closest", lambda v: v == "exact")),
        Fix("tool_schema_error", "invalid_grammar", "Say in the take_action description to copy the listed form.",
            tool_hint("take_action", "Copy put commands exactly as listed, with 'in/on' (or 'move ... to ...' "
                                     "when that is the listed form).")),
        Fix("skill_missing", "skip_transform", "Skill (transform tasks): clean/heat/cool first, then place.",
            add_hook("on_init", skill_hook(
                "verb", "verb.capitalize() + \" the \" + t[\"target_type\"] + \" with the \" + app + \" first, "
                "before you put it in the \" + t[\"destination_type\"] + \".\"", setup=_TASK))),
        Fix("middleware_mismatch", "skip_transform", "Block a put of the target before its transform step.",
            add_hook("on_before_action", guard_hook(
                f"verb and {_PUTTING} and kind_of(dest) == t[\"destination_type\"] and held not in "
                "nb.get(\"transformed\", [])",
                "\"The \" + t[\"target_type\"] + \" has not been \" + verb + \"ed yet. \" + verb.capitalize() + "
                "\" it with the \" + app + \" first, then put it here.\"", "transform_blocks", limit=3,
                setup=_TASK + _ACT, helpers=KIND_OF))),
        Fix("middleware_mismatch", "substitute_object", "Block taking an object of another type than the target.",
            add_hook("on_before_action", guard_hook(
                "t[\"target_type\"] and words[0] == \"take\" and \" from \" in act and "
                "kind_of(act[5:].split(\" from \")[0]) != t[\"target_type\"]",
                "\"That is not a \" + t[\"target_type\"] + \". Take only the exact object named in the task, never "
                "a similar one.\"", "object_blocks", limit=3, setup='    t = ctx["task"]\n' + _ACT,
                helpers=KIND_OF))),
        Fix("prompt_ambiguity", "substitute_object", "Say that only the exact object type counts.",
            add_prompt_line("Use only the exact object type named in the task; a similar-looking object of another "
                            "type does not count.", after=r"your goal to accomplish")),
        Fix("memory_overflow", "retake_placed", "Hint after the first placement of a two-object task.",
            add_hook("on_post_step", hint_hook(
                "on_post_step", "t[\"task_type\"] == \"pick_two_obj\" and w[\"placed_count\"] == 1 and "
                "w[\"inventory\"] is None",
                "\"One \" + t[\"target_type\"] + \" is already placed; leave it there and find another one.\"",
                setup='    t = ctx["task"]\n    w = ctx["world"]\n'))),
        Fix("middleware_mismatch", "retake_placed", "Block taking back an object already placed.",
            add_hook("on_before_action", guard_hook(
                "words[0] == \"take\" and \" from \" in act and act[5:].split(\" from \")[0] in w[\"placed_items\"]",
                "\"That \" + t[\"target_type\"] + \" is already placed. Do not take it back; find another one.\"",
                "retake_blocks", limit=3, setup='    t = ctx["task"]\n' + _ACT))),
        Fix("memory_overflow", "transform_loop", "Hint after a transform that it is done and what comes next.",
            add_hook("on_post_step", hint_hook(
                "on_post_step", "m and t[\"destination_type\"]",
                "\"The \" + m.group(2) + \" is now \" + {\"clean\": \"clean\", \"heat\": \"hot\", \"cool\": \"cool\"}"
                "[m.group(1)] + \": do not \" + m.group(1) + \" it again. Next, put it in a \" + "
                "t[\"destination_type\"] + \".\"",
                setup='    t = ctx["task"]\n    m = re.match(r"you (clean|heat|cool) the (.+?) using", '
                      'ctx["observation"].lower())\n'))),
        Fix("prompt_ambiguity", "wrong_receptacle", "Say that only the receptacle type named in the task counts.",
            add_prompt_line("Put the object in a receptacle of the exact receptacle type named in the task, not a "
                            "similar one.", after=r"your goal to accomplish")),
        Fix("middleware_mismatch", "wrong_receptacle", "Block a put of the ready target into another receptacle type.",
            add_hook("on_before_action", guard_hook(
                f"t[\"destination_type\"] and {_PUTTING} and kind_of(dest) != t[\"destination_type\"] and "
                "(not verb or held in nb.get(\"transformed\", []))",
                "\"Wrong receptacle: the task asks for a \" + t[\"destination_type\"] + \". Put the \" + "
                "t[\"target_type\"] + \" in a \" + t[\"destination_type\"] + \" instead.\"", "receptacle_blocks",
                limit=3, setup=_TASK + _ACT, helpers=KIND_OF))),
        Fix("skill_missing", "examine_instead", "Skill (look tasks): turn the lamp on while holding the object.",
            add_hook("on_init", skill_hook(
                "t[\"task_type\"] == \"look_at_obj\"",
                "\"Pick up the \" + t[\"target_type\"] + \", go to the desk lamp and turn it on with use while you "
                "hold it; examining it is not enough.\"", setup='    t = ctx["task"]\n'))),
        Fix("skill_missing", "not_opening", "Skill: open closed receptacles while searching.",
            add_skill("Open closed receptacles such as cabinets and drawers to look inside them while you search.")),
    ]
