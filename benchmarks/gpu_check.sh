#!/usr/bin/env bash
# One short run on a lent GPU machine: the same ratios as bench_batching.py, on CUDA.
# Usage (repository root): bash benchmarks/gpu_check.sh [MODEL]
#   MODEL: a model folder carried to the machine (e.g. a converted SmolLM2 or Qwen folder),
#          or "tiny" (built on the machine in ~20 s; no download). Default: tiny.
# Needs: the repo's venv carried, or a machine with torch (CUDA), transformers and vllm.
# Writes $OUT/gpu_check.json and $OUT/gpu_check.log when $OUT is set (the device tool's folder).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-tiny}"
OUT="${OUT:-/tmp/harness-gym-gpu-check}"
mkdir -p "$OUT"
PY="${PYTHON:-python}"
[ -x .venv/bin/python ] && PY="${PYTHON:-.venv/bin/python}"
{
  echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" - <<'PY'
import importlib
for m in ("torch", "transformers", "vllm"):
    try:
        mod = importlib.import_module(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as exc:
        print(m, "missing:", type(exc).__name__, exc)
import torch
print("cuda available:", torch.cuda.is_available())
PY
  echo "== ratios (K×|B| = 4×16 = 64, 64 new tokens max; then 8×32 = 256)"
  timeout 420 "$PY" benchmarks/bench_batching.py --model "$MODEL" --backends hf,vllm --k 4 --b 16 \
      --max-tokens 64 --hf-device cuda --scaling 1,4,16x16,64 --json "$OUT/gpu_check.json"
  timeout 120 "$PY" benchmarks/bench_batching.py --model "$MODEL" --backends vllm --k 8 --b 32 \
      --max-tokens 64 --skip-sim --json "$OUT/gpu_check_256.json" || echo "K×|B|=256 run did not finish"
} 2>&1 | tee "$OUT/gpu_check.log"
