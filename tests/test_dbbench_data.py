"""DBBench data: loader, reference repair, verification against the original data, generator, download."""
from __future__ import annotations

import functools
import hashlib
import http.server
import json
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from support import require_mysql_url

from harness_gym.errors import ConfigError, TaskDataError
from harness_gym.benchmarks.dbbench.data import (
    DEFAULT_FILES, DEFAULT_SHA256, DEFAULT_URL, SOURCE_COMMIT, download, main_download, main_verify, verify,
)
from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.generator import THEMES, generate_split
from harness_gym.benchmarks.dbbench.loader import load_jsonl, load_split, repair_reference_sql

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dbbench"
STANDARD_MIX = {"INSERT": 100, "UPDATE": 100, "other": 17, "counting": 17, "comparison": 17, "ranking": 17,
                "aggregation-SUM": 8, "aggregation-MIN": 8, "aggregation-MAX": 8, "aggregation-AVG": 8}


mysql_url = require_mysql_url


@functools.lru_cache(maxsize=None)
def original(split: str):
    return tuple(load_split(split, DATA))


# ---------------------------------------------------------------- loader


def test_loads_the_original_splits():
    test, valid = original("test"), original("valid")
    assert len(test) == 300 and len(valid) == 60
    assert Counter(t.task_type for t in test) == STANDARD_MIX
    assert Counter(t.is_mutation for t in valid) == {True: 40, False: 20}
    first = test[0]
    assert first.task_id == "test:0" and first.label == ("Women +60kg Bronze",)
    assert first.reference_sql == """SELECT Notes FROM "Jiu-Jitsu Championships Results" WHERE Method = 'Decision';"""
    assert first.add_description.startswith("The name of this table is Jiu-Jitsu Championships Results")
    mutation = next(t for t in valid if t.task_type == "UPDATE")
    assert mutation.reference_sql == mutation.label[0] and mutation.answer_md5.startswith("[('")
    assert all(isinstance(v, str) for t in test for r in t.rows for v in r)  # numbers become text
    assert len({t.identity() for t in test}) == 300


def test_evidence_is_read(tmp_path):
    line = json.loads((DATA / "dev.jsonl").read_text().splitlines()[0])
    line["evidence"] = "Credentials are dates."
    (tmp_path / "e.jsonl").write_text(json.dumps(line) + "\n\n")
    (task,) = load_jsonl(tmp_path / "e.jsonl", "e")
    assert task.evidence == "Credentials are dates." and task.task_id == "e:0"


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: "{not json", "not valid JSON"),
    (lambda d: json.dumps({k: v for k, v in d.items() if k != "table"}), "missing field 'table"),
    (lambda d: json.dumps({**d, "type": ["DELETE"]}), "type must be"),
    (lambda d: json.dumps({**d, "label": "x"}), "label must be a list"),
    (lambda d: json.dumps({k: v for k, v in d.items() if k != "sql"}), "missing field 'sql.query'"),
])
def test_broken_lines_name_file_and_line(tmp_path, mutate, needle):
    lines = (DATA / "dev.jsonl").read_text().splitlines()[:3]
    lines[1] = mutate(json.loads(lines[1]))
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskDataError) as e:
        load_jsonl(path, "b")
    msg = str(e.value)
    assert msg.startswith(f"{path}:2: ") and needle in msg and "expected" in msg and "\n" not in msg


def test_load_split_files(tmp_path):
    with pytest.raises(TaskDataError, match="harness-gym data download dbbench"):
        load_split("train", tmp_path)
    with pytest.raises(TaskDataError, match="unknown DBBench split"):
        load_split("dev", tmp_path)
    (tmp_path / "db_out_new.jsonl").write_text((DATA / "dev.jsonl").read_text())
    assert [t.task_id for t in load_split("train", tmp_path)][:2] == ["train:0", "train:1"]


def test_repair_reference_sql_examples():
    by_id = {t.task_id: t for t in original("test") + original("valid")}
    expect = {
        "test:0": "SELECT Notes FROM `Jiu-Jitsu Championships Results` WHERE Method = 'Decision';",
        "test:63": "SELECT Player, `Int yards` FROM `Player Stats` WHERE Sacks = 11.5 ORDER BY `Int yards` ASC LIMIT 1;",
        "test:49": "SELECT November FROM game_results WHERE Game < 16 AND Points > 22;",
        "valid:7": "SELECT Score FROM `Football Matches` WHERE Result='2–1' AND Competition='Friendly' AND Goal<17;",
        "test:96": "SELECT AVG(Gold) AS Avg_Gold FROM `Olympic Medals` WHERE Nation IN ('China', 'Japan', 'North Korea');",
        "test:81": "SELECT MIN(`Release`) FROM `Music Releases`;",
    }
    for tid, fixed in expect.items():
        assert repair_reference_sql(by_id[tid].reference_sql, by_id[tid]) == fixed
    ok = by_id["test:21"]  # already runnable: unchanged
    assert repair_reference_sql(ok.reference_sql, ok) == ok.reference_sql


# ---------------------------------------------------------------- verification on the original data

# Measured pass counts of the original references played through DBBenchWorld, scored as the
# function-calling AgentBench scores them (mutations by their stored answer_md5). Most SELECT
# labels come from the source QA datasets, not from running the reference SQL, so many
# references (even repaired) return something else; a change in these numbers is a regression.
SQLITE = {
    "valid": ({"SELECT": 3, "INSERT": 20, "UPDATE": 20}, {"SELECT": 5, "INSERT": 20, "UPDATE": 20}),
    "test": ({"other": 8, "counting": 8, "comparison": 5, "ranking": 4, "aggregation-SUM": 2, "aggregation-MIN": 6,
              "aggregation-MAX": 1, "aggregation-AVG": 4, "SELECT": 38, "INSERT": 98, "UPDATE": 97},
             {"other": 12, "counting": 8, "comparison": 8, "ranking": 6, "aggregation-SUM": 3, "aggregation-MIN": 6,
              "aggregation-MAX": 1, "aggregation-AVG": 6, "SELECT": 50, "INSERT": 99, "UPDATE": 97}),
}
MARIADB = {
    "valid": ({"SELECT": 4, "INSERT": 20, "UPDATE": 20}, {"SELECT": 7, "INSERT": 20, "UPDATE": 20}),
    "test": ({"other": 4, "counting": 7, "comparison": 4, "ranking": 3, "aggregation-SUM": 2, "aggregation-MIN": 3,
              "aggregation-MAX": 1, "aggregation-AVG": 4, "SELECT": 28, "INSERT": 100, "UPDATE": 97},
             {"other": 13, "counting": 8, "comparison": 8, "ranking": 6, "aggregation-SUM": 3, "aggregation-MIN": 6,
              "aggregation-MAX": 1, "aggregation-AVG": 6, "SELECT": 51, "INSERT": 100, "UPDATE": 97}),
}


def _passes(report, repaired: bool, keys) -> dict[str, int]:
    counts = report.by_type(repaired)
    return {k: counts[k][0] for k in keys}


@pytest.mark.parametrize("split", ["valid", "test"])
def test_original_references_on_sqlite(split):
    report = verify(original(split), "sqlite")
    raw, rep = SQLITE[split]
    assert _passes(report, False, raw) == raw
    assert _passes(report, True, rep) == rep
    assert report.md5_counts() == (0, 0)
    assert "repaired" in report.render()


@pytest.mark.mysql
@pytest.mark.parametrize("split", ["valid", "test"])
def test_original_references_on_mariadb(split):
    report = verify(original(split), mysql_url())
    raw, rep = MARIADB[split]
    assert _passes(report, False, raw) == raw
    assert _passes(report, True, rep) == rep
    # answer_md5 reproduces for all but three, which fail on the original too: test:225, whose
    # data row was edited after its hash was taken, and test:278 and test:295, whose reference
    # compares a text column with a bare number over a non-numeric row: an error in MySQL 8's
    # strict mode (the hashes were taken without it)
    assert report.md5_counts() == ({"valid": (40, 40), "test": (197, 200)}[split])
    failed = {v.task_id for v in report.verdicts if v.task_type in ("INSERT", "UPDATE") and not v.repaired_pass}
    assert failed == {"valid": set(), "test": {"test:225", "test:278", "test:295"}}[split]
    mismatched = [v.task_id for v in report.verdicts if v.md5_match is False]
    assert mismatched == ([] if split == "valid" else ["test:225", "test:278", "test:295"])


@pytest.mark.mysql
def test_sqlite_md5_equals_mariadb_md5_after_each_mutation():
    sqlite, mysql = open_database("sqlite"), open_database(mysql_url())
    for task in original("valid"):
        if not task.is_mutation:
            continue
        hashes = []
        for db in (sqlite, mysql):
            with db.create(task) as s:
                s.execute(repair_reference_sql(task.reference_sql, task))
                hashes.append(s.md5_hash())
        assert hashes[0] == hashes[1] == task.answer_md5, task.task_id


# ---------------------------------------------------------------- generator


def test_generator_sizes_mix_and_speed():
    t0 = time.perf_counter()
    test = generate_split("test")
    assert time.perf_counter() - t0 < 1.0
    assert Counter(t.task_type for t in test) == STANDARD_MIX
    assert len(generate_split("valid")) == 100
    small = generate_split("test", 10)
    assert len(small) == 10 and sum(t.is_mutation for t in small) in (6, 7)
    assert len(THEMES) >= 12
    with pytest.raises(ConfigError):
        generate_split("dev")


def test_generator_deterministic_and_splits_disjoint():
    a = [t.identity() for t in generate_split("test")]
    assert a == [t.identity() for t in generate_split("test")]
    ids = {s: {t.identity() for t in generate_split(s)} for s in ("train", "valid", "test")}
    assert len(ids["test"]) == 300 and len(ids["valid"]) == 100 and len(ids["train"]) == 1000
    assert not ids["train"] & ids["valid"] and not ids["train"] & ids["test"] and not ids["valid"] & ids["test"]
    tables = {s: {t.table_name for t in generate_split(s, 60)} for s in ("train", "valid", "test")}
    assert not tables["train"] & tables["valid"] and not tables["valid"] & tables["test"]


def test_generated_tasks_carry_the_known_traps():
    tasks = generate_split("test")
    names = {c for t in tasks for c in t.columns}
    assert {"Time/Retired", "Year of intro", "# Beds", "Height (m)"} <= names
    assert any("'4 Hours'" in t.reference_sql or " Hours'" in t.reference_sql for t in tasks if t.is_mutation)
    assert all("||" not in t.reference_sql and "CAST" not in t.reference_sql for t in tasks)
    db = open_database("sqlite")
    for t in tasks:  # ranking/MIN/MAX answers differ when numbers are compared as text
        if t.task_type in ("ranking", "aggregation-MIN", "aggregation-MAX"):
            with db.create(t) as s:
                naive = s.execute(t.reference_sql.replace(" + 0", ""))
            assert [str(v) for r in naive.rows for v in r] != list(t.label), t.task_id


def test_generated_tasks_pass_on_sqlite():
    for split in ("valid", "test"):
        report = verify(generate_split(split), "sqlite")
        assert report.passed() == len(report.verdicts), [v.task_id for v in report.verdicts if not v.raw_pass]


@pytest.mark.mysql
def test_generated_tasks_pass_on_mariadb():
    report = verify(generate_split("test"), mysql_url())
    assert report.passed() == 300, [v.task_id for v in report.verdicts if not v.raw_pass]


def test_main_verify_prints_and_returns(capsys, tmp_path):
    assert main_verify("valid", None, "sqlite") == 0
    assert "overall_cat_accuracy" in capsys.readouterr().out
    assert main_verify("train", tmp_path, "sqlite") == 2
    assert "harness-gym data download dbbench" in capsys.readouterr().out


# ---------------------------------------------------------------- download


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "srv"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}/dbbench"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _serve_originals(root: Path) -> None:
    (root / "dbbench").mkdir()
    for name in ("dev.jsonl", "standard.jsonl"):
        (root / "dbbench" / name).write_bytes((DATA / name).read_bytes())


def test_download_success(server, tmp_path):
    root, url = server
    _serve_originals(root)
    dest = tmp_path / "out"
    paths = download(url, dest)
    assert [p.name for p in paths] == ["dev.jsonl", "standard.jsonl"]
    assert (dest / "standard.jsonl").read_bytes() == (DATA / "standard.jsonl").read_bytes()
    assert sorted(p.name for p in dest.iterdir()) == ["dev.jsonl", "standard.jsonl"]  # no temp files left
    assert len(load_split("test", dest)) == 300


def test_default_source_is_the_function_calling_data(server, tmp_path):
    """The default address is pinned to the commit whose files are the ones the loader (and these tests) use."""
    assert SOURCE_COMMIT in DEFAULT_URL and "v0.2" not in DEFAULT_URL and DEFAULT_URL.endswith("/data/dbbench")
    for name in DEFAULT_FILES:
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == DEFAULT_SHA256[name]
    root, url = server
    _serve_originals(root)
    assert len(download(url, tmp_path / "ok", sha256=DEFAULT_SHA256)) == 2
    lines = (root / "dbbench" / "dev.jsonl").read_text().splitlines()
    (root / "dbbench" / "dev.jsonl").write_text("\n".join(lines[1:]) + "\n")  # still valid tasks, other bytes
    with pytest.raises(TaskDataError, match=r"dev.jsonl: sha256 .* is not the recorded .*--url"):
        download(url, tmp_path / "bad", sha256=DEFAULT_SHA256)
    assert not (tmp_path / "bad" / "standard.jsonl").exists()


def test_download_404(server, tmp_path):
    _, url = server
    with pytest.raises(TaskDataError, match="HTTP 404") as e:
        download(url, tmp_path / "out")
    assert "\n" not in str(e.value)


def test_download_dead_port(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TaskDataError, match="cannot reach the server"):
        download(f"http://127.0.0.1:{port}/x", tmp_path / "out")


def test_download_broken_file_keeps_existing_data(server, tmp_path):
    root, url = server
    _serve_originals(root)
    (root / "dbbench" / "standard.jsonl").write_text('{"description": "x"}\n')
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "dev.jsonl").write_text("old")
    with pytest.raises(TaskDataError, match=r"standard.jsonl:1: not a DBBench task"):
        download(url, dest)
    assert (dest / "dev.jsonl").read_text() == "old"  # nothing written when any file is broken
    assert sorted(p.name for p in dest.iterdir()) == ["dev.jsonl"]


def test_main_download(server, tmp_path, capsys):
    root, url = server
    _serve_originals(root)
    assert main_download(url, tmp_path / "d") == 0
    assert "wrote" in capsys.readouterr().out
    assert main_download(url + "/missing", tmp_path / "d") == 2
    assert capsys.readouterr().out.startswith("error: ")
