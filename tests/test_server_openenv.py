"""``harness-gym serve`` over OpenEnv's protocol, on loopback: concurrent sessions, seeds, cleanup, limits."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import gymnasium as gym
import pytest
from support import require_modules

require_modules("openenv", install="pip install 'harness-gym[openenv]'")

import harness_gym  # noqa: E402,F401
from baselines.base import PolicyInput, make_policy  # noqa: E402
from harness_gym.server import HarnessEditAction, HarnessEditClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "HarnessEdit-DBBench-v0"
KWARGS = {"batch_size": 4}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - loopback only
        return json.loads(r.read())


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_gym.cli", "serve", "--env", ENV_ID, "--host", "127.0.0.1", "--port", str(port),
         "--max-sessions", "2", "--env-kwargs", json.dumps(KWARGS)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            if _get(base + "/health").get("status") == "healthy":
                break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail(f"server did not start: {proc.communicate()[0][-2000:]}")
        time.sleep(0.5)
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def _wait_sessions(base: str, active: int, open_envs: int) -> dict:
    deadline = time.time() + 30
    while True:
        info = _get(base + "/sessions")
        if (info["active_sessions"], info["open_envs"]) == (active, open_envs) or time.time() > deadline:
            return info
        time.sleep(0.2)


def _local(seed: int) -> tuple[str, float, str]:
    env = gym.make(ENV_ID, **KWARGS)
    try:
        obs, info = env.reset(seed=seed)
        patch = make_policy("template").propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
        _, reward, *_ = env.step(patch)
        return obs, float(reward), patch
    finally:
        env.close()


def test_two_concurrent_sessions_give_the_local_packets_and_rewards(server):
    local = {s: _local(s) for s in (0, 1)}
    out: dict[int, tuple[str, float, bool]] = {}
    errors: list[BaseException] = []
    started = threading.Barrier(2)

    def run(seed: int) -> None:
        try:
            with HarnessEditClient(base_url=server).sync() as env:
                first = env.reset(seed=seed)
                started.wait(timeout=60)  # both sessions are open at once
                result = env.step(HarnessEditAction(patch=local[seed][2]))
                out[seed] = (first.observation.text, float(result.reward), result.done)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for seed in (0, 1):
        text, reward, done = out[seed]
        assert text == local[seed][0]  # same seed, same packet as a local env
        assert reward == local[seed][1] and done
    assert out[0][0] != out[1][0]
    info = _wait_sessions(server, 0, 0)
    assert info["active_sessions"] == 0 and info["open_envs"] == 0  # closed sessions released their envs


def test_sessions_are_bounded_with_a_clear_error_and_freed_on_close(server):
    a = HarnessEditClient(base_url=server).sync()
    b = HarnessEditClient(base_url=server).sync()
    a.connect()
    b.connect()
    try:
        a.reset(seed=2)
        b.reset(seed=3)
        assert _wait_sessions(server, 2, 2)["active_sessions"] == 2
        with HarnessEditClient(base_url=server).sync() as c:
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED") as err:
                c.reset(seed=4)
            assert "\n" not in str(err.value)
        a.close()
        assert _wait_sessions(server, 1, 1)["active_sessions"] == 1
        with HarnessEditClient(base_url=server).sync() as c:
            assert c.reset(seed=4).observation.info["batch_digest"]
    finally:
        a.close()
        b.close()
    assert _wait_sessions(server, 0, 0)["open_envs"] == 0


def test_http_step_without_a_session_says_to_reset_first(server):
    req = urllib.request.Request(server + "/step", data=json.dumps({"action": {"patch": "x"}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:  # noqa: S310 - loopback only
        body = json.loads(r.read())
    assert body["done"] and "reset first" in body["observation"]["info"]["error"]


@pytest.mark.parametrize("args, fragment", [(["--env", "HarnessEdit-Nope-v0"], "HarnessEdit env id"),
                                            (["--max-sessions", "0"], "--max-sessions"),
                                            (["--env-kwargs", "[1]"], "JSON object")])
def test_bad_serve_arguments_give_one_line_errors(args, fragment):
    proc = subprocess.run([sys.executable, "-m", "harness_gym.cli", "serve", "--port", str(_free_port()), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and fragment in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1
