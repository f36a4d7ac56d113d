"""The WebShop world, reward and search against the original's rules."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from harness_gym.benchmarks.webshop import reward as reward_mod
from harness_gym.benchmarks.webshop.catalog import get_catalog, load_split
from harness_gym.benchmarks.webshop.products import Product, parse_pricing
from harness_gym.benchmarks.webshop.search import K1, B, SearchEngine, length_to_norm, norm_to_length, tokenize
from harness_gym.benchmarks.webshop.world import WebShopWorld, parse_action
from harness_gym.types import ToolCall

TASKS = load_split("test", None)
TASK = TASKS[0]
CAT = get_catalog(TASK.catalog)


def _world():
    w = WebShopWorld()
    obs = w.reset(TASK)
    return w, obs


def test_search_page_observation_and_clickables():
    w, obs = _world()
    assert obs == f"WebShop [SEP] Instruction: [SEP] {TASK.instruction} [SEP] Search"
    assert w.available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    assert TASK.asin not in obs


def test_results_item_subpages_and_navigation():
    w, _ = _world()
    r = w.act("search[" + TASK.goal["query"] + "]")
    assert r.info["valid"] and r.observation.startswith(f"Instruction: [SEP] {TASK.instruction} [SEP] Back to Search [SEP] Page 1 (Total results: ")
    assert "[SEP] Next > [SEP]" in r.observation and "< Prev" not in r.observation
    c = w.clickables()
    assert c[:2] == ["back to search", "next >"] and all(x == x.lower() for x in c)
    assert len(c) - 2 == min(10, len(w.results)) and len(w.results) <= 50
    w.act("click[next >]")
    assert "Page 2 " in w.observation() and w.clickables()[:3] == ["back to search", "< prev", "next >"]
    w.act("click[< prev]")
    asin = w.clickables()[2]
    w.act(f"click[{asin}]")
    obs = w.observation()
    assert "[SEP] Back to Search [SEP] < Prev [SEP]" in obs and obs.endswith("Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
    assert "Price: $" in obs and "[SEP] Rating: N.A. [SEP]" in obs  # the original loads no ratings
    w.act("click[reviews]")
    assert w.observation().endswith("[SEP] Back to Search [SEP] < Prev")  # ... and no reviews
    w.act("click[< prev]")
    w.act("click[features]")
    assert w.clickables() == ["back to search", "< prev"] and w.page == "item_sub"
    w.act("click[< prev]")
    assert w.page == "item"
    w.act("click[< prev]")
    assert w.page == "results" and w.page_num == 1
    w.act("click[back to search]")
    assert w.observation().startswith("WebShop [SEP]")


def test_invalid_actions_are_silent_noops_and_search_works_anywhere():
    w, obs = _world()
    for bad in ("click[buy now]", "click[search]", "buy", "click[]", "search[]", "jump[x]"):
        r = w.act(bad)
        assert r.observation == obs and not r.info["valid"] and r.info["reward"] == 0 and not r.done
    w.act("search[shirt]")
    asin = w.clickables()[2]
    w.act(f"click[{asin}]")
    r = w.act("search[Blue Shoes]")  # accepted on the item page too; lower-cased
    assert r.info["valid"] and w.page == "results" and w.keywords == ["blue", "shoes"]


def test_buy_now_scores_with_the_original_formula_and_ends():
    w, _ = _world()
    goal = TASK.goal
    w.act("search[" + goal["query"] + "]")
    w.results = [CAT.products[goal["asin"]]] + w.results  # put the target on page 1
    w.act(f"click[{goal['asin'].lower()}]")
    for v in goal["goal_options"]:
        assert w.act(f"click[{v}]").info["valid"]
    r = w.act("click[buy now]")
    assert r.done and r.info["reward"] == pytest.approx(1.0) and w.success
    assert "Your score (min 0.0, max 1.0) [SEP] 1.0" in r.observation
    assert r.info["noun_extractor"] == reward_mod.NOUN_EXTRACTOR


def _product(**kw) -> Product:
    base = dict(asin="B000000001", name="Acme Cotton Hoodie", category="fashion", query="hoodie", product_category="A › B › Hoodies",
                description="soft fleece", bullets=("machine wash",), price_tag="$10.0", pricing=(10.0,), options=(),
                attributes=("long sleeve",))
    base.update(kw)
    return Product(**base)


def test_reward_parts_match_hand_computation():
    goal = {"query": "hoodie", "product_category": "A › B › Hoodies", "name": "Other Cotton Hoodie",
            "attributes": ["long sleeve", "machine wash", "waterproof"], "goal_options": ["navy blue", "large"], "price_upper": 20.0}
    p = _product()
    # attributes: fuzzy (long sleeve), substring of bullets (machine wash), missing (waterproof) = 2
    # options: "navy blue" normalizes to "blue" on both sides (1); "small" does not match "large" (0)
    score, info = reward_mod.get_reward(p, goal, 15.0, {"color": "navy blue", "size": "small"})
    assert info["r_type"] == 1.0 and info["query_match"]
    assert score == pytest.approx((2 + 1 + 1) / 6)
    over, _ = reward_mod.get_reward(p, goal, 25.0, {"color": "navy blue", "size": "small"})
    assert over == pytest.approx((2 + 1 + 0) / 6)


def test_type_factor_levels():
    goal = {"query": "q", "product_category": "X › Y", "name": "Cotton Hoodie", "attributes": ["a"], "goal_options": [], "price_upper": 1e6}
    assert reward_mod.type_reward(_product(name="Wool Blanket", query="z", product_category="Z"), goal)["r_type"] == 0.0
    half = reward_mod.type_reward(_product(name="Hoodie Blanket Pillow Lamp Rug", query="z", product_category="Z"), {**goal, "name": "Hoodie Sofa Chair Desk Shelf Table"})
    assert half["title_score"] == pytest.approx(1 / 6) and half["r_type"] == 0.5  # six nouns, "hoodie" shared
    assert reward_mod.type_reward(_product(name="Cotton Hoodie", query="z", product_category="Z"), goal)["r_type"] == 1.0


def test_normalize_color_and_noun_extractor_reported():
    assert reward_mod.normalize_color("dark navy blue") == "blue"  # the first colour in the original's list order
    assert reward_mod.normalize_color("plain") == "plain"
    assert reward_mod.NOUN_EXTRACTOR in ("fallback",) or reward_mod.NOUN_EXTRACTOR.startswith("spacy:")
    assert "hoodie" in reward_mod.nouns("Acme Women's Cotton Hoodie")


def test_pricing_parse_like_the_original():
    assert parse_pricing("$12.99") == ((12.99,), "$12.99")
    assert parse_pricing("$5.49 - $9.99") == ((5.49, 9.99), "$5.49 to $9.99")
    assert parse_pricing("") == ((100.0,), "$100.0")


def _reference_bm25(docs: list[list[str]], query: list[str]) -> list[float]:
    """Lucene BM25 written out directly (idf = ln(1 + (N - df + .5) / (df + .5)); the length as
    Lucene's one-byte norm decodes it; a repeated query term counts once per repeat)."""
    n, avg = len(docs), sum(len(d) for d in docs) / len(docs)
    df = Counter(t for d in docs for t in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        dl = norm_to_length(length_to_norm(len(d)))
        s = 0.0
        for t, boost in Counter(query).items():
            if t in tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += boost * idf * tf[t] / (tf[t] + K1 * (1 - B + B * dl / avg))
        out.append(s)
    return out


def test_bm25_ranking_matches_a_reference_implementation():
    texts = [p.document() for p in list(CAT.products.values())[:300]]
    engine = SearchEngine([str(i) for i in range(len(texts))], texts)
    docs = [tokenize(t) for t in texts]
    for q in ("cotton hoodie navy", "gluten free protein bars", "usb c cable fast charging", "cable cable usb", "zzzz"):
        ref = _reference_bm25(docs, tokenize(q))
        expect = sorted((i for i, s in enumerate(ref) if s > 0), key=lambda i: (-round(ref[i], 4), i))[:50]
        got = [int(x) for x in engine.search(q)]
        assert [round(ref[i], 3) for i in got] == [round(ref[i], 3) for i in expect]


def test_parse_action_is_greedy_like_the_original():
    assert parse_action("click[buy now]") == ("click", "buy now")
    assert parse_action("search[a [b]]") == ("search[a ", "b]")
    assert parse_action("nothing") == ("nothing", None)


def test_tool_calls_map_to_actions():
    w, _ = _world()
    r = w.step(ToolCall("1", "search_action", {"keywords": "hoodie", "extra": "ignored"}))
    assert r.info["valid"] and w.keywords == ["hoodie"]
