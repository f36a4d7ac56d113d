"""Sandbox worker: runs patch hook code in a clean, limited subprocess.

Started by ``pool.py`` as ``python -P -s -S -B worker.py <policy.py> [--drop] [--readonly]`` with an empty
environment but ``PYTHONHASHSEED=0`` (string hashing, hence set order, is the same in every worker), in an empty temporary directory. It imports only the standard library and
``harness_gym/harness/policy.py`` (loaded by path), never the ``harness_gym`` package.

Least privilege, before any request is read (``drop_privileges``): everything the worker
will ever import is imported (with a fixed set of codecs) and one hook is checked and run
as a warm-up, and file imports are closed afterwards in every mode; then, when
started as root with ``--drop``, the capability bounding set and ambient set are cleared,
supplementary groups dropped and real/effective/saved uid and gid set to 65534 (nobody),
which also empties the permitted and effective capability sets. In every case
``PR_SET_NO_NEW_PRIVS`` is set and the process is made non-dumpable (other processes of
uid 65534 cannot ptrace it or read its ``/proc/<pid>`` files). ``credentials()`` reads
the result back from the kernel; the ``ready`` line carries it, and a worker that asked
for the drop and did not get it refuses to start. With ``--readonly`` (``unshare --mount``
as root) it first remounts every mount of its private mount namespace read-only. Doing this here, not with an external
``setpriv``, works wherever the interpreter lives: a drop before exec cannot load an
interpreter under a 0700 home (pyenv in /root), this one has loaded it already.

One worker serves one code identity: its first request (``load``) binds it to a ``sha``
(the hash of one hook module's code) and it never loads another, so no two patches ever
share an interpreter.

Each call runs in a fork of the loaded worker, which exits after its reply: every call
starts from the same memory state. The worker starts in two stages: the first does what
depends on how it was started (the isolation level's read-only remount) and execs the
second with address-space randomization off (``ADDR_NO_RANDOMIZE``, where the kernel
allows it), a fixed soft stack limit and an argv and environment of fixed lengths
(``_exec_canonical``), so the loaded worker's heap, and every fork's, is the same at every
isolation level, in every checkout and every rerun. Hooks can see addresses
(``str(map(f, x))`` prints one, a set of functions iterates in address order), so without
this one patch on one batch could score differently from run to run, depending on which
calls a worker had served before, where the kernel put its heap and how long a path was.
The fork reads its own request, so the loaded worker's memory does not depend on earlier
requests either.

Protocol: one JSON object per line on stdin/stdout.
  -> {"op": "load", "id", "sha", "benchmark", "style", "code"}   (once, first)
  <- {"id", "status": "ok"} | {"id", "status": "error", "error"}  (the worker is then discarded)
  -> {"id", "sha", "entry", "ctx", "nb", "lines", "timeout"}      (each call, read by a fork)
  <- {"id", "status": "ok", "value", "nb"} | {"id", "status": "error", "error"}
     | {"id": null, "status": "error", "error", "crashed": true}  (the call's fork died without replying)
Values use the tagged encoding below, so tuples, sets and non-string keys survive; the
parent never unpickles anything from here. The parent may import this module for
``encode``/``decode``; nothing runs at import.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any

MAX_VALUE_BYTES = 256 * 1024
MAX_DEPTH = 64
HOOK_FILENAME = "<harness_hook>"
_TAGS = ("$t", "$s", "$f", "$d")
_SURROGATE = re.compile("[\ud800-\udfff]")  # not UTF-8: a reply holding one could not be written at all


class EncodeError(ValueError):
    """A value cannot cross the sandbox boundary (unsupported type, too big, too deep)."""


def _to_wire(value: Any, budget: list[int], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise EncodeError(f"nested deeper than {MAX_DEPTH} levels")
    budget[0] -= 8
    if budget[0] < 0:
        raise EncodeError("too large")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > 4096:
            raise EncodeError("integer too large")
        budget[0] -= value.bit_length() // 3
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise EncodeError("too large")
        if _SURROGATE.search(value):
            raise EncodeError("a string holds a lone surrogate (not valid Unicode text)")
        return str(value)
    if isinstance(value, dict):
        keys_plain = all(type(k) is str and not k.startswith("$") for k in value)
        if keys_plain:
            return {_to_wire(k, budget, depth + 1): _to_wire(v, budget, depth + 1) for k, v in value.items()}
        return {"$d": [[_to_wire(k, budget, depth + 1), _to_wire(v, budget, depth + 1)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_to_wire(v, budget, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$t": [_to_wire(v, budget, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        tag = "$f" if isinstance(value, frozenset) else "$s"
        # in a canonical order, not this process's iteration order: the parent hashes strings with
        # its own seed, and a set it sends back in its order would be rebuilt (and iterated) in
        # another order by the next worker, so one patch could score differently from run to run
        items = [_to_wire(v, budget, depth + 1) for v in value]
        return {tag: sorted(items, key=lambda w: json.dumps(w, sort_keys=True))}
    raise EncodeError(f"unsupported type {type(value).__name__}")


def encode(value: Any, limit: int = MAX_VALUE_BYTES) -> Any:
    """Python value -> JSON-able tagged structure; raises EncodeError past ``limit`` bytes."""
    return _to_wire(value, [limit], 0)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, set):
        return frozenset(value)
    if isinstance(value, dict):
        raise EncodeError("a dict cannot be a set member or key")
    return value


def decode(value: Any, depth: int = 0) -> Any:
    """Tagged structure -> Python value (inverse of ``encode``); raises EncodeError if malformed."""
    if depth > MAX_DEPTH + 2:
        raise EncodeError("nested too deeply")
    if isinstance(value, list):
        return [decode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            (tag, inner), = value.items()
            if tag in _TAGS:
                if not isinstance(inner, list):
                    raise EncodeError(f"malformed {tag} value")
                items = [decode(v, depth + 1) for v in inner]
                if tag == "$t":
                    return tuple(items)
                if tag == "$s":
                    return {_hashable(v) for v in items}
                if tag == "$f":
                    return frozenset(_hashable(v) for v in items)
                if not all(isinstance(p, list) and len(p) == 2 for p in items):
                    raise EncodeError("malformed $d value")
                return {_hashable(k): v for k, v in items}
        return {k: decode(v, depth + 1) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise EncodeError(f"unsupported wire type {type(value).__name__}")


def dumps(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


# ------------------------------------------------------------------ worker side


class _Budget(BaseException):
    """Line budget or wall alarm hit (BaseException: ``except Exception`` can't catch it)."""


class ReadOnlyCtx(dict):
    """The hook's ``ctx``: a deep copy readable by key or attribute; writes raise."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("ctx is read-only; keep state in nb")

    __setitem__ = __delitem__ = __setattr__ = __delattr__ = _readonly
    update = pop = popitem = setdefault = clear = __ior__ = _readonly  # type: ignore[assignment]


def _wrap_ctx(value: Any) -> Any:
    if isinstance(value, dict):
        out = ReadOnlyCtx()
        for k, v in value.items():
            dict.__setitem__(out, k, _wrap_ctx(v))
        return out
    if isinstance(value, list):
        return [_wrap_ctx(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_wrap_ctx(v) for v in value)
    return value


LIMITS = {
    "RLIMIT_AS": 1 << 30,
    "RLIMIT_CPU": 300,
    "RLIMIT_FSIZE": 0,
    "RLIMIT_NOFILE": 16,
    "RLIMIT_NPROC": 0,
    "RLIMIT_CORE": 0,
}
# Set in each call's fork, not in the worker: it must fork, and its own CPU time grows with every
# call it forks (a limit there would one day kill a call that did nothing wrong).
FORK_LIMITS = ("RLIMIT_CPU", "RLIMIT_NPROC")


def _set_limits(names: tuple[str, ...]) -> list[str]:
    """Lower the ``LIMITS`` named for this process; return what was applied."""
    try:
        import resource
    except ImportError:  # not POSIX
        return []
    applied = []
    for name, value in ((n, LIMITS[n]) for n in names):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft, hard = resource.getrlimit(which)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (cap, cap))
            applied.append(name)
        except (ValueError, OSError):
            pass
    return applied


class Worker:
    """Holds ONE checked, compiled hook module (``load``) and runs its entries (``call``)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.sha: str | None = None  # the code identity this worker is bound to (set by load)
        self.namespace: dict[str, Any] | None = None

    def load(self, req: dict[str, Any]) -> dict[str, Any]:
        """Bind this worker to one hook module: check it against the policy, compile and run its definitions."""
        if self.sha is not None:
            return {"status": "error", "error": "this worker is bound to another hook module"}
        style = str(req.get("style"))
        try:
            self.policy.check_hook_code(str(req["code"]), str(req["benchmark"]), style=style)
            namespace = self.policy.hook_globals()
            exec(compile(str(req["code"]), HOOK_FILENAME, "exec"), namespace)
        except Exception as exc:  # policy violation or compile error
            return {"status": "error", "error": _one_line(f"rejected: {exc}")}
        self.sha, self.namespace = str(req["sha"]), namespace
        return {"status": "ok"}

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        sha, entry = str(req.get("sha")), str(req.get("entry"))
        if req.get("op") == "load" or self.namespace is None:
            return {"status": "error", "error": "no hook module loaded, or a second load (one code identity per worker)"}
        if sha != self.sha:
            return {"status": "error", "error": "worker is bound to another hook module (one code identity per worker)"}
        fn = self.namespace.get(entry)
        if entry not in self.policy.HOOK_POINTS + ("hook",) or not callable(fn):
            return {"status": "error", "error": f"no hook entry {entry!r} in this module"}
        try:
            ctx = _wrap_ctx(decode(req["ctx"]))
            nb = decode(req["nb"])
        except (EncodeError, RecursionError, KeyError) as exc:
            return {"status": "error", "error": _one_line(f"bad input: {exc}")}
        if not isinstance(nb, dict):
            return {"status": "error", "error": f"bad input: nb must be a dict, got {type(nb).__name__}"}
        value, error = self._run(fn, ctx, nb, int(req.get("lines", 2000)), float(req.get("timeout", 1.0)))
        if error:
            return {"status": "error", "error": error}
        try:
            wire_value = encode(value)
        except EncodeError as exc:
            return {"status": "error", "error": _one_line(f"return value rejected: {exc} (limit {MAX_VALUE_BYTES // 1024} KB)")}
        except RecursionError:
            return {"status": "error", "error": "return value rejected: nested too deeply"}
        try:
            wire_nb = encode(nb)
        except EncodeError as exc:
            return {"status": "error", "error": _one_line(f"nb rejected: {exc} (limit {MAX_VALUE_BYTES // 1024} KB)")}
        except RecursionError:
            return {"status": "error", "error": "nb rejected: nested too deeply"}
        return {"status": "ok", "value": wire_value, "nb": wire_nb}

    def _run(self, fn: Any, ctx: Any, nb: dict, line_budget: int, timeout: float) -> tuple[Any, str | None]:
        import signal

        count = 0

        def local(frame: Any, event: str, arg: Any) -> Any:
            nonlocal count
            if event == "line":
                count += 1
                if count > line_budget:
                    raise _Budget("line budget exceeded")
            return local

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            # Only the patch's own lines count, so the budget does not depend on stdlib internals.
            return local(frame, event, arg) if frame.f_code.co_filename == HOOK_FILENAME else None

        def alarm(signum: int, frame: Any) -> None:
            raise _Budget(f"timeout after {timeout:g}s")

        old = signal.signal(signal.SIGALRM, alarm)
        try:
            signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.001))
            sys.settrace(tracer)
            try:
                return fn(ctx, nb), None
            finally:
                sys.settrace(None)
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Budget as exc:
            return None, str(exc)
        except RecursionError:
            return None, "exception: RecursionError (maximum recursion depth exceeded)"
        except MemoryError:
            return None, "exception: MemoryError (the worker's memory limit was hit)"
        except Exception as exc:
            return None, _one_line(f"exception: {type(exc).__name__} {exc}{_hook_line(exc)}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _hook_line(exc: BaseException) -> str:
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == HOOK_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line else ""


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _load_policy(path: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("harness_gym_sandbox_policy", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load policy from {path!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ least privilege (Linux)

NOBODY = 65534
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3
_PR_CAPBSET_READ, _PR_CAPBSET_DROP = 23, 24
_PR_SET_NO_NEW_PRIVS, _PR_GET_NO_NEW_PRIVS = 38, 39
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522
_WARMUP = "def hook(ctx, nb):\n    m = re.search('a+', f'{ctx.get(\"x\", \"\")}aa')\n    nb['r'] = [m.group(0), round(math.sqrt(4.0), 1), SequenceMatcher(None, 'ab', 'abc').ratio()]\n    return {'type': 'inject_hint', 'message': 'x {}'.format(1)}\n"


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


_ADDR_NO_RANDOMIZE = 0x0040000
_PERSONALITY_QUERY = 0xFFFFFFFF


def _personality(persona: int) -> int:
    """``personality(2)``: set (or, with ``_PERSONALITY_QUERY``, read) the execution domain; -1 on failure."""
    import ctypes

    try:
        fn = _libc().personality
    except (OSError, AttributeError):  # not Linux
        return -1
    fn.argtypes, fn.restype = [ctypes.c_ulong], ctypes.c_int
    return int(fn(persona))


def fixed_addresses() -> bool:
    """Whether this process runs without address-space randomization, so that the addresses a
    hook can see repeat from run to run (see the module docstring)."""
    current = _personality(_PERSONALITY_QUERY)
    return current != -1 and bool(current & _ADDR_NO_RANDOMIZE)


SERVE = "--serve"  # stage 2 (see main)
DROP = "--drop="  # stage 2's "--drop=1" / "--drop=0": one width either way
STACK_LIMIT = 8 << 20  # stage 2's soft stack limit: with randomization off it places every mapping
PATH_WIDTH = 1024  # stage 2's script and policy paths are padded with leading "/" to a multiple of this


def _exec_canonical(policy_path: str, drop: bool) -> int:
    """Exec stage 2: this interpreter with ``ADDR_NO_RANDOMIZE`` set (where the kernel allows it;
    Docker's default seccomp profile does not, and ``fixed_addresses()`` then says so), a fixed
    soft stack limit, and an argv and environment of the same lengths however the worker was
    started — the worker's path differs between installs and isolation levels, bwrap adds
    ``PWD`` — so the heap a hook sees is the same at every level, in every checkout and every
    rerun. Returns only when the exec failed (the refusal's exit status).

    An exec that gains capabilities clears the flag: bwrap as root hands over a few permitted
    capabilities under a full bounding set, from which the exec would grant the rest. So the
    bounding set is first cut to the permitted set (the drop later empties both anyway).
    """
    import os
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    soft = STACK_LIMIT if hard == resource.RLIM_INFINITY else min(STACK_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
    current = _personality(_PERSONALITY_QUERY)
    if current != -1 and not current & _ADDR_NO_RANDOMIZE:
        if os.geteuid() == 0:
            try:
                libc = _libc()
                permitted = _capabilities(libc)["permitted"]
                for cap in range(64):
                    if libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) < 0:
                        break
                    if not permitted >> cap & 1:
                        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # a refusal only costs the flag
            except (OSError, AttributeError):
                pass
        _personality(current | _ADDR_NO_RANDOMIZE)  # a refusal: addresses stay randomized
    script = sys.argv[0]
    interpreter_flags = sys.orig_argv[1:sys.orig_argv.index(script)]
    args = [sys.executable, *interpreter_flags, _padded(script), _padded(policy_path), SERVE, f"{DROP}{int(drop)}"]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "")}
    try:
        os.execve(sys.executable, args, env)
    except OSError as exc:
        return _refuse_to_start(_one_line(f"cannot exec the serving interpreter: {exc}"))
    return 3  # not reached


def _padded(path: str) -> str:
    width = -(-max(len(path), 1) // PATH_WIDTH) * PATH_WIDTH
    return "/" * (width - len(path)) + path


def _capabilities(libc: Any) -> dict[str, int]:
    """Effective, permitted, inheritable and bounding capability masks of this process."""
    import ctypes

    header, data = _cap_structs()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    bounding = 0
    for cap in range(64):
        got = libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0)
        if got < 0:
            break  # past the kernel's last capability
        bounding |= got << cap
    def mask(field: str) -> int:
        return getattr(data[0], field) | (getattr(data[1], field) << 32)
    return {"effective": mask("effective"), "permitted": mask("permitted"), "inheritable": mask("inheritable"),
            "bounding": bounding}


def _cap_structs() -> tuple[Any, Any]:
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    return Header(_CAP_VERSION_3, 0), (Data * 2)()


def _clear_capabilities(libc: Any) -> None:
    """Empty the effective, permitted and inheritable sets (capset to zeros; always allowed)."""
    import ctypes

    header, data = _cap_structs()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset to empty sets failed")


def credentials() -> dict[str, Any]:
    """This process's uids, gids, groups, capability masks, no_new_privs and dumpable, from the kernel."""
    import os

    out: dict[str, Any] = {"uid": list(os.getresuid()), "gid": list(os.getresgid()), "groups": sorted(os.getgroups())}
    try:
        libc = _libc()
        out["caps"] = _capabilities(libc)
        out["no_new_privs"] = libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
        out["dumpable"] = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError) as exc:  # not Linux: only the ids are known
        out["error"] = _one_line(f"{type(exc).__name__}: {exc}")
    return out


_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 8, 32, 4096


def remount_readonly() -> list[str]:
    """In a private mount namespace (``unshare --mount``), make every mount read-only.

    Run as root before the drop; returns the mount points that refused (the probe checks
    what is still writable, so a refusal only costs the ``readonly-fs`` layer).
    """
    import ctypes
    import os

    libc = _libc()
    refused = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        rows = [line.split() for line in fh]
    for row in rows:
        point = row[4].encode("utf-8").decode("unicode_escape")  # octal escapes such as \040
        opts = set(row[5].split(","))
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
        flags |= (_MS_NOSUID if "nosuid" in opts else 0) | (_MS_NODEV if "nodev" in opts else 0) | (_MS_NOEXEC if "noexec" in opts else 0)
        if libc.mount(None, os.fsencode(point), None, ctypes.c_ulong(flags), None) != 0:
            refused.append(point)
    return refused


def drop_privileges(to_nobody: bool) -> dict[str, Any]:
    """Drop to uid/gid 65534 (when root and ``to_nobody``), then no_new_privs and non-dumpable.

    Returns ``credentials()`` afterwards; raises OSError when a requested step failed.
    """
    import os

    if not sys.platform.startswith("linux"):  # no prctl/capabilities: the uid drop only
        if to_nobody and os.geteuid() == 0:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        return credentials()
    libc = _libc()
    if to_nobody and os.geteuid() == 0:
        for cap in range(64):
            if libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) < 0:
                break
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(f"cannot drop capability {cap} from the bounding set")
        libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on kernels without ambient caps
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # uid 0 -> non-zero everywhere: permitted/effective caps are cleared
        _clear_capabilities(libc)  # the inheritable set survives setresuid (bwrap --cap-add fills it)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_DUMPABLE, 0) failed")
    creds = credentials()
    if to_nobody and not unprivileged(creds):
        raise OSError(f"still privileged after the drop: {creds}")
    return creds


def unprivileged(creds: dict[str, Any], uid: int = NOBODY) -> bool:
    """Whether ``creds`` (from ``credentials()``) is uid/gid ``uid`` everywhere, no groups, no capabilities."""
    caps = creds.get("caps") or {}
    return (creds.get("uid") == [uid] * 3 and creds.get("gid") == [uid] * 3 and creds.get("groups") in ([], [uid])
            and bool(caps) and not any(caps.get(k, 1) for k in ("effective", "permitted", "inheritable", "bounding"))
            and creds.get("no_new_privs") == 1)


# Codecs a hook may name in str.encode/bytes.decode; any other is a LookupError, in every
# isolation mode alike (nothing is imported after the drop, see _close_imports).
PRELOADED_ENCODINGS = ("utf_8", "utf_16", "utf_32", "ascii", "latin_1", "cp1252", "unicode_escape", "raw_unicode_escape")


def _close_imports() -> None:
    """No module is imported from files after the drop, whatever the isolation mode: in
    ``process``/``unshare`` mode the interpreter's files may be out of uid 65534's reach, under
    bwrap they are not, and a hook must behave the same in all three."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if getattr(finder, "__name__", "") != "PathFinder"]
    sys.path.clear()
    sys.path_importer_cache.clear()


_PROBE_PATHS = ("/proc/1/ns/net", "/proc/1/environ")


def probe(port: int, parent: int, cwd_checks: list[str], peers: tuple[int, ...] = ()) -> dict[str, Any]:
    """What this (already dropped) process can reach: the host's loopback, other processes'
    /proc files and namespaces, signals to the parent and ``peers``, writable places. Run by
    ``isolation.py`` under each candidate."""
    import os
    import socket

    out: dict[str, Any] = {"network": False, "opened": [], "writable": [], "signalled": [], "pid": os.getpid()}
    for pid in (parent, *peers):
        try:
            os.kill(pid, 0)  # signal 0: the permission and existence check only
            out["signalled"].append(pid)
        except OSError:
            pass
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", port))
        out["network"] = True
    except OSError:
        pass
    finally:
        s.close()
    for path in (*_PROBE_PATHS, *(f"/proc/{pid}/{leaf}" for pid in (parent, *peers) for leaf in ("environ", "ns/net", "mem"))):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        os.close(fd)
        out["opened"].append(path)
    for d in ("/", "/tmp", "/var/tmp", "/dev/shm", os.getcwd(), *cwd_checks):
        target = os.path.join(d, f".hg-probe-{os.getpid()}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            continue
        os.close(fd)
        os.unlink(target)
        out["writable"].append(d)
    return out


def _refuse_to_start(error: str) -> int:
    """The error line a worker sends instead of ``ready``; the exit status the pool reports."""
    sys.stdout.write(json.dumps({"status": "error", "error": error}) + "\n")
    sys.stdout.flush()
    return 3


def main(argv: list[str] | None = None) -> int:
    """Serve requests from stdin until EOF (``--probe PORT PARENT``: print what is reachable, exit)."""
    import os

    argv = sys.argv[1:] if argv is None else argv
    flags = argv[1:]
    if "--probe" not in flags and SERVE not in flags:
        # Stage 1: what depends on how the worker was started (its paths, the isolation level's mounts),
        # then a fresh interpreter that serves hooks (stage 2) from one canonical start (_exec_canonical).
        try:
            if "--readonly" in flags:
                remount_readonly()
        except OSError as exc:
            return _refuse_to_start(_one_line(f"cannot remount read-only: {exc}"))
        return _exec_canonical(argv[0], "--drop" in flags)
    policy = _load_policy(argv[0])
    to_nobody = "--drop" in flags or f"{DROP}1" in flags
    if sys.flags.hash_randomization:
        # set iteration order would differ from worker to worker, and a rerun from its original
        return _refuse_to_start("string hashing is randomized: start the worker with PYTHONHASHSEED=0 and without "
                                "-I/-E (isolation.PYTHON_FLAGS)")
    # Everything later requests need is imported now: after the drop the interpreter's own
    # files may be out of reach (a 0700 home), and nothing is imported on a hook's behalf.
    import resource  # noqa: F401
    import signal  # noqa: F401
    import time  # noqa: F401
    import socket  # noqa: F401

    for name in PRELOADED_ENCODINGS:
        __import__(f"encodings.{name}")
    warm = Worker(policy)
    warm.load({"sha": "warmup", "style": "harness_r1", "benchmark": "dbbench", "code": _WARMUP})
    warm.call({"sha": "warmup", "entry": "hook", "ctx": {"x": "a"}, "nb": {}})
    try:
        if "--readonly" in flags:  # the probe; a serving worker remounted in stage 1
            remount_readonly()
        creds = drop_privileges(to_nobody)
    except OSError as exc:
        return _refuse_to_start(_one_line(f"cannot drop privileges: {exc}"))
    _close_imports()
    if "--probe" in flags:
        at = flags.index("--probe")
        port, parent = int(flags[at + 1]), int(flags[at + 2])
        rest = [f for f in flags[at + 3:] if f not in ("--drop", "--readonly")]
        peers = tuple(int(f[7:]) for f in rest if f.startswith("--peer="))
        limits = _set_limits(tuple(LIMITS))
        print(json.dumps({"status": "probe", "credentials": creds, "limits": limits,
                          **probe(port, parent, [f for f in rest if not f.startswith("--peer=")], peers)}), flush=True)
        return 0
    # Protocol output goes to a private duplicate of fd 1; stray writes land in /dev/null.
    out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    limits = _set_limits(tuple(n for n in LIMITS if n not in FORK_LIMITS))
    limits += [n for n in FORK_LIMITS if limits]  # each call's fork sets these, or refuses to run its hook
    sys.setrecursionlimit(400)
    worker = Worker(policy)
    _write(out, {"status": "ready", "limits": limits, "credentials": creds, "fixed_addresses": fixed_addresses()})
    while worker.namespace is None:  # the load: the one request this process reads itself
        line = _read_request()
        if not line:
            return 0
        try:
            req = json.loads(line)
            reply = worker.load(req) if isinstance(req, dict) and req.get("op") == "load" else \
                {"status": "error", "error": "the first request must load a hook module"}
        except Exception as exc:
            req, reply = {}, {"status": "error", "error": _one_line(f"worker error: {type(exc).__name__} {exc}")}
        reply["id"] = req.get("id") if isinstance(req, dict) else None
        _write(out, reply)
    return _serve_in_forks(worker, out)


try:
    import resource as _resource  # noqa: F401
    _HAS_RESOURCE = True
except ImportError:  # not POSIX: no limits anywhere
    _HAS_RESOURCE = False
_READ, _REPLIED, _END = b"q", b"r", b"e"  # what a call's fork reports to the worker
_CRASHED = {"id": None, "status": "error", "crashed": True,
            "error": "the call's process died before replying (a memory, CPU or size limit, or a crash)"}


def _serve_in_forks(worker: Worker, out: int) -> int:
    """Serve each request in its own fork until the end of input.

    The next call's fork is made as soon as the current one has read its request, so it is
    ready (blocked on the pipe) while the current call runs: the fork's cost overlaps the call
    and the parent's work instead of adding to every round trip. Nothing this loop allocates
    outlives an iteration (pipe ends are small ints, reports are constants), so every fork
    starts from the same heap.
    """
    import gc
    import os
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel as they exit
    gc.freeze()  # a fork's collections skip the loaded objects: fewer copied pages
    waiting = _fork_call(worker, out, -1)  # the report pipe of a fork blocked on the next request
    while True:
        said = _report(waiting)
        if said == _END:
            return 0
        if said != _READ:  # killed before any request came: no call to answer, so none is answered
            return 1
        serving = waiting
        waiting = _fork_call(worker, out, serving)
        said = _report(serving)
        os.close(serving)
        if said != _REPLIED:
            _write(out, _CRASHED)


def _report(fd: int) -> bytes:
    """The next byte a fork reports on ``fd``, as one of the constants; b"" if it exited first."""
    import os

    said = os.read(fd, 1)
    return _READ if said == _READ else _REPLIED if said == _REPLIED else _END if said == _END else b""


def _fork_call(worker: Worker, out: int, other: int) -> int:
    """Fork a process that serves the next request (``_serve_one``); the read end of its report pipe.
    ``other`` is the serving fork's report pipe, which the new one closes."""
    import os
    import signal

    report_r, report_w = os.pipe()
    if os.fork() == 0:
        try:
            os.close(report_r)
            if other >= 0:
                os.close(other)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _serve_one(worker, out, report_w)
        finally:
            os._exit(0)
    os.close(report_w)
    return report_r


def _serve_one(worker: Worker, out: int, report: int) -> None:
    """In a call's fork: read one request (then report ``_READ``), run it, report ``_REPLIED`` and
    write the reply (in that order: a fork that dies in between leaves the parent waiting for
    its time budget, never a second reply); at the end of input report ``_END``."""
    import os

    limited = _set_limits(FORK_LIMITS)
    line = _read_request()
    if not line:
        os.write(report, _END)
        return
    os.write(report, _READ)
    rid = None
    try:
        req = json.loads(line)
        rid = req.get("id") if isinstance(req, dict) else None
        if not isinstance(req, dict):
            reply = {"status": "error", "error": "a request must be an object"}
        elif _HAS_RESOURCE and len(limited) != len(FORK_LIMITS):
            reply = {"status": "error", "error": f"the call's limits could not be set ({', '.join(FORK_LIMITS)})"}
        else:
            reply = worker.call(req)
    except _Budget as exc:
        reply = {"status": "error", "error": str(exc)}
    except MemoryError:
        reply = {"status": "error", "error": "exception: MemoryError (the worker's memory limit was hit)"}
    except Exception as exc:
        reply = {"status": "error", "error": _one_line(f"worker error: {type(exc).__name__} {exc}")}
    reply["id"] = rid
    os.write(report, _REPLIED)
    _write(out, reply)


def _read_request() -> bytes:
    """One request line from fd 0, read unbuffered: nothing past it stays in this process (the
    parent sends the next request only after the reply). Empty at end of input."""
    import os

    chunks = []
    while True:
        try:
            chunk = os.read(0, 1 << 16)
        except _Budget:  # a stray alarm between requests
            continue
        if not chunk:
            return b""
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


def _write(fd: int, obj: Any) -> None:
    import os

    data = memoryview(dumps(obj))
    while data:
        data = data[os.write(fd, data):]


if __name__ == "__main__":
    sys.exit(main())
