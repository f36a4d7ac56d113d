"""How sandbox workers are started: under bubblewrap, in a new network namespace, or plain.

``isolation()`` probes once per process (cached) what this machine allows and returns the
command prefix plus the OS layers that were *verified* by the probe, not assumed:

- ``bwrap``: ``bwrap --unshare-all`` (user, pid, net, ipc, uts, cgroup and mount
  namespaces), an unprivileged uid with every capability dropped, ``--die-with-parent``,
  and a filesystem made only of read-only binds of ``/usr`` (plus the ``/lib*`` links),
  the Python prefix and the two worker files; ``/dev`` is minimal and ``/tmp`` an empty
  read-only tmpfs. Nothing of the host's ``/work``, ``/home``, ``/root`` or ``/proc`` is
  visible, so gold data on disk is out of reach even if the AST policy had a hole.
- ``unshare``: ``unshare --net`` (or ``-rn`` when unprivileged): no network only.
- ``process``: a plain clean process (scrubbed environment, closed fds, rlimits).

The probe runs the real interpreter under the candidate prefix with a listener on the
host's 127.0.0.1 and checks that a connect from inside fails and that nothing inside is
writable; a candidate that fails (bwrap can be blocked in some containers) is skipped.
``HARNESS_GYM_SANDBOX=bwrap|unshare|process`` forces a level (an error if unavailable).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from harness_gym.errors import SandboxError, one_line

WORKER_PATH = Path(__file__).resolve().with_name("worker.py")
POLICY_PATH = Path(__file__).resolve().parent.parent / "harness" / "policy.py"
LEVELS = ("bwrap", "unshare", "process")
ENV_VAR = "HARNESS_GYM_SANDBOX"
WORKER_ENV = {"PATH": "/usr/bin:/bin"}
NOBODY = "65534"
INNER_DIR = "/sandbox"
PROBE_TIMEOUT_S = 10.0

BWRAP_LAYERS = ("bwrap", "userns-nobody", "no-capabilities", "pidns", "netns-no-network", "ipcns", "utsns",
                "mountns", "readonly-fs", "no-host-files")
UNSHARE_LAYERS = ("netns-no-network",)

_PROBE = r"""
import os, socket, sys
port = int(sys.argv[1])
check_fs = sys.argv[2] == "fs"
out = []
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1.0)
    s.connect(("127.0.0.1", port))
    out.append("network")
except OSError:
    pass
for d in ("/", "/tmp", os.getcwd()) if check_fs else ():
    p = os.path.join(d, ".hg-probe")
    try:
        with open(p, "w") as fh:
            fh.write("x")
        os.unlink(p)
        out.append("writable:" + d)
    except OSError:
        pass
out.append("ok")
print(" ".join(out))
"""


@dataclass(frozen=True)
class Isolation:
    """A verified way to start workers: ``prefix`` goes before the interpreter's argv."""

    level: str
    prefix: tuple[str, ...]
    layers: tuple[str, ...]
    inner_worker: str  # the worker file's path as the worker sees it
    inner_policy: str
    note: str = ""  # why a stronger level was not used

    @property
    def wants_info_fd(self) -> bool:
        return self.level == "bwrap"

    def command(self, python: str, info_fd: int | None = None) -> list[str]:
        prefix = list(self.prefix)
        if info_fd is not None and self.level == "bwrap":
            prefix[1:1] = ["--info-fd", str(info_fd)]
        return prefix + [python, "-I", "-S", "-B", self.inner_worker, self.inner_policy]


def python_executable() -> str:
    """The real interpreter (a venv's ``bin/python`` is a link; ``-I -S`` needs no venv)."""
    return os.path.realpath(sys.executable)


def _bwrap_prefix(bwrap: str, python: str) -> tuple[str, ...]:
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", NOBODY, "--gid", NOBODY, "--cap-drop", "ALL",
            "--die-with-parent", "--as-pid-1", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    roots: list[str] = []
    for path in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix), str(Path(python).parent.parent)}:
        if not any(path == r or path.startswith(r + "/") for r in ("/usr", *roots)):
            roots.append(path)
    for path in sorted(roots):
        args += ["--ro-bind", path, path]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind", str(WORKER_PATH), f"{INNER_DIR}/worker.py",
             "--ro-bind", str(POLICY_PATH), f"{INNER_DIR}/policy.py",
             "--dev", "/dev", "--remount-ro", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/tmp",
             "--remount-ro", "/", "--chdir", "/tmp", "--clearenv", "--setenv", "PATH", WORKER_ENV["PATH"], "--"]
    return tuple(args)


def _candidates(python: str) -> list[Isolation]:
    out: list[Isolation] = []
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if bwrap and sys.platform.startswith("linux"):
        out.append(Isolation("bwrap", _bwrap_prefix(bwrap, python), BWRAP_LAYERS,
                             f"{INNER_DIR}/worker.py", f"{INNER_DIR}/policy.py"))
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/local/bin")
    if unshare and sys.platform.startswith("linux"):
        for flags in (["--net"], ["--map-root-user", "--net"]):
            out.append(Isolation("unshare", (unshare, *flags, "--"), UNSHARE_LAYERS, str(WORKER_PATH), str(POLICY_PATH)))
    out.append(Isolation("process", (), (), str(WORKER_PATH), str(POLICY_PATH)))
    return out


def _probe(candidate: Isolation, python: str, cwd: str) -> str | None:
    """None if ``candidate`` runs Python with no network and no writable path; else why not."""
    if candidate.level == "process":
        return None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        cmd = list(candidate.prefix) + [python, "-I", "-S", "-B", "-c", _PROBE, str(port), "fs" if candidate.level == "bwrap" else "nofs"]
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, env=dict(WORKER_ENV),
                                  close_fds=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return one_line(f"{candidate.prefix[0]} failed to run: {type(exc).__name__}")
    finally:
        listener.close()
    words = done.stdout.decode("utf-8", "replace").split()
    if done.returncode != 0 or "ok" not in words:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return one_line(f"{os.path.basename(candidate.prefix[0])} exited {done.returncode}: {err[-1] if err else 'no output'}")
    if "network" in words:
        return f"{os.path.basename(candidate.prefix[0])} left the network reachable"
    if candidate.level == "bwrap" and any(w.startswith("writable:") for w in words):
        return "bwrap left a writable path: " + ", ".join(w[9:] for w in words if w.startswith("writable:"))
    return None


_LOCK = threading.Lock()
_CACHE: dict[str, Isolation] = {}


def isolation(level: str | None = None) -> Isolation:
    """The strongest working isolation (or exactly ``level``), probed once per process."""
    want = (level or os.environ.get(ENV_VAR) or "auto").strip().lower()
    if want not in ("auto", *LEVELS):
        raise SandboxError(one_line(f"sandbox isolation {want!r} is unknown; expected auto or one of {', '.join(LEVELS)} (set via {ENV_VAR} or SandboxPool(isolation=…))"))
    with _LOCK:
        if want in _CACHE:
            return _CACHE[want]
        python = python_executable()
        notes: list[str] = []
        chosen: Isolation | None = None
        cwd = "/"
        for candidate in _candidates(python):
            if want != "auto" and candidate.level != want:
                continue
            problem = _probe(candidate, python, cwd)
            if problem is None:
                chosen = candidate
                break
            notes.append(f"{candidate.level}: {problem}")
        if chosen is None:
            raise SandboxError(one_line(f"sandbox isolation {want!r} is not available here ({'; '.join(notes) or 'not installed'}); install bubblewrap or use {ENV_VAR}=process"))
        if notes:
            chosen = Isolation(chosen.level, chosen.prefix, chosen.layers, chosen.inner_worker, chosen.inner_policy,
                               "; ".join(notes))
        _CACHE[want] = chosen
        return chosen


def read_child_pid(fd: int) -> int | None:
    """The worker's host pid from bwrap's ``--info-fd`` JSON (already written by then)."""
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 4096)
        value = json.loads(data.decode("utf-8")).get("child-pid")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None
