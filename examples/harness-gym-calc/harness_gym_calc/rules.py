"""Template rules for calc: two failure signatures read from packet signals, one guard hook for them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SIGNATURES = ("no_lookup", "unrounded")


def detect(packet: Mapping[str, Any]) -> list[str]:
    found = set()
    for trace in packet.get("failures", []):
        s = trace.get("signals", {})
        if s.get("lookups") == 0 and s.get("calculations", 0) > 0:
            found.add("no_lookup")
        if s.get("submitted_decimals", -1) >= 0 and s.get("submitted_decimals") != s.get("requested_decimals"):
            found.add("unrounded")
    return [sig for sig in SIGNATURES if sig in found]


def build_hooks(signatures: Sequence[str]) -> dict[str, str]:
    body = []
    if "no_lookup" in signatures:
        body += ["    if ctx.action.tool in ('calculate', 'submit_answer') and ctx.predicates.no_lookup_yet:",
                 "        return {'type': 'block_and_prompt', 'message': 'Call lookup_factor for the two units "
                 "first; remembered factors are not exact.'}"]
    if "unrounded" in signatures:
        body += ["    if ctx.predicates.answer_decimals_wrong and nb.get('round_blocks', 0) < 2:",
                 "        nb['round_blocks'] = nb.get('round_blocks', 0) + 1",
                 "        return {'type': 'block_and_prompt', 'message': 'Round the answer to exactly ' + "
                 "str(ctx.task.decimals) + ' decimal places.'}"]
    if not body:
        return {}
    return {"on_before_action": "def hook(ctx, nb):\n" + "\n".join(body) + "\n    return None\n"}
