"""ALFWorld over HTTP: one process, many concurrent sessions (stdlib only).

Endpoints (JSON in, JSON out):
- ``POST /create {"grammar": "classic"|"move"}`` -> ``{"session_id"}``
- ``POST /reset {"session_id", "task": AlfTask.to_dict()}`` -> ``{"observation", "admissible_commands"}``
- ``POST /step {"session_id", "action"}`` -> ``{"observation", "done", "won", "score", "admissible_commands"}``
- ``POST /close {"session_id"}`` -> ``{"closed": true}``; ``GET /health`` -> ``{"ok", "sessions"}``
Errors come back as ``{"error": "..."}`` with status 400/404. Sessions idle longer than
``session_timeout`` seconds are reclaimed. Run: ``python -m harness_gym.benchmarks.alfworld.server --port 8765``.
"""
from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any

from harness_gym.benchmarks.alfworld.game import GRAMMARS
from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.alfworld.world import ALFWorldWorld
from harness_gym.benchmarks.http_server import SessionStore, make_world_server, serve_main
from harness_gym.types import ToolCall


def route(store: SessionStore[ALFWorldWorld], path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path == "/create":
        grammar = str(body.get("grammar", "classic"))
        if grammar not in GRAMMARS:
            raise ValueError(f"grammar={grammar!r}: expected one of {list(GRAMMARS)}")
        return {"session_id": store.create(ALFWorldWorld(grammar))}
    sid = str(body.get("session_id", ""))
    if path == "/close":
        store.close(sid)
        return {"closed": True}
    world, lock = store.get(sid)
    with lock:
        if path == "/reset":
            obs = world.reset(AlfTask.from_dict(body["task"]))
            return {"observation": obs, "admissible_commands": world.admissible_commands}
        if path == "/step":
            res = world.step(ToolCall("", "take_action", {"action": str(body.get("action", ""))}))
            return {"observation": res.observation, "done": res.done, "won": bool(res.info.get("won")),
                    "score": world.score, "admissible_commands": res.info.get("admissible_commands", [])}
    raise KeyError(f"no route POST {path}")


def make_server(host: str = "127.0.0.1", port: int = 0, session_timeout: float = 600.0,
                exit_after_idle: float = 0.0) -> ThreadingHTTPServer:
    """A ready server (not yet serving); ``port=0`` picks a free port (``server.server_address``)."""
    return make_world_server("alfworld", route, host, port, session_timeout, exit_after_idle)


def main(argv: list[str] | None = None) -> int:
    return serve_main("alfworld", make_server, argv)


if __name__ == "__main__":
    sys.exit(main())
