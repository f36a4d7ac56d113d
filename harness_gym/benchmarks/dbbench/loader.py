"""Loading AgentBench DBBench jsonl files into ``DBTask`` records.

``load_jsonl`` reads the original format as is (fields in specs/benchmarks.md §3);
``load_split`` maps split names to the original files. ``repair_reference_sql`` is a
documented, minimal repair of reference queries that cannot run as written (used by
verification and as the simulated target's knowledge, never to change what a task is).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Callable
from typing import Any

from harness_gym.errors import TaskDataError, one_line
from harness_gym.benchmarks.dbbench.db import cell
from harness_gym.benchmarks.dbbench.tasks import MUTATION_TYPES, TASK_TYPES, DBTask

SPLIT_FILES = {"test": ("standard.jsonl",), "valid": ("dev.jsonl",), "train": ("train.jsonl", "db_out_new.jsonl")}
_EXPECTED = (
    "expected one JSON object a line with description, label (list), type ([one type]), "
    "table{table_name, table_info{columns[{name}], rows}} and sql{query} or a mutation label"
)


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict) or key not in obj:
            raise KeyError(".".join(keys))
        obj = obj[key]
    return obj


def parse_task(entry: Any, task_id: str) -> DBTask:
    """One AgentBench record → ``DBTask``; ``ValueError``/``KeyError`` name the bad field."""
    if not isinstance(entry, dict):
        raise ValueError(f"a line is a {type(entry).__name__}, not an object")
    types = _get(entry, "type")
    if not isinstance(types, list) or not types or types[0] not in TASK_TYPES:
        raise ValueError(f"type must be a one-element list of {list(TASK_TYPES)}, got {types!r}")
    task_type = types[0]
    label = _get(entry, "label")
    if not isinstance(label, list):
        raise ValueError(f"label must be a list, got {type(label).__name__}")
    desc = _get(entry, "description")
    name = _get(entry, "table", "table_name")
    cols = _get(entry, "table", "table_info", "columns")
    rows = _get(entry, "table", "table_info", "rows")
    if not isinstance(desc, str) or not isinstance(name, str) or not name:
        raise ValueError("description and table.table_name must be strings")
    if not isinstance(cols, list) or not cols or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in cols
    ):
        raise ValueError("table.table_info.columns must be a non-empty list of {name, type}")
    columns = tuple(c["name"] for c in cols)
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == len(columns) for r in rows):
        raise ValueError(f"table.table_info.rows must be lists of {len(columns)} values")
    if task_type in MUTATION_TYPES:
        if len(label) != 1 or not isinstance(label[0], str):
            raise ValueError("a mutation's label must be [statement]")
        reference = label[0]
    else:
        reference = _get(entry, "sql", "query")
        if not isinstance(reference, str):
            raise ValueError("sql.query must be a string")
    md5 = entry.get("answer_md5")
    return DBTask(
        task_id=task_id,
        task_type=task_type,
        description=desc,
        table_name=name,
        columns=columns,
        rows=tuple(tuple(cell(v) for v in r) for r in rows),
        label=tuple(str(x) for x in label),
        reference_sql=reference,
        add_description=str(entry.get("add_description") or ""),
        evidence=str(entry.get("evidence") or ""),
        answer_md5=str(md5) if md5 is not None else None,
        source=str(entry.get("source") or ""),
    )


def load_jsonl(path: str | Path, name: str) -> list[DBTask]:
    """Tasks of one AgentBench jsonl file; ``task_id = f"{name}:{line_index}"``."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskDataError(one_line(f"{path}: cannot read DBBench tasks: {e}")) from None
    tasks = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            tasks.append(parse_task(json.loads(line), f"{name}:{i}"))
        except json.JSONDecodeError as e:
            raise TaskDataError(one_line(f"{path}:{i + 1}: not valid JSON ({e.msg}); {_EXPECTED}")) from None
        except KeyError as e:
            raise TaskDataError(one_line(f"{path}:{i + 1}: missing field {e.args[0]!r}; {_EXPECTED}")) from None
        except (ValueError, TypeError) as e:
            raise TaskDataError(one_line(f"{path}:{i + 1}: {e}; {_EXPECTED}")) from None
    return tasks


def load_split(split: str, data_dir: str | Path) -> list[DBTask]:
    """The original files: test → standard.jsonl, valid → dev.jsonl, train → train/db_out_new.jsonl."""
    if split not in SPLIT_FILES:
        raise TaskDataError(f"unknown DBBench split {split!r}; expected one of {sorted(SPLIT_FILES)}")
    data_dir = Path(data_dir)
    for fname in SPLIT_FILES[split]:
        if (data_dir / fname).is_file():
            return load_jsonl(data_dir / fname, split)
    wanted = " or ".join(SPLIT_FILES[split])
    raise TaskDataError(
        f"DBBench split {split!r} needs {wanted} in {data_dir}, which is missing; "
        "run `harness-gym data download dbbench` to fetch the original files"
    )


# ---------------------------------------------------------------- reference repair
#
# Many original SELECT references were written for another dialect or by hand: SQL
# Server brackets ([Home team]), double-quoted identifiers, a quoted table name in
# single quotes, unquoted names with spaces (FROM Player Stats), keywords glued to the
# previous token (AverageFROM, DESCLIMIT), or a table name that is not the task's
# (FROM table, FROM Olympic_Medals). The repair fixes only those, using the task's own
# table and column names, and leaves functions, values and logic as written.

_TOKEN = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\[[^\]]*\]")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GLUED = re.compile(r"(?<=[\w'\"`\])])(FROM|WHERE|ORDER BY|GROUP BY|LIMIT|AND|DESC|ASC|HAVING)(?=\s|$|[(`\[\"'])")
_TARGET = re.compile(r"\b(FROM|JOIN|UPDATE|INTO)(\s+)([A-Za-z_][\w]*)", re.IGNORECASE)
_KEYWORDS = {"select", "where", "set", "values", "group", "order", "limit", "as", "on"}
# reserved words that are also column or table names in the data (MATCH, RELEASE, RANK…)
_RESERVED = {"table", "match", "release", "rank", "rows", "row", "range", "change", "key", "index", "interval"}


def _bt(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def repair_reference_sql(sql: str, task: DBTask) -> str:
    """A runnable MySQL form of an original reference query; unchanged when nothing applies."""
    names = {n.lower(): n for n in (task.table_name, *task.columns) if n}
    spaced = {n.lower().replace(" ", "_"): n for n in task.columns if " " in n}
    held: list[str] = []

    def hold(text: str) -> str:
        held.append(text)
        return f"\x00{len(held) - 1}\x00"

    def quoted(m: re.Match[str]) -> str:
        tok = m.group(0)
        inner = tok[1:-1]
        if tok[0] == "[" or (tok[0] == '"' and inner.lower() in names):
            return hold(_bt(names.get(inner.lower(), inner)))
        return hold(tok)

    text = _TOKEN.sub(quoted, sql)
    # 'Table Name' right after FROM is a table, not a string
    def table_string(m: re.Match[str]) -> str:
        tok = held[int(m.group(3))]
        if tok.startswith("'") and tok[1:-1].lower() == task.table_name.lower():
            held[int(m.group(3))] = _bt(task.table_name)
        return m.group(0)

    re.sub(r"\b(FROM|JOIN|UPDATE|INTO)(\s+)\x00(\d+)\x00", table_string, text, flags=re.IGNORECASE)

    known = {n.lower() for n in names.values()}
    text = _GLUED.sub(lambda m: " " + m.group(1), text) if not _glued_name(text, known) else text
    for low in sorted(names, key=len, reverse=True):
        if _PLAIN.match(names[low]):
            continue
        pattern = r"(?<![\w`\x00])" + re.escape(names[low]) + r"(?![\w`\x00])"
        text = re.sub(pattern, _holder(hold, _bt(names[low])), text, flags=re.IGNORECASE)

    def target(m: re.Match[str]) -> str:
        # a bare target that is not the task's table (or is a reserved word like `table`)
        word = m.group(3).lower()
        if word in _KEYWORDS or (word == task.table_name.lower() and word not in _RESERVED):
            return m.group(0)
        return m.group(1) + m.group(2) + hold(_bt(task.table_name))

    text = _TARGET.sub(target, text)
    reserved = {n.lower(): n for n in task.columns if n.lower() in _RESERVED}
    text = re.sub(  # a column named like a reserved word, not used as a function
        r"(?<![\w`\x00])([A-Za-z_]\w*)(?![\w`\x00]|\s*\()",
        lambda m: hold(_bt(reserved[m.group(1).lower()])) if m.group(1).lower() in reserved else m.group(0),
        text,
    )
    text = re.sub(
        r"(?<![\w`\x00])([A-Za-z_]\w*)(?![\w`\x00])",
        lambda m: hold(_bt(spaced[m.group(1).lower()])) if m.group(1).lower() in spaced else m.group(0),
        text,
    )
    while "\x00" in text:
        text = re.sub(r"\x00(\d+)\x00", lambda m: held[int(m.group(1))], text)
    return text


def _holder(hold: Callable[[str], str], quoted: str) -> Callable[[re.Match[str]], str]:
    return lambda _m: hold(quoted)


def _glued_name(text: str, known: set[str]) -> bool:
    """Whether a keyword-looking suffix is really part of a known name (then leave it)."""
    for m in _GLUED.finditer(text):
        start = m.start()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if text[start:m.end()].lower() in known:
            return True
    return False
