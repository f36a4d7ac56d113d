"""BM25 product search with ``bm25s`` (the original uses pyserini/Lucene, which needs Java).

Documents are the original's (``Product.document``: title, description, first bullet
point, option text, lower-cased). Scoring is Lucene's BM25 with Anserini's defaults
(k1=0.9, b=0.4). The analyzer differs from Lucene's English analyzer in one documented
way: Porter stemming is replaced by a minimal plural stemmer (``ies``->``y``, ``es``/``s``
stripped), which keeps the index dependency-free and deterministic. Like Lucene, only
documents matching at least one query term are returned, ties broken by index order, and
the top ``SEARCH_RETURN_N`` are kept.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

SEARCH_RETURN_N = 50
K1, B = 0.9, 0.4
# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
)
_TOKEN = re.compile(r"[a-z0-9]+")


def stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith(("ches", "shes", "sses", "xes")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class SearchEngine:
    """A BM25 index over product documents; ``search`` returns indices into ``asins``."""

    def __init__(self, asins: Sequence[str], documents: Sequence[str]) -> None:
        try:
            import bm25s  # type: ignore[import-untyped]
        except ImportError as exc:  # pragma: no cover - core dependency
            raise ImportError("WebShop search needs bm25s: pip install bm25s") from exc
        self.asins = list(asins)
        corpus = [tokenize(d) or ["__empty__"] for d in documents]
        self._bm25 = bm25s.BM25(k1=K1, b=B, method="lucene")
        self._bm25.index(corpus, show_progress=False)
        self._vocab = self._bm25.vocab_dict

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        tokens = [t for t in tokenize(query) if t in self._vocab]
        if not tokens:
            return []
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        hits = np.flatnonzero(scores > 0)
        if hits.size == 0:
            return []
        # sort by score descending, then by index (Lucene breaks ties by doc id)
        order = hits[np.lexsort((hits, -scores[hits]))][:k]
        return [self.asins[i] for i in order]
