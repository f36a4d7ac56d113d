"""The Ray executor gives the local executor's results for the same tasks and seeds.

On a local Ray instance (2 CPUs, no dashboard, small object store). Skipped without ray,
but CI must have it (``pip install ray``): there the skip is a failure.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import unavailable

try:
    import ray
except ImportError:  # pragma: no cover - depends on the environment
    ray = None
    unavailable("ray (the Ray executor)", "not installed: pip install ray")

from harness_gym.errors import ConfigError, WorldError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.evaluation.executors import make_evaluator
from harness_gym.harness.patch import parse_patch
from harness_gym.models.factory import make_backend

ROOT = Path(__file__).resolve().parents[1]
PATCHES = ["dbbench_batch022.txt", "dbbench_stage_guards.txt"]


@pytest.fixture(scope="module")
def cluster() -> Any:
    from harness_gym.evaluation.executors import init_ray

    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the crash-once world below ships by value
    yield init_ray(num_cpus=2)
    ray.shutdown()


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks("test", None)[:6]
    base = spec.default_harness()
    patched = [parse_patch((ROOT / "examples" / "patches" / p).read_text(encoding="utf-8"), base).apply(base) for p in PATCHES]
    return {"spec": spec, "tasks": tasks, "seeds": [11 * i + 3 for i in range(len(tasks))], "harnesses": [base, *patched]}


@pytest.fixture(scope="module")
def local_runs(setup: dict[str, Any]) -> list[list[Any]]:
    ev = Evaluator(setup["spec"], make_backend("sim"), world_backend="sqlite")
    try:
        return ev.evaluate_many(setup["harnesses"], setup["tasks"], setup["seeds"])
    finally:
        ev.close()


def _view(results: list[Any]) -> list[tuple]:
    return [(r.task_id, r.seed, r.harness_version, r.reward, r.success, r.status, r.error, r.messages) for r in results]


def test_ray_equals_local_and_k_patches_in_one_call(cluster: Any, setup: dict[str, Any], local_runs: list[list[Any]],
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    ev = make_evaluator("ray", setup["spec"], make_backend("sim"), world_backend="sqlite", max_in_flight=2, progress=True)
    capfd.readouterr()
    t0 = time.perf_counter()
    runs = ev.evaluate_many(setup["harnesses"], setup["tasks"], setup["seeds"])  # base + K=2 patches, one call
    elapsed = time.perf_counter() - t0
    assert "dbbench on sim (ray)" in (bar := capfd.readouterr().err) and "18/18" in bar  # progress: over the call's episodes
    assert len(runs) == 3 and [len(r) for r in runs] == [6, 6, 6]
    for got, want in zip(runs, local_runs):
        assert _view(got) == _view(want)
    for patched in runs[1:]:  # each patch changes some episode, so equality with local is not the base run three times
        assert [r.messages for r in patched] != [r.messages for r in runs[0]], "the patches should change some episode"
    assert ev.tasks_submitted >= 3 and ev.episodes_run == 18
    # report()'s model counters, summed over workers (the sim keeps no reply memo: 0 hits)
    assert ev.batcher.requests > 0 and ev.batcher.memo_hits == 0
    # cached on the driver: a repeat costs no task
    before = ev.tasks_submitted
    assert _view(ev.evaluate(setup["harnesses"][1], setup["tasks"], setup["seeds"])) == _view(local_runs[1])
    assert ev.tasks_submitted == before and ev.cache.hits >= 1
    print(f"ray: 18 episodes in {elapsed:.2f}s over {ev.workers} workers, {ev.tasks_submitted} tasks")
    ev.close()


def test_each_version_is_cached_once_its_batch_is_done(cluster: Any, setup: dict[str, Any], local_runs: list[list[Any]]) -> None:
    """A call stopped after one harness version's batch came back keeps that batch, as the local Evaluator does:
    rerunning it costs no task (until stop 45 the Ray executor cached only at the end of the call)."""
    ev = make_evaluator("ray", setup["spec"], make_backend("sim"), world_backend="sqlite", max_in_flight=1,
                        episodes_per_task=len(setup["tasks"]))
    collect, seen = ev._collect, []

    def stop_at_the_second(ref: Any, harness: Any, tasks: list[Any], seeds: list[int]) -> list[Any]:
        seen.append(harness.version)
        if len(seen) == 2:
            raise KeyboardInterrupt  # the user stops the call while the second version runs
        return collect(ref, harness, tasks, seeds)

    ev._collect = stop_at_the_second
    with pytest.raises(KeyboardInterrupt):
        ev.evaluate_many(setup["harnesses"][:2], setup["tasks"], setup["seeds"])
    ev._collect = collect
    assert seen == [h.version for h in setup["harnesses"][:2]]
    before = ev.tasks_submitted
    assert _view(ev.evaluate(setup["harnesses"][0], setup["tasks"], setup["seeds"])) == _view(local_runs[0])
    assert ev.tasks_submitted == before, "the finished version should come from the cache"
    assert _view(ev.evaluate(setup["harnesses"][1], setup["tasks"], setup["seeds"])) == _view(local_runs[1])
    assert ev.tasks_submitted == before + 1
    assert ev.evaluate_many(setup["harnesses"], [], []) == [[], [], []]  # no tasks: every version's batch is empty
    ev.close()


def _crash_once_spec(spec: Any, marker: str) -> Any:
    inner = spec.world_factory

    def world_factory(backend: str) -> Any:
        make = inner(backend)

        def make_world() -> Any:
            if not os.path.exists(marker):
                Path(marker).write_text(str(os.getpid()))
                os._exit(1)  # the worker process dies mid-batch, as a killed or OOM worker does
            return make()

        return make_world

    return dataclasses.replace(spec, world_factory=world_factory)


class _LostConnection:
    """A world whose connection drops at reset (the local evaluator retries it, then reports env_error)."""

    def __init__(self, world: Any) -> None:
        self._world = world

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        raise WorldError("database connection lost")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)


def _broken_spec(spec: Any) -> Any:
    inner = spec.world_factory

    def world_factory(backend: str) -> Any:
        make = inner(backend)
        return lambda: _LostConnection(make())

    return dataclasses.replace(spec, world_factory=world_factory)


def test_killed_worker_is_retried(cluster: Any, setup: dict[str, Any], local_runs: list[list[Any]], tmp_path: Path) -> None:
    marker = str(tmp_path / "crashed")
    spec = _crash_once_spec(setup["spec"], marker)
    ev = make_evaluator("ray", spec, make_backend("sim"), world_backend="sqlite", ship_spec=True, max_retries=2,
                        episodes_per_task=3)
    got = ev.evaluate(setup["harnesses"][0], setup["tasks"], setup["seeds"])
    assert os.path.exists(marker), "the crash-once world should have killed a worker"
    assert _view(got) == _view(local_runs[0])


def test_world_errors_come_back_as_env_error_like_local(cluster: Any, setup: dict[str, Any]) -> None:
    spec = _broken_spec(setup["spec"])
    tasks, seeds = setup["tasks"][:2], setup["seeds"][:2]
    local = Evaluator(spec, make_backend("sim"), world_backend="sqlite", retries=1)
    try:
        want = local.evaluate(setup["harnesses"][0], tasks, seeds)
    finally:
        local.close()
    ev = make_evaluator("ray", spec, make_backend("sim"), world_backend="sqlite", ship_spec=True, retries=1)
    got = ev.evaluate(setup["harnesses"][0], tasks, seeds)
    assert [r.status for r in got] == ["env_error", "env_error"]
    assert _view(got) == _view(want)
    assert got[0].error == "WorldError: database connection lost"


def test_factory_rejects_unknown_executor_and_ray_only_kwargs(setup: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="expected 'local', 'ray' or 'ray://host:port'"):
        make_evaluator("dask", setup["spec"], make_backend("sim"))
    with pytest.raises(ConfigError, match="apply only to executor='ray'"):
        make_evaluator("local", setup["spec"], make_backend("sim"), max_in_flight=4)
