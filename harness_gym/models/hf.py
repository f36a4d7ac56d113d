"""``hf:<path>`` — a transformers model, batched decoding with left padding, on CPU or GPU.

One padded batch (chunks of ``max_batch``) is decoded in a worker thread, so the evaluator's event loop keeps running
episodes (and queueing their next requests) while the model computes. Sampling is seeded per request: at temperature 0
decoding is greedy; at temperature > 0 each row draws from its own ``torch.Generator`` seeded by ``ChatRequest.seed``
(one draw a step), so baseline and patched runs share random numbers (common random numbers).

**Decoding** is this module's loop over the model's forward, not ``generate``: on long prompts (3,000-token WebShop
histories, batches of 10-20) ``generate`` spends its time copying memory — its cache concatenates every layer's keys
and values into a new tensor at every step, and SDPA under a padding mask repeats the grouped key/value heads (3 for
SmolLM2's 9 query heads) into another copy. Here each layer's keys and values are written in place into a buffer
allocated for the batch (grown by a quarter when replies outrun it), SDPA attends the grouped heads where they lie
(``enable_gqa``), and a row that has stopped (stop token or its own token budget) drops out of attention. It stays in
the batch as a placeholder, so matrix products keep the batch's shape and each row's numbers are those ``generate``
computes for the same batch: greedy replies are token for token ``generate``'s and seeded draws are the same draws
(tests compare with ``generate``). Models whose cache is not plain per-layer keys/values (sliding windows) decode in
the same loop on transformers' own cache; models not on SDPA attend every row.

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

**Memory** (``batch_mb``, 8,192 by default): a batch's key/value buffer grows with rows × positions, and running
its prompts takes about as much again in activations (measured on SmolLM2-135M: 16 rows of 3,000 tokens, 2.1 GB
of keys and values, 3.5 GB at peak). The backend estimates each batch as rows × (longest prompt + largest token
budget) × twice the model's key/value bytes per position and decodes a batch over ``batch_mb`` in consecutive
parts, in request order, each as large as fits (never fewer than one row). 64 WebShop histories of ~3,000 tokens
at float32 (~19 GB estimated, what filled a 23 GB machine) thus run as 28 + 28 + 8; 10 tasks of a batch with
their patched twins (20 rows) run whole. The split depends only on the requests and the options, so a rerun
batches the same way and greedy replies reproduce.
"""
from __future__ import annotations

import asyncio
import functools
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
    decode_steps: int = 0  # forward passes after the prompts' (a batch runs to its longest reply)
    decoded_rows: int = 0  # rows still going in those passes: a stopped row drops out (generate ran all to the end)
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
    batch_mb: int = 8192  # estimated memory one decoded batch may take; larger batches run in parts (module doc)

    def __post_init__(self) -> None:
        if self.prefix_min < 1 or self.cache_mb < 0 or self.batch_mb < 1:
            raise ConfigError(f"hf:{self.path}: prefix_min and batch_mb must be >= 1 and cache_mb >= 0")
        if self.max_batch < 1 or (self.max_tokens is not None and self.max_tokens < 1):
            raise ConfigError(f"hf:{self.path}: max_batch and max_tokens must be >= 1")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ConfigError(f"hf:{self.path}: dtype={self.dtype!r}: expected float32, bfloat16 or float16")


class HFBackend(ChatBackend):
    name = "hf"
    memoize = True  # the batcher keeps its replies (models/base.py, Reply memo)

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

        layers = DynamicCache(config=self.model.config).layers
        self._plain = all(type(layer).__name__ == "DynamicLayer" for layer in layers)  # in-place buffers fit these
        self._layer_count = len(layers)
        self._caching = config.prefix_cache and config.cache_mb > 0 and self._plain  # keep and reuse key/value caches
        self._skip_rows = _install_attention(self.model)  # stopped rows can drop out of attention
        self._position_bytes = 2 * _kv_bytes(self.model.config, self.model.dtype)  # keys/values + activations

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        return await asyncio.to_thread(self.generate_sync, requests)

    def generate_sync(self, requests: list[ChatRequest]) -> list[Message]:
        prompts = [self.formatter.prompt_ids(r.messages, r.tools) for r in requests]
        return self.generate_ids(prompts, requests)

    def generate_ids(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[Message]:
        """Generate from prompt ids (in the parts ``parts`` gives); one reply per request."""
        out: list[Message] = []
        with self._lock:
            for a, b in self.parts(prompts, requests):
                out.extend(self._chunk(prompts[a:b], requests[a:b]))
        return out

    def parts(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[tuple[int, int]]:
        """The consecutive ranges ``(a, b)`` of the requests decoded as one batch each (``split_batch``)."""
        positions = [len(p) + self.budget(len(p), r) for p, r in zip(prompts, requests)]
        return split_batch(positions, self.config.max_batch, self.config.batch_mb * 2**20 // self._position_bytes)

    def budget(self, prompt_len: int, request: ChatRequest) -> int:
        cap = request.sampling.max_tokens
        if self.config.max_tokens is not None:
            cap = min(cap, self.config.max_tokens)
        return max(0, min(cap, self.context - prompt_len))

    def _chunk(self, prompts: list[list[int]], requests: list[ChatRequest]) -> list[Message]:
        budgets = [self.budget(len(p), r) for p, r in zip(prompts, requests)]
        live = [i for i, b in enumerate(budgets) if b > 0]  # a prompt that fills the context gets an empty reply
        texts = [""] * len(requests)
        t0 = time.perf_counter()
        completion = 0
        if live:
            replies = self._decode([prompts[i] for i in live], [requests[i] for i in live], [budgets[i] for i in live])
            for i, reply in zip(live, replies):
                toks = _until_stop(reply, self.formatter.stop_ids)
                completion += len(toks)
                texts[i] = self.formatter.decode(toks)
        self.stats.add(len(requests), sum(len(p) for p in prompts), completion, time.perf_counter() - t0)
        return [reply_from_text(t, r.seed) for t, r in zip(texts, requests)]

    def _decode(self, rows: list[list[int]], requests: list[ChatRequest], budgets: list[int]) -> list[list[int]]:
        """Each row's generated tokens, up to its budget or through its first stop token (module doc, Decoding)."""
        torch, device = self._torch, self.config.device
        with torch.inference_mode():
            kept = self._kept(rows)  # per row: (key of the kept sequence, how many leading tokens it serves)
            cut = [n for _, n in kept]
            width_kept = max(cut)
            rest = [p[n:] for p, n in zip(rows, cut)]
            width = width_kept + max(len(r) for r in rest)
            steps = max(budgets)
            ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
            mask = torch.ones((len(rows), width + steps), dtype=torch.long)  # generated tokens count, as in generate
            mask[:, :width] = 0
            for row, (p, n, r) in enumerate(zip(rows, cut, rest)):  # [kept part][padding][remainder]
                ids[row, :n] = torch.tensor(p[:n], dtype=torch.long)
                mask[row, :n] = 1
                ids[row, width - len(r):] = torch.tensor(r, dtype=torch.long)
                mask[row, width - len(r):] = 1
            pos = (mask[:, :width].cumsum(-1) - 1).masked_fill(mask[:, :width] == 0, 0)  # generate's positions
            ids, mask, pos = ids.to(device), mask.to(device), pos.to(device)
            cache = self._new_cache(kept, width_kept, width, width + steps)
            sampler = _SeededSampler(requests, torch)
            stops = set(self.formatter.stop_ids)
            out: list[list[int]] = [[] for _ in rows]
            done = [False] * len(rows)
            feed, at, extra = ids[:, width_kept:], pos[:, width_kept:], {}
            for step in range(steps):
                logits = self.model(input_ids=feed, attention_mask=mask[:, : width + step], position_ids=at,
                                    past_key_values=cache, use_cache=True, logits_to_keep=1, **extra).logits
                going = [row for row, d in enumerate(done) if not d]
                for row, tok in zip(going, sampler.pick(logits[:, -1].float(), going)):
                    out[row].append(tok)
                    done[row] = tok in stops or len(out[row]) >= budgets[row]
                if all(done):
                    break
                # a stopped row is fed padding (as generate does) and, with our attention, skips attention
                feed = torch.tensor([[self.pad_id if d else o[-1]] for o, d in zip(out, done)], device=device)
                at = pos[:, -1:] + step + 1
                extra = {"live_rows": _runs(done)} if self._skip_rows and any(done) else {}
                self.stats.decode_steps += 1
                self.stats.decoded_rows += done.count(False)
            self.stats.cached_tokens += sum(cut)
            if self._caching:  # a reply's last token was never run: the cache holds the ones before it
                self._keep_rows(cache, rows, kept, rest, [o[:-1] for o in out], width)
        return out

    def _kept(self, rows: list[list[int]]) -> list[tuple[tuple[int, ...] | None, int]]:
        """For each row, the kept sequence sharing the most leading tokens with it and how many (each row keeps at
        least one token of its own; fewer than ``prefix_min`` count as none). The prefix all rows share is run once
        and kept first when nothing kept covers it."""
        if not self._caching:
            return [(None, 0)] * len(rows)
        n = leading_shared(rows, min(len(p) for p in rows) - 1)
        if n >= self.config.prefix_min and self._kv.best(rows[0][:n], n)[1] < n:
            shared = rows[0][:n]
            out = self.model(input_ids=self._torch.tensor([shared], device=self.config.device), use_cache=True,
                             logits_to_keep=1)
            self._kv.put(tuple(shared), _layers(out.past_key_values, 0, list(range(n))), pinned=True)
        found = [self._kv.best(p, len(p) - 1) for p in rows]
        return [(k, c) if c >= self.config.prefix_min else (None, 0) for k, c in found]

    def _keep_rows(self, cache: Any, rows: list[list[int]], kept: list[tuple[Any, int]], rest: list[list[int]],
                   replies: list[list[int]], width: int) -> None:
        """Keep each row's prompt plus ``replies[row]``, the reply tokens whose keys and values the cache holds."""
        have = cache.get_seq_length()
        users = Counter(k for k, _ in kept)
        for row, (p, (k, n), r, reply) in enumerate(zip(rows, kept, rest, replies)):
            reply = reply[: max(0, have - width)]
            pos = list(range(n)) + list(range(width - len(r), width)) + list(range(width, width + len(reply)))
            key = tuple(p) + tuple(reply)
            self._kv.put(key, _layers(cache, row, pos))
            if k is not None and k != key and users[k] == 1 and k not in self._kv.pinned and key[: len(k)] == k:
                self._kv.drop(k)  # superseded by the longer sequence of the same conversation (a shared prefix stays)

    def _new_cache(self, kept: list[tuple[Any, int]], width_kept: int, width: int, limit: int) -> Any:
        """The batch's cache: each row's kept part (zeros up to ``width_kept``), room for ``limit`` positions."""
        from transformers import DynamicCache
        from transformers.cache_utils import Cache

        if not self._plain:
            return DynamicCache(config=self.model.config)
        layers = [_in_place_layer()(min(limit, width + 256), limit) for _ in range(self._layer_count)]
        if width_kept:
            self._kv.fill(kept, width_kept, layers)
        return Cache(layers=layers)


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

    def fill(self, kept: list[tuple[tuple[int, ...] | None, int]], width: int, layers: list[Any]) -> None:
        """Start ``layers`` (one a model layer, ``_in_place_layer``) at ``width`` positions: row i holds its entry's
        first n_i keys/values, zeros after (masked)."""
        first = next(self.entries[k] for k, n in kept if k is not None)
        for li, ((k0, v0), layer) in enumerate(zip(first, layers)):
            layer.allocate(k0, v0, len(kept))
            for row, (key, n) in enumerate(kept):
                if key is not None and n:
                    k, v = self.entries[key][li]
                    layer.keys[row, :, :n] = k[0, :, :n]
                    layer.values[row, :, :n] = v[0, :, :n]
                layer.keys[row, :, n:width] = 0
                layer.values[row, :, n:width] = 0
            layer.length = width


def _layers(cache: Any, row: int, positions: list[int]) -> list[tuple[Any, Any]]:
    """Row ``row``'s keys and values at ``positions``, per layer, as [1, heads, len, dim] tensors."""
    import torch

    idx = torch.tensor(positions, dtype=torch.long)
    return [(layer.keys[row : row + 1].index_select(2, idx.to(layer.keys.device)),
             layer.values[row : row + 1].index_select(2, idx.to(layer.values.device))) for layer in cache.layers]


def split_batch(positions: list[int], max_rows: int, limit: int) -> list[tuple[int, int]]:
    """Consecutive ranges ``(a, b)`` covering ``positions`` (each row's prompt plus reply budget), each at most
    ``max_rows`` rows with rows × its longest row ≤ ``limit`` positions, as large as that allows in order; a row
    alone is a range whatever its size."""
    out: list[tuple[int, int]] = []
    a, longest = 0, 0
    for i, n in enumerate(positions):
        if i > a and (i - a + 1 > max_rows or (i - a + 1) * max(longest, n) > limit):
            out.append((a, i))
            a, longest = i, 0
        longest = max(longest, n)
    if positions:
        out.append((a, len(positions)))
    return out


def _kv_bytes(config: Any, dtype: Any) -> int:
    """Bytes of keys and values one position takes across the model's layers."""
    heads = getattr(config, "num_attention_heads", 1)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * dtype.itemsize


def _until_stop(toks: list[int], stops: list[int]) -> list[int]:
    for k, t in enumerate(toks):
        if t in stops:
            return toks[:k]
    return toks


class _SeededSampler:
    """Each row's next token: the argmax at temperature 0, else a draw from the row's own generator, seeded by its
    request, from its logits at that temperature (then top-p). A row draws once per step it decodes."""

    def __init__(self, requests: list[ChatRequest], torch: Any) -> None:
        self.torch = torch
        self.rows: dict[int, tuple[float, float, Any]] = {}
        for row, r in enumerate(requests):
            if r.sampling.temperature > 0:
                g = torch.Generator().manual_seed(int(r.seed) & 0x7FFF_FFFF_FFFF_FFFF)
                self.rows[row] = (float(r.sampling.temperature), float(r.sampling.top_p), g)

    def pick(self, scores: Any, rows: list[int]) -> list[int]:
        """The next token of each of ``rows`` from ``scores``, the batch's float32 logits [rows, vocab]."""
        torch = self.torch
        greedy = scores.argmax(-1).tolist()
        out = []
        for row in rows:
            if row not in self.rows:
                out.append(greedy[row])
                continue
            temp, top_p, g = self.rows[row]
            probs = torch.softmax(scores[row].float().cpu() / temp, dim=-1)
            if top_p < 1.0:
                sorted_p, order = torch.sort(probs, descending=True)
                drop = torch.cumsum(sorted_p, 0) - sorted_p > top_p
                sorted_p[drop] = 0.0
                probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
            out.append(int(torch.multinomial(probs, 1, generator=g)))
        return out


def _runs(done: list[bool]) -> tuple[tuple[int, int], ...]:
    """The runs ``(a, b)`` of consecutive rows not done."""
    runs: list[tuple[int, int]] = []
    for row, d in enumerate(done):
        if d:
            continue
        if runs and runs[-1][1] == row:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return tuple(runs)


_ATTENTION = "harness_gym_sdpa"


def _install_attention(model: Any) -> bool:
    """Switch a model that attends with SDPA to ``_sdpa_rows``; True if it does (stopped rows then skip attention)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if getattr(model.config, "_attn_implementation", None) not in ("sdpa", _ATTENTION):
        return False
    AttentionInterface.register(_ATTENTION, _sdpa_rows)
    AttentionMaskInterface.register(_ATTENTION, sdpa_mask)  # the masks SDPA takes
    model.set_attn_implementation(_ATTENTION)
    return True


def _sdpa_rows(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
               scaling: float | None = None, is_causal: bool | None = None,
               live_rows: tuple[tuple[int, int], ...] | None = None, **_kwargs: Any) -> tuple[Any, None]:
    """transformers' SDPA attention, but grouped key/value heads are attended where they lie (``enable_gqa``;
    transformers copies them ``num_key_value_groups`` times whenever there is a padding mask) and, given
    ``live_rows``, only those runs of rows attend (the others get zeros). Each row's numbers are the whole batch's."""
    import torch

    causal = query.shape[2] > 1 and attention_mask is None and (
        getattr(module, "is_causal", True) if is_causal is None else is_causal)
    gqa = key.shape[1] != query.shape[1]

    def attend(a: int, b: int) -> Any:
        mask = attention_mask if attention_mask is None or attention_mask.shape[0] == 1 else attention_mask[a:b]
        return torch.nn.functional.scaled_dot_product_attention(
            query[a:b], key[a:b], value[a:b], attn_mask=mask, dropout_p=dropout, scale=scaling, is_causal=causal,
            enable_gqa=gqa)

    if live_rows is None:
        out = attend(0, query.shape[0])
    else:
        out = query.new_zeros((*query.shape[:3], value.shape[-1]))
        for a, b in live_rows:
            out[a:b] = attend(a, b)
    return out.transpose(1, 2).contiguous(), None


@functools.cache
def _in_place_layer() -> type:
    """The cache layer class of the decode loop (built on first use: transformers is an optional extra)."""
    from transformers.cache_utils import CacheLayerMixin

    class InPlaceLayer(CacheLayerMixin):  # type: ignore[misc]
        """One layer's keys and values [batch, heads, positions, dim], written in place into a buffer of ``size``
        positions, grown by a quarter (up to ``limit``) when full: a copy per growth, none per step. ``update``
        returns views of the positions written so far."""

        is_sliding = False

        def __init__(self, size: int, limit: int) -> None:
            super().__init__()
            self.size, self.limit, self.length = size, limit, 0

        def allocate(self, keys: Any, values: Any, batch: int) -> None:
            self.keys = keys.new_empty((batch, keys.shape[1], self.size, keys.shape[3]))
            self.values = values.new_empty((batch, values.shape[1], self.size, values.shape[3]))
            self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            self.allocate(key_states, value_states, key_states.shape[0])

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            end = self.length + key_states.shape[2]
            if end > self.keys.shape[2]:
                self._grow(end)
            self.keys[:, :, self.length:end] = key_states
            self.values[:, :, self.length:end] = value_states
            self.length = end
            return self.keys[:, :, :end], self.values[:, :, :end]

        def _grow(self, need: int) -> None:
            self.size = max(need, min(self.limit, self.size + self.size // 4))
            keys, values = self.keys, self.values
            self.allocate(keys, values, keys.shape[0])
            self.keys[:, :, : self.length] = keys[:, :, : self.length]
            self.values[:, :, : self.length] = values[:, :, : self.length]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.length + query_length, 0

        def get_seq_length(self) -> int:
            return self.length

        def get_max_length(self) -> int:
            return -1

    return InPlaceLayer
