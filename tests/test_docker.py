"""Dockerized targets, for real: images built here, containers started, batches run, nothing left.

Needs a Docker engine and the base image (``.ci/docker.sh`` installs and starts dockerd and
builds the base); CI fails these tests instead of skipping them.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from support import require_docker, unavailable

import harness_gym  # noqa: F401 - registers the env ids
from harness_gym.errors import ConfigError, WorldError
from harness_gym.docker.containers import (
    parse_docker_backend,
    reap,
    start_target,
)

ENVS = {"webshop": ("HarnessEdit-WebShop-v0", "local"), "alfworld": ("HarnessEdit-ALFWorld-v0", "local"),
        "dbbench": ("HarnessEdit-DBBench-v0", "sqlite")}
PATCHES = {"webshop": "webshop_buy_guard.txt", "alfworld": "alfworld_stages.txt", "dbbench": "dbbench_stage_guards.txt"}
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "patches"


@pytest.fixture(scope="module")
def client() -> Any:
    return require_docker()


def _gone(client: Any, name: str, within: float) -> bool:
    import docker

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            c = client.containers.get(name)
            if c.status in ("exited", "dead"):
                time.sleep(0.2)  # auto-remove follows the exit
                continue
        except docker.errors.NotFound:
            return True
        time.sleep(0.25)
    return False


def test_backend_options_are_parsed_and_bad_ones_rejected_in_one_line() -> None:
    opts = parse_docker_backend("docker?network=host&idle_exit=30&keepalive=5")
    assert (opts["network"], opts["idle_exit"], opts["keepalive"]) == ("host", "30", "5")
    assert parse_docker_backend("docker")["network"] == "auto"
    for bad, word in [("docker?colour=red", "unknown option"), ("docker?idle_exit=-1", ">= 0"),
                      ("docker?idle_exit=5&keepalive=10", "must exceed"), ("dockers", "expected 'docker'"),
                      ("docker?network=", "empty")]:
        with pytest.raises(ConfigError, match=word) as err:
            parse_docker_backend(bad)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("target", sorted(ENVS))
def test_a_batch_in_a_container_matches_the_in_process_world(client: Any, target: str) -> None:
    """Each target in its container: same baseline and same patched rewards as in process (DBBench: as on
    the host's MariaDB when HARNESS_GYM_MYSQL_URL is set, as CI does)."""
    env_id, local = ENVS[target]
    if target == "dbbench":  # like for like: the same engine on the host (SQLite differs on a few tasks)
        local = os.environ.get("HARNESS_GYM_MYSQL_URL") or local
    patch = (EXAMPLES / PATCHES[target]).read_text()
    outcomes = {}
    for backend in (local, "docker?network=host"):
        env = gym.make(env_id, backend=backend, batch_size=6)
        try:
            _, info = env.reset(seed=11)
            _, reward, _, _, step_info = env.step(patch)
            assert step_info["patch_valid"] and step_info["incomplete"] == [], step_info.get("patch_error")
            outcomes[backend] = (info["baseline_score"], reward,
                                 [(r["task_id"], r["patched_reward"], r["patched_status"]) for r in step_info["per_task"]])
            handle = env.unwrapped.containers
            if backend != local:
                assert handle is not None and handle.backend.startswith(("http://", "mysql://"))
                name = handle.name
                assert client.containers.get(name).labels["harness-gym.target"] == target
        finally:
            env.close()
    assert outcomes[local] == outcomes["docker?network=host"]
    assert _gone(client, name, within=10), f"{name} outlived env.close()"


def test_bridge_network_with_a_published_loopback_port(client: Any) -> None:
    """A user's engine with a bridge network: the server port is published on 127.0.0.1."""
    import docker

    net = "hg-test-bridge"
    if not client.networks.list(names=[net]):
        try:
            client.networks.create(net, driver="bridge")
        except docker.errors.APIError as exc:
            if "already exists" not in str(exc):
                raise
    with start_target("alfworld", f"docker?network={net}") as handle:
        client.containers.get(handle.name).reload()
        ports = client.containers.get(handle.name).attrs["NetworkSettings"]["Ports"]["8765/tcp"]
        assert ports[0]["HostIp"] == "127.0.0.1" and int(ports[0]["HostPort"]) == handle.port
        assert handle.network == net and handle.ping()
        from harness_gym.benchmarks.alfworld.spec import world_factory
        from harness_gym.benchmarks.alfworld.generator import generate_split

        world = world_factory(handle.backend)()
        task = generate_split("test")[0]
        assert "You are in the middle of a room" in world.reset(task)
        world.close()
        name = handle.name
    assert _gone(client, name, within=10)
    with pytest.raises(ConfigError, match="does not exist"):
        start_target("alfworld", "docker?network=hg-no-such-network")


def test_a_killed_owner_leaves_nothing_behind(client: Any) -> None:
    """SIGKILL the process that started a container: the next start (or prune) removes it."""
    code = ("from harness_gym.docker import start_target\n"
            "h = start_target('webshop', 'docker?network=host')\n"
            "print(h.name, flush=True)\nimport time\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        name = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert name.startswith("harness-gym-webshop-"), name
        assert client.containers.get(name).status == "running"
        assert name not in reap(client), "a live owner's container must not be reaped"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert name in reap(client)
    assert _gone(client, name, within=10)


def test_idle_containers_exit_on_their_own_and_keepalive_holds_them(client: Any) -> None:
    """The time-to-live when nobody reaps: servers exit after idle_exit seconds without a client."""
    idle_web = start_target("webshop", "docker?network=host&idle_exit=2&keepalive=0")
    idle_db = start_target("dbbench", "docker?network=host&idle_exit=5&keepalive=0")
    # idle_exit 6 s against a 1 s ping: a ping starved for a few seconds by a busy test machine
    # must not let the kept container go; the check waits past two of its idle periods.
    kept = start_target("alfworld", "docker?network=host&idle_exit=6&keepalive=1")
    t0 = time.monotonic()
    try:
        assert _gone(client, idle_web.name, within=20), "the idle WebShop server did not exit"
        assert _gone(client, idle_db.name, within=40), "the idle database did not exit"
        time.sleep(max(0.0, 12.0 - (time.monotonic() - t0)))
        assert client.containers.get(kept.name).status == "running", "the kept container exited although pinged"
        assert kept.ping()
    finally:
        for h in (idle_web, idle_db, kept):
            h.close()
    assert _gone(client, kept.name, within=10)


def test_a_container_killed_mid_run_is_one_line_world_error(client: Any) -> None:
    """A dead server: the step raises a one-line WorldError naming it, scores nothing and is not
    spent; each episode underneath is an env error with a one-line reason."""
    env = gym.make("HarnessEdit-WebShop-v0", backend="docker?network=host", batch_size=3, retries=1)
    try:
        env.reset(seed=5)
        env.unwrapped.containers.container.kill()
        with pytest.raises(WorldError, match="unreachable") as err:
            env.step((EXAMPLES / PATCHES["webshop"]).read_text())
        assert "\n" not in str(err.value) and "nothing was scored" in str(err.value)
        assert env.unwrapped._edits == 0
        from harness_gym.harness.patch import parse_patch

        u = env.unwrapped
        other = parse_patch("def on_post_step(ctx, nb):\n    return None\n", u._base).apply(u._base)
        runs = u.evaluator.evaluate(other, u._batch, u._seeds)
        assert all(r.is_env_error and "\n" not in r.error and "unreachable" in r.error for r in runs), runs[0].error
    finally:
        env.close()


def test_missing_base_image_is_one_clear_line(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_GYM_DOCKER_BASE", "harness-gym/no-such-base:1")
    with pytest.raises(WorldError, match="cannot be pulled") as err:
        start_target("webshop", "docker?network=host")
    assert "\n" not in str(err.value)


def test_cli_build_ls_and_prune(client: Any) -> None:
    from harness_gym.cli import main

    assert main(["docker", "build", "alfworld"]) == 0
    assert client.images.get("harness-gym/alfworld:latest")
    assert main(["docker", "ls"]) == 0
    assert main(["docker", "prune"]) == 0
    assert main(["docker", "build", "nope"]) == 2


def _compose() -> list[str]:
    import shutil

    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) and subprocess.run([*cmd, "version"], capture_output=True, check=False).returncode == 0:
            return cmd
    unavailable("docker compose", "neither `docker compose` nor Debian's `docker-compose` runs (.ci/docker.sh installs it)")


def test_compose_file_brings_up_three_healthy_targets_that_serve_batches(client: Any, tmp_path: Any) -> None:
    from harness_gym.cli import main

    compose = _compose()
    assert main(["docker", "build"]) == 0  # the :latest tags compose.yaml names
    ports = {"webshop": 28765 + os.getpid() % 1000, "alfworld": 29765 + os.getpid() % 1000,
             "dbbench": 30765 + os.getpid() % 1000}
    env = {**os.environ, "HARNESS_GYM_DATA_DIR": str(tmp_path), "HG_WEBSHOP_PORT": str(ports["webshop"]),
           "HG_ALFWORLD_PORT": str(ports["alfworld"]), "HG_DBBENCH_PORT": str(ports["dbbench"])}
    project = f"hgtest{os.getpid()}"
    base = [*compose, "-f", os.path.join(os.path.dirname(__file__), "..", "docker", "compose.yaml"), "-p", project]
    up = subprocess.run([*base, "up", "-d"], env=env, capture_output=True, text=True, check=False, timeout=180)
    try:
        assert up.returncode == 0, up.stderr[-500:]
        names = [c.name for c in client.containers.list(filters={"label": f"com.docker.compose.project={project}"})]
        assert len(names) == 3, names
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the images' HEALTHCHECKs turn healthy
            states = [client.containers.get(n).attrs["State"].get("Health", {}).get("Status") for n in names]
            if states == ["healthy"] * 3:
                break
            time.sleep(1)
        assert states == ["healthy"] * 3, states
        backends = {"webshop": f"http://127.0.0.1:{ports['webshop']}", "alfworld": f"http://127.0.0.1:{ports['alfworld']}",
                    "dbbench": f"mysql://hg:hg@127.0.0.1:{ports['dbbench']}"}
        for target, (env_id, _) in ENVS.items():
            e = gym.make(env_id, backend=backends[target], batch_size=3)
            try:
                e.reset(seed=2)
                assert not any(r.is_env_error for r in e.unwrapped._base_results), target
            finally:
                e.close()
    finally:
        down = subprocess.run([*base, "down", "--timeout", "2"], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert down.returncode == 0, down.stderr[-500:]
    assert not client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})
