"""A pool of sandbox worker processes that run hook entries for the runtime.

Patch code never runs in this process. Each worker is a fresh interpreter
(``python -P -s -S -B worker.py``, exec'd — never forked from a process holding worlds,
scores or gold data) with an empty environment (but a fixed ``PYTHONHASHSEED``), no inherited file descriptors and lowered
rlimits, started under the strongest OS isolation this machine allows (``isolation.py``:
bubblewrap namespaces with a read-only, host-file-free filesystem and no network; else a
network namespace; else a plain process), and never as root: the worker drops to uid
65534 with no capabilities and no_new_privs before it reads a request, and the pool
refuses a worker whose ``ready`` line does not show that. ``layers()`` says exactly what
is in force.

One worker, one code identity: a worker is started for the sha of one hook module
(benchmark, style, code) and only ever runs that module, so a hostile patch in a GRPO
group can at most break its own workers. Idle workers are kept per sha and capped at
``max_idle`` (least recently used evicted), so memory stays bounded however many patches
a run evaluates.
The worker re-checks the AST policy and runs the entry with safe builtins, a line budget
and an in-process alarm. The time budget is also enforced from here: a call that does
not answer in time (C-level work ignores alarms) gets its worker killed and replaced.
Replies are JSON only — nothing from a worker is ever unpickled. ``nb`` travels with each
call and back, so no per-episode state lives in a worker; each call runs in a fork of the
loaded worker that exits after it, with address-space randomization off where the kernel
allows (``fixed-addresses`` in ``layers()``), so a hook that looks at object addresses sees
the same ones for the same request in every worker and every rerun (``worker.py``).

Workers are plain ``subprocess.Popen`` pipes driven by ``loop.add_reader``/
``add_writer``, so one pool keeps working across event loops (``asyncio.run`` per call).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import SandboxError, one_line
from harness_gym.sandbox.isolation import (
    POLICY_PATH,
    WORKER_ENV,
    WORKER_PATH,
    Isolation,
    forked_child_pid,
    isolation,
    python_executable,
    read_child_pid,
)
from harness_gym.sandbox.worker import EncodeError, decode, dumps, encode, unprivileged

__all__ = ["POLICY_PATH", "WORKER_PATH", "CallResult", "SandboxPool"]
MAX_REPLY_BYTES = 2 * 1024 * 1024
MAX_CTX_BYTES = 4 * 1024 * 1024
START_TIMEOUT_S = 20.0
START_ATTEMPTS = 3
INNER_ALARM_FRACTION = 0.8
DEFAULT_MAX_IDLE = 8
DEFAULT_LINE_BUDGET = 2000  # traced hook lines per call
MAX_SERVED_RECORDS = 4096


@dataclass
class CallResult:
    """The outcome of one hook entry call."""

    ok: bool
    value: Any
    nb: dict
    error: str | None = None
    elapsed_s: float = 0.0  # the call's own sandbox time: a worker's start when it needed one, then the call
    # (not the wait for a free slot, which other episodes' calls cause)


@dataclass(eq=False)
class _Worker:
    proc: subprocess.Popen
    pid: int = 0  # the worker interpreter's host pid (under bwrap: not bwrap's own pid)
    sha: str = ""  # the one code identity this worker runs
    loaded: bool = False  # whether it has received that code
    credentials: dict = field(default_factory=dict)  # from its ready line
    buffer: bytearray = field(default_factory=bytearray)
    next_id: int = 0

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class _WorkerDied(Exception):
    pass


_WARNED: list[bool] = []


def warn_randomized_addresses() -> None:
    """Once per process, say on stderr that workers run with randomized addresses."""
    if not _WARNED:
        _WARNED.append(True)
        print("harness-gym: hook sandbox workers run with address-space randomization (the kernel refused "
              "personality(ADDR_NO_RANDOMIZE), e.g. under Docker's default seccomp profile): a patch that reads "
              "object addresses can score differently from run to run; run on the host or allow personality(2)",
              file=sys.stderr, flush=True)


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class SandboxPool:
    """Runs ``entry(ctx, nb)`` from hook ``code`` in isolated worker processes."""

    def __init__(self, workers: int = 2, call_timeout_s: float = 2.0, line_budget: int = DEFAULT_LINE_BUDGET,
                 isolation: str | None = None, max_idle: int = DEFAULT_MAX_IDLE) -> None:
        if workers < 1:
            raise SandboxError(one_line(f"workers must be >= 1, got {workers}"))
        if max_idle < 0:
            raise SandboxError(one_line(f"max_idle must be >= 0, got {max_idle}"))
        if call_timeout_s <= 0:
            raise SandboxError(one_line(f"call_timeout_s must be > 0, got {call_timeout_s}"))
        self.workers = workers
        self.call_timeout_s = float(call_timeout_s)
        self.line_budget = int(line_budget)
        self._isolation_level = isolation  # None: HARNESS_GYM_SANDBOX or the strongest available
        self._iso: Isolation | None = None
        self.max_idle = int(max_idle)
        self._idle: OrderedDict[_Worker, str] = OrderedDict()  # idle worker -> its sha, least recently used first
        self._all: set[_Worker] = set()  # type: ignore[arg-type]
        self.served: dict[int, set[str]] = {}  # worker pid -> the code shas it ran (for tests and diagnostics)
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tmp: str | None = None
        self._limits: list[str] = []
        self._fixed_addresses: bool | None = None  # from the last worker's ready line
        self._closed = False

    # ------------------------------------------------------------------ public

    @property
    def isolation(self) -> Isolation:
        """How workers start here (probed once per process; see ``isolation.py``)."""
        if self._iso is None:
            self._iso = isolation(self._isolation_level)
        return self._iso

    def layers(self) -> list[str]:
        """The isolation layers in force, OS layers only when verified by the probe."""
        layers = ["process", "clean-exec", "ast-policy", "restricted-builtins", "line-budget", "wall-timeout",
                  "size-caps"]
        if self._limits or (os.name == "posix" and not self._all):
            layers.append("rlimits")
        layers += ["scrubbed-env", "closed-fds", "one-module-per-worker", "fork-per-call"]
        if self._fixed_addresses:  # known once a worker has started
            layers.append("fixed-addresses")
        return layers + list(self.isolation.layers)

    def pids(self, sha: str | None = None) -> list[int]:
        """Host process ids of the live worker interpreters (of code ``sha`` only, if given)."""
        return sorted(w.pid for w in self._all if w.alive and (sha is None or w.sha == sha))

    @staticmethod
    def code_sha(code: str, entry: str, benchmark: str) -> str:
        """The code identity a worker is bound to: benchmark, style (Harness-R1 ``hook`` or module) and code."""
        return hashlib.sha256(f"{benchmark}\0{entry == 'hook'}\0{code}".encode("utf-8")).hexdigest()

    async def call(self, code: str, entry: str, benchmark: str, ctx: dict, nb: dict) -> CallResult:
        """Run one hook entry; failures come back as ``CallResult(ok=False, error=…)``."""
        if self._closed:
            raise SandboxError("sandbox pool is closed; create a new SandboxPool")
        # Encoding the notebook here and decoding the reply below are work a hook's values cause, so
        # they are charged to the call with the worker's time (``prepared``, ``decoding``).
        encoding = time.monotonic()
        try:
            wire_ctx = encode(ctx, MAX_CTX_BYTES)
            wire_nb = encode(nb, MAX_CTX_BYTES)
        except (EncodeError, RecursionError) as exc:
            return CallResult(False, None, nb, one_line(f"ctx/nb cannot be sent to the sandbox: {exc}"),
                              time.monotonic() - encoding)
        prepared = time.monotonic() - encoding
        sha = self.code_sha(code, entry, benchmark)
        request = {
            "sha": sha, "entry": entry, "benchmark": benchmark, "ctx": wire_ctx, "nb": wire_nb,
            "lines": self.line_budget, "timeout": self.call_timeout_s * INNER_ALARM_FRACTION,
        }
        sem = self._semaphore()
        async with sem:
            slot = time.monotonic()  # the wait for the slot is not the call's
            worker = await self._acquire(sha)
            # A worker started for this call is charged to it: a harness of many hook modules that keeps
            # evicting idle workers (``max_idle``) would otherwise spend minutes an episode unbudgeted.
            started = time.monotonic()
            try:
                reply = await asyncio.wait_for(self._exchange(worker, request, code), self.call_timeout_s)
            except asyncio.TimeoutError:
                self._discard(worker)
                return CallResult(False, None, nb, f"timeout after {self.call_timeout_s:g}s",
                                  prepared + (started - slot) + self.call_timeout_s)
            except _WorkerDied as exc:
                self._discard(worker)
                return CallResult(False, None, nb, one_line(f"worker crashed ({exc})"),
                                  prepared + (time.monotonic() - slot))
            except BaseException:
                self._discard(worker)
                raise
            elapsed = prepared + (time.monotonic() - slot)
            self._release(worker, reply)
        decoding = time.monotonic()
        result = self._result(reply, nb)
        result.elapsed_s = elapsed + (time.monotonic() - decoding)
        return result

    async def close(self) -> None:
        """Stop every worker and remove the working directory."""
        self._closed = True
        for worker in list(self._all):
            self._discard(worker)
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ------------------------------------------------------------------ internals

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            # A new event loop: workers are loop-independent, only the semaphore is rebuilt.
            self._loop, self._sem = loop, asyncio.Semaphore(self.workers)
        return self._sem

    async def _acquire(self, sha: str) -> _Worker:
        for worker in [w for w, s in reversed(self._idle.items()) if s == sha]:  # most recently used first
            del self._idle[worker]
            if worker.alive:
                return worker
            self._discard(worker)
        worker = await self._start()
        worker.sha = sha
        return worker

    def _release(self, worker: _Worker, reply: dict[str, Any]) -> None:
        if reply.get("recycle") or not worker.alive or self.max_idle == 0:
            self._discard(worker)
            return
        self._idle[worker] = worker.sha
        while len(self._idle) > self.max_idle:
            oldest = next(iter(self._idle))
            self._discard(oldest)

    def _discard(self, worker: _Worker) -> None:
        loop = self._loop
        for fd_stream in (worker.proc.stdout, worker.proc.stdin):
            if loop is not None and fd_stream is not None and not loop.is_closed():
                try:
                    loop.remove_reader(fd_stream.fileno())
                    loop.remove_writer(fd_stream.fileno())
                except (ValueError, OSError, RuntimeError):
                    pass
        worker.kill()
        self._all.discard(worker)
        self._idle.pop(worker, None)

    async def _start(self) -> _Worker:
        """A ready worker; a start killed from outside is retried ``START_ATTEMPTS`` times."""
        problem = ""
        for _ in range(START_ATTEMPTS):
            try:
                return await self._spawn()
            except _WorkerDied as exc:
                problem = str(exc)
        iso = self.isolation
        raise SandboxError(one_line(f"sandbox worker ({iso.level}) died during start {START_ATTEMPTS} times ({problem}); "
                                    f"check that {python_executable()} runs{' under bwrap' if iso.level == 'bwrap' else ''}"))

    async def _spawn(self) -> _Worker:
        iso = self.isolation
        if iso.level != "bwrap" and (self._tmp is None or not os.path.isdir(self._tmp)):
            self._tmp = tempfile.mkdtemp(prefix="hg-sandbox-")  # an empty cwd (bwrap has its own)
        info_r, info_w = os.pipe() if iso.wants_info_fd else (None, None)
        cmd = iso.command(python_executable(), info_w)
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd=self._tmp if iso.level != "bwrap" else "/", env=dict(WORKER_ENV), close_fds=True,
                pass_fds=() if info_w is None else (info_w,), start_new_session=True,
            )
        except OSError as exc:
            if info_r is not None:
                os.close(info_r)
            raise SandboxError(one_line(f"cannot start sandbox worker {cmd[0]!r} ({iso.level}): {exc}")) from None
        finally:
            if info_w is not None:
                os.close(info_w)  # the child holds its copy; ours would keep the pipe open
        for stream in (proc.stdin, proc.stdout):
            os.set_blocking(stream.fileno(), False)  # type: ignore[union-attr]
        worker = _Worker(proc, pid=proc.pid)
        self._all.add(worker)
        try:
            ready = await asyncio.wait_for(self._read_line(worker), START_TIMEOUT_S)
        except asyncio.TimeoutError:
            self._discard(worker)
            raise SandboxError(one_line(f"sandbox worker ({iso.level}) did not start within {START_TIMEOUT_S:g}s; "
                                        f"check that {python_executable()} runs")) from None
        except _WorkerDied:
            self._discard(worker)
            raise
        finally:
            if info_r is not None:
                worker.pid = read_child_pid(info_r) or proc.pid
                os.close(info_r)
        if iso.forks:
            worker.pid = forked_child_pid(proc.pid) or proc.pid
        if ready.get("status") != "ready":
            self._discard(worker)
            raise SandboxError(one_line(f"sandbox worker sent {str(ready)[:80]!r} instead of ready"))
        creds = ready.get("credentials")
        worker.credentials = creds if isinstance(creds, dict) else {}
        if iso.drop and not unprivileged(worker.credentials):
            self._discard(worker)
            raise SandboxError(one_line(f"sandbox worker ({iso.level}) did not drop to uid 65534 without capabilities "
                                        f"({worker.credentials}); refusing to run hooks as root"))
        limits = ready.get("limits")
        self._limits = [str(x) for x in limits] if isinstance(limits, list) else []
        self._fixed_addresses = ready.get("fixed_addresses") is True
        if not self._fixed_addresses:
            warn_randomized_addresses()
        return worker

    async def _exchange(self, worker: _Worker, request: dict[str, Any], code: str) -> dict[str, Any]:
        if worker.sha != request["sha"]:  # never happens through call(); a worker runs one module only
            raise _WorkerDied("worker bound to another hook module")
        if not worker.loaded:
            style = "harness_r1" if request["entry"] == "hook" else "module"
            reply = await self._round_trip(worker, {"op": "load", "sha": request["sha"], "benchmark": request["benchmark"],
                                                    "style": style, "code": code})
            if reply.get("status") != "ok":
                return dict(reply, recycle=True)  # rejected by the policy or not compiled: nothing to keep
            worker.loaded = True
        reply = await self._round_trip(worker, {k: v for k, v in request.items() if k != "benchmark"})
        self.served.setdefault(worker.pid, set()).add(request["sha"])
        while len(self.served) > MAX_SERVED_RECORDS:
            self.served.pop(next(iter(self.served)))
        return reply

    async def _round_trip(self, worker: _Worker, msg: dict[str, Any]) -> dict[str, Any]:
        worker.next_id += 1
        # fixed width: the call's fork parses this line, and its length must not depend on how many
        # calls the worker served before (addresses a hook can see follow the fork's allocations)
        rid = f"{worker.next_id:012d}"
        await self._write(worker, dumps(dict(msg, id=rid)))
        reply = await self._read_line(worker)
        if reply.get("crashed"):
            raise _WorkerDied(one_line(str(reply.get("error"))))
        if reply.get("id") != rid:
            raise _WorkerDied("reply out of order")
        return reply

    async def _write(self, worker: _Worker, data: bytes) -> None:
        fd = worker.proc.stdin.fileno()  # type: ignore[union-attr]
        view = memoryview(data)
        loop = asyncio.get_running_loop()
        while view:
            try:
                sent = os.write(fd, view)
                view = view[sent:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, OSError) as exc:
                raise _WorkerDied(f"write failed: {type(exc).__name__}") from None
            ready = loop.create_future()
            loop.add_writer(fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_writer(fd)

    async def _read_line(self, worker: _Worker) -> dict[str, Any]:
        fd = worker.proc.stdout.fileno()  # type: ignore[union-attr]
        loop = asyncio.get_running_loop()
        while b"\n" not in worker.buffer:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_reader(fd, _wake, ready)
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
                continue
            except OSError as exc:
                raise _WorkerDied(f"read failed: {type(exc).__name__}") from None
            if not chunk:
                code = worker.proc.poll()
                raise _WorkerDied(f"exit code {code}" if code is not None else "closed its output")
            worker.buffer += chunk
            if len(worker.buffer) > MAX_REPLY_BYTES:
                raise _WorkerDied(f"reply over {MAX_REPLY_BYTES // 1024} KB")
        line, _, rest = bytes(worker.buffer).partition(b"\n")
        worker.buffer = bytearray(rest)
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            raise _WorkerDied("sent malformed JSON") from None
        if not isinstance(reply, dict):
            raise _WorkerDied("sent a non-object reply")
        return reply

    def _result(self, reply: dict[str, Any], nb: dict) -> CallResult:
        if reply.get("status") == "ok":
            try:
                value = decode(reply.get("value"))
                new_nb = decode(reply.get("nb"))
            except (EncodeError, RecursionError, TypeError) as exc:
                return CallResult(False, None, nb, one_line(f"malformed reply from worker: {exc}"))
            if not isinstance(new_nb, dict):
                return CallResult(False, None, nb, "malformed reply from worker: nb is not a dict")
            return CallResult(True, value, new_nb, None)
        error = one_line(str(reply.get("error") or "worker error"))
        if error.startswith("timeout after"):  # the in-worker alarm fires a bit early
            error = f"timeout after {self.call_timeout_s:g}s"
        return CallResult(False, None, nb, error)


# A fixed hook that prints what a hook can see of object addresses: functions, a module-level class's instance,
# builtin iterators. Its digest names this machine's address layout — kernel, libc, Python build — as hooks see it.
_ADDRESS_PROBE = '''def helper(x):
    return x
def on_before_action(ctx, nb):
    seen = [helper, on_before_action, SequenceMatcher(None, 'a', 'b'), map(int, []), filter(None, []), zip()]
    return {'type': 'inject_hint', 'message': ' '.join(str(x) for x in seen)}
'''


def address_fingerprint(level: str | None = None) -> str | None:
    """16 hex digits that differ where hooks see other object addresses than here (another kernel, libc or Python
    build), or None where this machine randomizes them (no ``fixed-addresses`` layer), no worker starts or the probe
    fails. Leaderboard submissions and records carry it, so a rerun that does not reproduce can say whether addresses
    may be why. ``level``: an isolation level, as ``SandboxPool(isolation=…)``."""
    async def probe() -> str | None:
        pool = SandboxPool(workers=1, isolation=level)
        try:
            result = await pool.call(_ADDRESS_PROBE, "on_before_action", "dbbench", {}, {})
            if not result.ok or "fixed-addresses" not in pool.layers():
                return None
            return hashlib.sha256(str(result.value["message"]).encode("utf-8")).hexdigest()[:16]
        finally:
            await pool.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise SandboxError("address_fingerprint() runs its own event loop: call it outside a running one")
    isolation(level)  # an unknown or unavailable level is the caller's error, said in one line
    try:
        return asyncio.run(probe())
    except SandboxError:  # no worker starts here: no hook runs either, so there are no addresses to name
        return None
