"""``make_evaluator``: one factory choosing where episodes run, from an ``executor`` string.

- ``"local"`` (default): the ``Evaluator`` — one event loop in a background thread.
- ``"ray"``: a ``RayEvaluator`` on the cluster named by ``RAY_ADDRESS`` if set, else a local
  Ray instance (``num_cpus`` CPUs, no dashboard, a bounded object store).
- ``"ray://host:port"``: a ``RayEvaluator`` on that cluster (Ray Client).
"""
from __future__ import annotations

import os
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.evaluation.benchmarks import BenchmarkSpec
from harness_gym.models.base import ChatBackend

# The local object store only carries harnesses, tasks and result dicts (KBs each).
LOCAL_OBJECT_STORE_BYTES = 128 * 1024**2
RAY_KWARGS = ("max_in_flight", "max_retries", "episodes_per_task", "num_cpus_per_task", "ship_spec")


def init_ray(address: str | None = None, *, num_cpus: int | None = None, runtime_env: dict[str, Any] | None = None) -> Any:
    """Join ``address`` (or ``RAY_ADDRESS``), or start a small local instance; idempotent."""
    from harness_gym.evaluation.ray_executor import require_ray

    ray = require_ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, runtime_env=runtime_env, ignore_reinit_error=True, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                 object_store_memory=LOCAL_OBJECT_STORE_BYTES, runtime_env=runtime_env, ignore_reinit_error=True,
                 log_to_driver=False)
    return ray


def make_evaluator(executor: str, spec: BenchmarkSpec, backend: ChatBackend, **kw: Any) -> Any:
    """An evaluator for ``executor``; ``kw`` are the ``Evaluator`` keyword arguments, plus for Ray
    ``max_in_flight``, ``max_retries``, ``episodes_per_task``, ``num_cpus_per_task``, ``ship_spec``,
    ``num_cpus`` (local instance) and ``runtime_env`` (e.g. ``{"py_modules": [harness_gym]}``)."""
    if executor == "local":
        from harness_gym.evaluation.evaluator import Evaluator

        bad = sorted(set(kw) & set(RAY_KWARGS + ("num_cpus", "runtime_env")))
        if bad:
            raise ConfigError(f"{bad} apply only to executor='ray', got executor='local'")
        return Evaluator(spec, backend, **kw)
    if executor == "ray" or executor.startswith("ray://"):
        from harness_gym.evaluation.ray_executor import RayEvaluator

        init_ray(None if executor == "ray" else executor, num_cpus=kw.pop("num_cpus", None),
                 runtime_env=kw.pop("runtime_env", None))
        _close_quietly(backend)  # every worker builds its own backend from target_name
        return RayEvaluator(spec, **kw)
    raise ConfigError(f"executor={executor!r}: expected 'local', 'ray' or 'ray://host:port'")


def _close_quietly(backend: ChatBackend) -> None:
    import asyncio
    import inspect

    close = getattr(backend, "close", None)
    if close is None:
        return
    result = close()
    if inspect.isawaitable(result):
        try:
            asyncio.run(result)  # type: ignore[arg-type]  # the env builds the backend on the caller's thread, before any loop runs there
        except RuntimeError:  # called from inside a running loop (a notebook): the backend holds nothing yet
            getattr(result, "close", lambda: None)()
