"""The static AST policy for hook code (Harness-R1 ``compile_hook`` as the floor)."""
from __future__ import annotations

import math
import re
from difflib import SequenceMatcher
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_gym.harness.policy import (
    HOOK_POINTS,
    NODE_POLICY,
    SAFE_BUILTIN_NAMES,
    SAFE_BUILTINS,
    SAFE_MODULES,
    PolicyViolation,
    check_hook_code,
)

GOOD_R1 = '''
def norm(text, limit=80):
    return " ".join(str(text).lower().split())[:limit]

def hook(ctx, nb):
    try:
        q = norm(ctx.action.query)
    except Exception as exc:
        return None
    if re.search(r"\\border by\\b", q) and ctx.predicates.last_result_empty:
        nb["hints"] = nb.get("hints", 0) + 1
        return {"type": "inject_hint", "message": f"Checked {len(q)} chars; try CAST."}
    return {"kind": "block_and_prompt", "message": "Use {} first".format("SELECT")} if math.floor(1.5) else None
'''

GOOD_MODULE = '''"""Stage tracker."""

def stage(ctx):
    return "start" if not ctx.get("step") else "mid"

def on_post_step(ctx, nb):
    nb["stage"] = stage(ctx)

def make_pre_hint(ctx, nb):
    if SequenceMatcher(None, "a", "b").ratio() < 0.5:
        return {"message": "stage " + nb.get("stage", "?")}
'''


def test_good_harness_r1_hook_passes_and_returns_entry() -> None:
    assert check_hook_code(GOOD_R1, "dbbench", style="harness_r1", point="on_post_step") == [("on_post_step", "hook")]


def test_good_module_passes_with_entries_in_source_order() -> None:
    assert check_hook_code(GOOD_MODULE, "webshop", style="module") == [
        ("on_post_step", "on_post_step"),
        ("make_pre_hint", "make_pre_hint"),
    ]


def hook_with(body: str) -> str:
    return "def hook(ctx, nb):\n" + "".join(f"    {line}\n" for line in body.splitlines())


REJECTED = {
    # forbidden syntax
    "import": (hook_with("import os\nreturn None"), "import"),
    "from_import": (hook_with("from os import path\nreturn None"), "import"),
    "lambda": (hook_with("f = lambda x: x\nreturn f(1)"), "lambda"),
    "while": (hook_with("while True:\n    pass"), "while"),
    "class": ("class A:\n    pass\n" + hook_with("return None"), "class"),
    "class_inside": (hook_with("class A:\n    pass"), "class"),
    "global": (hook_with("global x\nreturn None"), "global"),
    "nonlocal_nested": (hook_with("def inner():\n    return 1\nreturn inner()"), "nested"),
    "raise": (hook_with("raise ValueError('x')"), "raise"),
    "with": (hook_with("with ctx as c:\n    pass"), "with"),
    "yield": (hook_with("yield 1"), "yield"),
    "del": (hook_with("del nb['x']"), "del"),
    "async": ("async def hook(ctx, nb):\n    return None\n", "async def"),
    "await_inside": (hook_with("return [x async for x in ctx]"), "async"),
    # names and attributes
    "dunder_subclasses": (hook_with("return ().__class__.__bases__[0].__subclasses__()"), "forbidden attribute"),
    "dunder_globals": (hook_with("return norm.__globals__"), "forbidden attribute"),
    "underscore_name": (hook_with("_x = 1\nreturn _x"), "forbidden name"),
    "getattr": (hook_with("return getattr(ctx, 'x')"), "getattr"),
    "eval": (hook_with("return eval('1')"), "eval"),
    "open": (hook_with("return open('/etc/passwd').read()"), "open"),
    "type": (hook_with("return type(ctx)"), "type"),
    "import_builtin": (hook_with("return __import__('os')"), "forbidden name"),
    "gi_frame": (hook_with("g = (i for i in [1])\nreturn g.gi_frame"), "gi_frame"),
    "f_back": (hook_with("g = (i for i in [1])\nreturn g.gi_frame.f_back"), "forbidden attribute"),
    "mro": (hook_with("return str.mro()"), "mro"),
    "attribute_assignment": (hook_with("re.match = 1\nreturn None"), "attribute assignment"),
    # format-string attribute tricks
    "format_attr": (hook_with("return '{0.__class__}'.format(ctx)"), "format template"),
    "format_index": (hook_with("return '{0[x]}'.format(ctx)"), "format template"),
    "format_dot_only": (hook_with("return '{.real}'.format(1)"), "format template"),
    "format_nested_spec": (hook_with("return '{:{0.real}}'.format(1)"), "format template"),
    "format_malformed": (hook_with("return '{0'.format(1)"), "malformed"),
    "format_on_variable": (hook_with("t = '{0}'\nreturn t.format(ctx)"), "string literal"),
    "str_format_unbound": (hook_with("return str.format('{0}', ctx)"), "string literal"),
    "format_map": (hook_with("return '{a}'.format_map(ctx)"), "format_map"),
    "fstring_then_format": (hook_with("return f'{{0.x}}'.format(ctx)"), "string literal"),
    # try
    "bare_except": (hook_with("try:\n    x = 1\nexcept:\n    x = 2\nreturn x"), "except Exception"),
    "except_base": (hook_with("try:\n    x = 1\nexcept BaseException:\n    x = 2\nreturn x"), "except Exception"),
    "try_finally": (hook_with("try:\n    x = 1\nexcept Exception:\n    x = 2\nfinally:\n    x = 3\nreturn x"), "else or finally"),
    "try_else": (hook_with("try:\n    x = 1\nexcept Exception:\n    x = 2\nelse:\n    x = 3\nreturn x"), "else or finally"),
    # structure
    "two_hooks": (hook_with("return 1") + hook_with("return 2"), "exactly one"),
    "no_hook": ("def helper(ctx, nb):\n    return 1\n", "exactly one"),
    "top_level_statement": ("x = 1\n" + hook_with("return x"), "top-level function"),
    "wrong_signature": ("def hook(ctx):\n    return 1\n", "hook(ctx, nb)"),
    "kw_signature": ("def hook(ctx, nb, extra=1):\n    return 1\n", "hook(ctx, nb)"),
    "varargs": ("def hook(ctx, *nb):\n    return 1\n", "hook(ctx, nb)"),
    "decorator": ("@staticmethod\ndef hook(ctx, nb):\n    return 1\n", "decorators"),
    "annotation": ("def hook(ctx: dict, nb):\n    return 1\n", "annotations"),
    "return_annotation": ("def hook(ctx, nb) -> dict:\n    return 1\n", "annotations"),
    "helper_annotation": ("def h(x: int):\n    return x\n" + hook_with("return h(1)"), "annotations"),
    "too_many_helpers": ("".join(f"def h{i}(x):\n    return x\n" for i in range(6)) + hook_with("return 1"), "at most 5"),
    "helper_underscore": ("def _h(x):\n    return x\n" + hook_with("return 1"), "forbidden name"),
    "helper_shadows_builtin": ("def len(x):\n    return 0\n" + hook_with("return 1"), "shadows"),
    "helper_shadows_re": ("def re(x):\n    return 0\n" + hook_with("return 1"), "shadows"),
    "helper_forbidden": ("def eval(x):\n    return 0\n" + hook_with("return 1"), "forbidden name"),
    "duplicate_helper": ("def h(x):\n    return 0\ndef h(x):\n    return 1\n" + hook_with("return 1"), "defined twice"),
    "helper_list_default": ("def h(x=[]):\n    return x\n" + hook_with("return 1"), "scalar constants"),
    "helper_call_default": ("def h(x=len('a')):\n    return x\n" + hook_with("return 1"), "scalar constants"),
    # sizes
    "long_string": (hook_with("return '" + "a" * 701 + "'"), "700"),
    "too_many_nodes": (hook_with("x = [" + ", ".join(["1"] * 1300) + "]\nreturn x"), "AST nodes"),
    "too_long": (hook_with("x = 1  # " + "c" * 8000 + "\nreturn x"), "8000"),
    "empty": ("   \n", "non-empty"),
    "syntax": ("def hook(ctx, nb)\n    return 1\n", "syntax"),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_policy_rejects_with_one_line_reason(name: str) -> None:
    code, needle = REJECTED[name]
    with pytest.raises(PolicyViolation) as info:
        check_hook_code(code, "dbbench", style="harness_r1", point="on_init")
    message = str(info.value)
    assert "\n" not in message
    assert needle.lower() in message.lower(), message


def test_reasons_name_the_line() -> None:
    with pytest.raises(PolicyViolation, match=r"^line 3: forbidden name 'getattr'"):
        check_hook_code(hook_with("x = 1\nreturn getattr(ctx, 'a')"), "dbbench")


def test_alfworld_numbered_instance_strings_rejected_only_for_alfworld() -> None:
    code = hook_with("return {'type': 'force_action', 'action': 'go to shelf 1'}")
    assert check_hook_code(code, "webshop", point="on_before_action")
    with pytest.raises(PolicyViolation, match="numbered ALFWorld"):
        check_hook_code(code, "alfworld", point="on_before_action")
    assert check_hook_code(hook_with("return {'message': 'go to the shelf'}"), "alfworld")


def test_plain_format_literals_are_fine() -> None:
    code = hook_with("return '{} {0} {name!r:>10} {:.2f} {:{w}.{p}f}'.format(1, 2.5, 3.0, name=2, w=8, p=1) + '{{0.x}}'.format()")
    assert check_hook_code(code, "dbbench")


def test_module_style_rules() -> None:
    with pytest.raises(PolicyViolation, match="at least one function"):
        check_hook_code("def helper(ctx, nb):\n    return 1\n", "dbbench", style="module")
    with pytest.raises(PolicyViolation, match=r"on_init\(ctx, nb\)"):
        check_hook_code("def on_init(ctx):\n    return 1\n", "dbbench", style="module")
    with pytest.raises(PolicyViolation, match="import"):
        check_hook_code("import os\ndef on_init(ctx, nb):\n    return 1\n", "dbbench", style="module")
    many = "".join(f"def h{i}(x):\n    return x\n" for i in range(6)) + "def on_init(ctx, nb):\n    return 1\n"
    with pytest.raises(PolicyViolation, match="at most 5"):
        check_hook_code(many, "dbbench", style="module")
    all_points = "".join(f"def {p}(ctx, nb):\n    return None\n" for p in HOOK_POINTS)
    assert [e for e, _ in check_hook_code(all_points, "dbbench", style="module")] == list(HOOK_POINTS)


def test_safe_builtins_are_exactly_the_spec_list() -> None:
    assert sorted(SAFE_BUILTINS) == sorted(SAFE_BUILTIN_NAMES)
    assert len(SAFE_BUILTIN_NAMES) == 25
    assert set(SAFE_MODULES) == {"math", "re", "SequenceMatcher"}


def test_module_proxies_hide_module_internals() -> None:
    proxy_re = SAFE_MODULES["re"]
    assert proxy_re.search(r"a+", "caab").group(0) == "aa"
    assert not hasattr(proxy_re, "enum")  # the real re.enum.sys would reach os
    with pytest.raises(AttributeError):
        proxy_re.match = None
    assert SAFE_MODULES["math"].floor(2.5) == 2


# ------------------------------------------------------------------ the allowlist and what it reaches

def _ast_node_classes() -> set[str]:
    """Every AST node class the running Python defines: public names, deprecated aliases, abstract bases."""
    import ast

    found = {n for n in dir(ast) if isinstance(getattr(ast, n), type) and issubclass(getattr(ast, n), ast.AST)}
    stack = [ast.AST]
    while stack:
        cls = stack.pop()
        if cls.__module__ in ("ast", "_ast"):
            found.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return found


def test_every_ast_node_class_is_classified() -> None:
    """Fails on a Python that adds syntax the policy has not decided on: classify it in NODE_POLICY."""
    missing = sorted(_ast_node_classes() - set(NODE_POLICY))
    assert not missing, f"classify these ast node classes in policy.NODE_POLICY (allowed or rejected with a reason): {missing}"
    for name, reason in NODE_POLICY.items():
        assert reason is None or (reason.strip() and "\n" not in reason), name


def test_unclassified_syntax_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node class missing from the table is rejected, not allowed (the allowlist's default)."""
    table = dict(NODE_POLICY)
    del table["IfExp"]
    monkeypatch.setattr("harness_gym.harness.policy.NODE_POLICY", table)
    with pytest.raises(PolicyViolation, match=r"^line 2: IfExp syntax is not allowed in hooks \(not classified"):
        check_hook_code(hook_with("return 1 if ctx else 2"), "dbbench")


REJECTED_SYNTAX = {
    # every rejected statement or expression that parses inside a function, with the construct its reason names
    "match": ("match ctx:\n    case 1:\n        pass", "line 2: match statements are not allowed in hooks"),
    "match_class": ("match ctx:\n    case dict(a=x):\n        pass", "match statements"),
    "annassign": ("x: int = 1", "annotated assignments"),
    "async_for": ("async for x in ctx:\n    pass", "async for"),
    "async_with": ("async with ctx:\n    pass", "async with"),
    "try_star": ("try:\n    pass\nexcept* Exception:\n    pass", "except* handlers"),
    "delete": ("del nb", "del statements"),
    "yield_from": ("yield from ctx", "yield from"),
    "await": ("await ctx", "await"),
    "lambda": ("return lambda: 1", "lambda expressions"),
    "import_alias": ("import os as o", "import statements"),
}


@pytest.mark.parametrize("name", sorted(REJECTED_SYNTAX))
def test_rejected_syntax_names_line_and_construct(name: str) -> None:
    body, needle = REJECTED_SYNTAX[name]
    with pytest.raises(PolicyViolation) as info:
        check_hook_code(hook_with(body), "dbbench")
    message = str(info.value)
    assert message.startswith("line ") and "\n" not in message and needle in message, message


@pytest.mark.parametrize("code, needle", [
    (hook_with("return dict(**ctx)"), "** unpacking"),
    (hook_with("return SequenceMatcher(**{'isjunk': None})"), "** unpacking"),
    (hook_with("return dict(_x=1)"), "forbidden keyword name '_x'"),
    (hook_with("return ctx._\ufe4dclass__"), "forbidden attribute '__class__'"),  # U+FE4D folds to "_"
    (hook_with("return \uff4f\uff50\uff45\uff4e"), "forbidden name 'open'"),
    (hook_with("g = (i for i in [1])\nreturn g.gi_running"), "forbidden attribute 'gi_running'"),
    (hook_with("return ctx.co_consts"), "forbidden attribute 'co_consts'"),
    (hook_with("return ctx.f_locals"), "forbidden attribute 'f_locals'"),
    (hook_with("return re.methodcaller"), "forbidden attribute 'methodcaller'"),
])
def test_names_reaching_internals_are_rejected_by_any_syntax(code: str, needle: str) -> None:
    with pytest.raises(PolicyViolation) as info:
        check_hook_code(code, "dbbench")
    assert needle in str(info.value), str(info.value)


def test_allowed_syntax_still_covers_ordinary_hooks() -> None:
    code = hook_with(
        "s = ctx.get('state') or {}\n"
        "xs = [k for k in s if k]\n"
        "ys = {k: v for k, v in s.items()}\n"
        "zs = {k for k in xs}\n"
        "n = sum(1 for k in xs)\n"
        "if (m := len(xs)) > 2 and not zs:\n"
        "    assert m, 'never'\n"
        "first, *rest = xs or ['a']\n"
        "for i, k in enumerate(rest[::-1]):\n"
        "    if i > 3:\n"
        "        break\n"
        "    continue\n"
        "nb['n'] = nb.get('n', 0) + n ** 2 // 3 % 5 - (-1) + (~1 & 3 | 4 ^ 1) + (1 << 2 >> 1)\n"
        "msg = f'{n:>{4}} {m!r}' + '{} {:.2f}'.format(n, 1.5) + '%s' % n\n"
        "return {'type': 'inject_hint', 'message': msg, 'ok': n in xs or n is None or 1 <= n < 9}"
    )
    assert check_hook_code(code, "dbbench", point="on_post_step") == [("on_post_step", "hook")]


def _reachable(seeds: list[Any], depth: int = 4, limit: int = 60_000) -> list[tuple[str, Any]]:
    """``(path, object)`` for everything reachable from ``seeds`` through attributes the policy allows."""
    from harness_gym.harness.policy import attribute_allowed

    seen: set[int] = set()
    out: list[tuple[str, Any]] = []
    frontier = [(f"seed{i}", s) for i, s in enumerate(seeds)]
    keep = []  # keep objects alive so ids stay unique
    for _ in range(depth):
        nxt = []
        for path, obj in frontier:
            if id(obj) in seen or len(out) > limit:
                continue
            seen.add(id(obj))
            keep.append(obj)
            out.append((path, obj))
            try:
                names = dir(obj)
            except Exception:  # noqa: BLE001 - dir() of a ctx proxy may raise; nothing reachable then
                continue
            for name in names:
                if attribute_allowed(name):
                    try:
                        nxt.append((f"{path}.{name}", getattr(obj, name)))
                    except Exception:  # noqa: BLE001 - a failing attribute reaches nothing
                        pass
        frontier = nxt
    return out


def test_nothing_a_hook_can_reach_leads_to_interpreter_internals() -> None:
    """From the hook namespace, ctx, nb and the objects hook code can make, the policy's attributes
    reach no frame, code object, traceback, module, globals dict, ``object``, ``type`` or forbidden builtin."""
    import builtins
    import types

    from harness_gym.harness.policy import FORBIDDEN_NAMES, hook_globals
    from harness_gym.sandbox.worker import _wrap_ctx

    namespace = hook_globals()
    ctx = _wrap_ctx({"state": {"msg": "hi", "n": [1, (2, 3)]}, "action": {"query": "SELECT 1"}})
    made: list[Any] = [ctx, {"nb": 1}, (x for x in [1]), re.compile("a(b)"), re.match("a(b)", "ab"),
                       SequenceMatcher(None, "ab", "abc"), map(str, [1]), filter(None, [1]), zip([1]), enumerate([1]),
                       reversed([1]), range(3), {"a": 1}.keys(), {"a": 1}.items(), b"x", 1, 1.5, True, None, "s",
                       frozenset([1]), {1}, [1], "{}".format, ctx.get, math.floor]
    sm = made[5]
    sm.ratio()
    for raise_it in (lambda: 1 / 0, lambda: ctx.missing, lambda: ctx["missing"], lambda: ctx.update({}), lambda: int("x")):
        try:
            raise_it()
        except Exception as exc:  # noqa: BLE001 - the caught exception is a seed, as in a hook's except
            made.append(exc)
    seeds = [v for k, v in namespace.items() if k != "__builtins__"] + list(namespace["__builtins__"].values()) + made
    bad_builtins = {id(getattr(builtins, n)) for n in FORBIDDEN_NAMES if hasattr(builtins, n)}
    bad_types = (types.FrameType, types.CodeType, types.TracebackType, types.ModuleType)
    reached = _reachable(seeds)
    assert len(reached) > 500  # the walk really explored
    for path, obj in reached:
        assert not isinstance(obj, bad_types), path
        assert obj is not object and obj is not type and id(obj) not in bad_builtins, path
        assert not (isinstance(obj, dict) and ("__builtins__" in obj or "__name__" in obj)), path


def test_hook_namespace_is_exactly_the_allowlist() -> None:
    from harness_gym.harness.policy import hook_globals

    namespace = hook_globals()
    assert set(namespace) == {"__builtins__", "math", "re", "SequenceMatcher"}
    assert sorted(namespace["__builtins__"]) == sorted(SAFE_BUILTIN_NAMES)
    for name in ("type", "object", "getattr", "vars", "globals", "__import__", "open", "compile", "exec", "eval",
                 "breakpoint", "help", "memoryview", "format", "dir", "setattr", "super", "print", "iter", "next"):
        assert name not in namespace["__builtins__"], name
    assert hook_globals()["__builtins__"] is not namespace["__builtins__"]  # fresh per module


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.sampled_from(["go to", "take", "put", "shelf", "1", "12", "x1", "1x", " ", "\n", "Take", "use", "-", "3.5"]),
                max_size=14).map("".join))
def test_instance_action_is_the_regex_in_linear_time(text: str) -> None:
    from harness_gym.harness.policy import ALFWORLD_INSTANCE_ACTION_RE, instance_action

    m = ALFWORLD_INSTANCE_ACTION_RE.search(text)
    assert instance_action(text) == (m.group(0) if m else None)
