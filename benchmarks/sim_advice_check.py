"""Issue 13's done-tests on the sim, at full size: trigger words earn nothing, guards that name the fix earn.

For each env, over env seeds 0..N-1 (default 10 batches of 10 tasks), prints mean Δ score
and Δ success (and how many batches were negative) of
- the trigger-word-only patches of ``benchmarks/panel`` (prompt / skills / hints carriers),
- the unbounded guards (WebShop: Harness-R1's published demo patch + two phrasings written
  here; DBBench, ALFWorld: two phrasings each),
- the example patches and the ``template`` policy's patch for the batch's packet.
Usage: python benchmarks/sim_advice_check.py [--env webshop,dbbench,alfworld] [--batches 10] [--target sim]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENV_IDS = {"webshop": "HarnessEdit-WebShop-v0", "dbbench": "HarnessEdit-DBBench-v0", "alfworld": "HarnessEdit-ALFWorld-v0"}


def check(benchmark: str, batches: int, target: str) -> list[tuple[str, str, float, float, int, int]]:
    import gymnasium as gym

    import harness_gym  # noqa: F401
    from baselines.base import PolicyInput, make_policy
    from benchmarks.panel import examples, guard_patches, trigger_word_patches

    patches = trigger_word_patches(benchmark) + guard_patches(benchmark) + examples(benchmark)
    template = make_policy("template")
    env = gym.make(ENV_IDS[benchmark], target=target)
    acc: dict[str, list[tuple[float, float]]] = {}
    families = {n: f for n, f, _ in patches} | {"template": "policy"}
    try:
        for s in range(batches):
            obs, info = env.reset(seed=s)
            texts = [t for _, _, t in patches]
            texts.append(template.propose([PolicyInput(obs, info["packet"], benchmark)], k=1)[0][0])
            names = [n for n, _, _ in patches] + ["template"]
            for name, r in zip(names, env.unwrapped.evaluate_patches(texts)):
                if not r["patch_valid"]:
                    raise SystemExit(f"sim_advice_check: {name} is invalid on {benchmark}: {r['patch_error']}")
                acc.setdefault(name, []).append((r["delta_score"], r["delta_success"]))
    finally:
        env.close()
    return [(n, families[n], sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v),
             sum(1 for a, _ in v if a < 0), len(v)) for n, v in acc.items()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="webshop,dbbench,alfworld")
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--target", default="sim")
    args = ap.parse_args(argv)
    for bench in [e.strip() for e in args.env.split(",") if e.strip()]:
        if bench not in ENV_IDS:
            print(f"sim_advice_check: error: unknown env {bench!r}: expected one of {sorted(ENV_IDS)}", file=sys.stderr)
            return 2
        rows = check(bench, args.batches, args.target)
        print(f"## {ENV_IDS[bench]} on target {args.target}, {args.batches} batches")
        print("| patch | family | mean Δ score | mean Δ success | negative batches |\n|---|---|---|---|---|")
        for n, f, ds, dc, neg, k in rows:
            print(f"| {n} | {f} | {ds:+.3f} | {dc:+.3f} | {neg}/{k} |")
        trig = [r for r in rows if r[1] == "trigger-words"]
        print(f"trigger-word-only mean: Δ score {sum(r[2] for r in trig) / len(trig):+.3f}, "
              f"Δ success {sum(r[3] for r in trig) / len(trig):+.3f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
