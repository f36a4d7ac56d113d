"""Failure packets: selection, caps, budget, determinism, sanitizing and the observation text."""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

import pytest

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.dbbench.packet import (
    ARGS_CHARS,
    ASSISTANT_TEXT_CHARS,
    MAX_MESSAGES,
    TOOL_RESULT_CHARS,
    TRUNCATED,
    USER_CHARS,
    build_dbbench_packet,
    render_messages,
)
from harness_gym.packets.hook_api import HOOKS, hook_api_text
from harness_gym.packets.model import Packet
from harness_gym.packets.prompt import MARKER, render_observation
from harness_gym.runtime.trajectory import COMPLETED, ENV_ERROR, TASK_LIMIT_REACHED, EpisodeResult

SYSTEM_SECRET = "SYSTEM-PROMPT-SHOULD-NOT-APPEAR"
GOLD = "GOLD-LABEL-SHOULD-NOT-APPEAR"


@dataclass
class FakeHarness:
    version: str = "h0-abc123"
    benchmark: str = "dbbench"

    def render(self) -> str:
        return "=== system_prompt.md ===\nYou are a SQL agent.\n\n=== config.json ===\n{}\n"


def call(cid: str, name: str, **args: object) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def conversation(n_rounds: int, *, sql: str = "SELECT * FROM `t`", result: str = "[('a', '1')]") -> list[dict]:
    msgs: list[dict] = [
        {"role": "system", "content": SYSTEM_SECRET},
        {"role": "user", "content": "The name of this table is t, headers a, b.\nQuestion: how many rows?"},
    ]
    for r in range(n_rounds):
        msgs.append({"role": "assistant", "content": f"round {r}", "tool_calls": [call(f"c{r}", "execute_sql", query=sql)]})
        msgs.append({"role": "tool", "tool_call_id": f"c{r}", "content": result})
    msgs.append({"role": "assistant", "content": "", "tool_calls": [call("cz", "commit_final_answer", answers=["1"])]})
    return msgs


def episode(i: int, reward: float, status: str = COMPLETED, msgs: list[dict] | None = None) -> EpisodeResult:
    return EpisodeResult(
        task_id=f"dbbench-{i:04d}",
        task_identity=f"id{i}",
        task_type="counting" if i % 2 else "UPDATE",
        harness_version="h0-abc123",
        seed=0,
        reward=reward,
        success=reward >= 1.0,
        status=status,
        rounds=len(msgs or []) // 2,
        messages=msgs if msgs is not None else conversation(2),
        events=[{"kind": "step", "round": 0, "tool": "execute_sql", "arguments": {}, "observation": GOLD}],
        info={"label": GOLD, "reference_sql": GOLD},
    )


def batch() -> list[EpisodeResult]:
    """10 tasks: 3 passes, 6 agent failures (mixed statuses), 1 environment error."""
    long_sql = "SELECT " + ", ".join(f"`col_{k}`" for k in range(400)) + " FROM `t`"
    many = conversation(30)
    huge_tool = conversation(2, result="[" + ", ".join(f"('v{k}',)" for k in range(3000)) + "]")
    ids_paths = conversation(1, result="Product B0ABCDEFGH found in /home/alice/data.csv and /tmp/x")
    return [
        episode(0, 1.0),
        episode(1, 0.0, TASK_LIMIT_REACHED, many),
        episode(2, 0.0, msgs=conversation(2, sql=long_sql)),
        episode(3, 1.0),
        episode(4, 0.0, ENV_ERROR),
        episode(5, 0.5, msgs=huge_tool),
        episode(6, 0.0, msgs=ids_paths),
        episode(7, 1.0),
        episode(8, 0.9),
        episode(9, 0.0, "agent_invalid_action"),
    ]


def build(results: list[EpisodeResult] | None = None, **kw: object) -> Packet:
    return build_dbbench_packet(
        results if results is not None else batch(), batch_tag="test_b000", batch_digest="d" * 64,
        harness=FakeHarness(), **kw  # type: ignore[arg-type]
    )


def assert_clean(text: str) -> None:
    bad = [c for c in text if c not in "\n\t" and unicodedata.category(c)[0] == "C"]
    assert not bad, f"control characters left: {bad[:5]!r}"


def test_selects_at_most_four_lowest_reward_first_ties_by_index() -> None:
    packet = build()
    # zero-reward agent failures are 1, 2, 6, 9 (4 is an env error); 0.5 and 0.9 come later
    assert [t.index for t in packet.failures] == [1, 2, 6, 9]
    assert [t.reward for t in packet.failures] == sorted(t.reward for t in packet.failures)
    assert packet.baseline_pass == 3 and packet.batch_size == 10
    assert "- baseline pass: 3/10" in packet.text
    assert "- failures found: 6" in packet.text
    assert "- failures included: 4" in packet.text


def test_max_failures_parameter() -> None:
    packet = build(max_failures=2)
    assert [t.index for t in packet.failures] == [1, 2]


def test_env_error_is_incomplete_not_a_trace() -> None:
    packet = build()
    assert packet.incomplete == ["dbbench-0004"]
    assert all(t.index != 4 for t in packet.failures)
    assert "Trace index=4 " not in packet.text
    assert "index=4 type=UPDATE status=env_error reward=n/a INCOMPLETE" in packet.overview
    assert "dbbench-0004" not in packet.baseline_rewards
    assert "- incomplete (environment errors, not scored): 1" in packet.text


def test_no_system_message_and_no_gold_data() -> None:
    packet = build()
    assert SYSTEM_SECRET not in packet.text
    assert GOLD not in json.dumps(packet.to_dict())
    assert all(not line.startswith("SYSTEM") for t in packet.failures for line in t.messages)


def test_message_caps() -> None:
    long_text = "word " * 2000
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": long_text},
        {"role": "assistant", "content": long_text,
         "tool_calls": [call(f"c{k}", "execute_sql", query="SELECT " + "x" * 5000) for k in range(3)]},
        {"role": "tool", "tool_call_id": "c0", "content": long_text},
    ]
    lines = render_messages(msgs)
    by_kind = {}
    for line in lines:
        by_kind.setdefault(line.split(":", 1)[0].split(" ")[0], []).append(line)
    assert len(by_kind["ASSISTANT_TOOL"]) == 2
    user = by_kind["USER"][0][len("USER: "):]
    assert len(user) <= USER_CHARS + len(TRUNCATED) and user.endswith(TRUNCATED)
    text = by_kind["ASSISTANT_TEXT"][0][len("ASSISTANT_TEXT: "):]
    assert len(text) <= ASSISTANT_TEXT_CHARS + len(TRUNCATED)
    tool = by_kind["TOOL_RESULT"][0][len("TOOL_RESULT: "):]
    assert len(tool) <= TOOL_RESULT_CHARS + len(TRUNCATED)
    args = by_kind["ASSISTANT_TOOL"][0].split(": ", 1)[1]
    assert len(args) <= ARGS_CHARS + len(TRUNCATED) and args.endswith(TRUNCATED)
    assert all("  " not in line and "\n" not in line for line in lines)


def test_at_most_22_messages_per_trace() -> None:
    packet = build()
    trace = next(t for t in packet.failures if t.index == 1)  # 30 rounds = 62 non-system messages
    assert trace.messages[-1].startswith("...[trace truncated")
    rendered = render_messages(conversation(30))
    assert sum(1 for line in rendered if line.startswith(("USER", "TOOL_RESULT", "ASSISTANT_TEXT"))) <= MAX_MESSAGES
    assert "round 10" in rendered[-2] or "round 10" in " ".join(rendered)
    assert "round 11" not in " ".join(rendered)


def test_evidence_budget_with_huge_inputs() -> None:
    giant = "z" * 200_000
    results = []
    for i in range(10):
        msgs = [{"role": "system", "content": "s"}]
        for r in range(40):
            msgs.append({"role": "assistant", "content": giant, "tool_calls": [call(f"c{r}", "execute_sql", query=giant)] * 4})
            msgs.append({"role": "tool", "tool_call_id": f"c{r}", "content": giant})
            msgs.append({"role": "user", "content": giant})
        results.append(episode(i, 0.0, msgs=msgs))
    packet = build(results)
    assert len(packet.text) <= 26000
    assert packet.failures and packet.failures[0].index == 0  # the first trace is always kept
    assert "Trace index=0 " in packet.text
    small = build(results, max_chars=3000)
    assert len(small.text) <= 3000
    assert small.text.endswith("...[evidence truncated]")
    assert len(small.failures) == 1


def test_traces_added_until_next_would_overflow() -> None:
    full = build()
    assert len(full.text) <= 26000
    first_two = full.text.index("Trace index=6 ")  # third trace starts here
    tight = build(max_chars=first_two + 100)
    assert [t.index for t in tight.failures] == [1, 2]
    assert "more failure traces omitted for length" in tight.text
    assert len(tight.text) <= first_two + 100


def test_overview_lists_all_cases() -> None:
    packet = build()
    assert len(packet.overview) <= 3000
    for i in range(10):
        assert f"- index={i} " in packet.overview
    assert "## Existing Batch Overview" in packet.text


def test_deterministic_byte_identical() -> None:
    a, b = build(), build()
    assert a.text.encode() == b.text.encode()
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a.digest() == b.digest()
    obs_a = render_observation(a, FakeHarness())
    obs_b = render_observation(b, FakeHarness())
    assert obs_a.encode() == obs_b.encode()


def test_sanitizing() -> None:
    packet = build()
    assert "B0ABCDEFGH" not in packet.text and "[PRODUCT_ID]" in packet.text
    assert "/home/alice" not in packet.text and "/tmp/x" not in packet.text
    assert "[PATH]" in packet.text


def test_control_characters_stripped() -> None:
    msgs = conversation(1, result="a\x00b\x07c\x1bd\u200be\ud800f\r\ng")
    msgs[1]["content"] = "Question:\x00 count\x0c rows\u2028now"
    packet = build([episode(0, 0.0, msgs=msgs)])
    assert_clean(packet.text)
    assert "abcdef g" in packet.text
    obs = render_observation(packet, FakeHarness())
    assert_clean(obs)


def test_packet_is_json_able() -> None:
    data = build().to_dict()
    again = json.loads(json.dumps(data))
    assert again["benchmark"] == "dbbench" and again["batch_tag"] == "test_b000"
    assert again["task_ids"][0] == "dbbench-0000" and len(again["task_ids"]) == 10
    assert again["baseline_rewards"]["dbbench-0005"] == 0.5
    assert again["harness_version"] == "h0-abc123" and again["batch_digest"] == "d" * 64
    assert set(again["failures"][0]) == {"task_id", "index", "status", "reward", "turns", "messages", "signals", "task_type"}


def test_signals_come_from_messages() -> None:
    trace = build().failures[0]
    assert trace.signals["sql_calls"] == 30 and trace.signals["commits"] == 1
    assert trace.signals["max_same_sql"] == 30


def test_all_pass_batch_has_no_traces() -> None:
    packet = build([episode(i, 1.0) for i in range(3)])
    assert packet.failures == [] and "no failure traces" in packet.text


def test_bad_arguments_raise_config_error() -> None:
    with pytest.raises(ConfigError):
        build([])
    with pytest.raises(ConfigError):
        build(max_failures=0)
    with pytest.raises(ConfigError):
        build_dbbench_packet(batch(), batch_tag="t", batch_digest="d", harness=FakeHarness(benchmark="webshop"))


def test_observation_structure() -> None:
    packet = build()
    obs = render_observation(packet, FakeHarness())
    assert obs.count(MARKER) == 1
    prefix, evidence = obs.split(MARKER)
    assert evidence.strip() == packet.text.strip()
    assert "not task answers" in prefix
    assert "<think>" in prefix and "<patch>" in prefix and "harness-r1-patch-v1" in prefix
    assert "add_code_hook" in prefix and "unified diff" in prefix
    assert hook_api_text("dbbench") in prefix
    assert "## DBBench Runtime Context" in prefix and 'no ctx["world"]' in prefix
    assert "=== system_prompt.md ===" in prefix and "h0-abc123" in prefix


def test_observation_rejects_mismatched_harness() -> None:
    with pytest.raises(ConfigError):
        render_observation(build(), FakeHarness(version="other"))


def test_example_patch_in_prompt_is_valid_json() -> None:
    obs = render_observation(build(), FakeHarness())
    block = obs.split("<patch>\n", 1)[1].split("\n</patch>", 1)[0]
    patch = json.loads(block)
    assert patch["benchmark"] == "dbbench" and patch["schema_version"] == "harness-r1-patch-v1"
    assert {a["hook"] for a in patch["actions"]} <= set(HOOKS)
    from harness_gym.harness.policy import check_hook_code

    for action in patch["actions"]:
        assert check_hook_code(action["code"], "dbbench", point=action["hook"]) == [(action["hook"], "hook")]


def test_hook_api_text_contents() -> None:
    text = hook_api_text("dbbench")
    for hook in HOOKS:
        assert f"`{hook}`" in text
    for name in (
        "h2_blocked_reason", "commit_gate_reason", "candidate_implausible", "remaining_rounds",
        "answer_shape", "target_table", "sql_history_raw", "discovered_columns", "db_response",
        "commit_before_sql", "commit_empty_answer", "mutation_not_attempted", "unknown_column_error",
        "repeated_sql", "candidate_answer_available", "remaining_rounds_low", "text_only_loop",
    ):
        assert name in text, name
    assert '"type": "block_and_prompt"' in text and '"type": "inject_hint"' in text
    assert "SequenceMatcher" in text and "except Exception" in text
    assert "table" in text and "cell values" in text


def test_hook_api_text_unknown_benchmark() -> None:
    with pytest.raises(ConfigError, match="expected one of"):
        hook_api_text("minecraft")
