"""The MySQL-compatible default for DBBench's original files: a private MariaDB started on demand."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import unavailable

from harness_gym.errors import ConfigError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.benchmarks.dbbench import server
from harness_gym.benchmarks.dbbench.data import main_verify
from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.loader import load_split

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dbbench"


def _need_mariadb() -> None:
    if server.find_mariadb() is None:
        unavailable("MariaDB (mariadbd)", "not installed: apt-get install mariadb-server (.ci/mariadb.sh does)")


def test_original_files_default_to_a_mysql_compatible_server():
    spec = get_benchmark("dbbench")
    assert spec.backend_for(None) == "sqlite"  # generated tasks: embedded
    assert spec.backend_for(DATA) == "mariadb"


def test_no_server_is_a_one_line_error_saying_how(monkeypatch):
    monkeypatch.setattr(server, "find_mariadb", lambda: None)

    def no_docker() -> server.LocalServer:
        raise RuntimeError("Cannot connect to the Docker daemon")

    monkeypatch.setattr(server, "start_docker_mariadb", no_docker)
    with pytest.raises(ConfigError) as e:
        open_database("mariadb")
    msg = str(e.value)
    assert "\n" not in msg and "apt-get install mariadb-server" in msg and "Docker daemon" in msg
    assert "backend='mysql://" in msg and "backend='sqlite'" in msg


def test_reap_stale_removes_only_dead_owners(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    for name, owner in (("gone", dead.stdout.strip()), ("mine", str(os.getpid()))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "owner.pid").write_text(owner)
    assert server.reap_stale(tmp_path) == [tmp_path / "gone"]
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_local_mariadb_serves_and_is_removed_on_close(tmp_path):
    _need_mariadb()
    local = server.start_local_mariadb(tmp_path)
    (folder,) = list(tmp_path.iterdir())
    pid = int((folder / "server.pid").read_text())
    try:
        assert local.url.startswith("mysql://hg:") and "@127.0.0.1:" in local.url
        db = open_database(local.url)
        task = load_split("valid", DATA)[0]
        with db.create(task) as s:
            assert s.execute("SELECT @@sql_mode").text.startswith("[('ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES")
    finally:
        local.close()
    local.close()  # idempotent
    assert not folder.exists() and not _alive(pid)


def test_a_killed_owner_leaves_nothing_after_the_next_start(tmp_path):
    _need_mariadb()
    code = ("import os, sys; from pathlib import Path; from harness_gym.benchmarks.dbbench import server; "
            "s = server.start_local_mariadb(Path(sys.argv[1])); print(s.url, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    (left,) = list(tmp_path.iterdir())  # the owner died without close: its server is still running
    pid = int((left / "server.pid").read_text())
    assert _alive(pid)
    fresh = server.start_local_mariadb(tmp_path)
    try:
        assert not left.exists() and _gone(pid)
    finally:
        fresh.close()
    assert list(tmp_path.iterdir()) == []


def test_verify_on_the_default_backend_closes_its_server(tmp_path, monkeypatch, capsys):
    _need_mariadb()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main_verify("valid", DATA) == 0
    out = capsys.readouterr().out
    assert "on mariadb (started here)" in out and "answer_md5 matches after the reference statement: 40/40" in out
    assert list((tmp_path / "harness-gym" / "mariadb").iterdir()) == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _alive(pid)
