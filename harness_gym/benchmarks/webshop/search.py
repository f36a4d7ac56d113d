"""Product search ranked as the original's pyserini/Lucene index ranks it, without Java.

The original indexes ``Product.document()`` (title, description, first bullet point, option
text, lower-cased) with pyserini 0.17.0, i.e. Anserini 0.14.3 on Lucene 8.11, and searches
with ``LuceneSearcher.search(query, k=50)``. This module emulates that chain:

- analyzer (Anserini's default English analyzer): Unicode word segmentation as Lucene's
  ``StandardTokenizer`` does it for these texts (letters, digits and ``_`` form words;
  ``'``/``.``/``:`` join letters, ``.``/``,``/``;``/``'`` join digits, one token per
  ideograph or pictographic symbol such as ``™``), English possessive
  ``'s`` removed, lower-cased, Lucene's 33 English stop words removed, Porter-stemmed
  (``PyStemmer``'s ``porter``, the algorithm of Lucene's ``PorterStemFilter``);
- scoring (Lucene 8 ``BM25Similarity``, k1=0.9, b=0.4): idf ``log(1 + (N - n + 0.5) /
  (n + 0.5))``, each document's length stored as Lucene's one-byte norm
  (``SmallFloat.intToByte4``: exact up to 40 terms, then 24 + four significant bits) and
  decoded through its 256-entry table, each term scored in float32 as Lucene 8's
  ``weight - weight / (1 + freq * (1 / norm))``, clause scores summed; a query is the bag of
  its terms, a repeated term weighted by its count (Anserini's ``BagOfWordsQueryGenerator``);
- ranking: the top ``k`` by score, equal scores by document id (the asin: Anserini sorts by
  score, then the id field; its tie adjuster then only rounds the shown scores).

``SEARCH_RETURN_N`` results at most, only documents matching at least one query term.
``PyseriniSearchEngine`` (world backend ``local:pyserini``) runs the real pyserini instead
when it and a Java runtime are installed.
"""
from __future__ import annotations

import re
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SEARCH_RETURN_N = 50
K1, B = 0.9, 0.4
# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), Anserini's default.
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
)
_L = r"[^\W\d_]"
_PICTO = "©®™\u203c\u2049\u2300-\u23ff\u2600-\u27bf\U0001f000-\U0001faff"  # emoji-like symbols: one token each
_WORD = re.compile(rf"\w+(?:(?:(?<={_L})['‘’.:·](?={_L})|(?<=\d)[.,;'‘’](?=\d))\w+)*|[{_PICTO}]")
_SINGLE = re.compile(r"([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")  # one token per ideograph/hiragana
_POSSESSIVE = ("'s", "'S", "’s", "’S", "＇s", "＇S")


def _stemmer() -> Any:
    try:
        import Stemmer  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - core dependency
        raise ImportError("WebShop search needs PyStemmer (Porter stemming as Lucene's): pip install PyStemmer") from exc
    return Stemmer.Stemmer("porter")


_STEMMER = _stemmer()
_STEMS: dict[str, str] = {}


def analyze_words(text: str) -> list[str]:
    """Tokens before stemming: segmented, possessives removed, lower-cased, stop words removed."""
    if not text.isascii():  # numbers such as ½ or ² are not word characters for the segmenter
        text = _SINGLE.sub(r" \1 ", "".join(" " if unicodedata.category(c) == "No" else c for c in text))
    out = []
    for tok in _WORD.findall(text):
        if tok.endswith(_POSSESSIVE):
            tok = tok[:-2]
        tok = tok.lower()
        if tok and tok not in STOP_WORDS:
            out.append(tok)
    return out


def tokenize(text: str) -> list[str]:
    """The index/query terms of ``text`` (Anserini's default English analyzer)."""
    words = analyze_words(text)
    new = [w for w in set(words) if w not in _STEMS]
    if new:
        _STEMS.update(zip(new, _STEMMER.stemWords(new)))
    return [_STEMS[w] for w in words]


# --- Lucene's length norm -------------------------------------------------------------------------
def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_MAX_INT4 = _long_to_int4(2**31 - 1)
_NUM_FREE_VALUES = 255 - _MAX_INT4


def length_to_norm(n: int) -> int:
    """``SmallFloat.intToByte4``: a field length as Lucene 8 stores it (0-255)."""
    return n if n < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _long_to_int4(n - _NUM_FREE_VALUES)


def norm_to_length(b: int) -> int:
    """``SmallFloat.byte4ToInt``: the length Lucene scores with."""
    return b if b < _NUM_FREE_VALUES else min(_NUM_FREE_VALUES + _int4_to_long(b - _NUM_FREE_VALUES), 2**31 - 1)


LENGTH_TABLE = np.array([norm_to_length(i) for i in range(256)], dtype=np.float32)


class SearchEngine:
    """A Lucene-BM25 index over product documents; ``search`` returns ids from ``asins``."""

    def __init__(self, asins: Sequence[str], documents: Sequence[str]) -> None:
        if len(asins) != len(documents):
            raise ValueError(f"WebShop search: {len(asins)} ids for {len(documents)} documents")
        self.asins = list(asins)
        vocab: dict[str, int] = {}
        doc_ids: list[int] = []
        term_ids: list[int] = []
        lengths = np.zeros(len(documents), dtype=np.int64)
        for d, text in enumerate(documents):
            toks = tokenize(text)
            lengths[d] = len(toks)
            term_ids.extend(vocab.setdefault(t, len(vocab)) for t in toks)
            doc_ids.extend([d] * len(toks))
        self._vocab = vocab
        n_docs = len(documents)
        # postings: (term, doc) pairs with their frequency, grouped by term
        pairs = np.asarray(term_ids, dtype=np.int64) * max(n_docs, 1) + np.asarray(doc_ids, dtype=np.int64)
        uniq, freq = np.unique(pairs, return_counts=True)
        terms, self._post_docs = np.divmod(uniq, max(n_docs, 1))
        self._post_freq = freq.astype(np.float32)
        self._ptr = np.searchsorted(terms, np.arange(len(vocab) + 1))
        self._n_docs = n_docs
        avgdl = np.float32(lengths.sum() / n_docs) if n_docs else np.float32(1.0)
        norms = np.array([length_to_norm(int(n)) for n in lengths], dtype=np.int64)
        k1, b = np.float32(K1), np.float32(B)
        # Lucene's per-index table: 1 / (k1 * ((1 - b) + b * length / avgdl)) for each of the 256 norms, float32
        cache = np.float32(1) / (k1 * ((np.float32(1) - b) + b * LENGTH_TABLE / avgdl))
        self._doc_inv_norm = cache[norms]
        # tie-break key: the id string order (Anserini sorts ties by docid)
        self._id_rank = np.empty(n_docs, dtype=np.int64)
        self._id_rank[np.argsort(np.asarray(self.asins, dtype=object), kind="stable")] = np.arange(n_docs)

    def _idf(self, df: int) -> np.float32:
        return np.float32(np.log(1 + (self._n_docs - df + 0.5) / (df + 0.5)))

    def _score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(indices, float32 scores) of the documents matching ``query``, Lucene's BM25."""
        counts: dict[int, int] = {}
        for t in tokenize(query):
            tid = self._vocab.get(t)
            if tid is not None:
                counts[tid] = counts.get(tid, 0) + 1
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        parts = []
        for tid, boost in counts.items():
            lo, hi = self._ptr[tid], self._ptr[tid + 1]
            docs, freq = self._post_docs[lo:hi], self._post_freq[lo:hi]
            weight = np.float32(np.float32(boost) * self._idf(hi - lo))
            # Lucene 8's monotonic form of weight * freq / (freq + norm), in float32
            parts.append((docs, weight - weight / (np.float32(1) + freq * self._doc_inv_norm[docs])))
        if len(parts) == 1:
            return parts[0][0], parts[0][1]
        total = np.zeros(self._n_docs, dtype=np.float64)
        for docs, vals in parts:  # Lucene sums the clause scores in double, then rounds to float
            total[docs] += vals
        idx = np.flatnonzero(total)  # every clause score is > 0 (idf > 0)
        return idx, total[idx].astype(np.float32)

    def scores(self, query: str) -> dict[int, float]:
        """Lucene's float32 BM25 score of every matching document (index -> score)."""
        idx, val = self._score(query)
        return dict(zip(idx.tolist(), val.tolist()))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        idx, val = self._score(query)
        if idx.size == 0:
            return []
        if idx.size > k:  # keep the candidates at or above the k-th score (ties included), then sort those
            keep = val >= np.partition(val, idx.size - k)[idx.size - k]
            idx, val = idx[keep], val[keep]
        top = idx[np.lexsort((self._id_rank[idx], -val))][:k]  # Lucene: score, then id
        return [self.asins[i] for i in top]


PYSERINI_HOWTO = "pip install --no-deps pyserini==0.17.0 pyjnius (the original's version) and a Java runtime (apt-get install default-jdk-headless)"


def pyserini_available() -> str:
    """'' when pyserini's Lucene can run here, else a one-line reason."""
    try:
        from pyserini.pyclass import autoclass  # type: ignore[import-not-found]

        autoclass("io.anserini.search.SimpleSearcher")
    except ImportError as exc:
        return f"pyserini is not installed ({exc}); {PYSERINI_HOWTO}"
    except Exception as exc:  # noqa: BLE001 - jnius: no JVM, wrong Anserini
        return f"pyserini cannot start its Lucene ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); {PYSERINI_HOWTO}"
    return ""


class PyseriniSearchEngine:
    """The original's search engine itself: pyserini's ``LuceneSearcher`` over a Lucene index built
    from the same documents (needs ``pip install pyserini`` and a Java runtime)."""

    def __init__(self, asins: Sequence[str], documents: Sequence[str], index_dir: str | Path | None = None) -> None:
        import json

        problem = pyserini_available()
        if problem:
            raise ImportError(f"search='pyserini': {problem}")
        from pyserini.pyclass import autoclass  # type: ignore[import-not-found]

        self.asins = list(asins)
        self._tmp = tempfile.TemporaryDirectory(prefix="harness-gym-pyserini-") if index_dir is None else None
        root = Path(index_dir) if index_dir is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        (root / "docs").mkdir(parents=True, exist_ok=True)
        with open(root / "docs" / "documents.jsonl", "w", encoding="utf-8") as f:
            for a, d in zip(self.asins, documents):
                f.write(json.dumps({"id": a, "contents": d}) + "\n")
        autoclass("io.anserini.index.IndexCollection").main(
            ["-collection", "JsonCollection", "-input", str(root / "docs"), "-index", str(root / "index"), "-generator",
             "DefaultLuceneDocumentGenerator", "-threads", "1", "-storePositions", "-storeDocvectors", "-storeRaw"])
        self._searcher = autoclass("io.anserini.search.SimpleSearcher")(str(root / "index"))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        return [h.docid for h in self._searcher.search(query, k)]


def make_engine(kind: str, asins: Sequence[str], documents: Sequence[str]) -> SearchEngine | PyseriniSearchEngine:
    if kind == "lucene":
        return SearchEngine(asins, documents)
    if kind == "pyserini":
        return PyseriniSearchEngine(asins, documents)
    raise ValueError(f"unknown WebShop search {kind!r}: expected 'lucene' (the emulation, default) or 'pyserini'")
