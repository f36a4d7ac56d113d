"""The simulated target: a chat backend that answers like an LLM agent, on a CPU.

It dispatches each request to its benchmark's simulated policy (``Benchmark.sim()``,
``harness_gym/benchmarks/<name>/sim.py`` for the built-ins), which reads the conversation and returns an assistant message with tool calls. The only
extra input is ``request.knowledge`` — the task's reference solution, which the harness
and hooks never see.
"""
from __future__ import annotations

from typing import Any, Callable

from harness_gym.errors import BackendError
from harness_gym.models.base import ChatBackend, ChatRequest
from harness_gym.types import Message



class SimBackend(ChatBackend):
    name = "sim"

    def __init__(self) -> None:
        self._respond: dict[str, Callable[..., Message]] = {}

    def _policy(self, benchmark: str) -> Callable[..., Message]:
        if benchmark not in self._respond:
            from harness_gym.benchmarks import plugins
            from harness_gym.errors import ConfigError

            try:
                policy = plugins.get(benchmark).sim()
            except ConfigError as exc:
                raise BackendError(f"the sim target has no policy for benchmark {benchmark!r}: {exc}") from None
            if policy is None or not callable(policy):
                raise BackendError(f"the sim target has no policy for benchmark {benchmark!r} "
                                   f"({plugins.discover().packages[benchmark]}: Benchmark.sim() returned "
                                   f"{type(policy).__name__}); use a model target (hf:, vllm:, openai:)")
            self._respond[benchmark] = policy
        return self._respond[benchmark]

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        out = []
        for req in requests:
            knowledge: Any = req.knowledge
            if knowledge is None or "benchmark" not in req.meta:
                raise BackendError("the sim target needs request.knowledge and meta['benchmark'] (set by the runtime)")
            out.append(self._policy(req.meta["benchmark"])(req))
        return out
