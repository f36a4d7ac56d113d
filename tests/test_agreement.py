"""benchmarks/agreement.py: the panel (>= 30 diverse patches per env) and its statistics."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import agreement as ag


def test_rank_correlation_with_ties() -> None:
    assert ag.ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert ag.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)  # 1 - 6·4 / (5·24)
    assert ag.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / 22.5 ** 0.5)  # ties: Pearson on mean ranks
    assert ag.spearman([1, 1, 1], [1, 2, 3]) != ag.spearman([1, 1, 1], [1, 2, 3])  # constant side: NaN


def test_summary_counts_sign_agreement_with_a_dead_zone() -> None:
    panel = [{"name": f"p{i}", "family": "x"} for i in range(4)]
    cell = lambda d: {"valid": True, "delta_score": d, "delta_success": d}  # noqa: E731
    a = [[cell(0.1), cell(0.001), cell(-0.2), cell(0.3)]]
    b = [[cell(0.2), cell(-0.002), cell(0.1), cell(0.25)]]
    res = ag.summarize(panel, a, b, eps=0.005)
    assert res["stats"]["delta_score"]["sign_agreement"] == 0.75  # p2 disagrees; p1 is 0 on both sides
    assert res["stats"]["delta_score"]["n"] == 4


def test_reliability_is_the_batches_agreement_with_each_other_and_bounds_rho() -> None:
    cell = lambda d: {"valid": True, "delta_score": d, "delta_success": d}  # noqa: E731
    same = [[cell(x) for x in (0.1, 0.2, 0.3, 0.4)] for _ in range(3)]
    assert ag.reliability(same, "delta_score") == pytest.approx(1.0)
    # two batches whose rankings agree at rho 0.8: the mean of both at 2·0.8/1.8
    two = [[cell(x) for x in (1, 2, 3, 4, 5)], [cell(x) for x in (2, 1, 4, 3, 5)]]
    assert ag.reliability(two, "delta_score") == pytest.approx(2 * 0.8 / 1.8)
    assert ag.batch_rho(two, "delta_score") == pytest.approx(0.8)
    reversed_ = [two[0], [cell(x) for x in (5, 4, 3, 2, 1)]]  # no agreement: returned as it is, not stepped up
    assert ag.batch_rho(reversed_, "delta_score") == ag.reliability(reversed_, "delta_score") == pytest.approx(-1.0)
    assert ag.reliability(two[:1], "delta_score") != ag.reliability(two[:1], "delta_score")  # one batch: NaN
    # a patch invalid in one batch is left out of every batch
    holed = [row[:] for row in two]
    holed[1].append({"valid": False, "delta_score": 0.0, "delta_success": 0.0})
    holed[0].append(cell(9.0))
    assert ag.reliability(holed, "delta_score") == pytest.approx(2 * 0.8 / 1.8)
    panel = [{"name": f"p{i}", "family": "x"} for i in range(5)]
    stats = ag.summarize(panel, two, [[cell(x) for x in (1, 2, 3, 4, 5)]] * 2, eps=0.005)["stats"]["delta_score"]
    assert stats["reliability_b"] == pytest.approx(1.0)
    assert stats["ceiling"] == pytest.approx((2 * 0.8 / 1.8) ** 0.5)


@pytest.mark.parametrize("benchmark", ["webshop", "dbbench", "alfworld"])
def test_each_panel_has_at_least_thirty_diverse_patches(benchmark: str) -> None:
    panel = ag.build_panel(benchmark)
    assert len(panel) >= 30, len(panel)
    families = {p["family"].split(":")[0] for p in panel}
    assert {"example", "guard-unbounded", "guard-bounded", "hints", "rewrites", "skills", "trigger-words",
            "harmful", "policy"} <= families, families
    assert len({p["text"] for p in panel}) == len(panel)


def test_a_small_run_writes_the_table_json_and_plot(tmp_path: Path) -> None:
    assert ag.main(["--env", "dbbench", "--b", "sim:flaws=off", "--batches", "1", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "agreement.json").read_text())
    stats = data["results"]["dbbench"]["stats"]["delta_score"]
    assert stats["n"] >= 30 and -1.0 <= stats["spearman"] <= 1.0
    assert "| patch | family |" in (tmp_path / "agreement.md").read_text()
    assert (tmp_path / "agreement_delta_score.png").stat().st_size > 1000
    assert ag.main(["--env", "nosuch"]) == 2


def test_fix_break_counts_and_paired_intervals_in_the_summary() -> None:
    per_task = [{"baseline_reward": 1.0, "patched_reward": 0.0}, {"baseline_reward": 0.0, "patched_reward": 1.0},
                {"baseline_reward": 0.5, "patched_reward": 1.0}, {"baseline_reward": 1.0, "patched_reward": 1.0},
                {"baseline_reward": None, "patched_reward": 1.0}]
    assert ag.fix_break(per_task) == {"fixed": 3, "broke": 1, "baseline_solved": 2, "tasks": 5}
    panel = [{"name": "p", "family": "x"}]
    cell = lambda d, f, b: {"valid": True, "delta_score": d, "delta_success": d, "fixed": f, "broke": b}  # noqa: E731
    res = ag.summarize(panel, [[cell(0.1, 1, 0)], [cell(0.3, 3, 0)]], [[cell(0.0, 1, 1)], [cell(0.2, 2, 0)]], eps=0.005)
    row = res["rows"][0]
    assert row["b_delta_score"] == pytest.approx(0.1) and row["b_fixed"] == 3 and row["b_broke"] == 1
    lo, hi = row["b_delta_score_ci"]
    assert lo < 0.1 < hi and hi - 0.1 == pytest.approx(0.1 - lo)
    md = ag.table_md("E", "sim", "smol", 2, res, "delta_score")
    assert "| p | x | +0.200 | +0.100 [" in md and "| 4/0 | 3/1 |" in md


def test_scores_are_reused_for_the_same_panel_and_batches(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    args = ["--env", "dbbench", "--a", "sim", "--b", "sim:flaws=off", "--batches", "1", "--out", str(tmp_path)]
    assert ag.main(args) == 0
    first = (tmp_path / "agreement.md").read_text()
    capfd.readouterr()
    assert ag.main(args) == 0
    assert "reusing" in capfd.readouterr().err and (tmp_path / "agreement.md").read_text() == first
    assert ag.main(args[:-3] + ["2", "--out", str(tmp_path)]) == 0   # one batch more: only that one is scored
    err = capfd.readouterr().err
    assert "resuming after batch 1/2" in err and "batch 1/2 scored" not in err and "batch 2/2 scored" in err
    assert json.loads((tmp_path / "agreement.json").read_text())["batches"] == 2
    kept = json.loads((tmp_path / "scores_dbbench_b.json").read_text())
    assert kept["target"] == ag._kept_key("sim:flaws=off") and {len(rows) for rows in kept["patches"].values()} == {2}
    assert ag.main(args) == 0                                       # fewer batches: the first ones, nothing scored
    assert "reusing" in capfd.readouterr().err and (tmp_path / "agreement.md").read_text() == first


def test_a_stopped_scoring_resumes_after_its_last_batch(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A real target's scoring takes hours: a run killed after some batches keeps them (the
    ``.partial`` file) and the next run scores only the rest; a patch added to the panel later
    is scored alone, the kept ones are not rescored."""
    panel = [{"name": "p", "family": "x", "text": "not a patch"}]
    pf = tmp_path / "panel.json"
    pf.write_text(json.dumps(panel))
    kept_row = {"valid": False, "delta_score": None, "delta_success": None, "error": "kept", "fixed": 0, "broke": 0}
    out = tmp_path / "scores_dbbench_a.json"
    (tmp_path / "scores_dbbench_a.json.partial").write_text(
        json.dumps({"target": ag._kept_key("sim"), "patches": {ag._text_sha("not a patch"): [kept_row]}}))
    scores = ag.score_in_subprocess("dbbench", "sim", pf, 2, out)
    assert len(scores) == 2 and scores[0][0]["error"] == "kept" and scores[1][0]["error"] != "kept"
    assert "resuming after batch 1/2" in capfd.readouterr().err
    assert not (tmp_path / "scores_dbbench_a.json.partial").exists()
    pf.write_text(json.dumps(panel + [{"name": "q", "family": "x", "text": "also not a patch"}]))
    scores = ag.score_in_subprocess("dbbench", "sim", pf, 2, out)
    err = capfd.readouterr().err
    assert "batch 1/2 scored (1 of 2 patches)" in err and "batch 2/2 scored (1 of 2 patches)" in err
    assert [len(b) for b in scores] == [2, 2] and scores[0][0]["error"] == "kept"
    assert ag.score_in_subprocess("dbbench", "sim:flaws=off", pf, 1, out)[0][0]["error"] != "kept"  # another target: its own


def test_sim_scores_kept_under_other_code_are_rescored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sim's kept rows are only read back by the code that scored them: after a change to the
    package (a recalibrated sim), the sim is rescored; a real target's rows are kept."""
    path = tmp_path / "scores.json"
    rows = {"h": [{"valid": True, "delta_score": 0.1, "delta_success": 0.1, "error": None}]}
    for target in ("sim", "smol:webshop?engine=vllm"):
        ag._save_kept(path, target, rows)
        assert ag._load_kept(path, target) == rows
    assert ag._kept_key("smol:webshop?engine=vllm") == "smol:webshop?engine=vllm"
    ag._save_kept(path, "sim", rows)
    (tmp_path / "harness_gym").mkdir()
    (tmp_path / "harness_gym" / "sim.py").write_text("FLAW = 0.5\n")
    monkeypatch.setattr(ag, "ROOT", tmp_path)  # another package: another code key
    assert ag._kept_key("sim") != json.loads(path.read_text())["target"]
    assert ag._load_kept(path, "sim") == {}


def test_scores_kept_in_the_whole_panel_format_are_read_per_patch(tmp_path: Path) -> None:
    """Files written before scores were kept per patch ({key: {target, panel_sha256}, scores:
    [batch][patch]}) still count for the panel they were scored on, and for no other."""
    pf = tmp_path / "panel.json"
    pf.write_text(json.dumps([{"name": "p", "family": "x", "text": "A"}, {"name": "q", "family": "x", "text": "B"}]))
    row = lambda e: {"valid": False, "delta_score": None, "delta_success": None, "error": e}  # noqa: E731
    old = {"key": {"target": "smol", "panel_sha256": ag._sha256(pf.read_bytes())}, "scores": [[row("a0"), row("b0")], [row("a1"), row("b1")]]}
    path = tmp_path / "scores.json"
    path.write_text(json.dumps(old))
    kept = ag._load_kept(path, "smol", pf)
    assert [r["error"] for r in kept[ag._text_sha("B")]] == ["b0", "b1"] and len(kept) == 2
    assert ag._load_kept(path, "sim", pf) == {} and ag._load_kept(path, "smol") == {}
    pf.write_text(json.dumps([{"name": "p", "family": "x", "text": "A"}]))
    assert ag._load_kept(path, "smol", pf) == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert ag._load_kept(tmp_path / "broken.json", "smol", pf) == {}
    with pytest.raises(SystemExit, match="for another panel .*nothing was overwritten"):  # its rows would be lost
        ag.score_in_subprocess("dbbench", "smol", pf, 1, path)
    with pytest.raises(SystemExit, match="keeps scores of 'smol'"):
        ag.refuse_other_rows(path, "smol:dbbench", 0, pf)
    pf.write_text(json.dumps([{"name": "p", "family": "x", "text": "A"}, {"name": "q", "family": "x", "text": "B"}]))
    ag.refuse_other_rows(path, "smol", 0, pf)  # its own panel: read back and kept in the per-patch format


def test_only_keeps_the_named_patches_and_rejects_a_pattern_that_matches_none() -> None:
    panel = ag.build_panel("dbbench", ["noop@packet1000", "trigger-*", "dbbench_stage_guards"])
    names = [p["name"] for p in panel]
    assert "noop@packet1000" in names and "dbbench_stage_guards" in names
    assert sum(n.startswith("trigger-") for n in names) == 6 and len(names) == 8
    with pytest.raises(SystemExit, match="matches no dbbench panel patch"):
        ag.build_panel("dbbench", ["no-such-patch"])


def test_held_out_batches_are_summarized_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``--held-out K`` reports the statistics over batches K..N-1 alone (the batches a sim was not
    fitted on), beside those over all; without it there is no such entry; K outside 1..N-1 is refused;
    the JSON is strict (a statistic that does not exist is null, not NaN)."""
    panel = [{"name": f"p{i}", "family": "x", "text": f"t{i}"} for i in range(5)]
    cell = lambda d: {"valid": True, "delta_score": d, "delta_success": -d, "fixed": 0, "broke": 0}  # noqa: E731
    # batch 0: A and B agree exactly; batches 1-2: B reverses A's order
    a = [[cell(x) for x in (0.1, 0.2, 0.3, 0.4, 0.5)]] * 3
    b = [[cell(x) for x in (0.1, 0.2, 0.3, 0.4, 0.5)], [cell(x) for x in (0.5, 0.4, 0.3, 0.2, 0.1)],
         [cell(x) for x in (0.5, 0.4, 0.3, 0.1, 0.2)]]
    monkeypatch.setattr(ag, "build_panel", lambda bench, only=None: panel)
    monkeypatch.setattr(ag, "score_in_subprocess", lambda bench, target, pf, n, out, transcripts=False, first_seed=0, only=None: (a if target == "sim" else b)[:n])
    out = str(tmp_path)
    assert ag.main(["--env", "dbbench", "--b", "other", "--batches", "3", "--held-out", "1", "--out", out]) == 0
    data = json.loads((tmp_path / "agreement.json").read_text(), parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    res = data["results"]["dbbench"]
    assert data["held_out"] == 1 and res["held_out"]["first_batch"] == 1 and data["a_key"].startswith("sim@code-")
    for m in ("delta_score", "delta_success"):
        held, whole = res["held_out"]["stats"][m], res["stats"][m]
        expect = ag.summarize(panel, a[1:], b[1:], 0.005)["stats"][m]
        assert held["spearman"] == pytest.approx(expect["spearman"]) == pytest.approx(-0.975, abs=1e-3)
        assert held["sign_agreement"] == expect["sign_agreement"] and held["n"] == 5
        assert held["reliability_b"] == pytest.approx(expect["reliability_b"]) and held["ceiling"] is not None
        assert whole["spearman"] != pytest.approx(held["spearman"])
    assert "Batches 1..2 alone (--held-out 1): Spearman ρ = -0.97" in (tmp_path / "agreement.md").read_text()
    assert "held out (batches 1..2)" in capsys.readouterr().out
    assert ag.main(["--env", "dbbench", "--b", "other", "--batches", "3", "--held-out", "2", "--out", out]) == 0
    single = json.loads((tmp_path / "agreement.json").read_text())["results"]["dbbench"]["held_out"]["stats"]["delta_score"]
    assert single["reliability_a"] is None and single["ceiling"] is None  # one batch: no reliability, null not NaN
    assert ag.main(["--env", "dbbench", "--b", "other", "--batches", "3", "--out", out]) == 0
    assert "held_out" not in json.loads((tmp_path / "agreement.json").read_text())["results"]["dbbench"]
    capsys.readouterr()
    for k in ("3", "0", "-1"):
        assert ag.main(["--env", "dbbench", "--batches", "3", "--held-out", k, "--out", out]) == 2
    assert "--held-out K needs 0 < K < --batches" in capsys.readouterr().err


def test_transcripts_keep_every_episode_of_each_batch_scored(tmp_path: Path) -> None:
    """``--transcripts`` writes, per target and batch scored, the baseline's episodes once and each valid patch's,
    labelled with the patch's name and text sha256 (an invalid patch has none); a batch read back from kept scores
    writes nothing."""
    import gzip

    args = ["--env", "dbbench", "--b", "sim:flaws=off", "--batches", "1", "--out", str(tmp_path),
            "--only", "db-guard-bounded-1,db-hint-cast,noop@packet1000", "--transcripts"]
    assert ag.main(args) == 0
    panel = ag.select(json.loads((tmp_path / "panel_dbbench.json").read_text()), "dbbench", args[-2].split(","))
    for side in ("a", "b"):
        path = tmp_path / f"transcripts_dbbench_{side}" / "batch0.jsonl.gz"
        lines = [json.loads(x) for x in gzip.open(path, "rt", encoding="utf-8")]
        by_patch: dict = {}
        for x in lines:
            by_patch.setdefault(x["patch"], []).append(x)
        assert set(by_patch) == {None} | {p["name"] for p in panel}
        assert {len(v) for v in by_patch.values()} == {10}  # the protocol's batch of 10 tasks, each side
        assert all(x["patch_sha256"] == ag._text_sha(p["text"]) for p in panel for x in by_patch[p["name"]])
        first = by_patch[None][0]
        assert first["messages"][0]["role"] == "system" and first["events"] and first["task_id"]
        assert [x["task_id"] for x in by_patch[None]] == [x["task_id"] for x in by_patch[panel[0]["name"]]]
    path.unlink()
    assert ag.main(args) == 0 and not path.exists()


def test_agreement_episodes_counts_what_fired_and_how_it_ended(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``benchmarks/agreement_episodes.py`` over two transcripts folders: per patch and target, the episodes each
    effect fired in (a pre-hint counted from its hook event), fixed/broke against the same task's baseline, the
    round limit; only the batches both folders hold; a missing folder is a one-line error."""
    import gzip

    import benchmarks.agreement_episodes as ae

    def ep(patch, task, reward, effects=(), pre_hint=False, status="completed", rounds=5):
        events = [{"kind": "effect", "type": t, "applied": True} for t in effects]
        if pre_hint:
            events.append({"kind": "hook", "point": "make_pre_hint", "effect": {"type": "message", "message": "x"}})
        return {"batch": 0, "patch": patch, "task_id": task, "seed": 0, "reward": reward, "status": status,
                "rounds": rounds, "events": events}

    def write(side, batch, rows):
        folder = tmp_path / f"transcripts_webshop_{side}"
        folder.mkdir(exist_ok=True)
        with gzip.open(folder / f"batch{batch}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)

    base = [ep(None, "t1", 1.0), ep(None, "t2", 0.5), ep(None, "t3", 0.0)]
    write("a", 0, base + [ep("g", "t1", 0.0, ["block_and_prompt"] * 3, status="task_limit_reached", rounds=20),
                          ep("g", "t2", 1.0, ["rewrite_action"]), ep("g", "t3", 0.0),
                          ep("h", "t1", 1.0, pre_hint=True), ep("h", "t2", 0.5), ep("h", "t3", 1.0, pre_hint=True)])
    write("b", 0, base + [ep("g", "t1", 1.0), ep("g", "t2", 0.5), ep("g", "t3", 0.0)])
    write("a", 1, base)  # only A has batch 1: left out
    assert ae.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "batches 0\n" in out
    assert ("| g | block 1 (0/1, 1 lim), rewrite 1 (1/0, 0 lim) | 1/1 | 1 / 10.0 | none | 0/0 | 0 / 5.0 |" in out)
    assert "| h | pre-hint 2 (1/0, 0 lim) | 1/0 | 0 / 5.0 | – | – | – |" in out
    assert (tmp_path / "episodes_webshop.md").read_text().startswith("## webshop")
    assert ae.main([str(tmp_path), "--env", "dbbench"]) == 2
    assert "no transcripts at" in capsys.readouterr().err


def test_agreement_episodes_names_a_forged_transcript_file(tmp_path: Path) -> None:
    """A transcripts file that is not gzip, or whose lines lack patch/task_id/seed, is a one-line error naming it."""
    import gzip

    import benchmarks.agreement_episodes as ae

    folder = tmp_path / "transcripts_webshop_a"
    folder.mkdir()
    (folder / "batch0.jsonl.gz").write_text("garbage")
    with pytest.raises(SystemExit, match=r"batch0\.jsonl\.gz: unreadable \(BadGzipFile"):
        ae.read_folder(folder)
    with gzip.open(folder / "batch0.jsonl.gz", "wt") as fh:
        fh.write('{"x": 1}\n')
    with pytest.raises(SystemExit, match="a line without patch, task_id and seed"):
        ae.read_folder(folder)


def test_a_kept_panel_is_scored_as_it_is(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """``--panel``: the patch texts real rows were scored on, not a panel rebuilt from today's sim (whose
    policies write other patches after a sim change); a broken or ambiguous panel is a one-line error."""
    kept = tmp_path / "kept"
    kept.mkdir()
    panel = [{"name": "noop", "family": "control", "text": "not a patch"}, {"name": "q", "family": "x", "text": "nor this"}]
    (kept / "panel_dbbench.json").write_text(json.dumps(panel))
    out = tmp_path / "out"
    args = ["--env", "dbbench", "--a", "sim", "--b", "sim:flaws=off", "--batches", "1", "--out", str(out)]
    assert ag.main(args + ["--panel", str(kept)]) == 0
    assert json.loads((out / "panel_dbbench.json").read_text()) == panel
    assert [r["name"] for r in json.loads((out / "agreement.json").read_text())["results"]["dbbench"]["rows"]] == ["noop", "q"]
    assert ag.main(args + ["--panel", str(kept / "panel_dbbench.json"), "--only", "q"]) == 0
    assert [r["name"] for r in json.loads((out / "agreement.json").read_text())["results"]["dbbench"]["rows"]] == ["q"]
    # the whole panel stays in the output folder, so a later part scored from that folder finds every patch
    assert json.loads((out / "panel_dbbench.json").read_text()) == panel
    assert ag.main(args + ["--panel", str(out), "--only", "noop"]) == 0
    assert json.loads((out / "panel_dbbench.json").read_text()) == panel
    assert [r["name"] for r in json.loads((out / "agreement.json").read_text())["results"]["dbbench"]["rows"]] == ["noop"]
    capfd.readouterr()
    bad = {"not json": "{", "not a list": '{"a": 1}', "no text": '[{"name": "a", "family": "x"}]',
           "a shared text": json.dumps(panel + [{"name": "z", "family": "x", "text": "nor this"}])}
    for why, text in bad.items():
        (kept / "panel_dbbench.json").write_text(text)
        with pytest.raises(SystemExit) as info:
            ag.main(args + ["--panel", str(kept)])
        assert "--panel" in str(info.value) and "\n" not in str(info.value), why
    with pytest.raises(SystemExit):
        ag.main(args + ["--panel", str(tmp_path / "missing")])
    assert ag.main(["--env", "dbbench,webshop", "--batches", "1", "--out", str(out), "--panel", str(kept / "panel_dbbench.json")]) == 2
    assert "one env's panel" in capfd.readouterr().err


def test_first_seed_scores_later_seeds_and_keeps_them_apart(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """``--first-seed S`` scores env seeds S.. (a panel's rows on seeds a sim was not fitted to): the rows equal
    those of seed S in a run from 0, are keyed by S (never read back as seeds 0..), and transcripts are named by seed."""
    root = Path(__file__).resolve().parents[1]
    text = (root / "examples" / "patches" / "dbbench_stage_guards.txt").read_text()
    pf = tmp_path / "panel.json"
    pf.write_text(json.dumps([{"name": "guards", "family": "example", "text": text}]))
    (tmp_path / "zero").mkdir()
    (tmp_path / "two").mkdir()
    from_zero = ag.score_in_subprocess("dbbench", "sim", pf, 3, tmp_path / "zero" / "scores_dbbench_a.json")
    later = ag.score_in_subprocess("dbbench", "sim", pf, 1, tmp_path / "two" / "scores_dbbench_a.json",
                                   transcripts=True, first_seed=2)
    assert later[0][0] == from_zero[2][0] and later[0][0] != from_zero[0][0]
    assert "batch 1/1 scored (1 of 1 patches) on env seed 2" in capfd.readouterr().err
    assert (tmp_path / "two" / "transcripts_dbbench_a" / "batch2.jsonl.gz").exists()
    kept = tmp_path / "two" / "scores_dbbench_a.json"
    assert json.loads(kept.read_text())["target"] == ag._kept_key("sim") + "@seeds-from-2"
    assert ag._load_kept(kept, "sim") == {} and ag._load_kept(kept, "sim", first_seed=2)
    real = "smol:dbbench?engine=vllm"  # a real target's rows are never overwritten by another seed's (or target's)
    ag._save_kept(kept, real, {"h": [{"valid": True}]})
    for seed, other in ((2, real), (0, "smol:dbbench")):
        with pytest.raises(SystemExit, match=r"keeps scores of 'smol:dbbench\?engine=vllm'.*nothing was overwritten"):
            ag.score_in_subprocess("dbbench", other, pf, 1, kept, first_seed=seed)
    assert ag._load_kept(kept, real) == {"h": [{"valid": True}]}
    assert ag.main(["--env", "dbbench", "--first-seed", "-1", "--out", str(tmp_path)]) == 2
    assert "--first-seed >= 0" in capfd.readouterr().err


def test_parts_of_a_batch_share_one_baseline_through_the_kept_rollouts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real target's episodes are kept on disk per package code (``rollouts_dir``), so a second part of a batch
    (another ``--only``) replays only its own patches, against the first part's baseline; a sim keeps none."""
    assert ag.rollouts_dir(tmp_path / "scores_dbbench_b.json", "sim") is None
    assert ag.rollouts_dir(tmp_path / "scores_dbbench_b.json", "sim:flaws=off") is None
    where = ag.rollouts_dir(tmp_path / "scores_dbbench_b.json", "smol:dbbench?engine=vllm")
    assert where is not None and where.parent == tmp_path / "rollouts_dbbench_b" and where.name == ag._code_hash(sims=False)
    panel = ag.build_panel("dbbench", ["noop@packet1000", "db-hint-cast", "db-guard-bounded-1"])
    texts = [p["text"] for p in panel]
    capsys.readouterr()
    first = ag.score("dbbench", "sim", texts[:2], 1, {}, cache_dir=where)
    assert "batch 1/1 scored (2 of 2 patches) on env seed 0: 30 episodes in" in capsys.readouterr().err
    runs = {f.name: f.stat().st_ino for f in where.glob("*.json")}
    assert len(runs) == 3  # the baseline and each of the two patches, one file per batch run
    second = ag.score("dbbench", "sim", texts[2:], 1, {}, cache_dir=where)
    assert ": 10 episodes in" in capsys.readouterr().err  # the new patch's, not the baseline's again
    after = {f.name: f.stat().st_ino for f in where.glob("*.json")}
    # only the new patch ran: the baseline was read back, not run and written again (a write replaces the file)
    assert len(after) == 4 and all(after[n] == ino for n, ino in runs.items())
    again = ag.score("dbbench", "sim", texts[:2], 1, {})  # no kept rollouts: the same rows
    assert [first[ag._text_sha(t)] for t in texts[:2]] == [again[ag._text_sha(t)] for t in texts[:2]]
    assert second[ag._text_sha(texts[2])][0]["valid"]


def test_a_real_targets_rollouts_key_ignores_the_sims_code_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing a sim (which a real target's episodes never run) keeps a real batch's kept rollouts; editing any
    other package file, or the sim for a sim's own rows, starts afresh."""
    pkg = tmp_path / "harness_gym"
    files = {"runtime/episode.py": "a = 1\n", "benchmarks/alfworld/sim.py": "b = 1\n", "benchmarks/sim_reading.py": "c = 1\n",
             "models/sim.py": "d = 1\n", "benchmarks/alfworld/simulate.py": "e = 1\n", "harness/oversim.py": "f = 1\n"}
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    monkeypatch.setattr(ag, "ROOT", tmp_path)
    real, sim = ag._code_hash(sims=False), ag._code_hash()
    for name in ("benchmarks/alfworld/sim.py", "benchmarks/sim_reading.py", "models/sim.py"):
        (pkg / name).write_text((pkg / name).read_text() + "# tuned\n")
        assert ag._code_hash(sims=False) == real and ag._code_hash() != sim, name
        sim = ag._code_hash()
    for name in ("runtime/episode.py", "benchmarks/alfworld/simulate.py", "harness/oversim.py"):
        (pkg / name).write_text((pkg / name).read_text() + "# changed\n")
        assert ag._code_hash(sims=False) != real, name
        real = ag._code_hash(sims=False)
