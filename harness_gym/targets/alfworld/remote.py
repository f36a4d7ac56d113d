"""``RemoteWorld``: an ALFWorld world served by ``server.py``, behind the same interface."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from harness_gym.errors import WorldError, one_line
from harness_gym.targets.alfworld.tasks import AlfTask
from harness_gym.targets.alfworld.world import TOOL, AlfWorldBase, action_of
from harness_gym.types import StepResult, ToolCall


class RemoteWorld(AlfWorldBase):
    def __init__(self, url: str, grammar: str = "classic", timeout: float = 30.0) -> None:
        self.url, self.grammar, self.timeout = url.rstrip("/"), grammar, timeout
        self.session: str | None = None
        self._admissible: list[str] = []
        self._score = 0.0

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("error", "")
            except ValueError:
                detail = ""
            raise WorldError(one_line(f"alfworld server {self.url}{path} answered {exc.code}: {detail}")) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise WorldError(one_line(
                f"alfworld server at {self.url} is unreachable ({reason}); start it with "
                "`python -m harness_gym.targets.alfworld.server --port PORT` or use backend='local'")) from None

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
