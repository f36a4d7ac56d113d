"""ALFWorld failure packets, following Harness-R1's direct failure trace packet (spec §1).

Failures are completed episodes with reward < 1.0, picked round robin over task types
(lowest reward first, ties by batch index), at most ``max_traces``; the first is always
kept and later ones are added while the packet stays within the budget (chars / 4 <=
12,000 tokens). Transcripts drop the system prompt and keep user messages only at index
< 3 (or with "Evaluation metadata"); assistant text is cut to 200 characters, observations
to 350 (head and tail halves around ``...[middle truncated]...``). Only messages, rewards
and statuses are read — never ``events`` or ``info`` — so no gold data reaches the packet.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.packets.text import call_function, head_tail, message_text, sanitize, trace_section, with_size_footer
from harness_gym.packets.model import FailureTrace, HarnessView, Packet, clean_text
from harness_gym.runtime.trajectory import ENV_ERROR, EpisodeResult
from harness_gym.types import Message

BENCHMARK = "alfworld"
PASS_THRESHOLD = 1.0
MAX_TRACES = 20
MAX_TOKENS = 12000
ASSISTANT_TEXT_CHARS = 200
OBSERVATION_CHARS = 350
MIDDLE = "...[middle truncated]..."
NOTHING = "nothing happens"


def _flat(text: str) -> str:
    return sanitize(" ".join(str(text).split()))


def _observation_of(text: str) -> str:
    return text.split("\nAVAILABLE ACTIONS:")[0]


def render_messages(messages: Sequence[Message]) -> list[str]:
    lines: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role, text = message.get("role"), message_text(message)
        if role == "system":
            continue
        if role == "user":
            if i < 3 or "Evaluation metadata" in text:
                head, sep, actions = text.partition("\nAVAILABLE ACTIONS:")
                lines.append("USER: " + head_tail(head, 1200, MIDDLE) + (" AVAILABLE ACTIONS: " + head_tail(actions, 300, MIDDLE) if sep else ""))
        elif role == "assistant":
            if text.strip():
                lines.append("ASSISTANT_TEXT: " + head_tail(text, ASSISTANT_TEXT_CHARS, MIDDLE))
            for call in (message.get("tool_calls") or [])[:1]:
                fn = call_function(call)
                args = fn.get("arguments", "")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                lines.append(f"ASSISTANT_TOOL: {_flat(fn.get('name', ''))} {head_tail(args, 300, MIDDLE)}")
        elif role == "tool":
            lines.append("OBSERVATION: " + head_tail(text, OBSERVATION_CHARS, MIDDLE))
    return lines


def trace_signals(result: EpisodeResult) -> dict[str, Any]:
    """Runtime signals from the messages only: actions, "Nothing happens", repeats."""
    actions: list[str] = []
    observations: list[str] = []
    text_only = 0
    for message in result.messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls:
                text_only += 1
            for call in calls[:1]:
                fn = call_function(call)
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except (ValueError, TypeError):
                    args = {}
                actions.append(" ".join(str(args.get("action", "") if isinstance(args, dict) else "").split()).lower())
        elif role == "tool":
            observations.append(" ".join(_observation_of(message_text(message)).split()))
    rep_a = Counter(actions).most_common(3)
    rep_o = Counter(observations).most_common(3)
    return {
        "take_action_calls": len(actions),
        "nothing_happens": sum(1 for o in observations if o.lower().rstrip(".") == NOTHING),
        "text_only_turns": text_only,
        "repeated_actions": ", ".join(f"{sanitize(a)[:60]!r}x{n}" for a, n in rep_a if n > 1) or "none",
        "repeated_observations": ", ".join(f"{sanitize(o)[:60]!r}x{n}" for o, n in rep_o if n > 1) or "none",
    }


def _is_pass(result: EpisodeResult) -> bool:
    return result.reward >= PASS_THRESHOLD


def _select(results: Sequence[EpisodeResult], max_traces: int) -> tuple[list[int], int]:
    failing = [i for i, r in enumerate(results) if r.status != ENV_ERROR and not _is_pass(r)]
    by_type: dict[str, list[int]] = {}
    for i in sorted(failing, key=lambda i: (results[i].reward, i)):
        by_type.setdefault(results[i].task_type, []).append(i)
    order: list[int] = []
    queues = [by_type[k] for k in sorted(by_type, key=lambda k: (results[by_type[k][0]].reward, by_type[k][0]))]
    while any(queues) and len(order) < max_traces:
        for q in queues:
            if q and len(order) < max_traces:
                order.append(q.pop(0))
    return order, len(failing)


def _block(trace: FailureTrace) -> str:
    sig = trace.signals
    lines = [
        "## Trace case",
        f"- batch_index: {trace.index}",
        f"- task_type: {trace.task_type}",
        f"- final_reward: {trace.reward:.4f}",
        f"- status: {trace.status}",
        f"- turns: {trace.turns}",
        "Runtime signals:",
        f"- take_action calls: {sig['take_action_calls']}",
        f"- \"Nothing happens\" observations: {sig['nothing_happens']}",
        f"- text-only turns: {sig['text_only_turns']}",
        f"- repeated actions: {sig['repeated_actions']}",
        f"- repeated observations: {sig['repeated_observations']}",
        "Transcript:",
        *trace.messages,
    ]
    return "\n".join(lines)


def _overview(results: Sequence[EpisodeResult], traced: set[int]) -> str:
    lines = ["cases (batch index, task type, status, reward):"]
    for i, r in enumerate(results):
        if r.status == ENV_ERROR:
            lines.append(f"- index={i} type={r.task_type} status={ENV_ERROR} reward=n/a INCOMPLETE (environment error)")
            continue
        mark = " [trace below]" if i in traced else ""
        lines.append(f"- index={i} type={r.task_type} status={sanitize(r.status)} reward={r.reward:.4f} turns={r.rounds} "
                     f"{'pass' if _is_pass(r) else 'FAIL'}{mark}")
    return "\n".join(lines)


def _text(tag: str, results: Sequence[EpisodeResult], version: str, found: int, traces: list[FailureTrace],
          overview: str) -> str:
    completed = [r for r in results if r.status != ENV_ERROR]
    body = [
        "# Harness-R1 Direct Failure Trace Packet",
        "",
        "## Scope",
        f"- bench: {BENCHMARK}",
        f"- source run: {tag} (sanitized; harness version {version})",
        f"- batch size: {len(results)}; baseline pass: {sum(_is_pass(r) for r in completed)}/{len(results)}; "
        f"incomplete (environment errors, not scored): {len(results) - len(completed)}",
        f"- failure candidates found: {found}",
        f"- traces included: {len(traces)}",
        "- selection strategy: round_robin over task types, lowest reward first",
        "",
        "## Instructions for Harness Engineer",
        "- Infer the recurring failure modes across these traces, not the quirks of a single task.",
        "- Do not use task ids, object or receptacle names tied to one task, indices, answers, or numbered ALFWorld "
        "instances (such as a receptacle with its number) in hook strings.",
        "- Prefer auditable actions: stage tracking in nb, short deduplicated hints, narrow guards.",
        "- Hard-block only when the failure is clearly observable from ctx (e.g. a put of an object that was never "
        "transformed, or of the wrong object type).",
        "",
        "## Batch Overview",
        overview,
        "",
        "## Failure Traces",
    ]
    body += trace_section(traces, _block)
    return with_size_footer("\n".join(body), len(traces))


def build_alfworld_packet(
    results: list[EpisodeResult], *, batch_tag: str, batch_digest: str, harness: HarnessView,
    max_traces: int = MAX_TRACES, max_tokens: int = MAX_TOKENS,
) -> Packet:
    if not results:
        raise ConfigError("build_alfworld_packet: expected at least one EpisodeResult, got an empty list")
    if harness.benchmark != BENCHMARK:
        raise ConfigError(f"build_alfworld_packet needs an '{BENCHMARK}' harness, got benchmark={harness.benchmark!r}")
    tag = sanitize(" ".join(str(batch_tag).split()))[:120]
    version = str(harness.version)
    order, found = _select(results, max_traces)
    candidates = [
        FailureTrace(task_id=r.task_id, index=i, status=sanitize(r.status), reward=float(r.reward), turns=int(r.rounds),
                     messages=render_messages(r.messages), signals=trace_signals(r), task_type=r.task_type)
        for i, r in ((i, results[i]) for i in order)
    ]
    traces: list[FailureTrace] = []
    for cand in candidates:
        trial = traces + [cand]
        text = _text(tag, results, version, found, trial, _overview(results, {t.index for t in trial}))
        if traces and len(text) // 4 > max_tokens:
            break
        traces = trial
    overview = _overview(results, {t.index for t in traces})
    text = clean_text(_text(tag, results, version, found, traces, overview))
    if len(text) > max_tokens * 4:
        text = text[: max_tokens * 4 - 40].rstrip() + "\n...[packet truncated]"
    completed = [r for r in results if r.status != ENV_ERROR]
    return Packet(
        benchmark=BENCHMARK, batch_tag=tag, task_ids=[r.task_id for r in results], batch_digest=str(batch_digest),
        baseline_rewards={r.task_id: float(r.reward) for r in completed}, baseline_pass=sum(_is_pass(r) for r in completed),
        batch_size=len(results), harness_version=version, failures=traces, overview=overview, text=text,
        incomplete=[r.task_id for r in results if r.status == ENV_ERROR],
    )


build_packet = build_alfworld_packet  # the name packets.registry looks for
