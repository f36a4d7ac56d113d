"""DBBench tool replies on the MySQL backend against the original AgentBench code's replies.

``fixtures/dbbench/original_replies.json`` holds, for every third original task, the calls
an episode sends (schema probes, text-vs-number comparisons, DECIMAL results, multi-statement
calls, errors, the reference statement, the checker's hash) and the reply the
function-calling AgentBench's own ``MySQLDatabase`` (mysql.connector 9.3) gave on MariaDB
set up with MySQL 8's defaults (``benchmarks/oracle_dbbench_replies.py``). Our sessions
must give the same text, with the per-episode database name as the only difference.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from support import require_mysql_url

from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.loader import load_split

FIXTURE = Path(__file__).parent / "fixtures" / "dbbench" / "original_replies.json"
DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dbbench"
DB_NAME = re.compile(r"dbbench_[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}")


@functools.lru_cache(maxsize=None)
def _tasks() -> dict:
    return {t.task_id: t for split in ("test", "valid") for t in load_split(split, DATA)}


@pytest.mark.mysql
def test_replies_equal_the_originals_on_mysql():
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert len(recorded) == 120
    db = open_database(require_mysql_url())
    differ, total, named = [], 0, 0
    try:
        for tid, calls in sorted(recorded.items()):
            if calls[0][1].startswith("<setup failed"):
                continue  # valid:5's empty column name: the original cannot set it up (we name it column_N)
            with db.create(_tasks()[tid]) as session:
                for k, (sql, want) in enumerate(calls):
                    got = session.md5_hash() if k == len(calls) - 1 else session.execute(sql).text
                    total += 1
                    named += bool(DB_NAME.search(got))
                    if DB_NAME.sub("<db>", got) != DB_NAME.sub("<db>", want):
                        differ.append((tid, sql, want, got))
    finally:
        db.close()
    assert total > 2800 and named > 100  # error text names the database as the original does
    assert not differ, f"{len(differ)} of {total} replies differ, e.g. {differ[:2]}"
