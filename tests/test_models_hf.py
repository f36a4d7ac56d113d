"""The ``hf:`` backend on a tiny model built locally: batching, parsing, budgets, seeds, the env.

The tiny model (``harness_gym.models.tiny``) is trained in seconds to answer in Hermes
tool-call format, so these tests drive real generated text through the real parser and
the real DBBench runtime. Skipped without torch/transformers (failed when ``CI`` is set).
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.models.testing import need, tiny_model_dir
from harness_gym.types import tool_calls_of

TOOLS = json.loads((Path(harness_gym.__file__).parent / "benchmarks" / "dbbench" / "harness" / "tools.json").read_text())


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("torch", "transformers", "tokenizers")
    return tiny_model_dir(tmp_path_factory.getbasetemp().parent / "harness-gym-models")


@pytest.fixture(scope="session")
def tiny_hf(tiny_dir: Path):  # type: ignore[no-untyped-def]
    from harness_gym.models.factory import make_backend

    return make_backend(f"hf:{tiny_dir}?max_tokens=64")


def _req(question: str, seed: int, sampling: Sampling = Sampling(), after_sql: bool = False) -> ChatRequest:
    msgs = [{"role": "system", "content": "You are a SQL agent."}, {"role": "user", "content": question}]
    if after_sql:
        msgs += [{"role": "assistant", "content": "", "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "execute_sql", "arguments": '{"query": "SELECT 1"}'}}]},
            {"role": "tool", "tool_call_id": "c0", "name": "execute_sql", "content": "[('7',)]"}]
    return ChatRequest(msgs, TOOLS, sampling, seed)


def test_batched_left_padded_generation_gives_structured_tool_calls(tiny_hf) -> None:  # type: ignore[no-untyped-def]
    reqs = [_req("Question: " + "how many rows? " * k, seed=k, after_sql=bool(k % 2)) for k in range(6)]
    before = tiny_hf.stats.batches
    batched = asyncio.run(tiny_hf.generate(reqs))
    assert tiny_hf.stats.batches == before + 1 and tiny_hf.stats.batch_sizes[-1] == 6
    names = [[c.name for c in tool_calls_of(m)] for m in batched]
    assert names == [["commit_final_answer"]] * 6
    # left padding does not change a greedy answer: one at a time gives the same messages
    alone = [asyncio.run(tiny_hf.generate([r]))[0] for r in reqs[:2]]
    assert alone == batched[:2]


def test_budgets_and_context_overflow_become_text_only_turns(tiny_hf) -> None:  # type: ignore[no-untyped-def]
    short = _req("Question: x?", seed=1, sampling=Sampling(max_tokens=4))
    tokens_before = tiny_hf.stats.completion_tokens
    (msg,) = asyncio.run(tiny_hf.generate([short]))
    assert tiny_hf.stats.completion_tokens - tokens_before <= 4
    assert "tool_calls" not in msg  # a call cut at 4 tokens is not parseable: a text-only turn
    huge = _req("word " * 20_000, seed=2)  # longer than the model's context
    (msg,) = asyncio.run(tiny_hf.generate([huge]))
    assert msg == {"role": "assistant", "content": ""}


def test_sampling_is_seeded_per_request(tiny_hf) -> None:  # type: ignore[no-untyped-def]
    hot = Sampling(temperature=5.0, max_tokens=12)
    a = asyncio.run(tiny_hf.generate([_req("Question: a?", seed=s, sampling=hot) for s in (11, 12, 13, 14)]))
    b = asyncio.run(tiny_hf.generate([_req("Question: a?", seed=s, sampling=hot) for s in (11, 12, 13, 14)]))
    assert a == b  # same seeds, same draws, whatever the batch
    assert len({m["content"] for m in a}) > 1  # different seeds, different draws


def test_env_runs_dbbench_episodes_on_hf_globally_batched_and_reproducible(tiny_dir: Path) -> None:
    target = f"hf:{tiny_dir}?max_tokens=64"
    results = []
    for _run in range(2):
        env = gym.make("HarnessEdit-DBBench-v0", target=target, batch_size=6)
        try:
            _obs, info = env.reset(seed=3)
            rep = env.unwrapped.report()
            # 6 concurrent episodes share model calls: fewer batches than requests
            assert rep["model_requests"] >= 6 and rep["model_batches"] < rep["model_requests"]
            assert max(env.unwrapped.evaluator.backend.stats.batch_sizes) == 6
            hint = "def make_pre_hint(ctx, nb):\n    return {'message': 'Always call execute_sql first.'}\n"
            outs = env.unwrapped.evaluate_patches([hint, hint, "<patch>not json"])
            assert [o["patch_valid"] for o in outs] == [True, True, False]
            results.append((info["baseline_score"], info["packet"], [o.get("reward") for o in outs]))
        finally:
            env.close()
    assert results[0] == results[1]  # temperature 0: identical across runs
