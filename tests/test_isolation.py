"""Least privilege in every isolation mode, the one-line warning, and no cross-patch effects."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, make_policy
from harness_gym.errors import SandboxError
from harness_gym.sandbox import isolation as iso_mod
from harness_gym.sandbox import worker as worker_mod
from harness_gym.sandbox.pool import SandboxPool

ROOT = Path(__file__).resolve().parents[1]
TRIVIAL = "def hook(ctx, nb):\n    nb['n'] = nb.get('n', 0) + 1\n    return {'type': 'inject_hint', 'message': 'hi'}\n"
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _available(level: str) -> iso_mod.Isolation:
    try:
        return iso_mod.isolation(level)
    except SandboxError as exc:
        pytest.skip(f"{level} isolation not available here: {exc}")


def _status(pid: int) -> dict[str, list[str]]:
    rows = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.split() for k, _, v in (r.partition(":") for r in rows)}


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_a_worker_never_runs_as_root_in_any_mode(level: str) -> None:
    iso = _available(level)
    pool = SandboxPool(workers=1, call_timeout_s=2.0, isolation=level)
    try:
        res = asyncio.run(pool.call(TRIVIAL, "hook", "dbbench", {}, {}))
        assert res.ok, res.error
        (pid,) = pool.pids()
        status = _status(pid)  # read from outside, as the kernel sees the worker
        assert "0" not in status["Uid"] and "0" not in status["Gid"], status["Uid"]
        assert status["NoNewPrivs"] == ["1"]
        for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
            assert int(status[cap][0], 16) == 0, (cap, status[cap])
        layers = pool.layers()
        assert "no-new-privs" in layers and "non-dumpable" in layers and "one-module-per-worker" in layers
        if AS_ROOT:
            assert status["Uid"] == ["65534"] * 4 and status["Gid"] == ["65534"] * 4 and status["Groups"] == []
            assert int(status["CapBnd"][0], 16) == 0
            assert "uid-nobody" in layers and "no-capabilities" in layers, layers
            assert iso.credentials is not None and worker_mod.unprivileged(iso.credentials)
    finally:
        asyncio.run(pool.close())


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_the_real_worker_cannot_reach_namespaces_proc_or_host_files(level: str) -> None:
    """The probe is the worker itself (``worker.py --probe``) under the same prefix and drop."""
    iso = _available(level)
    candidate = next(c for c in iso_mod._candidates(iso_mod.python_executable()) if c.level == level)
    problem, report = iso_mod._probe(candidate, iso_mod.python_executable(), "/", extra_dirs=(str(ROOT), "/root", "/etc"))
    assert problem is None, problem
    # /proc/1/ns/net (setns into the host's network), /proc/1/environ, the parent's environ, ns and mem
    assert report["opened"] == [], report["opened"]
    if AS_ROOT:
        assert report["credentials"]["uid"] == [65534] * 3, report["credentials"]
        writable = set(report["writable"])
        assert not writable & {str(ROOT), "/root", "/etc", "/"}, writable
        if level != "process":  # bwrap: read-only binds; unshare: a private mount namespace remounted read-only
            assert writable == set(), writable
            assert "readonly-fs" in iso.layers
        else:  # uid 65534 only creates empty files in world-writable directories (RLIMIT_FSIZE=0)
            assert writable <= {"/tmp", "/var/tmp", "/dev/shm"}, writable
    if level != "process":
        assert report["network"] is False
    assert not any(p.name.startswith(".hg-probe-") for p in Path("/tmp").iterdir())


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_a_worker_cannot_reach_another_worker(level: str) -> None:
    """Workers all run as uid 65534: non-dumpable keeps their /proc files and memory closed to
    each other; a pid namespace (bwrap, unshare as root) keeps signals from reaching them."""
    _available(level)
    pool = SandboxPool(workers=1, isolation=level)
    try:
        assert asyncio.run(pool.call(TRIVIAL, "hook", "dbbench", {}, {})).ok
        (peer,) = pool.pids()
        candidate = next(c for c in iso_mod._candidates(iso_mod.python_executable()) if c.level == level)
        problem, report = iso_mod._probe(candidate, iso_mod.python_executable(), "/", peers=(peer,))
        assert problem is None, problem
        assert report["opened"] == [], report["opened"]  # /proc/<peer>/{environ,ns/net,mem}
        if level != "process" and AS_ROOT:
            assert report["pid"] == 1 and report["signalled"] == [], report
        elif level == "process" and AS_ROOT:
            assert report["signalled"] == [peer]  # the one gap of process mode: same uid, same pid namespace
            assert "no-signals-out" not in iso_mod.isolation("process").layers
        assert asyncio.run(pool.call(TRIVIAL, "hook", "dbbench", {}, {})).ok and pool.pids() == [peer]
    finally:
        asyncio.run(pool.close())


def test_unprivileged_reads_every_field() -> None:
    good = {"uid": [65534] * 3, "gid": [65534] * 3, "groups": [], "no_new_privs": 1, "dumpable": 0,
            "caps": {"effective": 0, "permitted": 0, "inheritable": 0, "bounding": 0}}
    assert worker_mod.unprivileged(good)
    for bad in ({"uid": [0, 65534, 65534]}, {"gid": [65534, 0, 65534]}, {"groups": [0]}, {"no_new_privs": 0},
                {"caps": dict(good["caps"], bounding=1 << 21)}, {"caps": dict(good["caps"], inheritable=448)}, {"caps": {}}):
        assert not worker_mod.unprivileged(dict(good, **bad)), bad


def test_a_worker_that_did_not_drop_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    if not AS_ROOT:
        pytest.skip("the drop to uid 65534 needs a root parent")
    iso = _available("process")
    pool = SandboxPool(workers=1, isolation="process")
    # the worker is told not to drop but the pool still expects it to: it must refuse the worker
    pool._iso = iso_mod.Isolation(iso.level, iso.prefix, iso.layers, iso.inner_worker, iso.inner_policy, drop=True)
    monkeypatch.setattr(iso_mod.Isolation, "worker_args", lambda self: [self.inner_worker, self.inner_policy])
    try:
        with pytest.raises(SandboxError, match="did not drop to uid 65534"):
            asyncio.run(pool.call(TRIVIAL, "hook", "dbbench", {}, {}))
    finally:
        asyncio.run(pool.close())


# ------------------------------------------------------------------ the one-line warning


def test_weaker_isolation_is_announced_once_on_stderr(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _available("process")
    monkeypatch.setattr(iso_mod, "_ANNOUNCED", set())
    envs = [gym.make("HarnessEdit-DBBench-v0", batch_size=2, sandbox_isolation="process") for _ in range(2)]
    for env in envs:
        env.close()
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if "hook sandbox" in line]
    assert len(lines) == 1, err
    assert "'process'" in lines[0] and "weaker than bubblewrap" in lines[0] and "chosen by HARNESS_GYM_SANDBOX" in lines[0]
    assert "hook sandbox" not in out


def test_a_fallback_names_the_system_package(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """What a fresh machine without bubblewrap prints: the fallback, its layers and the fix, once."""
    iso = _available("unshare")
    monkeypatch.setattr(iso_mod, "_ANNOUNCED", set())
    monkeypatch.setattr(iso_mod, "isolation", lambda level=None: dataclasses.replace(iso, note="bwrap: not installed"))
    monkeypatch.delenv(iso_mod.ENV_VAR, raising=False)
    for _ in range(3):
        iso_mod.announce(None)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("harness-gym: hook sandbox is 'unshare'"), err
    assert "missing bwrap" in err[0] and "(bwrap: not installed)" in err[0] and "apt-get install bubblewrap" in err[0]


def test_bwrap_is_not_announced(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _available("bwrap")
    monkeypatch.setattr(iso_mod, "_ANNOUNCED", set())
    env = gym.make("HarnessEdit-DBBench-v0", batch_size=2, sandbox_isolation="bwrap")
    env.close()
    assert "hook sandbox" not in capfd.readouterr().err


# ------------------------------------------------------------------ no cross-patch effects

HOSTILE = '''def on_init(ctx, nb):
    x = 'a' * (4 * 1024 ** 3)
    return {'skills': [str(len(x))]}

def make_pre_hint(ctx, nb):
    return {'hint': str(sum(range(10 ** 11)))}

def on_before_action(ctx, nb):
    nb['junk'] = ['y' * 1000] * 200
    return {'type': 'rewrite_action', 'action': 'x' * 5000}

def on_post_step(ctx, nb):
    return bomb(0)

def bomb(n):
    return bomb(n + 1)
'''

BENIGN_POST = ("--- /dev/null\n+++ b/hooks/01_on_post_step.py\n@@ -0,0 +1,5 @@\n"
               "+def hook(ctx, nb):\n+    nb['k'] = nb.get('k', 0) + 1\n+    if nb['k'] == 2:\n"
               "+        return {'type': 'inject_hint', 'message': 'Check the column names with a SELECT first.'}\n"
               "+    return None\n")


def _group(env: Any, obs: str, info: dict) -> list[str]:
    template = make_policy("template").propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
    return [template, HOSTILE, BENIGN_POST]


def test_a_hostile_patch_in_a_group_cannot_change_the_other_rewards() -> None:
    kw = {"batch_size": 4, "sandbox_timeout_s": 0.5}
    group_env = gym.make("HarnessEdit-DBBench-v0", **kw)
    alone_env = gym.make("HarnessEdit-DBBench-v0", **kw)
    try:
        obs, info = group_env.reset(seed=11)
        alone_env.reset(seed=11)
        patches = _group(group_env, obs, info)
        together = group_env.unwrapped.evaluate_patches(patches)
        assert all(r["patch_valid"] for r in together), [r["patch_error"] for r in together]
        alone = [alone_env.unwrapped.evaluate_patches([p])[0] for i, p in enumerate(patches) if i != 1]
        for mine, solo in zip([r for i, r in enumerate(together) if i != 1], alone):
            assert mine["reward"] == solo["reward"] and mine["per_task"] == solo["per_task"]
            assert mine["harness_version"] == solo["harness_version"]
        assert together[0]["reward"] != 0.0  # the template really changes something on this batch

        # every worker served exactly one code identity: the hostile module's never ran another's
        pool = group_env.unwrapped.evaluator.sandbox
        served = pool.served
        assert served, "no hook ran"
        assert all(len(shas) == 1 for shas in served.values()), served
        hostile_sha = {pool.code_sha(HOSTILE, p, "dbbench") for p in ("on_init", "make_pre_hint", "on_before_action", "on_post_step")}
        assert len(hostile_sha) == 1
        hostile_pids = {pid for pid, shas in served.items() if shas & hostile_sha}
        other_pids = {pid for pid, shas in served.items() if not shas & hostile_sha}
        assert hostile_pids and other_pids and not hostile_pids & other_pids
        assert len(hostile_pids) > pool.workers  # its timeouts and memory bomb really cost it workers
        assert len(pool._idle) <= pool.max_idle
    finally:
        group_env.close()
        alone_env.close()


def test_idle_workers_are_capped_least_recently_used_first() -> None:
    pool = SandboxPool(workers=1, call_timeout_s=2.0, max_idle=2)
    codes = [TRIVIAL.replace("'hi'", f"'hi {i}'") for i in range(4)]

    async def scenario() -> list[int]:
        for code in codes:
            assert (await pool.call(code, "hook", "dbbench", {}, {})).ok
        return pool.pids()

    try:
        live = asyncio.run(scenario())
        assert len(live) == 2  # the two most recent; the first two were evicted
        assert set(live) == set(pool.pids(SandboxPool.code_sha(codes[2], "hook", "dbbench"))
                                + pool.pids(SandboxPool.code_sha(codes[3], "hook", "dbbench")))
        first = pool.code_sha(codes[0], "hook", "dbbench")
        res = asyncio.run(pool.call(codes[0], "hook", "dbbench", {}, {}))
        assert res.ok and res.value["message"] == "hi 0" and len(pool.pids(first)) == 1
        assert all(len(shas) == 1 for shas in pool.served.values())
    finally:
        asyncio.run(pool.close())


CODECS = ("def hook(ctx, nb):\n    out = [str('é'.encode('cp1252')), str('é'.encode('utf-16'))]\n"
          "    try:\n        out.append(str('é'.encode('cp437')))\n    except Exception:\n        out.append('lookup')\n"
          "    return {'type': 'inject_hint', 'message': ' '.join(out)}\n")


def test_hooks_behave_the_same_in_every_mode_nothing_is_imported_after_the_drop() -> None:
    """In process/unshare mode the interpreter's files may be out of uid 65534's reach; so in
    every mode a fixed set of codecs is loaded before the drop and file imports are closed."""
    seen = {}
    for level in ("bwrap", "unshare", "process"):
        try:
            iso_mod.isolation(level)
        except SandboxError:
            continue
        pool = SandboxPool(workers=1, isolation=level)
        try:
            res = asyncio.run(pool.call(CODECS, "hook", "dbbench", {}, {}))
        finally:
            asyncio.run(pool.close())
        assert res.ok, (level, res.error)
        seen[level] = res.value["message"]
    assert seen and set(seen.values()) == {"b'\\xe9' b'\\xff\\xfe\\xe9\\x00' lookup"}, seen


BIG_PARENT = """
import asyncio, sys
from harness_gym.sandbox.pool import SandboxPool
ballast = bytearray(600 * 1024 * 1024)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1  # resident, as a test runner or trainer holding torch is
pool = SandboxPool(workers=1, isolation=sys.argv[1])
code = "def hook(ctx, nb):\\n    return {'type': 'inject_hint', 'message': 'hi'}\\n"
seen = set()
for _ in range(3):
    assert asyncio.run(pool.call(code, "hook", "dbbench", {}, {})).ok
    seen.update(pool.pids())
asyncio.run(pool.close())
print(len(seen))
"""


@pytest.mark.parametrize("level", ["bwrap", "unshare", "process"])
def test_a_large_parent_does_not_make_every_worker_look_like_a_memory_bomb(level: str) -> None:
    """Peak memory is the worker's own: ru_maxrss survives execve, so a worker exec'd from a
    600 MB parent once reported 600 MB and was recycled after every call (process mode)."""
    import subprocess
    import sys

    _available(level)
    done = subprocess.run([sys.executable, "-c", BIG_PARENT, level], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1"  # one worker served all three calls


ADDRESSES = """
import asyncio, json, sys
from pathlib import Path
from harness_gym.sandbox import isolation
from harness_gym.sandbox.pool import SandboxPool
if sys.argv[4] != "-":  # the worker's files from another place (another checkout, a longer path)
    isolation.WORKER_PATH = Path(sys.argv[4]) / "worker.py"
    isolation.POLICY_PATH = Path(sys.argv[4]) / "policy.py"
LOOK = '''def helper(x):
    return x
def on_before_action(ctx, nb):
    seen = {helper, on_before_action, SequenceMatcher(None, 'a', 'b'), re.match('a', 'a'), str, math}
    nb['trail'] = nb.get('trail', '') + str(map(int, []))
    return {'type': 'inject_hint', 'message': str(filter(None, [])) + ' ' + str(ctx.get) + ' ' + str([str(x)[-8:] for x in seen])}
'''
OTHER = "def on_before_action(ctx, nb):\\n    return {'type': 'inject_hint', 'message': str(zip()) * len(ctx)}\\n"
REQUESTS = [({"obs": "x"}, {}), ({"obs": "y" * 5000, "more": [1, 2, 3]}, {"k": "v"}), ({}, {"trail": "t"})]

async def main(level, order, together):
    pool = SandboxPool(workers=2, isolation=level)
    out = {}
    async def one(i):
        r = await pool.call(LOOK, "on_before_action", "webshop", *REQUESTS[i])
        assert r.ok, r.error
        out.setdefault(str(i), []).append([r.value["message"], r.nb["trail"]])
    if together:
        await pool.call(OTHER, "on_before_action", "webshop", {"a": 1}, {})
        await asyncio.gather(*(one(i) for i in order))
    else:
        for i in order:
            await one(i)
    print(json.dumps({"out": out, "layers": pool.layers()}))
    await pool.close()

asyncio.run(main(sys.argv[1], [int(c) for c in sys.argv[2]], sys.argv[3] == "1"))
"""


def _unlimited_stack() -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def test_a_hook_sees_the_same_addresses_in_every_worker_level_checkout_and_rerun(tmp_path: Path) -> None:
    """Hooks can see object addresses (a map object's str, a bound method's, the order of a set of
    functions), so a patch can branch on them; before, one patch on one batch scored differently
    from process to process and from worker to worker, and (second review) from isolation level to
    level, checkout to checkout, and with the parent's stack limit. Each call runs in a fork of the
    loaded worker (the same heap every time), which was exec'd once more with randomization off, a
    fixed stack limit and an argv and environment of fixed lengths: the same request gets the same
    answer in parents with other hash seeds, call orders, concurrent workers, isolation levels,
    worker paths and stack limits."""
    import json
    import shutil
    import subprocess
    import sys

    levels = []
    for level in iso_mod.LEVELS:
        try:
            iso_mod.isolation(level)
            levels.append(level)
        except SandboxError:
            pass
    elsewhere = tmp_path / ("a-longer-checkout-path-" * 6) / "sandbox"
    elsewhere.mkdir(parents=True)
    for d in (elsewhere, *elsewhere.parents):  # uid 65534 reads the worker's files (process and unshare levels)
        if d == tmp_path.parent:
            break
        d.chmod(0o755)
    shutil.copy(iso_mod.WORKER_PATH, elsewhere / "worker.py")
    shutil.copy(iso_mod.POLICY_PATH, elsewhere / "policy.py")
    configs = [(level, "0120", "0", "-", None) for level in levels]
    configs += [(levels[0], "2101", "1", "-", None), (levels[-1], "1002", "1", str(elsewhere), None),
                (levels[0], "210", "0", str(elsewhere), _unlimited_stack)]
    runs = []
    for n, (level, order, together, where, preexec) in enumerate(configs):
        done = subprocess.run([sys.executable, "-c", ADDRESSES, level, order, together, where], capture_output=True,
                              text=True, timeout=120, cwd=ROOT, preexec_fn=preexec,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": str(n + 1)})
        assert done.returncode == 0, (level, where, done.stderr[-2000:])
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert all("fork-per-call" in r["layers"] and "fixed-addresses" in r["layers"] for r in runs), runs[0]["layers"]
    answers = {key: {json.dumps(a) for r in runs for a in r["out"].get(key, [])} for key in "012"}
    assert all(len(a) == 1 for a in answers.values()), answers
    assert "0x" in next(iter(answers["0"]))  # the hook did see an address


def test_the_address_fingerprint_is_one_value_per_machine_and_none_where_addresses_move(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What leaderboard files carry to explain a rerun that differs: the same 16 hex digits at every isolation level
    and in processes with other hash seeds (it names the machine, not the run); None where addresses are randomized,
    since there is no layout to name."""
    import subprocess
    import sys

    from harness_gym.sandbox import pool as pool_mod

    seen = set()
    for n, level in enumerate(iso_mod.LEVELS):
        try:
            iso_mod.isolation(level)
        except SandboxError:
            continue
        done = subprocess.run([sys.executable, "-c", "import sys\nfrom harness_gym.sandbox.pool import address_fingerprint"
                               "\nprint(address_fingerprint(sys.argv[1]))", level], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                         "PYTHONHASHSEED": str(n + 7)})
        assert done.returncode == 0, done.stderr[-2000:]
        seen.add(done.stdout.split()[-1])
    assert len(seen) == 1 and re.fullmatch(r"[0-9a-f]{16}", seen.pop())
    monkeypatch.setattr(pool_mod.SandboxPool, "layers", lambda self: ["process", "fork-per-call"])
    assert pool_mod.address_fingerprint() is None


ADDRESS_PATCH_EPISODES = r"""
import json, sys
import gymnasium as gym
import harness_gym  # noqa: F401
hook = (
    "def hook(ctx, nb):\n"
    "    bits = int(str(map(int, []))[-4:-1], 16) + len([f for f in {hook, SequenceMatcher(None, 'a', 'b')}][0:1])\n"
    "    if bits % 3 == 0:\n"
    "        return {'type': 'block_and_prompt', 'message': 'Query the table again first.'}\n"
    "    return None\n"
)
patch = {"schema_version": "harness-r1-patch-v1", "benchmark": "dbbench", "description": "branches on an address",
         "actions": [{"type": "add_code_hook", "hook": "on_before_action", "code": hook}]}
env = gym.make("HarnessEdit-DBBench-v0", batch_size=10)
out = []
for seed in (3, 4):
    env.reset(seed=seed)
    _, reward, _, _, info = env.step(json.dumps(patch))
    out.append([reward, info.get("patch_error")])
env.close()
print(json.dumps(out))
"""


def test_a_patch_that_branches_on_addresses_earns_one_reward_in_every_process() -> None:
    """The reviewer's case end to end: a patch whose guard fires on bits of an object address
    scored −0.5 … 0.0 on one batch from process to process. Now three processes with other hash
    seeds give the same rewards (on the sim)."""
    import json
    import subprocess
    import sys

    rewards = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", ADDRESS_PATCH_EPISODES], capture_output=True, text=True, timeout=300,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr[-2000:]
        rewards.add(done.stdout.strip().splitlines()[-1])
    assert len(rewards) == 1, rewards
