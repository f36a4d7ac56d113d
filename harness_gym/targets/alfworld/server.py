"""ALFWorld over HTTP: one process, many concurrent sessions (stdlib only).

Endpoints (JSON in, JSON out):
- ``POST /create {"grammar": "classic"|"move"}`` -> ``{"session_id"}``
- ``POST /reset {"session_id", "task": AlfTask.to_dict()}`` -> ``{"observation", "admissible_commands"}``
- ``POST /step {"session_id", "action"}`` -> ``{"observation", "done", "won", "score", "admissible_commands"}``
- ``POST /close {"session_id"}`` -> ``{"closed": true}``; ``GET /health`` -> ``{"ok", "sessions"}``
Errors come back as ``{"error": "..."}`` with status 400/404. Sessions idle longer than
``session_timeout`` seconds are reclaimed. Run: ``python -m harness_gym.targets.alfworld.server --port 8765``.
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

from harness_gym.targets.alfworld.game import GRAMMARS
from harness_gym.targets.alfworld.tasks import AlfTask
from harness_gym.targets.alfworld.world import ALFWorldWorld
from harness_gym.types import ToolCall


class Sessions:
    def __init__(self, timeout: float = 600.0) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._items: dict[str, tuple[ALFWorldWorld, float]] = {}

    def create(self, grammar: str) -> str:
        if grammar not in GRAMMARS:
            raise ValueError(f"grammar={grammar!r}: expected one of {list(GRAMMARS)}")
        sid = uuid.uuid4().hex
        with self._lock:
            self.reap()
            self._items[sid] = (ALFWorldWorld(grammar), time.monotonic())
        return sid

    def get(self, sid: str) -> ALFWorldWorld:
        with self._lock:
            self.reap()
            if sid not in self._items:
                raise KeyError(f"unknown or expired session {sid!r}; create a new one with POST /create")
            world, _ = self._items[sid]
            self._items[sid] = (world, time.monotonic())
            return world

    def close(self, sid: str) -> None:
        with self._lock:
            self._items.pop(sid, None)

    def reap(self) -> None:
        now = time.monotonic()
        for sid in [s for s, (_, t) in self._items.items() if now - t > self.timeout]:
            del self._items[sid]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def make_server(host: str = "127.0.0.1", port: int = 0, session_timeout: float = 600.0) -> ThreadingHTTPServer:
    sessions = Sessions(session_timeout)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"ok": True, "sessions": len(sessions)})
            else:
                self._send(404, {"error": f"no route GET {self.path}"})

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(req, dict):
                    raise ValueError("the request body must be a JSON object")
                self._send(200, self._route(req))
            except KeyError as exc:
                self._send(404, {"error": str(exc.args[0]) if exc.args else "not found"})
            except Exception as exc:  # a bad request never kills the server
                self._send(400, {"error": f"{type(exc).__name__}: {exc}"})

        def _route(self, req: dict[str, Any]) -> dict[str, Any]:
            if self.path == "/create":
                return {"session_id": sessions.create(str(req.get("grammar", "classic")))}
            sid = str(req.get("session_id", ""))
            if self.path == "/close":
                sessions.close(sid)
                return {"closed": True}
            world = sessions.get(sid)
            if self.path == "/reset":
                obs = world.reset(AlfTask.from_dict(req["task"]))
                return {"observation": obs, "admissible_commands": world.admissible_commands}
            if self.path == "/step":
                res = world.step(ToolCall("", "take_action", {"action": str(req.get("action", ""))}))
                return {"observation": res.observation, "done": res.done, "won": bool(res.info.get("won")),
                        "score": world.score, "admissible_commands": res.info.get("admissible_commands", [])}
            raise KeyError(f"no route POST {self.path}")

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Serve ALFWorld worlds over HTTP.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--session-timeout", type=float, default=600.0)
    args = ap.parse_args(argv)
    server = make_server(args.host, args.port, args.session_timeout)
    print(f"alfworld server on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
