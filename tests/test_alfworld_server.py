"""ALFWorld over HTTP: sessions, parity with the local world, timeouts, dead servers."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from harness_gym.errors import WorldError
from harness_gym.benchmarks.alfworld import generator
from harness_gym.benchmarks.alfworld.remote import RemoteWorld
from harness_gym.benchmarks.alfworld.server import make_server
from harness_gym.benchmarks.alfworld.world import ALFWorldWorld
from harness_gym.types import ToolCall

TASKS = generator.generate_split("valid_unseen", 6)


@pytest.fixture()
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, object]]:
    srv = make_server("127.0.0.1", 0, session_timeout=getattr(request, "param", 60.0))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", srv
    finally:
        srv.shutdown()
        srv.server_close()


def _play(world: object, task: object, actions: list[str]) -> list[tuple[str, bool, list[str]]]:
    out = [(world.reset(task), False, world.admissible_commands)]  # type: ignore[attr-defined]
    for a in actions:
        r = world.step(ToolCall("c", "take_action", {"action": a}))  # type: ignore[attr-defined]
        out.append((r.observation, r.done, r.info["admissible_commands"]))
    return out


def test_remote_matches_local_and_sessions_are_independent(server: tuple[str, object]) -> None:
    url, _ = server
    task = TASKS[0]
    local = ALFWorldWorld()
    local.reset(task)
    actions = [a for a in local.admissible_commands if a.startswith("go to ")][:3] + ["dance", "look"]
    remote_a, remote_b = RemoteWorld(url), RemoteWorld(url)
    assert _play(remote_a, task, actions) == _play(ALFWorldWorld(), task, actions)
    remote_b.reset(TASKS[1])
    assert remote_a.session != remote_b.session
    assert remote_b.admissible_commands == sorted(remote_b.admissible_commands)
    with urllib.request.urlopen(url + "/health") as resp:
        assert json.loads(resp.read())["sessions"] == 2
    remote_a.close()
    remote_b.close()
    moved = RemoteWorld(url, "move")
    moved.reset(task)
    assert "help" in moved.admissible_commands
    moved.close()


def test_concurrent_sessions(server: tuple[str, object]) -> None:
    url, _ = server
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            w = RemoteWorld(url)
            w.reset(TASKS[i % len(TASKS)])
            for a in w.admissible_commands[:5]:
                w.step(ToolCall("c", "take_action", {"action": a}))
            w.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("server", [0.3], indirect=True)
def test_idle_sessions_are_reclaimed(server: tuple[str, object]) -> None:
    url, _ = server
    w = RemoteWorld(url)
    w.reset(TASKS[0])
    time.sleep(0.5)
    with pytest.raises(WorldError, match="unknown or expired session"):
        w.step(ToolCall("c", "take_action", {"action": "look"}))


def test_dead_server_is_a_one_line_world_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    w = RemoteWorld(f"http://127.0.0.1:{port}", timeout=2)
    with pytest.raises(WorldError) as err:
        w.reset(TASKS[0])
    assert "unreachable" in str(err.value) and "\n" not in str(err.value)


def test_env_runs_on_the_http_backend(server: tuple[str, object]) -> None:
    from harness_gym.envs.harness_edit import HarnessEditEnv

    url, _ = server
    remote = HarnessEditEnv(benchmark="alfworld", batch_size=3, backend=url)
    local = HarnessEditEnv(benchmark="alfworld", batch_size=3)
    try:
        _, ri = remote.reset(seed=0)
        _, li = local.reset(seed=0)
        assert ri["baseline_score"] == li["baseline_score"] and ri["batch"] == li["batch"]
    finally:
        remote.close()
        local.close()
