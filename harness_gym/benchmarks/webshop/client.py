"""World backends for WebShop: ``local`` (in process), ``local:pyserini`` (in process, search by
the original's pyserini/Lucene instead of its emulation) or ``http://host:port`` (``server.py``).

``HTTPWorld`` is a ``World`` that forwards reset/step to one server session; a dead or
failing server raises ``WorldError`` with a one-line message (the evaluator retries the
episode, then reports it as incomplete).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_gym.errors import ConfigError, WorldError
from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.http_client import post_json
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.benchmarks.webshop.world import WebShopWorld, action_of
from harness_gym.types import StepResult, ToolCall


class HTTPWorld(World):
    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session: str | None = None
        self._score = 0.0
        self._available: dict[str, Any] = {"has_search_bar": True, "clickables": ["search"]}

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return post_json(self.base_url, path, body, timeout=self.timeout, name="webshop")

    def reset(self, task: WebShopTask) -> str:
        if self.session is None:
            self.session = str(self._post("/create", {})["session"])
        out = self._post("/reset", {"session": self.session, "task": task.to_dict()})
        self._score, self._available = 0.0, out["available_actions"]
        return str(out["observation"])

    def step(self, call: ToolCall) -> StepResult:
        if self.session is None:
            raise WorldError("HTTPWorld.step before reset: no server session")
        out = self._post("/step", {"session": self.session, "action": action_of(call)})
        info = dict(out.get("info") or {})
        self._score = float(out.get("score", 0.0))
        self._available = info.get("available_actions", self._available)
        return StepResult(str(out["observation"]), bool(out["done"]), info)

    def available_actions(self) -> dict[str, Any]:
        return self._available

    @property
    def score(self) -> float:
        return self._score

    def close(self) -> None:
        if self.session is not None:
            try:
                self._post("/close", {"session": self.session})
            except WorldError:
                pass
            self.session = None


def world_factory(backend: str) -> Callable[[], World]:
    if backend in ("local", "local:lucene", "", None):
        return WebShopWorld
    if backend == "local:pyserini":
        from harness_gym.benchmarks.webshop.search import pyserini_available

        problem = pyserini_available()
        if problem:
            raise ConfigError(f"backend='local:pyserini': {problem}")
        return lambda: WebShopWorld(search="pyserini")
    if backend.startswith(("http://", "https://")):
        return lambda: HTTPWorld(backend)
    raise ConfigError(f"backend={backend!r}: expected 'local', 'local:pyserini' or 'http://host:port' (a WebShop server)")
