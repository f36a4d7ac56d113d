"""The text observation an editing policy reads: instructions, hook API, harness, evidence.

Laid out like Harness-R1's engineer user message (scope, response protocol,
schema, runtime context, the marker, the evidence), plus the current harness files so a
unified diff can target them. Everything before the marker is static per harness; the
evidence after it is ``packet.text``. Same inputs give byte-identical text.
"""
from __future__ import annotations

import json

from harness_gym.errors import ConfigError
from harness_gym.packets.model import HarnessView, Packet, clean_text
from harness_gym.packets.registry import PromptParts, prompt_parts

MARKER = "Observed no-harness rollout evidence:"
SCHEMA_VERSION = "harness-r1-patch-v1"

def _protocol(parts: PromptParts) -> str:
    example = json.dumps(parts.example_patch, ensure_ascii=False, indent=2)
    return f"""## Response protocol
Reply with exactly two blocks, in this order:
1. `<think>...</think>`: concise reasoning in 4 short bullets — the recurring failure
   pattern; the state you will keep in nb; which hook owns which part of the logic; the
   regression risk you avoid. No JSON inside <think>. (If your chat template has already
   opened <think>, just continue it and close it with </think>.)
2. `<patch>{{one JSON object}}</patch>`: the patch. Nothing after </patch>, no markdown.

Patch JSON ({SCHEMA_VERSION}):
- `schema_version`: "{SCHEMA_VERSION}"; `benchmark`: exactly "{parts.benchmark}";
  `description`: one short, general sentence (<= 900 characters);
  `actions`: a non-empty array of ACTION objects.
- ACTION ::= {{"type": "add_code_hook", "hook": "on_init" | "make_pre_hint" |
  "on_before_action" | "on_post_step", "code": "<python source defining hook(ctx, nb)>"}}
- add_code_hook is the only action type. {parts.roles}
- Include only interventions justified by recurring evidence; prefer a no-op or a soft
  hint over broad blocking when the baseline already passes many tasks.
- Also accepted instead of the whole <think>/<patch> reply (not inside <patch>): a
  unified diff over the harness files shown below (paths as in their `=== path ===`
  headers, `--- a/path` / `+++ b/path`), or a bare Python module defining any of the four
  hooks as top-level functions named after the hook, e.g. `def on_post_step(ctx, nb):`.

A valid example (the shape, not a recommendation):
<patch>
{example}
</patch>"""


def _harness_section(harness: HarnessView, parts: PromptParts) -> str:
    return (
        f"## Current {parts.display} Harness (version {harness.version})\n"
        "Your patch is applied on top of these files.\n\n"
        f"{harness.render().rstrip()}"
    )


def render_observation(packet: Packet, harness: HarnessView, max_chars: int | None = None) -> str:
    """The full text an editor reads for ``packet`` under ``harness``, at most ``max_chars`` long.

    Only the harness-file section is cut to fit (the instructions and the evidence are what
    the editor needs; files grow without bound under sequential edits), at a line boundary,
    with a marker saying how much is missing.
    """
    parts = prompt_parts(packet.benchmark)
    if harness.benchmark != packet.benchmark:
        raise ConfigError(
            f"harness benchmark {harness.benchmark!r} does not match packet benchmark "
            f"{packet.benchmark!r}; render the packet with the harness it was built under"
        )
    if str(harness.version) != packet.harness_version:
        raise ConfigError(
            f"harness version {harness.version!r} differs from the packet's "
            f"{packet.harness_version!r}; render the packet with the harness it was built under"
        )
    sections = [clean_text(s) for s in (
        parts.scope,
        _protocol(parts),
        parts.hook_api(),
        f"## {parts.display} Runtime Context\n" + parts.runtime_context.strip(),
        _harness_section(harness, parts),
        MARKER,
        packet.text,
    )]
    text = "\n\n".join(sections)  # clean_text keeps newlines, so cleaning per section = cleaning the whole
    if max_chars is None or len(text) <= max_chars:
        return text
    room = max_chars - (len(text) - len(sections[4]))
    sections[4] = _cut(sections[4], room)
    return "\n\n".join(sections)[:max_chars]  # the slice only bites if the fixed sections alone are too long


def _cut(section: str, room: int) -> str:
    """``section`` cut at a line boundary to at most ``room`` characters, ending in a truncation marker."""
    marker = (f"\n[harness files truncated: {{shown:,}} of {len(section):,} characters shown; the observation "
              "is capped. Diff only against the lines shown above, or add new hook files.]")
    keep = max(room - len(marker) - 12, 0)  # 12: room for the shown count's digits
    cut = section.rfind("\n", 0, keep + 1)
    body = section[: cut if cut > 0 else keep]
    return body + marker.format(shown=len(body))
