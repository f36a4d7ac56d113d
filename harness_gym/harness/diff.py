"""A strict unified-diff applier over harness files.

Hunk bodies are read by the counts in their ``@@`` headers (so a removed line that
starts with ``--`` is never mistaken for a file header). Context and removed lines must
match the file exactly; a hunk may sit at another line than its header says (the
nearest exact match after the previous hunk wins, as GNU patch does without fuzz).
New files come from ``/dev/null``; a diff to ``/dev/null`` deletes the file.

Linear time on any input: lines are read once; a hunk's candidate places come from an
index of the file's lines (by each hunk's first old line) and are tried nearest-first,
and the line comparisons of one diff are capped at ``WORK_PER_LINE`` per line of diff
and file, so a diff built to make every hunk search the whole file gets a clear error.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Mapping

from harness_gym.errors import PatchError, one_line

# Counts up to 9 digits: a longer number is no real line count (and int() of thousands of
# digits raises ValueError instead of our PatchError).
_HUNK_RE = re.compile(r"^@@ -(\d{1,9})(?:,(\d{1,9}))? \+(\d{1,9})(?:,(\d{1,9}))? @@")
WORK_PER_LINE = 16
WORK_SLACK = 100_000
_PREAMBLE = ("diff ", "index ", "new file mode", "deleted file mode", "old mode", "new mode")
_NO_EOL = "\\ No newline at end of file"
DEV_NULL = "/dev/null"


@dataclass
class _Hunk:
    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)


@dataclass
class FileDiff:
    """One file's section of a unified diff."""

    old_path: str | None  # None: new file
    new_path: str | None  # None: deleted file
    hunks: list[_Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def _err(msg: str) -> PatchError:
    return PatchError(one_line(msg))


def looks_like_diff(text: str) -> bool:
    """A ``--- `` line directly followed by a ``+++ `` line, then a hunk header."""
    lines = text.splitlines()
    for i in range(len(lines) - 2):
        if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ") and lines[i + 2].startswith("@@"):
            return True
    return False


def _header_path(line: str, marker: str) -> str | None:
    raw = line[len(marker):].split("\t", 1)[0].strip()
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        raw = raw[1:-1]
    if raw == DEV_NULL:
        return None
    if raw.startswith(("a/", "b/")):
        raw = raw[2:]
    if not raw:
        raise _err(f"diff header {line.strip()!r} names no file; expected '{marker}a/<path>'")
    return raw


def parse_unified_diff(text: str) -> list[FileDiff]:
    """Parse a unified diff into per-file sections; raises PatchError on malformed input."""
    lines = text.splitlines(keepends=True)
    out: list[FileDiff] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.startswith("--- "):
            if out and line.strip() and not line.startswith(_PREAMBLE):
                raise _err(f"unexpected line {i + 1} in diff: {line.strip()[:60]!r}; expected '--- a/<path>' or '@@'")
            i += 1
            continue
        if i + 1 >= n or not lines[i + 1].startswith("+++ "):
            raise _err(f"diff line {i + 1}: '---' header must be followed by a '+++' header")
        fd = FileDiff(_header_path(line, "--- "), _header_path(lines[i + 1], "+++ "))
        if fd.old_path is None and fd.new_path is None:
            raise _err("diff section goes from /dev/null to /dev/null; name a file")
        if fd.old_path and fd.new_path and fd.old_path != fd.new_path:
            raise _err(f"renames are not supported ({fd.old_path!r} -> {fd.new_path!r}); delete and create instead")
        i += 2
        while i < n and lines[i].startswith("@@"):
            i = _read_hunk(lines, i, fd)
        if not fd.hunks:
            raise _err(f"diff section for {fd.path!r} has no '@@' hunk")
        out.append(fd)
    if not out:
        raise _err("no file sections found in diff; expected '--- a/<path>', '+++ b/<path>', '@@ … @@'")
    return out


def _read_hunk(lines: list[str], i: int, fd: FileDiff) -> int:
    m = _HUNK_RE.match(lines[i])
    if not m:
        raise _err(f"diff line {i + 1}: malformed hunk header {lines[i].strip()[:60]!r}; expected '@@ -l,s +l,s @@'")
    old_left = int(m.group(2)) if m.group(2) is not None else 1
    new_left = int(m.group(4)) if m.group(4) is not None else 1
    hunk = _Hunk(old_start=int(m.group(1)))
    header_at = i + 1
    i += 1
    last = ""
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise _err(f"hunk at diff line {header_at} is short: {old_left} old / {new_left} new lines missing; fix its @@ counts")
        raw = lines[i]
        tag, body = (raw[0], raw[1:]) if raw not in ("\n", "\r\n") else (" ", raw)
        if raw.startswith(_NO_EOL):
            _strip_eol(hunk, last)
            i += 1
            continue
        if tag == " " and old_left > 0 and new_left > 0:
            hunk.old.append(body)
            hunk.new.append(body)
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-" and old_left > 0:
            hunk.old.append(body)
            old_left -= 1
        elif tag == "+" and new_left > 0:
            hunk.new.append(body)
            new_left -= 1
        else:
            raise _err(f"diff line {i + 1} does not fit the hunk at line {header_at} ({raw.rstrip()[:60]!r}); fix its @@ counts")
        last = tag
        i += 1
    if i < len(lines) and lines[i].startswith(_NO_EOL):
        _strip_eol(hunk, last)
        i += 1
    fd.hunks.append(hunk)
    return i


def _strip_eol(hunk: _Hunk, tag: str) -> None:
    targets = {" ": (hunk.old, hunk.new), "-": (hunk.old,), "+": (hunk.new,)}.get(tag, ())
    for seq in targets:
        if seq:
            seq[-1] = seq[-1].rstrip("\r\n")


class _Work:
    """A budget of line comparisons shared by the hunks of one diff."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def spend(self, n: int, path: str) -> None:
        self.left -= n
        if self.left < 0:
            raise _err(
                f"hunks of {path!r} match too many places in the file to be placed; "
                "regenerate the diff against the current harness with more context lines"
            )


def apply_file_diff(old_text: str | None, fd: FileDiff, work: _Work | None = None) -> str | None:
    """Apply one file's hunks to its text (None = absent); return the new text or None."""
    path = fd.path
    if fd.old_path is None and old_text is not None:
        raise _err(f"diff creates {path!r} from /dev/null but it already exists; diff against the current file")
    if fd.old_path is not None and old_text is None:
        raise _err(f"diff edits {path!r} but the harness has no such file; use '--- /dev/null' to create it")
    lines = (old_text or "").splitlines(keepends=True)
    if work is None:
        work = _Work(WORK_PER_LINE * (len(lines) + sum(len(h.old) + len(h.new) for h in fd.hunks)) + WORK_SLACK)
    index: dict[str, list[int]] = {}
    for no, line in enumerate(lines):
        index.setdefault(line, []).append(no)
    pos = 0
    result: list[str] = []
    for k, hunk in enumerate(fd.hunks, 1):
        at = _locate(lines, index, hunk, pos, work, path)
        if at is None:
            want = hunk.old[0].rstrip("\n") if hunk.old else ""
            raise _err(
                f"hunk {k} of {path!r} does not apply: its context/removed lines (from line {hunk.old_start}: {want[:50]!r}) "
                "are not in the file; regenerate the diff against the current harness"
            )
        result.extend(lines[pos:at])
        result.extend(hunk.new)
        pos = at + len(hunk.old)
    result.extend(lines[pos:])
    new_text = "".join(result)
    if fd.new_path is None:
        if new_text:
            raise _err(f"diff deletes {path!r} but leaves {len(new_text)} chars; remove every line")
        return None
    return new_text


def _locate(lines: list[str], index: dict[str, list[int]], hunk: _Hunk, pos: int, work: _Work, path: str) -> int | None:
    """The start (>= ``pos``) where ``hunk.old`` matches nearest its header line (ties: the earlier), or None."""
    size = len(hunk.old)
    if size == 0:
        return min(max(hunk.old_start, pos), len(lines))
    want = max(hunk.old_start - 1, 0)
    spots = index.get(hunk.old[0], [])  # where the hunk's first old line occurs, ascending
    lo, hi = bisect_left(spots, pos), bisect_right(spots, len(lines) - size)
    above = bisect_left(spots, want, lo, hi)
    below = above - 1
    while below >= lo or above < hi:
        if above >= hi or (below >= lo and want - spots[below] <= spots[above] - want):
            start, below = spots[below], below - 1
        else:
            start, above = spots[above], above + 1
        work.spend(size, path)
        if lines[start:start + size] == hunk.old:
            return start
    return None


def apply_unified_diff(files: Mapping[str, str], text: str) -> dict[str, str | None]:
    """Apply a unified diff to ``files``; return changes (path -> new text, None = delete)."""
    changes: dict[str, str | None] = {}
    sections = parse_unified_diff(text)
    file_lines = sum((files.get(fd.path) or "").count("\n") + 1 for fd in sections)
    work = _Work(WORK_PER_LINE * (text.count("\n") + 1 + file_lines) + WORK_SLACK)
    for fd in sections:
        if fd.path in changes:
            raise _err(f"diff touches {fd.path!r} twice; merge its hunks into one section")
        changes[fd.path] = apply_file_diff(files.get(fd.path), fd, work)
    return changes
