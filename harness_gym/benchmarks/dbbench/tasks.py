"""DBBench tasks: the AgentBench record, as one immutable dataclass.

Loading the original jsonl lives in ``loader.py``; the procedural generator in
``generator.py``. Both produce ``DBTask``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness_gym.benchmarks.base import digest

MUTATION_TYPES = ("INSERT", "UPDATE")
SELECT_TYPES = (
    "other",
    "counting",
    "comparison",
    "ranking",
    "aggregation-SUM",
    "aggregation-MIN",
    "aggregation-MAX",
    "aggregation-AVG",
)
TASK_TYPES = SELECT_TYPES + MUTATION_TYPES


@dataclass(frozen=True)
class DBTask:
    """One DBBench task. ``label`` is the answer list (SELECT types) or ``[statement]`` (mutations).

    ``reference_sql`` is the query (SELECT types) or statement (mutations) that solves the
    task; it is gold data: it reaches the checker and the simulated target, never a hook.
    """

    task_id: str
    task_type: str
    description: str
    table_name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    label: tuple[str, ...]
    reference_sql: str
    add_description: str = ""
    evidence: str = ""
    answer_md5: str | None = None
    source: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def is_mutation(self) -> bool:
        return self.task_type in MUTATION_TYPES

    @property
    def answer_shape(self) -> str:
        """'mutation', 'single' or 'multi' — what a final answer looks like."""
        if self.is_mutation:
            return "mutation"
        return "single" if len(self.label) == 1 else "multi"

    def identity(self) -> str:
        return digest(
            {
                "type": self.task_type,
                "description": self.description,
                "table": self.table_name,
                "columns": list(self.columns),
                "rows": [list(r) for r in self.rows],
                "label": list(self.label),
                "reference_sql": self.reference_sql,
            }
        )
