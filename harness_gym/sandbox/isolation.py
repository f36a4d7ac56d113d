"""How sandbox workers are started: under bubblewrap, in new namespaces, or plain, never as root.

``isolation()`` probes once per process (cached) what this machine allows and returns the
command prefix plus the OS layers that were *verified* by the probe, not assumed:

- ``bwrap``: ``bwrap`` with new pid, net, ipc, uts and cgroup namespaces (plus a user
  namespace when the caller is not root), ``--die-with-parent`` and a filesystem made only
  of read-only binds of ``/usr`` (plus the ``/lib*`` links), the Python prefix and the two
  worker files; ``/dev`` is minimal and ``/tmp`` an empty read-only tmpfs. Nothing of the
  host's ``/work``, ``/home``, ``/root`` or ``/proc`` is visible, so gold data on disk is
  out of reach even if the AST policy had a hole.
- ``unshare``: ``unshare --net --ipc --mount --pid --fork`` (``--user --net --ipc`` when
  unprivileged): no network, no SysV IPC shared with other processes, and (as root) its own
  pid namespace (it cannot signal other workers) and a private mount namespace in which the
  worker remounts every mount read-only.
- ``process``: a plain clean process (scrubbed environment, closed fds, rlimits).

Least privilege in all three: when the caller is root the worker drops itself, after
loading everything it needs and before reading any request, to uid/gid 65534 with no
supplementary groups, empty capability sets (bounding set included), no_new_privs and
non-dumpable (``worker.drop_privileges``; bwrap then runs without a user namespace, so
the worker's uid is 65534 on the host too, not root mapped to nobody). A caller that is
not root cannot change uid: outside bwrap the worker keeps the caller's uid, with
no_new_privs, and the layers say so (no ``uid-nobody``).

The probe runs the real worker (``worker.py --probe``) under each candidate prefix with a
listener on the host's 127.0.0.1 and records its credentials as the kernel reports them,
whether it reached the host's loopback, which of ``/proc/1/ns/net``, ``/proc/1/environ``
and the parent's ``/proc/<pid>/{environ,ns/net,mem}`` it could open, and where it could
create a file. A candidate whose worker is still root, reaches the network (bwrap,
unshare) or can write (bwrap) is skipped with the reason in ``note``.
``HARNESS_GYM_SANDBOX=bwrap|unshare|process`` forces a level (an error if unavailable).
``announce()`` prints one stderr line per process when the level in force is weaker than
bwrap.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness_gym.errors import SandboxError, one_line

WORKER_PATH = Path(__file__).resolve().with_name("worker.py")
POLICY_PATH = Path(__file__).resolve().parent.parent / "harness" / "policy.py"
LEVELS = ("bwrap", "unshare", "process")
ENV_VAR = "HARNESS_GYM_SANDBOX"
# The worker's whole environment. PYTHONHASHSEED fixes str/bytes hashing, so a hook that iterates
# a set of strings sees one order in every worker and every rerun: with randomized hashing the same
# patch on the same batch could score differently from run to run (and a verifier's rerun differ
# from a submitter's). ``-I`` would ignore it (it implies ``-E``); ``-P -s`` keep the rest of
# isolated mode (no script directory on sys.path, no user site), and the environment is scrubbed to
# exactly this dict, so no other PYTHON* variable reaches the worker.
WORKER_ENV = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
PYTHON_FLAGS = ("-P", "-s", "-S", "-B")
NOBODY = "65534"
INNER_DIR = "/sandbox"
PROBE_TIMEOUT_S = 10.0

BWRAP_LAYERS = ("bwrap", "pidns", "netns-no-network", "ipcns", "utsns", "mountns", "readonly-fs", "no-host-files")
UNSHARE_LAYERS = ("netns-no-network", "ipcns")


@dataclass(frozen=True)
class Isolation:
    """A verified way to start workers: ``prefix`` goes before the interpreter's argv."""

    level: str
    prefix: tuple[str, ...]
    layers: tuple[str, ...]
    inner_worker: str  # the worker file's path as the worker sees it
    inner_policy: str
    note: str = ""  # why a stronger level was not used
    drop: bool = False  # the worker drops root itself (``worker.py --drop``)
    readonly: bool = False  # the worker remounts its private mount namespace read-only first (``--readonly``)
    credentials: dict | None = field(default=None, compare=False)  # the probe's worker, as the kernel reported

    @property
    def wants_info_fd(self) -> bool:
        return self.level == "bwrap"

    @property
    def forks(self) -> bool:
        """Whether the interpreter is a child of the launched process (``unshare --fork``), not the process itself."""
        return self.level == "unshare" and "--fork" in self.prefix

    def worker_args(self) -> list[str]:
        return [self.inner_worker, self.inner_policy] + (["--drop"] if self.drop else []) + (["--readonly"] if self.readonly else [])

    def command(self, python: str, info_fd: int | None = None) -> list[str]:
        prefix = list(self.prefix)
        if info_fd is not None and self.level == "bwrap":
            prefix[1:1] = ["--info-fd", str(info_fd)]
        return prefix + [python, *PYTHON_FLAGS, *self.worker_args()]


def python_executable() -> str:
    """The real interpreter (a venv's ``bin/python`` is a link; ``-s -S`` needs no venv)."""
    return os.path.realpath(sys.executable)


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _bwrap_prefix(bwrap: str, python: str, root: bool) -> tuple[str, ...]:
    if root:
        # no user namespace: the worker's uid 65534 is the host's, not root mapped to nobody;
        # it keeps only the three capabilities it needs to drop itself (worker.drop_privileges)
        args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    else:
        args = [bwrap, "--unshare-all", "--unshare-user", "--uid", NOBODY, "--gid", NOBODY, "--cap-drop", "ALL"]
    args += ["--die-with-parent", "--as-pid-1", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    roots: list[str] = []
    for path in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix), str(Path(python).parent.parent)}:
        if not any(path == r or path.startswith(r + "/") for r in ("/usr", *roots)):
            roots.append(path)
    made: set[str] = set()
    for path in sorted(roots):
        # bwrap makes missing parents 0700 (root's): list them 0755 so uid 65534 can reach the prefix
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", path, path]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind", str(WORKER_PATH), f"{INNER_DIR}/worker.py",
             "--ro-bind", str(POLICY_PATH), f"{INNER_DIR}/policy.py",
             "--dev", "/dev", "--remount-ro", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/tmp",
             "--remount-ro", "/", "--chdir", "/tmp", "--clearenv", *(a for k, v in WORKER_ENV.items() for a in ("--setenv", k, v)), "--"]
    return tuple(args)


def _candidates(python: str) -> list[Isolation]:
    out: list[Isolation] = []
    root = _is_root()
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if bwrap and sys.platform.startswith("linux"):
        out.append(Isolation("bwrap", _bwrap_prefix(bwrap, python, root), BWRAP_LAYERS,
                             f"{INNER_DIR}/worker.py", f"{INNER_DIR}/policy.py", drop=root))
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/local/bin")
    if unshare and sys.platform.startswith("linux"):
        # as root: a private mount namespace the worker makes read-only before dropping to nobody;
        # otherwise --user (no root inside, unlike -r: the worker keeps no capabilities)
        # --pid --fork --kill-child: the worker is pid 1 of its own pid namespace, so it cannot
        # signal (or see by pid) any other process, other workers of uid 65534 included
        flags = (["--net", "--ipc", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"] if root
                 else ["--user", "--net", "--ipc"])
        out.append(Isolation("unshare", (unshare, *flags, "--"), UNSHARE_LAYERS, str(WORKER_PATH), str(POLICY_PATH),
                             drop=root, readonly=root))
    out.append(Isolation("process", (), (), str(WORKER_PATH), str(POLICY_PATH), drop=root))
    return out


def _privilege_layers(report: dict, candidate: Isolation) -> tuple[str, ...]:
    """The least-privilege layers the probe's worker showed (never assumed)."""
    from harness_gym.sandbox.worker import unprivileged

    creds = report.get("credentials") or {}
    caps = creds.get("caps") or {}
    layers: list[str] = []
    if unprivileged(creds):
        layers.append("uid-nobody" if candidate.drop else "userns-nobody")
    if caps and not any(caps.get(k, 1) for k in ("effective", "permitted", "inheritable", "bounding")):
        layers.append("no-capabilities")
    if creds.get("no_new_privs") == 1:
        layers.append("no-new-privs")
    if creds.get("dumpable") == 0:
        layers.append("non-dumpable")
    if not report.get("opened"):
        layers.append("no-foreign-proc")
    if candidate.level == "unshare" and report.get("pid") == 1:
        layers.append("pidns")
    if report.get("pid") == 1 and not report.get("signalled"):  # alone in its pid namespace
        layers.append("no-signals-out")
    if candidate.level != "bwrap" and "writable" in report and not report["writable"]:
        layers += ["mountns", "readonly-fs"] if candidate.readonly else ["readonly-fs"]
    return tuple(layers)


def _probe(candidate: Isolation, python: str, cwd: str, extra_dirs: tuple[str, ...] = (),
           peers: tuple[int, ...] = ()) -> tuple[str | None, dict]:
    """(None, the worker's report) if ``candidate`` runs the worker unprivileged, offline and
    (bwrap) read-only; else (why not, report)."""
    name = os.path.basename(candidate.prefix[0]) if candidate.prefix else "process"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        cmd = list(candidate.prefix) + [python, *PYTHON_FLAGS, *candidate.worker_args(), "--probe", str(port), str(os.getpid()), *extra_dirs,
                                                                                 *(f"--peer={pid}" for pid in peers)]
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, env=dict(WORKER_ENV),
                                  close_fds=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return one_line(f"{name} failed to run: {type(exc).__name__}"), {}
    finally:
        listener.close()
    report: dict = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            report = value
    if report.get("status") != "probe":
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = report.get("error") or (err[-1] if err else "no output")
        return one_line(f"{name} exited {done.returncode}: {why}"), report
    creds = report.get("credentials") or {}
    if candidate.drop and "uid-nobody" not in _privilege_layers(report, candidate):
        return one_line(f"{name}: the worker did not drop to uid 65534 ({creds})"), report
    if 0 in (creds.get("uid") or [0]):
        return f"{name}: the worker runs as root", report
    if report.get("network") and candidate.level != "process":
        return f"{name} left the network reachable", report
    if candidate.level == "bwrap" and report.get("writable"):
        return "bwrap left a writable path: " + ", ".join(report["writable"]), report
    return None, report


_LOCK = threading.Lock()
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
            problem, report = _probe(candidate, python, cwd)
            if problem is None:
                chosen = replace(candidate, layers=candidate.layers + _privilege_layers(report, candidate),
                                 credentials=report.get("credentials"))
                break
            notes.append(f"{candidate.level}: {problem}")
        if chosen is None:
            raise SandboxError(one_line(f"sandbox isolation {want!r} is not available here ({'; '.join(notes) or 'not installed'}); "
                                        f"install bubblewrap (apt-get install bubblewrap) or use {ENV_VAR}=process"))
        if notes:
            chosen = replace(chosen, note="; ".join(notes))
        _CACHE[want] = chosen
        return chosen


_ANNOUNCED: set[str] = set()


def weakness(iso: Isolation, forced: bool = False) -> str | None:
    """One line saying how ``iso`` is weaker than bubblewrap as root would be, or None
    (``forced``: the level was asked for, not a fallback)."""
    missing = [layer for layer in ("bwrap", "uid-nobody" if _is_root() else "userns-nobody", "no-capabilities", "no-new-privs")
               if layer not in iso.layers]
    if iso.level == "bwrap" and not missing:
        return None
    why = f" ({iso.note})" if iso.note else ""
    fix = (f"chosen by {ENV_VAR} or sandbox_isolation" if forced and iso.level != "bwrap"
           else "install bubblewrap (apt-get install bubblewrap)")
    return one_line(f"harness-gym: hook sandbox is {iso.level!r}, weaker than bubblewrap: layers {', '.join(iso.layers) or 'none'}; "
                    f"missing {', '.join(missing)}{why}; {fix}", limit=600)


def announce(level: str | None = None) -> Isolation:
    """Probe (cached) and, once per process and level, print ``weakness()`` to stderr."""
    iso = isolation(level)
    line = weakness(iso, forced=(level or os.environ.get(ENV_VAR) or "auto").strip().lower() != "auto")
    if line is not None and iso.level not in _ANNOUNCED:
        _ANNOUNCED.add(iso.level)
        print(line, file=sys.stderr, flush=True)
    return iso


def forked_child_pid(pid: int) -> int | None:
    """The one child of ``pid`` (``unshare --fork``'s interpreter), from /proc; None if not found."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        kids = [int(x) for x in text.split()]
    except (OSError, ValueError):
        kids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rpartition(")")[2].split()[1]) == pid:
                    kids.append(int(entry.name))
    return kids[0] if len(kids) == 1 else None


def read_child_pid(fd: int) -> int | None:
    """The worker's host pid from bwrap's ``--info-fd`` JSON (already written by then)."""
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 4096)
        value = json.loads(data.decode("utf-8")).get("child-pid")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None
