"""DBBench data tools: verify tasks by playing their reference solutions, download the originals.

``verify`` runs every task's reference through ``DBBenchWorld`` exactly as an agent
would (``execute_sql(reference)``, then ``commit_final_answer`` with the values read from
the reply, or ``[]`` for mutations) and reports pass rates per type, for the reference as
written ("raw") and after ``repair_reference_sql`` ("repaired"); on a MySQL backend it
also compares each mutation's table hash with the original ``answer_md5``.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness_gym.errors import HarnessGymError, TaskDataError, one_line
from harness_gym.benchmarks.dbbench.db import ORIGINAL_FILES_BACKEND, Database, open_database
from harness_gym.benchmarks.dbbench.loader import load_split, parse_task, repair_reference_sql
from harness_gym.benchmarks.dbbench.tasks import TASK_TYPES, DBTask
from harness_gym.benchmarks.dbbench.world import DBBenchWorld
from harness_gym.types import ToolCall

# The function-calling AgentBench's data (the version Harness-R1 runs), pinned to the commit
# that published it; v0.2's files differ (and its standard.jsonl fails the loader at line 18).
SOURCE_COMMIT = "5bf4eb27f05bc50ca97dce45f0693c6018875c25"
DEFAULT_URL = f"https://raw.githubusercontent.com/THUDM/AgentBench/{SOURCE_COMMIT}/data/dbbench"
DEFAULT_FILES = ("dev.jsonl", "standard.jsonl")
DEFAULT_SHA256 = {
    "dev.jsonl": "eb941c58a7a5651357b19e46aa05070f6cd5a7d83ce70cefd24aa3581e1e1130",
    "standard.jsonl": "cf8dec6fb8051f46e6171136824aaa8b8707c3affbb3185c0bad2b39bc6b71e2",
}


@dataclass(frozen=True)
class TaskVerdict:
    task_id: str
    task_type: str
    raw_pass: bool
    repaired_pass: bool
    repaired: bool  # whether the repair changed the reference
    md5_match: bool | None = None  # mutations on MySQL only
    note: str = ""


@dataclass
class VerifyReport:
    backend: str
    verdicts: list[TaskVerdict] = field(default_factory=list)

    def by_type(self, repaired: bool = False) -> dict[str, tuple[int, int]]:
        """type → (passed, total), in the original's type order; plus SELECT."""
        out: dict[str, list[int]] = {}
        for v in self.verdicts:
            ok = v.repaired_pass if repaired else v.raw_pass
            for key in (v.task_type, "SELECT" if v.task_type not in ("INSERT", "UPDATE") else None):
                if key:
                    cell = out.setdefault(key, [0, 0])
                    cell[0] += ok
                    cell[1] += 1
        order = [*TASK_TYPES[:8], "SELECT", "INSERT", "UPDATE"]
        return {k: (out[k][0], out[k][1]) for k in order if k in out}

    def passed(self, repaired: bool = False) -> int:
        return sum(v.repaired_pass if repaired else v.raw_pass for v in self.verdicts)

    def overall_cat_accuracy(self, repaired: bool = False) -> float:
        """AgentBench's reported metric: mean of the SELECT, INSERT and UPDATE accuracies."""
        t = self.by_type(repaired)
        accs = [t[k][0] / t[k][1] for k in ("SELECT", "INSERT", "UPDATE") if k in t]
        return sum(accs) / len(accs) if accs else 0.0

    def md5_counts(self) -> tuple[int, int]:
        """(matches, mutation tasks hashed) — (0, 0) on SQLite."""
        checked = [v.md5_match for v in self.verdicts if v.md5_match is not None]
        return sum(checked), len(checked)

    def render(self) -> str:
        raw, rep = self.by_type(False), self.by_type(True)
        lines = [f"DBBench reference verification on {self.backend}", f"{'type':<18}{'n':>5}{'raw':>8}{'repaired':>10}"]
        for k, (p, n) in raw.items():
            lines.append(f"{k:<18}{n:>5}{p:>8}{rep[k][0]:>10}")
        total = len(self.verdicts)
        lines.append(f"{'all':<18}{total:>5}{self.passed():>8}{self.passed(True):>10}")
        lines.append(
            f"overall_cat_accuracy: raw {self.overall_cat_accuracy():.3f}, "
            f"repaired {self.overall_cat_accuracy(True):.3f}; "
            f"references repaired: {sum(v.repaired for v in self.verdicts)}"
        )
        matched, hashed = self.md5_counts()
        if hashed:
            lines.append(f"answer_md5 matches after the reference statement: {matched}/{hashed}")
        return "\n".join(lines)


def answers_from_reply(text: str) -> list[str]:
    """Read a reply like ``[('a', 1)]`` as an agent would: every value, flattened, as str."""
    try:
        rows = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if not isinstance(rows, list):
        return []
    return [str(v) for row in rows for v in (row if isinstance(row, tuple) else (row,))]


def play_reference(world: DBBenchWorld, task: DBTask, sql: str, *, with_md5: bool = False) -> tuple[bool, bool | None]:
    """One episode with ``sql`` as the agent's only statement; returns (success, md5 match)."""
    world.reset(task)
    try:
        reply = world.step(ToolCall("ref-1", "execute_sql", {"query": sql}))
        md5 = None
        if with_md5 and task.is_mutation and task.answer_md5 is not None and world.session is not None:
            md5 = world.session.md5_hash() == task.answer_md5
        answers = [] if task.is_mutation else answers_from_reply(reply.observation)
        world.step(ToolCall("ref-2", "commit_final_answer", {"answers": answers}))
        return world.success, md5
    finally:
        world.close()


def verify(tasks: Iterable[DBTask], backend: str | Database) -> VerifyReport:
    """Play every task's reference (raw and repaired) through a fresh world; see module doc."""
    if isinstance(backend, str):
        db = open_database(backend)
        try:
            return verify(tasks, db)
        finally:
            db.close()
    db = backend
    report = VerifyReport(db.describe())
    with_md5 = db.kind == "mysql"
    for task in tasks:
        world = DBBenchWorld(db)
        note = ""
        try:
            raw_ok, md5 = play_reference(world, task, task.reference_sql, with_md5=with_md5)
        except TaskDataError as e:
            raw_ok, md5, note = False, None, str(e)
        fixed = repair_reference_sql(task.reference_sql, task)
        rep_ok = raw_ok
        if fixed != task.reference_sql:
            try:
                rep_ok, md5_fixed = play_reference(world, task, fixed, with_md5=with_md5)
                md5 = md5 if md5 else md5_fixed
            except TaskDataError as e:
                rep_ok, note = False, str(e)
        changed = fixed != task.reference_sql
        report.verdicts.append(TaskVerdict(task.task_id, task.task_type, raw_ok, rep_ok, changed, md5, note))
    return report


def main_verify(split: str, data_dir: str | Path | None, backend: str | None = None) -> int:
    """CLI body: verify the original files in ``data_dir`` (or the generated split); print the table.

    The backend defaults as the env's does: SQLite for generated tasks, ``"mariadb"`` for the original files.
    """
    backend = backend or (ORIGINAL_FILES_BACKEND if data_dir is not None else "sqlite")
    try:
        if data_dir is None:
            from harness_gym.benchmarks.dbbench.generator import generate_split

            tasks = generate_split(split)
        else:
            tasks = load_split(split, data_dir)
        report = verify(tasks, backend)
    except HarnessGymError as e:
        print(f"error: {e}")
        return 2
    print(report.render())
    return 0


def _fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        raise TaskDataError(one_line(f"{url}: HTTP {e.code} {e.reason}; check the URL base (--url)")) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise TaskDataError(
            one_line(f"{url}: cannot reach the server ({reason}); check the URL and the network")
        ) from None


def _validate(url: str, data: bytes) -> None:
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise TaskDataError(one_line(f"{url}: not UTF-8 text ({e}); expected DBBench jsonl")) from None
    if not any(line.strip() for line in lines):
        raise TaskDataError(f"{url}: the file is empty; expected DBBench jsonl")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            parse_task(json.loads(line), f"check:{i}")
        except json.JSONDecodeError as e:
            raise TaskDataError(one_line(f"{url}:{i + 1}: not valid JSON ({e.msg}); expected DBBench jsonl")) from None
        except (KeyError, ValueError, TypeError) as e:
            raise TaskDataError(one_line(f"{url}:{i + 1}: not a DBBench task ({e}); expected DBBench jsonl")) from None


def download(
    url_base: str, dest_dir: str | Path, files: Sequence[str] = DEFAULT_FILES, sha256: Mapping[str, str] | None = None
) -> list[Path]:
    """Fetch ``files`` from ``url_base`` into ``dest_dir``, each checked, then written atomically.

    Every file must load as DBBench tasks; with ``sha256`` (the default source's digests when
    ``url_base`` is ``DEFAULT_URL``) each must also have its recorded digest.
    """
    if sha256 is None and url_base.rstrip("/") == DEFAULT_URL:
        sha256 = DEFAULT_SHA256
    dest = Path(dest_dir)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TaskDataError(one_line(f"{dest}: cannot create the destination directory: {e}")) from None
    fetched = []
    for name in files:  # fetch and check everything before writing anything
        url = url_base.rstrip("/") + "/" + name
        data = _fetch(url)
        _validate(url, data)
        want = (sha256 or {}).get(name)
        if want and hashlib.sha256(data).hexdigest() != want:
            raise TaskDataError(one_line(
                f"{url}: sha256 {hashlib.sha256(data).hexdigest()[:16]}… is not the recorded {want[:16]}… of the "
                f"function-calling AgentBench's {name}; the source changed: pass --url to take another copy"
            ))
        fetched.append((name, data))
    paths = []
    for name, data in fetched:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dest)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, dest / name)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise TaskDataError(one_line(f"{dest / name}: cannot write: {e}")) from None
        paths.append(dest / name)
    return paths


def main_download(url: str | None, dest: str | Path) -> int:
    """CLI body: download the original files; print where they went."""
    try:
        paths = download(url or DEFAULT_URL, dest)
    except HarnessGymError as e:
        print(f"error: {e}")
        return 2
    for p in paths:
        print(f"wrote {p}")
    return 0
