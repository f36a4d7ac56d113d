"""The original ALFWorld games (optional): ``alfworld`` + ``textworld`` and downloaded game files.

``load_split(split, data_dir)`` finds ``json_2.1.1/<split>/<type>-.../trial_*/game.tw-pddl``
under ``data_dir`` (``alfworld-download`` puts them in ``$ALFWORLD_DATA``); ``OriginalWorld``
plays one through TextWorld's PDDL engine with ALFWorld's demangler, behind the same
interface as the embedded world (raw observation, ``admissible_commands``, ``won``).
Install with ``pip install alfworld`` (it pulls textworld); nothing is downloaded at run
time. Tasks keep the goal fields the sim and ctx use; the scene itself stays in the game.
"""
from __future__ import annotations

import hashlib
import json
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


def load_split(split: str, data_dir: Path) -> list[OriginalTask]:
    root = Path(data_dir) / "json_2.1.1" / split
    if not root.is_dir():
        raise TaskDataError(one_line(f"no ALFWorld games at {root}: expected json_2.1.1/{split}/ under data_dir; {INSTALL}"))
    tasks = []
    for game in sorted(root.glob("*/trial_*/game.tw-pddl")):
        task_type = game.parent.parent.name.split("-")[0]
        if task_type not in TASK_TYPES or "movable" in game.parent.parent.name or "Sliced" in game.parent.parent.name:
            continue
        traj = game.parent / "traj_data.json"
        goal_text = ""
        if traj.exists():
            anns = json.loads(traj.read_text()).get("turk_annotations", {}).get("anns", [{}])
            goal_text = str(anns[0].get("task_desc", "")).lower().rstrip(".")
        g = parse_goal(goal_text)
        sha = hashlib.sha256(game.read_bytes()).hexdigest()
        rel = game.relative_to(root).parent.as_posix()
        tasks.append(OriginalTask(f"alfworld-{split}/{rel}", task_type, goal_text, g["target_type"],
                                  g["destination_type"], g["toggle_type"], str(game), sha))
    if not tasks:
        raise TaskDataError(one_line(f"no playable game.tw-pddl files under {root}"))
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
            raise WorldError(one_line(f"could not start {task.game_file}: {exc}")) from None
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
