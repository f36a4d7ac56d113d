"""Calc failure packets: the failed episodes' transcripts and signals, from what the agent saw only."""
from __future__ import annotations

import json

from harness_gym.benchmarks.api import ENV_ERROR, EpisodeResult, FailureTrace, Packet, clean_text

MAX_TRACES = 10


def _lines(result: EpisodeResult) -> list[str]:
    lines = []
    for m in result.messages[1:]:  # the system prompt is the harness, shown separately
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                lines.append(f"ASSISTANT_TOOL: {c['function']['name']} {c['function']['arguments']}")
        else:
            lines.append(f"{str(m.get('role')).upper()}: {' '.join(str(m.get('content') or '').split())[:300]}")
    return lines


def _answer(call: dict) -> str:
    try:
        args = json.loads(call["function"]["arguments"])
    except (ValueError, TypeError):
        return ""
    return str(args.get("answer", "")) if isinstance(args, dict) else ""


def _signals(result: EpisodeResult) -> dict[str, int]:
    names = [c["function"]["name"] for m in result.messages if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []]
    answers = [_answer(c) for m in result.messages
               if m.get("role") == "assistant" for c in m.get("tool_calls") or [] if c["function"]["name"] == "submit_answer"]
    asked = str(result.messages[1].get("content", "")).split("exactly ")[-1].split(" ")[0] if len(result.messages) > 1 else ""
    return {"lookups": names.count("lookup_factor"), "calculations": names.count("calculate"),
            "submitted_decimals": len(str(answers[-1]).partition(".")[2]) if answers else -1,
            "requested_decimals": int(asked) if asked.isdigit() else -1}


def build_packet(results: list[EpisodeResult], *, batch_tag: str, batch_digest: str, harness: object) -> Packet:
    done = [r for r in results if r.status != ENV_ERROR]
    failing = sorted((r.reward, i) for i, r in enumerate(results) if r.status != ENV_ERROR and r.reward < 1.0)
    traces = [FailureTrace(results[i].task_id, i, results[i].status, results[i].reward, results[i].rounds,
                           _lines(results[i]), _signals(results[i]), results[i].task_type) for _, i in failing[:MAX_TRACES]]
    passed = sum(r.reward >= 1.0 for r in done)
    overview = f"passed {passed}/{len(done)}; failed {len(failing)}; environment errors {len(results) - len(done)}"
    body = [f"# Calc failure packet ({batch_tag})", "", "## Batch Overview", overview, "", "## Failure Traces"]
    for t in traces:
        body += ["", f"### Trace {t.index} ({t.task_type}, reward {t.reward:.1f}, {t.status}, {t.turns} turns)",
                 f"signals: {json.dumps(t.signals, sort_keys=True)}", *t.messages]
    if not traces:
        body += ["", "(no failure traces: every completed task passed)"]
    return Packet(benchmark="calc", batch_tag=batch_tag, task_ids=[r.task_id for r in results],
                  batch_digest=batch_digest, baseline_rewards={r.task_id: float(r.reward) for r in done},
                  baseline_pass=passed, batch_size=len(results), harness_version=str(getattr(harness, "version")),
                  failures=traces, overview=overview, text=clean_text("\n".join(body)),
                  incomplete=[r.task_id for r in results if r.status == ENV_ERROR])
