"""ALFWorld world: dynamics, grammar, observation strings, goals, generator splits."""
from __future__ import annotations

import pytest

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld.game import NOTHING, Game, listing
from harness_gym.benchmarks.alfworld.goals import TEMPLATES, parse_goal, render_goal
from harness_gym.benchmarks.alfworld.tasks import APPLIANCE_OF, TASK_TYPES, AlfTask, kind
from harness_gym.benchmarks.alfworld.world import ALFWorldWorld
from harness_gym.types import ToolCall

TASKS = generator.generate_split("valid_seen")


def tiny(task_type: str = "pick_heat_then_place_in_recep", goal: str = "heat some apple and put it in countertop",
         dest: str = "countertop", toggle: str = "") -> AlfTask:
    return AlfTask("t", task_type, goal, "apple", dest, toggle, "kitchen", "FloorPlan1",
                   (("cabinet 1", True, False), ("countertop 1", False, False), ("microwave 1", True, False),
                    ("sinkbasin 1", False, False), ("coffeemachine 1", False, False), ("desk 1", False, False)),
                   (("apple 1", "cabinet 1"), ("tomato 1", "countertop 1"), ("apple 2", "sinkbasin 1"),
                    ("desklamp 1", "desk 1")))


def play(game: Game, *cmds: str) -> list[str]:
    return [game.step(c) for c in cmds]


def solve(task: AlfTask, grammar: str = "classic") -> Game:
    """A reference solver that uses the task's knowledge (tests only)."""
    g = Game(task, grammar)

    def go(rec: str) -> None:
        if rec not in g.at_hand():  # beside the agent (a shared location) needs no walking
            assert g.step(f"go to {rec}") != NOTHING
        if f"open {rec}" in g.admissible():
            g.step(f"open {rec}")

    need = 2 if task.task_type == "pick_two_obj_and_place" else 1
    objs = [o for o, _ in task.objects if kind(o) == task.target_type][:need]
    dest = next((r for r, _, _ in task.receptacles if kind(r) == task.destination_type), None)
    for obj in objs:
        go(g.where[obj])
        assert g.step(f"take {obj} from {g.location}").startswith("You pick up")
        if task.transform:
            app = next(r for r, _, _ in task.receptacles if kind(r) == APPLIANCE_OF[task.transform])
            go(app)
            assert g.step(f"{task.transform} {obj} with {app}").startswith(f"You {task.transform} the")
        if task.task_type == "look_at_obj_in_light":
            lamp = next(o for o, _ in task.objects if kind(o) == task.toggle_type)
            go(g.where[lamp])
            assert g.step(f"use {lamp}") == f"You turn on the {lamp}."
        else:
            go(dest)
            put = f"move {obj} to {dest}" if grammar == "move" else f"put {obj} in/on {dest}"
            assert g.step(put) != NOTHING
    return g


def test_intro_and_listing_strings() -> None:
    g = Game(tiny())
    intro = g.intro()
    assert intro.startswith("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a cabinet 1, a coffeemachine 1,")
    assert intro.endswith("\n\nYour task is to: heat some apple and put it in countertop.")
    assert listing(["a 1"]) == "a a 1" and listing(["x 1", "y 2"]) == "a x 1, and a y 2" and listing([]) == "nothing"


def test_closed_receptacle_must_be_opened_and_strings() -> None:
    g = Game(tiny())
    assert g.step("take apple 1 from cabinet 1") == NOTHING
    arrive = g.step("go to cabinet 1")
    assert arrive.startswith("You arrive at loc ") and arrive.endswith(". The cabinet 1 is closed.")
    assert g.step("take apple 1 from cabinet 1") == NOTHING
    assert g.step("open cabinet 1") == "You open the cabinet 1. The cabinet 1 is open. In it, you see a apple 1."
    assert g.step("take apple 1 from cabinet 1") == "You pick up the apple 1 from the cabinet 1."
    assert g.step("take tomato 1 from countertop 1") == NOTHING  # one held object, and not here
    assert g.step("inventory") == "You are carrying: a apple 1."
    assert g.step("close cabinet 1") == "You close the cabinet 1."
    assert g.step("look") == "You are facing the cabinet 1. Next to it, you see nothing."


def test_transform_only_at_the_appliance_and_success() -> None:
    g = Game(tiny())
    play(g, "go to cabinet 1", "open cabinet 1", "take apple 1 from cabinet 1")
    assert g.step("heat apple 1 with microwave 1") == NOTHING  # not there
    g.step("go to countertop 1")
    assert g.step("put apple 1 in/on countertop 1") == "You put the apple 1 in/on the countertop 1."
    assert not g.won  # not hot
    play(g, "take apple 1 from countertop 1", "go to microwave 1")
    assert "cool apple 1 with microwave 1" not in g.admissible()
    assert g.step("heat apple 1 with microwave 1") == "You heat the apple 1 using the microwave 1."
    assert g.step("examine apple 1") == "This is a hot apple 1."
    play(g, "go to countertop 1", "put apple 1 in/on countertop 1")
    assert g.won


def test_exact_commands_only_and_move_grammar() -> None:
    g = Game(tiny(), "move")
    play(g, "go to sinkbasin 1", "take apple 2 from sinkbasin 1")
    assert g.step("go to countertop 1").startswith("You arrive at countertop 1. On the countertop 1, you see a tomato 1.")
    assert g.step("put apple 2 in/on countertop 1") == NOTHING
    assert g.step("put apple 2 on countertop 1") == NOTHING
    assert "help" in g.admissible()
    assert g.step("Move apple 2 to countertop 1") == NOTHING  # case and inner spacing must match, as in TextWorld
    assert g.step("move apple 2  to countertop 1") == NOTHING
    assert g.step("  move apple 2 to countertop 1 ") == "You move the apple 2 to the countertop 1."
    assert g.step("help").startswith("Available commands:\n  look:")


def test_original_quirks_examine_lamp_states_and_fridge() -> None:
    g = Game(tiny())
    play(g, "go to sinkbasin 1")
    assert "examine apple 2" not in g.admissible() and g.step("examine apple 2") == NOTHING  # only the held object
    assert g.step("look") == "You are facing the sinkbasin 1. Next to it, you see nothing."
    play(g, "take apple 2 from sinkbasin 1")
    assert g.step("examine apple 2") == "There's nothing special about apple 2."
    assert g.step("clean apple 2 with sinkbasin 1") == "You clean the apple 2 using the sinkbasin 1."
    play(g, "go to microwave 1", "heat apple 2 with microwave 1")
    assert g.step("examine apple 2") == "This is a hot and clean apple 2."
    fridge = AlfTask("f", "pick_cool_then_place_in_recep", "cool some apple and put it in countertop", "apple", "countertop",
                     "", "kitchen", "FloorPlan1", (("fridge 1", True, False), ("countertop 1", False, False)),
                     (("apple 1", "fridge 1"), ("tomato 1", "fridge 1")))
    g = Game(fridge)
    assert g.step("look") == "You are in the middle of a room. Looking quickly around you, you see nothing."
    play(g, "go to fridge 1", "open fridge 1", "take apple 1 from fridge 1")
    assert g.step("examine apple 1") == "This is a cold apple 1."  # the target type starts cool in the fridge
    play(g, "put apple 1 in/on fridge 1", "take tomato 1 from fridge 1")
    assert g.step("examine tomato 1") == "There's nothing special about tomato 1."
    assert "cool tomato 1 with fridge 1" in g.admissible()
    play(g, "put tomato 1 in/on fridge 1", "take apple 1 from fridge 1", "go to countertop 1", "put apple 1 in/on countertop 1")
    assert g.won
    t = tiny("look_at_obj_in_light", "look at apple under the desklamp", "", "desklamp")
    g = Game(t)
    play(g, "go to desk 1")
    assert [g.step("use desklamp 1") for _ in range(2)] == ["You turn on the desklamp 1."] * 2  # never "off"
    play(g, "go to sinkbasin 1", "take apple 2 from sinkbasin 1")
    assert not g.won and "clean tomato 1 with sinkbasin 1" not in g.admissible()
    play(g, "go to desk 1")
    assert g.won  # the lamp was used before: the goal holds on arrival
    play(g, "go to countertop 1")
    assert not g.won  # ... and no longer away from it, as the engine checks the goal state


def test_lamp_and_containment_rules() -> None:
    t = tiny("look_at_obj_in_light", "look at apple under the desklamp", "", "desklamp")
    g = Game(t)
    play(g, "go to sinkbasin 1", "take apple 2 from sinkbasin 1")
    assert "use desklamp 1" not in g.admissible()
    g.step("go to coffeemachine 1")
    assert not any(c.startswith("put ") for c in g.admissible())  # a coffeemachine holds mugs and cups only
    g.step("go to desk 1")
    assert "take desklamp 1 from desk 1" not in g.admissible()
    assert g.step("use desklamp 1") == "You turn on the desklamp 1." and g.won
    assert g.step("examine tomato 1") == NOTHING


def test_floor_lamps_stand_in_living_rooms_and_are_used_in_place() -> None:
    """As in ALFWorld's layouts: every living room has a floor lamp, listed at the receptacle it
    stands by, used there and never taken; its look tasks are won like the desk lamp's."""
    tasks = generator.generate_split("train")
    living = [t for t in tasks if t.room == "livingroom"]
    assert all(any(kind(o) == "floorlamp" for o, _ in t.objects) for t in living)
    assert not any(kind(o) == "floorlamp" for t in tasks if t.room != "livingroom" for o, _ in t.objects)
    looks = [t for t in living if t.task_type == "look_at_obj_in_light"]
    assert {t.toggle_type for t in looks} == {"floorlamp", "desklamp"}  # a few living rooms have a desk lamp too
    t = next(t for t in looks if t.toggle_type == "floorlamp")
    assert t.goal.endswith("the floorlamp")
    lamp, rec = next((o, r) for o, r in t.objects if kind(o) == "floorlamp")
    g = Game(t)
    arrive = g.step(f"go to {rec}")
    assert f"a {lamp}" in arrive and f"use {lamp}" in g.admissible()
    assert not any(c.startswith(f"take {lamp}") for c in g.admissible())
    assert solve(t).won


def test_shared_locations_follow_the_original_layouts() -> None:
    """Some floor plans have receptacles at one location (``AlfTask.shared``), fixed per plan."""
    tasks = generator.generate_split("train")
    shared = [t for t in tasks if t.shared]
    assert 0.3 <= len(shared) / len(tasks) <= 0.8
    by_layout = {t.layout: t.shared for t in shared}
    assert all(by_layout.get(t.layout, ()) == t.shared for t in tasks)
    for t in shared[:40]:
        names = {r for r, _, _ in t.receptacles}
        group = t.shared[0]
        assert len(group) >= 2 and set(group) <= names
        g = Game(t)
        g.step(f"go to {group[-1]}")
        assert f"go to {group[0]}" not in g.admissible() and f"examine {group[0]}" in g.admissible()


@pytest.mark.parametrize("grammar", ["classic", "move"])
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_every_task_type_is_solvable(task_type: str, grammar: str) -> None:
    tasks = [t for t in TASKS if t.task_type == task_type][:4]
    assert tasks
    for task in tasks:
        assert not Game(task).goal_met()
        assert solve(task, grammar).won, task.task_id


def test_pick_two_needs_two_distinct_objects() -> None:
    task = next(t for t in TASKS if t.task_type == "pick_two_obj_and_place")
    g = Game(task)
    obj = next(o for o, _ in task.objects if kind(o) == task.target_type)
    dest = next(r for r, _, _ in task.receptacles if kind(r) == task.destination_type)
    for cmd in (f"go to {g.where[obj]}", f"open {g.where[obj]}", f"take {obj} from {g.where[obj]}", f"go to {dest}",
                f"open {dest}", f"put {obj} in/on {dest}", f"take {obj} from {dest}", f"put {obj} in/on {dest}"):
        g.step(cmd)
    assert not g.won


def test_world_tool_interface() -> None:
    w = ALFWorldWorld()
    task = TASKS[0]
    assert "Your task is to:" in w.reset(task) and w.admissible_commands == sorted(w.admissible_commands)
    r = w.step(ToolCall("1", "take_action", {"action": "dance"}))
    assert r.observation == NOTHING and not r.done and r.info["admissible_commands"]
    assert w.step(ToolCall("2", "other_tool", {"action": "look"})).observation == NOTHING
    assert w.score == 0.0
    with pytest.raises(ConfigError, match="grammar"):
        Game(task, "new")


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_goal_templates_round_trip(task_type: str) -> None:
    for variant in (0, 1):
        text = render_goal(task_type, "apple", "fridge", "desklamp", variant)
        assert text in {t.format(obj="apple", recep="fridge", toggle="desklamp") for t in TEMPLATES[task_type]}
        g = parse_goal(f"Your task is to: {text}.")
        assert g["task_type"] == task_type and g["target_type"] == "apple"


def test_splits_separate_seen_and_unseen_layouts_and_are_deterministic() -> None:
    layouts = {s: {t.layout for t in generator.generate_split(s, 120)} for s in generator.SPLITS}
    assert layouts["train"] & layouts["valid_seen"]
    assert not (layouts["train"] | layouts["valid_seen"]) & (layouts["valid_unseen"] | layouts["test"])
    assert len(generator.generate_split("valid_unseen")) == 134 and len(TASKS) == 140
    assert generator.DEFAULT_SPLIT == "valid_unseen"
    again = generator.generate_split("valid_seen")
    assert [t.identity() for t in again] == [t.identity() for t in TASKS]
    assert len({t.identity() for t in TASKS}) == len(TASKS)
    counts = {tt: sum(t.task_type == tt for t in TASKS) for tt in TASK_TYPES}
    assert min(counts.values()) >= 23
    assert AlfTask.from_dict(TASKS[3].to_dict()) == TASKS[3]
    with pytest.raises(ConfigError, match="split"):
        generator.generate_split("dev")
