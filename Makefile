# Set-up and entry points. Every target creates (or reuses) ./.venv and installs
# torch==2.13.0 *before* the project, so pip never resolves an unpinned CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lvgp-installed

.PHONY: setup demo test test-fast benchmarks clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) -m lvgp demo

test: $(STAMP)
	$(PY) -m pytest -q

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not network"

benchmarks: $(STAMP)
	$(PY) benchmarks/ldk_gram.py

clean:
	rm -rf $(VENV) build *.egg-info
