"""A tiny chat model built locally, for fast plumbing tests of every backend (no model hub).

``build_tiny_model(dir)`` trains a byte-level BPE tokenizer with ``tokenizers`` on a few KB of
text, sets a tool-aware ChatML template, builds a 2-layer Llama (head size 64, which vLLM's
CPU attention supports) and trains it for a few seconds to answer every turn, whatever the context, with the same
Hermes-format tool call (``commit_final_answer`` with ``["1"]``), so a DBBench episode ends in
one round. Its replies are real model output going through the real parser.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from harness_gym.models.extras import require
from harness_gym.models.toolcalls import TOOL_CHAT_TEMPLATE

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SQL_CALL = '<tool_call>\n{"name": "execute_sql", "arguments": {"query": "SELECT 1"}}\n</tool_call>'
COMMIT_CALL = '<tool_call>\n{"name": "commit_final_answer", "arguments": {"answers": ["1"]}}\n</tool_call>'
REPLY = COMMIT_CALL
_WORDS = ["select", "from", "where", "table", "column", "name", "value", "count", "group", "order", "by", "insert", "update", "the", "of", "a", "question", "answer", "database", "mysql", "query", "result", "tool", "call", "function", "arguments", "answers", "commit", "final", "execute", "sql", "rows", "evidence", "you", "are", "an", "agent", "help", "me", "operate", "on", "tables"]
MARKER = "tiny-model.json"
RECIPE = 3  # bump when the recipe changes: cached builds of other recipes are rebuilt


def _corpus(rng: random.Random) -> list[str]:
    lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 25))) for _ in range(300)]
    return lines + [SQL_CALL, COMMIT_CALL, TOOL_CHAT_TEMPLATE, "0123456789 ()[]{}<>,.;:'\"-_=+*/|\\!?@#$%^&`~"]


def _conversations(rng: random.Random, n: int) -> list[tuple[list[dict], str]]:
    """Varied short conversations, each answered with ``REPLY``."""
    out = []
    for k in range(n):
        def words(lo: int, hi: int) -> str:
            return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))
        ending = rng.choice(["?", ".", "", "!", " " + str(rng.randint(0, 999)), "\n", ")"])
        msgs: list[dict] = [{"role": "system", "content": words(0, 30)},
                            {"role": "user", "content": rng.choice(["", "Question: "]) + words(1, 40) + ending}]
        if k % 2:
            msgs.append({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "execute_sql", "arguments": {"query": words(1, 8)}}}]})
            msgs.append({"role": "tool", "content": rng.choice([str([(rng.randint(0, 99),)]), words(1, 20), "[]"])})
        out.append((msgs, REPLY))
    return out


def build_tiny_model(out_dir: str | Path, *, steps: int = 150, seed: int = 0) -> Path:
    """Build (once) a tiny tool-calling Llama in ``out_dir``; returns the folder."""
    out = Path(out_dir)
    if (out / MARKER).exists() and json.loads((out / MARKER).read_text()).get("recipe") == RECIPE:
        return out
    torch = require("torch", "tiny model")
    transformers = require("transformers", "tiny model")
    tk = require("tokenizers", "tiny model")
    rng = random.Random(seed)
    torch.manual_seed(seed)

    bpe = tk.Tokenizer(tk.models.BPE(unk_token=None))
    bpe.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=640, special_tokens=SPECIALS,
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(_corpus(rng), trainer=trainer)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                               pad_token="<|endoftext|>")
    tok.chat_template = TOOL_CHAT_TEMPLATE

    cfg = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=64, max_position_embeddings=8192, tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    model = transformers.LlamaForCausalLM(cfg)
    examples = []
    tools = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "dbbench" / "harness" / "tools.json").read_text())
    for msgs, target in _conversations(rng, 128):
        prompt = tok.apply_chat_template(msgs, tools=tools, add_generation_prompt=True, tokenize=False)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        t_ids = tok(target + "<|im_end|>", add_special_tokens=False)["input_ids"]
        examples.append((p_ids[-160:], t_ids))  # the reply depends on the last turns only (RoPE: relative)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _step in range(steps):
        batch = rng.sample(examples, 16)
        width = max(len(p) + len(t) for p, t in batch)
        ids = torch.full((len(batch), width), tok.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        for row, (p, t) in enumerate(batch):
            seq = p + t
            ids[row, : len(seq)] = torch.tensor(seq)
            labels[row, len(p) : len(seq)] = torch.tensor(t)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / MARKER).write_text(json.dumps({"recipe": RECIPE, "steps": steps, "seed": seed, "final_loss": float(loss.detach())}))
    return out
