"""The WebShop world served over HTTP on loopback: many concurrent sessions, JSON in and out.

Endpoints (all POST with a JSON body, answers JSON):
- ``/create`` ``{}`` → ``{"session": id}``
- ``/reset`` ``{"session", "task": WebShopTask.to_dict()}`` → ``{"observation", "available_actions"}``
- ``/step`` ``{"session", "action": "click[buy now]"}`` → ``{"observation", "done", "info", "score"}``
- ``/close`` ``{"session"}`` → ``{"closed": bool}``
- ``GET /health`` → ``{"ok": true, "sessions": n}``
Sessions idle longer than ``session_timeout`` seconds are reclaimed (AgentGym's server
leaked sessions until it ran out of memory). Run: ``python -m harness_gym.targets.webshop.server
--port 8765 [--preload generated:0:1000]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness_gym.targets.webshop.catalog import get_catalog
from harness_gym.targets.webshop.tasks import WebShopTask
from harness_gym.targets.webshop.world import WebShopWorld


class SessionStore:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._worlds: dict[str, tuple[WebShopWorld, float, threading.Lock]] = {}

    def create(self) -> str:
        sid = uuid.uuid4().hex
        with self._lock:
            self._worlds[sid] = (WebShopWorld(), time.monotonic(), threading.Lock())
        return sid

    def get(self, sid: str) -> tuple[WebShopWorld, threading.Lock]:
        with self._lock:
            if sid not in self._worlds:
                raise KeyError(f"unknown or expired session {sid!r}: create one with POST /create")
            world, _, lock = self._worlds[sid]
            self._worlds[sid] = (world, time.monotonic(), lock)
            return world, lock

    def close(self, sid: str) -> bool:
        with self._lock:
            return self._worlds.pop(sid, None) is not None

    def reap(self) -> int:
        now = time.monotonic()
        with self._lock:
            old = [s for s, (_, t, _) in self._worlds.items() if now - t > self.timeout]
            for s in old:
                del self._worlds[s]
        return len(old)

    def __len__(self) -> int:
        with self._lock:
            return len(self._worlds)


class _Handler(BaseHTTPRequestHandler):
    store: SessionStore
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {"ok": True, "sessions": len(self.store)})
        else:
            self._send(404, {"error": f"unknown path {self.path}"})

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            self._send(200, self._route(self.path, body))
        except KeyError as exc:
            self._send(404, {"error": str(exc.args[0] if exc.args else exc)})
        except Exception as exc:  # a bad request never kills the server
            self._send(400, {"error": f"{type(exc).__name__}: {exc}"})

    def _route(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path == "/create":
            return {"session": self.store.create()}
        if path == "/close":
            return {"closed": self.store.close(str(body.get("session")))}
        world, lock = self.store.get(str(body.get("session")))
        with lock:
            if path == "/reset":
                obs = world.reset(WebShopTask.from_dict(body["task"]))
                return {"observation": obs, "available_actions": world.available_actions()}
            if path == "/step":
                res = world.act(str(body["action"]))
                return {"observation": res.observation, "done": res.done, "info": res.info, "score": world.score}
        raise KeyError(f"unknown path {path}")


def make_server(host: str = "127.0.0.1", port: int = 0, session_timeout: float = 600.0) -> ThreadingHTTPServer:
    """A ready server (not yet serving); ``port=0`` picks a free port (``server.server_address``)."""
    store = SessionStore(session_timeout)
    handler = type("WebShopHandler", (_Handler,), {"store": store})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.store = store  # type: ignore[attr-defined]

    def reaper() -> None:
        while True:
            time.sleep(max(0.05, min(30.0, session_timeout / 4)))
            store.reap()

    threading.Thread(target=reaper, name="webshop-session-reaper", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Serve the WebShop world over HTTP.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--session-timeout", type=float, default=600.0)
    ap.add_argument("--preload", action="append", default=[], help="catalogue keys to build before serving")
    args = ap.parse_args(argv)
    for key in args.preload:
        get_catalog(key).engine  # noqa: B018 - build the index now
    server = make_server(args.host, args.port, args.session_timeout)
    host, port = server.server_address[:2]
    print(f"webshop server on http://{host!s}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
