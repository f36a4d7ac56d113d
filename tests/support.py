"""Helpers shared by test modules (imported as ``support``; pytest puts tests/ on sys.path)."""
from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest


def unavailable(needs: str, why: str) -> NoReturn:
    """Skip a test (or a module) whose dependency is missing, naming it — but fail in CI, whose .ci/run must
    provide it."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {needs} is not usable ({why}): .ci/run must provide it", pytrace=False)
    pytest.skip(f"needs {needs}: {why}", allow_module_level=True)


def require_modules(*modules: str, install: str) -> None:
    """Every module importable, else ``unavailable`` with the pip command ``install``."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(", ".join(missing), f"not installed: {install}")


def require_mysql_url() -> str:
    """The MySQL-compatible server's URL; skip without one, but fail in CI (CI starts MariaDB)."""
    url = os.environ.get("HARNESS_GYM_MYSQL_URL")
    if not url:
        unavailable("a MySQL-compatible server",
                    "set HARNESS_GYM_MYSQL_URL (run .ci/mariadb.sh and export the URL it prints)")
    return url


def require_docker() -> object:
    """A docker SDK client with the base image present; skip without, fail in CI (CI starts dockerd)."""
    why = ""
    try:
        import docker  # type: ignore[import-untyped]

        client = docker.from_env(timeout=120)
        client.ping()
        from harness_gym.docker.images import base_tag

        try:
            client.images.get(base_tag())
        except docker.errors.ImageNotFound:
            why = f"the base image {base_tag()} is missing: run `harness-gym docker base` (root, debootstrap)"
    except ImportError:
        why = "the docker SDK is not installed: pip install 'harness-gym[docker]'"
    except Exception as exc:  # noqa: BLE001 - no engine
        why = f"no Docker engine answers ({type(exc).__name__}); start dockerd as .ci/docker.sh does"
    if why:
        unavailable("Docker", why)
    return client
