"""DBBench's ``BenchmarkSpec``: generated or original tasks, SQLite or MySQL worlds."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Sequence

from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.benchmarks.base import World


# The rules, not the harness (``BenchmarkSpec.protocol``): the episode loop reads its limits
# here; config.json keeps ``max_rounds`` for Harness-R1's file layout, equal to this value,
# and a patch changing it is rejected.
PROTOCOL: dict[str, Any] = {
    "max_rounds": 20,  # model turns per episode (AgentBench DBBench's round limit)
    "sql_timeout_s": 10.0,  # per SQL statement, in the world ("Error: SQL execution timed out.")
    "metric": "success rate: SELECT answers through the AgentBench result normalisation, mutations by table hash",
}

def spec() -> BenchmarkSpec:
    from harness_gym.benchmarks.dbbench import episode as runtime
    from harness_gym.benchmarks.dbbench import generator, loader
    from harness_gym.benchmarks.dbbench.db import ORIGINAL_FILES_BACKEND, open_database
    from harness_gym.benchmarks.dbbench.world import DBBenchWorld

    def load_tasks(split: str, data_dir: Path | None) -> list[Any]:
        if data_dir is None:
            return generator.generate_split(split)
        return loader.load_split(split, Path(data_dir))

    def world_factory(backend: str) -> Callable[[], World]:
        return Worlds(open_database(backend, sql_timeout_s=PROTOCOL["sql_timeout_s"]), DBBenchWorld)

    # generated tasks run on the embedded SQLite; the original files on a MySQL-compatible server
    return BenchmarkSpec("dbbench", load_tasks, world_factory, runtime.run_episode, default_backend="sqlite",
                         original_backend=ORIGINAL_FILES_BACKEND, gold_strings=gold_strings, protocol=PROTOCOL)


class Worlds:
    """A world factory over one database; ``close()`` releases the database (and a server it started)."""

    def __init__(self, database: Any, world: Callable[[Any], World]) -> None:
        self.database = database
        self.world = world

    def __call__(self) -> World:
        return self.world(self.database)

    def close(self) -> None:
        self.database.close()


_SQL_LITERAL = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")
_BARE_NUMBER = re.compile(r"[+-]?\d+")
MIN_CELL_NUMBER_DIGITS = 5  # a bare 4-digit cell (a year, a count) is too common to be evidence


def gold_strings(tasks: Sequence[Any]) -> list[str]:
    """What a DBBench patch must not contain: the batch's gold data.

    Labels (the answers; for mutations the statement), the reference SQL and its quoted
    literals, the expected table hash, and every cell value that is distinctive: schema
    names (table, columns) are shown to the agent and are not gold, and a cell that is a
    bare integer of fewer than ``MIN_CELL_NUMBER_DIGITS`` digits is too common (a year, a
    count, a grade). ``GoldStrings.build`` drops short and common words on top of this.
    """
    schema = {n.strip().lower() for t in tasks for n in (t.table_name, *t.columns)}
    out: list[str] = []
    for task in tasks:
        out += [str(v) for v in task.label]
        out.append(task.reference_sql)
        for m in _SQL_LITERAL.finditer(task.reference_sql):
            out.append(m.group(1) if m.group(1) is not None else m.group(2) or "")
        if task.answer_md5:
            out.append(task.answer_md5)
        for row in task.rows:
            for cell in row:
                text = str(cell).strip()
                if text.lower() in schema or (_BARE_NUMBER.fullmatch(text) and len(text.lstrip("+-")) < MIN_CELL_NUMBER_DIGITS):
                    continue
                out.append(text)
    return [s for s in out if s.strip() and s.strip().lower() not in schema]
