"""WebShop search against the original's pyserini/Lucene: the analyzer's terms, Lucene's length
norm and the page-1 ranking recorded from pyserini 0.17.0 itself (benchmarks/bench_webshop_search.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.webshop import search as search_mod
from harness_gym.benchmarks.webshop.catalog import get_catalog
from harness_gym.benchmarks.webshop.client import world_factory
from harness_gym.benchmarks.webshop.search import SearchEngine, length_to_norm, norm_to_length, tokenize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_webshop_search as bench  # noqa: E402

# Anserini 0.14.3's DefaultEnglishAnalyzer (pyserini 0.17.0) on these texts, as it printed them
ANSERINI_TOKENS = {
    '日本語のテキスト 中文 한국어': ['日', '本', '語', 'の', 'テキスト', '中', '文', '한국어'],
    'don‘t it’s a·b 1‘000': ['don‘t', 'a·b', '1‘000'],
    'émigré façade coöperate': ['émigré', 'façad', 'coöper'],
    'ﬁne ﬂour': ['ﬁne', 'ﬂour'],
    'x²y 10³ café™': ['x', 'y', '10', 'café', '™'],
    'naïve‚test „quote“': ['naïv', 'test', 'quot'],
    'TM™ (R)® ©2020': ['tm', '™', 'r', '®', '©', '2020'],
    'a—b a–b a/b a\\b a|b a+b a=b a#b a@b.com http://x.com/y': ['b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b.com', 'http', 'x.com', 'y'],
    'wi-fi 3d-printed 2.5" x 3\'': ['wi', 'fi', '3d', 'print', '2.5', 'x', '3'],
    "HELLO World's BEST": ['hello', 'world', 'best'],
    "Men's D.O.N. Issue 2 shoes": ['men', 'd.o.n', 'issu', '2', 'shoe'],
    '3.4 fl oz (pack of 1)': ['3.4', 'fl', 'oz', 'pack', '1'],
    'x-large 10x12 inch': ['x', 'larg', '10x12', 'inch'],
    '1,000 pcs 12.5oz $12.99': ['1,000', 'pc', '12.5oz', '12.99'],
    "don't stop: color:black": ["don't", 'stop', 'color:black'],
    'e-mail a_b c.d.e 4k': ['e', 'mail', 'a_b', 'c.d.e', '4k'],
    "it's the children's toys": ['children', 'toi'],
    'running runners ran easily': ['run', 'runner', 'ran', 'easili'],
    'generalization relational conditional': ['gener', 'relat', 'condit'],
    'caféine naïve über straße': ['caféin', 'naïv', 'über', 'straße'],
    't-shirt tees jeans': ['t', 'shirt', 'tee', 'jean'],
    '50% off 3/4 sleeve': ['50', 'off', '3', '4', 'sleev'],
    'size: 8.5 wide, color: navy | white': ['size', '8.5', 'wide', 'color', 'navi', 'white'],
    'ponies caresses cats feed agreed': ['poni', 'caress', 'cat', 'feed', 'agre'],
    'word...word 1.2.3 a.1 1.a': ['word', 'word', '1.2.3', '1', '1'],
    "O'Neill’s shop’s": ["o'neil", 'shop'],
    'hyper-realistic 2-in-1 set': ['hyper', 'realist', '2', '1', 'set'],
    'colour №5 ½ grey — black': ['colour', '5', 'grei', 'black'],
    'usb-c 3.0 hub 100w': ['usb', 'c', '3.0', 'hub', '100w'],
    "i'm looking for gluten free bars, and price lower than 30.00 dollars": ["i'm", 'look', 'gluten', 'free', 'bar', 'price', 'lower', 'than', '30.00', 'dollar'],
}
# org.apache.lucene.util.SmallFloat (Lucene 8.11) intToByte4 / byte4ToInt, as it printed them
LUCENE_NORMS = {0: 0, 1: 1, 23: 23, 24: 24, 39: 39, 40: 40, 41: 40, 42: 41, 57: 48, 63: 49, 64: 50, 100: 57, 128: 61, 255: 70, 256: 70, 1000: 87, 4000: 103, 1000000: 167}
LUCENE_DECODED = {0: 0, 23: 23, 24: 24, 39: 39, 40: 40, 41: 42, 48: 56, 49: 60, 50: 64, 87: 984, 103: 3864, 167: 983064, 255: 2013265944}


@pytest.mark.parametrize("text", sorted(ANSERINI_TOKENS))
def test_terms_are_anserinis_default_english_analyzer(text):
    assert tokenize(text) == ANSERINI_TOKENS[text]


def test_length_norm_is_lucenes_smallfloat():
    assert {n: length_to_norm(n) for n in LUCENE_NORMS} == LUCENE_NORMS
    assert {b: norm_to_length(b) for b in LUCENE_DECODED} == LUCENE_DECODED
    assert all(norm_to_length(length_to_norm(n)) <= n for n in range(5000))


def test_equal_scores_rank_by_document_id_as_pyserini():
    # pyserini's order on this corpus: A2, B1, B3, B5, B9, C0 for "red shoes" (ties by id, not by index order)
    ids = ["B9", "B1", "B5", "A2", "C0", "B3"]
    docs = ["red shoes", "red shoes", "red shoes", "blue red shoes shoes", "red", "shoes red"]
    engine = SearchEngine(ids, docs)
    assert engine.search("red shoes") == ["A2", "B1", "B3", "B5", "B9", "C0"]
    assert engine.search("red") == ["C0", "B1", "B3", "B5", "B9", "A2"]
    assert engine.search("the") == [] and engine.search("") == []
    with pytest.raises(ValueError, match="2 ids for 1 documents"):
        SearchEngine(["a", "b"], ["x"])


def test_page_one_is_pyserinis_on_every_recorded_query():
    recorded = json.loads(bench.fixture_path("generated:0:1000").read_text())["results"]
    assert len(recorded) >= 1000
    cat = get_catalog("generated:0:1000")
    assert sorted(recorded) == bench.queries(cat)
    res = bench.agreement(cat.engine, recorded)
    assert res["page1_order"] == res["queries"], res


def test_pyserini_backend_runs_or_says_why_in_one_line():
    problem = search_mod.pyserini_available()
    if problem:
        with pytest.raises(ConfigError) as exc:
            world_factory("local:pyserini")
        assert "\n" not in str(exc.value) and "pip install --no-deps pyserini==0.17.0" in str(exc.value)
        return
    cat = get_catalog("generated:0:1000")
    recorded = json.loads(bench.fixture_path("generated:0:1000").read_text())["results"]
    engine = cat.engine_for("pyserini")
    some = sorted(recorded)[:50]
    assert [engine.search(q)[:10] for q in some] == [recorded[q] for q in some]
    world = world_factory("local:pyserini")()
    assert world.search_kind == "pyserini"
