"""The versioned harness registry: lineage, decisions, rollback, JSON-lines persistence, hashing."""
from __future__ import annotations

import itertools

import pytest

from harness_gym.errors import ConfigError
from harness_gym.harness.files import Harness
from harness_gym.harness.registry import ACCEPTED, REJECTED, ROLLED_BACK, ROOT, HarnessRegistry


def _h(parent: Harness | None, text: str) -> Harness:
    files = {"system_prompt.md": text, "config.json": "{}\n"}
    return Harness("dbbench", files, parent=parent.version if parent else None)


def _build(path=None, clock=None):
    reg = HarnessRegistry(path, clock=clock or itertools.count().__next__)
    root = _h(None, "base\n")
    a = _h(root, "base\nA\n")
    b = _h(a, "base\nA\nB\n")
    bad = _h(a, "base\nA\nX\n")
    reg.add_root(root)
    reg.record(a, root.version, "diff-a", ACCEPTED, {"delta_in": 0.2, "delta_out": 0.0}, category="skill_missing")
    reg.record(bad, a.version, "diff-x", REJECTED, {"delta_in": 0.1, "delta_out": -0.1})
    reg.record(b, a.version, "diff-b", ACCEPTED, {"delta_in": 0.1, "delta_out": 0.1})
    return reg, root, a, b, bad


def test_versions_lineage_and_head():
    reg, root, a, b, bad = _build()
    assert reg.head == b.version
    assert reg.lineage(b.version) == [root.version, a.version, b.version]
    assert reg.lineage(bad.version) == [root.version, a.version, bad.version]
    assert [r.decision for r in reg.versions()] == [ROOT, ACCEPTED, REJECTED, ACCEPTED]
    assert reg.get(a.version).evidence["delta_in"] == 0.2
    assert reg.harness(b.version).version == b.version  # files round-trip to the same content hash
    assert reg.harness().version == b.version


def test_rollback_marks_later_versions_and_moves_head():
    reg, root, a, b, bad = _build()
    h = reg.rollback(root.version, reason="regressed")
    assert h.version == root.version and reg.head == root.version
    assert reg.get(a.version).decision == ROLLED_BACK
    assert reg.get(b.version).decision == ROLLED_BACK
    assert reg.get(b.version).evidence["rollback_reason"] == "regressed"
    assert reg.get(bad.version).decision == REJECTED  # not on the head's lineage: untouched
    with pytest.raises(ConfigError, match="decision is 'rejected'"):
        reg.rollback(bad.version)
    with pytest.raises(ConfigError, match="not in the registry"):
        reg.rollback("0" * 16)


def test_errors_name_the_problem():
    reg = HarnessRegistry()
    with pytest.raises(ConfigError, match="add_root"):
        reg.record(_h(None, "x"), "nope", "", ACCEPTED, {})
    reg.add_root(_h(None, "x"))
    with pytest.raises(ConfigError, match="use rollback"):
        reg.record(_h(None, "y"), _h(None, "x").version, "", ROLLED_BACK, {})


def test_same_content_twice_is_one_record_with_two_trials():
    reg, root, a, b, bad = _build()
    reg.record(bad, a.version, "diff-x", ACCEPTED, {"delta_in": 0.3, "delta_out": 0.0})
    rec = reg.get(bad.version)
    assert len(rec.trials) == 2 and rec.decision == ACCEPTED and reg.head == bad.version
    assert len(reg) == 4


def test_jsonl_persistence_replays_to_the_same_registry(tmp_path):
    path = tmp_path / "reg.jsonl"
    reg, root, a, b, bad = _build(path)
    reg.rollback(a.version, reason="r")
    loaded = HarnessRegistry.load(path)
    assert loaded.digest() == reg.digest()
    assert loaded.head == a.version
    assert loaded.get(b.version).decision == ROLLED_BACK
    # a torn last line (a crash mid-write) is ignored
    path.write_text(path.read_text() + '{"head": "x", "rec', encoding="utf-8")
    assert HarnessRegistry.load(path).digest() == reg.digest()


def test_digest_excludes_timestamps_but_not_decisions():
    r1 = _build(clock=itertools.count(0).__next__)[0]
    r2 = _build(clock=itertools.count(10_000).__next__)[0]
    assert r1.get(r1.head).created_at != r2.get(r2.head).created_at
    assert r1.digest() == r2.digest()
    r2.rollback(r2.lineage(r2.head)[0])
    assert r1.digest() != r2.digest()
