"""The DBBench checker against the function-calling AgentBench's own verdicts.

``fixtures/dbbench/checker_cases.jsonl`` holds (answers, label, type, verdict) rows made by
``benchmarks/oracle_dbbench_checker.py``, which ran the original result processor on
answers built from every original SELECT task (the label, copied table values, reply
strings, and perturbations of each). The project's checker must give every verdict.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness_gym.benchmarks.dbbench.checker import clean_answers, hash_value, judge_answers, normalize_value, values_match

CASES = Path(__file__).parent / "fixtures" / "dbbench" / "checker_cases.jsonl"


def _cases() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_original_verdict_is_reproduced():
    cases = _cases()
    assert len(cases) > 5000 and len({c["task"] for c in cases}) == 119
    verdicts = Counter(c["original"] for c in cases)
    assert verdicts[True] > 1500 and verdicts[False] > 3000  # the table holds both kinds of case
    wrong = [c for c in cases if judge_answers(c["answers"], c["label"]) != c["original"]]
    assert not wrong, f"{len(wrong)} of {len(cases)} verdicts differ, e.g. {wrong[:3]}"


def test_table_values_copied_as_shown_pass():
    """test:6, test:9, valid:18: the table shows `1,174`, the label is `1174.0`."""
    by_task = {(c["task"], json.dumps(c["answers"])): c["original"] for c in _cases()}
    for task, shown in (("test:6", "1,174"), ("test:9", "2,859"), ("valid:18", "32,502")):
        assert by_task[(task, json.dumps([shown]))] is True
        assert judge_answers([shown], [shown.replace(",", "") + ".0"])


# each verdict below was checked against the original processor (benchmarks/oracle_dbbench_checker.py)
@pytest.mark.parametrize("answers, label, verdict", [
    (["1,174"], ["1174.0"], True),
    (["12.5%"], ["12.5"], True),
    ([" 'Paris' "], ["Paris"], True),
    (["paris"], ["Paris"], False),  # case matters
    (["2.01"], ["2"], True),
    (["2.02"], ["2"], False),
    (["NULL"], [""], True),
    (None, ["none"], True),
    ([], ["0"], False),
    ([], [], True),
    (["1", "2"], ["2.0", "1.0"], True),
    (["1", "1"], ["1", "2"], False),  # one-to-one numeric match
    (["a", "a"], ["a"], True),  # set equality for text
    ("[('x',), ('y',)]", ["y", "x"], True),  # a pasted tool reply
    ("['a', 'b']", ["a", "b"], True),
    ("[a, 'b]", ["a", "b"], True),  # not a literal: split on commas outside quotes
    (5, ["5"], False),  # a truthy value that cannot be sliced ends the original's sample
    (0, ["0"], True),
    ("[__import__('os')]", ["0"], False),  # read as text, never run
])
def test_examples_from_the_original_rules(answers, label, verdict):
    assert judge_answers(answers, label) is verdict


def test_normalisation_details():
    assert normalize_value(" 5 %") == "5"
    assert normalize_value("1,2%") == "1,2"  # '%' returns at once: commas kept
    assert normalize_value("[1,2]") == "[1,2]"
    assert normalize_value("-Infinity") == "0" and normalize_value("+inf") == "+inf"
    assert clean_answers("[(1.5,), ('a', 'b')]") == ["1.5"]  # multi-column rows dropped
    # not a literal (the original's eval has no Decimal either): split, quotes dropped
    assert clean_answers("[(Decimal('1.5'),)]") == ["(Decimal(1.5)", ")"]
    assert values_match(["0"], ["0"]) and not values_match(["1e400"], ["1e400"])  # inf - inf is nan


def test_hash_reply_extraction():
    assert hash_value("[('03b2eddd',)]") == "03b2eddd"
    assert clean_answers(hash_value("[(None,)]")) == ["0"]  # an empty table's hash is NULL
