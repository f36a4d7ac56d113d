"""Build the DBBench checker-agreement table by running the original AgentBench checker.

For every SELECT-type task of the original files (test + valid) this makes a set of
answers an agent might commit — the label, values copied from the table, the reference
query's reply, and perturbations of each (quotes, whitespace, case, number formats, `%`,
thousands separators, null-like words, list order and shape, wrong answers) — and asks
the function-calling AgentBench's result processor (``src/server/tasks/dbbench/
result_processor.py`` of a THUDM/AgentBench checkout, imported from ``--agentbench``,
never copied) for its verdict. The rows (answers, label, type, verdict) are written as
JSON lines to ``tests/fixtures/dbbench/checker_cases.jsonl``; ``tests/test_dbbench_checker.py``
checks that the project's checker gives every verdict.

The answers go through the original's task code path too: its ``commit_final_answer``
takes the first argument and logs ``answer[:100]`` when the answer is truthy, so a
truthy answer that cannot be sliced (a number, a dict, ``true``) ends the sample with
score 0; that fact is applied here, outside the imported processor.

Usage: python benchmarks/oracle_dbbench_checker.py --agentbench /path/to/AgentBench
       [--data-dir ../shared/data/dbbench] [--out tests/fixtures/dbbench/checker_cases.jsonl]
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]


def load_original(agentbench: Path) -> Callable[[Any, Any, str], bool]:
    """The original ``DBResultProcessor.compare_results`` behind the task code's slicing rule."""
    src = agentbench / "src" / "server" / "tasks" / "dbbench" / "result_processor.py"
    if not src.is_file():
        raise SystemExit(f"--agentbench: expected {src} (a THUDM/AgentBench checkout, main branch)")
    pkg = types.ModuleType("ab_dbbench")
    pkg.__path__ = []  # a package, so the processor's relative import resolves
    interaction = types.ModuleType("ab_dbbench.interaction")
    interaction.Database = object  # the processor imports it only for its hashing helpers
    sys.modules.update({"ab_dbbench": pkg, "ab_dbbench.interaction": interaction})
    spec = importlib.util.spec_from_file_location("ab_dbbench.result_processor", src)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    compare = mod.DBResultProcessor.compare_results

    def verdict(answers: Any, label: Any, task_type: str) -> bool:
        if answers:
            try:
                answers[:100]
            except Exception:  # noqa: BLE001 - the original task ends the sample with score 0
                return False
        with contextlib.redirect_stdout(io.StringIO()):
            return bool(compare(answers, label, task_type))

    return verdict


# ---------------------------------------------------------------- answers an agent might commit


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def value_variants(v: str) -> list[tuple[str, str]]:
    """(kind, text) variants of one answer value."""
    out = [("same", v), ("spaces", f"  {v} "), ("single_quotes", f"'{v}'"), ("double_quotes", f'"{v}"'),
           ("backticks", f"`{v}`"), ("upper", v.upper()), ("lower", v.lower()), ("period", v + "."),
           ("newline", v + "\n"), ("percent", v + "%"), ("percent_space", v + " %"), ("comma_inside", v.replace(" ", ", ", 1)),
           ("prefix_words", f"The answer is {v}"), ("quote_and_space", f"' {v} '")]
    x = _number(v)
    if x is not None:
        out += [("int", str(int(x))) if abs(x) < 1e15 else ("int", v),
                ("dot0", f"{x:.1f}"), ("dot2", f"{x:.2f}"), ("plus_0.004", repr(x + 0.004)), ("plus_0.01", repr(x + 0.01)),
                ("plus_0.02", repr(x + 0.02)), ("plus_0.5", repr(x + 0.5)), ("plus_1", repr(x + 1)),
                ("thousands", f"{x:,.0f}" if x == int(x) else f"{x:,}"), ("thousands_dot", f"{x:,.2f}"),
                ("sci", f"{x:e}"), ("dollar", f"${v}"), ("unit", f"{v} points"), ("negative", f"-{v}"),
                ("underscore", f"{int(x):_}" if abs(x) < 1e15 and x == int(x) else v),
                ("percent_num", f"{x:g}%"), ("plus_sign", f"+{v}"), ("json_number", x)]
    return out


NULLISH = ["None", "NULL", "null", "", "nan", "NaN", "N/A", "0", "0.0", "inf", "-Infinity", "undefined", "[]", "none "]


def table_copies(label: list[str], rows: list[list[Any]]) -> list[tuple[str, str]]:
    """Cells of the table equal to a label value once commas are dropped (what an agent copies)."""
    out = []
    for v in label:
        x = _number(v)
        for row in rows:
            for c in row:
                c = str(c)
                if c != v and (c.strip().lower() == v.strip().lower() or (x is not None and _number(c) == x)):
                    out.append(("table_cell", c))
    return out


def answer_sets(task: dict[str, Any], others: list[list[str]]) -> list[tuple[str, Any]]:
    """(kind, answers) candidates for one task; ``answers`` is what ``commit_final_answer`` receives."""
    label = [str(v) for v in task["label"]]
    cands: list[tuple[str, Any]] = [("label", list(label))]
    copies = table_copies(label, task["table"]["table_info"]["rows"])
    for i, v in enumerate(label):
        for kind, variant in value_variants(v) + copies:
            cands.append((f"elem:{kind}", label[:i] + [variant] + label[i + 1:]))
    for n in NULLISH:
        cands.append(("nullish", [n]))
    cands += [("none", None), ("empty_list", []), ("empty_string", ""), ("zero_int", 0), ("false", False),
              ("number", 5), ("dict", {"a": label[0]}), ("nested", [label]), ("list_of_null", [None]),
              ("bare_string", label[0]), ("joined", ", ".join(label)), ("json_string", json.dumps(label)),
              ("repr_rows", str([(v,) for v in label])), ("repr_rows_float", str([(_number(v) or v,) for v in label])),
              ("repr_string_list", str(label)), ("reply_in_list", [str([(v,) for v in label])]),
              ("reversed", label[::-1]), ("duplicated", label + label[:1]), ("extra", label + ["0"]),
              ("dropped", label[1:]), ("decimal_reply", str([(f"Decimal('{v}')",) for v in label]).replace('"', "")),
              ("decimal_repr", f"[(Decimal('{label[0]}'),)]"), ("two_columns", str([(v, v) for v in label])),
              ("unbalanced_quote", "['" + label[0] + "]"), ("semicolon_list", ";".join(label))]
    for j, other in enumerate(others[:3]):
        cands.append((f"other_task_{j}", other))
    return cands


def build(data_dir: Path, verdict: Callable[[Any, Any, str], bool]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for split, fname in (("test", "standard.jsonl"), ("valid", "dev.jsonl")):
        entries = [json.loads(line) for line in (data_dir / fname).read_text(encoding="utf-8").splitlines() if line.strip()]
        selects = [(i, e) for i, e in enumerate(entries) if e["type"][0] not in ("INSERT", "UPDATE", "DELETE")]
        labels = [[str(v) for v in e["label"]] for _, e in selects]
        for k, (i, e) in enumerate(selects):
            others = labels[k + 1:] + labels[:k]
            for kind, answers in answer_sets(e, others):
                key = json.dumps([answers, e["label"], e["type"][0]], sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                rows.append({"task": f"{split}:{i}", "type": e["type"][0], "kind": kind, "answers": answers,
                             "label": e["label"], "original": verdict(answers, e["label"], e["type"][0])})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agentbench", required=True, type=Path, help="a THUDM/AgentBench checkout (main branch)")
    ap.add_argument("--data-dir", default=ROOT / ".." / "shared" / "data" / "dbbench", type=Path)
    ap.add_argument("--out", default=ROOT / "tests" / "fixtures" / "dbbench" / "checker_cases.jsonl", type=Path)
    args = ap.parse_args(argv)
    rows = build(args.data_dir, load_original(args.agentbench))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = Counter(r["original"] for r in rows)
    print(f"{len(rows)} cases from {len({r['task'] for r in rows})} tasks: original accepts {counts[True]}, "
          f"rejects {counts[False]}; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
