"""DBBench scoring, as the function-calling AgentBench (the version Harness-R1 runs) does it.

SELECT types: the committed ``answers`` value and the label are each cleaned into a list
of strings, then compared (``judge_answers``). Cleaning, as the original result processor
does it:

- a string that looks like a tool reply (``[('a',), ('b',)]``) gives its one-value rows;
  another bracketed string is read as a Python list literal, or else split on commas
  outside quotes (empty items dropped); any other string is one value;
- a list gives one value per item (a one-element tuple gives its element); ``None`` gives
  ``"0"``; anything else is ``str()`` of it;
- each value: surrounding whitespace, then quotes (``'``/``"``) stripped; a trailing ``%``
  is dropped (and nothing else is done to that value); otherwise thousands commas are
  removed (unless the value starts with ``[`` or ends with ``]``), and ``none``, ``null``,
  ``undefined``, ``nan``, ``inf``/``infinity`` (signed) and the empty string become ``"0"``.

Comparison: one value on each side → equal when both are ``"0"``, within 0.01 when both
parse as floats (Python's ``float``), else exact (case-sensitive) string equality. More
values → when all parse as floats, the same count and a one-to-one match within 0.01;
otherwise set equality. The original also scores 0 when a truthy ``answers`` value cannot
be sliced (a number, ``true``, an object): its task code logs ``answer[:100]`` first.

Mutations (INSERT/UPDATE/DELETE): the original checker's table hash (see
``db.md5_of_rows``) after the episode, cleaned the same way, must equal the task's stored
``answer_md5``; a task without one (the generated tasks) gets it from its reference
statement run on a fresh copy of the table (``expected_md5``), as the original does.

Where the original calls ``eval`` on agent text, this module uses ``ast.literal_eval``:
the same for literals, and agent text is never executed (an arithmetic expression such as
``[1+1]`` is read as text instead of as 2).
"""
from __future__ import annotations

import ast
from typing import Any

from harness_gym.errors import TaskDataError, one_line
from harness_gym.benchmarks.dbbench.db import Session
from harness_gym.benchmarks.dbbench.loader import repair_reference_sql
from harness_gym.benchmarks.dbbench.tasks import DBTask

FLOAT_TOLERANCE = 1e-2
_NULL_LIKE = frozenset({"none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""})
_QUOTES = "'\""


def normalize_value(value: Any) -> str:
    """One answer value as the original compares it (see the module doc)."""
    if value is None:
        return "0"
    text = str(value).strip()
    if text.endswith("%"):
        return text[:-1].strip()
    if "," in text and not text.startswith("[") and not text.endswith("]"):
        text = text.replace(",", "")
    return "0" if text.lower() in _NULL_LIKE else text


def _item(item: Any) -> str:
    if isinstance(item, tuple) and len(item) == 1:
        item = item[0]
    return normalize_value(str(item).strip().strip(_QUOTES))


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _reply_rows(text: str) -> list[str] | None:
    """Values of a tool reply like ``[('a',), (1.5,)]`` (multi-column rows are dropped); else None."""
    if not (text.startswith("[") and text.endswith("]")):
        return None
    ok, parsed = _literal(text)
    if ok and isinstance(parsed, list) and all(isinstance(row, tuple) for row in parsed):
        return [str(row[0]).strip().strip(_QUOTES) for row in parsed if len(row) == 1]
    inner = text.strip("[]")
    if inner.count("(") == 1 and inner.startswith("(") and inner.endswith(",)"):
        return [inner[1:-2].strip().strip(_QUOTES)]
    return None


def _split_outside_quotes(text: str) -> list[str]:
    """Comma-separated items; quote characters toggle quoting and are dropped; empty items skipped."""
    items, current, quoted = [], "", False
    for ch in text:
        if ch in _QUOTES:
            quoted = not quoted
        elif ch == "," and not quoted:
            if current:
                items.append(normalize_value(current.strip().strip(_QUOTES)))
                current = ""
        else:
            current += ch
    if current:
        items.append(normalize_value(current.strip().strip(_QUOTES)))
    return items


def clean_answers(answers: Any) -> list[str] | None:
    """The list of normalised strings the original compares; None where it gives up (never equal)."""
    if answers is None:
        return ["0"]
    if isinstance(answers, str):
        rows = _reply_rows(answers)
        if rows is not None:
            return [normalize_value(v) for v in rows]
        text = answers.strip()
        if not (text.startswith("[") and text.endswith("]")):
            return [normalize_value(text.strip(_QUOTES))]
        ok, parsed = _literal(text)
        if not ok:
            return _split_outside_quotes(text[1:-1])
        return [_item(v) for v in parsed] if isinstance(parsed, list) else None
    if isinstance(answers, (list, tuple)):
        return [_item(v) for v in answers]
    return [normalize_value(str(answers).strip().strip(_QUOTES))]


def _is_float(text: str) -> bool:
    try:
        float(text)
    except (ValueError, OverflowError):
        return False
    return True


def _close(a: str, b: str) -> bool:
    return abs(float(a) - float(b)) <= FLOAT_TOLERANCE


def values_match(answer: list[str], truth: list[str]) -> bool:
    """The original's comparison of two cleaned lists (module doc)."""
    if len(answer) == 1 and len(truth) == 1:
        a, b = answer[0], truth[0]
        if a == "0" and b == "0":
            return True
        if _is_float(a) and _is_float(b):
            return _close(a, b)
        return a == b
    if all(map(_is_float, answer)) and all(map(_is_float, truth)):
        if len(answer) != len(truth):
            return False
        free = list(truth)
        for a in answer:
            hit = next((i for i, b in enumerate(free) if _close(a, b)), None)
            if hit is None:
                return False
            free.pop(hit)
        return True
    return set(answer) == set(truth)


def _sliceable(answers: Any) -> bool:
    return isinstance(answers, (str, list, tuple))


def judge_answers(answers: Any, label: Any) -> bool:
    """A SELECT task's verdict: ``answers`` as ``commit_final_answer`` received it, ``label`` as stored."""
    if answers and not _sliceable(answers):
        return False
    got, want = clean_answers(answers), clean_answers(label)
    return got is not None and want is not None and values_match(got, want)


def check_answer(task: DBTask, answers: Any) -> bool:
    """``judge_answers`` against ``task.label``."""
    return judge_answers(answers, list(task.label))


def hash_value(reply: str) -> str:
    """The hash out of the checker query's reply ``[('03b2…',)]``, as the original extracts it."""
    return reply.strip("[]()").split(",")[0].strip().strip("'")


def expected_md5(task: DBTask, fresh: Session) -> str:
    """The stored ``answer_md5``, or the hash after the reference statement on ``fresh`` when there is none.

    A reference that cannot run as written on this backend (e.g. SQLite and an unquoted
    name starting with a digit) is run once more as ``repair_reference_sql`` gives it.
    """
    if task.answer_md5:
        return task.answer_md5
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
    return fresh.md5_hash()


def check_mutation(task: DBTask, session: Session, expected: str) -> bool:
    """The episode's table hash equals ``expected`` (an ``answer_md5``-style reply), compared as the original."""
    got, want = clean_answers(hash_value(session.md5_hash())), clean_answers(expected)
    return got is not None and got == want
