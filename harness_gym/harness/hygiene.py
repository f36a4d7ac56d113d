"""Text hygiene for patches: only well-formed Unicode text gets past the parser.

A patch's text ends up in harness files, hashes, JSON caches, packets and prompts, and
every one of those either chokes on or reinterprets odd characters: a lone surrogate
cannot be encoded as UTF-8, a NUL ends C strings, a byte-order mark or a Unicode line
separator makes two tools disagree on where a line starts (``str.splitlines`` breaks at
U+2028, ``\\x0b`` and ``\\x85``; diff tools and Python's tokenizer do not). So each is a
one-line ``PatchError`` naming the character, where it is and the fix:

- lone surrogates (U+D800–U+DFFF), Unicode noncharacters (U+FDD0–U+FDEF, U+xxFFFE/F);
- NUL and every other C0/C1 control character except tab, LF and CR, and DEL;
- the byte-order mark U+FEFF anywhere, the line/paragraph separators U+2028/U+2029, and
  the bidirectional embedding/override/isolate controls (U+202A–E, U+2066–9: "Trojan
  Source" text that displays differently than Python reads it);
- a bare CR, or CRLF mixed with LF (a text that uses CRLF throughout is converted to LF,
  the harness's line ending);
- in file contents and hook code, a line over ``MAX_LINE_CHARS``.
"""
from __future__ import annotations

import re
from typing import Any

from harness_gym.errors import PatchError, one_line

MAX_LINE_CHARS = 4000
# One pass of one character class (no quantifier): linear on any input.
_BAD_CHAR = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufeff\ufffe\uffff\u2028\u2029"
    "\u202a-\u202e\u2066-\u2069"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(1, 17))
    + "]"
)
_BARE_CR = re.compile("\r(?!\n)")
_NAMES = {"\x00": "a NUL character", "\ufeff": "a byte-order mark (U+FEFF)", "\u2028": "a Unicode line separator (U+2028)",
          "\u2029": "a Unicode paragraph separator (U+2029)", "\x85": "a next-line control character (U+0085)"}


def _describe(char: str) -> str:
    code = ord(char)
    if char in _NAMES:
        return _NAMES[char]
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return f"a bidirectional control character (U+{code:04X}), which makes code read otherwise than it runs"
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}), which is not valid Unicode text"
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"a control character (U+{code:04X})"
    return f"a Unicode noncharacter (U+{code:04X})"


def check_text(text: str, where: str) -> str:
    """``text`` with uniform CRLF turned into LF; raises ``PatchError`` for any odd character or line ending."""
    bad = _BAD_CHAR.search(text)
    if bad is not None:
        raise PatchError(one_line(
            f"{where} contains {_describe(bad.group(0))} at offset {bad.start()}; send plain UTF-8 text without it"
        ))
    if "\r" not in text:
        return text
    crlf = text.count("\r\n")
    if crlf != text.count("\r"):
        at = _BARE_CR.search(text).start()  # type: ignore[union-attr]
        raise PatchError(one_line(f"{where} contains a bare carriage return (CR) at offset {at}; use LF line endings"))
    if crlf != text.count("\n"):
        raise PatchError(one_line(f"{where} mixes CRLF and LF line endings ({crlf} CRLF, {text.count(chr(10)) - crlf} LF); use LF throughout"))
    return text.replace("\r\n", "\n")


def check_strings(value: Any, where: str) -> None:
    """Raise ``PatchError`` if any string in decoded JSON ``value`` (keys too) fails ``check_text``.

    Iterative, so a deeply nested object cannot exhaust the stack. Line endings are only
    checked here; the strings that become files are converted by their own ``check_text``.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, where)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def check_line_lengths(text: str, where: str) -> None:
    """Raise ``PatchError`` if a line of ``text`` (file contents or hook code) is over ``MAX_LINE_CHARS``."""
    for no, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE_CHARS:
            raise PatchError(one_line(
                f"{where} line {no} has {len(line)} characters, over the {MAX_LINE_CHARS} limit; break it into shorter lines"
            ))
