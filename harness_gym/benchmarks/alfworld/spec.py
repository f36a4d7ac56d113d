"""ALFWorld's ``BenchmarkSpec``: generated scenes or the original games, local or HTTP worlds.

World backends: ``local`` (embedded game, classic grammar), ``local:move`` (the 2024
``move X to Y`` grammar), ``http://host:port`` (a ``targets/alfworld/server.py``
process; append ``#move`` for the new grammar), ``textworld`` / ``textworld:move`` (the
embedded scenes compiled to ``game.tw-pddl`` files and played by the original engine:
``alfworld`` + ``textworld`` + ``fast-downward-textworld``, ``pip install 'harness-gym[alfworld]'``)
and ``original`` (the ``alfworld`` package's TextWorld games; needs ``data_dir``/``$ALFWORLD_DATA``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.benchmarks.base import World

SPLITS = ("train", "valid_seen", "valid_unseen", "test")


def world_factory(backend: str) -> Callable[[], World]:
    from harness_gym.benchmarks.alfworld.world import ALFWorldWorld

    if backend in ("local", "local:classic"):
        return lambda: ALFWorldWorld("classic")
    if backend == "local:move":
        return lambda: ALFWorldWorld("move")
    if backend.startswith(("http://", "https://")):
        from harness_gym.benchmarks.alfworld.remote import RemoteWorld

        url, _, grammar = backend.partition("#")
        return lambda: RemoteWorld(url, grammar or "classic")
    if backend in ("textworld", "textworld:classic", "textworld:move"):
        from harness_gym.benchmarks.alfworld.twgame import TextWorldWorld, _require

        _require()  # a missing package is a configuration error now, not at the first episode
        grammar = "move" if backend.endswith(":move") else "classic"
        return lambda: TextWorldWorld(grammar)
    if backend == "original":
        from harness_gym.benchmarks.alfworld.original import OriginalWorld

        return lambda: OriginalWorld()
    raise ConfigError(
        f"backend={backend!r}: expected 'local', 'local:move', 'textworld', 'textworld:move', 'http://host:port[#move]' "
        "or 'original' for alfworld"
    )


# The rules, not the harness (``BenchmarkSpec.protocol``): the episode loop reads its limits
# here; config.json keeps ``max_rounds`` and ``repeat_limit`` for Harness-R1's file layout,
# equal to these values, and a patch changing them is rejected.
PROTOCOL: dict[str, Any] = {
    "max_rounds": 50,  # environment steps per episode
    "repeat_limit": 3,  # the same output this many times in a row ends the episode (invalid action)
    "metric": "success rate: the game's goal reached within max_rounds",
}

def spec() -> BenchmarkSpec:
    from harness_gym.benchmarks.alfworld import episode as runtime
    from harness_gym.benchmarks.alfworld import generator

    def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
        if data_dir is None:
            return generator.generate_split(split)
        from harness_gym.benchmarks.alfworld.original import load_split

        return load_split(split, Path(data_dir))

    return BenchmarkSpec("alfworld", load_tasks, world_factory, runtime.run_episode, splits=SPLITS,
                         default_backend="local", default_split=generator.DEFAULT_SPLIT, gold_strings=gold_strings, protocol=PROTOCOL)


def gold_strings(tasks: Sequence[Any]) -> list[str]:
    """What an ALFWorld patch must not contain: where each task's target objects are hidden.

    For every object of the task's target type, its instance name (``keychain 1``) and the
    receptacle it starts in (``drawer 2``): the answer to "where is it", which the agent has
    to find by exploring. Receptacle names of the room and the goal text are shown to the
    agent and are not gold. (Original games, loaded from files, carry no scene: none.)"""
    out: list[str] = []
    for task in tasks:
        target = str(getattr(task, "target_type", "") or "")
        for obj, where in getattr(task, "objects", ()) or ():
            if target and str(obj).split(" ")[0] == target:
                out += [str(obj), str(where)]
    return out
