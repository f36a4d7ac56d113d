"""Shared test fixtures: paths to the original data and the MySQL URL CI provides."""
from __future__ import annotations

from pathlib import Path

import pytest
from support import require_mysql_url

ROOT = Path(__file__).resolve().parents[1]
SHARED_DBBENCH = ROOT.parent / "shared" / "data" / "dbbench"


@pytest.fixture(scope="session")
def dbbench_data_dir() -> Path:
    if not (SHARED_DBBENCH / "standard.jsonl").exists():
        pytest.skip(f"original DBBench data not found at {SHARED_DBBENCH} (the project's ../shared/data/dbbench)")
    return SHARED_DBBENCH


@pytest.fixture(scope="session")
def mysql_url() -> str:
    return require_mysql_url()
