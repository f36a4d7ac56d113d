"""The command line as a user runs it: bench table, JSON lines, resume, data commands."""
from __future__ import annotations

import json
import subprocess
import sys

from harness_gym.cli import main


def test_bench_prints_table_writes_jsonl_and_resumes(tmp_path, capsys) -> None:
    out = tmp_path / "bench.jsonl"
    rc = main(["bench", "--policy", "noop,template", "--episodes", "3", "--batch-size", "5", "--out", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "mean Δ_B [95% CI]" in text and "| template" in text and "| noop" in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and {r["policy"] for r in rows} == {"noop", "template"}
    assert all(r["patch_valid"] for r in rows) and all(r["reward"] == 0.0 for r in rows if r["policy"] == "noop")
    assert out.with_suffix(".png").exists()
    # cost: a step reruns the batch of 5 under the patched harness (the baseline is shared, not charged);
    # a harness version already run on that batch (template's no-change patch = noop's) costs nothing
    assert all(r["cost"]["rollouts"] == 5 and r["cost"]["target_calls"] >= 5 for r in rows if r["policy"] == "noop")
    assert all(r["cost"]["rollouts"] in (0, 5) for r in rows)
    assert all(r["cost"]["patch_tokens"] == (len(r["patch"]) + 3) // 4 for r in rows)
    assert "rollouts/ep" in text and "patch ≈tok" in text

    # a crash left a torn line and one episode undone: --resume redoes only what is missing
    kept = out.read_text().splitlines()[:4]
    out.write_text("\n".join(kept) + '\n{"env": "HarnessEdit-DBBench-v0", "pol', encoding="utf-8")
    rc = main(["bench", "--policy", "noop,template", "--episodes", "3", "--batch-size", "5", "--out", str(out),
               "--no-progress", "--resume", "--no-plot"])
    assert rc == 0
    rows2 = [json.loads(line) for line in out.read_text().splitlines() if line.endswith("}")]
    keys = [(r["policy"], r["seed"]) for r in rows2]
    assert len(set(keys)) == 6
    assert [r["reward"] for r in sorted(rows2, key=lambda r: (r["policy"], r["seed"]))] == [
        r["reward"] for r in sorted(rows, key=lambda r: (r["policy"], r["seed"]))
    ]


def test_bad_cli_input_gives_one_line_errors(capsys) -> None:
    assert main(["bench", "--policy", "nope", "--episodes", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness-gym: error:") and "nope" in err and "\n" not in err
    assert main(["bench", "--target", "gpt:x", "--episodes", "1", "--no-progress"]) == 2


def test_data_verify_on_the_original_dev_split(dbbench_data_dir, capsys) -> None:
    rc = main(["data", "verify", "dbbench", "--data-dir", str(dbbench_data_dir), "--split", "valid"])
    out = capsys.readouterr().out
    assert rc == 0 and "INSERT" in out and "UPDATE" in out


def test_console_script_lists_envs() -> None:
    out = subprocess.run([sys.executable, "-m", "harness_gym.cli", "envs"], capture_output=True, text=True, check=True)
    listed = set(out.stdout.split())
    assert {f"Harness{kind}-{b}-v0" for kind in ("Edit", "Select") for b in ("DBBench", "WebShop", "ALFWorld")} <= listed
