"""Helpers shared by test modules (imported as ``support``; pytest puts tests/ on sys.path)."""
from __future__ import annotations

import os

import pytest


def require_mysql_url() -> str:
    """The MySQL-compatible server's URL; skip without one, but fail in CI (CI starts MariaDB)."""
    url = os.environ.get("HARNESS_GYM_MYSQL_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI is set but HARNESS_GYM_MYSQL_URL is not: .ci/run must start MariaDB (.ci/mariadb.sh)")
        pytest.skip("needs a MySQL-compatible server: set HARNESS_GYM_MYSQL_URL (run .ci/mariadb.sh and export the URL it prints)")
    return url


def require_docker() -> object:
    """A docker SDK client with the base image present; skip without, fail in CI (CI starts dockerd)."""
    why = ""
    try:
        import docker  # type: ignore[import-untyped]

        client = docker.from_env(timeout=120)
        client.ping()
        from harness_gym.targets.docker.images import base_tag

        try:
            client.images.get(base_tag())
        except docker.errors.ImageNotFound:
            why = f"the base image {base_tag()} is missing: run `harness-gym docker base` (root, debootstrap)"
    except ImportError:
        why = "the docker SDK is not installed: pip install 'harness-gym[docker]'"
    except Exception as exc:  # noqa: BLE001 - no engine
        why = f"no Docker engine answers ({type(exc).__name__}); start dockerd as .ci/docker.sh does"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but Docker is not usable: {why}")
        pytest.skip(f"needs Docker: {why}")
    return client
