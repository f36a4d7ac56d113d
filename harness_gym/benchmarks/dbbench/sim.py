"""The simulated DBBench target: a competent SQL agent with a seeded catalogue of flaws.

It reads the conversation like an LLM (tool results, errors, hints, blocks) and answers
with structured tool calls through the same runtime path a real model uses. Its knowledge
is the task's reference SQL; its failures come from the flaws below, drawn per episode
from (task identity, episode seed) so baseline and patched runs are paired. See
``docs/sim_dbbench.md`` for the catalogue: what each flaw does, which hook fixes it, how
the sim reacts to blocks, hints and errors.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.dbbench.ctx import answer_shape, parse_rows
from harness_gym.benchmarks.dbbench.tasks import DBTask
from harness_gym.benchmarks.sim_reading import Advice, TextCost, discourages, draw_against, mentions, vocabulary
from harness_gym.types import Message, ToolCall, assistant_message

CONCEPTS: dict[str, re.Pattern[str]] = {
    "quote_identifiers": re.compile(r"backtick|`|quot\w* (the |all )?(identifier|column|table|name)|identifiers? (with|containing) (spaces|special)", re.I),
    "inspect_format": re.compile(r"(stored|existing) (format|values?|rows?|spelling|case)|exact (case|format|spelling)|inspect (the )?(existing )?rows|look at (the )?(existing )?rows|copy the (stored|existing)", re.I),
    "check_empty": re.compile(r"\bempty\b|no rows|returned \[\]|\[\] (result|means)|\bLIKE\b|distinct values|no match", re.I),
    "run_sql_first": re.compile(r"(run|execute|use) (at least one |a |an |the )?(sql|query|select)\b.{0,40}before|no sql (has been )?(run|executed)|before commit\w* .{0,30}(sql|query)|query the (table|database) first", re.I),
    "run_mutation": re.compile(r"(run|execute) the (insert|update|statement|mutation|modification)|mutation (has )?not|(insert|update) (has )?not (been )?(run|executed)|before commit\w*.{0,40}(insert|update|mutation)", re.I),
    "numeric_cast": re.compile(r"\bcast\b|\+ ?0\b|stored as text|as numbers?\b|numeric(al)? (order|compar|sort)|lexicograph", re.I),
    "exact_answer": re.compile(r"exact(ly)? (the )?(values?|cells?)|only the (raw )?values?|bare values?|no (units|extra words|explanation)|verbatim|values? (as|exactly as) (returned|shown)", re.I),
    "change_approach": re.compile(r"\brepeat\w*|same (sql|query)|different (approach|query|statement)|\bloop\w*|do not re-?run", re.I),
}

# Instructions against a concept: never help for it, and followed as harm (sim_reading, "Advice works both ways")
AGAINST: dict[str, re.Pattern[str]] = {
    "quote_identifiers": discourages(r"(backtick|quot)"),
    "numeric_cast": discourages(r"(\bcast\b|\+ ?0\b)"),
    "run_sql_first": re.compile(r"answer (it )?(directly |only )?from the question|"
                                r"\b(never|don't|do not|no need to)\s+(run\w*\s+|us\w*\s+|writ\w*\s+|execut\w*\s+)?(any\s+)?(sql|quer)", re.I),
    "exact_answer": re.compile(r"(full|complete|whole) sentences?|explain\w* (the|each|every) (value|answer)|"
                               r"(with|add) (the )?units\b|\bin (plain )?words\b", re.I),
    "check_empty": re.compile(r"commit the first result|empty (result|answer|list) is (fine|correct|ok|the answer)", re.I),
}

# Per-task-kind flaw probabilities (see docs/sim_dbbench.md).
SELECT_FLAWS = {"commit_before_sql": 0.05, "unquoted_identifiers": 0.18, "paraphrased_value": 0.10,
                "numbers_as_text": 0.25, "verbose_answer": 0.05, "misread_question": 0.16}
MUTATION_FLAWS = {"commit_before_mutation": 0.08, "wrong_value_format": 0.18, "unquoted_identifiers": 0.14,
                  "wrong_row": 0.08}
VOCAB = vocabulary(CONCEPTS)
# chance a focused, relevant hint is followed: the real target followed none in the 3,960
# episodes of real batches 2-13: never a second query (stop 35; it was 0.25)
RESPONSIVENESS = 0.1
BLOCK_RESPONSIVENESS = 0.2  # chance a block whose message names an actionable fix is followed
MAX_SAME_BLOCK = 2     # a refused call is retried at most once; then the sim does something else
# SQL the agent can run or copy: backticked names, functions and clauses written as code, tool names
_SCHEMA_WORDS = ("column", "columns", "table", "tables", "identifier", "identifiers", "value", "values", "row", "rows",
                 "number", "numbers", "result", "results", "query", "answer", "answers", "statement", "error")
_SQL_CODE = re.compile(r"`[^`]*[A-Za-z][^`]*`|\b(?:CAST|SELECT|WHERE|LIKE|DISTINCT|INSERT|UPDATE|LIMIT|ORDER BY|GROUP BY|COUNT|LOWER|"
                       r"UPPER|TRIM|DECIMAL)\b|\+ ?0\b|'%|execute_sql|commit_final_answer")
# unfamiliar text: calibrated on the real DBBench target (docs/agreement_smol.md, "Text costs"; a message
# injected mid-episode ×10 since stop 35: a 12-21-word hint of advice between a good result and the commit
# broke 27 of the 50 answers it came before)
TEXT_COST = TextCost(per_word=0.004, cap=0.7, injected=10.0)
SELF_FIX = 0.25        # chance the sim fixes an error or empty result on its own
# a refused commit whose message names nothing it can act on ("No.") makes the agent give up the answer
# it had; the real DBBench target did in 8 of its 14 solved episodes (docs/agreement_smol.md)
DOUBT = 0.6
STUBBORN = 0.5         # after an unfixed error: repeat the same SQL (else give up and commit)

_BACKTICK = re.compile(r"`([^`]*)`")
_CAST = re.compile(r"CAST\((.+?) AS \w+\)", re.I)
_PLUS0 = re.compile(r"\s*\+\s*0(?![\d.])")
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_BLOCK_PREFIX = "Final answer committed"


@lru_cache(maxsize=1)
def _base_prompt() -> str:
    return (Path(__file__).parent / "harness" / "system_prompt.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Persona:
    """The flaws active in one episode and the per-episode uniforms that decide reactions."""

    flaws: frozenset[str]
    u: dict[str, float]

    @classmethod
    def draw(cls, task: DBTask, episode_seed: int, reference: str) -> "Persona":
        rng = random.Random(hashlib.sha256(f"sim-dbbench:{task.identity()}:{episode_seed}".encode()).digest())
        table = MUTATION_FLAWS if task.is_mutation else SELECT_FLAWS
        flaws = set()
        for name, p in table.items():
            if rng.random() < p and _applicable(name, reference, task):
                flaws.add(name)
        u = {k: rng.random() for k in (*CONCEPTS, "self_fix", "stubborn", "distraction", "misread", "block")}
        u.update(draw_against(rng, AGAINST))
        u["doubt"] = rng.random()  # drawn last: the baselines keep their draws
        return cls(frozenset(flaws), u)


def _applicable(flaw: str, sql: str, task: DBTask) -> bool:
    if flaw == "unquoted_identifiers":
        return any(re.search(r"[^A-Za-z0-9_]", m) for m in _BACKTICK.findall(sql))
    if flaw == "numbers_as_text":
        return bool(_CAST.search(sql) or _PLUS0.search(sql))
    if flaw in ("paraphrased_value", "wrong_value_format"):
        return any(re.search(r"[A-Za-z]", v) for v in _LITERAL.findall(sql))
    if flaw == "misread_question":
        return True
    return True


def reference_of(task: DBTask) -> str:
    try:
        from harness_gym.benchmarks.dbbench.loader import repair_reference_sql
    except ImportError:  # pragma: no cover - loader always present
        return task.reference_sql
    return repair_reference_sql(task.reference_sql, task)


# --- SQL transformations (each is one flaw's visible effect) ---------------------------------
def strip_quotes(sql: str) -> str:
    return _BACKTICK.sub(lambda m: m.group(1), sql)


def strip_casts(sql: str) -> str:
    return _PLUS0.sub("", _CAST.sub(lambda m: m.group(1), sql))


def paraphrase_literal(sql: str) -> str:
    def change(m: re.Match[str]) -> str:
        words = m.group(1).split()
        if len(words) >= 2:
            return "'" + " ".join(words[:-1]) + "'"
        return "'" + m.group(1) + "s'"

    # only the first literal with letters: the value the question paraphrases
    for m in _LITERAL.finditer(sql):
        if re.search(r"[A-Za-z]", m.group(1)):
            return sql[: m.start()] + change(m) + sql[m.end() :]
    return sql


def reformat_value(sql: str) -> str:
    """Write the first value with letters in a different case than stored (``4 Hours`` → ``4 hours``)."""
    for m in _LITERAL.finditer(sql):
        v = m.group(1)
        if re.search(r"[A-Za-z]", v):
            new = v.lower() if v != v.lower() else v.title()
            if new != v:
                return sql[: m.start()] + "'" + new + "'" + sql[m.end() :]
    return sql


# --- reading the conversation -----------------------------------------------------------------
@dataclass
class History:
    sql: list[tuple[str, str]]       # (query, result text) executed by the world
    commits_blocked: list[str]       # block messages returned for commit calls
    sql_blocked: list[str]           # block messages returned for execute_sql calls
    advice: Advice
    refused: list[tuple[str, str]] = field(default_factory=list)  # (tool, canonical arguments) of refused calls

    @classmethod
    def read(cls, messages: list[Message]) -> "History":
        sql, cblocked, sblocked, refused = [], [], [], []
        pending: dict[str, ToolCall] = {}
        text_only = "You must call a tool! NEVER respond with only text."
        advice = Advice.read(messages, _base_prompt(), ignore=(text_only,))
        for msg in messages:
            if msg.get("role") == "assistant":
                for c in msg.get("tool_calls") or []:
                    call = ToolCall.from_message_call(c)
                    pending[call.id] = call
            elif msg.get("role") == "tool":
                called = pending.get(str(msg.get("tool_call_id")))
                text = str(msg.get("content") or "")
                if called is None:
                    continue
                call = called
                if call.name == "commit_final_answer":
                    cblocked.append(text)
                    advice.add(text)
                    refused.append(_key(call.name, call.arguments))
                elif _is_world_result(text):
                    sql.append((str(call.arguments.get("query", "")), text))
                else:
                    sblocked.append(text)
                    advice.add(text)
                    refused.append(_key(call.name, call.arguments))
        return cls(sql, cblocked, sblocked, advice, refused)


def _key(tool: str, arguments: object) -> tuple[str, str]:
    return tool, json.dumps(arguments, sort_keys=True)


_DB_OUTPUT = re.compile(
    r"^\[|^\(?\d{4}[ ,(]|^near |no such (table|column|function)|syntax error|\berror\b|unknown (column|table)"
    r"|doesn't exist|interrupted|timed? ?out|incomplete input|misuse|mismatch",
    re.I,
)


def _is_world_result(text: str) -> bool:
    """Database output (rows or an error message) as opposed to a hook's block message."""
    return bool(_DB_OUTPUT.search(text[:300]))


def _is_error(text: str) -> bool:
    return not text.startswith("[")


# --- the policy --------------------------------------------------------------------------------
def respond(request: ChatRequest) -> Message:
    task: DBTask = request.knowledge
    reference = reference_of(task)
    persona = Persona.draw(task, int(request.meta.get("episode_seed", 0)), reference)
    hist = History.read(request.messages)
    agent = _Agent(task, reference, persona, hist, int(request.meta.get("round", 0)))
    hist.advice.vocab, hist.advice.ground, hist.advice.against = VOCAB, agent.grounds, AGAINST
    return agent.guarded(agent.act())


class _Agent:
    def __init__(self, task: DBTask, reference: str, persona: Persona, hist: History, round_index: int) -> None:
        self.task, self.ref, self.p, self.h, self.round = task, reference, persona, hist, round_index
        self.flaws = set(persona.flaws)

    def follows(self, concept: str) -> bool:
        return self.h.advice.follows(concept, CONCEPTS, self.p.u[concept], RESPONSIVENESS) or self.told_by_block(concept)

    def told_by_block(self, concept: str) -> bool:
        """A refusal whose message names an actionable fix is followed far more often than a hint."""
        units = self.h.commits_blocked + self.h.sql_blocked
        return bool(units) and Advice(units, ground=self.grounds, vocab=VOCAB, against=AGAINST).follows(
            concept, CONCEPTS, self.p.u["block"], BLOCK_RESPONSIVENESS)

    def told_against(self, concept: str) -> bool:
        """An instruction against ``concept`` (a skill, hint or block message) is followed: the sim makes
        the mistake the concept prevents, whether or not the flaw was drawn."""
        return self.h.advice.discouraged(concept, CONCEPTS, self.p.u, RESPONSIVENESS)

    def doubts(self) -> bool:
        """A commit was refused by a message that names nothing the agent can act on ("No.", "Wrong
        answer."): it doubts the answer it had (one draw per episode) instead of sending it again."""
        vague = [m for m in self.h.commits_blocked
                 if not any(p.search(m) and self.h.advice.actionable(m, c) for c, p in CONCEPTS.items())]
        return bool(vague) and self.p.u["doubt"] < DOUBT

    def has(self, flaw: str, concept: str) -> bool:
        """The flaw is active: drawn for this episode, or asked for by an instruction against ``concept``."""
        return flaw in self.flaws or self.told_against(concept)

    def grounds(self, unit: str, concept: str) -> bool:
        """Does ``unit`` name something the agent can use now: SQL it can run or copy, a tool,
        the table or one of its columns (by name or as "column names"), a value, its last result?"""
        if _SQL_CODE.search(unit):
            return True
        names = [n for n in (self.task.table_name, *self.task.columns) if len(n) >= 3]
        if any(mentions(unit, n) for n in names):
            return True
        # the schema and results the agent sees, referred to generically ("column names that contain spaces")
        return any(mentions(unit, w) for w in _SCHEMA_WORDS)

    def guarded(self, reply: Message) -> Message:
        """A call refused twice is not sent again: the agent does something else admissible —
        looks at the stored rows once, then commits what its last good result returned."""
        calls = reply.get("tool_calls") or []
        if not calls:
            return reply
        call = ToolCall.from_message_call(calls[0])
        if self.h.refused.count(_key(call.name, call.arguments)) < MAX_SAME_BLOCK:
            return reply
        look = f"SELECT * FROM `{self.task.table_name}` LIMIT 5"
        if not any(q == look for q, _ in self.h.sql) and self.h.refused.count(_key("execute_sql", {"query": look})) == 0:
            return self._sql(look, "That was refused twice; let me look at the stored rows.")
        good = [r for q, r in self.h.sql if not _is_error(r) and r != "[]" and q != look]
        values = ["" if v is None else _fmt(v) for r in (parse_rows(good[-1]) or [] if good else []) for v in r]
        if _key("commit_final_answer", {"answers": values}) not in self.h.refused:
            return self._commit(values, "Committing what my last query returned.")
        return self._commit([], "I cannot do better than this.")

    # SQL the agent would write now, given which flaws are still active
    def planned_sql(self, values_checked: bool = False) -> str:
        """``values_checked``: the agent has just looked the stored values up again, which mends the
        way it wrote a value (paraphrased, or in another case) and nothing else."""
        sql = self.ref
        if "misread_question" in self.flaws and not self.task.is_mutation:
            sql = _misread(sql, self.task, self.p.u["misread"])
        if self.has("numbers_as_text", "numeric_cast") and not self.follows("numeric_cast"):
            sql = strip_casts(sql)
        if "paraphrased_value" in self.flaws and not self.follows("check_empty") and not values_checked \
                and (self.told_against("check_empty") or not self._fixed_empty()):
            sql = paraphrase_literal(sql)
        if "wrong_value_format" in self.flaws and not self.follows("inspect_format") and not values_checked:
            sql = reformat_value(sql)
        if self.has("unquoted_identifiers", "quote_identifiers") and not self.follows("quote_identifiers") \
                and not self._fixed_error():
            sql = strip_quotes(sql)
        return sql

    def _fixed_error(self) -> bool:
        """After seeing an SQL error the sim may fix it on its own (one draw per episode)."""
        return any(_is_error(r) for _, r in self.h.sql) and self.p.u["self_fix"] < SELF_FIX

    def _fixed_empty(self) -> bool:
        return any(r == "[]" for _, r in self.h.sql) and self.p.u["self_fix"] < SELF_FIX

    def act(self) -> Message:
        return self._act_mutation() if self.task.is_mutation else self._act_select()

    def _act_select(self) -> Message:
        h = self.h
        if not h.sql:
            if self.has("commit_before_sql", "run_sql_first") and not h.commits_blocked and not self.follows("run_sql_first"):
                return self._commit(_guess(self.task), "The answer is clear from the question.")
            return self._sql(self.planned_sql(), "Let me query the table.")
        query, result = h.sql[-1]
        if _is_error(result):
            nxt = self.planned_sql()
            if nxt != query:
                return self._sql(nxt, "The query failed; let me fix it.")
            if self.follows("change_approach") or self.p.u["stubborn"] >= STUBBORN:
                return self._commit([], "I could not get a result.")
            return self._sql(query, "Let me try again.")
        if result == "[]":
            nxt = self.planned_sql()
            if nxt != query:
                return self._sql(nxt, "No rows matched; the stored value may be written differently.")
            # An empty result the agent was told not to commit: it checks how the values are stored.
            # That mends a value it wrote wrongly, not a misread question or a missing cast (the
            # result may be any tool text that reads as rows, a hook's "[]" as well as the world's).
            if h.commits_blocked and self.follows("check_empty"):
                checked = self.planned_sql(values_checked=True)
                if checked != query:
                    return self._sql(checked, "Let me check the stored values again.")
            return self._commit([], "No rows match, so the answer is empty.")
        nxt = self.planned_sql()
        if nxt != query and "numbers_as_text" in self.flaws and self.follows("numeric_cast"):
            return self._sql(nxt, "The numbers are stored as text; let me compare them numerically.")
        rows = parse_rows(result) or []
        values = ["" if v is None else _fmt(v) for r in rows for v in r]
        if self.has("verbose_answer", "exact_answer") and not self.follows("exact_answer"):
            values = [f"{v} (from the table)" for v in values]
        if self._distracted():
            values = values[:-1] if len(values) > 1 else [f"about {v}" for v in values]
        if self.doubts():
            return self._commit([] if values else _guess(self.task), "That was refused, so my answer must be wrong.")
        return self._commit(values, "I have the answer.")

    def _act_mutation(self) -> Message:
        h = self.h
        ran_mutation = any(not _is_error(r) and _is_mutation(q) for q, r in h.sql)
        if ran_mutation:
            runs = sum(1 for q, r in h.sql if not _is_error(r) and _is_mutation(q))
            if runs < 2 and self.doubts():
                return self._sql(self._statement(), "That was refused; the statement may not have applied. Running it again.")
            return self._commit([], "The table is updated.")
        if not h.sql:
            if "wrong_value_format" in self.flaws and self.follows("inspect_format"):
                return self._sql(f"SELECT * FROM `{self.task.table_name}` LIMIT 5", "Let me look at the stored rows first.")
            if "commit_before_mutation" in self.flaws:
                return self._sql(f"SELECT * FROM `{self.task.table_name}` LIMIT 3", "Let me look at the table.")
            return self._sql(self._statement(), "Let me run the statement.")
        if "commit_before_mutation" in self.flaws and not h.commits_blocked and not self.follows("run_mutation"):
            return self._commit([], "Done.")
        last_q, last_r = h.sql[-1]
        stmt = self._statement()
        if _is_error(last_r) and stmt == last_q:
            if self.follows("change_approach") or self.p.u["stubborn"] >= STUBBORN:
                return self._commit([], "I could not run the statement.")
        return self._sql(stmt, "Now the statement.")

    def _statement(self) -> str:
        sql = self.planned_sql()
        if "wrong_row" in self.flaws or self._distracted():
            sql = paraphrase_literal(sql) if self.task.task_type == "UPDATE" else reformat_value(sql)
        return sql

    def _distracted(self) -> bool:
        return self.p.u["distraction"] < self.h.advice.distraction(CONCEPTS, TEXT_COST)

    def _sql(self, query: str, thought: str) -> Message:
        return assistant_message(thought, [ToolCall(f"call_{self.round}_0", "execute_sql", {"query": query})])

    def _commit(self, answers: list[str], thought: str) -> Message:
        return assistant_message(thought, [ToolCall(f"call_{self.round}_0", "commit_final_answer", {"answers": answers})])


def _is_mutation(sql: str) -> bool:
    return bool(re.match(r"\s*(insert|update|delete|replace)\b", sql, re.I))


def _fmt(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(v)
    return str(v)


def _guess(task: DBTask) -> list[str]:
    """A plausible answer read off the question alone."""
    nums = re.findall(r"\d+(?:\.\d+)?", task.description)
    if answer_shape(task.task_type) == "value":
        return [nums[-1] if nums else "0"]
    caps = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", task.description[1:])
    return [caps[-1]] if caps else []


def _misread(sql: str, task: DBTask, u: float) -> str:
    """Answer a neighbouring question: select another column, or shift a COUNT (intrinsic)."""
    m = re.match(r"(\s*SELECT\s+)(`[^`]+`|\w+)(\s+FROM\b)", sql, re.I)
    cols = [c for c in task.columns]
    if m and cols:
        current = m.group(2).strip("`")
        others = [c for c in cols if c != current]
        if others:
            pick = others[int(u * len(others)) % len(others)]
            return sql[: m.start(2)] + f"`{pick}`" + sql[m.end(2) :]
    if re.match(r"\s*SELECT\s+COUNT\(", sql, re.I):
        return re.sub(r"(?i)COUNT\(\s*\*\s*\)", "COUNT(*) + 1", sql, count=1)
    return re.sub(r"(?i)\b(MIN|MAX)\(", lambda m: "MAX(" if m.group(1).upper() == "MIN" else "MIN(", sql, count=1) if re.search(r"(?i)\b(MIN|MAX)\(", sql) else sql.replace("SELECT", "SELECT DISTINCT", 1)
