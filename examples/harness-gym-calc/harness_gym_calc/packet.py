"""Calc failure packets: failed episodes' transcripts and signals, from what the agent saw only."""
from __future__ import annotations

import json
from typing import Any

from harness_gym.benchmarks.api import ENV_ERROR, EpisodeResult, FailureTrace, Packet, clean_text


def _calls(result: EpisodeResult) -> list[dict[str, Any]]:
    return [c["function"] for m in result.messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]


def _trace(r: EpisodeResult, index: int) -> FailureTrace:
    lines: list[str] = []
    for m in r.messages[1:]:  # the system prompt is the harness, shown separately
        lines += [f"ASSISTANT_TOOL: {c['function']['name']} {c['function']['arguments']}" for c in m.get("tool_calls") or []]
        if m.get("role") != "assistant":
            lines.append(f"{str(m.get('role')).upper()}: {' '.join(str(m.get('content') or '').split())[:300]}")
    names = [c["name"] for c in _calls(r)]
    try:
        answer = str(json.loads([c for c in _calls(r) if c["name"] == "submit_answer"][-1]["arguments"])["answer"])
    except (IndexError, ValueError, TypeError, KeyError):
        answer = None
    asked = str(r.messages[1].get("content", "")).split("exactly ")[-1].split(" ")[0] if len(r.messages) > 1 else ""
    signals = {"lookups": names.count("lookup_factor"), "calculations": names.count("calculate"),
               "submitted_decimals": len(answer.partition(".")[2]) if answer is not None else -1,
               "requested_decimals": int(asked) if asked.isdigit() else -1}
    return FailureTrace(r.task_id, index, r.status, r.reward, r.rounds, lines, signals, r.task_type)


def build_packet(results: list[EpisodeResult], *, batch_tag: str, batch_digest: str, harness: Any) -> Packet:
    done = [r for r in results if r.status != ENV_ERROR]
    failing = sorted((r.reward, i) for i, r in enumerate(results) if r.status != ENV_ERROR and r.reward < 1.0)
    traces = [_trace(results[i], i) for _, i in failing[:10]]
    passed = sum(r.reward >= 1.0 for r in done)
    overview = f"passed {passed}/{len(done)}; failed {len(failing)}; environment errors {len(results) - len(done)}"
    body = [f"# Calc failure packet ({batch_tag})", "", "## Batch Overview", overview, "", "## Failure Traces"]
    body += [] if traces else ["", "(no failure traces: every completed task passed)"]
    for t in traces:
        body += ["", f"### Trace {t.index} ({t.task_type}, reward {t.reward:.1f}, {t.status}, {t.turns} turns)",
                 f"signals: {json.dumps(t.signals, sort_keys=True)}", *t.messages]
    return Packet(benchmark="calc", batch_tag=batch_tag, task_ids=[r.task_id for r in results],
                  batch_digest=batch_digest, baseline_rewards={r.task_id: float(r.reward) for r in done},
                  baseline_pass=passed, batch_size=len(results), harness_version=str(harness.version),
                  failures=traces, overview=overview, text=clean_text("\n".join(body)),
                  incomplete=[r.task_id for r in results if r.status == ENV_ERROR])
