"""Patch formats, auto-detected and normalized into one ``Patch`` (a set of file changes).

1. Harness-R1 JSON: ``<think>…</think><patch>{…}</patch>`` (prefill protocol: a reply
   without a leading ``<think>`` gets one prepended) or a bare JSON object with
   ``actions`` (the ``json_patch`` protocol). Validated as Harness-R1 ``normalize_patch``
   with ``require_code_hook_only_patch``; each ``add_code_hook`` becomes
   ``hooks/NN_<point>.py``.
2. A unified diff over the harness files (``diff.py``).
3. A bare Python module defining hook-point functions -> ``hooks/NN_module.py``.

Every error is a one-line ``PatchError``; an invalid patch never reaches a rollout.

Parsing is linear in the patch's length: no regular expression with nested or adjacent
quantifiers runs on unbounded input, tags are found by one scan, and the search for JSON
objects in a ``<patch>`` block has a work budget (``_json_objects``). Odd text (lone
surrogates, control characters, mixed line endings, overlong lines) is rejected by
``hygiene.py`` before anything else looks at it.
"""
from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from harness_gym.errors import PatchError, one_line
from harness_gym.harness.diff import apply_unified_diff, looks_like_diff
from harness_gym.harness.files import Harness, hook_file_point, next_hook_path
from harness_gym.harness.hygiene import check_line_lengths, check_strings, check_text
from harness_gym.harness.policy import (
    HOOK_POINTS,
    PolicyViolation,
    check_hook_code,
    defines_hook,
    parse_python,
    string_literals,
)
from harness_gym.benchmarks.base import canonical_json

MAX_PATCH_CHARS = 200_000
MAX_ACTIONS = 12
MAX_CODE_CHARS = 8000
MAX_TEXT_CHARS = 900
MAX_FILES = 64
CORE_FILES = ("system_prompt.md", "tools.json", "config.json")
LEGACY_ACTION_TYPES = ("set_config", "edit_tool_hint", "add_or_edit_skill", "add_guard_rule", "add_recovery_rule")
FORMATS_HINT = (
    "accepted formats: (1) Harness-R1 '<think>…</think><patch>{\"benchmark\":…,\"actions\":[…]}</patch>' "
    "or the bare JSON object, (2) a unified diff over the harness files, "
    "(3) a Python module defining on_init / make_pre_hint / on_before_action / on_post_step"
)
# Harness-R1 leakage patterns (ASIN-like ids, task/index/sample numbers, benchmark+number).
# Harness-R1 writes the second as ``\s*#?\s*``: two quantifiers around an optional ``#``
# backtrack quadratically on a whitespace run; ``\s*(?:#\s*)?`` matches the same strings.
LEAKAGE_PATTERNS = (
    re.compile(r"\b[bB]0[0-9a-zA-Z]{8}\b"),
    re.compile(r"\b(?:task|index|sample)\s*(?:#\s*)?\d{1,5}\b", re.IGNORECASE),
    re.compile(r"\bwebshop[-_\s]*\d{1,5}\b", re.IGNORECASE),
    re.compile(r"\balfworld[-_\s]*\d{1,5}\b", re.IGNORECASE),
)
_PATH_RE = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*$")
_ASSISTANT_TAG = "<|im_start|>assistant"
_TAG_RE = re.compile(r"<(/?)(think|patch)>", re.IGNORECASE)
_MODULE_RE = re.compile(r"^def[ \t]+(?:" + "|".join(HOOK_POINTS) + r")[ \t]*\(", re.MULTILINE)
# JSON search in a <patch> block: decode windows start this small and double while a
# failure might be the window's doing; the total window size is capped per input char.
# What a JSON object starts with: "{" then "}" or a key string and ":". Linear: a key
# scan stops at the next unescaped quote, and the quote after the next '{"' ends it.
_OBJECT_START = re.compile(r'\{[ \t\n\r]*(?:\}|"(?:[^"\\]|\\.)*"[ \t\n\r]*:)', re.DOTALL)
_JSON_WINDOW = 256
_JSON_MARGIN = 16  # a failure this close to a window's end may be the window's doing
_JSON_WORK_PER_CHAR = 8
_JSON_WORK_SLACK = 65_536


@dataclass(frozen=True)
class Patch:
    """A validated patch: whole-file changes to apply to a harness."""

    kind: str  # "harness_r1" | "diff" | "module"
    description: str
    changes: tuple[tuple[str, str | None], ...]  # sorted (path, new text or None = delete)

    def apply(self, harness: Harness) -> Harness:
        return harness.with_files(dict(self.changes))

    @property
    def normalized(self) -> str:
        """Canonical JSON of the changes only: equal for equivalent patches of any kind."""
        return canonical_json([[p, t] for p, t in self.changes])


def _err(msg: str) -> PatchError:
    return PatchError(one_line(msg))


def collapse(text: str) -> str:
    return " ".join(text.split())


def parse_patch(text: str | bytes, harness: Harness) -> Patch:
    """Detect the format of ``text``, validate it against ``harness`` and return a Patch."""
    text = _decode(text)
    stripped = _unfence(text.strip())
    unfenced = stripped != text.strip()
    head = stripped.lstrip()
    if head.startswith(("--- ", "diff ", "Index:")) or (
        "<patch>" not in stripped.lower() and not head.startswith("{") and looks_like_diff(stripped)
    ):
        # Diffs keep their final newline (a stripped one would change the last line).
        patch = _parse_diff(stripped + "\n" if unfenced else text.lstrip("\r\n"), harness)
    elif head.startswith("{") and ("<patch>" not in stripped.lower() or _is_json_object(head)):
        patch = _parse_r1(_extract_bare_json(head), harness)
    elif "<patch>" in stripped.lower():
        patch = _parse_r1(_extract_think_patch(stripped), harness)
    elif _looks_like_module(stripped):
        patch = _parse_module(stripped, harness)
    else:
        raise _err(f"could not recognise the patch format (starts with {head[:40]!r}); {FORMATS_HINT}")
    _check_result(patch, harness)
    return patch


# ---------------------------------------------------------------- input hygiene

def _decode(text: str | bytes) -> str:
    if isinstance(text, (bytes, bytearray)):
        if len(text) > 4 * MAX_PATCH_CHARS:  # UTF-8 takes at most 4 bytes a character: over the limit either way
            raise _err(f"patch has {len(text)} bytes, over the {MAX_PATCH_CHARS}-character limit; send a smaller patch")
        try:
            text = bytes.decode(bytes(text), "utf-8")
        except UnicodeDecodeError as exc:
            raise _err(f"patch bytes are not UTF-8 (bad byte at offset {exc.start}); send UTF-8 text") from None
    if not isinstance(text, str):
        raise _err(f"patch must be str or bytes, got {type(text).__name__}")
    if type(text) is not str:  # a str subclass's own strip/split/__len__ never run here: parse an exact copy
        text = str.__str__(text)
    if len(text) > MAX_PATCH_CHARS:
        raise _err(f"patch has {len(text)} chars, over the {MAX_PATCH_CHARS} limit; send a smaller patch")
    text = check_text(text, "patch")
    if not text.strip():
        raise _err(f"empty patch: nothing to apply; {FORMATS_HINT}")
    return text


def _unfence(text: str) -> str:
    """Unwrap a patch sent as one markdown code block (```diff … ``` / ```python … ```)."""
    m = re.fullmatch(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)\r?\n?```", text, re.DOTALL)
    return m.group(1) if m and "```" not in m.group(1) else text


# ---------------------------------------------------------------- format 1: Harness-R1

def _extract_think_patch(text: str) -> dict[str, Any]:
    """Harness-R1 ``extract_prefilled_think_patch_json_object`` (also with a leading <think>)."""
    if _ASSISTANT_TAG in text:
        text = text.rsplit(_ASSISTANT_TAG, 1)[-1].lstrip()
    if not re.match(r"(?is)<think\b", text):
        text = "<think>\n" + text
    think_open, think_closed, block, last_block = False, False, None, None
    for tag in _TAG_RE.finditer(text):  # one scan; same blocks as Harness-R1's lazy regexes
        closing, name = tag.group(1) == "/", tag.group(2).lower()
        if name == "think":
            think_closed = think_closed or (closing and think_open)
            think_open = think_open or not closing
        elif not closing and block is None:
            block = tag.end()
        elif closing and block is not None:
            last_block, block = (block, tag.start()), None
    if not think_closed:
        raise _err("Harness-R1 reply needs a complete <think>…</think> block before <patch>; close it with </think> or send the bare JSON object")
    if last_block is None:
        raise _err("Harness-R1 reply needs a complete <patch>…</patch> block; add the closing </patch>")
    body = text[last_block[0]:last_block[1]].strip()
    if not body:
        raise _err("the last <patch> block is empty; put one JSON object with 'benchmark' and 'actions' inside it")
    obj = _choose_json_object(body)
    if obj is None:
        raise _err("no JSON object found in the last <patch> block; expected {\"benchmark\": …, \"actions\": […]}")
    return obj


def _json_objects(segment: str) -> list[dict[str, Any]]:
    """Every JSON object that decodes at a ``{`` of ``segment``, in order (Harness-R1 semantics).

    Decoding at every ``{`` of the whole text is quadratic (each failure also counts the
    lines before it), so each attempt decodes a window that doubles only while its
    failure lies within ``_JSON_MARGIN`` of the window's end (JSON decides every token
    within that distance, so a failure further in is final and the result is exact), and
    the windows' total size is capped at ``_JSON_WORK_PER_CHAR`` per character: ordinary
    replies spend a few per character; text built to force re-scans gets a clear error.
    """
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    budget = _JSON_WORK_PER_CHAR * len(segment) + _JSON_WORK_SLACK
    start = segment.find("{")
    while start != -1:
        obj, spent = _decode_at(decoder, segment, start)
        budget -= spent
        if budget < 0:
            raise _err("the <patch> block has too many nested or unclosed '{' to search for the patch object; send exactly one JSON object")
        if isinstance(obj, dict):
            found.append(obj)
        start = segment.find("{", start + 1)
    return found


def _decode_at(decoder: json.JSONDecoder, segment: str, start: int) -> tuple[Any, int]:
    """The JSON value at ``start`` (None when none decodes) and the window characters spent."""
    opening = _OBJECT_START.match(segment, start)
    if opening is None:  # not "{}" nor '{"key":': no JSON object starts here (and no exception to build)
        return None, 1
    size, spent = _JSON_WINDOW, 0
    while True:
        window = segment[start : start + size]
        whole = start + size >= len(segment)
        try:
            value, end = decoder.raw_decode(window)
            return value, spent + end
        except RecursionError:
            return None, spent + len(window)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
            pos = getattr(exc, "pos", len(window))
            near_end = pos >= len(window) - _JSON_MARGIN or "Unterminated string" in str(exc)
            if whole or not near_end:
                return None, spent + pos + 1
        spent += len(window)
        size *= 2


def _choose_json_object(segment: str) -> dict[str, Any] | None:
    """The last object with list ``actions`` and str ``benchmark``, else the last with
    ``actions``, else the last object (Harness-R1 ``extract_json_object`` order)."""
    objects = _json_objects(segment)
    for test in (
        lambda o: isinstance(o.get("actions"), list) and isinstance(o.get("benchmark"), str),
        lambda o: isinstance(o.get("actions"), list),
        lambda o: True,
    ):
        chosen = [o for o in objects if test(o)]
        if chosen:
            return chosen[-1]
    return None


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):  # ValueError: malformed, or an integer too long to convert
        return False


def _extract_bare_json(text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _err(f"patch looks like JSON but does not parse ({exc.msg} at line {exc.lineno}); send one JSON object") from None
    except RecursionError:
        raise _err("patch JSON is nested too deeply; send a flat Harness-R1 patch object") from None
    except ValueError:  # int() refuses numbers of over 4300 digits
        raise _err("patch JSON has a number too long to decode (over 4300 digits); send one JSON object with ordinary numbers") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("actions"), list):
        raise _err(f"JSON patch must be an object with an 'actions' list, got keys {sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__}; {FORMATS_HINT}")
    return obj


def _known_benchmarks() -> list[str]:
    """Every registered benchmark (the ``harness_gym.benchmarks`` entry points), built-ins first."""
    from harness_gym.evaluation.benchmarks import known_benchmarks

    return known_benchmarks()


def _parse_r1(obj: dict[str, Any], harness: Harness) -> Patch:
    """Harness-R1 ``normalize_patch`` + ``require_code_hook_only_patch`` + benchmark check."""
    if not isinstance(obj, dict):
        raise _err(f"Harness-R1 patch must be a JSON object, got {type(obj).__name__}")
    check_strings(obj, "patch JSON string")
    raw_bench = obj.get("benchmark")
    benchmark = str(raw_bench or harness.benchmark).lower()
    known = _known_benchmarks()
    if benchmark not in known:
        raise _err(f"unsupported benchmark {benchmark!r}; expected one of {', '.join(known)}")
    if benchmark != harness.benchmark:
        raise _err(f"patch is for benchmark {benchmark!r} but this environment is {harness.benchmark!r}; set \"benchmark\": \"{harness.benchmark}\"")
    actions = obj.get("actions")
    if not isinstance(actions, list) or not actions:
        raise _err("patch.actions must be a non-empty list of add_code_hook actions")
    if len(actions) > MAX_ACTIONS:
        raise _err(f"patch has {len(actions)} actions, over the {MAX_ACTIONS} limit; merge hooks")
    description = _check_description(obj.get("description"))
    files: dict[str, str] = dict(harness.files)
    changes: dict[str, str] = {}
    for idx, action in enumerate(actions):
        point, code = _check_action(idx, action, benchmark)
        path = next_hook_path(files, point)
        files[path] = changes[path] = _with_newline(code)
    return Patch("harness_r1", description, tuple(sorted(changes.items())))


def _check_description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _err(f"description must be a string, got {type(value).__name__}")
    text = collapse(value)
    if len(text) > MAX_TEXT_CHARS:
        raise _err(f"description has {len(text)} chars after whitespace collapse, over the {MAX_TEXT_CHARS} limit; shorten it")
    _check_leakage(text, "description")
    return text


def _check_leakage(text: str, where: str) -> None:
    for pattern in LEAKAGE_PATTERNS:
        m = pattern.search(text)
        if m:
            raise _err(f"{where} appears to contain task-specific leakage ({m.group(0)!r}); remove ids, task indices and answers")


def _check_action(idx: int, action: Any, benchmark: str) -> tuple[str, str]:
    if not isinstance(action, dict):
        raise _err(f"action {idx} must be an object, got {type(action).__name__}")
    typ = action.get("type")
    if typ in LEGACY_ACTION_TYPES:
        raise _err(f"action {idx} type {typ!r} is a legacy Harness-R1 DSL action, not allowed in the code-hook-only protocol; use add_code_hook")
    if typ != "add_code_hook":
        raise _err(f"action {idx} has unsupported type {typ!r}; expected 'add_code_hook'")
    point = str(action.get("hook") or "").strip()
    if point not in HOOK_POINTS:
        close = difflib.get_close_matches(point, HOOK_POINTS, n=1)
        hint = f" — did you mean {close[0]!r}?" if close else ""
        raise _err(f"action {idx} hook {point!r} is not a hook point; expected one of {', '.join(HOOK_POINTS)}{hint}")
    code = action.get("code")
    if not isinstance(code, str) or not code.strip():
        raise _err(f"action {idx} ({point}) must include non-empty 'code' defining hook(ctx, nb)")
    if len(code) > MAX_CODE_CHARS:
        raise _err(f"action {idx} ({point}) code has {len(code)} chars, over the {MAX_CODE_CHARS} limit")
    code = check_text(code, f"action {idx} ({point}) code")
    check_line_lengths(code, f"action {idx} ({point}) code")
    _check_code(code, benchmark, "harness_r1", point, f"action {idx} ({point})")
    return point, code


def _check_code(code: str, benchmark: str, style: str, point: str, where: str) -> None:
    try:
        check_hook_code(code, benchmark, style=style, point=point)
    except PolicyViolation as exc:
        raise _err(f"{where} fails the sandbox policy: {exc}") from None
    for line, literal in string_literals(code):
        _check_leakage(collapse(literal), f"{where} string literal at line {line}")


def _with_newline(code: str) -> str:
    return code if code.endswith("\n") else code + "\n"


# ---------------------------------------------------------------- format 2: unified diff

def _parse_diff(text: str, harness: Harness) -> Patch:
    preamble_lines = []
    for line in text.splitlines():
        if line.startswith(("--- ", "diff ", "Index:")):
            break
        preamble_lines.append(line)
    changes = apply_unified_diff(harness.files, text)
    for path in changes:
        _check_path(path)
    files = dict(harness.files)
    for path, new in changes.items():
        if new is None:
            files.pop(path, None)
        else:
            files[path] = new
    for path, new in changes.items():
        if new is not None:
            check_line_lengths(new, path)
        _check_changed_file(path, new, harness, files)
    description = collapse("\n".join(preamble_lines))[:MAX_TEXT_CHARS]
    return Patch("diff", description, tuple(sorted(changes.items())))


def _check_path(path: str) -> None:
    if path.startswith("/") or "\\" in path or not _PATH_RE.match(path) or any(p in ("", ".", "..") for p in path.split("/")):
        raise _err(f"file path {path!r} is not allowed; use a relative posix path of letters, digits, '.', '_', '-' without '..'")
    # What Harness.from_dir skips would vanish when the harness is saved and read back (another
    # content hash, hooks that ran and then are gone), so a patch cannot create it.
    if any(p.startswith(".") or p == "__pycache__" for p in path.split("/")) or path.endswith(".pyc"):
        raise _err(f"file path {path!r} is not allowed: hidden files, __pycache__ and .pyc are not harness files "
                   "(they would not survive saving the harness); use a plain name")


def _check_file_names(files: Mapping[str, Any]) -> None:
    """No two paths that one file system would take for the same file: names equal up to case or
    Unicode case folding (``Config.json`` next to ``config.json`` overwrites it on macOS/Windows),
    or a file that another path needs as a folder (``hooks`` and ``hooks/x.py``)."""
    seen: dict[str, str] = {}
    for path in sorted(files):
        folded = path.casefold()
        if folded in seen:
            raise _err(f"file paths {seen[folded]!r} and {path!r} differ only in case; "
                       "a case-insensitive file system would take them for one file: edit the existing one instead")
        seen[folded] = path
    folders = {path[:i].casefold() for path in files for i, c in enumerate(path) if c == "/"}
    clash = next((p for p in sorted(files) if p.casefold() in folders), None)
    if clash is not None:
        raise _err(f"file path {clash!r} is also a folder of another file; a path cannot be both a file and a folder")


def _check_changed_file(path: str, text: str | None, base: Harness, files: Mapping[str, str]) -> None:
    if text is None:
        if path in CORE_FILES:
            raise _err(f"{path} cannot be deleted; edit it instead")
        return
    if path.startswith("hooks/"):
        if not path.endswith(".py"):
            raise _err(f"{path!r}: files under hooks/ must be Python modules ending in .py")
        point = hook_file_point(path)
        style = "harness_r1" if point is not None and defines_hook(text) else "module"
        _check_code(text, base.benchmark, style, point or "", path)
    elif path == "tools.json":
        _check_tools(_load_json(path, text))
    elif path == "config.json":
        new = _load_json(path, text)
        _check_protocol(new, base.config(), base.benchmark)
        _check_config(new, base.config())


# What every reader of tools.json (the runtime, the chat template, the sims, an OpenAI-compatible
# server) may rely on: a list of OpenAI function-tool schemas with distinct names.
TOOLS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object", "required": ["type", "function"],
        "properties": {
            "type": {"const": "function"},
            "function": {
                "type": "object", "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    "description": {"type": "string"},
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "type": {"const": "object"},
                            "properties": {"type": "object", "additionalProperties": {"type": "object"}},
                            "required": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
}


def _check_tools(tools: Any) -> None:
    import jsonschema
    from jsonschema.exceptions import best_match

    error = best_match(jsonschema.Draft202012Validator(TOOLS_SCHEMA).iter_errors(tools))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise _err(f"tools.json{where}: {error.message[:160]}; it must stay a JSON list of OpenAI function-tool schemas "
                   "({\"type\": \"function\", \"function\": {\"name\": …, \"description\": …, \"parameters\": {…}}})")
    names = [t["function"]["name"] for t in tools]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _err(f"tools.json names the tool {dup!r} twice; each tool needs its own name")


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise _err(f"key {dup!r} appears twice in one JSON object; readers disagree on which copy counts, name it once")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise _err(f"{name} is not a number JSON allows; use an ordinary number")


def _load_json(path: str, text: str) -> Any:
    """Harness JSON as every reader reads it: no duplicate keys (Python keeps the last copy, other
    parsers the first), no NaN/Infinity (not JSON; other parsers refuse them)."""
    try:
        return json.loads(text, object_pairs_hook=_strict_object, parse_constant=_no_constant)
    except PatchError as exc:
        raise _err(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _err(f"{path} would not be valid JSON after the patch ({exc.msg} at line {exc.lineno}); fix the edit") from None
    except RecursionError:
        raise _err(f"{path} would be nested too deeply after the patch; keep it flat") from None
    except ValueError:  # int() refuses numbers of over 4300 digits
        raise _err(f"{path} would hold a number too long to decode; use an ordinary number") from None


def _check_protocol(new: Any, old: dict[str, Any], benchmark: str) -> None:
    """A protocol key (``BenchmarkSpec.protocol``: round/step/repeat limits, …) is not the harness's to change."""
    if not isinstance(new, dict):
        return  # _check_config says what is wrong
    from harness_gym.evaluation.benchmarks import protocol_of

    protocol = protocol_of(benchmark)
    for key in sorted(set(old) | set(new)):
        if key not in protocol or (key in old) == (key in new) and old.get(key) == new.get(key) \
                and type(old.get(key)) is type(new.get(key)):
            continue
        what = "removes" if key not in new else ("adds" if key not in old else f"changes ({old[key]!r} -> {new[key]!r})")
        raise _err(f"config key {key!r} is protocol, not harness: the patch {what} it; {benchmark} fixes it at "
                   f"{protocol[key]!r} (edit prompts, tools, hooks or the other settings instead)")


def _check_config(new: Any, old: dict[str, Any]) -> None:
    if not isinstance(new, dict):
        raise _err(f"config.json must stay a JSON object, got {type(new).__name__}")
    for key, value in new.items():
        if key not in old:
            close = difflib.get_close_matches(key, list(old), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(old))}"
            raise _err(f"config key {key!r} is not a setting of this harness; {hint}")
        want = old[key]
        if want is None:
            continue
        if value is None:
            raise _err(f"config key {key!r} expects {type(want).__name__}, got null; give it a value or leave it out")
        if isinstance(want, bool) != isinstance(value, bool) or not _same_kind(want, value):
            raise _err(f"config key {key!r} expects {type(want).__name__}, got {type(value).__name__} {value!r}")


def _same_kind(want: Any, value: Any) -> bool:
    if isinstance(want, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(want))


# ---------------------------------------------------------------- format 3: bare module

def _looks_like_module(text: str) -> bool:
    """A top-level ``def <hook point>(`` line (a regex, not a parse: the text may be 200 KB)."""
    return _MODULE_RE.search(text) is not None


def _parse_module(text: str, harness: Harness) -> Patch:
    check_line_lengths(text, "hook module")
    _check_code(text, harness.benchmark, "module", "", "hook module")
    tree = parse_python(text)
    description = collapse(ast.get_docstring(tree) or "")[:MAX_TEXT_CHARS]
    _check_leakage(description, "module docstring")
    path = next_hook_path(harness.files, "module")
    return Patch("module", description, ((path, _with_newline(text)),))


# ---------------------------------------------------------------- whole-result checks

def _check_result(patch: Patch, harness: Harness) -> None:
    if not patch.changes:
        raise _err("no-op patch: it changes no file; change a prompt, a setting or a hook")
    files = dict(harness.files)
    for path, text in patch.changes:
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    if files == dict(harness.files):
        raise _err("no-op patch: the patched harness is identical to the current one; change something")
    if files.get("config.json") != harness.files.get("config.json"):  # every format: the protocol stays as it was
        text = files.get("config.json")
        if text is None:
            raise _err("config.json cannot be deleted; edit it instead")
        _check_protocol(_load_json("config.json", text), harness.config(), harness.benchmark)
    if len(files) > MAX_FILES:
        raise _err(f"patched harness would have {len(files)} files, over the {MAX_FILES} limit; merge files")
    _check_file_names(files)
