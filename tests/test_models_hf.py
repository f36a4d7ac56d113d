"""The ``hf:`` backend on a tiny model built locally: batching, parsing, budgets, seeds, the env, and its decode loop
token for token against transformers' ``generate``.

The tiny model (``harness_gym.models.tiny``) is trained in seconds to answer in Hermes
tool-call format, so these tests drive real generated text through the real parser and
the real DBBench runtime. An untrained model with grouped key/value heads gives long replies full of near ties,
where the decode loop's numbers must be ``generate``'s. Skipped without torch/transformers (failed when ``CI`` is set).
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.models.testing import need, tiny_model_dir
from harness_gym.models.toolcalls import reply_from_text
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


# --- the decode loop against transformers' generate (the reference the backend used before its own loop) ---------


@pytest.fixture(scope="session")
def random_dir(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained Llama with grouped key/value heads (4 query heads, 2 key/value): near-uniform logits, so greedy
    replies are long and full of near ties, where any numeric difference from the reference shows."""
    import torch
    import transformers

    out = tmp_path_factory.mktemp("random-gqa")
    tok = transformers.AutoTokenizer.from_pretrained(tiny_dir)
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, max_position_embeddings=8192, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    transformers.LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _conversation(k: int) -> list[dict]:
    """Multi-turn conversations of different lengths sharing a system prompt."""
    msgs = [{"role": "system", "content": "You are a SQL agent."},
            {"role": "user", "content": "Question: how many rows? " * (k + 1)}]
    for j in range(k % 3):
        msgs += [{"role": "assistant", "content": f"thinking {j} " * (j + k)},
                 {"role": "user", "content": "more " * (3 * j + 1)}]
    return msgs


def _through_stop(toks: list[int], stops: list[int]) -> list[int]:
    return next((toks[: k + 1] for k, t in enumerate(toks) if t in stops), toks)


def _reference(path: Path, backend: Any, prompts: list[list[int]], budgets: list[int],
               processors: Any = None) -> list[list[int]]:
    """Replies of one ``generate`` call on whole left-padded prompts (each cut at its budget, through its stop)."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), backend.pad_id)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, p in enumerate(prompts):
        ids[row, width - len(p):] = torch.tensor(p)
        mask[row, width - len(p):] = 1
    stops = backend.formatter.stop_ids
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max(budgets), do_sample=False,
                             num_beams=1, temperature=None, top_p=None, top_k=None, logits_processor=processors,
                             eos_token_id=stops, pad_token_id=backend.pad_id)
    return [_through_stop(row[width:][:b], stops) for row, b in zip(out.tolist(), budgets)]


def _prompts(backend: Any, reqs: list[ChatRequest]) -> tuple[list[list[int]], list[int]]:
    prompts = [backend.formatter.prompt_ids(r.messages, r.tools) for r in reqs]
    return prompts, [backend.budget(len(p), r) for p, r in zip(prompts, reqs)]


@pytest.mark.parametrize("which", ["tiny", "random"])
def test_greedy_decode_equals_generate_on_mixed_multi_turn_batches_over_two_rounds(
        which: str, request: pytest.FixtureRequest) -> None:
    """Greedy replies of the decode loop are token for token those of ``generate`` on whole left-padded prompts: rows of
    different lengths and budgets (some stop early), with the prefix cache off and on; in round two each conversation
    grows by its reply and a message, and with the cache on the rows run only their new tokens."""
    from harness_gym.models.hf import HFBackend, HFConfig

    path = request.getfixturevalue(f"{which}_dir")
    budgets = [40, 3, 17, 40, 9, 25]
    reqs = [ChatRequest(_conversation(k), TOOLS, Sampling(max_tokens=b), seed=k) for k, b in enumerate(budgets)]
    for cache in (False, True):
        backend = HFBackend(HFConfig(path=str(path), prefix_cache=cache))
        prompts, budgets = _prompts(backend, reqs)
        want = _reference(path, backend, prompts, budgets)
        assert backend._decode(prompts, reqs, budgets) == want
        stops = backend.formatter.stop_ids
        assert which == "random" or any(w[-1] in stops for w in want)  # the trained model stops on its own
        messages = backend.generate_sync(reqs)  # the same tokens, as messages
        assert messages == [reply_from_text(backend.formatter.decode(w[:-1] if w[-1] in stops else w), r.seed)
                            for w, r in zip(want, reqs)]
        second = [ChatRequest(r.messages + [m, {"role": "user", "content": f"Now try again, attempt {k}."}], TOOLS,
                              r.sampling, seed=k) for k, (r, m) in enumerate(zip(reqs, messages))]
        prompts2, budgets2 = _prompts(backend, second)
        served = backend.stats.cached_tokens
        assert backend._decode(prompts2, second, budgets2) == _reference(path, backend, prompts2, budgets2)
        if cache:  # what a row shares with its round-one prompt and reply (but the reply's last token) is not run
            from harness_gym.models.chat import leading_shared

            ran = [p + w[:-1] for p, w in zip(prompts, want)]
            shared = sum(leading_shared([p2, r], min(len(p2) - 1, len(r))) for p2, r in zip(prompts2, ran))
            assert backend.stats.cached_tokens - served == shared > 0.8 * sum(len(p) for p in prompts)


def test_stopped_rows_leave_attention(random_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row that has its reply (stop token or budget) is no longer attended: every decode step attends only the rows
    still going, and the replies are still generate's."""
    import torch

    from harness_gym.models.hf import HFBackend, HFConfig

    backend = HFBackend(HFConfig(path=str(random_dir)))
    reqs = [ChatRequest(_conversation(k), TOOLS, Sampling(max_tokens=b), seed=k) for k, b in enumerate([2, 30, 5, 12])]
    prompts, budgets = _prompts(backend, reqs)
    want = _reference(random_dir, backend, prompts, budgets)
    attended: list[int] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(query: Any, *args: Any, **kwargs: Any) -> Any:
        if query.shape[2] == 1:  # a decode step
            attended.append(query.shape[0])
        return sdpa(query, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    assert backend._decode(prompts, reqs, budgets) == want
    layers = backend.model.config.num_hidden_layers
    # each row runs a decode step for every token it generated but its last (its prompt ran in the first pass)
    assert backend.stats.decoded_rows == sum(len(w) - 1 for w in want) == sum(attended) // layers
    assert backend.stats.decode_steps == max(len(w) for w in want) - 1
    assert backend.stats.decoded_rows < backend.stats.decode_steps * len(reqs)  # generate ran every row to the end


class _GenerateSampler:
    """The backend's sampling as it ran inside ``generate`` before the decode loop: a logits processor drawing each
    sampled row's token from the row's generator (seeded by its request) and leaving it the only finite logit."""

    def __init__(self, reqs: list[ChatRequest]) -> None:
        import torch

        self.rows = [(row, r.sampling.temperature, r.sampling.top_p, torch.Generator().manual_seed(r.seed))
                     for row, r in enumerate(reqs) if r.sampling.temperature > 0]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.clone()
        for row, temp, top_p, g in self.rows:
            probs = torch.softmax(scores[row].float().cpu() / temp, dim=-1)
            if top_p < 1.0:
                sorted_p, order = torch.sort(probs, descending=True)
                sorted_p[torch.cumsum(sorted_p, 0) - sorted_p > top_p] = 0.0
                probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
            tok = int(torch.multinomial(probs, 1, generator=g))
            scores[row] = float("-inf")
            scores[row, tok] = 0.0
        return scores


def test_seeded_sampling_draws_what_it_drew_inside_generate(random_dir: Path) -> None:
    """Sampled rows (per-request seeds, temperature and top-p) beside greedy ones: the same draws as the seeded logits
    processor inside ``generate``, and the same again on a rerun."""
    from transformers import LogitsProcessorList

    from harness_gym.models.hf import HFBackend, HFConfig

    backend = HFBackend(HFConfig(path=str(random_dir)))
    samplings = [Sampling(temperature=1.5, top_p=0.9, max_tokens=20), Sampling(max_tokens=20),
                 Sampling(temperature=0.7, max_tokens=8), Sampling(temperature=1.0, top_p=0.5, max_tokens=20)]
    reqs = [ChatRequest(_conversation(k), TOOLS, s, seed=100 + k) for k, s in enumerate(samplings)]
    prompts, budgets = _prompts(backend, reqs)
    want = _reference(random_dir, backend, prompts, budgets, LogitsProcessorList([_GenerateSampler(reqs)]))
    assert backend._decode(prompts, reqs, budgets) == want
    assert backend._decode(prompts, reqs, budgets) == want
    assert want[0] != _reference(random_dir, backend, prompts, budgets)[0]  # row 0 did sample


def test_a_reply_longer_than_the_first_allocation_grows_the_cache(random_dir: Path) -> None:
    """The key/value buffers start 256 positions past the prompts; a 600-token reply grows them (a copy per growth)
    and is still ``generate``'s, beside a short row that stopped long before."""
    from harness_gym.models.hf import HFBackend, HFConfig

    backend = HFBackend(HFConfig(path=str(random_dir)))
    reqs = [ChatRequest(_conversation(k), TOOLS, Sampling(max_tokens=b), seed=k) for k, b in enumerate([600, 4])]
    prompts, budgets = _prompts(backend, reqs)
    want = _reference(random_dir, backend, prompts, budgets)
    assert len(want[0]) > 256 + 100  # the untrained model rarely stops: the reply outruns the first allocation
    assert backend._decode(prompts, reqs, budgets) == want


def test_split_batch_keeps_each_part_within_the_memory_estimate() -> None:
    """``split_batch`` on SmolLM2-135M's shape at float32: 64 WebShop histories of ~3,000 tokens (+256 reply) run as
    28 + 28 + 8 under the default 8,192 MB, 20 rows (a 10-task batch and its patched twins) run whole, ``max_batch``
    still caps rows, and a row too large for the budget runs alone rather than not at all."""
    import torch
    import transformers

    from harness_gym.models.hf import HFConfig, _kv_bytes, split_batch

    smol = transformers.LlamaConfig(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3)
    per_position = 2 * _kv_bytes(smol, torch.float32)
    assert per_position == 2 * 2 * 30 * 3 * 64 * 4
    limit = HFConfig(path="x").batch_mb * 2**20 // per_position
    assert split_batch([3256] * 64, 64, limit) == [(0, 28), (28, 56), (56, 64)]
    assert split_batch([3256] * 20, 64, limit) == [(0, 20)]
    assert split_batch([100] * 10, 4, limit) == [(0, 4), (4, 8), (8, 10)]
    # the longest row so far decides: a long row after short ones closes the part before it
    assert split_batch([10, 10, 10, 40, 10], 64, 80) == [(0, 3), (3, 5)]
    assert split_batch([500, 10, 10], 64, 80) == [(0, 1), (1, 3)]
    assert split_batch([], 64, limit) == []
    assert all(b - a <= 64 and (b - a == 1 or (b - a) * 3256 <= limit) for a, b in split_batch([3256] * 200, 64, limit))


def test_a_batch_over_batch_mb_runs_in_parts_with_each_parts_replies(random_dir: Path) -> None:
    """With a small ``batch_mb`` the backend decodes consecutive parts (stats record each), and every reply is the one
    that part's batch gives on its own; ``batch_mb=0`` is refused in one line."""
    from harness_gym.errors import ConfigError
    from harness_gym.models.factory import make_backend
    from harness_gym.models.hf import HFBackend, HFConfig, split_batch

    budgets = [12, 3, 12, 7, 12, 5]
    reqs = [ChatRequest(_conversation(k), TOOLS, Sampling(max_tokens=b), seed=k) for k, b in enumerate(budgets)]
    whole = HFBackend(HFConfig(path=str(random_dir), prefix_cache=False))
    prompts, budgets = _prompts(whole, reqs)
    per_mb = 2**20 // whole._position_bytes
    longest = max(len(p) + b for p, b in zip(prompts, budgets))
    batch_mb = -(-2 * longest // per_mb)  # room for about two of the longest rows
    parts = split_batch([len(p) + b for p, b in zip(prompts, budgets)], 64, batch_mb * per_mb)
    assert 2 < len(parts) < len(reqs) and whole.parts(prompts, reqs) == [(0, len(reqs))]
    small = HFBackend(HFConfig(path=str(random_dir), prefix_cache=False, batch_mb=batch_mb))
    assert small.parts(prompts, reqs) == parts
    got = small.generate_sync(reqs)
    assert small.stats.batch_sizes == [b - a for a, b in parts]
    stops = whole.formatter.stop_ids
    want = [reply_from_text(whole.formatter.decode(_until(w, stops)), r.seed)
            for a, b in parts for w, r in zip(whole._decode(prompts[a:b], reqs[a:b], budgets[a:b]), reqs[a:b])]
    assert got == want
    with pytest.raises(ConfigError, match="batch_mb must be >= 1"):
        make_backend(f"hf:{random_dir}?batch_mb=0")


def _until(toks: list[int], stops: list[int]) -> list[int]:
    return next((toks[:k] for k, t in enumerate(toks) if t in stops), toks)
