"""``template`` for ALFWorld: failure signatures read from the packet, Harness-R1 hooks written for them.

Signatures follow the ALFWorld case studies (Harness-R1 §7): a put before the
clean/heat/cool step, a substitute object, the wrong receptacle, a placed object taken
back, examining instead of using the lamp, closed receptacles left unopened, non-admissible
commands answered by "Nothing happens.". Hooks track the stage in ``on_post_step``, give
one de-duplicated hint per stage in ``make_pre_hint`` and guard only the detected cases in
``on_before_action``. Every rule is generic: types and verbs from ctx, never instance names.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness_gym.benchmarks.alfworld.goals import parse_goal

_ACTION = re.compile(r'^ASSISTANT_TOOL: take_action (\{.*\})$')
_TRANSFORM = re.compile(r"You (clean|heat|cool) the", re.IGNORECASE)
_PUT = re.compile(r"You (?:put the ([a-z]+) \d+ in/on the|move the ([a-z]+) \d+ to the) ([a-z]+) \d+")
_TAKE = re.compile(r"You pick up the ([a-z]+) \d+ from the ([a-z]+) \d+")

POST_STEP = '''def kind_of(name):
    parts = str(name).split()
    if parts and parts[-1].isdigit():
        parts = parts[:-1]
    return " ".join(parts)

def hook(ctx, nb):
    w = ctx["world"]
    t = ctx["task"]
    held = w["inventory"]
    m = re.match(r"you (clean|heat|cool) the (.+?) using", ctx["observation"].lower())
    if m and m.group(2) not in nb.get("transformed", []):
        nb["transformed"] = nb.get("transformed", []) + [m.group(2)]
    need = {"pick_clean_then_place": "clean", "pick_heat_then_place": "heat", "pick_cool_then_place": "cool"}.get(t["task_type"], "")
    nb["verb"] = need
    if held is None or kind_of(held) != t["target_type"]:
        nb["stage"] = "find_second" if t["task_type"] == "pick_two_obj" and w["placed_count"] >= 1 else "find"
    elif t["task_type"] == "look_at_obj":
        nb["stage"] = "lamp"
    elif need and held not in nb.get("transformed", []):
        nb["stage"] = "transform"
    else:
        nb["stage"] = "place"
    return None
'''
HINTS = {
    "skip_transform": ('transform', '"You hold the " + t["target_type"] + " but it is not done yet: " + v + " it with the " + {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}.get(v, "") + " before you put it in the " + t["destination_type"] + "."'),
    "wrong_receptacle": ('place', '"Now put the " + t["target_type"] + " in a " + t["destination_type"] + ", the receptacle type named in the task."'),
    "retake_placed": ('find_second', '"One " + t["target_type"] + " is already placed; leave it there and find another one."'),
    "examine_instead": ('lamp', '"Go to the desk lamp while holding the " + t["target_type"] + " and turn it on with use."'),
    "not_opening": ('find', '"Open closed receptacles such as cabinets and drawers to look inside."'),
}
GUARDS = {
    "substitute_object": '''    if words[0] == "take" and " from " in act and kind_of(act[5:].split(" from ")[0]) != t["target_type"]:
        return {"type": "block_and_prompt", "message": "That is not a " + t["target_type"] + ". Take only the exact object named in the task, never a similar one."}''',
    "retake_placed": '''    if words[0] == "take" and t["task_type"] == "pick_two_obj" and act.split(" from ")[-1] in w["placed_locations"]:
        return {"type": "block_and_prompt", "message": "That one is already placed. Do not take it back; find another one elsewhere."}''',
    "skip_transform": '''    if words[0] in ("put", "move") and held and kind_of(held) == t["target_type"] and nb.get("verb") and held not in nb.get("transformed", []) and kind_of(dest) == t["destination_type"]:
        return {"type": "block_and_prompt", "message": "The " + t["target_type"] + " has not been " + nb["verb"] + "ed yet. Do that at the " + {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}.get(nb["verb"], "") + " first, then put it here."}''',
    "wrong_receptacle": '''    if words[0] in ("put", "move") and held and kind_of(held) == t["target_type"] and nb.get("stage") == "place" and kind_of(dest) != t["destination_type"]:
        return {"type": "block_and_prompt", "message": "Wrong receptacle: the task asks for a " + t["destination_type"] + ". Go to a " + t["destination_type"] + " instead."}''',
}
GRAMMAR = '''    if act and act not in adm and words and words[0] in ("put", "move", "take"):
        for cmd in adm:
            head = cmd.split()[0]
            if (words[0] == "take" and head == "take" and len(words) > 2 and cmd.startswith(" ".join(words[:3]) + " ")) or (words[0] != "take" and head in ("put", "move")):
                return {"type": "rewrite_action", "action": cmd}
        return None'''
KIND_OF = '''def kind_of(name):
    parts = str(name).split()
    if parts and parts[-1].isdigit():
        parts = parts[:-1]
    return " ".join(parts)

'''


def _trace_facts(trace: dict[str, Any]) -> tuple[dict[str, str], list[str], list[str]]:
    lines: list[str] = trace.get("messages", [])
    goal = next((parse_goal(line) for line in lines if line.startswith("USER:") and "Your task is to:" in line),
                parse_goal(""))
    actions, observations = [], []
    for line in lines:
        m = _ACTION.match(line)
        if m:
            try:
                actions.append(str(json.loads(m.group(1)).get("action", "")).lower())
            except ValueError:
                actions.append("")
        elif line.startswith("OBSERVATION: "):
            observations.append(line[len("OBSERVATION: "):])
    return goal, actions, observations


def detect(packet: dict[str, Any]) -> list[str]:
    """ALFWorld failure signatures present in the packet's traces, sorted."""
    found: set[str] = set()
    for trace in packet.get("failures", []):
        goal, actions, observations = _trace_facts(trace)
        target, dest, kind = goal["target_type"], goal["destination_type"], goal["task_type"]
        if not target:
            continue
        transformed = False
        placed: set[str] = set()
        for i, obs in enumerate(observations):
            nxt = actions[i + 1] if i + 1 < len(actions) else ""
            if _TRANSFORM.search(obs):
                transformed = True
            if m := _PUT.search(obs):
                obj, rec = m.group(1) or m.group(2), m.group(3)
                if obj != target:
                    found.add("substitute_object")
                elif rec != dest:
                    found.add("wrong_receptacle")
                elif "then_place" in kind and not transformed:
                    found.add("skip_transform")
                placed.add(rec) if obj == target and rec == dest else None
            if m := _TAKE.search(obs):
                if m.group(1) != target:
                    found.add("substitute_object")
                elif kind == "pick_two_obj_and_place" and m.group(2) in placed:
                    found.add("retake_placed")
            if obs.lower().startswith("nothing happens") and i < len(actions) and actions[i].split()[:1] in (["put"], ["move"], ["take"]):
                found.add("invalid_grammar")
            if " is closed." in obs and nxt.startswith("go to "):
                found.add("not_opening")
        if kind == "look_at_obj_in_light" and any(a.startswith("examine ") and a.split()[1] == target for a in actions):
            found.add("examine_instead")
        if "then_place" in kind and not transformed and target:
            found.add("skip_transform")
    return sorted(found)


def build_hooks(signatures: list[str]) -> dict[str, str]:
    hooks: dict[str, str] = {}
    hints = [HINTS[s] for s in ("skip_transform", "wrong_receptacle", "retake_placed", "examine_instead", "not_opening")
             if s in signatures]
    guards = [GUARDS[s] for s in ("substitute_object", "retake_placed", "skip_transform", "wrong_receptacle")
              if s in signatures]
    if hints or guards:
        hooks["on_post_step"] = POST_STEP
    if hints:
        body = "\n".join(f'    if stage == "{st}":\n        msg = {expr}' for st, expr in hints)
        hooks["make_pre_hint"] = (
            "def hook(ctx, nb):\n    t = ctx[\"task\"]\n    v = nb.get(\"verb\", \"\")\n    stage = nb.get(\"stage\", \"\")\n"
            "    msg = \"\"\n" + body + "\n    if not msg or nb.get(\"last_hint\") == msg:\n        return None\n"
            "    nb[\"last_hint\"] = msg\n    return {\"message\": msg}\n")
    if guards or "invalid_grammar" in signatures:
        body = [GRAMMAR] if "invalid_grammar" in signatures else []
        body += guards
        hooks["on_before_action"] = KIND_OF + (
            "def hook(ctx, nb):\n    t = ctx[\"task\"]\n    w = ctx[\"world\"]\n    adm = ctx[\"admissible\"]\n"
            "    held = w[\"inventory\"]\n    act = ctx[\"action\"][\"final_action\"] or ctx[\"action\"][\"normalized\"]\n"
            "    words = act.split()\n    if not words:\n        return None\n"
            "    dest = act.split(\" to \")[-1] if words[0] == \"move\" else act.split(\" in/on \")[-1]\n"
            + "\n".join(body) + "\n    return None\n")
    return hooks
