"""Hostile hook code by attack class, rendered in each of the three patch formats.

Each case is a hook body (plus optional helpers) and its expected outcome: ``reject``
(the static policy refuses it; the error contains one of the ``|``-separated needles) or ``noop`` (the policy
lets it through and the sandbox stops it at run time; a hook event's error contains one
of the ``|``-separated needles). ``render`` turns a case into a Harness-R1 JSON reply, a
unified diff creating ``hooks/NN_<point>.py``, or a bare hook module. ``HOOKFN`` in a
case stands for the entry function's name (``hook`` or the hook point).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

FORMATS = ("harness_r1", "diff", "module")


@dataclass(frozen=True)
class Case:
    name: str
    klass: str
    body: str
    expect: str  # "reject" | "noop"
    needle: str
    helpers: str = ""
    point: str = "on_post_step"


def _r(klass: str, name: str, body: str, needle: str, helpers: str = "", point: str = "on_post_step") -> Case:
    return Case(name, klass, body, "reject", needle, helpers, point)


def _n(klass: str, name: str, body: str, needle: str, helpers: str = "", point: str = "on_init") -> Case:
    return Case(name, klass, body, "noop", needle, helpers, point)


GEN = "g = (x for x in [1])\n"
TRY = "try:\n    1 / 0\nexcept Exception as e:\n    "

CASES: tuple[Case, ...] = (
    # match statements: class patterns read attributes by name, mapping patterns look keys up
    _r("match", "class_pattern_dunder", "match ctx:\n    case dict(__class__=c):\n        return str(c)", "match statements"),
    _r("match", "class_pattern_self", "match ctx.get:\n    case str(__self__=s):\n        return s", "match statements"),
    _r("match", "class_pattern_public_attr", GEN + "match g:\n    case list(gi_frame=f):\n        return f", "match statements"),
    _r("match", "class_pattern_positional", "match ctx:\n    case dict(x):\n        return x", "match statements"),
    _r("match", "mapping_pattern", "match ctx:\n    case {'state': s, **rest}:\n        return rest", "match statements"),
    _r("match", "value_pattern", "match 1:\n    case re.I:\n        return None", "match statements"),
    _r("match", "sequence_star", "match [1, 2]:\n    case [a, *b]:\n        return b", "match statements"),
    _r("match", "capture_or", "match ctx:\n    case 1 | 2:\n        return None\n    case other:\n        return None", "match statements"),
    # format templates that look attributes or items up by name
    _r("format", "positional_attr", "return '{0.__class__}'.format(ctx)", "format template"),
    _r("format", "auto_attr", "return '{.__class__}'.format(ctx)", "format template"),
    _r("format", "keyword_attr", "return '{x.__class__}'.format(x=ctx)", "format template"),
    _r("format", "index_field", "return '{0[state]}'.format(ctx)", "format template"),
    _r("format", "public_attr_field", GEN + "return '{0.gi_frame}'.format(g)", "format template"),
    _r("format", "nested_spec_attr", "return '{0:{1.__class__}}'.format(1, ctx)", "format template"),
    _r("format", "built_template", "return ''.join(['{0.', '__class__}']).format(ctx)", "string literal"),
    _r("format", "variable_template", "t = '{0.__class__}'\nreturn t.format(ctx)", "string literal"),
    _r("format", "unbound_str_format", "return str.format('{0.__class__}', ctx)", "string literal"),
    _r("format", "format_map", "return '{x.__class__}'.format_map({'x': ctx})", "format_map"),
    _r("format", "format_in_map", "return list(map('{0.__class__}'.format, [ctx]))", "format template"),
    _r("format", "ctx_value_format", "return ctx.state.format(ctx)", "string literal"),
    _r("format", "fstring_attr", "return f'{ctx.__class__}'", "__class__"),
    _r("format", "fstring_inner_format", "return f\"{'{0.__class__}'.format(ctx)}\"", "format template"),
    _n("format", "format_builtin", "return {'skills': [format(ctx, '')]}", "NameError"),
    # decorators run arbitrary callables on function objects
    _r("decorator", "decorated_entry", "return None", "decorator", helpers="@SequenceMatcher\n"),
    _r("decorator", "decorated_helper", "return h(1)", "decorator", helpers="@re.compile\ndef h(x):\n    return x\n\n"),
    _r("decorator", "decorator_call", "return h(1)", "decorator", helpers="@sorted\ndef h(x):\n    return x\n\n"),
    # generator and coroutine frames
    _r("frames", "gi_frame", GEN + "return g.gi_frame", "forbidden attribute"),
    _r("frames", "gi_frame_globals", GEN + "return g.gi_frame.f_globals['__builtins__']", "forbidden attribute"),
    _r("frames", "gi_code", GEN + "return g.gi_code", "forbidden attribute"),
    _r("frames", "gi_yieldfrom", GEN + "return g.gi_yieldfrom", "forbidden attribute"),
    _r("frames", "gi_suspended", GEN + "return g.gi_suspended", "forbidden attribute"),
    _r("frames", "async_def", "return None", "async def", helpers="async def h():\n    return 1\n\n"),
    _r("frames", "async_genexp", "return [x async for x in ctx]", "async"),
    _r("frames", "await", "return await h()", "await|syntax"),
    _r("frames", "yield_in_hook", "yield ctx", "yield"),
    _r("frames", "lambda_closure", "f = lambda: 1\nreturn f.__code__", "lambda"),
    # exception tracebacks
    _r("traceback", "tb_frame", TRY + "return e.__traceback__.tb_frame", "forbidden attribute"),
    _r("traceback", "tb_next", TRY + "t = e.__traceback__\n    return t", "forbidden attribute"),
    _r("traceback", "context", TRY + "return e.__context__", "forbidden attribute"),
    _r("traceback", "tb_frame_public", TRY + "return e.args.tb_frame", "forbidden attribute"),
    _r("traceback", "f_back", TRY + "return e.args.f_back", "forbidden attribute"),
    _r("traceback", "underscore_alias", "try:\n    1 / 0\nexcept Exception as _e:\n    return None", "forbidden name"),
    # __class__ (and any _-name) by every syntax
    _r("dunder", "attribute", "return ctx.__class__", "forbidden attribute"),
    _r("dunder", "name", "return __class__", "forbidden name"),
    _r("dunder", "keyword", "return dict(__class__=1)", "forbidden keyword"),
    _r("dunder", "double_star", "return dict(**{'__class__': ctx})", "** unpacking"),
    _r("dunder", "import_alias", "from os import path as __class__\nreturn None", "import"),
    _r("dunder", "walrus", "return (__class__ := ctx)", "forbidden name"),
    _r("dunder", "for_target", "for __class__ in [1]:\n    pass\nreturn None", "forbidden name"),
    _r("dunder", "comprehension_var", "return [_x for _x in [1]]", "forbidden name"),
    _r("dunder", "helper_param", "return h(1)", "forbidden name", helpers="def h(_x):\n    return _x\n\n"),
    _r("dunder", "kwonly_param", "return h(a=1)", "forbidden name", helpers="def h(*, _a=1, a=2):\n    return a\n\n"),
    _r("dunder", "subclasses", "return ().__class__.__bases__[0].__subclasses__()", "forbidden attribute"),
    _r("dunder", "builtins_dict", "return __builtins__['open']", "forbidden name"),
    _r("dunder", "globals_of_hook", "return HOOKFN.__globals__", "forbidden attribute"),
    _r("dunder", "getattr_string", "return getattr(ctx, '__class__')", "forbidden name"),
    _r("dunder", "getattribute", "return ctx.__getattribute__('__class__')", "forbidden attribute"),
    _r("dunder", "type_three_args", "return type('X', (), {})", "forbidden name"),
    _r("dunder", "mro", "return str.mro()", "forbidden attribute"),
    _r("dunder", "attrgetter_attr", "return re.attrgetter('x')", "forbidden attribute"),
    _r("dunder", "methodcaller_attr", "return math.methodcaller('x')", "forbidden attribute"),
    _r("dunder", "vars", "return vars(ctx)", "forbidden name"),
    _r("dunder", "dir", "return dir(ctx)", "forbidden name"),
    _r("dunder", "object", "return object.__subclasses__()", "forbidden"),
    # NFKC-normalised identifiers: Python folds them before the AST exists
    _r("unicode", "fullwidth_open", "return ｏｐｅｎ('/etc/hostname').read()", "forbidden name 'open'"),
    _r("unicode", "fullwidth_eval", "return ｅｖａｌ('1')", "forbidden name 'eval'"),
    _r("unicode", "fullwidth_getattr", "return ｇｅｔａｔｔｒ(ctx, 'x')", "forbidden name 'getattr'"),
    _r("unicode", "dashed_low_line_class", "return ctx._﹍class__", "forbidden attribute '__class__'"),
    _r("unicode", "fullwidth_import", "return __ｉｍｐｏｒｔ__('os')", "forbidden name '__import__'"),
    _r("unicode", "math_italic_breakpoint", "return 𝑏𝑟𝑒𝑎𝑘𝑝𝑜𝑖𝑛𝑡()", "forbidden name 'breakpoint'"),
    _r("unicode", "fullwidth_gi_frame", GEN + "return g.ｇｉ_frame", "forbidden attribute 'gi_frame'"),
    _r("unicode", "fullwidth_format_map", "return '{a}'.ｆｏｒｍａｔ_map({'a': 1})", "format_map"),
    # walrus and comprehension scopes
    _r("scope", "walrus_generator_frame", "return [y for y in [1] if (g := (z for z in [1])) and g.gi_frame]", "forbidden attribute"),
    _r("scope", "walrus_forbidden_name", "return [(open := y) for y in [1]]", "forbidden name"),
    _r("scope", "nested_genexp_frame", "return list((g.gi_frame for g in [(z for z in [1])]))", "forbidden attribute"),
    _r("scope", "comprehension_global", "global x\nreturn [x for x in [1]]", "global"),
    _r("scope", "nonlocal", "nonlocal ctx\nreturn None", "nonlocal"),
    # ctx / nb object methods
    _r("objects", "bound_method_self", "return ctx.get.__self__", "forbidden attribute"),
    _r("objects", "getattr_dunder_method", "return ctx.__getattr__('state')", "forbidden attribute"),
    _r("objects", "ctx_attr_assign", "ctx.state = {}\nreturn None", "attribute assignment"),
    _r("objects", "class_attr_assign", "SequenceMatcher.ratio = None\nreturn None", "attribute assignment"),
    _r("objects", "module_attr_assign", "math.pi = 3\nreturn None", "attribute assignment"),
    _r("objects", "nb_dict_dunder", "return nb.__dict__", "forbidden attribute"),
    _n("objects", "ctx_update", "ctx.update({'state': {}})\nreturn None", "read-only"),
    _n("objects", "ctx_setitem", "ctx['state'] = {}\nreturn None", "read-only"),
    _n("objects", "ctx_fromkeys", "return {'skills': [str(ctx.fromkeys(['a']))]}", "read-only"),
    _n("objects", "ctx_pop", "ctx.pop('state')\nreturn None", "read-only"),
    _n("objects", "unbound_method_sets_function_state", "SequenceMatcher.set_seq1(HOOKFN, 'x')\nreturn None", "AttributeError"),
    _n("objects", "unbound_method_sets_class_state", "SequenceMatcher.set_seq2(SequenceMatcher, 'x')\nreturn None", "AttributeError"),
    _n("objects", "missing_getter_name", "return attrgetter('x')(ctx)", "NameError"),
    _n("objects", "format_spec_on_ctx", "return {'skills': [f\"{ctx!r:{'x'}}\"]}", "ValueError"),
    # huge numbers and strings, recursion
    _n("resources", "power_tower", "return {'skills': [str(10**10**8)]}", "timeout"),
    _n("resources", "huge_string", "x = 'a' * (4 * 1024 ** 3)\nreturn len(x)", "memory"),
    _n("resources", "huge_list", "x = [0] * (10 ** 9)\nreturn len(x)", "memory"),
    _n("resources", "huge_format_width", "return {'skills': ['{:>3000000000}'.format(1)]}", "memory|timeout|Overflow"),
    _n("resources", "huge_fstring_width", "return {'skills': [f'{1:>{3 * 10 ** 9}}']}", "memory|timeout|Overflow"),
    _n("resources", "int_digit_limit", "return {'skills': [str(10 ** 5000)]}", "ValueError"),
    _n("resources", "int_parse_limit", "return {'skills': [str(int('9' * 5000))]}", "ValueError"),
    _n("resources", "c_level_loop", "return sum(range(10 ** 11))", "timeout"),
    _n("resources", "recursion", "return f(0)", "recursion", helpers="def f(n):\n    return f(n + 1)\n\n"),
    _n("resources", "mutual_recursion", "return a(0)", "recursion",
       helpers="def a(n):\n    return b(n)\n\ndef b(n):\n    return a(n + 1)\n\n"),
    _n("resources", "recursion_via_sorted", "return f([1])", "recursion",
       helpers="def f(x):\n    return sorted(x, key=lambda_free(x))\n\ndef lambda_free(x):\n    return f(x)\n\n"),
    _n("resources", "line_budget", "for i in range(10 ** 12):\n    nb['i'] = i", "line budget", point="on_post_step"),
    _n("resources", "keyerror_repr_bomb", "{}[tuple([('a' * 10 ** 6,)] * 300)]", "timeout|memory"),
    _n("resources", "nested_repr_bomb", "x = [[]]\nfor i in range(300):\n    x = [x, x]\nreturn {'skills': [str(x)]}", "timeout|memory"),
    _n("resources", "sorted_memory_bomb", "return {'skills': [str(len(sorted(range(10 ** 9))))]}", "memory|timeout"),
    _n("resources", "regex_alternation_bomb", "return {'skills': [str(re.match('(a|a)*b', 'a' * 40))]}", "timeout"),
    # exceptions carrying data or objects out: their attributes hold only what the hook already had
    _r("exceptions", "re_error_via_compile", "try:\n    re.compile('(')\nexcept Exception as e:\n    return e.pattern", "forbidden attribute 'compile'"),
    _r("exceptions", "exception_traceback_attr", TRY + "return e.with_traceback(None).__traceback__", "forbidden attribute"),
    _r("exceptions", "exception_notes", TRY + "e.add_note('x')\n    return e.__notes__", "forbidden attribute"),
    _n("exceptions", "keyerror_args_out", "{}[('x' * 1000,)]", "KeyError"),
    # AttributeError.obj is the object the lookup failed on (here ctx itself): nothing new is reached
    _n("exceptions", "attribute_error_obj", "try:\n    ctx.nope\nexcept Exception as e:\n    return {'skills': [str(e.obj.state.nope)]}\nreturn None", "AttributeError"),
    _n("exceptions", "stopiteration_value", "g = (x for x in [])\nreturn {'skills': [str(g.send(None))]}", "StopIteration"),
    # values that cannot cross the boundary: self-references, depth, types without a wire form
    _n("values", "nb_self_reference", "nb['a'] = [1]\nnb['a'].append(nb['a'])\nreturn None", "nb rejected"),
    _n("values", "nb_contains_itself", "nb['me'] = nb\nreturn None", "nb rejected"),
    _n("values", "return_nested_deep", "x = []\nfor i in range(200):\n    x = [x]\nreturn {'skills': ['a'], 'deep': x}", "return value rejected"),
    _n("values", "return_map_object", "return {'skills': map(str, [1])}", "return value rejected"),
    _n("values", "nb_generator", "nb['g'] = (x for x in [1])\nreturn None", "nb rejected"),
    # lone surrogates built at run time (the patch text itself has none): not UTF-8, so never sent back
    _n("values", "return_lone_surrogate", "return {'skills': ['a\\ud800b']}", "lone surrogate"),
    _n("values", "nb_key_lone_surrogate", "nb['\\udfff'] = 1\nreturn None", "lone surrogate"),
    _n("values", "surrogatepass_decode", "return {'skills': ['\\xed\\xa0\\x80'.encode('latin_1').decode('utf_8', 'surrogatepass')]}", "lone surrogate|LookupError"),
    # builtins and codecs that are not there: no import happens on a hook's behalf
    _n("absent", "codec_idna", "return {'skills': ['x'.encode('idna').decode()]}", "LookupError"),
    _n("absent", "codec_rot13", "return {'skills': ['x'.encode('rot13')]}", "LookupError"),
    _n("absent", "codec_zlib", "return {'skills': [str('x'.encode('utf-8').decode('zlib_codec'))]}", "LookupError"),
    _n("absent", "iter_next", "return {'skills': [str(next(iter([1])))]}", "NameError"),
    _n("absent", "frozenset_hash_id", "return {'skills': [str(hash(1)), str(id(ctx))]}", "NameError"),
    _n("absent", "callable_builtin", "return {'skills': [str(callable(ctx)), str(chr(65))]}", "NameError"),
    _r("absent", "compile_via_re", "return re.compile('a').pattern", "forbidden attribute 'compile'"),
)
assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"

# A representative subset run in every env (one or more per class, both outcomes).
EVERY_ENV = ("class_pattern_dunder", "mapping_pattern", "positional_attr", "format_map", "decorated_entry",
             "gi_frame_globals", "tb_frame", "keyword", "double_star", "fullwidth_open", "dashed_low_line_class",
             "walrus_generator_frame", "bound_method_self", "ctx_update", "power_tower", "recursion", "huge_string",
             "attribute_error_obj", "return_lone_surrogate", "nb_self_reference", "codec_idna", "keyerror_repr_bomb")


def code_of(case: Case, entry: str) -> str:
    """The case's module source with the entry function named ``entry``."""
    body = "".join(f"    {line}\n" for line in case.body.replace("HOOKFN", entry).splitlines())
    return case.helpers.replace("HOOKFN", entry) + f"def {entry}(ctx, nb):\n" + body


def render(case: Case, fmt: str, benchmark: str) -> str:
    """The case as a patch in format ``fmt`` for ``benchmark``."""
    if fmt == "harness_r1":
        obj = {"schema_version": "harness-r1-patch-v1", "benchmark": benchmark, "description": "Hostile.",
               "actions": [{"type": "add_code_hook", "hook": case.point, "code": code_of(case, "hook")}]}
        return f"<think>\nHostile.\n</think>\n<patch>{json.dumps(obj, ensure_ascii=False)}</patch>"
    if fmt == "diff":
        lines = code_of(case, "hook").splitlines()
        path = f"hooks/01_{case.point}.py"
        return (f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
                + "".join(f"+{line}\n" for line in lines))
    if fmt == "module":
        return code_of(case, case.point)
    raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
