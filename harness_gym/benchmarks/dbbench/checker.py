"""DBBench scoring, as AgentBench v0.2 does it.

SELECT types compare the committed answers with the label (one element on both sides:
float equality when both parse as floats, else string equality; otherwise set equality).
Mutations compare the episode's table with a fresh copy after the reference statement,
as multisets of rows (the original compared an MD5 over the table's rows; equal
multisets give equal hashes).
"""
from __future__ import annotations

from collections import Counter

from harness_gym.errors import TaskDataError, one_line
from harness_gym.benchmarks.dbbench.db import Session
from harness_gym.benchmarks.dbbench.loader import repair_reference_sql
from harness_gym.benchmarks.dbbench.tasks import DBTask


def check_answer(task: DBTask, answers: list[str]) -> bool:
    """v0.2's SELECT rule; ``task.label`` is the correct answer list."""
    ans, cor = list(answers), list(task.label)
    if len(ans) == 1 and len(cor) == 1:
        try:
            return float(ans[0]) == float(cor[0])
        except (ValueError, TypeError):
            return ans[0] == cor[0]
    try:
        return set(ans) == set(cor)
    except TypeError:  # unhashable answer elements never match
        return False


def check_mutation(task: DBTask, session: Session, fresh: Session) -> bool:
    """Run the reference statement on ``fresh``; equal table multisets mean success.

    A reference that cannot run as written on this backend (e.g. SQLite and an unquoted
    name starting with a digit) is run once more as ``repair_reference_sql`` gives it.
    """
    result = fresh.execute(task.reference_sql)
    if result.is_error:
        repaired = repair_reference_sql(task.reference_sql, task)
        if repaired != task.reference_sql:
            result = fresh.execute(repaired)
    if result.is_error:
        raise TaskDataError(one_line(
            f"task {task.task_id}: its reference statement fails on a fresh table: {result.text}; "
            "the task data is broken (see loader.repair_reference_sql)"
        ))
    return Counter(session.table_rows()) == Counter(fresh.table_rows())
