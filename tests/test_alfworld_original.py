"""The optional adapter for the original ALFWorld games (needs alfworld, textworld and game files)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from harness_gym.errors import ConfigError, TaskDataError
from harness_gym.benchmarks.alfworld.spec import world_factory


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    from harness_gym.benchmarks.alfworld.original import load_split

    with pytest.raises(TaskDataError, match="json_2.1.1/valid_unseen"):
        load_split("valid_unseen", tmp_path)


def test_missing_packages_name_the_install_command() -> None:
    if importlib.util.find_spec("textworld") and importlib.util.find_spec("alfworld"):
        pytest.skip("alfworld and textworld are installed: the missing-package error cannot be shown")
    with pytest.raises(ConfigError, match="pip install alfworld"):
        world_factory("original")()


def test_original_games_run_through_the_same_interface() -> None:
    if not (importlib.util.find_spec("textworld") and importlib.util.find_spec("alfworld")):
        pytest.skip("the alfworld and textworld packages are not installed (optional extra: pip install alfworld)")
    data = Path(os.environ.get("ALFWORLD_DATA", Path.home() / ".cache" / "alfworld"))
    if not (data / "json_2.1.1" / "valid_unseen").is_dir():
        pytest.skip(f"ALFWorld game files not found under {data} (run `alfworld-download`; the package ships none)")
    from harness_gym.benchmarks.alfworld.original import load_split
    from harness_gym.types import ToolCall

    task = load_split("valid_unseen", data)[0]
    world = world_factory("original")()
    obs = world.reset(task)
    assert "Your task is to:" in obs and world.admissible_commands
    r = world.step(ToolCall("c", "take_action", {"action": "look"}))
    assert r.info["admissible_commands"] and world.score in (0.0, 1.0)
    world.close()
