"""Leakage and special-casing: patches holding gold data or instance ids are rejected, innocent ones never.

Also the transductive check: ``bench --heldout-batch-size`` reports same-batch and held-out
Δ side by side with paired CIs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, make_policy
from baselines.hr1 import harness_r1_patch
from harness_gym.errors import PatchError
from harness_gym.evaluation.benchmarks import BenchmarkSpec, get_benchmark
from harness_gym.harness.leakage import GoldStrings, check_leakage, tokens
from harness_gym.harness.patch import parse_patch

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "patches").glob("*.txt"))
ENV_ID = "HarnessEdit-DBBench-v0"


@pytest.fixture(scope="module")
def env() -> Any:
    e = gym.make(ENV_ID, batch_size=5, heldout_batch_size=5)
    yield e.unwrapped
    e.close()


def _hint_hook(message: str) -> str:
    return "def hook(ctx, nb):\n    return {'type': 'inject_hint', 'message': " + repr(message) + "}\n"


def _r1(code: str, point: str = "on_post_step", description: str = "Generic hint.") -> str:
    return harness_r1_patch("dbbench", description, {point: code})


def _check(env: Any, text: str) -> None:
    check_leakage(parse_patch(text, env._base), env.gold, base=env._base)


def _multiword_cell(env: Any) -> str:
    for task in env._batch:
        for row in task.rows:
            for cell in row:
                if " " in cell.strip() and cell.lower().split()[0].isalpha() and GoldStrings.build([cell]).values:
                    return cell
    pytest.skip("no multi-word cell in this batch")


def test_spec_field_defaults_to_none_and_dbbench_provides_it() -> None:
    assert BenchmarkSpec.__dataclass_fields__["gold_strings"].default is None
    assert get_benchmark("dbbench").gold_strings is not None


def test_gold_strings_keep_answers_sql_and_distinctive_cells_only(env: Any) -> None:
    env.reset(seed=3)
    gold = env.gold
    assert len(gold) > 20 and gold.benchmark == "dbbench"
    task = env._batch[0]
    assert " ".join(tokens(task.reference_sql)) in gold.values
    columns = {c.lower() for t in env._batch for c in t.columns}
    names = {" ".join(c.split()) for c in columns}
    assert not (gold.values & names), "schema names are shown to the agent and are not gold"
    assert all(len(v) >= 4 for v in gold.values)
    assert not any(v in {"yes", "true", "null", "select", "where", "stored", "office"} for v in gold.values)
    assert not any(v.isalpha() and " " not in v for v in gold.values), "lone words are too common to be evidence"
    cells = {c for t in env._batch for r in t.rows for c in r}
    assert not any(c.isdigit() and len(c) < 5 and c in gold.values for c in cells)


def test_reference_answer_reference_sql_and_cell_values_are_rejected(env: Any) -> None:
    env.reset(seed=3)
    task = next(t for t in env._batch if not t.is_mutation)
    cell = _multiword_cell(env)
    leaks = {
        "cell in hint": _r1(_hint_hook(f"Look for {cell} first.")),
        "reference sql in hint": _r1(_hint_hook(task.reference_sql)),
        "cell in description": _r1(_hint_hook("Check the schema."), description=f"Helps with {cell}."),
        "cell in a skill file, upper case": f"--- /dev/null\n+++ b/skills/values.md\n@@ -0,0 +1 @@\n+Remember {cell.upper()}.\n",
        "cell in a bare module": f"def on_init(ctx, nb):\n    return {{'skills': ['{cell}']}}\n",
    }
    for name, text in leaks.items():
        with pytest.raises(PatchError, match="value from this batch's task data") as err:
            _check(env, text)
        assert "\n" not in str(err.value), name


def test_numeric_answers_in_literals_are_rejected(env: Any) -> None:
    for seed in range(40):
        env.reset(seed=seed)
        labels = [v for t in env._batch + env._heldout if not t.is_mutation for v in t.label
                  if v.replace(".", "").isdigit() and len(v) >= 5]
        if labels:
            break
    else:
        pytest.skip("no long numeric label")
    value = labels[0]
    number = float(value) if "." in value else int(value)
    code = f"def hook(ctx, nb):\n    if ctx['task']['task_type'] == 'other':\n        return {{'type': 'inject_hint', 'message': str({number!r})}}\n    return None\n"
    with pytest.raises(PatchError, match="task data"):
        _check(env, _r1(code))


def test_held_out_tasks_are_gold_too(env: Any) -> None:
    env.reset(seed=5)
    held_cells = [c for t in env._heldout for r in t.rows for c in r if " " in c and GoldStrings.build([c]).values]
    assert held_cells
    with pytest.raises(PatchError, match="task data"):
        _check(env, _r1(_hint_hook(f"Try {held_cells[0]}.")))


@pytest.mark.parametrize("text, needle", [
    ("Product B07ABCD123 is the one to buy.", "id or index"),
    ("For task #12 commit the count.", "id or index"),
    ("alfworld_42 needs the mug.", "id or index"),
])
def test_harness_r1_regexes_cover_prompt_and_skill_files_too(env: Any, text: str, needle: str) -> None:
    env.reset(seed=1)
    diff = f"--- /dev/null\n+++ b/skills/tip.md\n@@ -0,0 +1 @@\n+{text}\n"
    with pytest.raises(PatchError, match=needle):
        _check(env, diff)


def test_alfworld_instance_actions_are_rejected_in_any_text() -> None:
    from harness_gym.harness.patch import Patch

    patch = Patch("diff", "", (("skills/a.md", "When stuck, go to shelf 1 and look.\n"),))
    with pytest.raises(PatchError, match="numbered ALFWorld instance action"):
        check_leakage(patch, GoldStrings(benchmark="alfworld"))
    check_leakage(patch, GoldStrings(benchmark="dbbench"))  # scoped to ALFWorld, as in Harness-R1


def test_only_added_lines_of_a_prompt_are_scanned(env: Any) -> None:
    env.reset(seed=1)
    prompt = env._base.files["system_prompt.md"]
    first = prompt.splitlines()[0]
    diff = (f"--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1,2 @@\n {first}\n"
            "+Always check how values are stored before filtering.\n")
    _check(env, diff)  # innocent: passes


def test_env_step_and_evaluate_patches_reject_with_one_line(env: Any) -> None:
    env.reset(seed=3)
    cell = _multiword_cell(env)
    bad = _r1(_hint_hook(f"The answer is {cell}."))
    _, reward, _, _, info = env.step(bad)
    assert info["patch_valid"] is False and reward == env.config.invalid_patch_reward
    assert "task data" in info["patch_error"] and "\n" not in info["patch_error"]
    out = env.evaluate_patches([bad, make_policy("noop").propose([PolicyInput("", {}, "dbbench")])[0][0]])
    assert out[0]["patch_valid"] is False and "task data" in out[0]["patch_error"]
    assert out[1]["patch_valid"] is True


def _false_positives(env: Any, seeds: range) -> tuple[int, list[str]]:
    """(patches checked, rejections) for the example patches and the baselines' patches over ``seeds``."""
    checked, rejected = 0, []
    examples = [p.read_text(encoding="utf-8") for p in EXAMPLES]
    policies = [make_policy(n) for n in ("template", "self-refine", "noop")]
    benchmark = env.config.benchmark
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        texts = list(examples)
        for pol in policies:
            texts += pol.propose([PolicyInput(obs, info["packet"], benchmark)], k=2)[0]
        for text in texts:
            try:
                patch = parse_patch(text, env._base)
            except PatchError:
                continue
            checked += 1
            try:
                check_leakage(patch, env.gold, base=env._base)
            except PatchError as exc:
                rejected.append(str(exc))
    return checked, rejected


def test_zero_false_positives_on_example_and_baseline_patches(env: Any) -> None:
    checked, rejected = _false_positives(env, range(40))
    assert checked >= 200 and rejected == [], rejected[:3]


def test_zero_false_positives_on_the_original_data(dbbench_data_dir: Path) -> None:
    e = gym.make(ENV_ID, batch_size=10, heldout_batch_size=20, data_dir=str(dbbench_data_dir))
    try:
        checked, rejected = _false_positives(e.unwrapped, range(15))
    finally:
        e.close()
    assert checked >= 100 and rejected == [], rejected[:3]


def test_bench_reports_same_batch_and_heldout_delta_side_by_side(tmp_path: Path, capsys: Any) -> None:
    from harness_gym.cli import main

    out = tmp_path / "bench.jsonl"
    rc = main(["bench", "--policy", "template,noop", "--episodes", "3", "--batch-size", "4",
               "--heldout-batch-size", "6", "--out", str(out), "--no-progress", "--no-plot"])
    assert rc == 0
    text = capsys.readouterr().out
    head = next(line for line in text.splitlines() if line.startswith("| policy"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert cols.index("mean Δ_B [95% CI]") < cols.index("held-out Δ [95% CI]") < cols.index("same − held-out [95% CI]")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and all(r["heldout_delta"] is not None for r in rows)
    noop_line = next(line for line in text.splitlines() if line.startswith("| noop"))
    assert noop_line.count("+0.000 [+0.000, +0.000]") == 3  # a no-op: zero on both batches and zero gap
    from harness_gym.bench import BenchRows, summarize

    table = {t["policy"]: t for t in summarize(BenchRows(rows), ENV_ID)}
    t = table["template"]
    deltas = [r["delta"] - r["heldout_delta"] for r in rows if r["policy"] == "template"]
    assert t["gap"].n == 3 and abs(t["gap"].mean - sum(deltas) / 3) < 1e-12
    assert t["heldout"].lo <= t["heldout"].mean <= t["heldout"].hi


@pytest.mark.parametrize("env_id,benchmark", [("HarnessEdit-WebShop-v0", "webshop"), ("HarnessEdit-ALFWorld-v0", "alfworld")])
def test_webshop_titles_and_alfworld_hiding_places_are_gold_and_innocent_patches_pass(env_id: str, benchmark: str) -> None:
    e = gym.make(env_id, batch_size=5, heldout_batch_size=5)
    u = e.unwrapped
    try:
        e.reset(seed=4)
        task = u._heldout[0]  # held-out tasks are gold too
        if benchmark == "webshop":
            secret = task.goal["name"]
        else:
            where = next(w for o, w in task.objects if o.split(" ")[0] == task.target_type)
            secret = f"{task.target_type}s are usually in {where}"
        leak = harness_r1_patch(benchmark, "Generic hint.", {"on_post_step": _hint_hook(f"Remember: {secret}.")})
        _, reward, _, _, step_info = e.step(leak)
        assert step_info["patch_valid"] is False and "task data" in step_info["patch_error"], step_info["patch_error"]
        assert "\n" not in step_info["patch_error"] and reward == u.config.invalid_patch_reward
        checked, rejected = _false_positives(u, range(8))
        assert checked >= 50 and rejected == [], rejected[:3]
    finally:
        e.close()


def test_compatibility_forms_and_format_characters_do_not_hide_leaks() -> None:
    """Fullwidth letters and digits, zero-width spaces and soft hyphens are folded away before matching."""
    from harness_gym.harness.patch import Patch

    gold = GoldStrings.build(["Pacific Ocean trading 4471"], benchmark="dbbench")
    for disguised in ("Ｐａｃｉｆｉｃ Ｏｃｅａｎ ｔｒａｄｉｎｇ ４４７１", "Pac\u200bific Oc\u00adean trading 44\u200d71",
                      "pacific ocean\u2060 TRADING 4471"):
        patch = Patch("diff", "", (("skills/a.md", f"Prefer {disguised} rows.\n"),))
        with pytest.raises(PatchError, match="a value from this batch"):
            check_leakage(patch, gold)
    for disguised in ("ｔａｓｋ ＃１２", "task\u200b 12"):
        with pytest.raises(PatchError, match="id or index"):
            check_leakage(Patch("diff", "", (("skills/a.md", f"For {disguised} commit.\n"),)), gold)
    check_leakage(Patch("diff", "", (("skills/a.md", "Prefer Pacific rows.\n"),)), gold)  # innocent text still passes
