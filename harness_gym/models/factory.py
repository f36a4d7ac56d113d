"""Target strings → chat backends: one factory, chosen by the string's prefix.

- ``sim`` — the simulated target (CPU, no extras);
- ``smol`` / ``smol:<benchmark>[?adapter=…&engine=hf|vllm&…]`` — SmolLM2-135M-Instruct with a
  trained LoRA adapter (``harness_gym/smol/target.py``): ``smol`` alone is the env's benchmark;
- ``hf:<path>[?key=value&…]`` — transformers (``HFConfig``: max_tokens, max_batch, batch_mb, dtype, device,
  threads, prefix_cache, prefix_min, cache_mb);
- ``vllm:<path>[?…]`` — vLLM's in-process engine (``VLLMConfig``: max_tokens, max_model_len,
  gpu_memory_utilization, dtype, enforce_eager, max_num_seqs);
- ``openai:<base_url>#<model>[?…]`` — an OpenAI-compatible server (``OpenAIConfig``: max_tokens,
  concurrency, timeout, retries, probe, text_tool_calls, thinking_off, api_key_env).

Heavy imports happen inside the backend modules; a missing extra raises ``BackendError``
naming the pip command.
"""
from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import parse_qsl

from harness_gym.errors import ConfigError
from harness_gym.models.base import ChatBackend

KNOWN_PREFIXES = ("sim", "smol", "hf:", "vllm:", "openai:")


def split_options(spec: str, config_cls: type) -> tuple[str, dict[str, Any]]:
    """``"path?max_tokens=64&dtype=bfloat16"`` → ("path", typed options of ``config_cls``)."""
    if "?" not in spec:
        return spec, {}
    head, _, query = spec.rpartition("?")
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    opts: dict[str, Any] = {}
    for key, raw in parse_qsl(query, keep_blank_values=True):
        if key not in fields or key in ("path", "base_url", "model"):
            allowed = sorted(k for k in fields if k not in ("path", "base_url", "model"))
            raise ConfigError(f"target option {key!r} is unknown: expected one of {allowed}")
        opts[key] = _typed(key, raw, str(fields[key].type))
    return head, opts


def _typed(key: str, raw: str, kind: str) -> Any:
    try:
        if kind.startswith("bool"):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if "int" in kind:
            return int(raw)
        if "float" in kind:
            return float(raw)
    except ValueError:
        raise ConfigError(f"target option {key}={raw!r}: expected a value of type {kind}") from None
    return raw


def make_backend(target: str, benchmark: str | None = None) -> ChatBackend:
    """Build the chat backend named by a target string (see the module docstring); ``benchmark``
    is the env's (what a bare ``smol`` means)."""
    if target == "sim":
        from harness_gym.models.sim import SimBackend

        return SimBackend()
    if target == "smol" or target.startswith(("smol:", "smol?")):
        from harness_gym.smol.target import make_smol_backend

        return make_smol_backend(target, benchmark)
    if target.startswith("hf:"):
        from harness_gym.models.hf import HFBackend, HFConfig

        path, opts = split_options(target[3:], HFConfig)
        return HFBackend(HFConfig(path=_need(path, target), **opts))
    if target.startswith("vllm:"):
        from harness_gym.models.vllm_engine import VLLMBackend, VLLMConfig

        path, opts = split_options(target[5:], VLLMConfig)
        return VLLMBackend(VLLMConfig(path=_need(path, target), **opts))
    if target.startswith("openai:"):
        from harness_gym.models.openai_compat import OpenAIBackend, OpenAIConfig

        url, sep, rest = target[7:].partition("#")
        if not sep:
            raise ConfigError(f"target {target!r}: expected openai:<base_url>#<model>, e.g. openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B")
        model, opts = split_options(rest, OpenAIConfig)
        return OpenAIBackend(OpenAIConfig(base_url=url, model=model, **opts))
    raise ConfigError(f"unknown target {target!r}: expected one of 'sim', 'smol[:<benchmark>]', 'hf:<path>', 'vllm:<path>', 'openai:<base_url>#<model>'")


def _need(path: str, target: str) -> str:
    if not path:
        raise ConfigError(f"target {target!r}: give the model folder after the prefix, e.g. hf:/models/SmolLM2-135M-Instruct")
    return path


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def target_identity(target: str, benchmark: str | None = None) -> dict[str, Any] | None:
    """What the weights behind a target string are, beyond the string itself, so a cache keyed by it never serves
    one model's runs to another under the same string: a ``smol`` target's adapter sha256s (a new adapter shipped,
    or retrained into the same ``?adapter=`` folder), an ``hf:``/``vllm:`` folder's weight files by name, size and
    modification time (a folder overwritten in place). None for the sim and for servers (``openai:`` names its
    model; what a server serves under that name is the server's claim)."""
    if target == "smol" or target.startswith(("smol:", "smol?")):
        from harness_gym.smol.target import adapter_digests, parse_target

        name, adapter, _engine, _opts = parse_target(target, benchmark)
        return {"smol": name, **adapter_digests(adapter)}
    for prefix in ("hf:", "vllm:"):
        if target.startswith(prefix):
            from pathlib import Path

            folder = Path(target[len(prefix):].rpartition("?")[0] or target[len(prefix):])
            files = sorted(p for p in folder.glob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES)) \
                if folder.is_dir() else []
            return {"weights": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in files]}
    return None
