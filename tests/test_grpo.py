"""Harness-R1 engineer training on TRL: rows from the training split only, env rewards, SFT, GRPO.

A tiny locally built model runs two GRPO steps. To make groups hold both a valid and an
invalid patch (so advantages are non-zero), a scripted logits processor forces a short valid
patch on even rows of each generation batch; odd rows sample freely. Rewards still come from
the env. Skips without torch/transformers/trl/datasets/tokenizers (fails when ``CI`` is set).
"""
from __future__ import annotations

import json
import tempfile
import types
from pathlib import Path

import gymnasium as gym
import pytest
from support import require_modules

import harness_gym  # noqa: F401
from baselines.grpo.config import GRPOEngineerConfig
from baselines.grpo.dataset import build_rows, reset_to_row, task_identities
from baselines.grpo.reward import EnvReward
from harness_gym.errors import ConfigError

SHORT = "Write one Harness-R1 patch for the DBBench harness."
VALID = "def on_init(ctx, nb):\n    return None\n"  # a bare hook module: a valid no-op patch


def need(*modules: str) -> None:
    require_modules(*modules, install="pip install 'torch==2.13.0' transformers trl datasets")


@pytest.fixture(scope="module")
def env():
    e = gym.make("HarnessEdit-DBBench-v0", batch_size=2, split="train")
    yield e
    e.close()


@pytest.fixture(scope="module")
def rows(env):
    return build_rows(env, range(40), prompt_prefix=SHORT, limit=2)


def test_config_validation():
    with pytest.raises(ConfigError, match="num_generations=1"):
        GRPOEngineerConfig(num_generations=1)
    with pytest.raises(ConfigError, match="gradient_accumulation_steps=3"):
        GRPOEngineerConfig(gradient_accumulation_steps=3)
    cfg = GRPOEngineerConfig()
    assert (cfg.num_generations, cfg.generation_batch_size, cfg.temperature, cfg.top_p) == (8, 32, 0.7, 0.95)
    assert (cfg.learning_rate, cfg.epsilon, cfg.epsilon_high, cfg.beta, cfg.max_completion_length) == (1e-6, 0.2, 0.28, 0.0, 12288)
    need("trl")
    t = cfg.to_trl()
    assert (t.num_generations, t.generation_batch_size, t.epsilon_high, t.temperature) == (8, 32, 0.28, 0.7)
    assert t.generation_batch_size % t.num_generations == 0 and t.use_vllm is False


def test_rows_come_from_the_training_split_only(env, rows):
    assert len(rows) == 2
    for row in rows:
        assert set(row) == {"prompt", "benchmark", "batch_tag", "batch_seed", "task_ids", "baseline_rewards"}
        assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["prompt"][1]["content"].startswith(SHORT)
        assert len(row["task_ids"]) == len(row["baseline_rewards"]) == 2 and min(row["baseline_rewards"]) < 1.0
        _obs, info = reset_to_row(env, row["batch_seed"], row["task_ids"])  # the batch is reproducible
        assert [info["packet"]["baseline_rewards"][t] for t in row["task_ids"]] == row["baseline_rewards"]
    u = env.unwrapped
    used = task_identities(env, rows)
    for split in ("valid", "test"):
        held = {t.identity() for t in u.spec_.load_tasks(split, None)}
        assert held and not used & held, f"{split} task identities entered the training rows"
    test_env = gym.make("HarnessEdit-DBBench-v0", batch_size=2, split="test")
    with pytest.raises(ConfigError, match="split='test'"):
        build_rows(test_env, [0])
    with pytest.raises(ConfigError, match="split='test'"):
        EnvReward(test_env)
    test_env.close()


def test_reward_scores_each_group_in_one_env_call(env, rows, tmp_path, monkeypatch):
    u = env.unwrapped
    calls = []
    real = u.evaluate_patches
    monkeypatch.setattr(u, "evaluate_patches", lambda patches: calls.append(list(patches)) or real(patches))
    reward = EnvReward(env, tmp_path / "log.jsonl")
    seeds = [r["batch_seed"] for r in rows for _ in range(2)]
    ids = [r["task_ids"] for r in rows for _ in range(2)]
    comps = [[{"role": "assistant", "content": VALID}], [{"role": "assistant", "content": "no patch"}]] * 2
    out = reward(prompts=[r["prompt"] for r in rows for _ in range(2)], completions=comps, batch_seed=seeds, task_ids=ids,
                 baseline_rewards=[r["baseline_rewards"] for r in rows for _ in range(2)])
    assert out == [0.0, u.config.invalid_patch_reward] * 2
    assert calls == [[VALID, "no patch"], [VALID, "no patch"]]  # one call per group, K candidates each
    line = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])
    assert line["valid_rate"] == 0.5 and line["delta_mean_valid"] == 0.0 and len(line["groups"]) == 2
    with pytest.raises(ConfigError, match="drew tasks"):
        reward(prompts=[None], completions=[VALID], batch_seed=[seeds[0]], task_ids=[["gen-train:0", "gen-train:1"]])


def test_teacher_rows_keep_valid_nonnegative_patches(env, rows):
    from baselines.base import make_policy
    from baselines.grpo.sft import teacher_rows

    class Mixed:
        def propose(self, packets, k=1):
            return [["not a patch", make_policy("template").propose(packets, 1)[0][0]] for _ in packets]

    out = teacher_rows(env, rows, Mixed(), k=2)  # type: ignore[arg-type]
    assert len(out) == len(rows)  # the invalid candidate is dropped, the template patch kept (Δ >= 0 here)
    assert all(r["delta"] >= 0 and "<patch>" in r["completion"][0]["content"] for r in out)
    assert out[0]["prompt"] == rows[0]["prompt"]


def test_teacher_rows_drop_patches_over_the_completion_budget(env, rows):
    from baselines.base import make_policy
    from baselines.grpo.sft import teacher_rows

    class Two:
        def propose(self, packets, k=1):
            return [[VALID, make_policy("template").propose(packets, 1)[0][0]] for _ in packets]

    lengths = [len(make_policy("template").propose([_input(env, r)], 1)[0][0]) for r in rows]
    assert len(VALID) < 100 < min(lengths)
    kept = teacher_rows(env, rows, Two(), k=2, count_tokens=len, max_completion_tokens=100)  # type: ignore[arg-type]
    assert [r["completion"][0]["content"] for r in kept] == [VALID] * len(rows)
    assert len(teacher_rows(env, rows, Two(), k=2, count_tokens=len, max_completion_tokens=max(lengths))) == 2 * len(rows)  # type: ignore[arg-type]


def test_sample_scores_count_groups_with_a_learning_signal(env, rows, capsys):
    from baselines.grpo.samples import score_samples

    stats = score_samples(env, rows, [[VALID, "no patch"], [VALID, VALID]])
    assert stats["n"] == 4 and stats["valid_rate"] == 0.75
    assert stats["groups_with_signal"] == 1  # only the mixed group has unequal rewards, i.e. a non-zero advantage
    EnvReward(env, echo=True)(prompts=[None] * 2, completions=[VALID, "no patch"], batch_seed=[rows[0]["batch_seed"]] * 2,
                              task_ids=[rows[0]["task_ids"]] * 2)
    line = capsys.readouterr().out.strip()
    assert line.startswith("[reward] step=0 n=2") and "valid_rate=0.50" in line and "groups=[+0.00,-0.10]" in line


def _input(env, row):
    from baselines.base import PolicyInput

    obs, info = reset_to_row(env, row["batch_seed"], row["task_ids"])
    return PolicyInput(obs, info["packet"], row["benchmark"])


def _force_even_rows(model, tokenizer, text: str) -> None:
    """Scripted engineer: even rows of every generate() call emit ``text`` then EOS; odd rows sample."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    target = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.convert_tokens_to_ids("<|im_end|>")]

    class Force(LogitsProcessor):
        def __init__(self, start: int) -> None:
            self.start = start

        def __call__(self, input_ids, scores):
            pos = input_ids.shape[1] - self.start
            for row in range(0, scores.shape[0], 2):
                tok = target[min(pos, len(target) - 1)]
                scores[row] = float("-inf")
                scores[row, tok] = 0.0
            return scores

    original = type(model).generate

    def generate(self, *args, **kwargs):
        start = kwargs["input_ids"].shape[1]
        return original(self, *args, logits_processor=LogitsProcessorList([Force(start)]), **kwargs)

    model.generate = types.MethodType(generate, model)
    assert len(target) <= 32
    torch.manual_seed(0)


def test_grpo_tiny_model_rewards_flow_and_weights_change(env, rows, tmp_path):
    need("torch", "transformers", "trl", "datasets", "tokenizers")
    import torch

    from baselines.base import PolicyInput, make_policy
    from baselines.grpo.sft import SFTEngineerConfig, sft_train, teacher_rows
    from baselines.grpo.train import completion_counter, load_model, save, train_grpo
    from harness_gym.models.tiny import build_tiny_model

    path = build_tiny_model(Path(tempfile.gettempdir()) / "harness-gym-tests" / "tiny-steps1", steps=1)
    model, tok = load_model(str(path))
    # cold-start SFT on template patches: one step moves the weights, and what TRL trains on (the
    # completion-masked tokens) is the teacher reply plus end-of-turn, which decodes to a valid patch
    sft_rows = teacher_rows(env, rows, make_policy("template"), count_tokens=completion_counter(tok),
                            max_completion_tokens=8192)
    assert len(sft_rows) == len(rows)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    sft = sft_train(model, tok, sft_rows, SFTEngineerConfig(output_dir=str(tmp_path / "sft"), max_steps=1, learning_rate=1e-3,
                                                            batch_size=2, max_length=8192, gradient_checkpointing=False,
                                                            bf16=True))
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert not hasattr(model.forward, "__wrapped__")  # no autocast wrapper left to slow down GRPO's generate()
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    for ex, row in zip(sft.train_dataset, sft_rows):
        target = [t for t in ex["labels"] if t != -100]  # the tokens the loss covers
        assert eos in target and len(target) <= completion_counter(tok)(row["completion"][0]["content"]) + 1
        reply = tok.decode(target[:target.index(eos)], skip_special_tokens=True)  # as GRPO decodes a sample
        assert reply == row["completion"][0]["content"]
        reset_to_row(env, row["batch_seed"], row["task_ids"])
        assert env.unwrapped.evaluate_patches([reply])[0]["patch_valid"]

    _force_even_rows(model, tok, VALID)
    cfg = GRPOEngineerConfig.cpu_smoke(str(tmp_path / "grpo"), max_completion_length=32, prompt_prefix=SHORT)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer, reward = train_grpo(model, tok, rows, env, cfg)
    assert len(reward.history) == 2
    inv = env.unwrapped.config.invalid_patch_reward
    for call in reward.history:
        assert call["n"] == 4 and call["valid_rate"] == 0.5 and call["delta_mean_valid"] == 0.0
        assert all(g["rewards"] == [0.0, inv] for g in call["groups"])
    logged = [json.loads(x) for x in Path(cfg.reward_log).read_text().splitlines()]
    assert [x["reward_mean"] for x in logged] == [inv / 2, inv / 2]
    trained = [h for h in trainer.state.log_history if "rewards/harness_delta/mean" in h]
    assert trained and all(abs(h["rewards/harness_delta/mean"] - inv / 2) < 1e-6 for h in trained)  # env → trainer
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())

    # the checkpoint is a policy
    out = save(trainer, tok, tmp_path / "final")
    del model.generate
    pol = make_policy(f"grpo:{out}?max_tokens=4", prompt_prefix=SHORT)
    obs, info = reset_to_row(env, rows[0]["batch_seed"], rows[0]["task_ids"])
    texts = pol.propose([PolicyInput(obs, info["packet"], "dbbench")], k=2)[0]
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    pol.close()
