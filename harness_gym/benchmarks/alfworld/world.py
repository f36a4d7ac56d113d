"""ALFWorld worlds behind the one tool ``take_action(action)``.

``ALFWorldWorld`` plays the embedded game in process; ``server.py`` serves it over HTTP
and ``remote.py`` is the client. Every world returns TextWorld's raw observation and puts
the sorted admissible commands in ``info["admissible_commands"]`` (and on
``admissible_commands`` after ``reset``); the runtime formats them for the agent.
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Any

from harness_gym.benchmarks.alfworld.game import NOTHING, Game
from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.base import World
from harness_gym.types import StepResult, ToolCall

TOOL = "take_action"


def action_of(call: ToolCall) -> str:
    """The command text of a call: its ``action`` argument, else its first argument value."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    value: Any = args.get("action")
    if value is None and args:
        value = next(iter(args.values()))
    return value if isinstance(value, str) else ("" if value is None else str(value))


class AlfWorldBase(World):
    """What the ALFWorld runtime needs beyond ``World``: the current admissible commands."""

    @property
    @abstractmethod
    def admissible_commands(self) -> list[str]:
        """Sorted admissible commands of the current state."""


class ALFWorldWorld(AlfWorldBase):
    """The embedded ALFWorld game, one episode at a time."""

    def __init__(self, grammar: str = "classic") -> None:
        self.grammar = grammar
        self.game: Game | None = None

    def reset(self, task: AlfTask) -> str:
        self.game = Game(task, self.grammar)
        return self.game.intro()

    @property
    def admissible_commands(self) -> list[str]:
        return self.game.admissible() if self.game else []

    def step(self, call: ToolCall) -> StepResult:
        game = self.game
        if game is None:
            return StepResult("No task is loaded; the episode has not started.", False, {"admissible_commands": []})
        if call.name != TOOL:
            obs = NOTHING
        else:
            obs = game.step(action_of(call))
        return StepResult(obs, game.won, {"admissible_commands": game.admissible(), "won": game.won})

    @property
    def score(self) -> float:
        return 1.0 if self.game is not None and self.game.won else 0.0
