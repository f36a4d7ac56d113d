"""The ``smol:<benchmark>`` target: SmolLM2-135M-Instruct plus a LoRA adapter, merged once and cached.

An adapter is a folder with ``adapter_config.json`` and ``adapter_model.safetensors`` (what
``smol train`` writes). Shipped adapters live in ``harness_gym/smol/adapters/<benchmark>/``
with ``ADAPTER.json`` recording the adapter's sha256, its training and what it achieves;
the sha256 is checked before use. ``merged_dir`` merges base + adapter
(``peft``'s ``merge_and_unload``) into a normal transformers folder under
``~/.cache/harness-gym/models/smol-<benchmark>-<sha12>`` once (atomic rename, so
concurrent processes never see half a folder); the ``hf`` and ``vllm`` backends then load
it like any model, at the env's temperature (0 by default: greedy, reproducible).

Target strings: ``smol`` (the env's benchmark), ``smol:<benchmark>``, with options
``?adapter=<folder>`` (another adapter, e.g. a checkpoint of ``smol train``),
``engine=hf|vllm`` (default hf) and any option of that engine (``max_tokens``, ``threads``,
``max_batch``, …). ``max_tokens`` defaults to 256 (``MAX_TOKENS``), not the protocol's 4,096:
the shipped adapters' success rates were measured with 256-token replies (``smol eval``), the
agents' replies are ~30–120 tokens, and a 135M model that loses its way would otherwise spend
up to 4,096 tokens on one reply while the rest of a batch waits.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from harness_gym.errors import BackendError, ConfigError

ADAPTERS = Path(__file__).resolve().parent / "adapters"
BENCHMARKS = ("dbbench", "webshop", "alfworld")
MARKER = "harness-gym-smol.json"
MAX_TOKENS = 256  # per reply, unless the target string says otherwise (module doc)


def shipped(benchmark: str) -> Path:
    """The shipped adapter folder of ``benchmark`` (its sha256 checked), or a clear error."""
    if benchmark not in BENCHMARKS:
        raise ConfigError(f"smol:{benchmark}: unknown benchmark; expected one of {list(BENCHMARKS)}")
    folder = ADAPTERS / benchmark
    if not (folder / "ADAPTER.json").is_file():
        have = sorted(p.name for p in ADAPTERS.iterdir() if (p / "ADAPTER.json").is_file()) if ADAPTERS.is_dir() else []
        raise ConfigError(f"smol:{benchmark}: no trained adapter is shipped for {benchmark} (shipped: {have or 'none'}); "
                          f"train one with python -m harness_gym.smol train and use smol:{benchmark}?adapter=<folder>")
    record = read_json(folder / "ADAPTER.json", "the shipped adapter's record")
    sha, config_sha = (record.get("sha256"), record.get("config_sha256")) if isinstance(record, dict) else (None, None)
    if not (isinstance(sha, str) and len(sha) == 64 and isinstance(config_sha, str) and len(config_sha) == 64):
        raise ConfigError(f"{folder / 'ADAPTER.json'}: expected an object with the adapter's sha256 and config_sha256 "
                          "(64 hex digits each); reinstall harness-gym")
    check_sha256(folder, sha, config_sha)
    return folder


def check_sha256(folder: Path, want: str, want_config: str = "") -> str:
    """The sha256 of ``folder``'s ``adapter_model.safetensors``, checked against ``want`` (and that of its
    ``adapter_config.json`` — rank, alpha, targets change what the weights do — against ``want_config``)
    when given."""
    from harness_gym.smol.data import sha256_file

    f = folder / "adapter_model.safetensors"
    if not f.is_file() or not (folder / "adapter_config.json").is_file():
        raise ConfigError(f"{folder}: not a LoRA adapter folder (needs adapter_config.json and adapter_model.safetensors)")
    got = sha256_file(f)
    if want and got != want:
        raise BackendError(f"{f}: sha256 {got[:12]}… differs from the recorded {want[:12]}…; the adapter is damaged or replaced")
    if want_config:
        got_config = sha256_file(folder / "adapter_config.json")
        if got_config != want_config:
            raise BackendError(f"{folder / 'adapter_config.json'}: sha256 {got_config[:12]}… differs from the recorded "
                               f"{want_config[:12]}…; the adapter's configuration is damaged or replaced")
    return got


def adapter_digests(folder: Path) -> dict[str, str]:
    """The sha256s of ``folder``'s weights and configuration: what a merged folder's marker, a rollout cache's key
    and ``ADAPTER.json`` record of an adapter."""
    from harness_gym.smol.data import sha256_file

    return {"adapter_sha256": check_sha256(folder, ""), "config_sha256": sha256_file(folder / "adapter_config.json")}


def read_json(path: Path, what: str) -> Any:
    """``path``'s JSON, or a one-line ``ConfigError`` naming the file and ``what`` it is."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: {what} is not readable JSON ({type(exc).__name__}); "
                          "restore or delete it") from None


def merged_dir(adapter: Path, name: str, cache: Path | None = None, base: Path | None = None) -> Path:
    """Base + ``adapter`` merged into a transformers folder, built once and cached by the adapter's sha256 (the
    marker inside also records its configuration's sha256 and the base: a folder merged from another is rebuilt)."""
    from harness_gym.models.extras import require
    from harness_gym.models.gguf import cache_root, smollm2_dir

    base = Path(base) if base is not None else smollm2_dir()
    want = {**adapter_digests(adapter), "base": str(base)}
    out = (cache or cache_root()) / f"smol-{name}-{want['adapter_sha256'][:12]}"
    if _merged(out) == want:
        return out
    try:  # before the merge's minutes: a cache that cannot be written is a one-line error
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".merge-", dir=str(out.parent)))
    except OSError as exc:
        raise BackendError(f"{out.parent}: cannot write the merged smol model there ({type(exc).__name__}: {exc}); "
                           "set HARNESS_GYM_CACHE to a writable folder") from None
    try:
        torch = require("torch", "smol")
        transformers = require("transformers", "smol")
        peft = require("peft", "smol")
        model = transformers.AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
        model = peft.PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        model.save_pretrained(tmp)
        transformers.AutoTokenizer.from_pretrained(str(base)).save_pretrained(tmp)  # with the tool chat template
        (tmp / MARKER).write_text(json.dumps({**want, "adapter": str(adapter)}))
        if _merged(out) == want:  # another process finished the same merge first
            return out
        if out.exists():  # damaged, or merged from another base or configuration
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _merged(out: Path) -> dict[str, str] | None:
    """What the merged folder ``out`` was built from (its marker's adapter and config sha256s and base), or None
    when it has no readable marker (absent, half-written by a killed process, or damaged: it is rebuilt)."""
    try:
        rec = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(rec, dict):
        return None
    return {k: rec.get(k) for k in ("adapter_sha256", "config_sha256", "base")}


def parse_target(target: str, benchmark: str | None = None) -> tuple[str, Path, str, dict[str, str]]:
    """``smol[:<benchmark>][?adapter=…&engine=…&…]`` → (benchmark, adapter folder, engine, engine options)."""
    head, _, query = target.partition("?")
    name = head.split(":", 1)[1] if ":" in head else ""
    if head not in ("smol",) and not head.startswith("smol:"):
        raise ConfigError(f"target {target!r}: expected smol or smol:<benchmark>")
    name = name or (benchmark or "")
    if not name:
        raise ConfigError(f"target {target!r}: the benchmark is unknown here; write smol:<benchmark> ({'/'.join(BENCHMARKS)})")
    if benchmark and name != benchmark:
        raise ConfigError(f"target {target!r} is the {name} agent but the env is {benchmark}; use smol or smol:{benchmark}")
    opts = dict(parse_qsl(query, keep_blank_values=True))
    opts.setdefault("max_tokens", str(MAX_TOKENS))
    engine = opts.pop("engine", "hf")
    if engine not in ("hf", "vllm"):
        raise ConfigError(f"target {target!r}: engine={engine!r}: expected hf or vllm")
    if name not in BENCHMARKS:
        raise ConfigError(f"target {target!r}: unknown benchmark {name!r}; expected one of {list(BENCHMARKS)}")
    if "adapter" in opts and not opts["adapter"].strip():
        raise ConfigError(f"target {target!r}: adapter= is empty; give a smol train adapter folder")
    # an absolute path: a worker started elsewhere (Ray) reads the same folder
    adapter = Path(opts.pop("adapter")).expanduser().resolve() if "adapter" in opts else shipped(name)
    _check_options(engine, opts)  # before the merge, not after it
    return name, adapter, engine, opts


def _check_options(engine: str, opts: dict[str, str]) -> None:
    """A one-line ``ConfigError`` for an option ``engine`` does not take or a value of the wrong type."""
    from harness_gym.models.factory import split_options

    if engine == "hf":
        from harness_gym.models.hf import HFConfig as config_cls
    else:
        from harness_gym.models.vllm_engine import VLLMConfig as config_cls
    split_options("smol?" + urlencode(opts), config_cls)


def make_smol_backend(target: str, benchmark: str | None = None) -> Any:
    """The chat backend of a ``smol`` target string (module doc)."""
    from harness_gym.models.factory import make_backend

    name, adapter, engine, opts = parse_target(target, benchmark)
    folder = merged_dir(adapter, name)
    query = urlencode(opts)  # re-encoded: a value's own '&' or '=' stays inside that value
    return make_backend(f"{engine}:{folder}" + (f"?{query}" if query else ""))
