"""DBBench failure packets, following Harness-R1's DBBench evidence layout.

Deterministic: the same episodes give a byte-identical packet. Only what the agent saw
(messages, with the system prompt dropped) plus rewards and statuses are rendered;
``events`` and ``info`` are never read, so no gold data can reach the packet.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.packets.model import FailureTrace, HarnessView, Packet, clean_text
from harness_gym.packets.text import (
    call_function,
    message_text,
    sanitize,
    trace_section,
)
from harness_gym.runtime.trajectory import ENV_ERROR, EpisodeResult
from harness_gym.types import Message

BENCHMARK = "dbbench"
PASS_THRESHOLD = 1.0
MAX_MESSAGES = 22
MAX_CALLS_PER_MESSAGE = 2
ARGS_CHARS = 600
ASSISTANT_TEXT_CHARS = 500
TOOL_RESULT_CHARS = 1200
USER_CHARS = 900
OVERVIEW_CHARS = 3000

TRUNCATED = " ...[truncated]"
EVIDENCE_TRUNCATED = "\n...[evidence truncated]"

_SQL_ERROR = re.compile(
    r"\berror\b|syntax|unknown column|unknown table|no such (?:column|table)|doesn't exist"
    r"|^\s*\(?\d{4}[ ,]",
    re.IGNORECASE,
)


def _flat(text: str, cap: int) -> str:
    """Collapse whitespace, sanitize, and cut to ``cap`` chars with a marker."""
    # A pre-cut bounds the work on huge inputs; it is far above every cap.
    flat = sanitize(" ".join(text[: cap * 20].split()))
    return flat if len(flat) <= cap else flat[:cap].rstrip() + TRUNCATED


def _call_line(call: Any) -> str:
    fn = call_function(call)
    name = str(fn.get("name") or "")
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return f"ASSISTANT_TOOL {_flat(name, 80)}: {_flat(args, ARGS_CHARS)}"


def render_messages(messages: Sequence[Message], max_messages: int = MAX_MESSAGES) -> list[str]:
    """Render a conversation as capped one-line records; the system prompt is dropped."""
    shown = [m for m in messages if isinstance(m, dict) and m.get("role") != "system"]
    lines: list[str] = []
    for message in shown[:max_messages]:
        role = message.get("role")
        text = message_text(message)
        if role == "assistant":
            if text.strip():
                lines.append("ASSISTANT_TEXT: " + _flat(text, ASSISTANT_TEXT_CHARS))
            calls = message.get("tool_calls") or []
            for call in calls[:MAX_CALLS_PER_MESSAGE]:
                lines.append(_call_line(call))
            if len(calls) > MAX_CALLS_PER_MESSAGE:
                lines.append(f"...[{len(calls) - MAX_CALLS_PER_MESSAGE} more tool calls in this message]")
        elif role == "tool":
            lines.append("TOOL_RESULT: " + _flat(text, TOOL_RESULT_CHARS))
        elif role == "user" and text.strip():
            lines.append("USER: " + _flat(text, USER_CHARS))
    if len(shown) > max_messages:
        lines.append(f"...[trace truncated: {len(shown) - max_messages} more messages]")
    return lines


def trace_signals(result: EpisodeResult) -> dict[str, Any]:
    """Counts derived from the messages only (never from events or info)."""
    sql: list[str] = []
    commits = text_only = errors = empty = 0
    for message in result.messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls:
                text_only += 1
            for call in calls:
                fn = call_function(call)
                if fn.get("name") == "execute_sql":
                    sql.append(" ".join(str(fn.get("arguments", "")).split()).lower())
                elif fn.get("name") == "commit_final_answer":
                    commits += 1
        elif role == "tool":
            text = message_text(message).strip()
            if text in ("", "[]", "()"):
                empty += 1
            elif _SQL_ERROR.search(text[:400]):
                errors += 1
    repeats = Counter(sql).most_common(1)
    return {
        "sql_calls": len(sql),
        "commits": commits,
        "text_only_turns": text_only,
        "error_results": errors,
        "empty_results": empty,
        "max_same_sql": repeats[0][1] if repeats else 0,
    }


def _is_pass(result: EpisodeResult) -> bool:
    return result.reward >= PASS_THRESHOLD


def _trace(result: EpisodeResult, index: int) -> FailureTrace:
    return FailureTrace(
        task_id=result.task_id,
        index=index,
        status=sanitize(result.status),
        reward=float(result.reward),
        turns=int(result.rounds),
        messages=render_messages(result.messages),
        signals=trace_signals(result),
        task_type=sanitize(result.task_type),
    )


def _trace_block(trace: FailureTrace) -> str:
    head = f"Trace index={trace.index} status={trace.status} reward={trace.reward:.3f} turns={trace.turns}"
    signals = "signals: " + " ".join(f"{k}={v}" for k, v in trace.signals.items())
    return "\n".join([head, signals, *trace.messages])


def _overview(results: Sequence[EpisodeResult], traced: set[int]) -> str:
    lines = ["cases (batch index, task type, status, reward):"]
    for i, r in enumerate(results):
        kind = sanitize(r.task_type)
        if r.status == ENV_ERROR:
            lines.append(
                f"- index={i} type={kind} status={ENV_ERROR} reward=n/a INCOMPLETE "
                "(environment error, not an agent failure; no trace)"
            )
            continue
        verdict = "pass" if _is_pass(r) else "FAIL"
        mark = " [trace below]" if i in traced else ""
        lines.append(
            f"- index={i} type={kind} status={sanitize(r.status)} reward={r.reward:.3f} "
            f"turns={r.rounds} {verdict}{mark}"
        )
    text = "\n".join(lines)
    if len(text) > OVERVIEW_CHARS:
        marker = "\n...[overview truncated]"
        text = text[: OVERVIEW_CHARS - len(marker)].rstrip() + marker
    return text


def _evidence(
    tag: str, results: Sequence[EpisodeResult], version: str, found: int, selected: int,
    traces: list[FailureTrace], overview: str,
) -> str:
    completed = [r for r in results if r.status != ENV_ERROR]
    incomplete = len(results) - len(completed)
    passed = sum(_is_pass(r) for r in completed)
    n = len(results)
    lines = [
        f"# DBBench rollout evidence for {tag}",
        "",
        f"- task count: {n}",
        f"- batch index range: 0:{n} (0-based, batch-local)",
        f"- harness version: {version}",
        f"- baseline pass: {passed}/{n}",
        f"- incomplete (environment errors, not scored): {incomplete}",
        f"- failures found: {found}",
        f"- failures included: {len(traces)} (lowest reward first, ties by batch index)",
        "",
        "## Existing Batch Overview",
        overview,
        "",
        "## Failure Traces",
    ]
    lines += trace_section(traces, _trace_block)
    if len(traces) < selected:
        lines += ["", f"...[{selected - len(traces)} more failure traces omitted for length]"]
    return "\n".join(lines)


def build_dbbench_packet(
    results: list[EpisodeResult],
    *,
    batch_tag: str,
    batch_digest: str,
    harness: HarnessView,
    max_failures: int = 4,
    max_chars: int = 26000,
) -> Packet:
    """Build the DBBench failure packet of one baseline batch.

    ``results`` are in batch order (their position is the batch index). Failures are
    completed episodes with reward < 1.0, lowest reward first, ties by batch index, at
    most ``max_failures``; the first always stays, later ones are added while the whole
    evidence fits in ``max_chars`` (if the first alone overflows, the text is cut with a
    marker). Environment-error episodes are listed as incomplete, never traced.
    """
    if not results:
        raise ConfigError("build_dbbench_packet: expected at least one EpisodeResult, got an empty list")
    if max_failures < 1:
        raise ConfigError(f"max_failures must be >= 1, got {max_failures}")
    if max_chars < 1000:
        raise ConfigError(f"max_chars must be >= 1000 to hold a header and one trace, got {max_chars}")
    if harness.benchmark != BENCHMARK:
        raise ConfigError(
            f"build_dbbench_packet needs a '{BENCHMARK}' harness, got benchmark={harness.benchmark!r}"
        )
    tag = sanitize(" ".join(str(batch_tag).split()))[:120]
    version = str(harness.version)
    failing = [
        (r.reward, i) for i, r in enumerate(results) if r.status != ENV_ERROR and not _is_pass(r)
    ]
    order = [i for _, i in sorted(failing)][:max_failures]
    candidates = [_trace(results[i], i) for i in order]

    traces: list[FailureTrace] = []
    text = ""
    overview = ""
    # Keep the longest prefix of candidates that fits; the first is always kept.
    for k in range(len(candidates), 0, -1) or [0]:
        traces = candidates[:k]
        overview = _overview(results, {t.index for t in traces})
        text = _evidence(tag, results, version, len(failing), len(candidates), traces, overview)
        if len(text) <= max_chars:
            break
    text = clean_text(text)
    if len(text) > max_chars:
        text = text[: max_chars - len(EVIDENCE_TRUNCATED)].rstrip() + EVIDENCE_TRUNCATED

    completed = [r for r in results if r.status != ENV_ERROR]
    return Packet(
        benchmark=BENCHMARK,
        batch_tag=tag,
        task_ids=[r.task_id for r in results],
        batch_digest=str(batch_digest),
        baseline_rewards={r.task_id: float(r.reward) for r in completed},
        baseline_pass=sum(_is_pass(r) for r in completed),
        batch_size=len(results),
        harness_version=version,
        failures=traces,
        overview=overview,
        text=text,
        incomplete=[r.task_id for r in results if r.status == ENV_ERROR],
    )


build_packet = build_dbbench_packet  # the name packets.registry looks for
