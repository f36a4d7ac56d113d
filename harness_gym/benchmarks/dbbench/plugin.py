"""DBBench as a registered benchmark (entry point ``dbbench``)."""
from __future__ import annotations

from harness_gym.benchmarks.api import SelectSpec
from harness_gym.benchmarks.builtin import ModuleBenchmark

SELECT = SelectSpec(
    signatures=("commit_before_sql", "commit_before_mutation", "empty_commit", "verbose_answer", "identifier_error",
                "empty_result", "numeric_text", "repeated_sql", "mutation_format"),
    signals=(("sql_calls", 20), ("error_results", 20), ("empty_results", 20), ("max_same_sql", 20),
             ("text_only_turns", 20), ("commits", 5)),
    kinds=(("mutation", ("INSERT", "UPDATE")), ("select", ())),
)


class DBBench(ModuleBenchmark):
    name = "dbbench"
    display = "DBBench"

    def select(self) -> SelectSpec:
        return SELECT
