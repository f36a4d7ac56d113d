"""Agreement benchmark: do two targets rank the same patches the same way?

A panel per env of >= 30 diverse patches — the policies' outputs (template, self-refine,
co-harness, noop) on several packets, the example patches, hand-written variants (bounded
and unbounded guards, hints only, rewrites only, skills only, stuffed, generic, harmful),
guards of the Harness-R1 demo's kind and trigger-word-only lines (``benchmarks/panel``) —
is scored on the same batches (env seeds ``0..batches-1``, or ``S..S+batches-1`` with ``--first-seed S``)
by target A and target B.
It reports, per env and per metric (Δ score, Δ success), Spearman's ρ between A's and B's
mean Δ, sign agreement (patches whose Δ has the same sign, |Δ| < ``--eps`` counting as 0),
how well each target's own ranking of the panel reproduces on other tasks (``batch_rho``: the mean
ρ between its batches; ``reliability``: that of the mean of all batches) and the ceiling that noise
puts on ρ,
with ``--held-out K``, the same statistics over batches ``K..N-1`` alone (for batches a sim was not
calibrated on: ρ on the batches it was fitted to is in-sample and flatters it; which batches
those are is the user's claim, and the JSON records the sim's code key so it can be audited),
the per-patch table (markdown and JSON: mean Δ with its paired 95% t-interval over the
batches, and the tasks each patch fixed and broke — solved after but not before, and the
reverse — summed over the batches) and a scatter plot (PNG). A target's scores are kept in
``<out>/scores_<env>_<a|b>.json`` per patch text and batch, and reused for that target: a run
with fewer batches takes the first ones, one with more batches or a larger panel scores only
the (patch, batch) pairs it lacks, and a run that stopped resumes after its last finished batch
(a real target's scoring takes hours on a CPU; the sim's is seconds, and its kept rows are
keyed by the package's code too, so a changed sim is rescored rather than read back; a file holding a real
target's rows for another target or ``--first-seed`` is never overwritten: the run stops). Each batch's patches are
scored in one call against that call's baseline, so a patch added later is compared with a
rerun of the baseline — exact on the sim, within the target's noise on a batched real one.

``--transcripts`` also keeps every episode of each batch a run scores (the baseline's and each patch's
messages and hook events, ``transcripts_<env>_<a|b>/batch<s>.jsonl.gz``): what a target did under a
patch, for reading why the two targets disagree.

Targets are the env's ``target`` strings (``sim``, ``hf:…``, ``vllm:…``, ``openai:…``, and
``smol`` once the factory knows it — issue 12), plus two stand-ins for when no real target
is available: ``sim:flaws=off`` (the sim with every flaw's probability set to 0) and
``sim:flaws=<x>`` (every probability scaled by x). Each target scores in its own process,
so a stand-in's changes never leak into another target's numbers.

Usage:
  python benchmarks/agreement.py --env webshop,dbbench,alfworld --a sim --b smol --batches 10
  python benchmarks/agreement.py --b sim:flaws=0.5 --out runs/agreement
  python benchmarks/agreement.py --env webshop --b "smol:webshop?engine=vllm" \
      --only "noop@packet1000,template@packet1000,webshop_buy_guard,trigger-prompt-0"

``--only`` keeps the panel patches whose names match one of its comma-separated shell
patterns (``fnmatch``), for a real target whose scoring of the whole panel would take hours.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness_gym.evaluation.stats import mean_ci  # noqa: E402

ENV_IDS = {"webshop": "HarnessEdit-WebShop-v0", "dbbench": "HarnessEdit-DBBench-v0", "alfworld": "HarnessEdit-ALFWorld-v0"}
POLICIES = ("template", "self-refine", "co-harness", "noop")
PACKET_SEEDS = (1000, 1001, 1002)  # packets the policies write their patches for (not the scoring batches)


# --- the panel ----------------------------------------------------------------------------------
def build_panel(benchmark: str, only: list[str] | None = None) -> list[dict[str, str]]:
    """Every panel patch as {name, family, text}; policy outputs deduplicated by text; with ``only``,
    the patches whose names match one of those ``fnmatch`` patterns (an error if one matches none)."""
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers env ids
    from baselines.base import PolicyInput, make_policy
    from benchmarks.panel import panel

    rows = [{"name": n, "family": f, "text": t} for n, f, t in panel(benchmark)]
    seen = {r["text"] for r in rows}
    env = gym.make(ENV_IDS[benchmark])
    try:
        for name in POLICIES:
            policy = make_policy(name)
            for s in PACKET_SEEDS:
                obs, info = env.reset(seed=s)
                text = policy.propose([PolicyInput(obs, info["packet"], benchmark)], k=1)[0][0]
                if text not in seen:
                    seen.add(text)
                    rows.append({"name": f"{name}@packet{s}", "family": f"policy:{name}", "text": text})
    finally:
        env.close()
    return select(rows, benchmark, only)


def load_panel(path: Path, benchmark: str, only: list[str] | None = None) -> list[dict[str, str]]:
    """A panel kept from an earlier run (``panel_<env>.json``; ``path`` is the file or its folder): the patch
    texts the real rows were scored on. A sim change changes the policies' outputs, so a rebuilt panel would
    no longer match rows kept for the old one; a kept panel does."""
    f = path / f"panel_{benchmark}.json" if path.is_dir() else path
    try:
        rows = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SystemExit(f"agreement: error: --panel {f}: not a readable panel file ({type(exc).__name__})") from None
    if not (isinstance(rows, list) and rows and all(
            isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("name", "family", "text")) for r in rows)):
        raise SystemExit(f"agreement: error: --panel {f}: expected a JSON list of {{name, family, text}} patches")
    if len({r["text"] for r in rows}) != len(rows) or len({r["name"] for r in rows}) != len(rows):
        raise SystemExit(f"agreement: error: --panel {f}: two patches share a name or a text")
    return select([{"name": r["name"], "family": r["family"], "text": r["text"]} for r in rows], benchmark, only)


def select(rows: list[dict[str, str]], benchmark: str, only: list[str] | None) -> list[dict[str, str]]:
    """The patches whose names match one of the ``fnmatch`` patterns ``only`` (all without; an error if one matches none)."""
    if only:
        from fnmatch import fnmatchcase

        unmatched = [pat for pat in only if not any(fnmatchcase(r["name"], pat) for r in rows)]
        if unmatched:
            raise SystemExit(f"agreement: error: --only {unmatched} matches no {benchmark} panel patch "
                             f"(names: {', '.join(r['name'] for r in rows)})")
        rows = [r for r in rows if any(fnmatchcase(r["name"], pat) for pat in only)]
    return rows


# --- scoring (one target per process) -----------------------------------------------------------
def _apply_stand_in(target: str) -> str:
    """``sim:flaws=off|<x>``: scale the sims' flaw probabilities in this process; returns the env target."""
    if not target.startswith("sim:"):
        return target
    key, _, value = target[4:].partition("=")
    if key != "flaws":
        raise SystemExit(f"agreement: unknown sim stand-in {target!r}: expected sim:flaws=off or sim:flaws=<scale>")
    try:
        scale = 0.0 if value == "off" else float(value)
    except ValueError:
        raise SystemExit(f"agreement: {target!r}: the scale must be 'off' or a number") from None
    from harness_gym.benchmarks.alfworld import sim as alf
    from harness_gym.benchmarks.dbbench import sim as db
    from harness_gym.benchmarks.webshop import sim as ws

    for table in (ws.FLAWS, alf.FLAWS, *alf.FLAWS_BY_TYPE.values(), db.SELECT_FLAWS, db.MUTATION_FLAWS):
        for k in table:
            table[k] = min(1.0, table[k] * scale)
    return "sim"


Rows = dict[str, list[dict[str, Any]]]  # per patch (sha256 of its text): its row on batch 0, 1, …


def score(benchmark: str, target: str, texts: list[str], batches: int, kept: Rows,
          save: Callable[[Rows], None] | None = None, transcripts: Path | None = None,
          names: list[str] | None = None, first_seed: int = 0, cache_dir: Path | None = None) -> Rows:
    """Score each patch on env seeds first_seed..first_seed+batches-1 that ``kept`` lacks for it: per batch, every
    patch short of that batch in one ``evaluate_patches`` call (its Δ against that call's own
    baseline). Rows are {valid, delta_score, delta_success, error, fixed, broke, …}; ``save``
    gets ``kept`` after each batch, so a run that stops resumes after its last finished batch.
    ``transcripts``: a folder that gets, per batch scored here, ``batch<seed>.jsonl.gz`` with every episode
    (the baseline's, then each patch's: ``write_transcripts``); ``names`` label the patches there.
    ``cache_dir``: the env's rollout cache on disk (``cache_dir`` kwarg), shared by runs that score parts of a batch."""
    import gymnasium as gym

    import harness_gym  # noqa: F401

    by_sha = {_text_sha(t): t for t in texts}
    shas = list(by_sha)
    done = min(len(kept.get(h, [])) for h in shas) if shas else batches
    if 0 < done < batches:
        print(f"agreement: {benchmark} on {target}: resuming after batch {done}/{batches} (seed {first_seed + done - 1})",
              file=sys.stderr, flush=True)
    label = {_text_sha(t): n for t, n in zip(texts, names)} if names else {h: h for h in shas}
    env = None
    try:
        for s in range(done, batches):
            need = [h for h in shas if len(kept.setdefault(h, [])) <= s]
            if not need:
                continue
            if env is None:
                # a real target's batch takes minutes to an hour: a bar over its episodes (a sim's takes seconds)
                env = gym.make(ENV_IDS[benchmark], target=_apply_stand_in(target), progress=not target.startswith("sim"),
                               cache_dir=str(cache_dir) if cache_dir is not None else None)
            t0, ran = time.perf_counter(), env.unwrapped.evaluator.episodes_run
            env.reset(seed=first_seed + s)
            res = env.unwrapped.evaluate_patches([by_sha[h] for h in need], episodes=transcripts is not None)
            cost = _cost(env.unwrapped.evaluator, ran, time.perf_counter() - t0)
            short = [r for r in res if r.get("incomplete")]
            if short:  # an environment failure (a dead server): nothing of this batch is kept
                raise SystemExit(f"agreement: error: {benchmark} on {target}: batch {s + 1} (seed {first_seed + s}): "
                                 f"{len(short[0]['incomplete'])} tasks ended in environment errors; nothing of this batch was kept")
            if transcripts is not None:
                write_transcripts(transcripts / f"batch{first_seed + s}.jsonl.gz", first_seed + s,
                                  [(label[h], h) for h in need], res)
            for h, r in zip(need, res):
                kept[h].append({"valid": r["patch_valid"], "delta_score": r.get("delta_score"),
                                "delta_success": r.get("delta_success"), "error": r.get("patch_error"),
                                **fix_break(r.get("per_task") or [])})
            print(f"agreement: {benchmark} on {target}: batch {s + 1}/{batches} scored ({len(need)} of "
                  f"{len(shas)} patches) on env seed {first_seed + s}{cost}", file=sys.stderr, flush=True)
            if save is not None:
                save(kept)
    finally:
        if env is not None:
            env.close()
    return kept


def _cost(evaluator: Any, ran_before: int, seconds: float) -> str:
    """What a batch cost: episodes run (not read from kept rollouts), minutes, and for an engine that counts them
    the prompt tokens so far and the share its prefix cache served (a low share on long episodes means it evicted
    their prefixes between rounds)."""
    ran = evaluator.episodes_run - ran_before
    out = f": {ran} episodes in {seconds / 60:.1f} min"
    stats = getattr(getattr(evaluator, "backend", None), "stats", None)
    prompt = getattr(stats, "prompt_tokens", 0)
    if prompt:
        out += f"; so far {prompt} prompt tokens, {getattr(stats, 'cached_tokens', 0) / prompt:.0%} from the prefix cache"
    return out


def write_transcripts(path: Path, batch: int, patches: list[tuple[str, str]], res: list[dict[str, Any]]) -> Path:
    """One JSON line per episode of one batch (``batch``: its env seed) — the baseline's (``patch`` null) once, then each valid patch's —
    with the patch's name and text sha256, the task, seed, reward, success, status, rounds, messages and hook
    events: what the target did under each patch, for reading why a target agrees or not."""
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    base = next((r["baseline_episodes"] for r in res if r.get("baseline_episodes") is not None), [])
    keys = ("task_id", "task_type", "seed", "reward", "success", "status", "rounds", "messages", "events", "error")
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        for (name, sha), episodes in [((None, None), base)] + [(p, r.get("episodes") or []) for p, r in zip(patches, res)]:
            for ep in episodes:
                fh.write(json.dumps({"batch": batch, "patch": name, "patch_sha256": sha,
                                     **{k: ep.get(k) for k in keys}}) + "\n")
    tmp.replace(path)
    return path


def _kept_key(target: str, first_seed: int = 0) -> str:
    """What a kept score file is keyed by: the target string (and the first env seed, where it is not 0:
    rows are per batch, so rows from other seeds never mix), and for a sim (or sim stand-in) the
    package's code as well — the sim is rescored in seconds whenever its code changed, where a real
    target's rows are kept across code changes (they take hours; rescore with a new ``--out``)."""
    if first_seed:
        return f"{_kept_key(target)}@seeds-from-{first_seed}"
    if not target.startswith("sim"):
        return target
    return f"{target}@code-{_code_hash()}"


def rollouts_dir(score_out: Path, target: str) -> Path | None:
    """Where a real target's episodes are kept for ``score_out`` (``rollouts_<env>_<side>/<code hash>``): none for a
    sim or a sim stand-in, which replays in seconds and whose stand-ins share the env target ``sim``."""
    if target.startswith("sim"):
        return None
    return score_out.with_name(score_out.stem.replace("scores_", "rollouts_", 1)) / _code_hash(sims=False)


# the simulated targets' own code: it plays no part in a real target's episodes
SIM_FILES = ("sim.py", "sim_reading.py")


def _code_hash(sims: bool = True) -> str:
    """The package's code (every ``harness_gym`` .py file), 12 hex: what a sim's rows are keyed by. A real target's
    kept rollouts are keyed by it less the sims' files (``sims=False``), so a sim change keeps a real batch resumable."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted((ROOT / "harness_gym").rglob("*.py")):
        if sims or f.name not in SIM_FILES:  # exact names: a file merely ending in "sim.py" counts
            h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def _load_kept(path: Path, target: str, panel_file: Path | None = None, first_seed: int = 0) -> Rows:
    """The rows kept in ``path`` for ``target``, per patch. A file of the earlier whole-panel
    format ({key: {target, panel_sha256}, scores: [batch][patch]}) is read when its panel is
    ``panel_file``."""
    kept = _read_kept(path)
    target = _kept_key(target, first_seed)
    if kept.get("target") == target and isinstance(kept.get("patches"), dict):
        return {h: rows for h, rows in kept["patches"].items()  # a malformed entry is scored again
                if isinstance(rows, list) and all(isinstance(r, dict) and "valid" in r for r in rows)}
    key, scores = kept.get("key"), kept.get("scores")
    if (panel_file is not None and isinstance(key, dict) and key.get("target") == target and isinstance(scores, list)
            and key.get("panel_sha256") == _sha256(panel_file.read_bytes())):
        texts = [p["text"] for p in json.loads(panel_file.read_text(encoding="utf-8"))]
        if all(isinstance(b, list) and len(b) == len(texts) for b in scores):
            return {_text_sha(t): [b[i] for b in scores] for i, t in enumerate(texts)}
    return {}


def _read_kept(path: Path) -> dict[str, Any]:
    """A kept score file's JSON object ({} when there is none or it is not one)."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def refuse_other_rows(out_file: Path, target: str, first_seed: int, panel_file: Path) -> None:
    """A real target's rows took hours: never overwrite a file (or its ``.partial``) that keeps them for
    another target or first seed, or in the whole-panel format for another panel (whose rows are read
    back only for their own panel); a sim's rows are rescored in seconds and may be."""
    for f in (out_file, out_file.with_name(out_file.name + ".partial")):
        kept = _read_kept(f)
        key = kept.get("key")  # the whole-panel format keeps its target in key.target
        other = kept.get("target", key.get("target") if isinstance(key, dict) else None)
        if not isinstance(other, str) or other.startswith("sim"):
            continue
        old_format = isinstance(key, dict) and (first_seed or key.get("panel_sha256") != _sha256(panel_file.read_bytes()))
        if other != _kept_key(target, first_seed) or old_format:
            raise SystemExit(f"agreement: error: {f} keeps scores of {other!r}"
                             f"{' for another panel (whole-panel format)' if old_format else ''}, not of {target!r} from env seed "
                             f"{first_seed}; give another --out (nothing was overwritten)")


def _save_kept(path: Path, target: str, kept: Rows, first_seed: int = 0) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"target": _kept_key(target, first_seed), "patches": kept}), encoding="utf-8")
    tmp.replace(path)


def fix_break(per_task: list[dict[str, Any]]) -> dict[str, int]:
    """Tasks a patch fixed (solved only after it) and broke (solved only before), by reward 1.0."""
    def ok(x: Any) -> bool:
        return x is not None and float(x) >= 1.0

    pairs = [(ok(t.get("baseline_reward")), ok(t.get("patched_reward"))) for t in per_task]
    return {"fixed": sum(1 for b, a in pairs if a and not b), "broke": sum(1 for b, a in pairs if b and not a),
            "baseline_solved": sum(1 for b, _ in pairs if b), "tasks": len(pairs)}


def score_in_subprocess(benchmark: str, target: str, panel_file: Path, batches: int, out_file: Path,
                        transcripts: bool = False, first_seed: int = 0, only: list[str] | None = None) -> list[list[dict]]:
    """Target ``target``'s scores of the panel on batches 0..batches-1 (env seeds ``first_seed`` on;
    [batch][patch]), computed in
    a child process. Rows are kept per target and per patch text in ``out_file`` (with a
    ``.partial`` beside it while a child runs): a later run reuses every (patch, batch) it finds —
    fewer batches take the first ones, more batches or new patches score only what is missing,
    and a run that stopped resumes after its last finished batch. With ``only``, the panel's patches
    whose names match those patterns (``select``) are scored."""
    texts = [p["text"] for p in select(json.loads(panel_file.read_text(encoding="utf-8")), benchmark, only)]
    partial = out_file.with_name(out_file.name + ".partial")
    refuse_other_rows(out_file, target, first_seed, panel_file)
    kept = _load_kept(out_file, target, panel_file, first_seed)
    for h, rows in _load_kept(partial, target, panel_file, first_seed).items():
        if len(rows) > len(kept.get(h, [])):
            kept[h] = rows
    shas = [_text_sha(t) for t in texts]
    if all(len(kept.get(h, [])) >= batches for h in shas):
        print(f"agreement: {benchmark} on {target}: reusing {out_file}", file=sys.stderr)
        _save_kept(out_file, target, kept, first_seed)  # in this format, with what a .partial or an older file held
        partial.unlink(missing_ok=True)
    else:
        _save_kept(partial, target, kept, first_seed)
        cmd = [sys.executable, __file__, "--score-one", benchmark, "--target-one", target, "--panel-file", str(panel_file),
               "--batches", str(batches), "--score-out", str(out_file), "--first-seed", str(first_seed)]
        cmd += ["--only", ",".join(only)] if only else []
        subprocess.run(cmd + (["--transcripts"] if transcripts else []), check=True, cwd=ROOT)
        kept = _load_kept(out_file, target, first_seed=first_seed)
    return [[kept[h][s] for h in shas] for s in range(batches)]


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _text_sha(text: str) -> str:
    return _sha256(text.encode("utf-8"))


# --- statistics ----------------------------------------------------------------------------------
def ranks(xs: list[float]) -> list[float]:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's ρ with ties (Pearson on average ranks); scipy's when installed. NaN if constant."""
    try:
        from scipy.stats import spearmanr

        rho = float(spearmanr(a, b).statistic)
        return rho
    except ImportError:
        pass
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va, vb = sum((x - ma) ** 2 for x in ra), sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else float("nan")


def sign(x: float, eps: float) -> int:
    return 0 if abs(x) < eps else (1 if x > 0 else -1)


def summarize(panel: list[dict], a: list[list[dict]], b: list[list[dict]], eps: float) -> dict[str, Any]:
    rows = []
    for i, p in enumerate(panel):
        ra = [batch[i] for batch in a if batch[i]["valid"]]
        rb = [batch[i] for batch in b if batch[i]["valid"]]
        row: dict[str, Any] = {"name": p["name"], "family": p["family"], "valid": bool(ra) and bool(rb)}
        for side, rs in (("a", ra), ("b", rb)):
            for m in ("delta_score", "delta_success"):
                ci = mean_ci([r[m] for r in rs])
                row[f"{side}_{m}"] = ci.mean if rs else None
                row[f"{side}_{m}_ci"] = [ci.lo, ci.hi] if len(rs) > 1 else None
            for k in ("fixed", "broke"):
                row[f"{side}_{k}"] = sum(r.get(k, 0) for r in rs)
        rows.append(row)
    valid = [r for r in rows if r["valid"]]
    stats = {}
    for m in ("delta_score", "delta_success"):
        xa, xb = [r[f"a_{m}"] for r in valid], [r[f"b_{m}"] for r in valid]
        agree = sum(1 for x, y in zip(xa, xb) if sign(x, eps) == sign(y, eps))
        rho_a, rho_b = batch_rho(a, m), batch_rho(b, m)
        rel_a, rel_b = step_up(rho_a, len(a)), step_up(rho_b, len(b))
        ceiling = math.sqrt(rel_a * rel_b) if rel_a > 0 and rel_b > 0 else float("nan")
        stats[m] = {"spearman": spearman(xa, xb) if len(valid) > 2 else float("nan"),
                    "sign_agreement": agree / len(valid) if valid else float("nan"), "n": len(valid),
                    "batch_rho_a": rho_a, "batch_rho_b": rho_b,
                    "reliability_a": rel_a, "reliability_b": rel_b, "ceiling": ceiling}
    return {"rows": rows, "stats": stats}


def batch_rho(scores: list[list[dict]], metric: str) -> float:
    """How well one target's panel ranking reproduces from one batch to another: the mean Spearman ρ
    between its batches' Δs (over the patches valid in every batch). NaN with fewer than two batches
    or three patches."""
    k = len(scores)
    keep = [i for i in range(len(scores[0]) if scores else 0) if all(batch[i]["valid"] for batch in scores)]
    if k < 2 or len(keep) < 3:
        return float("nan")
    cols = [[batch[i][metric] for i in keep] for batch in scores]
    pairs = [spearman(cols[i], cols[j]) for i in range(k) for j in range(i + 1, k)]
    pairs = [r for r in pairs if not math.isnan(r)]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def reliability(scores: list[list[dict]], metric: str) -> float:
    """The reliability of the mean of all batches' ranking: ``batch_rho`` stepped up by
    Spearman–Brown (``k r / (1 + (k - 1) r)``); a ``batch_rho`` of 0 or below is returned as it is
    (no agreement to step up). Two targets' ρ cannot be expected above ``sqrt(rel_a * rel_b)`` (the
    ``ceiling``): what their batch-to-batch noise leaves of a perfect agreement."""
    return step_up(batch_rho(scores, metric), len(scores))


def step_up(r: float, k: int) -> float:
    """Spearman–Brown: the reliability of the mean of ``k`` batches whose pairwise agreement is ``r``
    (``r`` itself when it is NaN, 0 or below)."""
    return r if math.isnan(r) or r <= 0 else k * r / (1 + (k - 1) * r)


def _json_safe(obj: Any) -> Any:
    """``obj`` with every NaN (a statistic that does not exist: one batch's reliability, a constant
    side's ρ) as ``None``, so the JSON is valid for strict parsers."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj


def _num(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:+.2f}"


def table_md(env_id: str, a: str, b: str, batches: int, result: dict[str, Any], metric: str, first_seed: int = 0) -> str:
    s = result["stats"][metric]
    out = [f"## {env_id}: {a} vs {b}, {batches} batches (env seeds {first_seed}..{first_seed + batches - 1}), "
           f"{metric.replace('_', ' ')}",
           f"Spearman ρ = {s['spearman']:+.3f}, sign agreement = {s['sign_agreement']:.0%} over {s['n']} patches",
           f"The panel's ranking batch to batch (mean ρ): {a} {_num(s.get('batch_rho_a'))}, {b} {_num(s.get('batch_rho_b'))}; "
           f"reliability of the {batches}-batch mean: {a} {_num(s.get('reliability_a'))}, {b} "
           f"{_num(s.get('reliability_b'))}; ceiling on ρ from that noise {_num(s.get('ceiling'))}"]
    if "held_out" in result:
        h, k = result["held_out"]["stats"][metric], result["held_out"]["first_batch"]
        out.append(f"Batches {k}..{batches - 1} alone (--held-out {k}): Spearman ρ = {_num(h['spearman'])}, "
                   f"sign agreement = {h['sign_agreement']:.0%} over {h['n']} patches; ceiling {_num(h.get('ceiling'))} "
                   f"(env seeds {first_seed + k}..{first_seed + batches - 1})")
    out += ["",
           f"| patch | family | {a} Δ | {b} Δ [95% CI] | {a} fixed/broke | {b} fixed/broke |", "|---|---|---|---|---|---|"]
    fmt = lambda v: "invalid" if v is None else f"{v:+.3f}"  # noqa: E731

    def with_ci(r: dict[str, Any], side: str) -> str:
        ci = r.get(f"{side}_{metric}_ci")
        return fmt(r[f"{side}_{metric}"]) + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")

    for r in sorted(result["rows"], key=lambda r: -(r[f"b_{metric}"] if r[f"b_{metric}"] is not None else -9)):
        out.append(f"| {r['name']} | {r['family']} | {fmt(r[f'a_{metric}'])} | {with_ci(r, 'b')} | "
                   f"{r.get('a_fixed', 0)}/{r.get('a_broke', 0)} | {r.get('b_fixed', 0)}/{r.get('b_broke', 0)} |")
    return "\n".join(out)


def plot(results: dict[str, dict[str, Any]], a: str, b: str, metric: str, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(results), figsize=(4.6 * len(results), 4.2), squeeze=False)
    for ax, (bench, res) in zip(axes[0], results.items()):
        rows = [r for r in res["rows"] if r["valid"]]
        fams = sorted({r["family"].split(":")[0] for r in rows})
        for k, fam in enumerate(fams):
            pts = [r for r in rows if r["family"].split(":")[0] == fam]
            ax.scatter([r[f"a_{metric}"] for r in pts], [r[f"b_{metric}"] for r in pts], label=fam, s=24,
                       marker="osD^v<>Px*h"[k % 11], color=plt.get_cmap("tab20")(k % 20), alpha=0.8)
        lo = min([0.0] + [min(r[f"a_{metric}"], r[f"b_{metric}"]) for r in rows]) - 0.02
        hi = max([0.0] + [max(r[f"a_{metric}"], r[f"b_{metric}"]) for r in rows]) + 0.02
        ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8)
        ax.axhline(0, color="black", linewidth=0.5)
        ax.axvline(0, color="black", linewidth=0.5)
        s = res["stats"][metric]
        ax.set_title(f"{bench}: ρ={s['spearman']:+.2f}, sign {s['sign_agreement']:.0%}")
        ax.set_xlabel(f"{a} {metric}")
        ax.set_ylabel(f"{b} {metric}")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="webshop,dbbench,alfworld", help="comma-separated: webshop, dbbench, alfworld")
    ap.add_argument("--a", default="sim", help="target A (default: sim)")
    ap.add_argument("--b", default="smol", help="target B (default: smol, the trained CPU target of issue 12)")
    ap.add_argument("--batches", type=int, default=10, help="N batches scored by both targets: env seeds S..S+N-1")
    ap.add_argument("--first-seed", type=int, default=0, metavar="S",
                    help="the first batch's env seed (default 0): score a panel on seeds a sim was not fitted to")
    ap.add_argument("--eps", type=float, default=0.005, help="|Δ| below this counts as 0 for sign agreement")
    ap.add_argument("--out", type=Path, default=Path("runs/agreement"))
    ap.add_argument("--held-out", type=int, default=None, metavar="K",
                    help="also report the statistics over batches K..N-1 alone: those target A was not calibrated on")
    ap.add_argument("--only", default="", help="comma-separated name patterns (fnmatch): score only these panel patches")
    ap.add_argument("--panel", type=Path, default=None, metavar="PATH",
                    help="score a kept panel (panel_<env>.json, or the folder holding it) instead of building one: "
                         "the real rows in benchmarks/results/agreement/<env>/ are keyed by theirs")
    ap.add_argument("--transcripts", action="store_true",
                    help="also write every episode of each batch scored in this run (baseline and each patch: messages, "
                         "hook events) to <out>/transcripts_<env>_<a|b>/batch<s>.jsonl.gz")
    ap.add_argument("--score-one", help=argparse.SUPPRESS)
    ap.add_argument("--target-one", help=argparse.SUPPRESS)
    ap.add_argument("--panel-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--score-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    if args.score_one:  # child process: one target, one env
        panel = select(json.loads(args.panel_file.read_text(encoding="utf-8")), args.score_one, only)
        texts = [p["text"] for p in panel]
        partial = args.score_out.with_name(args.score_out.name + ".partial")
        kept = _load_kept(partial, args.target_one, first_seed=args.first_seed)
        folder = args.score_out.with_name(args.score_out.stem.replace("scores_", "transcripts_", 1))
        # a real target's episodes are kept on disk (per package code), so a later part of the same batch
        # (another --only) reuses its baseline instead of replaying it, and every part is scored against the same one
        rollouts = rollouts_dir(args.score_out, args.target_one)
        kept = score(args.score_one, args.target_one, texts, args.batches, kept,
                     lambda k: _save_kept(partial, args.target_one, k, args.first_seed),
                     transcripts=folder if args.transcripts else None, names=[p["name"] for p in panel],
                     first_seed=args.first_seed, cache_dir=rollouts)
        _save_kept(args.score_out, args.target_one, kept, args.first_seed)
        partial.unlink(missing_ok=True)
        return 0
    envs = [e.strip() for e in args.env.split(",") if e.strip()]
    bad = [e for e in envs if e not in ENV_IDS]
    if bad or args.batches < 1 or args.first_seed < 0:
        print(f"agreement: error: --env must name {sorted(ENV_IDS)}, --batches be >= 1 and --first-seed >= 0 "
              f"(got {bad or (args.batches, args.first_seed)})",
              file=sys.stderr)
        return 2
    if args.held_out is not None and not 0 < args.held_out < args.batches:
        print(f"agreement: error: --held-out K needs 0 < K < --batches (got K={args.held_out}, {args.batches} batches)",
              file=sys.stderr)
        return 2
    if args.panel is not None and args.panel.is_file() and len(envs) > 1:
        print(f"agreement: error: --panel {args.panel} is one env's panel; give its folder for --env {args.env}",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    md = []
    for bench in envs:
        # the whole panel is kept (the rows are keyed by its texts), so a later run with another --only, or one
        # that reads this folder back with --panel, still finds every patch; --only picks what is scored now
        whole = load_panel(args.panel, bench) if args.panel is not None else build_panel(bench)
        panel = select(whole, bench, only)
        pf = args.out / f"panel_{bench}.json"
        pf.write_text(json.dumps(whole, indent=1), encoding="utf-8")
        for side, t in (("a", args.a), ("b", args.b)):  # before either side scores: side a may take hours
            refuse_other_rows(args.out / f"scores_{bench}_{side}.json", t, args.first_seed, pf)
        try:
            a, b = (score_in_subprocess(bench, t, pf, args.batches, args.out / f"scores_{bench}_{side}.json", args.transcripts,
                                        args.first_seed, only) for side, t in (("a", args.a), ("b", args.b)))
        except subprocess.CalledProcessError:
            print(f"agreement: error: scoring {bench} failed: the scoring process ended with the error above; the "
                  "batches it finished are kept and a rerun resumes after them", file=sys.stderr)
            return 1
        res = summarize(panel, a, b, args.eps)
        if args.held_out is not None:
            res["held_out"] = {"first_batch": args.held_out,
                               "stats": summarize(panel, a[args.held_out:], b[args.held_out:], args.eps)["stats"]}
        results[bench] = res
        # DBBench and ALFWorld rewards are 0/1: their Δ success is their Δ score
        for metric in ("delta_score", "delta_success") if bench == "webshop" else ("delta_score",):
            md.append(table_md(ENV_IDS[bench], args.a, args.b, args.batches, res, metric, args.first_seed))
            print(md[-1].split("\n\n")[0])
    (args.out / "agreement.json").write_text(json.dumps(_json_safe({"a": args.a, "b": args.b, "batches": args.batches, "first_seed": args.first_seed,
                                                         "held_out": args.held_out, "a_key": _kept_key(args.a, args.first_seed),
                                                         "b_key": _kept_key(args.b, args.first_seed),
                                                         "results": results}), indent=1, allow_nan=False),
                                             encoding="utf-8")
    (args.out / "agreement.md").write_text("\n\n".join(md) + "\n", encoding="utf-8")
    for metric in ("delta_score", "delta_success"):
        png = plot(results, args.a, args.b, metric, args.out / f"agreement_{metric}.png")
        if png:
            print(f"plot: {png}")
    rounded = lambda stats: {m: {k: round(v, 3) for k, v in s.items()} for m, s in stats.items()}  # noqa: E731
    print("summary:", json.dumps({b: rounded(r["stats"]) for b, r in results.items()}))
    if args.held_out is not None:
        print(f"held out (batches {args.held_out}..{args.batches - 1}):",
              json.dumps({b: rounded(r["held_out"]["stats"]) for b, r in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
