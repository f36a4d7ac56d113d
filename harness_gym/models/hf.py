"""``hf:<path>`` — a transformers model, batched generation with left padding, on CPU or GPU.

One ``generate`` call runs one padded batch (chunks of ``max_batch``) in a worker thread, so
the evaluator's event loop keeps running episodes (and queueing their next requests) while
the model computes. Sampling is seeded per request: at temperature 0 decoding is greedy; at
temperature > 0 each row draws from its own ``torch.Generator`` seeded by ``ChatRequest.seed``,
so baseline and patched runs share random numbers (common random numbers).

**Prefix cache** (``prefix_cache``, on by default): prompts repeat what the backend has
already computed — every episode's prompt starts with the same system prompt and tool schema
(469 tokens of a DBBench prompt), and each round's prompt is the previous round's prompt plus
the reply and the new observation. The backend keeps key/value caches of token sequences it
has run (the prefix a batch shares, computed once, and each row's prompt plus its reply after
generation), up to ``cache_mb`` megabytes, least recently used dropped. A new prompt starts
from the kept sequence it shares the most leading tokens with and only its remainder runs:
rows are laid out ``[kept part][padding][remainder]`` with the padding masked, so every token
keeps its position and the greedy reply is the one a whole prompt gives (a test checks the
texts over two rounds). A multi-round episode thus costs its new tokens, not its whole
history, at every round. ``prefix_cache=0`` runs whole prompts.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import BackendError, ConfigError
from harness_gym.models.base import ChatBackend, ChatRequest
from harness_gym.models.chat import ChatFormatter, leading_shared
from harness_gym.models.extras import require
from harness_gym.models.toolcalls import reply_from_text
from harness_gym.types import Message


@dataclass
class GenStats:
    """Counters for benchmarks: batches, requests, tokens and seconds spent in the model."""

    batches: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_tokens: int = 0  # prompt tokens served from the prefix cache instead of being run
    batch_sizes: list[int] = field(default_factory=list)

    def add(self, n: int, prompt: int, completion: int, seconds: float) -> None:
        self.batches += 1
        self.requests += n
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.seconds += seconds
        self.batch_sizes.append(n)


@dataclass(frozen=True)
class HFConfig:
    """Options of ``hf:<path>?key=value&…``."""

    path: str
    max_tokens: int | None = None  # cap on Sampling.max_tokens (the protocol asks 4096)
    max_batch: int = 64
    dtype: str = "float32"
    device: str = "cpu"
    threads: int | None = None
    prefix_cache: bool = True  # reuse key/value caches of prefixes already computed (module doc)
    prefix_min: int = 32  # shorter shared prefixes run whole
    cache_mb: int = 4096  # memory kept for those caches across calls

    def __post_init__(self) -> None:
        if self.prefix_min < 1 or self.cache_mb < 0:
            raise ConfigError(f"hf:{self.path}: prefix_min must be >= 1 and cache_mb >= 0")
        if self.max_batch < 1 or (self.max_tokens is not None and self.max_tokens < 1):
            raise ConfigError(f"hf:{self.path}: max_batch and max_tokens must be >= 1")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ConfigError(f"hf:{self.path}: dtype={self.dtype!r}: expected float32, bfloat16 or float16")


class HFBackend(ChatBackend):
    name = "hf"

    def __init__(self, config: HFConfig) -> None:
        self.config = config
        torch = require("torch", "hf")
        transformers = require("transformers", "hf")
        if config.threads:
            torch.set_num_threads(config.threads)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(config.path)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(config.path, dtype=getattr(torch, config.dtype))
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"hf:{config.path}: could not load a model directory ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                "give a local transformers model folder (for a GGUF file run harness_gym.models.gguf.convert_gguf first)"
            ) from exc
        self.model.to(config.device).eval()
        self.tokenizer.padding_side = "left"
        self.formatter = ChatFormatter(self.tokenizer)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.formatter.stop_ids[0]
        self.context = int(getattr(self.model.config, "max_position_embeddings", 4096))
        self.stats = GenStats()
        self._lock = threading.Lock()
        self._torch = torch
        self._kv = _KVStore(config.cache_mb * 2**20)
        from transformers import DynamicCache  # kept caches are plain per-layer keys/values (no sliding windows)

        plain = all(type(layer).__name__ == "DynamicLayer" for layer in DynamicCache(config=self.model.config).layers)
        self._caching = config.prefix_cache and config.cache_mb > 0 and plain  # keep and reuse key/value caches

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        return await asyncio.to_thread(self.generate_sync, requests)

    def generate_sync(self, requests: list[ChatRequest]) -> list[Message]:
        prompts = [self.formatter.prompt_ids(r.messages, r.tools) for r in requests]
        return self.generate_ids(prompts, requests)

    def generate_ids(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[Message]:
        """Generate from prompt ids (chunks of ``max_batch``); one reply per request."""
        out: list[Message] = []
        with self._lock:
            for i in range(0, len(requests), self.config.max_batch):
                out.extend(self._chunk(prompts[i : i + self.config.max_batch], requests[i : i + self.config.max_batch]))
        return out

    def budget(self, prompt_len: int, request: ChatRequest) -> int:
        cap = request.sampling.max_tokens
        if self.config.max_tokens is not None:
            cap = min(cap, self.config.max_tokens)
        return max(0, min(cap, self.context - prompt_len))

    def _chunk(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[Message]:
        torch = self._torch
        budgets = [self.budget(len(p), r) for p, r in zip(prompts, requests)]
        live = [i for i, b in enumerate(budgets) if b > 0]  # a prompt that fills the context gets an empty reply
        texts = [""] * len(requests)
        t0 = time.perf_counter()
        completion = 0
        if live:
            rows = [prompts[i] for i in live]
            kept = self._kept(rows)  # per row: (key of the kept sequence, how many leading tokens it serves)
            cut = [n for _, n in kept]
            width_kept = max(cut)
            rest = [p[n:] for p, n in zip(rows, cut)]
            width = width_kept + max(len(r) for r in rest)
            ids = torch.full((len(live), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(live), width), dtype=torch.long)
            for row, (p, n, r) in enumerate(zip(rows, cut, rest)):  # [kept part][padding][remainder]
                ids[row, :n] = torch.tensor(p[:n], dtype=torch.long)
                mask[row, :n] = 1
                ids[row, width - len(r):] = torch.tensor(r, dtype=torch.long)
                mask[row, width - len(r):] = 1
            processors = _SeededSampler.maybe([requests[i] for i in live], torch)
            with torch.inference_mode():
                cache = self._kv.batch(kept, width_kept, self._new_cache) if width_kept else None
                out = self.model.generate(
                    input_ids=ids.to(self.config.device), attention_mask=mask.to(self.config.device),
                    max_new_tokens=max(budgets[i] for i in live), do_sample=False, num_beams=1,
                    temperature=None, top_p=None, top_k=None, past_key_values=cache,
                    logits_processor=processors, eos_token_id=self.formatter.stop_ids, pad_token_id=self.pad_id,
                    return_dict_in_generate=True,
                )
            new = out.sequences[:, width:].tolist()
            replies = []
            for row, i in enumerate(live):
                toks = _until_stop(new[row][: budgets[i]], self.formatter.stop_ids)
                completion += len(toks)
                texts[i] = self.formatter.decode(toks)
                replies.append(new[row][: len(toks) + 1])  # with the stop token the next prompt renders after it
            self.stats.cached_tokens += sum(cut)
            if self._caching and out.past_key_values is not None:
                self._keep_rows(out.past_key_values, rows, kept, rest, replies, width)
        self.stats.add(len(requests), sum(len(p) for p in prompts), completion, time.perf_counter() - t0)
        return [reply_from_text(t, r.seed) for t, r in zip(texts, requests)]

    def _kept(self, rows: list[list[int]]) -> list[tuple[tuple[int, ...] | None, int]]:
        """For each row, the kept sequence sharing the most leading tokens with it and how many (each row keeps at
        least one token of its own; fewer than ``prefix_min`` count as none). The prefix all rows share is run once
        and kept first when nothing kept covers it."""
        if not self._caching:
            return [(None, 0)] * len(rows)
        n = leading_shared(rows, min(len(p) for p in rows) - 1)
        if n >= self.config.prefix_min and self._kv.best(rows[0][:n], n)[1] < n:
            shared = rows[0][:n]
            out = self.model(input_ids=self._torch.tensor([shared], device=self.config.device), use_cache=True)
            self._kv.put(tuple(shared), _layers(out.past_key_values, 0, list(range(n))), pinned=True)
        found = [self._kv.best(p, len(p) - 1) for p in rows]
        return [(k, c) if c >= self.config.prefix_min else (None, 0) for k, c in found]

    def _keep_rows(self, cache: Any, rows: list[list[int]], kept: list[tuple[Any, int]], rest: list[list[int]],
                   replies: list[list[int]], width: int) -> None:
        """Keep each row's prompt plus its reply (the tokens whose keys and values the cache holds)."""
        have = cache.get_seq_length()
        users = Counter(k for k, _ in kept)
        for row, (p, (k, n), r, reply) in enumerate(zip(rows, kept, rest, replies)):
            reply = reply[: max(0, have - width)]
            pos = list(range(n)) + list(range(width - len(r), width)) + list(range(width, width + len(reply)))
            key = tuple(p) + tuple(reply)
            self._kv.put(key, _layers(cache, row, pos))
            if k is not None and users[k] == 1 and k not in self._kv.pinned and key[: len(k)] == k:
                self._kv.drop(k)  # superseded by the longer sequence of the same conversation (a shared prefix stays)

    def _new_cache(self, layers: list[tuple[Any, Any]]) -> Any:
        from transformers import DynamicCache

        return DynamicCache(ddp_cache_data=layers, config=self.model.config)


class _KVStore:
    """Key/value caches of token sequences, least recently used dropped beyond ``budget`` bytes.

    Each entry is the sequence's ids and, per layer, keys and values of shape [1, heads, len, dim]. ``pinned``
    marks prefixes shared by a whole batch: a conversation's longer sequence does not supersede them."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self.pinned: set[tuple[int, ...]] = set()
        self.bytes = 0

    @staticmethod
    def _size(layers: list[tuple[Any, Any]]) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)

    def best(self, ids: list[int], limit: int) -> tuple[tuple[int, ...] | None, int]:
        """The entry sharing the most leading ids with ``ids`` (at most ``limit``) and how many."""
        best_key, best_n = None, 0
        for key in self.entries:
            n = leading_shared([ids, key], min(limit, len(key)))
            if n > best_n:
                best_key, best_n = key, n
        if best_key is not None:
            self.entries.move_to_end(best_key)
        return best_key, best_n

    def put(self, key: tuple[int, ...], layers: list[tuple[Any, Any]], pinned: bool = False) -> None:
        if key in self.entries:
            self.drop(key)
        size = self._size(layers)
        if size > self.budget:
            return
        self.entries[key] = layers
        self.bytes += size
        if pinned:
            self.pinned.add(key)
        while self.bytes > self.budget:
            self.drop(next(iter(self.entries)))

    def drop(self, key: tuple[int, ...]) -> None:
        layers = self.entries.pop(key, None)
        if layers is not None:
            self.bytes -= self._size(layers)
        self.pinned.discard(key)

    def batch(self, kept: list[tuple[tuple[int, ...] | None, int]], width: int, make: Any) -> Any:
        """A cache of ``width`` positions: row i holds its entry's first n_i keys/values, zeros after (masked)."""
        first = next(self.entries[k] for k, n in kept if k is not None)
        layers = []
        for li, (k0, v0) in enumerate(first):
            ks = k0.new_zeros((len(kept), k0.shape[1], width, k0.shape[3]))
            vs = v0.new_zeros((len(kept), v0.shape[1], width, v0.shape[3]))
            for row, (key, n) in enumerate(kept):
                if key is not None and n:
                    k, v = self.entries[key][li]
                    ks[row, :, :n] = k[0, :, :n]
                    vs[row, :, :n] = v[0, :, :n]
            layers.append((ks, vs))
        return make(layers)


def _layers(cache: Any, row: int, positions: list[int]) -> list[tuple[Any, Any]]:
    """Row ``row``'s keys and values at ``positions``, per layer, as [1, heads, len, dim] tensors."""
    import torch

    idx = torch.tensor(positions, dtype=torch.long)
    return [(layer.keys[row : row + 1].index_select(2, idx.to(layer.keys.device)),
             layer.values[row : row + 1].index_select(2, idx.to(layer.values.device))) for layer in cache.layers]


def _until_stop(toks: list[int], stops: list[int]) -> list[int]:
    for k, t in enumerate(toks):
        if t in stops:
            return toks[:k]
    return toks


class _SeededSampler:
    """A logits processor that samples each row with its own seeded generator (temperature > 0).

    It leaves the drawn token as the only finite logit, so the greedy step of ``generate``
    picks it; rows at temperature 0 are untouched (greedy).
    """

    def __init__(self, requests: list[ChatRequest], torch: Any) -> None:
        self.torch = torch
        self.rows = []
        for row, r in enumerate(requests):
            if r.sampling.temperature > 0:
                g = torch.Generator().manual_seed(int(r.seed) & 0x7FFF_FFFF_FFFF_FFFF)
                self.rows.append((row, float(r.sampling.temperature), float(r.sampling.top_p), g))

    @classmethod
    def maybe(cls, requests: list[ChatRequest], torch: Any) -> Any:
        from transformers import LogitsProcessorList

        sampler = cls(requests, torch)
        return LogitsProcessorList([sampler]) if sampler.rows else None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = self.torch
        scores = scores.clone()
        for row, temp, top_p, g in self.rows:
            probs = torch.softmax(scores[row].float().cpu() / temp, dim=-1)
            if top_p < 1.0:
                sorted_p, order = torch.sort(probs, descending=True)
                drop = torch.cumsum(sorted_p, 0) - sorted_p > top_p
                sorted_p[drop] = 0.0
                probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
            tok = int(torch.multinomial(probs, 1, generator=g))
            scores[row] = float("-inf")
            scores[row, tok] = 0.0
        return scores
