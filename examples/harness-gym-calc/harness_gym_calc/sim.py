"""The simulated calc agent: right most of the time, with two documented flaws a harness can fix.

1. ``no_lookup``: in about 35% of episodes it trusts a remembered rule of thumb (1 mile ~ 1.6 km,
   F ~ 2C + 30) instead of calling ``lookup_factor``, and the answer comes out wrong.
2. ``unrounded``: in about 35% of episodes it submits the calculator's raw result, ignoring the
   decimals the question asks for (the checker wants them exactly).

Flaws are fixed per (task, episode seed), so baseline and patched runs pair. Harness text
beyond the question (skills, hints, block messages) switches them off: one mentioning
``lookup_factor`` makes it look up; one mentioning rounding or "decimal places" makes it round.
"""
from __future__ import annotations

import hashlib
from typing import Any

from harness_gym.benchmarks.api import ChatRequest, Message, ToolCall
from harness_gym_calc.tasks import CONVERSIONS

FLAW_SHARE = 35  # percent of episodes showing each flaw


def _said(messages: list[Message]) -> str:
    """What the harness told the agent: the system prompt's added tips, hints and block messages."""
    texts = [str(m.get("content") or "") for i, m in enumerate(messages)
             if (m.get("role") == "user" and i > 1) or (m.get("role") == "tool" and "Blocked" in str(m.get("content")))]
    system = str(messages[0].get("content") or "") if messages else ""
    texts.append(system.partition("Some tips that may help for this task:")[2])
    return " ".join(texts).lower()


def respond(request: ChatRequest) -> Message:
    task: Any = request.knowledge
    h = hashlib.sha256(f"{task.identity()}:{request.meta.get('episode_seed', 0)}".encode()).digest()
    said = _said(request.messages)
    guesses = h[0] * 100 // 256 < FLAW_SHARE and "lookup_factor" not in said
    sloppy = h[1] * 100 // 256 < FLAW_SHARE and "round" not in said and "decimal places" not in said
    names = [c["function"]["name"] for m in request.messages if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []]
    results = [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]
    done = [(name, r) for name, r in zip(names, results) if not r.startswith("Blocked")]  # calls that ran
    last_lookup = max((i for i, (name, _) in enumerate(done) if name == "lookup_factor"), default=-1)
    calc_after = any(name == "calculate" for name, _ in done[last_lookup + 1:])
    exact, rough = CONVERSIONS[(task.from_unit, task.to_unit)][1:]
    n = len(names)
    if last_lookup < 0 and not guesses:
        call = ToolCall(f"call_{n}", "lookup_factor", {"from_unit": task.from_unit, "to_unit": task.to_unit})
    elif not calc_after:
        formula = exact if last_lookup >= 0 else rough
        call = ToolCall(f"call_{n}", "calculate", {"expression": formula.format(x=f"{task.value:g}")})
    else:
        raw = next(r for name, r in reversed(done) if name == "calculate")
        answer = raw if sloppy or not raw.replace(".", "", 1).lstrip("-").isdigit() else f"{float(raw):.{task.decimals}f}"
        call = ToolCall(f"call_{n}", "submit_answer", {"answer": answer})
    return {"role": "assistant", "content": "", "tool_calls": [call.to_message_call()]}
