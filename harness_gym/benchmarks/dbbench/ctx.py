"""The DBBench ``ctx`` of Harness-R1 (spec §3), derived only from what the agent has seen.

``DBState`` follows an episode step by step; ``ctx()`` renders the dict hooks receive.
Field and predicate names follow Harness-R1 so its published patches run unchanged.
Nothing here reads gold data: ``task`` exposes the task type (dataset metadata), the table
name and the question, never the label or the reference SQL.
"""
from __future__ import annotations

import ast
import datetime
import decimal
import re
from dataclasses import dataclass, field
from typing import Any

from harness_gym.types import StepResult, ToolCall

_MUTATION_RE = re.compile(r"^\s*(insert|update|delete|replace)\b", re.I)
_HEADERS_RE = re.compile(r"the headers of this table are (.*?)\.?\s*$", re.I | re.M)
_DESCRIBE_RE = re.compile(r"^\s*(describe|desc|show\s+(full\s+)?columns)\b", re.I)
VALUE_TYPES = ("counting", "aggregation-SUM", "aggregation-MIN", "aggregation-MAX", "aggregation-AVG")


def answer_shape(task_type: str) -> str:
    """What a final answer looks like, from the task type alone (never from the label)."""
    if task_type in ("INSERT", "UPDATE"):
        return "mutation"
    return "value" if task_type in VALUE_TYPES else "rows"


_DRIVER_TYPES: dict[str, Any] = {
    "Decimal": decimal.Decimal, "datetime.date": datetime.date, "datetime.datetime": datetime.datetime,
    "datetime.time": datetime.time, "datetime.timedelta": datetime.timedelta, "bytearray": bytearray,
}


def _value(node: ast.AST) -> Any:
    """A literal, or a driver value's repr (``Decimal('1.50')``, ``datetime.date(2020, 1, 1)``) built
    from literal arguments; anything else raises ``ValueError``. Nothing is executed."""
    if isinstance(node, ast.Call) and not node.keywords:
        name = ast.unparse(node.func)
        if name in _DRIVER_TYPES:
            try:
                return _DRIVER_TYPES[name](*(ast.literal_eval(a) for a in node.args))
            except (TypeError, ValueError, OverflowError, decimal.InvalidOperation) as e:
                raise ValueError(str(e)) from None
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    return ast.literal_eval(node)


def parse_rows(text: str) -> list[tuple[Any, ...]] | None:
    """Rows from a rendered result (``str(rows)``, with the driver's Decimal/date values), or None
    when it is an error or truncated."""
    if not text.startswith("[") or text.endswith("[TRUNCATED]"):
        return None
    try:
        value = _value(ast.parse(text, mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    return [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in value]


def _norm_sql(sql: str) -> str:
    return " ".join(sql.strip().rstrip(";").split()).lower()


@dataclass
class DBState:
    """Per-episode counters and history behind the DBBench ctx."""

    task_type: str
    target_table: str
    description: str
    max_rounds: int
    discovered_columns: list[str] = field(default_factory=list)
    round: int = 0
    sql_count: int = 0
    last_sql: str = ""
    last_result: str = ""
    last_error_kind: str = ""
    last_error_text: str = ""
    last_result_was_error: bool = False
    error_streak: int = 0
    empty_streak: int = 0
    text_only_streak: int = 0
    loop_streak: int = 0
    mutation_attempted: bool = False
    candidate_answer: list[str] = field(default_factory=list)
    sql_history: list[str] = field(default_factory=list)
    sql_history_raw: list[str] = field(default_factory=list)
    observation: str = ""

    @classmethod
    def start(cls, task_type: str, target_table: str, description: str, first_observation: str, max_rounds: int) -> "DBState":
        st = cls(task_type, target_table, description, max_rounds, observation=first_observation)
        m = _HEADERS_RE.search(first_observation)
        if m:
            st.discovered_columns = [c.strip() for c in m.group(1).split(",") if c.strip()]
        return st

    # --- updates -------------------------------------------------------------------
    def note_text_only(self) -> None:
        self.text_only_streak += 1

    def note_tool_call(self) -> None:
        self.text_only_streak = 0

    def after_step(self, call: ToolCall, result: StepResult) -> None:
        self.observation = result.observation
        if call.name != "execute_sql":
            return
        query = str(call.arguments.get("query", ""))
        norm = _norm_sql(query)
        self.loop_streak = self.loop_streak + 1 if self.sql_history and self.sql_history[-1] == norm else 0
        self.sql_history.append(norm)
        self.sql_history_raw.append(query)
        self.sql_count += 1
        self.last_sql = query
        self.last_result = result.observation
        is_error = bool(result.info.get("is_error"))
        self.last_result_was_error = is_error
        self.last_error_kind = str(result.info.get("error_kind", "")) if is_error else "ok"
        self.last_error_text = result.observation if is_error else ""
        self.error_streak = self.error_streak + 1 if is_error else 0
        rows = None if is_error else parse_rows(result.observation)
        empty = rows == [] and not _MUTATION_RE.match(query)
        if empty:
            self.last_error_kind = "empty"
        self.empty_streak = self.empty_streak + 1 if empty else 0
        if not is_error and _MUTATION_RE.match(query):
            self.mutation_attempted = True
        if rows and not _MUTATION_RE.match(query):
            if _DESCRIBE_RE.match(query):
                for r in rows:
                    if r and str(r[0]) not in self.discovered_columns:
                        self.discovered_columns.append(str(r[0]))
            else:
                self.candidate_answer = ["" if v is None else str(v) for r in rows for v in r]

    # --- rendering -----------------------------------------------------------------
    def ctx(self, call: ToolCall | None = None, *, phase: str) -> dict[str, Any]:
        tool = call.name if call else ""
        query = str(call.arguments.get("query", "")) if call and tool == "execute_sql" else ""
        answers = call.arguments.get("answers", []) if call and tool == "commit_final_answer" else []
        if not isinstance(answers, list):
            answers = [answers]
        answers = [str(a) for a in answers]
        remaining = self.max_rounds - self.round - (1 if phase == "post_step" else 0)
        shape = answer_shape(self.task_type)
        mutation_task = shape == "mutation"
        cand = list(self.candidate_answer)
        implausible = bool(cand) and (
            all(v.strip() in ("", "None", "NULL") for v in cand) or (shape == "value" and len(cand) > 1)
        )
        is_commit = tool == "commit_final_answer"
        current_sql = _norm_sql(query) if query else (self.sql_history[-1] if phase == "post_step" and self.sql_history else "")
        repeated = bool(current_sql) and (
            self.sql_history[:-1].count(current_sql) > 0 if phase == "post_step" else current_sql in self.sql_history
        )
        return {
            "phase": phase,
            "observation": self.observation,
            "step": self.round,
            "max_step": self.max_rounds,
            "remaining_steps": remaining,
            "action": {
                "tool": tool,
                "query": query,
                "answers": answers,
                "h2_action": "",
                "h2_blocked_reason": "",
                "commit_gate_action": "",
                "commit_gate_reason": "",
            },
            "state": {
                "sql_count": self.sql_count,
                "last_sql": self.last_sql,
                "last_result": self.last_result,
                "last_error_kind": self.last_error_kind,
                "last_error_text": self.last_error_text,
                "last_result_was_error": self.last_result_was_error,
                "error_streak": self.error_streak,
                "empty_streak": self.empty_streak,
                "text_only_streak": self.text_only_streak,
                "loop_streak": self.loop_streak,
                "mutation_attempted": self.mutation_attempted,
                "candidate_answer": cand,
                "candidate_answer_shape": shape,
                "candidate_implausible": implausible,
                "remaining_rounds": remaining,
            },
            "task": {
                "task_type": self.task_type,
                "answer_shape": shape,
                "target_table": self.target_table,
                "description": self.description,
            },
            "dbbench": {
                "sql_history": list(self.sql_history),
                "sql_history_raw": list(self.sql_history_raw),
                "discovered_columns": list(self.discovered_columns),
                "db_response": self.last_result,
                "round": self.round,
            },
            "predicates": {
                "execute_sql": tool == "execute_sql",
                "commit_final_answer": is_commit,
                "no_sql_yet": self.sql_count == 0,
                "commit_before_sql": is_commit and self.sql_count == 0,
                "commit_empty_answer": is_commit and not any(a.strip() for a in answers) and not mutation_task,
                "mutation_task": mutation_task,
                "mutation_not_attempted": mutation_task and not self.mutation_attempted,
                "last_result_error": self.last_result_was_error,
                "last_result_empty": self.empty_streak > 0,
                "unknown_column_error": self.last_result_was_error and self.last_error_kind == "unknown_col",
                "syntax_error": self.last_result_was_error and self.last_error_kind == "syntax",
                "repeated_sql": repeated,
                "candidate_answer_available": bool(cand),
                "remaining_rounds_low": remaining <= 3,
                "text_only_loop": self.text_only_streak >= 2,
            },
        }
