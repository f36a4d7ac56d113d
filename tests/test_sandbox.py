"""The sandbox: hook code runs in limited worker processes and cannot hurt the parent."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness_gym.harness.policy import SAFE_BUILTIN_NAMES
from harness_gym.sandbox import worker as worker_mod
from harness_gym.sandbox.pool import POLICY_PATH, WORKER_PATH, CallResult, SandboxPool

TIMEOUT = 1.0
SLACK = 2.0  # process kill + restart on a busy 2-core machine
TRIVIAL = "def hook(ctx, nb):\n    nb['n'] = nb.get('n', 0) + 1\n    return {'type': 'inject_hint', 'message': ctx.state.msg}\n"
CTX = {"state": {"msg": "hello"}}


def hook(body: str, helpers: str = "") -> str:
    return helpers + "def hook(ctx, nb):\n" + "".join(f"    {line}\n" for line in body.splitlines())


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def pool() -> Any:
    p = SandboxPool(workers=2, call_timeout_s=TIMEOUT)
    yield p
    asyncio.run(p.close())


async def call(p: SandboxPool, code: str, nb: dict | None = None, ctx: dict | None = None, entry: str = "hook") -> CallResult:
    return await p.call(code, entry, "dbbench", CTX if ctx is None else ctx, {} if nb is None else nb)


def test_trivial_call_and_nb_round_trip(pool: SandboxPool) -> None:
    nb = {"set": {1, 2, "a"}, "tuple": (1, (2, "x")), "nested": {"l": [1, {"f": frozenset({3})}]},
          7: "int key", (1, 2): "tuple key", "$t": "dollar key", "float": 1.5, "none": None, "bool": True}
    res = run(call(pool, TRIVIAL, nb))
    assert res.ok and res.error is None
    assert res.value == {"type": "inject_hint", "message": "hello"}
    expected = dict(nb, n=1)
    assert res.nb == expected
    assert isinstance(res.nb["tuple"], tuple) and isinstance(res.nb["set"], set)
    assert isinstance(res.nb["nested"]["l"][1]["f"], frozenset)


def test_codec_round_trip_and_limits() -> None:
    value = {"a": [1, (2, 3), {4, 5}], 3: {"$d": 1}, "s": frozenset({"x"})}
    wire = json.loads(json.dumps(worker_mod.encode(value)))
    assert worker_mod.decode(wire) == value
    with pytest.raises(worker_mod.EncodeError, match="too large"):
        worker_mod.encode("x" * 300_000)
    with pytest.raises(worker_mod.EncodeError, match="unsupported type"):
        worker_mod.encode({"f": object()})
    deep: Any = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(worker_mod.EncodeError, match="deeper"):
        worker_mod.encode(deep)


def test_per_call_overhead(pool: SandboxPool) -> None:
    async def bench() -> float:
        await call(pool, TRIVIAL)
        n = 500
        start = time.perf_counter()
        for _ in range(n):
            res = await call(pool, TRIVIAL)
            assert res.ok
        return (time.perf_counter() - start) / n

    per_call = run(bench())
    print(f"\nsandbox round trip for a trivial hook: {per_call * 1e6:.0f} us per call")


HOSTILE = {
    "infinite_for": (hook("for i in range(10**12):\n    nb['i'] = i"), ("line budget",)),
    "recursion": (hook("return f(0)", "def f(n):\n    return f(n + 1)\n"), ("recursion", "line budget")),
    "big_power": (hook("return 10**10**8"), ("timeout",)),
    "catastrophic_regex": (hook("return re.match('(a+)+$', 'a' * 40 + 'b')"), ("timeout",)),
    "hundred_mb_list": (hook("x = [0] * (100 * 1024 * 1024)\nreturn x"), ("timeout", "memory", "too large")),
    "huge_return": (hook("return 'x' * (10**7)"), ("return value rejected",)),
    "huge_nb": (hook("nb['x'] = ['y' * 1000] * 1000\nreturn None"), ("nb rejected",)),
    "memory_bomb": (hook("x = 'a' * (2 * 1024 ** 3)\nreturn len(x)"), ("memory", "timeout")),
    "unencodable_return": (hook("return re.match('a', 'a')"), ("unsupported type",)),
    "exception": (hook("nb['touched'] = 1\nreturn ctx.nope"), ("exception: AttributeError nope (line 3)",)),
    "key_error": (hook("return {}['x']"), ("exception: KeyError 'x'",)),
    "ctx_is_read_only": (hook("ctx['state'] = 1\nreturn 1"), ("read-only",)),
    "policy_recheck": (hook("return open('/etc/passwd').read()"), ("rejected", "open")),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_code_is_contained(pool: SandboxPool, name: str) -> None:
    code, needles = HOSTILE[name]

    async def scenario() -> tuple[CallResult, float, CallResult]:
        start = time.perf_counter()
        bad = await call(pool, code, {"keep": 1})
        elapsed = time.perf_counter() - start
        good = await call(pool, TRIVIAL, {"n": 41})
        return bad, elapsed, good

    bad, elapsed, good = run(scenario())
    assert not bad.ok and bad.value is None
    assert bad.nb == {"keep": 1}, "a failed call must leave nb as it was"
    assert bad.error and "\n" not in bad.error
    assert any(n.lower() in bad.error.lower() for n in needles), bad.error
    assert elapsed < TIMEOUT + SLACK, f"{name} took {elapsed:.2f}s"
    assert good.ok and good.nb == {"n": 42} and good.value["message"] == "hello"


def test_worker_environment_is_scrubbed_and_limited(pool: SandboxPool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HG_TEST_SECRET", "do-not-leak")
    assert run(call(pool, TRIVIAL)).ok
    (pid,) = pool.pids()
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        pytest.skip("needs /proc")
    environ = [e for e in proc.joinpath("environ").read_bytes().split(b"\0") if e]
    # bwrap sets PWD after --clearenv; nothing else may reach the worker
    assert sorted(e for e in environ if not e.startswith(b"PWD=")) == [b"PATH=/usr/bin:/bin", b"PYTHONHASHSEED=0"], environ
    assert os.listdir(proc / "cwd") == []  # through the magic link: the worker's own (empty) cwd
    limits = proc.joinpath("limits").read_text()
    assert any(line.startswith("Max address space") and "1073741824" in line for line in limits.splitlines())
    assert any(line.startswith("Max file size") and line.split()[3] == "0" for line in limits.splitlines())
    fds = os.listdir(proc / "fd")
    # stdin, stdout, stderr, the protocol pipe and the report pipes of two call forks (the one that
    # served the call, until it reports its reply, and the one waiting for the next): no inherited files
    assert len(fds) <= 6, fds
    assert "rlimits" in pool.layers() and "process" in pool.layers() and "closed-fds" in pool.layers()


def test_worker_builtins_are_exactly_the_safe_ones() -> None:
    policy = worker_mod._load_policy(str(POLICY_PATH))
    w = worker_mod.Worker(policy)
    assert w.call({"sha": "s1", "entry": "hook", "ctx": {}, "nb": {}})["status"] == "error"  # nothing loaded yet
    assert w.load({"sha": "s1", "style": "harness_r1", "benchmark": "dbbench", "code": hook("return sorted(nb)")}) == {"status": "ok"}
    reply = w.call({"sha": "s1", "entry": "hook", "ctx": {}, "nb": {"b": 1, "a": 2}})
    assert reply == {"status": "ok", "value": ["a", "b"], "nb": {"b": 1, "a": 2}}
    namespace = w.namespace
    assert namespace is not None and sorted(namespace["__builtins__"]) == sorted(SAFE_BUILTIN_NAMES)
    assert sorted(k for k in namespace if k not in ("__builtins__", "hook")) == ["SequenceMatcher", "math", "re"]
    # one code identity per worker: a second load is refused, and a call for another module's sha
    second = w.load({"sha": "s2", "style": "harness_r1", "benchmark": "dbbench", "code": hook("return 2")})
    assert second["status"] == "error" and "bound to another hook module" in second["error"]
    other = w.call({"sha": "s2", "entry": "hook", "ctx": {}, "nb": {}})
    assert other["status"] == "error" and "bound to another hook module" in other["error"]
    assert w.call({"sha": "s1", "entry": "hook", "ctx": {}, "nb": {"z": 0}})["value"] == ["z"]
    bad = worker_mod.Worker(policy).load({"sha": "s3", "style": "harness_r1", "benchmark": "dbbench",
                                          "code": hook("return open('/etc/passwd')")})
    assert bad["status"] == "error" and bad["error"].startswith("rejected:")


def _send(proc: subprocess.Popen, req: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(req) + "\n").encode())
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def test_worker_protocol_over_a_real_process() -> None:
    proc = subprocess.Popen([sys.executable, *iso_mod.PYTHON_FLAGS, str(WORKER_PATH), str(POLICY_PATH)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(iso_mod.WORKER_ENV))
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["status"] == "ready" and "RLIMIT_AS" in ready["limits"] and "RLIMIT_NPROC" in ready["limits"]
        call_req = {"id": "1", "sha": "abc", "entry": "hook", "ctx": {}, "nb": {}}
        first = _send(proc, call_req)  # a call before any load
        assert first["status"] == "error" and "must load" in first["error"] and first["id"] == "1"
        load = _send(proc, {"op": "load", "id": "2", "sha": "abc", "style": "harness_r1", "benchmark": "dbbench",
                            "code": hook("return {'ok': sorted(nb)}")})
        assert load == {"status": "ok", "id": "2"}
        reply = _send(proc, dict(call_req, id="3", nb={"$s": [1]}))
        assert reply["status"] == "error" and "nb must be a dict" in reply["error"] and reply["id"] == "3"
        reply = _send(proc, dict(call_req, id="4", nb={"x": 1}))
        assert reply["status"] == "ok" and reply["value"] == {"ok": ["x"]} and reply["id"] == "4"
        again = _send(proc, {"op": "load", "id": "5", "sha": "abc", "style": "harness_r1", "benchmark": "dbbench",
                             "code": hook("return 1")})
        assert again["status"] == "error" and again["id"] == "5"  # read by a call's fork: no second module
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=5) == 0


def test_a_worker_killed_mid_call_is_reported_and_replaced(pool: SandboxPool) -> None:
    slow = hook("return sum(range(10**10))")  # C-level loop: no line events

    async def scenario() -> tuple[CallResult, CallResult]:
        await call(pool, TRIVIAL)
        task = asyncio.ensure_future(call(pool, slow))
        sha = pool.code_sha(slow, "hook", "dbbench")
        for _ in range(200):  # its own worker (one module per worker) is started, then the call is in flight
            await asyncio.sleep(0.02)
            if pool.pids(sha):
                break
        await asyncio.sleep(0.2)
        for pid in pool.pids(sha):
            os.kill(pid, signal.SIGKILL)
        return await task, await call(pool, TRIVIAL)

    crashed, after = run(scenario())
    assert not crashed.ok and crashed.error is not None and "worker crashed" in crashed.error
    assert after.ok


def test_a_call_whose_fork_dies_is_reported_and_the_next_call_runs(pool: SandboxPool) -> None:
    """Each call runs in a fork of the loaded worker: when that fork dies before replying (here
    killed from outside; a limit or a crash in C code does the same), the call says so in one line
    and the pool starts over cleanly."""
    slow = hook("return sum(range(10**10))")
    pool.call_timeout_s = 20.0

    async def scenario() -> tuple[CallResult, CallResult]:
        task = asyncio.ensure_future(call(pool, slow))
        sha = pool.code_sha(slow, "hook", "dbbench")
        forks: list[int] = []
        for _ in range(400):
            await asyncio.sleep(0.02)
            for pid in pool.pids(sha):
                forks = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            if forks:
                break
        assert forks, "the call's fork was not found"
        for pid in forks:
            os.kill(pid, signal.SIGKILL)
        return await task, await call(pool, slow.replace("10**10", "10"))

    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/<pid>/task/<pid>/children")
    crashed, after = run(scenario())
    assert not crashed.ok and crashed.error is not None
    assert "worker crashed" in crashed.error and "died before replying" in crashed.error and "\n" not in crashed.error
    assert after.ok and after.value == 45


def _forks(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _limit(pid: int, name: str) -> str:
    row = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith(name))
    return row[len(name):].split()[0]


def test_the_cpu_and_process_limits_bind_each_calls_fork_not_the_worker(pool: SandboxPool) -> None:
    """The worker forks every call and its own CPU time grows with each (~0.4 ms): a CPU limit on
    it would one day kill a call that did nothing wrong (second review: after ~650,000 calls). The
    limits that bind hook code are set in each call's fork, which refuses to run a hook without them."""
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/<pid>/task/<pid>/children")
    assert run(call(pool, TRIVIAL)).ok
    (pid,) = pool.pids()
    time.sleep(0.3)  # the call's own fork exits after its reply
    waiting = _forks(pid)
    assert len(waiting) == 1, waiting  # the next call's fork, ready
    assert _limit(waiting[0], "Max cpu time") == "300" and _limit(waiting[0], "Max processes") == "0"
    assert _limit(pid, "Max cpu time") != "300" and _limit(pid, "Max processes") != "0"
    assert _limit(pid, "Max address space") == _limit(waiting[0], "Max address space") == "1073741824"


def test_an_idle_workers_fork_killed_from_outside_costs_no_call(pool: SandboxPool) -> None:
    """When the fork waiting for an idle worker's next call dies (the OOM killer, an operator), the
    worker goes away and the next call starts a new one. Before, the worker wrote a "crashed" line
    nobody had asked for, and the next call read it as its own reply and failed."""
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/<pid>/task/<pid>/children")
    assert run(call(pool, TRIVIAL)).ok
    (pid,) = pool.pids()
    for fork in _forks(pid):
        os.kill(fork, signal.SIGKILL)
    time.sleep(0.3)
    after = run(call(pool, TRIVIAL))
    assert after.ok, after.error


def test_dead_idle_worker_is_replaced(pool: SandboxPool) -> None:
    assert run(call(pool, TRIVIAL)).ok
    for pid in pool.pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    assert run(call(pool, TRIVIAL)).ok


def test_concurrent_calls_share_the_workers_and_survive_new_event_loops(pool: SandboxPool) -> None:
    async def many() -> list[CallResult]:
        return await asyncio.gather(*(call(pool, TRIVIAL, {"n": i}) for i in range(8)))

    for _ in range(2):  # a second asyncio.run: the pool keeps working
        results = run(many())
        assert [r.nb["n"] for r in results] == list(range(1, 9))
    assert len(pool.pids()) <= 2


def test_entries_of_a_module_and_missing_entry(pool: SandboxPool) -> None:
    module = "def on_init(ctx, nb):\n    return {'tool_hint': 'x'}\n\ndef on_post_step(ctx, nb):\n    nb['s'] = 1\n"
    assert run(call(pool, module, entry="on_init")).value == {"tool_hint": "x"}
    assert run(call(pool, module, entry="on_post_step")).nb == {"s": 1}
    missing = run(call(pool, module, entry="make_pre_hint"))
    assert not missing.ok and "no hook entry" in (missing.error or "")


def test_closed_pool_refuses_calls() -> None:
    p = SandboxPool(workers=1, call_timeout_s=TIMEOUT)
    assert run(call(p, TRIVIAL)).ok
    run(p.close())
    assert p.pids() == []
    from harness_gym.errors import SandboxError

    with pytest.raises(SandboxError, match="closed"):
        run(call(p, TRIVIAL))


# ------------------------------------------------------------------ OS isolation layers

from harness_gym.errors import SandboxError
from harness_gym.sandbox import isolation as iso_mod

_OS_CHECK = r"""
import os, socket, sys
out = []
s = socket.socket(); s.settimeout(1.0)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); out.append("connected")
except OSError:
    out.append("no-network")
for path in sys.argv[3:]:
    out.append(("sees:" if os.path.exists(path) else "hidden:") + path)
if sys.argv[2] == "try-write":  # only where the filesystem is meant to be read-only
    try:
        open("/tmp/hg-escape", "w").close(); out.append("tmp-writable")
    except OSError:
        out.append("tmp-readonly")
print(" ".join(out))
"""


def _available(level: str) -> iso_mod.Isolation:
    try:
        return iso_mod.isolation(level)
    except SandboxError as exc:
        pytest.skip(f"{level} isolation not available here: {exc}")


def _run_inside(iso: iso_mod.Isolation, *paths: str, try_write: bool = False) -> list[str]:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    try:
        cmd = list(iso.prefix) + [iso_mod.python_executable(), *iso_mod.PYTHON_FLAGS, "-c", _OS_CHECK,
                                  str(listener.getsockname()[1]), "try-write" if try_write else "-", *paths]
        out = subprocess.run(cmd, capture_output=True, env=dict(iso_mod.WORKER_ENV), cwd="/", timeout=30, check=True)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()
    return out.stdout.decode().split()


def test_bwrap_hides_host_files_network_and_writes() -> None:
    iso = _available("bwrap")
    secret_dir = str(Path(__file__).resolve().parents[1])  # the repo (and ../shared data) must be invisible
    words = _run_inside(iso, secret_dir, "/etc/passwd", "/root", "/proc/1/environ", iso.inner_worker, try_write=True)
    assert "no-network" in words and "tmp-readonly" in words, words
    assert f"hidden:{secret_dir}" in words and "hidden:/etc/passwd" in words and "hidden:/proc/1/environ" in words, words
    assert f"sees:{iso.inner_worker}" in words
    assert not Path("/tmp/hg-escape").exists()
    nobody = "uid-nobody" if os.geteuid() == 0 else "userns-nobody"
    for layer in ("bwrap", "netns-no-network", "readonly-fs", "pidns", nobody, "no-capabilities", "no-new-privs"):
        assert layer in iso.layers


def test_unshare_net_blocks_loopback() -> None:
    iso = _available("unshare")
    assert "no-network" in _run_inside(iso)
    assert iso.layers[:2] == ("netns-no-network", "ipcns") and "bwrap" not in iso.layers


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_each_isolation_level_runs_hooks_and_says_what_is_active(level: str) -> None:
    _available(level)
    p = SandboxPool(workers=1, call_timeout_s=TIMEOUT, isolation=level)
    try:
        res = run(call(p, TRIVIAL))
        assert res.ok and res.value["message"] == "hello"
        layers = p.layers()
        assert ("bwrap" in layers) == (level == "bwrap")
        assert ("netns-no-network" in layers) == (level != "process")
        (pid,) = p.pids()
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-P", b"-s"]  # the interpreter, not bwrap
    finally:
        run(p.close())


_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_set_order_is_the_same_in_every_worker(level: str) -> None:
    """A hook that iterates a set of strings must see one order in every worker, or one patch on one
    batch scores differently from run to run and a verifier's rerun differs from the submission:
    string hashing is seeded (PYTHONHASHSEED=0), not randomized per process."""
    _available(level)
    code = hook(f"return {{'type': 'inject_hint', 'message': ' '.join(list({set(_WORDS)!r}))}}")
    p = SandboxPool(workers=1, call_timeout_s=TIMEOUT, isolation=level, max_idle=0)  # a fresh worker per call
    try:
        orders = {run(call(p, code)).value["message"] for _ in range(6)}
    finally:
        run(p.close())
    seeded = subprocess.run([sys.executable, "-c", f"print(' '.join(list({set(_WORDS)!r})))"], env={"PYTHONHASHSEED": "0"},
                            capture_output=True, text=True, check=True).stdout.strip()
    assert orders == {seeded}, orders


_NB_SET_SCRIPT = """
import asyncio
from harness_gym.sandbox.pool import SandboxPool
CODE = ("def hook(ctx, nb):\\n"
        "    if 's' not in nb:\\n"
        "        nb['s'] = set(%r)\\n"
        "        return None\\n"
        "    return {'message': ' '.join(list(nb['s']))}\\n")
async def main():
    pool = SandboxPool(workers=1, max_idle=0)
    first = await pool.call(CODE, "hook", "dbbench", {}, {})
    second = await pool.call(CODE, "hook", "dbbench", {}, first.nb)
    print(second.value["message"] if second.ok else second.error)
    await pool.close()
asyncio.run(main())
"""


def test_a_set_kept_in_the_notebook_has_one_order_whatever_the_parent_process() -> None:
    """Between calls ``nb`` passes through the parent, which hashes strings with its own seed: a set sent
    back in the parent's iteration order would be rebuilt in another order by the next worker. Sets go
    over the wire in a canonical order, so four parents with different hash seeds agree."""
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam", "mu", "nu"]
    script = _NB_SET_SCRIPT % (words,)
    orders = set()
    for seed in ("1", "2", "3", "4"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=True)
        orders.add(out.stdout.strip())
    assert len(orders) == 1 and sorted(next(iter(orders)).split()) == sorted(words), orders


def test_a_worker_with_randomized_hashing_refuses_to_start() -> None:
    out = subprocess.run([sys.executable, "-I", "-S", "-B", str(WORKER_PATH), str(POLICY_PATH)], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert out.returncode == 3 and "PYTHONHASHSEED=0" in json.loads(out.stdout.splitlines()[0])["error"]


def test_unknown_isolation_level_is_a_clear_error() -> None:
    with pytest.raises(SandboxError, match="expected auto or one of"):
        SandboxPool(isolation="docker").layers()


def test_auto_picks_the_strongest_and_probes_once() -> None:
    first = iso_mod.isolation()
    assert iso_mod.isolation() is first  # cached per process
    if shutil.which("bwrap") and "bwrap" not in first.note and os.environ.get(iso_mod.ENV_VAR) is None:
        assert first.level == "bwrap", first.note


@pytest.mark.parametrize("body", [
    "x = 'a' * (400 * 1024 ** 2)\nreturn len(x)",  # one big block
    "x = list(map(str, range(4 * 10 ** 6)))\nreturn len(x)",  # many small objects (arenas)
    "x = [0] * (60 * 10 ** 6)\nreturn None",
])
def test_a_big_call_leaves_the_idle_worker_small(pool: SandboxPool, body: str) -> None:
    """Freed memory need not return to the system, but a call's memory is its fork's, gone when it
    exits: the worker kept idle stays small however much a call took, so idle workers cannot pile up gigabytes."""
    pool.call_timeout_s = 10.0
    code = hook(body)
    result = run(pool.call(code, "hook", "dbbench", {}, {}))
    assert result.ok, result.error
    (pid,) = pool.pids(pool.code_sha(code, "hook", "dbbench"))
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("needs /proc")
    rss_kb = next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmRSS:"))
    assert rss_kb < 100 * 1024, rss_kb
    assert run(pool.call(code, "hook", "dbbench", {}, {})).ok and pool.pids(pool.code_sha(code, "hook", "dbbench")) == [pid]


def test_workers_without_fixed_addresses_are_announced_once(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Where the kernel refuses personality(ADDR_NO_RANDOMIZE) (Docker's default seccomp profile) the
    layer is missing from layers() and one stderr line says what that costs."""
    import harness_gym.sandbox.pool as pool_mod

    monkeypatch.setattr(pool_mod, "_WARNED", [])
    pool_mod.warn_randomized_addresses()
    pool_mod.warn_randomized_addresses()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "randomization" in err and "score differently" in err
    p = SandboxPool(workers=1)
    try:
        assert run(p.call(TRIVIAL, "hook", "dbbench", CTX, {})).ok
        assert "fixed-addresses" in p.layers()  # this machine allows it, so nothing more was said
        assert capsys.readouterr().err == ""
    finally:
        run(p.close())
