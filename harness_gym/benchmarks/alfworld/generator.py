"""Seeded ALFWorld scenes and tasks for the embedded default (no game files needed).

A *layout* is one floor plan: a room kind and its receptacles, fixed by the plan number
(``FloorPlan7``). Splits separate layouts as ALFWorld does: ``train`` and ``valid_seen``
use the seen plans, ``valid_unseen`` and ``test`` only held-out plans, so held-out
evaluation is meaningful. Each task has its own ``random.Random`` seeded from the split
and index; the six task types come in equal shares, round robin. Tasks follow the original
game's rules (``scenes.ACCEPTS``, ``scenes.ELIGIBLE``): objects start only in receptacles that
can hold them, the destination accepts the target, and only cleanable/heatable/coolable
objects are targets of those tasks, so every task can be won in the original engine too.
Lamps and shared locations follow ALFWorld's layouts (``scenes.LIVINGROOM_DESKLAMP_PLANS``,
``scenes.SHARED_GROUPS``): living rooms have a floor lamp (look tasks there use it, or a desk
lamp where the plan has one too), bedrooms a desk lamp; about half the floor plans have
receptacles that stand at one location (two drawers, two cabinets, ...).
"""
from __future__ import annotations

import random
from functools import cache

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.alfworld import scenes as S
from harness_gym.benchmarks.alfworld.goals import render_goal
from harness_gym.benchmarks.alfworld.tasks import (
    APPLIANCE_OF,
    TASK_TYPES,
    TRANSFORM_OF,
    AlfTask,
)

SPLITS = {"train": 1200, "valid_seen": 140, "valid_unseen": 134, "test": 500}
DEFAULT_SPLIT = "valid_unseen"
_SEEN = {"train": True, "valid_seen": True, "valid_unseen": False, "test": False}
_SALT = {"train": 11, "valid_seen": 23, "valid_unseen": 37, "test": 53}
ROOMS_FOR = {
    "pick_and_place_simple": ("kitchen", "bathroom", "bedroom", "livingroom"),
    "pick_two_obj_and_place": ("kitchen", "bathroom", "bedroom", "livingroom"),
    "look_at_obj_in_light": ("bedroom", "livingroom"),
    "pick_clean_then_place_in_recep": ("kitchen", "kitchen", "bathroom"),
    "pick_heat_then_place_in_recep": ("kitchen",),
    "pick_cool_then_place_in_recep": ("kitchen",),
}


@cache
def layout(room: str, plan: int) -> tuple[tuple[str, bool], ...]:
    """Receptacles ``(name, openable)`` of floor plan ``plan`` of ``room`` (deterministic)."""
    rng = random.Random(f"alfworld-layout:{room}:{plan}")
    out = []
    for rtype, (openable, lo, hi) in S.RECEPTACLES[room].items():
        for i in range(1, rng.randint(lo, hi) + 1):
            out.append((f"{rtype} {i}", openable))
    if room in ("bedroom", "livingroom") and not any(n.split()[0] in S.LAMP_SPOTS for n, _ in out):
        out.append(("sidetable 1", False))
    return tuple(out)


@cache
def shared_at(room: str, plan: int) -> tuple[tuple[str, ...], ...]:
    """Receptacles of floor plan ``plan`` that stand at one location (deterministic): as many
    plans as in ALFWorld's layouts have such a group, drawn with its groups' frequencies."""
    rng = random.Random(f"alfworld-shared:{room}:{plan}")
    if rng.random() >= S.SHARED_PLANS[room] / 30:
        return ()
    by_type: dict[str, list[str]] = {}
    for n, _ in layout(room, plan):
        by_type.setdefault(n.rsplit(" ", 1)[0], []).append(n)
    fits = [(g, w) for g, w in S.SHARED_GROUPS[room] if all(len(by_type.get(t, ())) >= g.count(t) for t in g)]
    if not fits:
        return ()
    group = rng.choices([g for g, _ in fits], weights=[w for _, w in fits])[0]
    names: list[str] = []
    for t in dict.fromkeys(group):
        k, recs = group.count(t), by_type[t]
        start = rng.randrange(len(recs) - k + 1)  # neighbours: consecutive numbers
        names += recs[start:start + k]
    return (tuple(names),)


def plans(split: str, room: str) -> list[int]:
    base = S.PLAN_BASE[room]
    return [base + p for p in (S.SEEN_PLANS if _SEEN[split] else S.UNSEEN_PLANS)]


def generate_split(split: str, n: int | None = None) -> list[AlfTask]:
    if split not in SPLITS:
        raise ConfigError(f"split={split!r}: expected one of {list(SPLITS)} for alfworld")
    count = SPLITS[split] if n is None else n
    return [generate_task(split, i) for i in range(count)]


def generate_task(split: str, index: int) -> AlfTask:
    rng = random.Random(f"alfworld-task:{_SALT[split]}:{index}")
    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    for _ in range(100):
        task = _try_task(rng, split, index, task_type)
        if task is not None:
            return task
    raise RuntimeError(f"could not build an alfworld task for {split}:{index}")  # pragma: no cover


def _try_task(rng: random.Random, split: str, index: int, task_type: str) -> AlfTask | None:
    room = rng.choice(ROOMS_FOR[task_type])
    plan = rng.choice(plans(split, room))
    receps = layout(room, plan)
    types_here = {n.rsplit(" ", 1)[0] for n, _ in receps}
    by_type: dict[str, list[str]] = {}
    for n, _ in receps:
        by_type.setdefault(n.rsplit(" ", 1)[0], []).append(n)
    objects = S.OBJECTS[room]
    transform = TRANSFORM_OF.get(task_type, "")
    if transform and APPLIANCE_OF[transform] not in types_here:
        return None
    look = task_type == "look_at_obj_in_light"
    pool = [o for o in objects if (not transform or (o in S.TRANSFORMABLE[transform] and o in S.ELIGIBLE[transform]))
            and (not look or o in S.LOOKABLE)]
    target = rng.choice(pool)
    spots = [t for t in objects[target] if t in types_here and S.can_contain(t, target)]
    if not spots:
        return None
    dest, toggle = "", ""
    lamps = lamps_of(room, plan)
    if look:
        toggle = rng.choice(lamps) if lamps else ""
        if not toggle or not any(t in types_here for t in S.SPOTS_OF_LAMP[toggle]):
            return None
    else:
        excluded = {APPLIANCE_OF.get(transform, "")}
        dests = [t for t in objects[target] if t in types_here and t not in excluded and S.can_contain(t, target)]
        dests = [t for t in dests if any(s != t for s in spots)]
        if not dests:
            return None
        dest = rng.choice(dests)
        spots = [t for t in spots if t != dest]
    n_target = rng.randint(2, 3) if task_type == "pick_two_obj_and_place" else rng.randint(1, 2)
    placed: list[tuple[str, str]] = []
    counts: dict[str, int] = {}

    beside = {n for group in shared_at(room, plan) for n in group}

    def put(obj_type: str, allowed: list[str]) -> None:
        # objects start only where the original's receptacle table lets them be (lamps stand on their spots);
        # what the task needs never starts at a shared location: ALFWorld's handcoded expert walks to one
        # receptacle there and never looks into the others, and ALFWorld drops games its expert cannot solve
        cands = [r for t in allowed if obj_type in S.LAMPS or S.can_contain(t, obj_type) for r in by_type.get(t, [])
                 if not (r in beside and obj_type in (target, toggle))]
        if cands:
            counts[obj_type] = counts.get(obj_type, 0) + 1
            placed.append((f"{obj_type} {counts[obj_type]}", rng.choice(cands)))

    for _ in range(n_target):
        put(target, spots)
    sub = S.SIMILAR_OBJECT.get(target)
    if sub in objects and rng.random() < 0.85:
        put(sub, [t for t in objects[sub] if t in types_here])
    for lamp in lamps:
        if lamp == toggle or room == "livingroom" or rng.random() < 0.5:
            put(lamp, [t for t in S.SPOTS_OF_LAMP[lamp] if t in types_here])
    fillers = [o for o in objects if o != target]
    for _ in range(rng.randint(8, 16)):
        o = rng.choice(fillers)
        put(o, [t for t in objects[o] if t in types_here])
    if sum(1 for n, _ in placed if n.rsplit(" ", 1)[0] == target) < (2 if task_type == "pick_two_obj_and_place" else 1):
        return None
    rng.shuffle(placed)
    goal = render_goal(task_type, target, dest, toggle, rng.randrange(2))
    recs = tuple((n, op, False) for n, op in receps)
    return AlfTask(
        task_id=f"alfworld-{split}-{index:04d}", task_type=task_type, goal=goal, target_type=target,
        destination_type=dest, toggle_type=toggle, room=room, layout=f"FloorPlan{plan}",
        receptacles=recs, objects=tuple(placed), split=split, shared=shared_at(room, plan),
    )


def lamps_of(room: str, plan: int) -> tuple[str, ...]:
    """The lamp types a floor plan holds, as in ALFWorld's layouts: every living room a floor lamp
    (some a desk lamp too), bedrooms a desk lamp, kitchens and bathrooms none."""
    if room == "livingroom":
        return ("floorlamp", "desklamp") if plan in S.LIVINGROOM_DESKLAMP_PLANS else ("floorlamp",)
    return ("desklamp",) if room == "bedroom" else ()
