"""Leaderboard submissions: a fresh one verifies; tampered ones are rejected with the first mismatch."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness_gym.leaderboard import (
    SubmissionError,
    build_submission,
    save_submission,
    validate,
    verify_submission,
)
from harness_gym.leaderboard.cli import main as lb_main
from harness_gym.leaderboard.render import render
from harness_gym.leaderboard.schema import SCHEMA, schema_text

ROOT = Path(__file__).resolve().parents[1]
ENV = "HarnessEdit-DBBench-v0"
KW = {"batch_size": 6, "heldout_batch_size": 3}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    import harness_gym  # noqa: F401
    from harness_gym.bench import run_bench

    out = tmp_path_factory.mktemp("lb") / "bench.jsonl"
    return run_bench([ENV], ["noop", "template"], 3, out, env_kwargs=KW, progress=False).rows


@pytest.fixture(scope="module")
def template_sub(rows: list[dict]) -> dict:
    return build_submission(rows, name="t-template", policy="template", env_id=ENV, env_kwargs={"heldout_batch_size": 3})


def _first_nonzero(sub: dict) -> int:
    return next(i for i, e in enumerate(sub["episodes"]) if e["claimed"]["reward"] != 0)


def test_fresh_submission_verifies(template_sub: dict) -> None:
    assert template_sub["env"]["kwargs"]["batch_size"] == 6 and template_sub["seeds"] == [0, 1, 2]
    assert any(e["claimed"]["reward"] != 0 for e in template_sub["episodes"]), "template should move some batch"
    verdict = verify_submission(template_sub)
    assert verdict.accepted, verdict.message
    assert verdict.episodes_checked == 3 and "submitted with" not in verdict.message
    older = {**template_sub, "package": {**template_sub["package"], "version": "0.0.1"}}
    verdict = verify_submission(older, limit=1)
    assert verdict.accepted and "submitted with harness-gym 0.0.1" in verdict.message, verdict.message


def test_changed_reward_is_rejected_with_first_mismatch(template_sub: dict) -> None:
    bad = copy.deepcopy(template_sub)
    bad["episodes"][1]["claimed"]["reward"] += 0.5
    bad["episodes"][2]["claimed"]["patched_score"] = 1.0  # a later lie is not the one reported
    verdict = verify_submission(bad)
    assert not verdict.accepted
    assert verdict.message.startswith("rejected: episode 1 (seed 1): reward: claimed ")
    assert f"recomputed {template_sub['episodes'][1]['claimed']['reward']!r}" in verdict.message
    assert "\n" not in verdict.message


def test_changed_patch_is_rejected(template_sub: dict, rows: list[dict]) -> None:
    i = _first_nonzero(template_sub)
    noop_patch = next(r["patch"] for r in rows if r["policy"] == "noop")
    bad = copy.deepcopy(template_sub)
    bad["episodes"][i]["patch"] = noop_patch  # claims the template's reward for a no-op
    verdict = verify_submission(bad)
    assert not verdict.accepted
    assert verdict.message.startswith(f"rejected: episode {i} (seed {i}): reward: claimed ")
    assert verdict.message.endswith("recomputed 0.0")


def test_swapped_task_id_is_rejected(template_sub: dict) -> None:
    bad = copy.deepcopy(template_sub)
    others = [e["batch"][0] for e in bad["episodes"][1:]]
    swap = next(t for t in others if t not in bad["episodes"][0]["batch"])
    bad["episodes"][0]["batch"][0] = swap
    verdict = verify_submission(bad)
    assert verdict.message.startswith("rejected: episode 0 (seed 0): batch_digest: claimed "), verdict.message
    bad["episodes"][0]["batch"][0] = "gen-test:no-such-task"
    verdict = verify_submission(bad)
    assert verdict.message == "rejected: episode 0 (seed 0): batch: claimed gen-test:no-such…, recomputed not in split"


def test_cli_rejects_with_one_line_and_exit_1(template_sub: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = copy.deepcopy(template_sub)
    bad["episodes"][0]["claimed"]["baseline_score"] = 0.123
    path = save_submission(bad, tmp_path / "bad.json")
    assert lb_main(["leaderboard", "verify", "-q", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"{path}: rejected: episode 0 (seed 0): baseline_score: claimed 0.123, recomputed " \
                  f"{template_sub['episodes'][0]['claimed']['baseline_score']!r}"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda s: s.pop("seeds"), "schema: $: missing required field 'seeds'"),
    (lambda s: s["episodes"][0]["claimed"].update(reward="0.1"), "schema: $.episodes[0].claimed.reward: expected number, got string"),
    (lambda s: s["episodes"][1].update(packet_sha256="abc"), "schema: $.episodes[1].packet_sha256: expected a string matching"),
    (lambda s: s.update(extra=1), "schema: $: unknown field 'extra'"),
    (lambda s: s["env"].update(id="DBBench"), "schema: $.env.id: expected a string matching"),
])
def test_schema_errors_are_one_line(template_sub: dict, tmp_path: Path, capsys: pytest.CaptureFixture, mutate, expected: str) -> None:
    bad = copy.deepcopy(template_sub)
    mutate(bad)
    with pytest.raises(SubmissionError, match="^" + expected.replace("[", r"\[").replace("$", r"\$").replace(".", r"\.")):
        validate(bad)
    path = save_submission(bad, tmp_path / "bad.json")
    assert lb_main(["leaderboard", "verify", "-q", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err
    (tmp_path / "torn.json").write_text("{", encoding="utf-8")
    assert lb_main(["leaderboard", "verify", "-q", str(tmp_path / "torn.json")]) == 1
    assert "not valid JSON" in capsys.readouterr().err


def test_published_schema_matches_checker(template_sub: dict) -> None:
    assert (ROOT / "leaderboards" / "schema" / "submission.schema.json").read_text(encoding="utf-8") == schema_text()
    try:
        import jsonschema
    except ImportError:
        return  # the hand-written checker is the one that runs; jsonschema only cross-checks it
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(template_sub)


def test_committed_submissions_are_valid() -> None:
    from harness_gym.leaderboard import load_submission

    subs = sorted((ROOT / "leaderboards" / "submissions").glob("*.json"))
    for path in subs:
        load_submission(path)  # verifying them all is the maintainers' job (minutes), not a unit test's


def _fake(name: str, same: list[float], held: list[float] | None) -> dict:
    eps = [{"seed": i, "batch": ["gen-test:1"], "batch_digest": "0" * 64, "packet_sha256": "0" * 64, "patch": "",
            "patch_valid": True, "claimed": {"reward": r, "baseline_score": 0.5, "patched_score": 0.5 + r,
                                             "heldout_delta": None if held is None else held[i]}}
           for i, r in enumerate(same)]
    return {"format": "harness-gym-submission-v1", "name": name, "policy": name,
            "env": {"id": ENV, "version": 0, "kwargs": {"batch_size": 1, "heldout_batch_size": 1 if held else 0}},
            "package": {"name": "harness-gym", "version": "0.1.0"}, "target": {"model": "sim", "sampling": {"temperature": 0.0}},
            "seeds": list(range(len(same))), "attempts": 1, "verified": False, "episodes": eps}


def test_render_ranks_on_heldout_delta(tmp_path: Path) -> None:
    # "overfit" wins on the same batch but loses held out; "no-heldout" has no held-out numbers
    for sub in (_fake("overfit", [0.5, 0.5], [0.0, 0.1]), _fake("general", [0.2, 0.3], [0.2, 0.2]),
                _fake("no-heldout", [0.9, 0.9], None)):
        save_submission(sub, tmp_path / "submissions" / f"{sub['name']}.json")
    written = render(tmp_path)
    assert [p.name for p in written] == ["README.md", f"{ENV}.md"]
    page = (tmp_path / f"{ENV}.md").read_text(encoding="utf-8")
    ranked = [line.split("|")[2].strip() for line in page.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert ranked == ["[general](submissions/general.json)", "[overfit](submissions/overfit.json)",
                      "[no-heldout](submissions/no-heldout.json)"]
    assert "same-batch Δ (no held-out numbers)" in page
    assert "+0.200 [+0.200, +0.200]" in page  # general's held-out Δ with its CI
    assert "## [HarnessEdit-DBBench-v0](HarnessEdit-DBBench-v0.md)" in (tmp_path / "README.md").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "submissions" / "general.json").read_text())["name"] == "general"


@pytest.mark.parametrize(
    "path", sorted((ROOT / "leaderboards" / "submissions").glob("*.json")), ids=lambda p: p.stem
)
def test_committed_baseline_entries_still_verify(path: Path) -> None:
    """The first episode of every committed entry reproduces exactly (a drift guard; full verify is the CLI's)."""
    from harness_gym.leaderboard import load_submission
    from harness_gym.leaderboard.verify import verify_submission

    verdict = verify_submission(load_submission(path), limit=1)
    assert verdict.accepted, verdict
