"""The original ALFWorld games (optional): ``alfworld`` + ``textworld`` and downloaded game files.

``load_split(split, data_dir)`` finds ``json_2.1.1/<split>/<type>-.../trial_*/game.tw-pddl``
under ``data_dir`` (``alfworld-download`` puts them in ``$ALFWORLD_DATA``); ``OriginalWorld``
plays one through TextWorld's PDDL engine with ALFWorld's demangler, behind the same
interface as the embedded world (raw observation, ``admissible_commands``, ``won``).
Install with ``pip install alfworld`` (it pulls textworld); nothing is downloaded at run
time. As ALFWorld's ``AlfredTWEnv`` does, games marked unsolvable (or never checked) are
skipped, and so are movable-receptacle and sliced ones. The goal fields the sim and ctx use
come from the game itself: the goal text from its grammar, target/destination/lamp types
from its PDDL goal (not from the human annotation, which rarely matches a template).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, TaskDataError, WorldError, one_line
from harness_gym.benchmarks.alfworld.goals import parse_goal
from harness_gym.benchmarks.alfworld.tasks import TASK_TYPES, TRANSFORM_OF
from harness_gym.benchmarks.alfworld.world import TOOL, AlfWorldBase, action_of
from harness_gym.types import StepResult, ToolCall

INSTALL = "pip install alfworld (and run `alfworld-download` once, outside harness-gym)"


@dataclass(frozen=True)
class OriginalTask:
    task_id: str
    task_type: str
    goal: str
    target_type: str
    destination_type: str
    toggle_type: str
    game_file: str
    content_sha: str
    receptacles: tuple = ()
    objects: tuple = ()

    @property
    def transform(self) -> str:
        return TRANSFORM_OF.get(self.task_type, "")

    def identity(self) -> str:
        return self.content_sha


def _require() -> Any:
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"backend='original' needs the alfworld and textworld packages ({exc}); {INSTALL}") from None
    return textworld


_GOAL_TEXT = re.compile(r"Your task is to: (.*?)\.?\"")
_OBJECT_TYPE = re.compile(r"\(objectType \?(\w+) (\w+?)Type\)", re.I)
_RECEP_TYPE = re.compile(r"\(receptacleType \?\w+ (\w+?)Type\)", re.I)


def goal_fields(game: dict[str, Any], task_type: str) -> dict[str, str]:
    """``goal``, ``target_type``, ``destination_type``, ``toggle_type`` of a ``game.tw-pddl`` document:
    the goal text the game shows (its grammar) and the types its PDDL goal names."""
    m = _GOAL_TEXT.search(str(game.get("grammar", "")))
    goal = m.group(1).strip().rstrip(".").lower() if m else ""
    problem = str(game.get("pddl_problem", ""))
    at = problem.lower().find("(:goal")
    pddl_goal = problem[at:] if at >= 0 else ""
    types = {var.lower(): name.lower() for var, name in _OBJECT_TYPE.findall(pddl_goal)}
    recep = _RECEP_TYPE.search(pddl_goal)
    toggled = set(re.findall(r"\(toggleable \?(\w+)\)", pddl_goal, re.I))
    toggle = next((types[v.lower()] for v in toggled if v.lower() in types), "")
    target = next((t for v, t in types.items() if v not in {x.lower() for x in toggled}), "")
    if not goal or not target:
        g = parse_goal(goal)  # a goal the PDDL does not spell out: fall back on the text's template
        target = target or g["target_type"]
    return {"goal": goal, "target_type": target, "toggle_type": toggle if task_type == "look_at_obj_in_light" else "",
            "destination_type": recep.group(1).lower() if recep and task_type != "look_at_obj_in_light" else ""}


def read_game(path: Path) -> dict[str, Any]:
    """A ``game.tw-pddl`` document, or a one-line ``TaskDataError`` naming the file and why."""
    try:
        game = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskDataError(one_line(f"cannot read ALFWorld game {path}: {type(exc).__name__}: {exc}")) from None
    if not isinstance(game, dict):
        raise TaskDataError(one_line(f"ALFWorld game {path} is not a JSON object (a {type(game).__name__})"))
    missing = [k for k in ("pddl_domain", "grammar", "pddl_problem") if not isinstance(game.get(k), str)]
    if missing:
        raise TaskDataError(one_line(f"ALFWorld game {path} lacks {', '.join(missing)} (not a game.tw-pddl file)"))
    return game


def load_split(split: str, data_dir: Path) -> list[OriginalTask]:
    """The playable games of ``split``: solvable ones of the six task types (``AlfredTWEnv``'s rules)."""
    root = Path(data_dir) / "json_2.1.1" / split
    if not root.is_dir():
        raise TaskDataError(one_line(f"no ALFWorld games at {root}: expected json_2.1.1/{split}/ under data_dir; {INSTALL}"))
    tasks, skipped = [], 0
    for game_path in sorted(root.glob("*/trial_*/game.tw-pddl")):
        folder = game_path.parent.parent.name
        task_type = folder.split("-")[0]
        if task_type not in TASK_TYPES or "movable" in folder or "Sliced" in folder:
            continue
        game = read_game(game_path)
        if not game.get("solvable"):
            skipped += 1  # marked unsolvable, or never checked (AlfredTWEnv skips both)
            continue
        g = goal_fields(game, task_type)
        sha = hashlib.sha256(game_path.read_bytes()).hexdigest()
        rel = game_path.relative_to(root).parent.as_posix()
        tasks.append(OriginalTask(f"alfworld-{split}/{rel}", task_type, g["goal"], g["target_type"],
                                  g["destination_type"], g["toggle_type"], str(game_path), sha))
    if not tasks:
        raise TaskDataError(one_line(f"no playable game.tw-pddl files under {root} ({skipped} marked unsolvable)"))
    return tasks


class OriginalWorld(AlfWorldBase):
    """One original ALFWorld game through TextWorld (classic grammar of the installed alfworld)."""

    def __init__(self) -> None:
        self.textworld = _require()
        self.env: Any = None
        self._admissible: list[str] = []
        self._won = False

    def reset(self, task: OriginalTask) -> str:
        import textworld.gym
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler

        self.close()
        infos = self.textworld.EnvInfos(won=True, admissible_commands=True)
        try:
            env_id = textworld.gym.register_game(task.game_file, request_infos=infos, max_episode_steps=1000,
                                                 wrappers=[AlfredDemangler()])
            self.env = textworld.gym.make(env_id)
            obs, info = self.env.reset()
        except Exception as exc:  # the game engine failed: an environment failure
            raise WorldError(one_line(f"could not start ALFWorld game {task.game_file}: {type(exc).__name__}: {exc}")) from None
        self._admissible, self._won = sorted(info["admissible_commands"]), bool(info["won"])
        return str(obs)

    @property
    def admissible_commands(self) -> list[str]:
        return list(self._admissible)

    def step(self, call: ToolCall) -> StepResult:
        if self.env is None:
            raise WorldError("OriginalWorld.step before reset")
        action = action_of(call) if call.name == TOOL else ""
        try:
            obs, _, done, info = self.env.step(action)
        except Exception as exc:
            raise WorldError(one_line(f"textworld step failed: {exc}")) from None
        self._admissible, self._won = sorted(info["admissible_commands"]), bool(info["won"])
        return StepResult(str(obs), bool(self._won), {"admissible_commands": self._admissible, "won": self._won})

    @property
    def score(self) -> float:
        return 1.0 if self._won else 0.0

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            finally:
                self.env = None
