"""Shared test fixtures: paths to the original data and the MySQL URL CI provides."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DBBENCH = ROOT.parent / "shared" / "data" / "dbbench"


@pytest.fixture(scope="session")
def dbbench_data_dir() -> Path:
    if not (SHARED_DBBENCH / "standard.jsonl").exists():
        pytest.skip(f"original DBBench data not found at {SHARED_DBBENCH} (the project's ../shared/data/dbbench)")
    return SHARED_DBBENCH


@pytest.fixture(scope="session")
def mysql_url() -> str:
    url = os.environ.get("HARNESS_GYM_MYSQL_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("HARNESS_GYM_MYSQL_URL is unset in CI: .ci/run must start MariaDB (.ci/mariadb.sh)")
        pytest.skip("needs a MySQL-compatible server: set HARNESS_GYM_MYSQL_URL (CI starts MariaDB via .ci/mariadb.sh)")
    return url
