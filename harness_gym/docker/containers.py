"""Target containers for ``backend="docker"``: started for an env, removed on close or crash.

``start_target("webshop", "docker?network=host")`` finds or builds the image, reaps this
host's orphans, starts one labelled container, waits until the server answers and returns a
``TargetContainer`` whose ``backend`` is what the world factory takes (``http://…`` or
``mysql://…``). Nothing outlives its owner for long:

- ``close()`` (the env's ``close``) and an ``atexit`` hook remove the container;
- every container carries its owner (host, pid, process start time); starting another one
  removes those whose owner is gone (``reap``; ``harness-gym docker prune`` does it by hand);
- the server in the container exits after ``idle_exit`` seconds without a request, and the
  container is started with auto-remove, while the owner pings it every ``keepalive``
  seconds — a SIGKILLed owner leaves a container for at most ``idle_exit`` seconds.

Options after ``?``: ``network`` (``auto``: the default ``bridge`` network with a published
loopback port when the engine has one, else ``host``; or ``host``, or any network's name), ``idle_exit`` (120), ``keepalive`` (20; 0: off),
``build`` (1: build a missing image; 0: fail), ``start_timeout`` (120), ``memory`` (``2g``),
``grammar`` (ALFWorld: ``classic`` or ``move``).
"""
from __future__ import annotations

import atexit
import os
import socket
import threading
import time
import urllib.request
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from harness_gym.errors import ConfigError, WorldError, one_line
from harness_gym.docker.images import (
    LABEL,
    docker_client,
    ensure_image,
    image_def,
)

DEFAULTS = {"network": "auto", "idle_exit": "120", "keepalive": "20", "build": "1", "start_timeout": "120",
            "memory": "2g", "grammar": "classic"}


def parse_docker_backend(backend: str) -> dict[str, str]:
    """``docker`` or ``docker?key=value&…`` → options (unknown keys and values rejected)."""
    head, _, query = backend.partition("?")
    if head != "docker":
        raise ConfigError(f"backend={backend!r}: expected 'docker' or 'docker?key=value&…'")
    opts = dict(DEFAULTS)
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in DEFAULTS:
            raise ConfigError(f"backend={backend!r}: unknown option {key!r}; expected one of {sorted(DEFAULTS)}")
        opts[key] = value
    if not opts["network"]:
        raise ConfigError(f"backend={backend!r}: network= is empty; expected auto, host, bridge or a network's name")
    for key in ("idle_exit", "keepalive", "start_timeout"):
        try:
            if float(opts[key]) < 0:
                raise ValueError
        except ValueError:
            raise ConfigError(f"backend={backend!r}: {key}={opts[key]!r} must be a number >= 0") from None
    if 0 < float(opts["idle_exit"]) <= float(opts["keepalive"]):
        raise ConfigError(f"backend={backend!r}: idle_exit must exceed keepalive, or the container exits while in use")
    return opts


# --- owners ---------------------------------------------------------------------------------
def host_id() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        boot = "noboot"
    return f"{socket.gethostname()}-{boot}"


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def owner_label(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{host_id()}/{pid}/{_start_time(pid) or '?'}"


def owner_alive(label: str) -> bool:
    """False only when ``label``'s owner was on this host and that process is gone."""
    host, _, rest = label.partition("/")
    pid, _, started = rest.partition("/")
    if host != host_id() or not pid.isdigit():
        return True  # another machine's container: not ours to judge
    return _start_time(int(pid)) == started


def reap(client: Any | None = None, *, everything: bool = False) -> list[str]:
    """Remove this host's harness-gym containers whose owner process is gone, or that exited
    (``everything``: every harness-gym container on the engine, live owner or not)."""
    import docker  # type: ignore[import-untyped]

    client = client or docker_client()
    removed = []
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        owner = c.labels.get("harness-gym.owner", "")
        if everything or c.status in ("exited", "dead", "created") or not owner_alive(owner):
            try:
                c.remove(force=True)
                removed.append(c.name)
            except docker.errors.APIError:
                pass  # already being removed (auto-remove)
    return removed


# --- one container --------------------------------------------------------------------------
_LIVE: weakref.WeakSet[TargetContainer] = weakref.WeakSet()


@dataclass(eq=False)
class TargetContainer:
    """A running target container; ``backend`` is the world backend string to use."""

    target: str
    backend: str
    container: Any
    image: dict[str, Any]
    network: str
    port: int
    start_s: float
    keepalive_s: float
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def name(self) -> str:
        return str(self.container.name)

    def ping(self) -> bool:
        """One liveness probe (what the keepalive sends): the server answers."""
        try:
            if self.target == "dbbench":  # a connection attempt is activity for the idle watchdog
                with socket.create_connection(("127.0.0.1", self.port), timeout=3) as s:
                    return bool(s.recv(4))
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=3) as r:
                return r.status == 200
        except OSError:
            return False

    def _keepalive(self) -> None:
        while not self._stop.wait(self.keepalive_s):
            self.ping()

    def close(self) -> None:
        """Stop and remove the container (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        _LIVE.discard(self)
        import docker

        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: auto-remove already in progress
                raise WorldError(one_line(f"could not remove container {self.name}: {exc}")) from None

    def __enter__(self) -> TargetContainer:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _network(client: Any, wanted: str) -> str:
    if wanted == "host":
        return wanted
    if wanted == "auto":
        return "bridge" if client.networks.list(names=["bridge"]) else "host"
    if not any(n.name == wanted for n in client.networks.list(names=[wanted])):
        raise ConfigError(f"docker network {wanted!r} does not exist on this engine (started with --bridge=none?); "
                          f"use network=host or create it: docker network create {wanted}")
    return wanted


def start_target(target: str, backend: str = "docker", *, data_dir: str | os.PathLike[str] | None = None,
                 client: Any | None = None) -> TargetContainer:
    """Start ``target``'s container (see the module docstring) and wait until it serves."""
    import docker

    opts = parse_docker_backend(backend)
    d = image_def(target)
    client = client or docker_client()
    reap(client)
    image = ensure_image(client, target, build=opts["build"] not in ("0", "false", "no"))
    network = _network(client, opts["network"])
    idle = int(float(opts["idle_exit"]))
    port = _free_port() if network == "host" else d.port
    kw: dict[str, Any] = {
        "detach": True, "auto_remove": True, "init": True, "mem_limit": opts["memory"],
        "name": f"harness-gym-{target}-{os.getpid()}-{uuid.uuid4().hex[:6]}",
        "labels": {LABEL: "1", "harness-gym.target": target, "harness-gym.owner": owner_label(),
                   "harness-gym.idle-exit": str(idle)},
        "environment": {"HG_PORT": str(port), "HG_IDLE_EXIT": str(idle)},
    }
    if data_dir:
        path = str(Path(data_dir).resolve())
        kw["volumes"] = {path: {"bind": path, "mode": "ro"}}  # same path inside: task keys name it
    if network == "host":
        kw["network_mode"] = "host"
    else:
        kw["network"] = network
        kw["ports"] = {f"{d.port}/tcp": ("127.0.0.1", None)}
    t0 = time.monotonic()
    try:
        container = client.containers.run(image["tag"], **kw)
    except docker.errors.APIError as exc:
        raise WorldError(one_line(f"could not start {image['tag']}: {exc}")) from None
    handle = TargetContainer(target, "", container, image, network, port, 0.0, float(opts["keepalive"]))
    try:
        _LIVE.add(handle)
        if network != "host":
            handle.port = _published_port(container, d.port, deadline=t0 + 10)
        _wait_ready(handle, deadline=t0 + float(opts["start_timeout"]))
    except BaseException:
        handle.close()
        raise
    handle.start_s = round(time.monotonic() - t0, 2)
    if d.scheme == "mysql":
        handle.backend = f"mysql://hg:hg@127.0.0.1:{handle.port}"
    else:
        grammar = opts["grammar"]
        handle.backend = f"http://127.0.0.1:{handle.port}" + (f"#{grammar}" if target == "alfworld" and grammar != "classic" else "")
    if handle.keepalive_s > 0:
        threading.Thread(target=handle._keepalive, name=f"{handle.name}-keepalive", daemon=True).start()
    return handle


def _published_port(container: Any, port: int, deadline: float) -> int:
    while True:
        container.reload()
        bound = (container.attrs.get("NetworkSettings", {}).get("Ports") or {}).get(f"{port}/tcp")
        if bound:
            return int(bound[0]["HostPort"])
        if time.monotonic() > deadline:
            raise WorldError(f"container {container.name} published no port for {port}/tcp")
        time.sleep(0.1)


def _wait_ready(handle: TargetContainer, deadline: float) -> None:
    import docker

    while True:
        try:
            handle.container.reload()
            status = handle.container.status
        except docker.errors.NotFound:
            status = "removed"
        if status not in ("created", "running"):
            logs = ""
            try:
                logs = handle.container.logs(tail=5).decode(errors="replace")
            except docker.errors.APIError:
                pass
            raise WorldError(one_line(f"container {handle.name} {status} before serving: {logs or 'no logs'}"))
        if status == "running" and _ready(handle):
            return
        if time.monotonic() > deadline:
            raise WorldError(one_line(f"container {handle.name} did not serve within its start timeout"))
        time.sleep(0.2)


def _ready(handle: TargetContainer) -> bool:
    if handle.target != "dbbench":
        return handle.ping()
    from harness_gym.benchmarks.dbbench.db_mysql import _pymysql

    pymysql = _pymysql()
    try:
        pymysql.connect(host="127.0.0.1", port=handle.port, user="hg", password="hg", connect_timeout=2).close()
        return True
    except pymysql.err.MySQLError:
        return False


@atexit.register
def _close_all() -> None:
    for handle in list(_LIVE):
        try:
            handle.close()
        except Exception:  # noqa: BLE001, S110 - best effort at exit; reap() catches what is left
            pass
