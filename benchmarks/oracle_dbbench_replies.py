"""DBBench tool replies side by side: the original AgentBench code, our MySQL backend, our SQLite backend.

A corpus of statements per original task (its reference, repaired reference, the probes
an agent sends — SHOW TABLES, DESCRIBE, SELECT *, text-vs-number comparisons, CAST,
aggregates, DECIMAL results, multi-statement calls, errors — and for mutations the
checker's table hash after the reference) is played in order on a fresh database per
task by:

- ``--run original``: the function-calling AgentBench's own ``MySQLDatabase`` (imported
  from ``--agentbench``, with mysql.connector 9.3 and agentrl-worker installed in the
  Python that runs this; its environment controller is replaced by a fixed host/port);
- ``--run mysql`` / ``--run sqlite``: ``harness_gym``'s DBBench sessions.

Each run writes ``{task: [[statement, reply], …]}`` as JSON; ``--compare A.json B.json`` prints how many
replies agree (database names masked) and examples of each kind of difference. The
original run over every third task (``--every 3``) is
``tests/fixtures/dbbench/original_replies.json``, which the MySQL-marked test in
``tests/test_dbbench_replies.py`` replays. The server it ran on was MariaDB 10.11 started
with MySQL 8's defaults (``--sql-mode`` as ``db_mysql.SQL_MODE``, ``--collation-server``
``utf8mb4_uca1400_nopad_ai_ci``, ``--group-concat-max-len 1024``), as the original's mysql:8
containers would have them; our sessions set those per session, on any server.

Usage:
  python benchmarks/oracle_dbbench_replies.py --run original --agentbench AB --mysql-url mysql://root:password@127.0.0.1:3306 --out orig.json
  python benchmarks/oracle_dbbench_replies.py --run mysql --mysql-url "$HARNESS_GYM_MYSQL_URL" --out ours.json
  python benchmarks/oracle_dbbench_replies.py --compare orig.json ours.json
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MASK = re.compile(r"dbbench_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}")


def _bt(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def statements(entry: dict[str, Any]) -> list[str]:
    """What one task's episode sends, in order (pure: no project import, so both Pythons can build it)."""
    table = entry["table"]["table_name"]
    cols = [c["name"] for c in entry["table"]["table_info"]["columns"]]
    t, c0, cl = _bt(table), _bt(cols[0]), _bt(cols[-1])
    mutation = entry["type"][0] in ("INSERT", "UPDATE", "DELETE")
    sqls = [
        "SHOW TABLES", f"DESCRIBE {t}", f"SELECT * FROM {t} LIMIT 3", f"SELECT COUNT(*) FROM {t}",
        f"SELECT {cl} FROM {t} ORDER BY {cl} DESC LIMIT 3", f"SELECT {cl} FROM {t} ORDER BY {cl} + 0 DESC LIMIT 3",
        f"SELECT SUM({cl}), AVG({cl}), MAX({cl}), MIN({cl}) FROM {t}",
        f"SELECT CAST({cl} AS DECIMAL(10,2)) FROM {t} LIMIT 2", f"SELECT ROUND(AVG({cl}), 2) FROM {t}",
        f"SELECT * FROM {t} WHERE {cl} = 16", f"SELECT * FROM {t} WHERE {cl} > 1000 LIMIT 3",
        f"SELECT COUNT(*) FROM {t} WHERE {c0} LIKE '%a%'", f"SELECT {c0}, COUNT(*) FROM {t}",
        f'SELECT * FROM "{table}" LIMIT 1', f"SELECT {c0} FROM {table} LIMIT 1", "SELECT * FROM no_such_table",
        f"SELECT no_such_column FROM {t}", "SELECT 1; SELECT 2", f"SELECT COUNT(*) FROM {t};",
        "SELECT 1.50, 2 * 1.5, 7 / 2, 'x' + 0, 1 / 0", "SELECT DATABASE() IS NOT NULL", "SELEC 1",
    ]
    if mutation:
        sqls += [entry["label"][0]]
    else:
        sqls += [entry["sql"]["query"]]
    return sqls


def hash_query(entry: dict[str, Any]) -> str:
    cols = ",".join(_bt(c["name"]) for c in entry["table"]["table_info"]["columns"])
    return ("select md5(group_concat(rowhash order by rowhash)) as hash from( SELECT substring(MD5(CONCAT_WS(',', "
            f"{cols})), 1, 5) AS rowhash FROM {_bt(entry['table']['table_name'])}) as sub;")


def entries(data_dir: Path, every: int = 1) -> list[tuple[str, dict[str, Any]]]:
    """(task id, record) of the original files; every ``every``-th line of each."""
    out = []
    for split, fname in (("test", "standard.jsonl"), ("valid", "dev.jsonl")):
        lines = (data_dir / fname).read_text(encoding="utf-8").splitlines()
        out += [(f"{split}:{i}", json.loads(line)) for i, line in enumerate(lines) if line.strip() and i % every == 0]
    return out


# ---------------------------------------------------------------- runs


def run_original(data_dir: Path, agentbench: Path, url: str, every: int = 1) -> dict[str, list[list[str]]]:
    import asyncio
    import uuid
    from urllib.parse import urlsplit

    sys.path.insert(0, str(agentbench))
    import mysql.connector.aio as connector
    from src.server.tasks.dbbench import interaction
    from src.server.tasks.dbbench.environment import DBBenchEnvironmentDelegation
    from src.server.tasks.dbbench.task import DBBenchTask

    parts = urlsplit(url)
    plain_connect = connector.connect

    async def connect(**kw: Any) -> Any:  # the original connects to a container's IP on 3306 as root
        kw.update(port=parts.port or 3306, ssl_disabled=True)
        return await plain_connect(**kw)

    interaction.mysql_connector.connect = connect

    class Controller:  # stands in for agentrl's docker controller: one fixed server
        delegation = DBBenchEnvironmentDelegation(parts.password or "")

        async def start_session(self, kind: str) -> Any:
            return str(uuid.uuid4()), {kind: "local"}, {kind: parts.hostname}

        async def end_session(self, session_id: str) -> None:
            return None

    async def play(entry: dict[str, Any]) -> list[str]:
        db = interaction.MySQLDatabase(Controller())
        await db.initialize()
        try:
            try:
                await db.batch_execute(DBBenchTask._build_init_sql(entry))
            except Exception as e:  # noqa: BLE001 - e.g. valid:5's empty column name: the original cannot run it
                return [["", f"<setup failed: {e}>"]]
            calls = [[sql, await db.execute(sql)] for sql in statements(entry)]
            return calls + [[hash_query(entry), await db.execute(hash_query(entry))]]
        finally:
            await db.delete()

    async def all_tasks() -> dict[str, list[list[str]]]:
        return {tid: await play(e) for tid, e in entries(data_dir, every)}

    return asyncio.run(all_tasks())


def run_ours(data_dir: Path, backend: str, every: int = 1) -> dict[str, list[list[str]]]:
    """Our sessions' replies to the same calls; the hash comes from the checker's own ``md5_hash``."""
    from harness_gym.benchmarks.dbbench.db import open_database
    from harness_gym.benchmarks.dbbench.loader import parse_task

    db = open_database(backend)
    out = {}
    for tid, entry in entries(data_dir, every):
        with db.create(parse_task(entry, tid)) as session:
            calls = [[sql, session.execute(sql).text] for sql in statements(entry)]
            out[tid] = calls + [[hash_query(entry), session.md5_hash()]]
    db.close()
    return out


def masked(text: str) -> str:
    return MASK.sub("dbbench_<id>", text)


def compare(a: dict[str, list[list[str]]], b: dict[str, list[list[str]]], show: int = 12) -> tuple[int, int]:
    """(agreeing replies, replies) over the tasks both hold; prints differences by probe."""
    same = total = 0
    diffs: Counter[int] = Counter()
    examples: dict[int, tuple[str, str, str]] = {}
    for tid in sorted(set(a) & set(b)):
        if a[tid][0][1].startswith("<setup failed") or b[tid][0][1].startswith("<setup failed"):
            continue  # a task one side cannot set up is not a reply difference
        for k, ((_, x), (_, y)) in enumerate(zip(a[tid], b[tid])):
            total += 1
            if masked(x) == masked(y):
                same += 1
            else:
                diffs[k] += 1
                examples.setdefault(k, (tid, x[:160], y[:160]))
    print(f"{same}/{total} replies agree ({same / max(total, 1):.1%})")
    for k, n in diffs.most_common(show):
        tid, x, y = examples[k]
        print(f"  probe {k}: {n} differ, e.g. {tid}:\n    A: {x!r}\n    B: {y!r}")
    return same, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", choices=["original", "mysql", "sqlite"])
    ap.add_argument("--compare", nargs=2, type=Path)
    ap.add_argument("--agentbench", type=Path)
    ap.add_argument("--mysql-url")
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".." / "shared" / "data" / "dbbench")
    ap.add_argument("--every", type=int, default=1, help="every N-th task of each file (the CI fixture uses 3)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        compare(a, b)
        return 0
    if args.run == "original":
        if not (args.agentbench and args.mysql_url):
            ap.error("--run original needs --agentbench and --mysql-url")
        replies = run_original(args.data_dir, args.agentbench, args.mysql_url, args.every)
    elif args.run == "mysql":
        if not args.mysql_url:
            ap.error("--run mysql needs --mysql-url")
        replies = run_ours(args.data_dir, args.mysql_url, args.every)
    elif args.run == "sqlite":
        replies = run_ours(args.data_dir, "sqlite", args.every)
    else:
        ap.error("give --run or --compare")
    text = json.dumps(replies, ensure_ascii=False, indent=0, sort_keys=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
