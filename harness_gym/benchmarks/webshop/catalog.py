"""A catalogue: products, their selling prices, the search index and the human goals.

Catalogues are keyed by a string so tasks, worlds and the HTTP server agree on which one
a task belongs to without shipping products around:

- ``generated:<seed>:<n_products>`` — the embedded default (``generator.py``);
- ``dir:<absolute path>`` — the original files in a folder (``loader.py``).

``get_catalog(key)`` builds a catalogue once per process (thread-safe) and caches it.
Goals follow the original ``get_human_goals``: one goal per human instruction with
non-empty attributes; price bound = the larger of two draws from the first four of
``[10, 20, …, 990]`` above the price (1e6 and no text with fewer than two); then the
goal list is shuffled with ``random.Random(goal_seed)``. The original draws prices and
bounds unseeded; here they come from ``random.Random(goal_seed)`` so runs are reproducible.
"""
from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_gym.errors import TaskDataError
from harness_gym.benchmarks.base import digest
from harness_gym.benchmarks.webshop.products import Product, product_prices
from harness_gym.benchmarks.webshop.search import PyseriniSearchEngine, SearchEngine, make_engine

GOAL_SEED = 233
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
DEFAULT_KEY = "generated:0:1000"


@dataclass
class Catalogue:
    key: str
    products: dict[str, Product]
    prices: dict[str, float]
    goals: list[dict[str, Any]]
    splits: dict[str, range]
    goal_seed: int = GOAL_SEED
    _engines: dict[str, SearchEngine | PyseriniSearchEngine] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def engine(self) -> SearchEngine:
        return self.engine_for("lucene")  # type: ignore[return-value]

    def engine_for(self, kind: str) -> SearchEngine | PyseriniSearchEngine:
        """The search index of ``kind`` ('lucene': the emulation; 'pyserini': the real one), built once."""
        with self._lock:
            if kind not in self._engines:
                asins = list(self.products)
                self._engines[kind] = make_engine(kind, asins, [self.products[a].document() for a in asins])
            return self._engines[kind]

    @property
    def prices_sha256(self) -> str:
        if not hasattr(self, "_prices_sha"):
            self._prices_sha = digest(self.prices)
        return self._prices_sha

    def search(self, keywords: str, kind: str = "lucene") -> list[Product]:
        return [self.products[a] for a in self.engine_for(kind).search(keywords)]


def human_goals(products: Iterable[Product], instructions: Mapping[str, Any],
                prices: Mapping[str, float], rng: random.Random) -> list[dict[str, Any]]:
    """The original ``get_human_goals`` (price bounds drawn from ``rng``)."""
    goals = []
    for item in products:
        for ins in instructions.get(item.asin, []) or []:
            attributes = list(ins.get("instruction_attributes") or [])
            if not attributes:
                continue
            price = prices[item.asin]
            price_range = [p for p in PRICE_RANGE if p > price][:4]
            if len(price_range) >= 2:
                _, price_upper = sorted(rng.sample(price_range, 2))
                price_text = f", and price lower than {price_upper:.2f} dollars"
            else:
                price_upper, price_text = 1000000.0, ""
            goals.append({
                "asin": item.asin,
                "category": item.category,
                "query": item.query,
                "name": item.name,
                "product_category": item.product_category,
                "instruction_text": str(ins.get("instruction", "")).strip(".") + price_text,
                "attributes": attributes,
                "price_upper": price_upper,
                "goal_options": list(ins.get("instruction_options") or []),
                "weight": 1,
            })
    return goals


def build_catalogue(key: str, products: list[Product], instructions: Mapping[str, Any],
                    splits: Mapping[str, tuple[int, int | None]], goal_seed: int = GOAL_SEED) -> Catalogue:
    """Prices, goals (shuffled with ``goal_seed``) and splits from loaded products."""
    seen: dict[str, Product] = {}
    for p in products:
        if p.asin == "nan" or len(p.asin) > 10 or p.asin in seen:
            continue  # the original skips these
        seen[p.asin] = p
    rng = random.Random(goal_seed)
    prices = product_prices(list(seen.values()), rng)
    goals = human_goals(seen.values(), instructions, prices, rng)
    random.Random(goal_seed).shuffle(goals)
    n = len(goals)
    ranges = {name: range(lo, min(n, hi if hi is not None else n)) for name, (lo, hi) in splits.items()}
    return Catalogue(key, seen, prices, goals, ranges, goal_seed)


_CACHE: dict[str, Catalogue] = {}
_CACHE_LOCK = threading.Lock()


def get_catalog(key: str) -> Catalogue:
    """The catalogue for ``key``, built once per process."""
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    if key.startswith("generated:"):
        from harness_gym.benchmarks.webshop.generator import generate_catalogue

        try:
            _, seed, n = key.split(":")
            cat = generate_catalogue(int(seed), int(n))
        except ValueError as exc:
            raise TaskDataError(f"bad generated catalogue key {key!r}: expected 'generated:<seed>:<n_products>'") from exc
    elif key.startswith("dir:"):
        from harness_gym.benchmarks.webshop.loader import load_catalogue

        cat = load_catalogue(Path(key[4:]))
    else:
        raise TaskDataError(f"unknown catalogue key {key!r}: expected 'generated:<seed>:<n>' or 'dir:<path>'")
    with _CACHE_LOCK:
        return _CACHE.setdefault(key, cat)


def catalog_key_for(data_dir: Path | None) -> str:
    return DEFAULT_KEY if data_dir is None else f"dir:{Path(data_dir).resolve()}"


def load_split(split: str, data_dir: Path | None) -> list[Any]:
    from harness_gym.benchmarks.webshop.tasks import make_task

    cat = get_catalog(catalog_key_for(data_dir))
    if split not in cat.splits:
        raise TaskDataError(f"split {split!r}: expected one of {sorted(cat.splits)}")
    return [make_task(cat.goals[i], i, cat.key, cat.goal_seed, cat.prices_sha256) for i in cat.splits[split]]
