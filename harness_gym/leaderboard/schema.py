"""The submission format (a JSON Schema) and a small checker for the subset of it we use.

Why a hand-written checker and not ``jsonschema``: the schema uses a dozen keywords
(``type``, ``required``, ``properties``, ``additionalProperties``, ``items``, ``enum``,
``const``, ``pattern``, ``minimum``, ``maximum``, ``minItems``, ``minLength``), the core
package stays free of ``jsonschema``'s compiled dependency tree, and errors come out as
one line naming the JSON path, what was expected and what was given. The published file
``leaderboards/schema/submission.schema.json`` is ``json.dumps(SCHEMA, indent=2)``; a test
keeps them equal and validates the schema with ``jsonschema`` when it is installed.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness_gym.errors import HarnessGymError

FORMAT = "harness-gym-submission-v1"


class SubmissionError(HarnessGymError):
    """A submission file that is unreadable or breaks the schema (message: one line)."""


_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/harness-gym/harness-gym/leaderboards/schema/submission.schema.json",
    "title": "harness-gym leaderboard submission",
    "description": "One editing policy on one env: per episode the packet hash, the batch, the exact patch and the claimed rewards. "
                   "`harness-gym leaderboard verify` reruns every patch and accepts only matching claims.",
    "type": "object",
    "required": ["format", "name", "policy", "env", "package", "target", "seeds", "attempts", "verified", "episodes"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$"},
        "policy": {"type": "string", "minLength": 1, "description": "policy name as shown in the table"},
        "description": {"type": "string"},
        "site": {"type": "string"},
        "env": {
            "type": "object",
            "required": ["id", "version", "kwargs"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^[A-Za-z0-9_/.:-]+-v[0-9]+$"},
                "version": {"type": "integer", "minimum": 0},
                "kwargs": {
                    "type": "object",
                    "description": "env keyword arguments the episodes ran with (gym.make(id, **kwargs))",
                    "required": ["batch_size", "heldout_batch_size"],
                    "additionalProperties": False,
                    "properties": {
                        "batch_size": {"type": "integer", "minimum": 1},
                        "heldout_batch_size": {"type": "integer", "minimum": 0},
                        "split": {"type": ["string", "null"]},
                        "data_dir": {"type": ["string", "null"]},
                        "backend": {"type": ["string", "null"]},
                    },
                },
            },
        },
        "package": {
            "type": "object",
            "required": ["name", "version"],
            "additionalProperties": False,
            "properties": {
                "name": {"const": "harness-gym"},
                "version": {"type": "string", "minLength": 1},
                "git_sha": {"type": ["string", "null"]},
            },
        },
        "target": {
            "type": "object",
            "required": ["model", "sampling"],
            "additionalProperties": False,
            "properties": {
                "model": {"type": "string", "minLength": 1, "description": "the env's `target` kwarg, e.g. sim or vllm:Qwen/Qwen3-8B"},
                "revision": {"type": ["string", "null"]},
                "sampling": {
                    "type": "object",
                    "required": ["temperature"],
                    "additionalProperties": False,
                    "properties": {"temperature": _NUM, "top_p": _NUM, "max_tokens": {"type": "integer", "minimum": 1}},
                },
            },
        },
        "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
        "attempts": {"type": "integer", "minimum": 1, "description": "patches scored on the batch per packet before one was submitted (1 = pass@1)"},
        "verified": {"type": "boolean", "description": "set only by `leaderboard verify --mark-verified` (maintainers' rerun)"},
        "episodes": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["seed", "batch", "batch_digest", "packet_sha256", "patch", "patch_valid", "claimed"],
                "additionalProperties": False,
                "properties": {
                    "seed": {"type": "integer", "minimum": 0},
                    "batch": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                    "batch_digest": _SHA256,
                    "packet_sha256": _SHA256,
                    "patch": {"type": "string"},
                    "patch_valid": {"type": "boolean"},
                    "claimed": {
                        "type": "object",
                        "required": ["reward", "baseline_score", "patched_score", "heldout_delta"],
                        "additionalProperties": False,
                        "properties": {"reward": _NUM, "baseline_score": _NUM, "patched_score": _NUM_OR_NULL,
                                       "heldout_delta": _NUM_OR_NULL},
                    },
                },
            },
        },
    },
}

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _check(value: Any, schema: dict[str, Any], path: str) -> str | None:
    """The first violation as one line, or None."""
    if "const" in schema and value != schema["const"]:
        return f"{path}: expected {json.dumps(schema['const'])}, got {json.dumps(value)[:60]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: expected one of {schema['enum']}, got {json.dumps(value)[:60]}"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES[t](value) for t in allowed):
            return f"{path}: expected {' or '.join(allowed)}, got {_kind(value)}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                return f"{path}: missing required field {key!r}"
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                err = _check(item, props[key], f"{path}.{key}")
                if err:
                    return err
            elif schema.get("additionalProperties") is False:
                return f"{path}: unknown field {key!r} (allowed: {', '.join(props)})"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{path}: expected at least {schema['minItems']} item(s), got {len(value)}"
        if "items" in schema:
            for i, item in enumerate(value):
                err = _check(item, schema["items"], f"{path}[{i}]")
                if err:
                    return err
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{path}: expected a string of at least {schema['minLength']} character(s), got {value!r}"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return f"{path}: expected a string matching {schema['pattern']}, got {value[:60]!r}"
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: expected >= {schema['minimum']}, got {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: expected <= {schema['maximum']}, got {value}"
    return None


def validate(data: Any) -> None:
    """Raise ``SubmissionError`` with the first schema violation, in one line."""
    err = _check(data, SCHEMA, "$")
    if err:
        raise SubmissionError(f"schema: {err}")


def schema_text() -> str:
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"
