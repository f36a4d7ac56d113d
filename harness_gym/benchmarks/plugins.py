"""Finding benchmarks: the ``harness_gym.benchmarks`` entry-point group, loaded once, checked on load.

Every entry point names a ``Benchmark`` subclass (or instance); its name must be the
benchmark's ``name``. The three built-ins are entry points of harness-gym's own
``pyproject.toml``; ``BUILTIN`` holds the same table for a source checkout whose
installed metadata is missing or older (tests keep the two equal), and an installed entry
point identical to a built-in one is the same registration, not a duplicate.

A broken entry point never breaks ``import harness_gym``: it is skipped with a one-line
warning naming its package, and looking it up raises that line as a ``ConfigError``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from harness_gym.benchmarks.api import DISPLAY_RE, NAME_RE, Benchmark, SelectSpec, TemplateRules
from harness_gym.errors import ConfigError, one_line as _one_line

GROUP = "harness_gym.benchmarks"
BUILTIN: dict[str, str] = {
    "dbbench": "harness_gym.benchmarks.dbbench.plugin:DBBench",
    "webshop": "harness_gym.benchmarks.webshop.plugin:WebShop",
    "alfworld": "harness_gym.benchmarks.alfworld.plugin:ALFWorld",
}
SELF = "harness-gym"


def one_line(text: str) -> str:
    return _one_line(text, 600)  # room for the entry point, its package and the cause


@dataclass
class Found:
    """The loaded benchmarks (in registration order), the package of each, and the refused entry points."""

    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # entry-point name -> the one-line error
    refused: list[str] = field(default_factory=list)  # every refusal (duplicates of a usable name too)


_found: Found | None = None


def _package(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown package"
    return f"{dist.metadata['Name']} {dist.version}"


def _entries() -> list[tuple[str, str, str]]:
    """``(name, value, package)`` of every registration: built-ins first, then installed ones by name."""
    out = [(name, value, f"{SELF} (built-in)") for name, value in BUILTIN.items()]
    installed = sorted(metadata.entry_points(group=GROUP), key=lambda e: (e.name, e.value))
    for ep in installed:
        if BUILTIN.get(ep.name) == ep.value:
            continue  # harness-gym's own entry point: the built-in above
        out.append((ep.name, ep.value, _package(ep)))
    return out


def _load(name: str, value: str, package: str) -> Benchmark:
    where = f"benchmark entry point {name!r} = {value!r} of package {package}"
    try:
        obj: Any = metadata.EntryPoint(name, value, GROUP).load()
    except Exception as exc:  # any import-time failure of a plugin is that plugin's error
        raise ConfigError(one_line(f"{where} failed to load: {type(exc).__name__}: {exc}")) from None
    if isinstance(obj, type) and issubclass(obj, Benchmark):
        try:
            obj = obj()
        except Exception as exc:
            raise ConfigError(one_line(f"{where}: {obj.__name__}() failed: {type(exc).__name__}: {exc}; "
                                       "implement spec, build_packet and prompt")) from None
    if not isinstance(obj, Benchmark):
        raise ConfigError(one_line(f"{where} is a {type(obj).__name__}, expected a harness_gym.Benchmark subclass or "
                                   "instance"))
    bench_name, display = getattr(obj, "name", None), getattr(obj, "display", None)
    if not isinstance(bench_name, str) or not NAME_RE.fullmatch(bench_name):
        raise ConfigError(one_line(f"{where}: name={bench_name!r}, expected lower-case letters, digits and _ "
                                   "(starting with a letter, at most 32)"))
    if bench_name != name:
        raise ConfigError(one_line(f"{where}: the entry point is named {name!r} but the benchmark's name is "
                                   f"{bench_name!r}; name the entry point {bench_name!r}"))
    if not isinstance(display, str) or not DISPLAY_RE.fullmatch(display):
        raise ConfigError(one_line(f"{where}: display={display!r}, expected a capitalised word of letters and digits "
                                   "(it makes the env id HarnessEdit-<display>-v0)"))
    return obj


def discover(refresh: bool = False) -> Found:
    """Load every registered benchmark once (``refresh``: again, e.g. after a pip install)."""
    global _found
    if _found is not None and not refresh:
        return _found
    found = Found()
    displays: dict[str, str] = {}
    for name, value, package in _entries():
        try:
            if name in found.benchmarks or name in found.broken:
                first = found.packages.get(name, "an earlier entry point")
                raise ConfigError(one_line(f"benchmark entry point {name!r} = {value!r} of package {package} "
                                           f"duplicates the benchmark {name!r} of {first}; rename one"))
            bench = _load(name, value, package)
            if bench.display.lower() in displays:
                other = displays[bench.display.lower()]
                raise ConfigError(one_line(f"benchmark entry point {name!r} of package {package}: display "
                                           f"{bench.display!r} gives env id {bench.env_id()}, already taken by "
                                           f"{other!r}; choose another display"))
        except ConfigError as exc:
            if name not in found.benchmarks:
                found.broken[name] = str(exc)
            found.refused.append(str(exc))
            warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
            continue
        found.benchmarks[name] = bench
        found.packages[name] = package
        displays[bench.display.lower()] = name
    _found = found
    return found


def names() -> list[str]:
    """The names of the usable benchmarks, built-ins first."""
    return list(discover().benchmarks)


def get(name: str) -> Benchmark:
    """The benchmark registered as ``name``; unknown or broken: a one-line ``ConfigError``."""
    found = discover()
    if name in found.benchmarks:
        return found.benchmarks[name]
    if name in found.broken:
        raise ConfigError(found.broken[name])
    raise ConfigError(f"unknown benchmark {name!r}: expected one of {list(found.benchmarks)} (a plugin package "
                      f"registers more under the {GROUP!r} entry-point group)")


def template_rules(name: str) -> TemplateRules:
    """The ``template`` policy's rules of benchmark ``name``; none or malformed: a one-line ``ConfigError``."""
    bench = get(name)
    rules = bench.template()
    if rules is None:
        raise ConfigError(f"the template policy has no rules for benchmark {name!r} ({discover().packages[name]}: "
                          "Benchmark.template() returned None)")
    if not isinstance(rules, TemplateRules):
        raise ConfigError(f"benchmark {name!r} ({discover().packages[name]}): template() returned a "
                          f"{type(rules).__name__} without detect(packet) and build_hooks(signatures)")
    return rules


def select_spec(name: str) -> SelectSpec:
    """The ``HarnessSelect`` feature table of benchmark ``name``; none: a one-line ``ConfigError``."""
    bench = get(name)
    spec = bench.select()
    if not isinstance(spec, SelectSpec):
        with_tables = [n for n, b in discover().benchmarks.items() if b.select() is not None]
        raise ConfigError(f"benchmark={name!r}: HarnessSelectEnv has a feature table for {with_tables}; "
                          f"{discover().packages[name]} gives none (Benchmark.select() returned {type(spec).__name__})")
    return spec
