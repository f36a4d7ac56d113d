# The README's two commands: `make demo` and `make test`. Both create .venv/ here.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_WORKERS ?= 2
EPISODES ?= 20

.PHONY: demo test install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[plot]'
	touch $@

# torch first, pinned: the CPU build on local disk (a bare `torch` requirement pulls a multi-GB CUDA build)
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test,rl,train]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(BIN)/harness-gym bench --env HarnessEdit-DBBench-v0,HarnessEdit-WebShop-v0,HarnessEdit-ALFWorld-v0 --policy noop,self-refine,template --episodes $(EPISODES) --out runs/demo.jsonl

test: install-test
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --durations=15

clean:
	rm -rf $(VENV) runs .pytest_cache
