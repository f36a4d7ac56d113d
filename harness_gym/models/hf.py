"""``hf:<path>`` — a transformers model, batched generation with left padding, on CPU or GPU.

One ``generate`` call runs one padded batch (chunks of ``max_batch``) in a worker thread, so
the evaluator's event loop keeps running episodes (and queueing their next requests) while
the model computes. Sampling is seeded per request: at temperature 0 decoding is greedy; at
temperature > 0 each row draws from its own ``torch.Generator`` seeded by ``ChatRequest.seed``,
so baseline and patched runs share random numbers (common random numbers).

**Prefix cache** (``prefix_cache``, on by default): the prompts of one batch share their
first tokens (the system prompt and tool schema: 469 tokens of a DBBench prompt, the same for
every episode and round). The backend computes that prefix's key/value cache once, keeps the
last few (keyed by the prefix ids), and runs each row's remainder on top of it: rows are laid
out as ``[prefix][padding][remainder]`` with the padding masked, so every token keeps its
position and the greedy reply is the one a whole prompt gives (a test checks the texts).
``prefix_cache=0`` runs whole prompts.
"""
from __future__ import annotations

import asyncio
import threading
import time
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
    prefix_cache: bool = True  # reuse the key/value cache of the prefix a batch's prompts share
    prefix_min: int = 32  # shorter shared prefixes run whole

    def __post_init__(self) -> None:
        if self.prefix_min < 1:
            raise ConfigError(f"hf:{self.path}: prefix_min must be >= 1")
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
        self._prefixes: dict[tuple[int, ...], Any] = {}  # prefix ids -> its key/value cache (a few, oldest dropped)

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
            shared = self._shared_prefix([prompts[i] for i in live])
            rest = [prompts[i][len(shared):] for i in live]
            width = len(shared) + max(len(r) for r in rest)
            ids = torch.full((len(live), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(live), width), dtype=torch.long)
            ids[:, : len(shared)] = torch.tensor(shared, dtype=torch.long)
            mask[:, : len(shared)] = 1
            for row, r in enumerate(rest):  # [prefix][padding][remainder]: the padding is masked
                ids[row, width - len(r):] = torch.tensor(r, dtype=torch.long)
                mask[row, width - len(r):] = 1
            processors = _SeededSampler.maybe([requests[i] for i in live], torch)
            with torch.inference_mode():
                cache = self._prefix_cache(shared, len(live)) if shared else None
                gen = self.model.generate(
                    input_ids=ids.to(self.config.device), attention_mask=mask.to(self.config.device),
                    max_new_tokens=max(budgets[i] for i in live), do_sample=False, num_beams=1,
                    temperature=None, top_p=None, top_k=None, past_key_values=cache,
                    logits_processor=processors, eos_token_id=self.formatter.stop_ids, pad_token_id=self.pad_id,
                )
            new = gen[:, width:].tolist()
            for row, i in enumerate(live):
                toks = _until_stop(new[row][: budgets[i]], self.formatter.stop_ids)
                completion += len(toks)
                texts[i] = self.formatter.decode(toks)
        self.stats.add(len(requests), sum(len(p) for p in prompts), completion, time.perf_counter() - t0)
        return [reply_from_text(t, r.seed) for t, r in zip(texts, requests)]


    def _shared_prefix(self, prompts: list[list[int]]) -> list[int]:
        """The leading ids every prompt shares (each keeps at least one id of its own), or [] when
        the prefix cache is off or the shared part is shorter than ``prefix_min``."""
        if not self.config.prefix_cache:
            return []
        n = leading_shared(prompts, min(len(p) for p in prompts) - 1)
        return list(prompts[0][:n]) if n >= self.config.prefix_min else []

    def _prefix_cache(self, prefix: list[int], rows: int) -> Any:
        """A fresh cache holding ``prefix``'s keys and values for ``rows`` rows (the prefix runs once, then is kept)."""
        import copy

        torch = self._torch
        key = tuple(prefix)
        kv = self._prefixes.pop(key, None)
        if kv is None:
            out = self.model(input_ids=torch.tensor([prefix], device=self.config.device), use_cache=True)
            kv = out.past_key_values
        self._prefixes[key] = kv  # most recently used last
        while len(self._prefixes) > 4:
            self._prefixes.pop(next(iter(self._prefixes)))
        cache = copy.deepcopy(kv)
        if rows > 1:
            cache.batch_repeat_interleave(rows)
        return cache


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
