"""Static AST policy for patch hook code: an allowlist of syntax (Harness-R1 ``compile_hook`` as the floor).

Stdlib only: the sandbox worker loads this file by path, without the ``harness_gym``
package. ``check_hook_code`` returns the module's entries ``(hook point, function
name)`` or raises ``PolicyViolation`` with a one-line reason that names the line and
the construct ("line 4: match statements are not allowed in hooks").

Every ``ast`` node class is classified in ``NODE_POLICY``: allowed (then checked by
``_check_node``) or rejected with a reason; a class the table does not know is rejected,
so syntax added by a future Python is closed until someone classifies it (and
tests/test_policy.py fails until they do). The rule behind the table: no name that
starts with ``_`` can be reached by any syntax. Names reach objects through identifiers,
attributes, call keywords, import aliases, patterns and format templates, so

- identifiers, attributes, keywords, arguments and except aliases may not start with
  ``_``; ``**`` in a call (keyword names the AST cannot see) is rejected;
- ``match`` is rejected outright: class patterns read attributes by name
  (``case C(attr=x)``, ``__match_args__``) and mapping patterns look keys up on arbitrary
  objects, and nothing a hook does needs more than ``if``/``elif``;
- ``str.format`` is allowed only on a literal template without attribute or index
  fields, and ``format_map`` not at all (templates are strings the AST cannot see into);
  f-string format specs are plain expressions handed to ``format()``, which reads no
  attributes, so they are allowed;
- attributes that reach interpreter internals without an underscore are rejected: frames,
  code, generator/coroutine and traceback attributes (``gi_``, ``cr_``, ``ag_``, ``f_``,
  ``tb_``, ``co_`` prefixes) and ``mro``; getters that turn a string into an attribute
  (``getattr``, ``attrgetter``, ``methodcaller``, ``vars``, ``dir``, ``type``…) are not
  available under any name;
- attribute assignment is rejected (hooks keep state in ``nb``; state on functions or
  shared classes would leak across episodes and patches), and for the same reason hooks
  get ``SequenceMatcher`` as a constructor, not the class whose unbound methods set
  attributes on any object.

Python normalizes identifiers with NFKC before the AST exists, so ``ｏｐｅｎ`` and
``_﹍class__`` are checked as ``open`` and ``__class__``.
"""
from __future__ import annotations

import ast
import math
import re
from difflib import SequenceMatcher
from typing import Any, Iterable, Iterator

HOOK_POINTS = ("on_init", "make_pre_hint", "on_before_action", "on_post_step")
BENCHMARKS = ("dbbench", "webshop", "alfworld")
STYLES = ("harness_r1", "module")

SAFE_BUILTIN_NAMES = (
    "abs", "all", "any", "bool", "dict", "enumerate", "Exception", "filter", "float",
    "int", "isinstance", "len", "list", "map", "max", "min", "range", "reversed",
    "round", "set", "sorted", "str", "sum", "tuple", "zip",
)
SAFE_MODULE_NAMES = ("math", "re", "SequenceMatcher")
# Harness-R1's list: rejected as names, attributes, helper and argument names.
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "type", "dir",
    "vars", "globals", "locals", "object", "super", "property", "classmethod",
    "staticmethod", "input", "help", "exit", "quit", "breakpoint", "memoryview",
    "__import__",
})
# Attributes that reach the class hierarchy without a leading "_", or turn a string into
# an attribute lookup (none is reachable today; named so a future object cannot add one).
FORBIDDEN_ATTRS = frozenset({"mro", "format_map", "attrgetter", "methodcaller", "hasattr"})
FORBIDDEN_ATTR_PREFIXES = ("gi_", "cr_", "ag_", "f_", "tb_", "co_")

_ABSTRACT = "abstract AST base classes (ast.parse never produces one)"
_DEPRECATED = "deprecated AST classes (ast.parse produces Constant/Subscript instead)"
_TOP = "parser roots of other modes (hooks are parsed as a module)"
# Every ast node class by name: None = allowed (with the checks in _check_node), else the
# reason, phrased to read "line N: <reason> are not allowed in hooks (<hint>)".
NODE_POLICY: dict[str, str | None] = {
    # roots
    "Module": None, "Interactive": _TOP, "Expression": _TOP, "FunctionType": _TOP, "Suite": _DEPRECATED,
    # statements
    "FunctionDef": None, "Return": None, "Assign": None, "AugAssign": None, "For": None, "If": None,
    "Try": None, "Expr": None, "Pass": None, "Break": None, "Continue": None, "Assert": None,
    "AsyncFunctionDef": "async def functions", "ClassDef": "class definitions", "Delete": "del statements",
    "AnnAssign": "annotated assignments (annotations)", "AsyncFor": "async for loops",
    "While": "while loops (use for over a range)", "With": "with statements",
    "AsyncWith": "async with statements",
    "Match": "match statements (class and mapping patterns read attributes by name; use if/elif)",
    "Raise": "raise statements", "TryStar": "except* handlers", "Import": "import statements",
    "ImportFrom": "import statements", "Global": "global statements", "Nonlocal": "nonlocal statements",
    "TypeAlias": "type alias statements",
    # expressions
    "BoolOp": None, "NamedExpr": None, "BinOp": None, "UnaryOp": None, "IfExp": None, "Dict": None,
    "Set": None, "ListComp": None, "SetComp": None, "DictComp": None, "GeneratorExp": None,
    "Compare": None, "Call": None, "FormattedValue": None, "JoinedStr": None, "Constant": None,
    "Attribute": None, "Subscript": None, "Starred": None, "Name": None, "List": None, "Tuple": None,
    "Slice": None,
    "Lambda": "lambda expressions", "Await": "await expressions", "Yield": "yield expressions",
    "YieldFrom": "yield from expressions", "TemplateStr": "template strings (t-strings)",
    "Interpolation": "template strings (t-strings)",
    "Num": _DEPRECATED, "Str": _DEPRECATED, "Bytes": _DEPRECATED, "NameConstant": _DEPRECATED,
    "Ellipsis": _DEPRECATED, "Index": _DEPRECATED, "ExtSlice": _DEPRECATED,
    # contexts
    "Load": None, "Store": None, "Del": "del statements", "AugLoad": _DEPRECATED, "AugStore": _DEPRECATED,
    "Param": _DEPRECATED,
    # operators
    "And": None, "Or": None, "Add": None, "Sub": None, "Mult": None, "MatMult": None, "Div": None,
    "Mod": None, "Pow": None, "LShift": None, "RShift": None, "BitOr": None, "BitXor": None,
    "BitAnd": None, "FloorDiv": None, "Invert": None, "Not": None, "UAdd": None, "USub": None,
    "Eq": None, "NotEq": None, "Lt": None, "LtE": None, "Gt": None, "GtE": None, "Is": None,
    "IsNot": None, "In": None, "NotIn": None,
    # parts of other nodes
    "comprehension": None, "ExceptHandler": None, "arguments": None, "arg": None, "keyword": None,
    "alias": "import statements", "withitem": "with statements",
    "match_case": "match statements (use if/elif)", "MatchValue": "match patterns",
    "MatchSingleton": "match patterns", "MatchSequence": "match patterns",
    "MatchMapping": "match mapping patterns (they look keys up by name)",
    "MatchClass": "match class patterns (they read attributes by name)", "MatchStar": "match patterns",
    "MatchAs": "match patterns", "MatchOr": "match patterns", "TypeIgnore": "type: ignore comments",
    "TypeVar": "type parameters", "ParamSpec": "type parameters", "TypeVarTuple": "type parameters",
    # abstract bases
    "AST": _ABSTRACT, "mod": _ABSTRACT, "stmt": _ABSTRACT, "expr": _ABSTRACT, "expr_context": _ABSTRACT,
    "boolop": _ABSTRACT, "operator": _ABSTRACT, "unaryop": _ABSTRACT, "cmpop": _ABSTRACT,
    "excepthandler": _ABSTRACT, "pattern": _ABSTRACT, "type_ignore": _ABSTRACT, "type_param": _ABSTRACT,
    "slice": _ABSTRACT,
}

ALFWORLD_VERBS = r"go to|take|pick up|put|open|close|toggle|clean|heat|cool|slice|examine|use"
# Harness-R1's definition: a verb followed, later on the same line, by a standalone number
# ("go to shelf 1"). Callers use ``instance_action``, the same match in linear time
# (tests/test_policy.py compares the two).
ALFWORLD_INSTANCE_ACTION_RE = re.compile(rf"\b(?:{ALFWORLD_VERBS})\b.*\b\d+\b", re.IGNORECASE)
_VERB_RE = re.compile(rf"\b(?:{ALFWORLD_VERBS})\b", re.IGNORECASE)
_NUMBER_RE = re.compile(r"\b\d+\b")

MAX_CODE_CHARS = 8000
MAX_AST_NODES = 1200
MAX_STR_CHARS = 700
MAX_HELPERS = 5


class PolicyViolation(ValueError):
    """Hook code breaks the sandbox policy; the message is one line."""


def instance_action(text: str) -> str | None:
    """What ``ALFWORLD_INSTANCE_ACTION_RE.search`` would match in ``text``, or None, in linear time.

    The regex tries ``.*`` from every verb, which is quadratic on a long line of verbs; here
    each line is scanned once: its first verb, then the last standalone number after it.
    """
    for line in text.split("\n"):
        verb = _VERB_RE.search(line)
        if verb is None:
            continue
        last = None
        for last in _NUMBER_RE.finditer(line, verb.end()):
            pass
        if last is not None:
            return line[verb.start():last.end()]
    return None


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

def _sequence_matcher(isjunk: Any = None, a: Any = "", b: Any = "", autojunk: bool = True) -> SequenceMatcher:
    """``difflib.SequenceMatcher(isjunk, a, b, autojunk)``: hooks get this factory, not the class.

    The class's unbound methods (``SequenceMatcher.set_seq1(obj, x)``) set attributes on
    any object, hook functions and the shared class itself included: state that would
    outlive an episode. Instances only ever change themselves.
    """
    return SequenceMatcher(isjunk, a, b, autojunk)


SAFE_BUILTINS: dict[str, Any] = _safe_builtins()
SAFE_MODULES: dict[str, Any] = {
    # Proxies, not the modules: the real ``re`` exposes ``re.enum.sys`` and the like.
    "math": _ReadOnlyNamespace({k: getattr(math, k) for k in dir(math) if not k.startswith("_")}),
    "re": _ReadOnlyNamespace({k: getattr(re, k) for k in _RE_PUBLIC}),
    "SequenceMatcher": _sequence_matcher,
}
RESERVED_NAMES = frozenset(SAFE_BUILTIN_NAMES) | frozenset(SAFE_MODULE_NAMES) | {"hook"}


def hook_globals() -> dict[str, Any]:
    """A fresh globals dict for executing checked hook code: the allowlisted builtins and modules only."""
    return {"__builtins__": dict(SAFE_BUILTINS), **SAFE_MODULES}


def attribute_allowed(name: str) -> bool:
    """Whether hook code may read attribute ``name`` (the same rule the checker applies)."""
    return not (name.startswith("_") or name in FORBIDDEN_NAMES or name in FORBIDDEN_ATTRS
                or name.startswith(FORBIDDEN_ATTR_PREFIXES))


def _fail(line: int | None, reason: str) -> PolicyViolation:
    where = f"line {line}: " if line else ""
    return PolicyViolation(" ".join(f"{where}{reason}".split()))


def _line(node: ast.AST | None) -> int | None:
    return getattr(node, "lineno", None)


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
            reason = NODE_POLICY.get(type(node).__name__)
            if reason:
                raise _fail(_line(node), _not_allowed(reason))
            raise _fail(_line(node), "hook code may contain only top-level function definitions")
    funcs: list[ast.FunctionDef] = body  # type: ignore[assignment]
    entries = _check_functions(funcs, style, point)
    nodes = list(_walk(tree))
    if len(nodes) > MAX_AST_NODES:
        raise PolicyViolation(f"hook code has {len(nodes)} AST nodes, over the {MAX_AST_NODES} limit; simplify it")
    top = {id(f) for f in funcs}
    for sub, line in nodes:
        _check_node(sub, line, top, benchmark)
    return entries


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, int | None]]:
    """Every node with its line (a node without one, e.g. an operator, takes its parent's)."""
    stack: list[tuple[ast.AST, int | None]] = [(tree, None)]
    while stack:
        node, line = stack.pop()
        line = getattr(node, "lineno", None) or line
        yield node, line
        stack.extend((child, line) for child in reversed(list(ast.iter_child_nodes(node))))


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
        raise _fail(helpers[MAX_HELPERS].lineno, f"at most {MAX_HELPERS} helper functions are allowed; found {len(helpers)}")
    seen: set[str] = set()
    for f in funcs:
        if f.name in seen:
            raise _fail(f.lineno, f"function {f.name!r} is defined twice")
        seen.add(f.name)
    for f in helpers:
        if f.name.startswith("_") or f.name in FORBIDDEN_NAMES:
            raise _fail(f.lineno, f"helper function uses forbidden name {f.name!r}")
        if f.name in RESERVED_NAMES or (style == "module" and f.name in HOOK_POINTS):
            raise _fail(f.lineno, f"helper function {f.name!r} shadows a reserved name; rename it")
    for f in entry_funcs:
        _check_signature(f, entry=True)
    for f in helpers:
        _check_signature(f, entry=False)
    return entries


def _check_signature(func: ast.FunctionDef, *, entry: bool) -> None:
    if func.decorator_list:
        raise _fail(func.lineno, f"decorators are not allowed (on {func.name!r})")
    if func.returns is not None:
        raise _fail(func.lineno, f"annotations are not allowed (return of {func.name!r})")
    a = func.args
    if entry:
        plain = not (a.posonlyargs or a.vararg or a.kwonlyargs or a.kw_defaults or a.kwarg or a.defaults)
        if not plain or [x.arg for x in a.args] != ["ctx", "nb"]:
            raise _fail(func.lineno, f"{func.name} must be defined exactly as {func.name}(ctx, nb)")
    every = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    every += [x for x in (a.vararg, a.kwarg) if x is not None]
    seen: set[str] = set()
    for arg in every:
        if arg.arg in seen:
            raise _fail(func.lineno, f"duplicate argument name {arg.arg!r}")
        seen.add(arg.arg)
        if arg.arg.startswith("_") or arg.arg in FORBIDDEN_NAMES:
            raise _fail(func.lineno, f"argument uses forbidden name {arg.arg!r}")
        if arg.annotation is not None:
            raise _fail(func.lineno, f"annotations are not allowed (argument {arg.arg!r})")
    for default in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
        ok = isinstance(default, ast.Constant) and isinstance(default.value, (str, int, float, bool, type(None)))
        if not ok:
            raise _fail(_line(default), f"helper defaults must be scalar constants (in {func.name!r})")


def _check_node(node: ast.AST, line: int | None, top: set[int], benchmark: str) -> None:
    name = type(node).__name__
    if name not in NODE_POLICY:
        raise _fail(line, f"{name} syntax is not allowed in hooks (not classified by the sandbox policy)")
    reason = NODE_POLICY[name]
    if reason is not None:
        raise _fail(line, _not_allowed(reason))
    if isinstance(node, ast.FunctionDef):
        if id(node) not in top:
            raise _fail(line, "nested functions are not allowed in hooks; define a top-level helper")
    elif isinstance(node, ast.comprehension):
        if node.is_async:
            raise _fail(line, "async for comprehensions are not allowed in hooks")
    elif isinstance(node, ast.Try):
        _check_try(node)
    elif isinstance(node, ast.Name):
        if node.id.startswith("_") or node.id in FORBIDDEN_NAMES:
            raise _fail(line, f"forbidden name {node.id!r}")
    elif isinstance(node, ast.Attribute):
        _check_attribute(node, line)
    elif isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg is None:
                raise _fail(_line(kw) or line, "** unpacking in a call is not allowed in hooks (keyword names the policy cannot see); pass keywords by name")
    elif isinstance(node, ast.keyword):
        if _keyword_bad(node.arg):
            raise _fail(line, f"forbidden keyword name {node.arg!r}")
    elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        if len(node.value) > MAX_STR_CHARS:
            raise _fail(line, f"string literal has {len(node.value)} chars, over the {MAX_STR_CHARS} limit")
        if benchmark == "alfworld" and isinstance(node.value, str) and instance_action(" ".join(node.value.lower().split())):
            raise _fail(line, "hook must not hard-code numbered ALFWorld instance actions (e.g. 'go to shelf 1')")
    elif isinstance(node, ast.arg):
        if node.arg.startswith("_") or node.arg in FORBIDDEN_NAMES:
            raise _fail(line, f"forbidden name {node.arg!r}")


def _not_allowed(reason: str) -> str:
    """``"while loops (use for)"`` -> ``"while loops are not allowed in hooks (use for)"``."""
    label, paren, hint = reason.partition(" (")
    return f"{label} are not allowed in hooks" + (f" ({hint}" if paren else "")


def _keyword_bad(arg: str | None) -> bool:
    """A call keyword that names something a hook may not reach (``_``-names, forbidden names)."""
    return arg is not None and (arg.startswith("_") or arg in FORBIDDEN_NAMES)


def _check_try(node: ast.Try) -> None:
    if node.orelse or node.finalbody:
        raise _fail(node.lineno, "try may not use else or finally")
    if not node.handlers:
        raise _fail(node.lineno, "try must catch Exception explicitly")
    for h in node.handlers:
        if not (isinstance(h.type, ast.Name) and h.type.id == "Exception"):
            raise _fail(h.lineno, "try may only use 'except Exception'")
        if h.name and (h.name.startswith("_") or h.name in FORBIDDEN_NAMES):
            raise _fail(h.lineno, f"exception alias uses forbidden name {h.name!r}")


def _check_attribute(node: ast.Attribute, line: int | None) -> None:
    attr = node.attr
    if not attribute_allowed(attr):
        raise _fail(line, f"forbidden attribute {attr!r}")
    if not isinstance(node.ctx, ast.Load):
        raise _fail(line, f"attribute assignment is not allowed ({attr!r}); keep state in nb")
    if attr == "format":
        template = node.value
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            raise _fail(line, "'.format' is allowed only on a string literal; use an f-string")
        problem = _format_template_problem(template.value)
        if problem:
            raise _fail(line, f"format template {problem}; use an f-string")


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
