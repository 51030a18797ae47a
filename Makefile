# The README's quick start: `make demo` and `make test` work on a fresh machine
# with only Python 3.11+ and access to the package registry; run again, they need no
# network (the editable installs build with the setuptools already in the environment).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The oldest supported NumPy (pyproject's floor) with the oldest SciPy the SciPy surface is
# tested on; `make test` runs the suite there too.  NumPy 2.0 has wheels for CPython 3.9 to
# 3.12 only, so that environment uses $(PYTHON) if it is a 3.11 or 3.12, else the first
# python3.12 or python3.11 on the PATH; with none, `make test` says so and skips that half.
# OLDEST_PYTHON=... picks it by hand.
OLDEST := .venv-oldest
OLDEST_PINS := "numpy==2.0.*" "scipy==1.17.*"
OLDEST_PYTHON ?= $(shell for p in $(PYTHON) python3.12 python3.11; do \
	$$p -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 12))' \
	>/dev/null 2>&1 && { command -v $$p; break; }; done)
# pyproject's [build-system] requires, installed into each environment so that the
# editable install builds there (--no-build-isolation): no download on a re-run
BUILD_REQS := "setuptools>=77" wheel
INSTALL := -m pip install --quiet
EDITABLE := $(INSTALL) --no-build-isolation -e

.PHONY: demo test lint typecheck docs bench fuzz clean venv oldest-venv deps

# (Re)create an environment unless it exists, runs, and was made by the same Python
# version as the one asked for (a .venv left by another Python, or whose Python is gone,
# is rebuilt).  $(1): the directory, $(2): the Python.
define ensure_venv
@want="$$($(2) --version 2>&1)"; have="$$($(1)/bin/python --version 2>&1)"; \
if [ -x $(1)/bin/python ] && [ "$$have" = "$$want" ] && \
        $(1)/bin/python -c 'import pip' >/dev/null 2>&1; then :; else \
    if [ -e $(1) ]; then echo "== $(1): made by '$$have', not $(2) ($$want): rebuilding it"; \
    else echo "== $(1): creating it with $(2) ($$want)"; fi; \
    rm -rf $(1) && $(2) -m venv $(1) && \
    { $(1)/bin/python $(INSTALL) --upgrade pip || echo "   (pip not upgraded: offline?)"; }; \
fi
endef

# What the editable installs build with, in the environment itself
define build_reqs
@echo "== $(1): build requirements ($(subst ",,$(BUILD_REQS)))"
@$(1)/bin/python $(INSTALL) $(BUILD_REQS)
endef

venv:
	$(call ensure_venv,$(VENV),$(PYTHON))

oldest-venv:
ifneq ($(OLDEST_PYTHON),)
	$(call ensure_venv,$(OLDEST),$(OLDEST_PYTHON))
endif

demo: venv
	$(call build_reqs,$(VENV))
	@echo "== $(VENV): installing rune (editable)"
	$(BIN)/python $(EDITABLE) .
	$(BIN)/python examples/quickstart.py

# Everything `make test` runs in, installed: rune with its test, lint and docs tools in
# .venv, and rune with NumPy 2.0 in .venv-oldest (when a Python for it is found).
deps: venv oldest-venv
	$(call build_reqs,$(VENV))
	@echo "== $(VENV): installing rune and its test, lint and docs tools (first run: ~200 MB)"
	$(BIN)/python $(EDITABLE) ".[test,lint,docs]"
ifneq ($(OLDEST_PYTHON),)
	$(call build_reqs,$(OLDEST))
	@echo "== $(OLDEST): installing rune with $(subst ",,$(OLDEST_PINS))"
	$(OLDEST)/bin/python $(EDITABLE) ".[test]" $(OLDEST_PINS)
else
	@echo "== $(OLDEST): skipped: NumPy 2.0 has wheels for CPython 3.9-3.12 and neither" \
	      "$(PYTHON) nor a python3.12/python3.11 on the PATH is one (OLDEST_PYTHON=... to pick one)"
endif

# Lint, type check, docs, then the suite on the newest NumPy (here) and on the oldest
# supported one (logged, printed after), the two runs side by side on two cores.
test: deps
	$(MAKE) --no-print-directory lint typecheck docs
	@mkdir -p build
ifneq ($(OLDEST_PYTHON),)
	@echo "== pytest, newest NumPy ($(VENV)) and oldest supported ($(OLDEST), log in build/)"
	@$(OLDEST)/bin/python -m pytest > build/pytest-oldest.log 2>&1 & oldest=$$!; \
	$(BIN)/python -m pytest; newest=$$?; \
	wait $$oldest; rc=$$?; \
	echo "== pytest on the oldest supported NumPy ($(OLDEST)):"; cat build/pytest-oldest.log; \
	test $$newest -eq 0 && test $$rc -eq 0
else
	@echo "== pytest, newest NumPy ($(VENV)); the oldest-NumPy run is skipped (see above)"
	$(BIN)/python -m pytest
endif

lint: venv
	$(BIN)/python -m ruff check .

typecheck: venv
	$(BIN)/python -m mypy

# --strict: a broken link, a missing page or a docstring griffe cannot read fails the build
# (not with --quiet: it hides the warnings --strict counts)
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir build/site

# Random programs against rune for FUZZ_SECONDS (default 60); every disagreement is printed
# shrunk to a minimal program. FUZZ_ARGS="--all" also generates the known limits.
FUZZ_SECONDS ?= 60
fuzz: venv
	$(call build_reqs,$(VENV))
	$(BIN)/python $(EDITABLE) ".[test]"
	$(BIN)/python tests/fuzz.py --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

# The peers are installed one by one, each allowed to fail: run.py skips a missing one
# with a note. torch stays pinned to the CPU wheel (a bare `torch` pulls GBs of CUDA).
# Options for run.py go in BENCH_ARGS, e.g. `make bench BENCH_ARGS="--only W1,W3"`.
bench: venv
	$(call build_reqs,$(VENV))
	$(BIN)/python $(EDITABLE) .
	-$(BIN)/python -m pip install --quiet threadpoolctl
	-$(BIN)/python -m pip install --quiet autograd
	-$(BIN)/python -m pip install --quiet torch==2.13.0
	-$(BIN)/python -m pip install --quiet jax jaxlib
	-$(BIN)/python -m pip install --quiet "numexpr>=2.10"
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/small_calls.py --icount
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/programs.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/memory_floor.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/minimize_unrolled.py

clean:
	rm -rf $(VENV) $(OLDEST) build dist src/*.egg-info
