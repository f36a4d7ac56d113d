"""The adapter for original ALFWorld game files (``backend="original"``, ``data_dir``).

No game files can be downloaded here, so the tests write a ``json_2.1.1`` tree the way
``alfworld-download`` lays it out, with games compiled from embedded scenes (the same
``game.tw-pddl`` format: domain, grammar with the goal, PDDL problem, ``solvable``), plus
the broken and unsolvable files the loader must skip or name."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld.original import goal_fields, load_split
from harness_gym.benchmarks.alfworld.spec import world_factory
from harness_gym.benchmarks.alfworld.twgame import compile_game, traj_data
from harness_gym.errors import TaskDataError
from harness_gym.types import ToolCall

UNSEEN = generator.generate_split("valid_unseen")


def _write(root: Path, folder: str, game: dict | str, trial: str = "trial_T0") -> Path:
    path = root / "json_2.1.1" / "valid_unseen" / folder / trial / "game.tw-pddl"
    path.parent.mkdir(parents=True)
    path.write_text(game if isinstance(game, str) else json.dumps(game))
    return path


def _tree(tmp_path: Path) -> list:
    tasks = [next(t for t in UNSEEN if t.task_type == tt) for tt in
             ("pick_and_place_simple", "look_at_obj_in_light", "pick_heat_then_place_in_recep", "pick_two_obj_and_place")]
    for i, t in enumerate(tasks):
        game = compile_game(t, "classic")
        path = _write(tmp_path, f"{t.task_type}-{t.target_type}-None-{t.destination_type or 'None'}-{i}", game)
        traj = traj_data(t)
        traj["turk_annotations"] = {"anns": [{"task_desc": "Grab the thing and leave it somewhere."}]}  # not a template
        (path.parent / "traj_data.json").write_text(json.dumps(traj))
    unsolvable = dict(compile_game(tasks[0], "classic"), solvable=False)
    _write(tmp_path, "pick_and_place_simple-x-None-y-9", unsolvable)
    _write(tmp_path, "pick_and_place_simple-x-None-y-8", {k: v for k, v in unsolvable.items() if k != "solvable"})
    _write(tmp_path, "pick_and_place_with_movable_recep-x-y-z-7", compile_game(tasks[0], "classic"))
    return tasks


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TaskDataError, match="json_2.1.1/valid_unseen"):
        load_split("valid_unseen", tmp_path)


def test_missing_packages_name_the_install_command() -> None:
    script = ("import sys; sys.modules['textworld'] = None\n"
              "from harness_gym.benchmarks.alfworld.spec import world_factory\n"
              "from harness_gym.errors import ConfigError\n"
              "try:\n    world_factory('original')()\nexcept ConfigError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.startswith("ERR backend='original' needs the alfworld and textworld packages") and "pip install alfworld" in out


def test_goal_fields_come_from_the_games_pddl_and_unsolvable_games_are_skipped(tmp_path: Path) -> None:
    tasks = _tree(tmp_path)
    loaded = load_split("valid_unseen", tmp_path)
    assert len(loaded) == len(tasks)  # unsolvable, unchecked and movable-receptacle games skipped
    by_type = {t.task_type: t for t in loaded}
    for t in tasks:
        got = by_type[t.task_type]
        assert (got.goal, got.target_type, got.destination_type, got.toggle_type) == (
            t.goal, t.target_type, t.destination_type, t.toggle_type), t.task_id


def test_bad_game_files_are_one_line_errors_naming_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "pick_and_place_simple-a-None-b-1", "{not json")
    with pytest.raises(TaskDataError, match=r"cannot read ALFWorld game .*game\.tw-pddl: JSONDecodeError") as err:
        load_split("valid_unseen", tmp_path)
    assert "\n" not in str(err.value)
    path.write_text(json.dumps({"grammar": "", "solvable": True}))
    with pytest.raises(TaskDataError, match="lacks pddl_domain, pddl_problem"):
        load_split("valid_unseen", tmp_path)


def test_goal_fields_of_a_look_task() -> None:
    t = next(t for t in UNSEEN if t.task_type == "look_at_obj_in_light")
    g = goal_fields(compile_game(t, "move"), t.task_type)
    assert g == {"goal": t.goal, "target_type": t.target_type, "destination_type": "", "toggle_type": t.toggle_type}


def test_original_games_run_through_the_same_interface(tmp_path: Path) -> None:
    tasks = _tree(tmp_path)
    task = next(t for t in load_split("valid_unseen", tmp_path) if t.task_type == tasks[0].task_type)
    world = world_factory("original")()
    obs = world.reset(task)
    assert obs.endswith(f"Your task is to: {tasks[0].goal}.") and world.admissible_commands
    r = world.step(ToolCall("c", "take_action", {"action": "look"}))
    assert r.info["admissible_commands"] and world.score == 0.0
    world.close()
