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
