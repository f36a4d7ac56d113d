"""DBBenchWorld: one DBBench episode behind the Harness-R1 tools.

Tools: ``execute_sql(query)`` runs one statement and returns the rendered rows or the
error text; ``commit_final_answer(answers)`` ends the episode and scores it as the
function-calling AgentBench does (``checker``: SELECT types by the normalised label,
mutations by the table hash against ``answer_md5``). As there, a call whose argument has
another name is read by its first argument. Observations never contain the label or the
reference SQL.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.dbbench.checker import check_answer, check_mutation, expected_md5
from harness_gym.benchmarks.dbbench.db import Database, Session
from harness_gym.benchmarks.dbbench.tasks import DBTask
from harness_gym.types import StepResult, ToolCall

TOOLS = ("execute_sql", "commit_final_answer")
UNPARSED_TEXT = "Error: Failed to parse tool call. Tool call format is incorrect."  # the original's reply
_MUTATION = re.compile(
    r"^\s*(\(\s*)*(insert|update|delete|replace|alter|drop|create|truncate|rename)\b", re.IGNORECASE
)


def is_mutation_sql(sql: str) -> bool:
    """Whether a statement changes data or schema (by its leading keyword)."""
    return bool(_MUTATION.match(sql))


def argument(args: dict[str, Any], name: str) -> Any:
    """``args[name]``, else the first argument's value (the original reads the first one); None if none."""
    if name in args:
        return args[name]
    return next(iter(args.values()), None)


def coerce_answers(value: Any) -> list[str] | None:
    """A list of strings for records and the ctx: a list, a JSON list in a string, or a bare string."""
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, str) else str(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return [value]
        return coerce_answers(parsed) if isinstance(parsed, list) else [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    return None


def first_message(task: DBTask) -> str:
    """Optional evidence, optional table information, then the question — one part a line."""
    parts = []
    if task.evidence:
        parts.append(f"Evidence: {task.evidence}")
    if task.add_description:
        parts.append(task.add_description)
    parts.append(f"Question: {task.description}")
    return "\n".join(parts)


class DBBenchWorld(World):
    """One episode at a time on a ``Database``; ``reset`` opens a fresh isolated session."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.task: DBTask | None = None
        self.session: Session | None = None
        self.done = False
        self._score = 0.0
        self.answers: list[str] | None = None

    def reset(self, task: DBTask) -> str:
        self.close()
        self.task, self.done, self._score, self.answers = task, False, 0.0, None
        self.session = self.database.create(task)
        return first_message(task)

    def step(self, call: ToolCall) -> StepResult:
        if self.task is None or self.session is None:
            return _error(call.name, "No task is loaded; the episode has not started.")
        if self.done:
            return _error(call.name, "The episode is over: the final answer was already committed.")
        args = call.arguments if isinstance(call.arguments, dict) else {}
        if "__unparsed__" in args and call.name in TOOLS:  # arguments that were not a JSON object
            return StepResult(UNPARSED_TEXT, False, {"tool": call.name, "is_error": True, "error_kind": "other"})
        if call.name == "execute_sql":
            query = argument(args, "query")
            if not isinstance(query, str) or not query.strip():
                return _error(call.name, "execute_sql needs a non-empty string argument 'query' (one SQL statement).")
            res = self.session.execute(query)
            return StepResult(res.text, False, {
                "tool": "execute_sql", "query": query, "is_error": res.is_error,
                "error_kind": res.error_kind, "row_count": res.row_count,
                "is_mutation_sql": is_mutation_sql(query),
            })
        if call.name == "commit_final_answer":
            if not args:
                return _error(
                    call.name, 'commit_final_answer needs an argument \'answers\': a list of strings, e.g. ["A1"].'
                )
            raw = argument(args, "answers")
            answers = coerce_answers(raw)
            if answers is None:
                answers = [str(raw)]
            self._score = 1.0 if self._judge(self.task, self.session, raw) else 0.0
            self.done, self.answers = True, answers
            return StepResult("Final answer committed.", True, {"tool": "commit_final_answer", "answers": answers})
        return _error(call.name, f"Unknown tool {call.name!r}; available tools: {', '.join(TOOLS)}.")

    def _judge(self, task: DBTask, session: Session, answers: Any) -> bool:
        if not task.is_mutation:
            return check_answer(task, answers)
        if task.answer_md5:
            return check_mutation(task, session, task.answer_md5)
        fresh = self.database.create(task)
        try:
            return check_mutation(task, session, expected_md5(task, fresh))
        finally:
            fresh.close()

    @property
    def score(self) -> float:
        return self._score

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _error(tool: str, text: str) -> StepResult:
    return StepResult(f"Error: {text}", False, {"tool": tool, "is_error": True, "error_kind": "other"})
