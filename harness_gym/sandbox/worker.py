"""Sandbox worker: runs patch hook code in a clean, limited subprocess.

Started by ``pool.py`` as ``python -I -S -B worker.py <policy.py>`` with an empty
environment, in an empty temporary directory. It imports only the standard library and
``harness_gym/harness/policy.py`` (loaded by path), never the ``harness_gym`` package.

Protocol: one JSON object per line on stdin/stdout.
  -> {"id", "sha", "entry", "benchmark", "ctx", "nb", "lines", "timeout"[, "code"]}
  <- {"id", "status": "ok", "value", "nb", "cpu"} | {"id", "status": "error", "error", "cpu"}
     | {"id", "status": "unknown_code"}  (the parent then resends with "code")
Values use the tagged encoding below, so tuples, sets and non-string keys survive; the
parent never unpickles anything from here. The parent may import this module for
``encode``/``decode``; nothing runs at import.
"""
from __future__ import annotations

import json
import sys
from typing import Any

MAX_VALUE_BYTES = 256 * 1024
MAX_DEPTH = 64
HOOK_FILENAME = "<harness_hook>"
_TAGS = ("$t", "$s", "$f", "$d")


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
        return str(value)
    if isinstance(value, dict):
        keys_plain = all(type(k) is str and not k.startswith("$") for k in value)
        if keys_plain:
            return {str(k): _to_wire(v, budget, depth + 1) for k, v in value.items()}
        return {"$d": [[_to_wire(k, budget, depth + 1), _to_wire(v, budget, depth + 1)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_to_wire(v, budget, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$t": [_to_wire(v, budget, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        tag = "$f" if isinstance(value, frozenset) else "$s"
        return {tag: [_to_wire(v, budget, depth + 1) for v in value]}
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


def _set_limits() -> list[str]:
    """Lower resource limits for this process; return what was applied."""
    try:
        import resource
    except ImportError:  # not POSIX
        return []
    wanted = {
        "RLIMIT_AS": 1 << 30,
        "RLIMIT_CPU": 300,
        "RLIMIT_FSIZE": 0,
        "RLIMIT_NOFILE": 16,
        "RLIMIT_NPROC": 0,
        "RLIMIT_CORE": 0,
    }
    applied = []
    for name, value in wanted.items():
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
    """Compiles (with a policy re-check) and runs hook entries; one request at a time."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.modules: dict[str, dict[str, Any]] = {}

    def load(self, sha: str, code: str, benchmark: str, style: str) -> None:
        self.policy.check_hook_code(code, benchmark, style=style)
        namespace = self.policy.hook_globals()
        exec(compile(code, HOOK_FILENAME, "exec"), namespace)
        if len(self.modules) > 256:
            self.modules.clear()
        self.modules[sha] = namespace

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        sha, entry = str(req["sha"]), str(req["entry"])
        if sha not in self.modules:
            if "code" not in req:
                return {"status": "unknown_code"}
            style = "harness_r1" if entry == "hook" else "module"
            try:
                self.load(sha, str(req["code"]), str(req["benchmark"]), style)
            except Exception as exc:  # policy violation or compile error
                return {"status": "error", "error": _one_line(f"rejected: {exc}")}
        fn = self.modules[sha].get(entry)
        if entry not in self.policy.HOOK_POINTS + ("hook",) or not callable(fn):
            return {"status": "error", "error": f"no hook entry {entry!r} in this module"}
        try:
            ctx = _wrap_ctx(decode(req["ctx"]))
            nb = decode(req["nb"])
        except (EncodeError, RecursionError) as exc:
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


def main(argv: list[str] | None = None) -> int:
    """Serve requests from stdin until EOF."""
    import os

    argv = sys.argv[1:] if argv is None else argv
    policy = _load_policy(argv[0])
    # Protocol output goes to a private duplicate of fd 1; stray writes land in /dev/null.
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    limits = _set_limits()
    sys.setrecursionlimit(400)
    worker = Worker(policy)
    out.write(dumps({"status": "ready", "limits": limits, "pid": os.getpid()}))
    stdin = sys.stdin.buffer
    while True:
        try:
            line = stdin.readline()
        except _Budget:  # a stray alarm between requests
            continue
        if not line:
            return 0
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            reply = worker.call(req)
        except _Budget as exc:
            reply = {"status": "error", "error": str(exc)}
        except MemoryError:
            reply = {"status": "error", "error": "exception: MemoryError (the worker's memory limit was hit)", "recycle": True}
        except Exception as exc:
            reply = {"status": "error", "error": _one_line(f"worker error: {type(exc).__name__} {exc}")}
        reply["id"] = rid
        reply["cpu"] = round(_cpu(), 3)
        out.write(dumps(reply))


def _cpu() -> float:
    import time

    return time.process_time()


if __name__ == "__main__":
    sys.exit(main())
