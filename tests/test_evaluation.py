"""Evaluation: concurrency, caching, environment failures reported (never scored), statistics."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import math

import pytest

from harness_gym.errors import WorldError
from harness_gym.evaluation import benchmarks as bm
from harness_gym.evaluation.cache import RolloutCache
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.evaluation.stats import mean_ci, paired_ci, t975
from harness_gym.models.base import SPLIT_WITHIN_S, ChatBackend, ChatRequest, ReplyMemo, RequestBatcher, Sampling, request_key
from harness_gym.models.factory import make_backend
from harness_gym.runtime.trajectory import ENV_ERROR
from harness_gym.types import ToolCall, assistant_message

SPEC = bm.get_benchmark("dbbench")
TASKS = SPEC.load_tasks("valid", None)[:12]
SEEDS = list(range(12))


class FlakyWorlds:
    """Wraps the world factory: the first ``fail`` worlds crash on their first step."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.made = 0

    def factory(self, backend: str):
        real = SPEC.world_factory(backend)

        def make():
            world = real()
            self.made += 1
            if self.made <= self.fail:
                def boom(call):
                    raise WorldError("lost connection to the database (simulated)")
                world.step = boom  # type: ignore[method-assign]
            return world

        return make


def _evaluator(world_factory=None, **kw) -> Evaluator:
    spec = SPEC if world_factory is None else bm.BenchmarkSpec(SPEC.name, SPEC.load_tasks, world_factory, SPEC.run_episode)
    return Evaluator(spec, make_backend("sim"), **kw)


def test_world_failures_are_retried_then_reported_incomplete() -> None:
    clean = _evaluator()
    try:
        reference = clean.evaluate(SPEC.default_harness(), TASKS, SEEDS)
    finally:
        clean.close()
    flaky = FlakyWorlds(fail=2)
    ev = _evaluator(flaky.factory, retries=2)
    try:
        res = ev.evaluate(SPEC.default_harness(), TASKS, SEEDS)
    finally:
        ev.close()
    assert [r.reward for r in res] == [r.reward for r in reference]  # retried, same result

    always = FlakyWorlds(fail=10**6)
    ev = _evaluator(always.factory, retries=1, cache=RolloutCache())
    try:
        res = ev.evaluate(SPEC.default_harness(), TASKS[:3], SEEDS[:3])
    finally:
        ev.close()
    assert all(r.status == ENV_ERROR for r in res) and always.made == 6
    assert all("WorldError" in r.error and "\n" not in r.error for r in res)


def test_incomplete_runs_are_not_cached(tmp_path) -> None:
    cache = RolloutCache(tmp_path)
    always = FlakyWorlds(fail=10**6)
    ev = _evaluator(always.factory, retries=0, cache=cache)
    try:
        ev.evaluate(SPEC.default_harness(), TASKS[:2], SEEDS[:2])
    finally:
        ev.close()
    assert list(tmp_path.iterdir()) == []


def test_disk_cache_survives_a_new_process_and_ignores_torn_files(tmp_path) -> None:
    ev = _evaluator(cache=RolloutCache(tmp_path))
    try:
        first = ev.evaluate(SPEC.default_harness(), TASKS, SEEDS)
    finally:
        ev.close()
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    ev2 = _evaluator(cache=RolloutCache(tmp_path))
    try:
        again = ev2.evaluate(SPEC.default_harness(), TASKS, SEEDS)
        assert ev2.episodes_run == 0 and [r.to_dict() for r in again] == [r.to_dict() for r in first]
    finally:
        ev2.close()
    files[0].write_text("{torn", encoding="utf-8")
    ev3 = _evaluator(cache=RolloutCache(tmp_path))
    try:
        ev3.evaluate(SPEC.default_harness(), TASKS, SEEDS)
        assert ev3.episodes_run == len(TASKS)
    finally:
        ev3.close()


def test_model_requests_of_concurrent_episodes_are_batched() -> None:
    ev = _evaluator()
    try:
        results = ev.evaluate(SPEC.default_harness(), TASKS, SEEDS)
        assert ev.batcher.requests == sum(r.rounds for r in results)
        # episodes advance in lockstep: one batch per round of the longest episode
        assert ev.batcher.batches == max(r.rounds for r in results) < ev.batcher.requests
    finally:
        ev.close()


class CountingBackend(ChatBackend):
    def __init__(self) -> None:
        self.sizes: list[int] = []

    async def generate(self, requests: list[ChatRequest]) -> list[dict]:
        self.sizes.append(len(requests))
        return [{"role": "assistant", "content": str(r.seed)} for r in requests]


def test_request_batcher_coalesces_and_preserves_order() -> None:
    import asyncio

    backend = CountingBackend()
    batcher = RequestBatcher(backend, max_batch=4)

    async def go():
        reqs = [ChatRequest([], [], None, seed=i) for i in range(10)]  # type: ignore[arg-type]
        return await asyncio.gather(*(batcher.submit(r) for r in reqs))

    replies = asyncio.run(go())
    assert [r["content"] for r in replies] == [str(i) for i in range(10)]
    assert backend.sizes == [4, 4, 2]


class PoisonedBackend(CountingBackend):
    """Fails a whole call when any request in it carries seed 13 (a request the server refuses)."""

    async def generate(self, requests: list[ChatRequest]) -> list[dict]:
        self.sizes.append(len(requests))
        if any(r.seed == 13 for r in requests):
            raise RuntimeError("the server refused request 13")
        return [{"role": "assistant", "content": str(r.seed)} for r in requests]


def test_a_request_that_fails_its_batch_fails_alone() -> None:
    """One harness's bad request must not fail the episodes it was batched with (another
    harness's, or a control rerun's): a failed batch is retried in halves down to the culprit."""
    import asyncio

    backend = PoisonedBackend()
    batcher = RequestBatcher(backend, max_batch=8)

    async def go():
        reqs = [ChatRequest([], [], None, seed=s) for s in (1, 2, 13, 4, 5, 6, 7, 8)]  # type: ignore[arg-type]
        return await asyncio.gather(*(batcher.submit(r) for r in reqs), return_exceptions=True)

    replies = asyncio.run(go())
    assert [r if isinstance(r, Exception) else r["content"] for r in replies][:2] == ["1", "2"]
    assert isinstance(replies[2], RuntimeError) and "13" in str(replies[2])
    assert [r["content"] for r in replies[3:]] == ["4", "5", "6", "7", "8"]
    assert backend.sizes[0] == 8 and len(backend.sizes) <= 2 * 3 + 1  # halves down to one: a few calls, not one per request


def test_statistics() -> None:
    assert t975(1) == pytest.approx(12.706) and t975(200) == pytest.approx(1.972, abs=2e-3)
    ci = mean_ci([0.1, 0.2, 0.3, 0.4])
    assert ci.mean == pytest.approx(0.25) and ci.lo == pytest.approx(0.25 - 3.182 * math.sqrt(0.0166667 / 4), abs=1e-4)
    assert paired_ci([0, 0, 0], [1, 1, 1]).lo == 1.0
    with pytest.raises(ValueError):
        paired_ci([1], [1, 2])


# --- reply memo (models/base.py): the same input gets the same reply within an evaluator ---------------------------

class DriftingBackend(ChatBackend):
    """A real-looking target whose replies depend on what else is in the batch, as vLLM's bfloat16
    kernels' did: every call answers with its own call number."""

    memoize = True

    def __init__(self) -> None:
        self.calls = 0
        self.sizes: list[int] = []
        self.fail_next = False

    async def generate(self, requests: list[ChatRequest]) -> list[dict]:
        self.calls += 1
        self.sizes.append(len(requests))
        if self.fail_next:
            self.fail_next = False
            await asyncio.sleep(SPLIT_WITHIN_S + 0.1)  # a slow failure: not split, delivered to every request
            raise RuntimeError("the server went away")
        return [{"role": "assistant", "content": f"call {self.calls} seed {r.seed}"} for r in requests]


def _req(text: str, seed: int = 0, temperature: float = 0.0) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], [], Sampling(temperature=temperature), seed)


def test_the_memo_gives_the_same_input_the_same_reply() -> None:
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, max_batch=8)

    async def go():
        first = await asyncio.gather(*(batcher.submit(_req(t)) for t in ("a", "b", "a", "a")))  # duplicates wait on one
        later = await asyncio.gather(batcher.submit(_req("a")), batcher.submit(_req("c")), batcher.submit(_req("b")))
        other = await asyncio.gather(batcher.submit(_req("a", seed=1)), batcher.submit(_req("a", temperature=0.5)))
        return first, later, other

    first, later, other = asyncio.run(go())
    assert [r["content"] for r in first] == ["call 1 seed 0", "call 1 seed 0", "call 1 seed 0", "call 1 seed 0"]
    assert backend.sizes[0] == 2 and batcher.memo_hits >= 2 + 2  # "a" and "b" reached the model once each
    assert later[0] == first[0] and later[2] == first[1] and later[1]["content"].startswith("call 2")
    assert [r["content"] for r in other] == ["call 3 seed 1", "call 3 seed 0"]  # another seed or sampling is another input
    first[0]["content"] = "mutated by an episode"
    assert asyncio.run(_one(batcher, _req("a")))["content"] == "call 1 seed 0"  # every caller gets its own copy


async def _one(batcher: RequestBatcher, req: ChatRequest) -> dict:
    return await batcher.submit(req)


def test_the_memo_keeps_no_failure_and_stays_bounded() -> None:
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, max_batch=8, memo=ReplyMemo(max_entries=2))
    backend.fail_next = True

    async def failing():
        return await asyncio.gather(batcher.submit(_req("x")), batcher.submit(_req("x")), return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(failing()))
    assert asyncio.run(_one(batcher, _req("x")))["content"] == "call 2 seed 0"  # the failure was not kept: asked again
    for t in ("y", "z"):
        asyncio.run(_one(batcher, _req(t)))
    assert batcher.memo.size() == 2
    assert asyncio.run(_one(batcher, _req("x")))["content"] == "call 5 seed 0"  # least recently used: dropped
    with pytest.raises(ValueError, match="max_entries"):
        ReplyMemo(max_entries=0)


def test_only_backends_that_ask_are_memoized() -> None:
    from harness_gym.models.sim import SimBackend

    assert RequestBatcher(SimBackend()).memo is None  # the sim is a function of its input (and of knowledge, not keyed)
    assert RequestBatcher(CountingBackend()).memo is None
    assert RequestBatcher(DriftingBackend()).memo is not None and RequestBatcher(DriftingBackend(), memo=False).memo is None
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, memo=False)
    replies = asyncio.run(_both(batcher))
    assert replies[0] != replies[1]


async def _both(batcher: RequestBatcher) -> list[dict]:
    a = await batcher.submit(_req("a"))
    return [a, await batcher.submit(_req("a"))]


class BatchSensitiveSim(ChatBackend):
    """The sim, except that in a call of more than ``calm`` requests it commits a wrong answer for every request
    with an odd seed: a target whose replies to the same input depend on the batch they came in."""

    memoize = True

    def __init__(self, calm: int) -> None:
        from harness_gym.models.sim import SimBackend

        self.sim, self.calm = SimBackend(), calm

    async def generate(self, requests: list[ChatRequest]) -> list[dict]:
        replies = await self.sim.generate(requests)
        if len(requests) > self.calm:
            wrong = assistant_message("", [ToolCall("drift", "commit_final_answer", {"answers": ["drift"]})])
            replies = [wrong if r.seed % 2 else m for r, m in zip(requests, replies)]
        return replies


@pytest.mark.parametrize("memo", [True, False])
def test_a_patch_that_changes_no_model_input_scores_zero_on_a_batch_sensitive_target(memo: bool) -> None:
    """Baseline at reset in a small batch, patched runs later in a large one (how the env runs them): with the
    memo, hooks that never change what the model sees leave every episode as it was; without it they do not."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch

    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks("test", None)[:6]
    ev = Evaluator(spec, BatchSensitiveSim(calm=len(tasks)), world_backend="sqlite")
    if not memo:
        ev.batcher.memo = None
    try:
        base = spec.default_harness()
        silent = []
        for i in range(3):  # hooks that keep state and never return anything: the model sees the baseline's inputs
            code = f"def hook(ctx, nb):\n    nb['n{i}'] = nb.get('n{i}', 0) + 1\n    return None\n"
            patch = json.dumps({"schema_version": "harness-r1-patch-v1", "benchmark": "dbbench", "description": "count",
                                "actions": [{"type": "add_code_hook", "hook": "on_post_step", "code": code}]})
            silent.append(parse_patch(patch, base).apply(base))
        before = ev.evaluate(base, tasks, list(range(len(tasks))))
        afters = ev.evaluate_many(silent, tasks, list(range(len(tasks))))
    finally:
        ev.close()
    assert sum(r.reward for r in before) >= 3
    same = all([r.reward for r in after] == [r.reward for r in before] for after in afters)
    assert same is memo


def test_the_memo_keys_every_input_and_shares_no_object() -> None:
    """Tools, every sampling field and the roles are part of the key; neither the caller that asked first, nor one
    that waited on it, nor a later one can change what another gets; the least recently *used* reply is dropped."""
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, max_batch=8, memo=ReplyMemo(max_entries=3))
    base = _req("a")
    tools = ChatRequest(base.messages, [{"type": "function", "function": {"name": "t"}}], base.sampling, 0)
    top_p = ChatRequest(base.messages, [], Sampling(top_p=0.5), 0)
    length = ChatRequest(base.messages, [], Sampling(max_tokens=7), 0)
    role = ChatRequest([{"role": "system", "content": "a"}], [], base.sampling, 0)
    keys = {request_key(r) for r in (base, tools, top_p, length, role)}
    assert len(keys) == 5
    assert {f.name for f in dataclasses.fields(ChatRequest)} == {"messages", "tools", "sampling", "seed", "knowledge", "meta"}

    async def go():
        first, waiter = await asyncio.gather(batcher.submit(_req("x")), batcher.submit(_req("x")))
        first["content"], waiter["content"] = "changed by the first", "changed by the waiter"
        return await batcher.submit(_req("x"))

    assert asyncio.run(go())["content"] == "call 1 seed 0"
    for t in ("y", "z"):
        asyncio.run(_one(batcher, _req(t)))
    asyncio.run(_one(batcher, _req("x")))  # used again: now the most recent
    asyncio.run(_one(batcher, _req("w")))  # a fourth reply drops the least recently used one, "y"
    calls = backend.calls
    asyncio.run(_one(batcher, _req("x")))
    assert backend.calls == calls
    asyncio.run(_one(batcher, _req("y")))
    assert backend.calls == calls + 1


def test_a_cancelled_caller_does_not_cancel_the_others_waiting_on_its_request() -> None:
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, max_batch=8)

    async def go():
        first = asyncio.ensure_future(batcher.submit(_req("x")))
        waiter = asyncio.ensure_future(batcher.submit(_req("x")))
        await asyncio.sleep(0)
        first.cancel()
        reply = await waiter
        return first.cancelled(), reply, await batcher.submit(_req("x"))

    cancelled, reply, later = asyncio.run(go())
    assert cancelled and reply["content"] == "call 1 seed 0" and later == reply and backend.calls == 1


def test_real_backends_ask_for_the_memo() -> None:
    from harness_gym.models.hf import HFBackend
    from harness_gym.models.openai_compat import OpenAIBackend
    from harness_gym.models.vllm_engine import VLLMBackend

    assert HFBackend.memoize and VLLMBackend.memoize and OpenAIBackend.memoize


def test_episodes_woken_by_one_batch_share_the_next_through_the_memo() -> None:
    """A memoized reply reaches its episode some event-loop passes later than an unmemoized one (a shielded
    future; a duplicate waiting on another's request), and episodes take a few passes more or less to reach
    their next call. The batcher still cuts a batch only once every woken episode has asked: each round of
    six episodes is one batch of six, not a batch of the quick ones and another of the slow."""
    backend = DriftingBackend()
    batcher = RequestBatcher(backend, max_batch=64)

    async def episode(i: int) -> None:
        for turn in range(3):
            for _ in range(i % 3):  # hooks, a sandbox's bookkeeping: a few passes before the next call
                await asyncio.sleep(0)
            await batcher.submit(_req(f"episode {i} turn {turn}"))

    async def go() -> None:
        await asyncio.gather(*(episode(i) for i in range(6)))

    asyncio.run(go())
    assert backend.sizes == [6, 6, 6]


def test_episodes_in_a_hook_call_are_waited_for_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between two model calls an episode may wait on I/O — a hook's sandbox, a world's server — which no
    number of event-loop passes waits out. Episodes the batcher counts (``episode()``, as the Evaluator runs
    them) are waited for until all have asked, so six episodes a few milliseconds apart share each round's
    batch (with passes alone: a batch per episode); one stuck far longer than ``SETTLE_WAIT_S`` does not hold
    the others back; and the wait is kept to a share of the model's own time. (A wide cap and a slow model
    here, so a loaded machine's late timers cannot decide the outcome.)"""
    from harness_gym.models import base

    monkeypatch.setattr(base, "SETTLE_WAIT_S", 0.25)

    def run(io_s, model_s: float = 1.0) -> list[int]:
        backend = DriftingBackend()
        generate = backend.generate

        async def slow(requests: list[ChatRequest]) -> list[dict]:
            await asyncio.sleep(model_s)  # a real model takes a while: waiting for stragglers is worth it
            return await generate(requests)

        backend.generate = slow  # type: ignore[method-assign]
        batcher = RequestBatcher(backend, max_batch=64)

        async def episode(i: int) -> None:
            async with batcher.episode():
                for turn in range(3):
                    await asyncio.sleep(io_s(i))  # a hook's pipe I/O: a timer, not a pass
                    await batcher.submit(_req(f"episode {i} turn {turn}"))

        async def go() -> None:
            await asyncio.gather(*(episode(i) for i in range(6)))

        asyncio.run(go())
        return backend.sizes

    assert run(lambda i: 0.003 * i) == [6, 6, 6]
    stuck = run(lambda i: 4 * base.SETTLE_WAIT_S if i == 5 else 0.0)
    assert stuck[0] == 5 and sum(stuck) == 18, stuck  # the first batch went without the stuck one
    # a target that answers at once (the sim) is not held to its slowest hook's pace: after the first batch,
    # it waits at most SETTLE_SHARE of a generate call, so the same six episodes no longer share rounds
    fast = run(lambda i: 0.003 * i, model_s=0.0)
    assert fast[0] == 6 and len(fast) > 3, fast


def test_a_baseline_and_a_patch_share_batches_on_a_memoized_target() -> None:
    """Global batching across harness versions holds on a target with the reply memo (the real targets): the
    baseline's and a patched harness's episodes, evaluated together, meet in one batch."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch

    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks("test", None)[:4]
    backend = BatchSensitiveSim(calm=100)
    sizes: list[int] = []
    generate = backend.generate

    async def counted(requests: list[ChatRequest]) -> list[dict]:
        sizes.append(len(requests))
        await asyncio.sleep(0.2)  # a model takes a while: episodes still setting up their worlds catch the next batch
        return await generate(requests)

    backend.generate = counted  # type: ignore[method-assign]
    ev = Evaluator(spec, backend, world_backend="sqlite")
    try:
        base = spec.default_harness()
        hint = "def make_pre_hint(ctx, nb):\n    return {'message': 'Call execute_sql with one SELECT statement now.'}\n"
        both = [base, parse_patch(hint, base).apply(base)]
        ev.evaluate_many(both, tasks, list(range(len(tasks))))  # warms the hook sandbox: its start-up is not the point
        sizes.clear()
        ev.evaluate_many(both, tasks, [100 + i for i in range(len(tasks))])  # other seeds: new requests, not the memo's
    finally:
        ev.close()
    assert ev.batcher.memo is not None and max(sizes) == 2 * len(tasks), sizes


def test_progress_shows_a_bar_over_the_episodes_a_call_runs(capfd: pytest.CaptureFixture[str]) -> None:
    """``progress=True`` (the env kwarg ``progress``): a bar on stderr counting the call's episodes to its
    total; nothing for a call served from the cache, and nothing at all without it."""
    ev = _evaluator(progress=True)
    try:
        ev.evaluate_many([SPEC.default_harness()], TASKS[:3], SEEDS[:3])
        err = capfd.readouterr().err
        assert "dbbench on sim" in err and "3/3" in err and "episode" in err
        ev.evaluate_many([SPEC.default_harness()], TASKS[:3], SEEDS[:3])  # cached: nothing runs
        assert "dbbench on sim" not in capfd.readouterr().err
    finally:
        ev.close()
    quiet = _evaluator()
    try:
        quiet.evaluate_many([SPEC.default_harness()], TASKS[:2], SEEDS[:2])
        assert "episode" not in capfd.readouterr().err
    finally:
        quiet.close()


def test_a_call_stopped_midway_keeps_each_version_it_finished(tmp_path) -> None:
    """Each harness version's batch is cached as soon as its episodes are done, not when the whole call is:
    a long call on a real target that is stopped (killed, interrupted) keeps the baseline it finished, and
    the next call reads it back instead of replaying it."""
    import time

    from harness_gym.harness.patch import parse_patch

    base = SPEC.default_harness()
    code = "def hook(ctx, nb):\n    return None\n"
    slow = parse_patch(json.dumps({"schema_version": "harness-r1-patch-v1", "benchmark": "dbbench", "description": "slow",
                                   "actions": [{"type": "add_code_hook", "hook": "on_post_step", "code": code}]}),
                       base).apply(base)

    async def run_episode(task, world, harness, *args, **kw):
        if harness.version == slow.version:
            await asyncio.sleep(3600)  # a version whose episodes never end in this call
        return await SPEC.run_episode(task, world, harness, *args, **kw)

    spec = bm.BenchmarkSpec(SPEC.name, SPEC.load_tasks, SPEC.world_factory, run_episode)
    ev = Evaluator(spec, make_backend("sim"), cache=RolloutCache(tmp_path))
    try:
        fut = asyncio.run_coroutine_threadsafe(ev.arun_many([base, slow], TASKS[:3], SEEDS[:3]), ev._loop)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(tmp_path.glob("*.json"))) == 1 and not fut.done()  # the baseline is kept, the call goes on
        fut.cancel()
    finally:
        ev.close()
    again = Evaluator(spec, make_backend("sim"), cache=RolloutCache(tmp_path))
    try:
        runs = again.evaluate(base, TASKS[:3], SEEDS[:3])
        assert again.episodes_run == 0 and again.cache.hits == 1 and len(runs) == 3
    finally:
        again.close()
