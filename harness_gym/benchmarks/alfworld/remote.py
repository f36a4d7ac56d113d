"""``RemoteWorld``: an ALFWorld world served by ``server.py``, behind the same interface."""
from __future__ import annotations

from typing import Any

from harness_gym.errors import WorldError
from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.alfworld.world import TOOL, AlfWorldBase, action_of
from harness_gym.benchmarks.http_client import post_json
from harness_gym.types import StepResult, ToolCall


class RemoteWorld(AlfWorldBase):
    def __init__(self, url: str, grammar: str = "classic", timeout: float = 30.0) -> None:
        self.url, self.grammar, self.timeout = url.rstrip("/"), grammar, timeout
        self.session: str | None = None
        self._admissible: list[str] = []
        self._score = 0.0

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return post_json(self.url, path, body, timeout=self.timeout, name="alfworld")

    def reset(self, task: AlfTask) -> str:
        self.close()
        self.session = self._post("/create", {"grammar": self.grammar})["session_id"]
        out = self._post("/reset", {"session_id": self.session, "task": task.to_dict()})
        self._admissible, self._score = list(out["admissible_commands"]), 0.0
        return str(out["observation"])

    @property
    def admissible_commands(self) -> list[str]:
        return list(self._admissible)

    def step(self, call: ToolCall) -> StepResult:
        if self.session is None:
            raise WorldError("RemoteWorld.step before reset: call reset(task) first")
        action = action_of(call) if call.name == TOOL else ""
        out = self._post("/step", {"session_id": self.session, "action": action})
        self._admissible, self._score = list(out["admissible_commands"]), float(out["score"])
        return StepResult(str(out["observation"]), bool(out["done"]),
                          {"admissible_commands": self._admissible, "won": bool(out["won"])})

    @property
    def score(self) -> float:
        return self._score

    def close(self) -> None:
        if self.session is not None:
            sid, self.session = self.session, None
            try:
                self._post("/close", {"session_id": sid})
            except WorldError:
                pass
