"""The client half of ``http_server.py``: one JSON POST to a world server, failures as ``WorldError``."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from harness_gym.errors import WorldError, one_line


def post_json(base_url: str, path: str, body: dict[str, Any], *, timeout: float, name: str) -> dict[str, Any]:
    """POST ``body`` to ``base_url + path``; a dead server or an error answer raises a one-line ``WorldError``
    (the evaluator retries the episode, then reports it as incomplete)."""
    req = urllib.request.Request(base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read().decode(errors="replace")
        try:
            detail = str(json.loads(raw).get("error", raw))
        except (ValueError, AttributeError):
            detail = raw
        raise WorldError(one_line(f"{name} server {base_url}{path} answered {exc.code}: {detail[:200]}")) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WorldError(one_line(
            f"{name} server at {base_url} is unreachable ({reason}); a server you run yourself starts with "
            f"`python -m harness_gym.benchmarks.{name}.server --port PORT`; a backend='docker' container "
            f"may have exited (`harness-gym docker ls` lists those running; a new env starts one)", limit=400)) from None
