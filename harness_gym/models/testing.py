"""Test helpers for the model backends (used by ``tests/test_models_*.py``; imports pytest lazily).

``need(module)`` skips a test when an optional extra is missing — but fails it when ``CI`` is
set, because CI installs every extra. ``tiny_model_dir(base)`` builds the tiny model once
per test session, safely across pytest-xdist workers (a file lock in a shared folder).
"""
from __future__ import annotations

import fcntl
import importlib.util
import os
from pathlib import Path
from typing import Any

from harness_gym.models.extras import INSTALL


def need(*modules: str) -> None:
    import pytest

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    how = "; ".join(INSTALL.get(m, f"pip install {m}") for m in missing)
    text = f"needs the Python package(s) {missing} ({how})"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {text}: CI must install the model extras")
    pytest.skip(text)


def locked_build(base: Path, name: str, build: Any) -> Path:
    """``build(folder)`` once under ``base/name``, serialized across processes by a lock file."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return Path(build(base / name))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def tiny_model_dir(base: Path) -> Path:
    from harness_gym.models.tiny import RECIPE, build_tiny_model

    return locked_build(base, f"tiny-model-r{RECIPE}", build_tiny_model)


def smollm2_model_dir(base: Path) -> Path:
    from harness_gym.models.gguf import smollm2_dir

    return locked_build(base, "smollm2-convert", lambda _folder: smollm2_dir())
