"""A MySQL-compatible server for DBBench's original files, started on demand (``backend="mariadb"``).

The original AgentBench files are judged on MySQL (text compared as numbers, SHOW TABLES,
backticks, strict mode, its hash), so they default to a MySQL-compatible backend:

1. a private MariaDB when ``mariadbd`` is installed: a fresh datadir under the cache
   (``$XDG_CACHE_HOME/harness-gym/mariadb/<pid>-<id>``), a free loopback port, a user with
   a random password; stopped and its datadir removed on ``close()`` (or at exit; a later
   start removes what a killed process left);
2. else the project's MariaDB container (``backend="docker"``), when Docker is usable;
3. else a ``ConfigError`` that says how to get one (or which backend to pass instead).

The server runs as the invoking user (``--user=root`` under root): it listens on
127.0.0.1 only and its one account has a random password.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import Any, Callable

from harness_gym.errors import ConfigError, WorldError, one_line

START_TIMEOUT_S = 60.0
HOW = ("install MariaDB (apt-get install mariadb-server), or pass backend='mysql://user:pass@host:port' "
       "for a server you run, or backend='sqlite' to accept SQLite's differences (README, DBBench)")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness-gym" / "mariadb"


def find_mariadb() -> tuple[str, str] | None:
    """(server, install-db) executables, or None when MariaDB (or MySQL's equivalents) is not installed."""
    server = shutil.which("mariadbd") or shutil.which("mysqld") or _sbin("mariadbd") or _sbin("mysqld")
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    return (server, install) if server and install else None


def _sbin(name: str) -> str | None:
    path = Path("/usr/sbin") / name
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


def _runs_in(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` is a server whose datadir is in ``folder`` (by its command line)."""
    try:
        return str(folder) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def reap_stale(root: Path) -> list[Path]:
    """Remove servers whose owning process is gone (killed before ``close``); returns the folders removed."""
    removed = []
    if not root.is_dir():
        return removed
    for folder in root.iterdir():
        owner = _read_pid(folder / "owner.pid")
        if owner and _alive(owner):
            continue
        server = _read_pid(folder / "server.pid")
        if server and _alive(server) and _runs_in(server, folder):  # never a reused pid of another program
            try:
                os.kill(server, signal.SIGKILL)
            except OSError:
                pass
        _remove(folder)
        removed.append(folder)
    return removed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """A running MySQL-compatible server this process owns; ``close()`` (or exit) stops and removes it."""

    def __init__(self, url: str, kind: str, stop: Callable[..., None], *args: Any) -> None:
        self.url = url
        self.kind = kind  # "mariadb" (a local process) or "docker"
        self._finalizer = weakref.finalize(self, stop, *args)  # runs once: on close, collection or exit

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"LocalServer({self.kind}, closed={self.closed})"


def _remove(folder: Path) -> None:
    """The server's folder and its socket folder (named in ``socket.dir``)."""
    try:
        sock_dir = Path((folder / "socket.dir").read_text().strip())
        if sock_dir.name.startswith("hg-mariadb-"):
            shutil.rmtree(sock_dir, ignore_errors=True)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _stop_process(proc: subprocess.Popen[bytes], folder: Path) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    _remove(folder)


def start_local_mariadb(root: Path | None = None, timeout_s: float = START_TIMEOUT_S) -> LocalServer:
    """Initialise a private datadir and start ``mariadbd`` on a free loopback port (module doc)."""
    found = find_mariadb()
    if found is None:
        raise ConfigError(f"MariaDB is not installed (no mariadbd on PATH or in /usr/sbin); {HOW}")
    server, install = found
    from harness_gym.benchmarks.dbbench.db_mysql import _pymysql

    pymysql = _pymysql()
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    reap_stale(root)
    folder = root / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "owner.pid").write_text(str(os.getpid()))
    sock_dir = Path(tempfile.mkdtemp(prefix="hg-mariadb-"))
    (folder / "socket.dir").write_text(str(sock_dir))
    user = ["--user=root"] if os.geteuid() == 0 else []
    log = folder / "server.log"
    try:
        init = subprocess.run(
            [install, "--no-defaults", f"--datadir={folder / 'data'}", "--auth-root-authentication-method=normal",
             "--skip-test-db", *user],
            capture_output=True, text=True, timeout=timeout_s,
        )
        if init.returncode != 0:
            raise WorldError(one_line(f"{install} failed ({init.returncode}): {(init.stderr or init.stdout)[-300:]}"))
        port = _free_port()
        sock = sock_dir / "sock"  # a unix socket path must stay under 108 bytes: not under the cache
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [server, "--no-defaults", f"--datadir={folder / 'data'}", f"--socket={sock}", "--bind-address=127.0.0.1",
                 f"--port={port}", f"--pid-file={folder / 'server.pid'}", "--skip-name-resolve",
                 "--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=2", "--max-connections=500", *user],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        password = secrets.token_hex(12)
        _provision(pymysql, proc, sock, password, log, timeout_s)
    except BaseException:
        if "proc" in locals():
            _stop_process(proc, folder)
        else:
            _remove(folder)
        raise
    return LocalServer(f"mysql://hg:{password}@127.0.0.1:{port}", "mariadb", _stop_process, proc, folder)


def _provision(pymysql: Any, proc: subprocess.Popen[bytes], sock: Path, password: str, log: Path, timeout_s: float) -> None:
    """Wait until the server answers on its socket, then create the loopback account."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-400:] if log.exists() else ""
            raise WorldError(one_line(f"mariadbd exited with {proc.returncode} while starting: {tail}"))
        try:
            conn = pymysql.connect(unix_socket=str(sock), user="root", password="", connect_timeout=2)
            break
        except pymysql.err.MySQLError:
            if time.monotonic() > deadline:
                raise WorldError(f"mariadbd did not answer within {timeout_s:g} s; see {log}") from None
            time.sleep(0.2)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE USER 'hg'@'127.0.0.1' IDENTIFIED BY %s", (password,))
            cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'hg'@'127.0.0.1'")
    finally:
        conn.close()


def start_docker_mariadb() -> LocalServer:
    """The project's DBBench container (``backend="docker"``); raises when Docker is not usable."""
    from harness_gym.docker import start_target

    handle = start_target("dbbench", "docker")
    return LocalServer(handle.backend, "docker", handle.close)


def start_server() -> LocalServer:
    """A local MariaDB if installed, else the Docker one, else a ``ConfigError`` saying how."""
    if find_mariadb() is not None:
        return start_local_mariadb()
    try:
        return start_docker_mariadb()
    except Exception as exc:  # noqa: BLE001 - any Docker failure means: no server this way
        why = one_line(f"{type(exc).__name__}: {exc}", limit=160)
    raise ConfigError(
        "DBBench's original files run on a MySQL-compatible server by default (backend='mariadb'), and none could "
        f"be started: mariadbd is not installed and Docker is not usable ({why}); {HOW}"
    )
