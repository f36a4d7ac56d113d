"""Static AST policy for patch hook code (Harness-R1 ``compile_hook`` as the floor).

Stdlib only: the sandbox worker loads this file by path, without the ``harness_gym``
package. ``check_hook_code`` returns the module's entries ``(hook point, function
name)`` or raises ``PolicyViolation`` with a one-line reason that names the line.

Beyond Harness-R1 we also reject, because the AST cannot see inside format strings or
because they lead to interpreter internals without an underscore:
``.format``/``.format_map`` on anything but a literal template without attribute or
index fields, frame/generator/traceback attributes, ``mro``, and attribute assignment
(hooks keep state in ``nb``; state on functions or modules would leak across episodes).
"""
from __future__ import annotations

import ast
import math
import re
from difflib import SequenceMatcher
from typing import Any, Iterable

HOOK_POINTS = ("on_init", "make_pre_hint", "on_before_action", "on_post_step")
BENCHMARKS = ("dbbench", "webshop", "alfworld")
STYLES = ("harness_r1", "module")

SAFE_BUILTIN_NAMES = (
    "abs", "all", "any", "bool", "dict", "enumerate", "Exception", "filter", "float",
    "int", "isinstance", "len", "list", "map", "max", "min", "range", "reversed",
    "round", "set", "sorted", "str", "sum", "tuple", "zip",
)
SAFE_MODULE_NAMES = ("math", "re", "SequenceMatcher")
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "type", "dir",
    "vars", "globals", "locals", "object", "super", "property", "classmethod",
    "staticmethod", "input", "help", "exit", "quit", "breakpoint", "memoryview",
    "__import__",
})
# Attributes that reach frames, code objects or the class hierarchy without a leading "_".
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code",
    "cr_await", "ag_frame", "ag_code", "f_back", "f_globals", "f_locals", "f_builtins",
    "f_code", "f_trace", "tb_frame", "tb_next", "mro", "format_map",
})
FORBIDDEN_NODES: dict[type, str] = {
    ast.AsyncFunctionDef: "async def", ast.Await: "await", ast.ClassDef: "class",
    ast.Delete: "del", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.Import: "import", ast.ImportFrom: "import", ast.Lambda: "lambda",
    ast.Raise: "raise", ast.With: "with", ast.AsyncWith: "async with",
    ast.While: "while", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.AsyncFor: "async for",
}
ALFWORLD_INSTANCE_ACTION_RE = re.compile(
    r"\b(?:go to|take|pick up|put|open|close|toggle|clean|heat|cool|slice|examine|use)\b.*\b\d+\b",
    re.IGNORECASE,
)

MAX_CODE_CHARS = 8000
MAX_AST_NODES = 1200
MAX_STR_CHARS = 700
MAX_HELPERS = 5


class PolicyViolation(ValueError):
    """Hook code breaks the sandbox policy; the message is one line."""


def parse_python(code: str) -> ast.Module:
    """``ast.parse`` without SyntaxWarning/DeprecationWarning noise (e.g. odd escapes)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code)


def _safe_builtins() -> dict[str, Any]:
    import builtins

    return {name: getattr(builtins, name) for name in SAFE_BUILTIN_NAMES}


class _ReadOnlyNamespace:
    """A frozen stand-in for a module: only the listed public names, no module internals."""

    __slots__ = ("_names",)

    def __init__(self, names: dict[str, Any]) -> None:
        object.__setattr__(self, "_names", dict(names))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("read-only namespace")

    def __repr__(self) -> str:
        return "<namespace>"


_RE_PUBLIC = (
    "compile", "escape", "findall", "finditer", "fullmatch", "match", "search", "split",
    "sub", "subn", "error", "A", "ASCII", "I", "IGNORECASE", "M", "MULTILINE", "S",
    "DOTALL", "X", "VERBOSE", "Pattern", "Match",
)

SAFE_BUILTINS: dict[str, Any] = _safe_builtins()
SAFE_MODULES: dict[str, Any] = {
    # Proxies, not the modules: the real ``re`` exposes ``re.enum.sys`` and the like.
    "math": _ReadOnlyNamespace({k: getattr(math, k) for k in dir(math) if not k.startswith("_")}),
    "re": _ReadOnlyNamespace({k: getattr(re, k) for k in _RE_PUBLIC}),
    "SequenceMatcher": SequenceMatcher,
}
RESERVED_NAMES = frozenset(SAFE_BUILTIN_NAMES) | frozenset(SAFE_MODULE_NAMES) | {"hook"}


def hook_globals() -> dict[str, Any]:
    """A fresh globals dict for executing checked hook code."""
    return {"__builtins__": dict(SAFE_BUILTINS), **SAFE_MODULES}


def _fail(node: ast.AST | None, reason: str) -> PolicyViolation:
    line = getattr(node, "lineno", None)
    where = f"line {line}: " if line else ""
    return PolicyViolation(" ".join(f"{where}{reason}".split()))


def check_hook_code(
    code: str, benchmark: str, *, style: str = "harness_r1", point: str = ""
) -> list[tuple[str, str]]:
    """Check hook code against the policy; return its ``(point, function)`` entries.

    ``style="harness_r1"``: exactly one ``hook(ctx, nb)`` (its point is decided by the
    caller and passed as ``point``: the entry reads ``(point, "hook")``) plus at most 5
    helpers.
    ``style="module"``: one or more functions named like a hook point, each ``(ctx, nb)``.
    """
    if style not in STYLES:
        raise PolicyViolation(f"unknown policy style {style!r}; expected one of {STYLES}")
    if not isinstance(code, str) or not code.strip():
        raise PolicyViolation("hook code must be a non-empty string")
    if len(code) > MAX_CODE_CHARS:
        raise PolicyViolation(f"hook code has {len(code)} chars, over the {MAX_CODE_CHARS} limit; shorten it")
    if "\x00" in code:
        raise PolicyViolation("hook code contains a NUL byte")
    try:
        tree = parse_python(code)
    except SyntaxError as exc:
        raise PolicyViolation(f"line {exc.lineno}: invalid Python syntax: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise PolicyViolation(f"hook code cannot be parsed: {type(exc).__name__}") from None
    body = list(tree.body)
    if style == "module" and body and _is_docstring(body[0]):
        body = body[1:]
    for node in body:
        if not isinstance(node, ast.FunctionDef):
            label = FORBIDDEN_NODES.get(type(node))
            raise _fail(node, f"forbidden syntax: {label}" if label else "hook code may contain only top-level function definitions")
    funcs: list[ast.FunctionDef] = body  # type: ignore[assignment]
    entries = _check_functions(funcs, style, point)
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_AST_NODES:
        raise PolicyViolation(f"hook code has {len(nodes)} AST nodes, over the {MAX_AST_NODES} limit; simplify it")
    top = {id(f) for f in funcs}
    for sub in nodes:
        _check_node(sub, top, benchmark)
    return entries


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _check_functions(funcs: list[ast.FunctionDef], style: str, point: str) -> list[tuple[str, str]]:
    if style == "harness_r1":
        hooks = [f for f in funcs if f.name == "hook"]
        if len(hooks) != 1:
            raise PolicyViolation(f"hook code must define exactly one top-level hook(ctx, nb); found {len(hooks)}")
        entry_funcs, helpers = hooks, [f for f in funcs if f.name != "hook"]
        entries = [(point, "hook")]
    else:
        entry_funcs = [f for f in funcs if f.name in HOOK_POINTS]
        if not entry_funcs:
            raise PolicyViolation(f"hook module must define at least one function named {' / '.join(HOOK_POINTS)}")
        helpers = [f for f in funcs if f.name not in HOOK_POINTS]
        entries = [(f.name, f.name) for f in entry_funcs]
    if len(helpers) > MAX_HELPERS:
        raise _fail(helpers[MAX_HELPERS], f"at most {MAX_HELPERS} helper functions are allowed; found {len(helpers)}")
    seen: set[str] = set()
    for f in funcs:
        if f.name in seen:
            raise _fail(f, f"function {f.name!r} is defined twice")
        seen.add(f.name)
    for f in helpers:
        if f.name.startswith("_") or f.name in FORBIDDEN_NAMES:
            raise _fail(f, f"helper function uses forbidden name {f.name!r}")
        if f.name in RESERVED_NAMES or (style == "module" and f.name in HOOK_POINTS):
            raise _fail(f, f"helper function {f.name!r} shadows a reserved name; rename it")
    for f in entry_funcs:
        _check_signature(f, entry=True)
    for f in helpers:
        _check_signature(f, entry=False)
    return entries


def _check_signature(func: ast.FunctionDef, *, entry: bool) -> None:
    if func.decorator_list:
        raise _fail(func, f"decorators are not allowed (on {func.name!r})")
    if func.returns is not None:
        raise _fail(func, f"annotations are not allowed (return of {func.name!r})")
    a = func.args
    if entry:
        plain = not (a.posonlyargs or a.vararg or a.kwonlyargs or a.kw_defaults or a.kwarg or a.defaults)
        if not plain or [x.arg for x in a.args] != ["ctx", "nb"]:
            raise _fail(func, f"{func.name} must be defined exactly as {func.name}(ctx, nb)")
    every = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    every += [x for x in (a.vararg, a.kwarg) if x is not None]
    seen: set[str] = set()
    for arg in every:
        if arg.arg in seen:
            raise _fail(func, f"duplicate argument name {arg.arg!r}")
        seen.add(arg.arg)
        if arg.arg.startswith("_") or arg.arg in FORBIDDEN_NAMES:
            raise _fail(func, f"argument uses forbidden name {arg.arg!r}")
        if arg.annotation is not None:
            raise _fail(func, f"annotations are not allowed (argument {arg.arg!r})")
    for default in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
        ok = isinstance(default, ast.Constant) and isinstance(default.value, (str, int, float, bool, type(None)))
        if not ok:
            raise _fail(default, f"helper defaults must be scalar constants (in {func.name!r})")


def _check_node(node: ast.AST, top: set[int], benchmark: str) -> None:
    for kind, label in FORBIDDEN_NODES.items():
        if isinstance(node, kind):
            raise _fail(node, f"forbidden syntax: {label}")
    if isinstance(node, ast.comprehension) and node.is_async:
        raise _fail(node.target, "forbidden syntax: async for")
    if isinstance(node, ast.FunctionDef) and id(node) not in top:
        raise _fail(node, "nested functions are not allowed")
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        _check_try(node)  # type: ignore[arg-type]
    elif isinstance(node, ast.Name):
        if node.id.startswith("_") or node.id in FORBIDDEN_NAMES:
            raise _fail(node, f"forbidden name {node.id!r}")
    elif isinstance(node, ast.Attribute):
        _check_attribute(node)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        if len(node.value) > MAX_STR_CHARS:
            raise _fail(node, f"string literal has {len(node.value)} chars, over the {MAX_STR_CHARS} limit")
        if benchmark == "alfworld" and ALFWORLD_INSTANCE_ACTION_RE.search(" ".join(node.value.lower().split())):
            raise _fail(node, "hook must not hard-code numbered ALFWorld instance actions (e.g. 'go to shelf 1')")
    elif isinstance(node, ast.arg) and (node.arg.startswith("_") or node.arg in FORBIDDEN_NAMES):
        raise _fail(node, f"forbidden name {node.arg!r}")


def _check_try(node: ast.Try) -> None:
    if type(node).__name__ == "TryStar":
        raise _fail(node, "forbidden syntax: except*")
    if node.orelse or node.finalbody:
        raise _fail(node, "try may not use else or finally")
    if not node.handlers:
        raise _fail(node, "try must catch Exception explicitly")
    for h in node.handlers:
        if not (isinstance(h.type, ast.Name) and h.type.id == "Exception"):
            raise _fail(h, "try may only use 'except Exception'")
        if h.name and (h.name.startswith("_") or h.name in FORBIDDEN_NAMES):
            raise _fail(h, f"exception alias uses forbidden name {h.name!r}")


def _check_attribute(node: ast.Attribute) -> None:
    attr = node.attr
    if attr.startswith("_") or attr in FORBIDDEN_NAMES or attr in FORBIDDEN_ATTRS:
        raise _fail(node, f"forbidden attribute {attr!r}")
    if not isinstance(node.ctx, ast.Load):
        raise _fail(node, f"attribute assignment is not allowed ({attr!r}); keep state in nb")
    if attr == "format":
        template = node.value
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            raise _fail(node, "'.format' is allowed only on a string literal; use an f-string")
        problem = _format_template_problem(template.value)
        if problem:
            raise _fail(node, f"format template {problem}; use an f-string")


def _format_template_problem(template: str, depth: int = 0) -> str | None:
    """Why a ``str.format`` template is unsafe (attribute/index fields), or None."""
    import string

    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"is malformed ({exc})"
    for _, name, spec, _ in fields:
        if name is not None and ("." in name or "[" in name):
            return f"reads an attribute or index ({{{name}}})"
        if spec and depth < 2:
            nested = _format_template_problem(spec, depth + 1)
            if nested:
                return nested
    return None


def string_literals(code: str) -> Iterable[tuple[int, str]]:
    """``(line, text)`` of every string literal in parseable code (for leakage scans)."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [(getattr(n, "lineno", 0), n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def defines_hook(code: str) -> bool:
    """Whether parseable code has a top-level ``def hook``."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == "hook" for n in tree.body)


def module_entry_names(code: str) -> list[str]:
    """Top-level function names of parseable code that are hook points, in source order."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in HOOK_POINTS]
