"""The editable harness: an immutable, content-addressed set of text files.

Layout: ``system_prompt.md``, ``tools.json`` (OpenAI tool schemas), ``config.json``,
any other text (skills, notes) and ``hooks/*.py``. A Harness-R1 ``add_code_hook``
becomes ``hooks/NN_<point>.py`` defining ``hook(ctx, nb)``; a bare hook module becomes
``hooks/NN_module.py`` whose functions are named after hook points.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from harness_gym.errors import ConfigError, one_line
from harness_gym.harness.policy import HOOK_POINTS, defines_hook, module_entry_names
from harness_gym.benchmarks.base import digest

__all__ = ["HOOK_POINTS", "Harness", "HookModule", "hook_file_point", "next_hook_path"]

HOOKS_DIR = "hooks/"
_NUMBERED_RE = re.compile(r"^hooks/(\d+)_")


class FrozenFiles(Mapping[str, str]):
    """An immutable, hashable, path-sorted mapping of file path -> text."""

    __slots__ = ("_items", "_index")

    def __init__(self, files: Mapping[str, str] | None = None) -> None:
        items = tuple(sorted((str(k), str(v)) for k, v in dict(files or {}).items()))
        self._items = items
        self._index = dict(items)

    def __getitem__(self, key: str) -> str:
        return self._index[key]

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __repr__(self) -> str:
        return f"FrozenFiles({list(self._index)})"


@dataclass(frozen=True)
class HookModule:
    """One file under ``hooks/`` and the hook entries it provides, in call order."""

    path: str
    code: str
    entries: tuple[tuple[str, str], ...]


def hook_file_point(path: str) -> str | None:
    """The hook point a file name says (``hooks/03_on_post_step.py`` -> ``on_post_step``)."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    for point in HOOK_POINTS:
        if stem == point or stem.endswith("_" + point):
            return point
    return None


def hook_entries(path: str, code: str) -> tuple[tuple[str, str], ...]:
    """Entries of a hook file: Harness-R1 style if it defines ``hook`` and its name says
    the point, else every top-level function named like a hook point."""
    point = hook_file_point(path)
    if point is not None and defines_hook(code):
        return ((point, "hook"),)
    return tuple((name, name) for name in module_entry_names(code))


def next_hook_path(existing: Mapping[str, Any], suffix: str) -> str:
    """``hooks/NN_<suffix>.py`` with NN one above the highest numbered hook file."""
    numbers = [int(m.group(1)) for p in existing if (m := _NUMBERED_RE.match(p))]
    return f"hooks/{max(numbers, default=0) + 1:02d}_{suffix}.py"


@dataclass(frozen=True)
class Harness:
    """An immutable harness version. Equality and hashing follow content, not lineage."""

    benchmark: str
    files: Mapping[str, str]
    parent: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.files, FrozenFiles):
            object.__setattr__(self, "files", FrozenFiles(self.files))

    @property
    def version(self) -> str:
        """First 16 hex chars of sha256 over canonical (benchmark, files); parent excluded."""
        return self.content_sha256[:16]

    @property
    def content_sha256(self) -> str:
        """The full sha256 over canonical (benchmark, files): what rollouts are cached under."""
        return digest({"benchmark": self.benchmark, "files": dict(self.files)})

    @classmethod
    def from_dir(cls, benchmark: str, path: Path) -> "Harness":
        """Read every text file under ``path`` (caches and hidden files skipped)."""
        root = Path(path)
        if not root.is_dir():
            raise ConfigError(one_line(f"harness directory expected, got {str(root)!r}; pass the folder holding system_prompt.md"))
        files: dict[str, str] = {}
        for item in sorted(root.rglob("*")):
            rel = item.relative_to(root).as_posix()
            parts = rel.split("/")
            if not item.is_file() or "__pycache__" in parts or any(p.startswith(".") for p in parts):
                continue
            if item.suffix == ".pyc":
                continue
            try:
                files[rel] = item.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise ConfigError(one_line(f"harness file {rel!r} is not UTF-8 text; harness files must be text")) from None
        return cls(benchmark=benchmark, files=files)

    def system_prompt(self) -> str:
        return self.files.get("system_prompt.md", "")

    def tools(self) -> list[dict]:
        """OpenAI tool schemas from ``tools.json`` (empty when absent)."""
        value = self._json("tools.json", [])
        if not isinstance(value, list):
            raise ConfigError(one_line(f"tools.json must hold a JSON list, got {type(value).__name__}"))
        return value

    def config(self) -> dict:
        """Runtime settings from ``config.json`` (empty when absent)."""
        value = self._json("config.json", {})
        if not isinstance(value, dict):
            raise ConfigError(one_line(f"config.json must hold a JSON object, got {type(value).__name__}"))
        return value

    def _json(self, path: str, default: Any) -> Any:
        text = self.files.get(path)
        if text is None:
            return default
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(one_line(f"{path} is not valid JSON ({exc}); fix the file")) from None

    def hook_modules(self) -> list[HookModule]:
        """One module per ``hooks/*.py`` file, sorted by path (the order hooks run in)."""
        return [
            HookModule(path=p, code=self.files[p], entries=hook_entries(p, self.files[p]))
            for p in sorted(self.files)
            if p.startswith(HOOKS_DIR) and p.endswith(".py")
        ]

    def with_files(self, changes: Mapping[str, str | None]) -> "Harness":
        """A new version with ``changes`` applied (``None`` deletes); its parent is this one."""
        files = dict(self.files)
        for path, text in changes.items():
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        return Harness(benchmark=self.benchmark, files=files, parent=self.version)

    def render(self) -> str:
        """All files as ``=== path ===`` text blocks, sorted by path (for packets)."""
        return "\n\n".join(f"=== {p} ===\n{t.rstrip(chr(10))}" for p, t in self.files.items())
