"""Leakage and special-casing checks on a parsed patch, against the batch's gold data.

Harness-R1 scans only the patch description with its id/index regexes (``patch.py``
also scans hook string literals). This module is the second gate, run by the env right
after ``parse_patch``, on *everything* a patch adds:

- the Harness-R1 regexes (ASIN-like ids, ``task #N``, ``webshop_N``/``alfworld_N``) and,
  for ALFWorld, numbered instance actions (``go to shelf 1``), in every added line of a
  prompt, skill or config file, and in every string literal of a hook;
- the batch's gold strings (of the batch and held-out tasks, from ``BenchmarkSpec.gold_strings``:
  DBBench's reference answers, reference SQL and distinctive table cells; WebShop's target
  product ids and titles; ALFWorld's target objects and where they start), in the description,
  in every added line of a non-Python file and in every string or number literal of a
  hook (identifiers and comments do nothing at runtime and are not scanned).

Matching is on lowercase alphanumeric tokens with token boundaries, so ``'$189.99'`` in a
patch matches the cell ``$189.99`` but ``1963`` does not match inside ``19634``. Gold
strings that are too short or too common to be evidence are dropped when ``GoldStrings``
is built, so innocent patches are not rejected (measured: zero false positives on the
example patches and the baselines' patches, tests/test_leakage.py): 1–3 characters,
phrases of common English/SQL words only, values the base harness already contains, and
every single alphabetic word ("Stored", "Office", "Globex"). Without a dictionary a lone
word cannot be told from ordinary prose, so a single-word answer is not caught here;
multi-word values, numbers, codes, hashes and SQL are. Held-out Δ covers the rest.
Every rejection is a one-line ``PatchError`` naming the file, line and matched text.
"""
from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import PatchError, one_line
from harness_gym.harness.files import Harness
from harness_gym.harness.patch import LEAKAGE_PATTERNS, Patch
from harness_gym.harness.policy import instance_action, parse_python

MIN_GOLD_CHARS = 4
MAX_GOLD_TOKENS = 64
_TOKEN = re.compile(r"[a-z0-9]+")

# Words too common to prove anything when a single-word gold value equals them.
COMMON_WORDS = frozenset("""
a about above after again against all also an and any are as at be because been before
being below between both but by can could did do does doing down during each else
every few first for from further had has have having here how if in into is it its just
last least less like many may might more most much must near never new next no none nor
not now null of off old on once one only or other our out over own same should since so
some still such than that the their them then there these they this those through to too
true false under until up upon very was we were what when where which while who whom why
will with within without would yes you your
add answer answers avg backtick backticks best both case cast check column columns commit
count data database decimal empty error errors exact exactly final first format hint
hints integer large last length list long lower match max min name names number numbers
numeric order query result results row rows same select short small sort string table
tables text total type unit units upper value values where word words year years
high low north south east west left right top bottom open closed active inactive public
private other mixed yes no unknown none all main new old male female
insert update delete from into set group by having limit offset join inner outer on
distinct like between is not null and or asc desc union all exists any some true false
""".split())


def fold(text: str) -> str:
    r"""``text`` as the checks read it: NFKC (fullwidth and other compatibility forms become
    plain letters and digits) without format characters (zero-width spaces and joiners,
    soft hyphens), so ``Ｐａｃｉ\u200bｆｉｃ`` is read as ``Pacific``.

    Cross-script look-alikes (Cyrillic ``а`` for Latin ``a``) are not folded: NFKC keeps them apart.
    """
    text = unicodedata.normalize("NFKC", text)
    if text.isprintable() or not any(unicodedata.category(c) == "Cf" for c in text):
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric tokens of the folded text: the unit gold strings are matched on."""
    return _TOKEN.findall(fold(text).lower())


def _norm(text: str) -> str:
    return " ".join(tokens(text))


@dataclass(frozen=True)
class GoldStrings:
    """Normalized gold strings of a batch (and its held-out tasks); empty = regexes only."""

    values: frozenset[str] = frozenset()
    lengths: tuple[int, ...] = ()
    benchmark: str = ""
    dropped: int = 0  # raw strings dropped as too short or too common (for reports)
    # first token -> the token counts of the values starting with it: ``find`` tries only those
    # lengths at a position, so a 200 KB patch costs one lookup per token, not one per value length
    starts: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def build(cls, raw: Iterable[str], *, benchmark: str = "", ignore: Iterable[str] = ()) -> GoldStrings:
        """Normalize ``raw``, dropping what is too short or too common to be evidence."""
        skip = {_norm(s) for s in ignore} | COMMON_WORDS
        kept: set[str] = set()
        dropped = 0
        for item in raw:
            norm = _norm(str(item))
            toks = norm.split()
            if (len(norm) >= MIN_GOLD_CHARS and norm not in skip and len(toks) <= MAX_GOLD_TOKENS
                    and not all(t in COMMON_WORDS for t in toks) and not (len(toks) == 1 and toks[0].isalpha())):
                kept.add(norm)
            else:
                dropped += 1
        starts: dict[str, set[int]] = {}
        for value in kept:
            toks = value.split()
            starts.setdefault(toks[0], set()).add(len(toks))
        return cls(frozenset(kept), tuple(sorted({len(v.split()) for v in kept})), benchmark, dropped,
                   {k: tuple(sorted(v)) for k, v in starts.items()})

    @classmethod
    def from_tasks(cls, spec: Any, tasks: Sequence[Any], harness: Harness | None = None) -> GoldStrings:
        """From ``spec.gold_strings(tasks)`` (None: regexes only); ``harness``'s own words are ignored.

        A single-token value that the base harness already contains cannot be leaked by a
        patch (and would reject innocent edits of that text), so it is dropped.
        """
        fn = getattr(spec, "gold_strings", None)
        name = str(getattr(spec, "name", ""))
        if fn is None or not tasks:
            return cls(benchmark=name)
        base_tokens = set()
        if harness is not None:
            base_tokens = set(tokens("\n".join(t for t in harness.files.values() if isinstance(t, str))))
        return cls.build(fn(list(tasks)), benchmark=name, ignore=base_tokens)

    def find(self, text: str) -> str | None:
        """The first gold string occurring in ``text`` on token boundaries, or None."""
        if not self.values:
            return None
        toks = tokens(text)
        starts = self.starts or {v.split()[0]: self.lengths for v in self.values}  # a GoldStrings built by hand
        hits = []
        for i, tok in enumerate(toks):
            for n in starts.get(tok, ()):
                cand = " ".join(toks[i : i + n])
                if cand in self.values:
                    hits.append((n, i, cand))
        return min(hits)[2] if hits else None  # the shortest, then the first: what trying lengths in order found

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class _Piece:
    where: str
    text: str
    literal: bool = field(default=False)  # a hook literal (regexes already applied to it by patch.py)


def check_leakage(patch: Patch, gold: GoldStrings, *, base: Harness | None = None) -> None:
    """Raise ``PatchError`` (one line) if ``patch`` special-cases ids or leaks gold strings.

    With ``base``, only lines the patch adds to a non-Python file are scanned (text the
    harness already had is not the patch's doing).
    """
    benchmark = gold.benchmark or (base.benchmark if base is not None else "")
    for piece in _pieces(patch, base):
        text = fold(piece.text)
        for pattern in LEAKAGE_PATTERNS:
            m = pattern.search(text)
            if m:
                raise _leak(piece.where, f"task-specific id or index {m.group(0)!r}", "remove ids and task indices")
        if benchmark == "alfworld":
            action = instance_action(" ".join(text.lower().split()))
            if action:
                raise _leak(piece.where, f"numbered ALFWorld instance action {action[:40]!r}",
                            "use object types, not numbered instances such as 'shelf 1'")
        hit = gold.find(text)
        if hit is not None:
            raise _leak(piece.where, f"a value from this batch's task data ({hit[:40]!r}: a reference answer, reference SQL or table cell)",
                        "write rules that generalise, not the batch's answers or values")


def _leak(where: str, what: str, fix: str) -> PatchError:
    return PatchError(one_line(f"{where} contains {what}; {fix}"))


def _pieces(patch: Patch, base: Harness | None) -> list[_Piece]:
    pieces = [_Piece("patch description", patch.description)] if patch.description else []
    for path, text in patch.changes:
        if text is None:
            continue
        if path.endswith(".py"):
            pieces += [_Piece(f"{path} line {line}", value, True) for line, value in _literals(text)]
            continue
        old = base.files.get(path) if base is not None else None
        old_lines = set(old.splitlines()) if isinstance(old, str) else set()
        for no, line in enumerate(text.splitlines(), 1):
            if line not in old_lines and line.strip():
                pieces.append(_Piece(f"{path} line {no}", line))
    return pieces


def _literals(code: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every string and number literal of parseable code."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [(0, code)]  # unparseable text is scanned whole (parse_patch rejects it anyway)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool):
            out.append((getattr(node, "lineno", 0), node.value if isinstance(node.value, str) else repr(node.value)))
    return out
