"""Chat transcripts → training token ids and an assistant-token mask, exactly as the target sees them.

The ``hf``/``vllm`` backends prompt with ``ChatFormatter.prompt_ids`` (the model's template,
or ``TOOL_CHAT_TEMPLATE`` for SmolLM2, whose own template ignores tools) and read the tool
calls back from the completion text with ``toolcalls.parse_tool_calls``. Training must see
the same bytes: the whole conversation is rendered with the same template, and an
assistant turn's tokens are those between the rendering of the messages before it (with
the generation prompt, i.e. exactly the prompt the model gets at that turn) and the
rendering that includes it — its text, its ``<tool_call>`` blocks and the closing
``<|im_end|>`` (the stop token). Prefix stability is checked: a conversation whose prompt
at some turn is not a prefix of the full rendering is refused with a clear error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.models.chat import ChatFormatter
from harness_gym.models.toolcalls import template_messages
from harness_gym.types import Message


@dataclass
class Encoded:
    input_ids: list[int]
    assistant_masks: list[int]

    @property
    def trained_tokens(self) -> int:
        return sum(self.assistant_masks)


def _render(fmt: ChatFormatter, messages: list[Message], tools: list[dict[str, Any]], gen: bool) -> str:
    return str(fmt.tokenizer.apply_chat_template(template_messages(messages), tools=tools or None,
                                                 chat_template=fmt.template, add_generation_prompt=gen, tokenize=False))


def encode(fmt: ChatFormatter, messages: list[Message], tools: list[dict[str, Any]],
           train_turns: list[bool] | None = None) -> Encoded:
    """Token ids of the whole conversation and a 0/1 mask of the trained assistant tokens.

    ``train_turns`` (one flag per assistant message) leaves some assistant turns out of the loss."""
    full = _render(fmt, messages, tools, gen=False)
    spans: list[tuple[int, int]] = []
    k = 0
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        train = train_turns is None or (k < len(train_turns) and train_turns[k])
        k += 1
        prompt = _render(fmt, messages[:i], tools, gen=True)
        upto = _render(fmt, messages[: i + 1], tools, gen=False)
        if not full.startswith(prompt) or not full.startswith(upto) or len(upto) <= len(prompt):
            raise ConfigError(f"turn {i}: the chat template's prompt is not a prefix of the conversation; "
                              "this transcript cannot be trained to match inference")
        end = len(upto) - 1 if upto.endswith("\n") else len(upto)  # through <|im_end|>, not the newline after it
        if train:
            spans.append((len(prompt), end))
    enc = fmt.tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    mask = [0] * len(ids)
    j = 0
    for t, (a, _b) in enumerate(enc["offset_mapping"]):
        while j < len(spans) and a >= spans[j][1]:
            j += 1
        if j < len(spans) and spans[j][0] <= a < spans[j][1]:
            mask[t] = 1
    return Encoded(ids, mask)


def prompt_matches(fmt: ChatFormatter, messages: list[Message], tools: list[dict[str, Any]]) -> bool:
    """Whether the training ids start, at every assistant turn, with the exact ids the backend prompts with."""
    enc = encode(fmt, messages, tools)
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            p = fmt.prompt_ids(messages[:i], tools)
            if enc.input_ids[: len(p)] != p:
                return False
    return True
