"""The hook contract as the editing policy reads it, per benchmark.

One text per benchmark says when each of the four hooks runs, what it may return, which
ctx fields and predicates it can read, the sandbox rules and the leakage rules — enough
to write a correct patch from this text alone. Field names follow Harness-R1
(specs/harness_r1_protocol.md §3) so its published patches run unchanged.
"""
from __future__ import annotations

HOOKS = ("on_init", "make_pre_hint", "on_before_action", "on_post_step")

SAFE_BUILTINS = (
    "abs all any bool dict enumerate Exception filter float int isinstance len list map max "
    "min range reversed round set sorted str sum tuple zip"
)
FORBIDDEN_NAMES = (
    "eval exec compile open getattr setattr delattr type dir vars globals locals object super "
    "property classmethod staticmethod input help exit quit breakpoint memoryview __import__"
)
FORBIDDEN_SYNTAX = "async, await, class, del, global, nonlocal, import, lambda, raise, with, while, yield, nested def"

_SANDBOX = f"""### Sandbox rules (a hook that breaks one is rejected with the whole patch)
- Each hook's code is a small Python module: exactly one top-level `def hook(ctx, nb):`
  (exactly these two plain positional arguments) plus at most 5 top-level helper `def`s.
  Nothing else at top level: no imports, no constants, no global state.
- Helpers cannot see the hook's local variables; pass ctx, nb or values explicitly.
  Helper names must be unique, must not start with "_", must not shadow a builtin below,
  `math`, `re`, `SequenceMatcher` or `hook`; helper defaults must be scalar constants.
- Available names: {SAFE_BUILTINS}, plus the modules `math` and `re` and the class
  `SequenceMatcher` (from difflib), all without importing.
- Forbidden syntax: {FORBIDDEN_SYNTAX}; no decorators, no annotations.
- `try` is allowed only as `try: ... except Exception: ...` (no other exception type, no
  `else`, no `finally`).
- Forbidden: any name or attribute starting with "_", and {FORBIDDEN_NAMES}.
- Limits: code <= 8,000 characters per hook (keep all hooks together under 9,000),
  <= 1,200 AST nodes, every string literal <= 700 characters.
- At run time: 0.05 s and 2,000 executed lines per call. A timeout, an exception or a
  return value that is not a dict (or None) means "no effect" for that call; the episode
  goes on.
- ctx is a deep-copied, read-only snapshot: read it as `ctx["state"]["sql_count"]` or
  `ctx.state.sql_count`; reading a field that does not exist raises (= no effect).
- nb is one plain dict per episode, starting as {{}}, shared by all hooks and kept across
  rounds (never rolled back): use it for stages, flags and hint de-duplication."""

_NORMALIZATION = """### Return normalization
- Every message/skill/tool_hint text is whitespace-collapsed and cut to 900 characters.
- A block or hint with an empty message is dropped; a dict with an unknown "type" is
  dropped; returning None (or nothing) means no effect. The key "kind" is accepted as an
  alias of "type", so Harness-R1 patches written with "kind" run unchanged."""


def hook_api_text(benchmark: str) -> str:
    """The hook contract for ``benchmark``, from ``packets/<benchmark>_prompt.py``."""
    from harness_gym.packets.registry import prompt_parts

    return prompt_parts(benchmark).hook_api()
