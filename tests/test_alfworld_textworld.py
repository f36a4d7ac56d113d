"""The embedded scenes played by the original ALFWorld engine (``backend="textworld"``), and the
lockstep oracle: every valid_unseen scene, both worlds, the same observation, admissible
commands and ``won`` after every command (``make test`` installs alfworld, textworld and
fast-downward-textworld: the ``test`` extra)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld import scenes as S
from harness_gym.benchmarks.alfworld.oracle import lockstep
from harness_gym.benchmarks.alfworld.spec import world_factory
from harness_gym.benchmarks.alfworld.twgame import TextWorldWorld, game_file
from harness_gym.benchmarks.alfworld.world import ALFWorldWorld
from harness_gym.errors import ConfigError
from harness_gym.types import ToolCall

UNSEEN = generator.generate_split("valid_unseen")


def _call(command: str) -> ToolCall:
    return ToolCall("c", "take_action", {"action": command})


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # one compiled-game cache per test session (each xdist worker has its own)
    monkeypatch.setenv("HARNESS_GYM_CACHE", str(tmp_path_factory.getbasetemp() / "hg-cache"))


def test_missing_packages_name_the_pip_command() -> None:
    # in a child process: a blocked import would leave textworld's "fast_downward missing" flag set here
    script = ("import sys; sys.modules['fast_downward'] = None\n"
              "from harness_gym.benchmarks.alfworld.spec import world_factory\n"
              "from harness_gym.errors import ConfigError\n"
              "try:\n    world_factory('textworld')\nexcept ConfigError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.startswith("ERR backend='textworld' needs the original ALFWorld engine")
    assert "pip install 'harness-gym[alfworld]'" in out and out.count("\n") == 1


def test_unknown_backend_lists_textworld() -> None:
    with pytest.raises(ConfigError, match="'textworld:move'"):
        world_factory("textworld:bogus")


def test_compiled_game_is_cached_with_what_the_expert_reads() -> None:
    task = UNSEEN[0]
    path = game_file(task, "classic")
    assert game_file(task, "classic") == path and path.is_file()
    data = json.loads(path.read_text())
    assert set(data) >= {"pddl_domain", "grammar", "pddl_problem", "solvable"} and data["solvable"] is True
    assert f"Your task is to: {task.goal}." in data["grammar"] and "UNKNOWN GOAL" not in data["grammar"]
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["task_type"] == task.task_type and traj["pddl_params"]["object_target"] == S.THOR_NAME[task.target_type]
    move = game_file(task, "move")
    assert move != path and "help" in json.loads(move.read_text())["grammar"]


def test_classic_and_move_grammars_of_the_engine() -> None:
    task = next(t for t in UNSEEN if t.task_type == "pick_and_place_simple")
    rec = next(r for o, r in task.objects if o.split()[0] == task.target_type)
    obj = next(o for o, r in task.objects if r == rec and o.split()[0] == task.target_type)
    for grammar, put, arrive in (("classic", "put {o} in/on {r}", "You arrive at loc "), ("move", "move {o} to {r}", f"You arrive at {rec}.")):
        world = TextWorldWorld(grammar)
        intro = world.reset(task)
        assert intro == ALFWorldWorld(grammar).reset(task)
        assert ("help" in world.admissible_commands) == (grammar == "move")
        r = world.step(_call(f"go to {rec}"))
        assert r.observation.startswith(arrive)
        if rec.split()[0] in ("cabinet", "drawer", "fridge", "microwave", "safe"):
            world.step(_call(f"open {rec}"))
        world.step(_call(f"take {obj} from {rec}"))
        assert put.format(o=obj, r=rec) in world.admissible_commands or not S.can_contain(rec.split()[0], task.target_type)
        assert world.step(_call("GO TO " + rec)).observation == "Nothing happens."  # exact matching, as the engine
        world.close()


def test_engine_speedups_do_not_change_what_it_says() -> None:
    """The memoised parsers and shallow contexts against the engine as installed, on one game."""
    task = UNSEEN[2]
    script = (
        "import json, random, sys\n"
        "from harness_gym.benchmarks.alfworld import generator\n"
        "from harness_gym.benchmarks.alfworld.twgame import TextWorldWorld\n"
        "from harness_gym.types import ToolCall\n"
        "task = generator.generate_split('valid_unseen')[2]\n"
        "w = TextWorldWorld('move', fast=sys.argv[1] == '1'); out = [w.reset(task), w.admissible_commands]\n"
        "rng = random.Random(5)\n"
        "for i in range(25):\n"
        "    r = w.step(ToolCall('c', 'take_action', {'action': rng.choice(w.admissible_commands)}))\n"
        "    out += [r.observation, r.info['admissible_commands'], r.done]\n"
        "print(json.dumps(out))\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script, flag], capture_output=True, text=True, timeout=300, check=True).stdout
            for flag in ("0", "1")]
    assert runs[0] == runs[1] and task.goal in runs[0]


def test_generated_tasks_can_be_won_under_the_original_rules() -> None:
    """No generated task asks for what the original refuses (all splits, 1,974 tasks)."""
    for split in generator.SPLITS:
        for t in generator.generate_split(split):
            if t.transform:
                assert t.target_type in S.ELIGIBLE[t.transform], t.task_id
            if t.destination_type:
                assert S.can_contain(t.destination_type, t.target_type), t.task_id
                assert any(r.split()[0] == t.destination_type for r, _, _ in t.receptacles), t.task_id
            else:
                assert any(o.split()[0] == t.toggle_type for o, _ in t.objects), t.task_id
            need = 2 if t.task_type == "pick_two_obj_and_place" else 1
            assert sum(o.split()[0] == t.target_type for o, _ in t.objects) >= need, t.task_id


def test_receptacles_that_share_a_location_agree_with_the_engine() -> None:
    """Stove burners side by side (``AlfTask.shared``): arriving at one, all of them are at hand."""
    from dataclasses import replace

    base = next(t for t in UNSEEN if t.room == "kitchen" and t.task_type == "pick_and_place_simple"
                and sum(r.startswith("stoveburner") for r, _, _ in t.receptacles) >= 3)
    burners = [r for r, _, _ in base.receptacles if r.startswith("stoveburner")]
    task = replace(base, task_id="alfworld-shared-test", shared=(tuple(burners[0::2]), tuple(burners[1::2])))
    for grammar in ("classic", "move"):
        result = lockstep(task, grammar, seed=1, explore_steps=60)
        assert not result.differences, "; ".join(d.line() for d in result.differences[:3])
        assert result.same_win
    g = ALFWorldWorld("classic")
    g.reset(task)
    g.step(_call(f"go to {burners[0]}"))
    assert f"go to {burners[2]}" not in g.admissible_commands and f"examine {burners[2]}" in g.admissible_commands
    look = g.step(_call("look")).observation
    assert look.startswith("You are facing the ") and burners[2] in look and ", and " in look


def test_unseen_split_holds_floor_lamps_and_shared_locations() -> None:
    """The lockstep below covers look tasks with a floor lamp (living rooms, as in ALFWorld's
    layouts) and scenes whose receptacles share a location, in both grammars."""
    floor = [i for i, t in enumerate(UNSEEN) if t.toggle_type == "floorlamp"]
    shared = [i for i, t in enumerate(UNSEEN) if t.shared]
    assert floor and all(UNSEEN[i].room == "livingroom" for i in floor)
    assert len(shared) >= 10 and {(i // 6) % 2 for i in shared} == {0, 1}
    assert all(o.split()[0] != "floorlamp" for t in UNSEEN if t.room != "livingroom" for o, _ in t.objects)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(UNSEEN)))
def test_lockstep_with_the_original_engine(index: int) -> None:
    """Expert walkthrough plus seeded exploration (odd case/spacing, unknown and refused commands):
    the embedded world and the engine agree after every command and win at the same step."""
    task = UNSEEN[index]
    grammar = ("classic", "move")[(index // 6) % 2]  # every task type in both grammars
    result = lockstep(task, grammar, seed=index)
    assert not result.differences, f"{task.task_id} ({grammar}): " + "; ".join(d.line() for d in result.differences[:3])
    assert result.won_step_original is not None, f"{task.task_id} ({grammar}): the expert did not win in {result.steps} steps"
    assert result.won_step_embedded == result.won_step_original


def test_sim_episodes_score_the_same_on_the_engine() -> None:
    """The simulated target through the runtime: the same rewards and turns on both backends."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    spec = get_benchmark("alfworld")
    tasks = UNSEEN[:6]
    out = {}
    for backend in ("local", "textworld"):
        ev = Evaluator(spec, make_backend("sim"), world_backend=backend)
        try:
            runs = ev.evaluate(spec.default_harness(), tasks, list(range(len(tasks))))
        finally:
            ev.close()
        assert not any(r.is_env_error for r in runs)
        out[backend] = [(r.reward, r.rounds) for r in runs]
    assert out["local"] == out["textworld"] and any(reward for reward, _ in out["local"])
