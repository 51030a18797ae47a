# The README's quick start: `make demo` and `make test` work on a fresh machine
# with only Python 3.11+ and access to the package registry.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python examples/quickstart.py

test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m pytest

# Random programs against rune for FUZZ_SECONDS (default 60); every disagreement is printed
# shrunk to a minimal program. FUZZ_ARGS="--all" also generates the known limits.
FUZZ_SECONDS ?= 60
fuzz: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python tests/fuzz.py --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

# The peers are installed one by one, each allowed to fail: run.py skips a missing one
# with a note. torch stays pinned to the CPU wheel (a bare `torch` pulls GBs of CUDA).
# Options for run.py go in BENCH_ARGS, e.g. `make bench BENCH_ARGS="--only W1,W3"`.
bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	-$(BIN)/python -m pip install --quiet threadpoolctl
	-$(BIN)/python -m pip install --quiet autograd
	-$(BIN)/python -m pip install --quiet torch==2.13.0
	-$(BIN)/python -m pip install --quiet jax jaxlib
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build src/*.egg-info
