"""The ``frontier`` policy: Harness-R1 engineer prompt, K seeded samples, prefill, real hf generation.

Fake backends pin the request contract (messages, no tools, sampling, per-sample seeds,
``<think>`` prefill); a tiny locally built model checks the real ``hf`` path end to end.
The hf tests skip without torch/transformers/tokenizers (and fail when ``CI`` is set).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym
import pytest
from support import require_modules

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, available_policies, make_policy
from baselines.frontier import FrontierPolicy
from baselines.frontier.prompt import MARKER, PREFILL, SYSTEM_PREFILL, SYSTEM_TWO_BLOCKS
from baselines.noop import NoopPolicy
from harness_gym.errors import ConfigError
from harness_gym.models.base import ChatBackend, ChatRequest, Sampling

SHORT = "Write one Harness-R1 patch for the DBBench harness."


def need(*modules: str) -> None:
    require_modules(*modules, install="pip install 'torch==2.13.0' transformers tokenizers")


def tiny_dir() -> Path:
    need("torch", "transformers", "tokenizers")
    from harness_gym.models.tiny import build_tiny_model

    return build_tiny_model(Path(tempfile.gettempdir()) / "harness-gym-tests" / "tiny-steps1", steps=1)


@pytest.fixture(scope="module")
def env_obs():
    env = gym.make("HarnessEdit-DBBench-v0", batch_size=2)
    obs, info = env.reset(seed=0)
    yield env, PolicyInput(obs, info["packet"], "dbbench")
    env.close()


class Scripted(ChatBackend):
    """Records requests; answers with a valid no-op patch for even samples, garbage for odd."""

    name = "scripted"

    def __init__(self) -> None:
        self.seen: list[ChatRequest] = []

    async def generate(self, requests):
        self.seen.extend(requests)
        good = NoopPolicy().propose([PolicyInput("", {}, "dbbench")])[0][0]
        return [{"role": "assistant", "content": good if r.meta["sample"] % 2 == 0 else "I cannot help."} for r in requests]


class Prefillable(Scripted):
    """A backend that renders prompts itself (like hf/vllm): the policy prefills ``<think>\\n``."""

    class _Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) for c in text]}

    class _Fmt:
        tokenizer = None

        def prompt_ids(self, messages, tools):
            assert tools == []
            return [1, 2, 3]

    def __init__(self) -> None:
        super().__init__()
        self.formatter = self._Fmt()
        self.formatter.tokenizer = self._Tok()
        self.prompts: list[list[int]] = []

    def generate_ids(self, prompts, requests):
        self.prompts.extend(prompts)
        self.seen.extend(requests)
        return [{"role": "assistant", "content": "a\n</think>\n<patch>{}</patch>"} for _ in requests]


def test_requests_follow_the_engineer_protocol(env_obs):
    env, pin = env_obs
    backend = Scripted()
    pol = FrontierPolicy(target="scripted", backend=backend, temperature=0.6, top_p=0.9, max_tokens=777)
    assert pol.prefill is False  # cannot continue a message: ask for both blocks
    out = pol.propose([pin, pin], k=3)
    assert [len(o) for o in out] == [3, 3]
    assert len(backend.seen) == 6
    for r in backend.seen:
        assert r.tools == []
        assert r.sampling == Sampling(temperature=0.6, top_p=0.9, max_tokens=777)
        assert [m["role"] for m in r.messages] == ["system", "user"]
        assert r.messages[0]["content"] == SYSTEM_TWO_BLOCKS
        assert r.messages[1]["content"] == pin.text and MARKER in pin.text
    seeds = [r.seed for r in backend.seen[:3]]
    assert len(set(seeds)) == 3  # samples differ
    again = Scripted()
    FrontierPolicy(target="scripted", backend=again).propose([pin], k=3)
    assert [r.seed for r in again.seen] == seeds  # reproducible
    other = Scripted()
    FrontierPolicy(target="scripted", backend=other, seed=1).propose([pin], k=3)
    assert [r.seed for r in other.seen] != seeds
    # the env scores the replies: the no-op is valid (Δ = 0), the unparseable text is an invalid patch
    res = env.unwrapped.evaluate_patches(out[0][:2])
    assert [r["patch_valid"] for r in res] == [True, False]
    assert res[1]["reward"] == env.unwrapped.config.invalid_patch_reward


def test_prefill_think_when_the_backend_can_continue(env_obs):
    _, pin = env_obs
    backend = Prefillable()
    pol = FrontierPolicy(target="x", backend=backend, prompt_prefix=SHORT)
    assert pol.prefill is True
    out = pol.propose([pin], k=2)
    assert all(t.startswith(PREFILL + "a\n</think>") for t in out[0])
    assert backend.prompts[0] == [1, 2, 3] + [ord(c) for c in PREFILL]
    assert backend.seen[0].messages[0]["content"] == SYSTEM_PREFILL
    user = backend.seen[0].messages[1]["content"]
    assert user.startswith(SHORT) and user.endswith(pin.text[pin.text.rfind(MARKER):])
    with pytest.raises(ConfigError, match="prefill"):
        FrontierPolicy(target="x", backend=Scripted(), prefill="on")


def test_config_errors():
    with pytest.raises(ConfigError, match="give a model target"):
        FrontierPolicy(backend=Scripted())
    with pytest.raises(ConfigError, match="temperature"):
        FrontierPolicy(target="x", backend=Scripted(), temperature=-1)


def test_registered():
    assert "frontier" in available_policies() and "grpo" in available_policies()


def test_hf_frontier_end_to_end(env_obs):
    env, pin = env_obs
    path = tiny_dir()
    pol = make_policy(f"frontier:hf:{path}?max_tokens=6", prompt_prefix=SHORT, temperature=1.0)
    assert pol.prefill is True  # hf renders prompts itself
    out = pol.propose([pin], k=2)
    assert len(out[0]) == 2 and all(isinstance(t, str) and t.startswith(PREFILL) for t in out[0])
    res = env.unwrapped.evaluate_patches(out[0])
    assert all(not r["patch_valid"] and r["reward"] == env.unwrapped.config.invalid_patch_reward for r in res)
    # plain generation (tools=[]) through the backend's own path, no prefill
    plain = FrontierPolicy(target=f"hf:{path}?max_tokens=6", backend=pol.backend, prefill="off", prompt_prefix=SHORT)
    assert len(plain.propose([pin], k=1)[0]) == 1
    pol.close()
