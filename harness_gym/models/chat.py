"""Conversations with tool schemas → prompt token ids, with the model's own chat template.

Shared by the ``hf`` and ``vllm`` backends so both see identical prompts. A model whose
template ignores ``tools`` gets ``TOOL_CHAT_TEMPLATE`` (ChatML + Hermes tools) instead,
because a target that never sees its tools cannot call them.
"""
from __future__ import annotations

from typing import Any

from harness_gym.errors import BackendError, one_line
from harness_gym.models.toolcalls import (
    TOOL_CHAT_TEMPLATE,
    template_messages,
    template_supports_tools,
)
from harness_gym.types import Message


def leading_shared(seqs: list[list[int]], limit: int) -> int:
    """How many leading ids every sequence shares, at most ``limit`` (the hf prefix cache and
    ``smol train``'s shared prefix both use it)."""
    first, n = seqs[0], limit
    for s in seqs[1:]:
        k = 0
        while k < n and s[k] == first[k]:
            k += 1
        n = k
    return n


class ChatFormatter:
    def __init__(self, tokenizer: Any, chat_template: str | None = None) -> None:
        self.tokenizer = tokenizer
        own = getattr(tokenizer, "chat_template", None)
        if chat_template is not None:
            self.template = chat_template
        elif template_supports_tools(own):
            self.template = str(own)
        else:
            self.template = TOOL_CHAT_TEMPLATE
        self.stop_ids = self._stop_ids()

    def _stop_ids(self) -> list[int]:
        ids: set[int] = set()
        eos = getattr(self.tokenizer, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        vocab = self.tokenizer.get_vocab()
        for tok in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "</s>"):
            if tok in vocab:
                ids.add(int(vocab[tok]))
        return sorted(ids)

    def prompt_ids(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[int]:
        try:
            text = self.tokenizer.apply_chat_template(
                template_messages(messages), tools=tools or None, chat_template=self.template,
                add_generation_prompt=True, tokenize=False,
            )
        except Exception as exc:  # a template that rejects the conversation
            raise BackendError(one_line(f"the chat template could not render the conversation: {type(exc).__name__}: {exc}")) from exc
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        """Completion ids → text, cut at the first stop token."""
        for i, t in enumerate(ids):
            if t in self.stop_ids:
                ids = ids[:i]
                break
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))
