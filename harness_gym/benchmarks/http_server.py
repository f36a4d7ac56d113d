"""What every world server shares: sessions reclaimed on idle, a JSON-over-HTTP handler.

One process serves many concurrent sessions (one world each, with its own lock); sessions
idle longer than ``session_timeout`` seconds are reclaimed (AgentGym's servers leaked
sessions until they ran out of memory). Each target supplies ``route(store, path, body)``
for its POST endpoints; ``GET /health`` answers ``{"ok": true, "sessions": n}``. Errors
come back as ``{"error": "..."}``: 404 for an unknown path or session, 400 otherwise; a
bad request never kills the server.
"""
from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Generic, TypeVar

W = TypeVar("W")
Route = Callable[["SessionStore[Any]", str, dict[str, Any]], dict[str, Any]]


class SessionStore(Generic[W]):
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._worlds: dict[str, tuple[W, float, threading.Lock]] = {}

    def create(self, world: W) -> str:
        sid = uuid.uuid4().hex
        with self._lock:
            self._worlds[sid] = (world, time.monotonic(), threading.Lock())
        return sid

    def get(self, sid: str) -> tuple[W, threading.Lock]:
        """The session's world and its lock (hold it while stepping); refreshes the idle clock."""
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


class JSONHandler(BaseHTTPRequestHandler):
    store: SessionStore[Any]
    route: Route
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, body: dict[str, Any]) -> None:
        self.server.last_request = time.monotonic()  # type: ignore[attr-defined]  # every answer is activity
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
            self._send(404, {"error": f"no route GET {self.path}"})

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
            self._send(200, type(self).route(self.store, self.path, body))
        except KeyError as exc:
            self._send(404, {"error": str(exc.args[0]) if exc.args else "not found"})
        except Exception as exc:  # a bad request never kills the server
            self._send(400, {"error": f"{type(exc).__name__}: {exc}"})


def make_world_server(name: str, route: Route, host: str, port: int, session_timeout: float,
                      exit_after_idle: float = 0.0) -> ThreadingHTTPServer:
    """A ready server (not yet serving); ``port=0`` picks a free port (``server.server_address``).

    ``exit_after_idle > 0``: ``serve_forever`` returns once no request (``/health`` included)
    came for that many seconds.
    """
    store: SessionStore[Any] = SessionStore(session_timeout)
    handler = type(f"{name}Handler", (JSONHandler,), {"store": store, "route": staticmethod(route)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.store = store  # type: ignore[attr-defined]
    server.last_request = time.monotonic()  # type: ignore[attr-defined]

    def reaper() -> None:
        period = max(0.05, min(30.0, session_timeout / 4, exit_after_idle / 4 if exit_after_idle > 0 else 30.0))
        while True:
            time.sleep(period)
            store.reap()
            if exit_after_idle > 0 and time.monotonic() - server.last_request > exit_after_idle:  # type: ignore[attr-defined]
                server.shutdown()  # serve_forever returns; the process exits
                return

    threading.Thread(target=reaper, name=f"{name}-session-reaper", daemon=True).start()
    return server


def serve_main(name: str, make_server: Callable[[str, int, float, float], ThreadingHTTPServer], argv: list[str] | None,
               prepare: Callable[[argparse.Namespace], None] | None = None,
               extra_args: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """``python -m harness_gym.benchmarks.<name>.server [--host H] [--port P] [--session-timeout S] [--exit-after-idle S]``."""
    ap = argparse.ArgumentParser(description=f"Serve the {name} world over HTTP.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--session-timeout", type=float, default=600.0)
    ap.add_argument("--exit-after-idle", type=float, default=0.0,
                    help="exit once no request came for this many seconds (0: never)")
    if extra_args:
        extra_args(ap)
    args = ap.parse_args(argv)
    if prepare:
        prepare(args)
    server = make_server(args.host, args.port, args.session_timeout, args.exit_after_idle)
    host, port = server.server_address[:2]
    print(f"{name} server on http://{host!s}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
