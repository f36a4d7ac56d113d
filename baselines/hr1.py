"""Writing Harness-R1 patch text (``<think>…</think><patch>{…}</patch>``)."""
from __future__ import annotations

import json


def harness_r1_patch(benchmark: str, description: str, hooks: dict[str, str], think: str = "") -> str:
    body = {
        "schema_version": "harness-r1-patch-v1",
        "benchmark": benchmark,
        "description": description,
        "actions": [{"type": "add_code_hook", "hook": point, "code": code} for point, code in hooks.items()],
    }
    return f"<think>\n{think or description}\n</think>\n<patch>{json.dumps(body, indent=1)}</patch>"
