"""The submission format (a JSON Schema, checked with ``jsonschema``) and its one-line errors.

The published file ``leaderboards/schema/submission.schema.json`` is ``schema_text()``; a
test keeps them equal. The schema checks shape only; what a leaderboard allows (split,
batch sizes, seeds, target …) is its protocol (``protocol.py``), checked by ``verify``.
A submission never carries its own ``verified`` flag: verification is a separate record
written by the maintainers' rerun (``records.py``).
"""
from __future__ import annotations

import json
import math
from typing import Any

from harness_gym.errors import HarnessGymError, one_line

FORMAT = "harness-gym-submission-v2"
OLD_FORMATS = ("harness-gym-submission-v1",)
METRICS = ("score", "success")
MAX_PATCH_CHARS = 200_000  # the env's action space
# one line of printable text: no control characters, no line/paragraph separators, no bidi overrides, no lone
# surrogates (valid JSON as "\ud800", but no UTF-8 can encode one: printing or recording it would fail)
_LINE = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff]*$"


class SubmissionError(HarnessGymError):
    """A submission file that is unreadable, breaks the schema or breaks its protocol (message: one line)."""


MAX_INT = 2 ** 53  # integers a float holds exactly
_NUM = {"type": "number"}
_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}


def _text(max_length: int, min_length: int = 0) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length, "pattern": _LINE}


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/harness-gym/harness-gym/leaderboards/schema/submission.schema.json",
    "title": "harness-gym leaderboard submission",
    "description": "One editing policy on one leaderboard (env id + target): per episode the seed, the batch the env drew "
                   "for it, the packet hash, the exact patch and the claimed numbers. `harness-gym leaderboard verify` "
                   "checks them against the table's protocol (leaderboards/protocol.json) and reruns every patch.",
    "type": "object",
    "required": ["format", "name", "policy", "env", "package", "target", "attempts", "episodes"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$",
                 "description": "equals the file name without .json"},
        "policy": {**_text(80, 1), "description": "policy name as shown in the table"},
        "description": {**_text(500), "description": "one line, shown escaped on the table's page"},
        "env": {
            "type": "object",
            "required": ["id", "kwargs"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^HarnessEdit-[A-Za-z0-9]+-v[0-9]+$"},
                "kwargs": {
                    "type": "object",
                    "description": "env keyword arguments the episodes ran with; the table's protocol fixes every value",
                    "required": ["split", "batch_size", "heldout_batch_size", "backend", "metric"],
                    "additionalProperties": False,
                    "properties": {
                        "split": {"type": "string", "pattern": "^[a-z_]{1,40}$"},
                        "batch_size": {"type": "integer", "minimum": 1},
                        "heldout_batch_size": {"type": "integer", "minimum": 0},
                        "backend": {"type": "string", "pattern": "^[a-z]{1,20}$"},
                        "metric": {"enum": list(METRICS)},
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
                "version": {"type": "string", "pattern": "^[0-9][0-9A-Za-z.+!-]{0,39}$",
                            "description": "the submitter's harness-gym version (PEP 440); verify compares it with its own"},
                "git_sha": {"type": ["string", "null"], "pattern": "^[0-9a-f]{7,40}$"},
                "addresses": {"type": ["string", "null"], "pattern": "^[0-9a-f]{16}$",
                              "description": "the object-address fingerprint of the machine that built the file "
                                             "(harness_gym.sandbox.pool.address_fingerprint); null where it randomizes "
                                             "them. Verify names it when a number does not reproduce"},
            },
        },
        "target": {
            "type": "object",
            "required": ["model", "sampling"],
            "additionalProperties": False,
            "properties": {
                "model": {"type": "string", "pattern": "^[a-z0-9_-]{1,40}$",
                          "description": "the env's `target` kwarg; with the env id, the table key (sim, smol)"},
                "sampling": {
                    "type": "object",
                    "required": ["temperature", "top_p", "max_tokens"],
                    "additionalProperties": False,
                    "properties": {"temperature": _NUM, "top_p": _NUM, "max_tokens": {"type": "integer", "minimum": 1}},
                },
            },
        },
        "attempts": {"type": "integer", "minimum": 1, "maximum": 1000,
                     "description": "patches scored on the batch per packet before one was submitted (1 = pass@1)"},
        "episodes": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {
                "type": "object",
                "required": ["seed", "batch", "batch_digest", "packet_sha256", "patch", "patch_valid", "claimed"],
                "additionalProperties": False,
                "properties": {
                    "seed": {"type": "integer", "minimum": 0},
                    "batch": {"type": "array", "items": _text(200, 1), "minItems": 1, "maxItems": 1000},
                    "batch_digest": _SHA256,
                    "packet_sha256": _SHA256,
                    "patch": {"type": "string", "maxLength": MAX_PATCH_CHARS},
                    "patch_valid": {"type": "boolean"},
                    "claimed": {
                        "type": "object",
                        "required": ["reward", "baseline_score", "patched_score", "heldout_delta"],
                        "additionalProperties": False,
                        "properties": {"reward": _NUM, "baseline_score": _NUM, "patched_score": {"type": ["number", "null"]},
                                       "heldout_delta": {"type": ["number", "null"]}},
                    },
                },
            },
        },
    },
}


def validate(data: Any) -> None:
    """Raise ``SubmissionError`` with the most relevant violation, in one line."""
    import jsonschema
    from jsonschema.exceptions import best_match

    if isinstance(data, dict) and "verified" in data:
        raise SubmissionError("$.verified: a submission may not carry its own verified flag; verification is recorded "
                              "by the maintainers' rerun in leaderboards/verified/ (remove the field)")
    if isinstance(data, dict) and data.get("format") in OLD_FORMATS:
        raise SubmissionError(f"$.format: {data['format']} predates the leaderboard protocol; expected {FORMAT} "
                              "(rebuild it with `harness-gym leaderboard submit`)")
    err = best_match(_validator()(SCHEMA).iter_errors(data))
    if err is not None:
        raise SubmissionError(one_line(f"schema: {err.json_path}: {err.message}", limit=240))


def _validator() -> Any:
    """Draft 2020-12, except that an ``integer`` is an int: JSON Schema counts ``1.0`` as one, but a
    float seed, size or count would reach ``reset()``/``range()`` as a float (or pass ``==`` with
    another type), so ``"seed": 0.0`` is a schema error like ``"seed": "0"``; and every number is
    one a float holds (magnitude up to 2**53, no NaN or infinity) so verify and render never overflow
    (``1e308`` and ``-1e308`` claims made the t-interval raise OverflowError in render).
    (A file never gets that far: ``parse_submission`` refuses them first; this covers dicts.)
    A ``pattern``'s ``$`` ends the string, as in ECMA-262, which JSON Schema patterns follow: in
    Python's ``re`` it also matches before a final newline, so ``"noop\\n"`` passed every one-line pattern."""
    import re

    import jsonschema

    def integer(_checker: Any, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_INT

    def number(_checker: Any, value: Any) -> bool:
        return integer(_checker, value) or (isinstance(value, float) and math.isfinite(value) and abs(value) <= MAX_INT)

    def pattern(validator: Any, patrn: str, instance: Any, _schema: Any) -> Any:
        ecma = patrn[:-1] + "\\Z" if patrn.endswith("$") and not patrn.endswith("\\$") else patrn
        if validator.is_type(instance, "string") and not re.search(ecma, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": integer, "number": number})
    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": pattern}, type_checker=checker)


def schema_text() -> str:
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"
