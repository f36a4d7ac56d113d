"""The static AST policy for hook code (Harness-R1 ``compile_hook`` as the floor)."""
from __future__ import annotations

import pytest

from harness_gym.harness.policy import (
    HOOK_POINTS,
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
