"""The WebShop world served over HTTP on loopback: many concurrent sessions, JSON in and out.

Endpoints (all POST with a JSON body, answers JSON):
- ``/create`` ``{}`` → ``{"session": id}``
- ``/reset`` ``{"session", "task": WebShopTask.to_dict()}`` → ``{"observation", "available_actions"}``
- ``/step`` ``{"session", "action": "click[buy now]"}`` → ``{"observation", "done", "info", "score"}``
- ``/close`` ``{"session"}`` → ``{"closed": bool}``
- ``GET /health`` → ``{"ok": true, "sessions": n}``
Sessions idle longer than ``session_timeout`` seconds are reclaimed (AgentGym's server
leaked sessions until it ran out of memory). Run: ``python -m harness_gym.benchmarks.webshop.server
--port 8765 [--preload generated:0:1000]``.
"""
from __future__ import annotations

import argparse
import sys
from http.server import ThreadingHTTPServer
from typing import Any

from harness_gym.benchmarks.http_server import SessionStore, make_world_server, serve_main
from harness_gym.benchmarks.webshop.catalog import get_catalog
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.benchmarks.webshop.world import WebShopWorld


def route(store: SessionStore[WebShopWorld], path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path == "/create":
        return {"session": store.create(WebShopWorld())}
    if path == "/close":
        return {"closed": store.close(str(body.get("session")))}
    world, lock = store.get(str(body.get("session")))
    with lock:
        if path == "/reset":
            obs = world.reset(WebShopTask.from_dict(body["task"]))
            return {"observation": obs, "available_actions": world.available_actions()}
        if path == "/step":
            res = world.act(str(body["action"]))
            return {"observation": res.observation, "done": res.done, "info": res.info, "score": world.score}
    raise KeyError(f"unknown path {path}")


def make_server(host: str = "127.0.0.1", port: int = 0, session_timeout: float = 600.0,
                exit_after_idle: float = 0.0) -> ThreadingHTTPServer:
    """A ready server (not yet serving); ``port=0`` picks a free port (``server.server_address``)."""
    return make_world_server("webshop", route, host, port, session_timeout, exit_after_idle)


def _preload(args: argparse.Namespace) -> None:
    for key in args.preload:
        get_catalog(key).engine  # noqa: B018 - build the index now


def main(argv: list[str] | None = None) -> int:
    return serve_main(
        "webshop", make_server, argv, prepare=_preload,
        extra_args=lambda ap: ap.add_argument("--preload", action="append", default=[],
                                              help="catalogue keys to build before serving"),
    )


if __name__ == "__main__":
    sys.exit(main())
