"""WebShop failure packets, following Harness-R1's direct failure-trace packet (spec §1).

Failures are completed episodes with reward < 1.0 (partial scores count), lowest reward
first (ties by batch index), at most 20 traces; traces are added while the packet stays
within 18,000 tokens (chars / 4), the first always kept. Each trace shows the final
reward, status, turns, runtime signals counted from the messages, and the transcript:
system prompt dropped, user messages kept only at index < 3, ``ASSISTANT_TOOL: name
{raw args}``, ``ASSISTANT_TEXT`` ≤ 600 chars, ``OBSERVATION`` ≤ 1,200 chars (head and tail
halves). Product ids are masked as ``[PRODUCT_ID]`` and local paths as ``[PATH]``.
Deterministic; ``events`` and ``info`` are never read, so no gold data reaches the packet.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.packets.text import call_function, head_tail, message_text, sanitize, trace_section, with_size_footer
from harness_gym.packets.model import FailureTrace, HarnessView, Packet, clean_text
from harness_gym.runtime.trajectory import ENV_ERROR, TASK_LIMIT_REACHED, EpisodeResult
from harness_gym.types import Message

BENCHMARK = "webshop"
PASS_THRESHOLD = 1.0
MAX_TRACES = 20
MAX_TOKENS = 18000
ASSISTANT_TEXT_CHARS = 600
OBSERVATION_CHARS = 1200
MIDDLE = " ...[middle truncated]... "


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _cap(text: str, cap: int) -> str:
    flat = sanitize(_one_line(text[: cap * 20]))
    return flat if len(flat) <= cap else flat[: cap - 3].rstrip() + "..."


def render_messages(messages: Sequence[Message]) -> list[str]:
    lines: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role, text = message.get("role"), message_text(message)
        if role == "system":
            continue
        if role == "assistant":
            if text.strip():
                lines.append("ASSISTANT_TEXT: " + _cap(text, ASSISTANT_TEXT_CHARS))
            for call in message.get("tool_calls") or []:
                fn = call_function(call)
                args = fn.get("arguments", "")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                lines.append(f"ASSISTANT_TOOL: {sanitize(str(fn.get('name') or ''))} {_cap(args, ASSISTANT_TEXT_CHARS)}")
        elif role == "tool" or (role == "user" and (i < 3 or "Evaluation metadata" in text)):
            if text.strip():
                lines.append("OBSERVATION: " + head_tail(text, OBSERVATION_CHARS, MIDDLE))
    return lines


def trace_signals(result: EpisodeResult) -> dict[str, Any]:
    """Counts from the messages only: actions, searches, clicks, buys, text-only turns, repeats."""
    searches: list[str] = []
    clicks: list[str] = []
    text_only = 0
    for message in result.messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        if not calls:
            text_only += 1
            continue
        fn = call_function(calls[0])
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {}
        value = " ".join(str(next(iter(args.values()), "")).lower().split()) if isinstance(args, dict) and args else ""
        if fn.get("name") == "search_action":
            searches.append(value)
        elif fn.get("name") == "click_action":
            clicks.append(value)
    repeats = [(f"search[{k}]", n) for k, n in Counter(searches).items() if n > 1]
    repeats += [(f"click[{k}]", n) for k, n in Counter(clicks).items() if n > 1]
    repeats.sort(key=lambda kv: (-kv[1], kv[0]))
    return {
        "total_actions": len(searches) + len(clicks),
        "searches": len(searches),
        "clicks": len(clicks),
        "buy_now": sum(1 for c in clicks if c == "buy now"),
        "text_only_turns": text_only,
        "repeated": ", ".join(f"{sanitize(k)} x{n}" for k, n in repeats[:3]) or "none",
        "task_limit_reached": result.status == TASK_LIMIT_REACHED,
    }


def _trace(result: EpisodeResult, index: int) -> FailureTrace:
    return FailureTrace(task_id=result.task_id, index=index, status=sanitize(result.status), reward=float(result.reward),
                        turns=int(result.rounds), messages=render_messages(result.messages),
                        signals=trace_signals(result), task_type=sanitize(result.task_type))


def _trace_block(trace: FailureTrace) -> str:
    s = trace.signals
    return "\n".join([
        "## Trace case",
        f"- final_reward: {trace.reward:.4f}",
        f"- status: {trace.status}",
        f"- turns: {trace.turns}",
        "- Runtime signals:",
        f"  - actions: {s['total_actions']} (searches {s['searches']}, clicks {s['clicks']}, buy now {s['buy_now']})",
        f"  - text-only turns: {s['text_only_turns']}",
        f"  - repeated searches or clicks: {s['repeated']}",
        f"  - task_limit_reached: {str(s['task_limit_reached']).lower()}",
        "",
        *trace.messages,
    ])


def _overview(results: Sequence[EpisodeResult], traced: set[int]) -> str:
    lines = ["cases (batch index, status, reward):"]
    for i, r in enumerate(results):
        if r.status == ENV_ERROR:
            lines.append(f"- index={i} status={ENV_ERROR} reward=n/a INCOMPLETE (environment error, not an agent failure)")
            continue
        mark = " [trace below]" if i in traced else ""
        lines.append(f"- index={i} status={sanitize(r.status)} reward={r.reward:.4f} "
                     f"{'pass' if r.reward >= PASS_THRESHOLD else 'FAIL'}{mark}")
    return "\n".join(lines)


def _text(tag: str, results: Sequence[EpisodeResult], found: int, traces: list[FailureTrace], overview: str) -> str:
    completed = [r for r in results if r.status != ENV_ERROR]
    body = [
        "# Harness-R1 Direct Failure Trace Packet",
        "",
        "## Scope",
        f"- bench: {BENCHMARK}",
        f"- source run: {tag} (sanitized)",
        f"- tasks: {len(results)}; baseline pass: {sum(r.reward >= PASS_THRESHOLD for r in completed)}/{len(results)}; "
        f"incomplete (environment errors, not scored): {len(results) - len(completed)}",
        f"- failure candidates found (reward < 1.0): {found}",
        f"- traces included: {len(traces)}",
        "- strategy: lowest reward first, ties by batch index",
        "",
        "## Instructions for Harness Engineer",
        "- Infer the recurring failure modes across these traces, not one task's answer.",
        "- Never write product ids, product names or titles, task indices or answers into the patch.",
        "- Prefer auditable actions: narrow guards and short, de-duplicated hints.",
        "- Hard-block only when the condition is clearly observable from ctx.",
        "",
        "## Batch Overview",
        overview,
        "",
        "## Failure Traces",
    ]
    body += trace_section(traces, _trace_block)
    return with_size_footer("\n".join(body), len(traces))


def build_webshop_packet(results: list[EpisodeResult], *, batch_tag: str, batch_digest: str, harness: HarnessView,
                         max_traces: int = MAX_TRACES, max_tokens: int = MAX_TOKENS) -> Packet:
    """Build the WebShop failure packet of one baseline batch (results in batch order)."""
    if not results:
        raise ConfigError("build_webshop_packet: expected at least one EpisodeResult, got an empty list")
    if max_traces < 1 or max_tokens < 500:
        raise ConfigError(f"max_traces must be >= 1 and max_tokens >= 500, got {max_traces} and {max_tokens}")
    if harness.benchmark != BENCHMARK:
        raise ConfigError(f"build_webshop_packet needs a '{BENCHMARK}' harness, got benchmark={harness.benchmark!r}")
    tag = sanitize(" ".join(str(batch_tag).split()))[:120]
    failing = sorted((r.reward, i) for i, r in enumerate(results) if r.status != ENV_ERROR and r.reward < PASS_THRESHOLD)
    candidates = [_trace(results[i], i) for _, i in failing[:max_traces]]
    traces: list[FailureTrace] = []
    text = _text(tag, results, len(failing), [], _overview(results, set()))
    for k in range(1, len(candidates) + 1):
        trial = _text(tag, results, len(failing), candidates[:k], _overview(results, {t.index for t in candidates[:k]}))
        if k > 1 and len(trial) > max_tokens * 4:
            break
        traces, text = candidates[:k], trial
    completed = [r for r in results if r.status != ENV_ERROR]
    return Packet(
        benchmark=BENCHMARK, batch_tag=tag, task_ids=[r.task_id for r in results], batch_digest=str(batch_digest),
        baseline_rewards={r.task_id: float(r.reward) for r in completed},
        baseline_pass=sum(r.reward >= PASS_THRESHOLD for r in completed), batch_size=len(results),
        harness_version=str(harness.version), failures=traces,
        overview=_overview(results, {t.index for t in traces}), text=clean_text(text),
        incomplete=[r.task_id for r in results if r.status == ENV_ERROR],
    )


build_packet = build_webshop_packet  # the name packets.registry looks for
