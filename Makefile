# The README's quick start: `make demo` and `make test` work on a fresh machine
# with only Python 3.11+ and access to the package registry.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The oldest supported NumPy (pyproject's floor) with the oldest SciPy the SciPy surface is
# tested on; `make test` runs the suite there too.
OLDEST := .venv-oldest
OLDEST_PINS := "numpy==2.0.*" "scipy==1.17.*"

.PHONY: demo test lint typecheck docs bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(OLDEST)/bin/python:
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python examples/quickstart.py

# Lint, type check, docs, then the suite on the newest NumPy (here) and on the oldest
# supported one (logged, printed after), the two runs side by side on two cores.
test: $(BIN)/python $(OLDEST)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[test,lint,docs]"
	$(OLDEST)/bin/python -m pip install --quiet -e ".[test]" $(OLDEST_PINS)
	$(MAKE) --no-print-directory lint typecheck docs
	@mkdir -p build
	@echo "== pytest, newest NumPy ($(VENV)) and oldest supported ($(OLDEST), log in build/)"
	@$(OLDEST)/bin/python -m pytest > build/pytest-oldest.log 2>&1 & oldest=$$!; \
	$(BIN)/python -m pytest; newest=$$?; \
	wait $$oldest; rc=$$?; \
	echo "== pytest on the oldest supported NumPy ($(OLDEST)):"; cat build/pytest-oldest.log; \
	test $$newest -eq 0 && test $$rc -eq 0

lint: $(BIN)/python
	$(BIN)/python -m ruff check .

typecheck: $(BIN)/python
	$(BIN)/python -m mypy

# --strict: a broken link, a missing page or a docstring griffe cannot read fails the build
docs: $(BIN)/python
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir build/site

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
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/programs.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/memory_floor.py

clean:
	rm -rf $(VENV) $(OLDEST) build dist src/*.egg-info
