# Set-up and entry points. Every target creates (or reuses) ./.venv and installs
# torch==2.13.0 *before* the project and holds it there, so neither pip nor uv resolves a CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# what the demo needs (lvgp and pyarrow, which reads the GloVe word index), and the dev tools on top
RUNTIME := $(VENV)/.lvgp-runtime
STAMP   := $(VENV)/.lvgp-installed

.PHONY: setup demo lint style browser test test-fast test-lowest notebooks notebooks-run docs screenshots \
  benchmarks clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# uv (installed by pip), then torch's CPU build (below), then the project with uv, which installs in
# parallel (pip: 80-85 s, uv: 25-30 s on two cores, its cache empty; the same packages and versions),
# torch held at the installed build by a constraint, so that nothing pulls a CUDA one. Where uv cannot
# be installed, pip does it all. The project's own modules are byte-compiled once: an
# editable install leaves them to every interpreter's import, which compiles them again each time where
# PYTHONDONTWRITEBYTECODE is set.
TORCH     := torch==2.13.0
TORCH_PIN := $(VENV)/.torch-constraint.txt
INSTALL    = if [ -x $(VENV)/bin/uv ]; then \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) --compile-bytecode --constraint $(TORCH_PIN) -e '.[$(1)]'; \
	else $(PY) -m pip install --quiet --constraint $(TORCH_PIN) -e '.[$(1)]'; fi

# torch: where pip is pointed at folders of wheels (PIP_FIND_LINKS) and uv is at hand, uv installs the
# CPU build from them (10-11 s against pip's 22-29 s on two cores: it byte-compiles in parallel); pip
# otherwise (it finds the CPU build where its configuration points), or where no such wheel is there
TORCH_CPU  := $(TORCH)+cpu
UV_TORCH    = [ -x $(VENV)/bin/uv ] && [ -n "$(PIP_FIND_LINKS)" ] && \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) --compile-bytecode \
	  $(foreach links,$(PIP_FIND_LINKS),--find-links $(links)) '$(TORCH_CPU)' 2>/dev/null

$(RUNTIME): $(PY) pyproject.toml
	$(PY) -m pip install --quiet uv || echo "no uv here: pip installs the project"
	$(UV_TORCH) || $(PY) -m pip install --quiet $(TORCH)
	echo '$(TORCH)' >$(TORCH_PIN)
	$(call INSTALL,embeddings)
	$(PY) -m compileall -q lvgp >/dev/null
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	$(call INSTALL,dev)
	touch $(STAMP)

setup: $(STAMP)

demo: $(RUNTIME)
	$(PY) -m lvgp demo

# ruff (lint and format) and mypy, configured in pyproject.toml. `make test` (CI) runs ruff first and
# mypy inside the suite (tests/test_static_types.py: beside the other tests, not before them)
lint: style
	$(PY) -m mypy lvgp

style: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# the Sphinx site (API from the docstrings, the notebooks as tutorials, the studies' results),
# warnings as errors; part of `make test` (CI)
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# full-page screenshots of the built site in headless Chromium (apt-get install chromium)
screenshots: docs
	$(PY) docs/screenshots.py

# headless Chromium for the docs' browser test (tests/test_docs.py opens the built pages and checks
# that the equations are typeset): Debian's package, installed where this machine can (root with
# apt-get); elsewhere that one test is skipped, saying so
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && echo "installing Debian's chromium for the docs' browser test" \
	  && apt-get install -y -qq chromium >/dev/null 2>&1; } \
	  || echo "no chromium (apt-get install chromium): the docs' browser test will be skipped"

# two workers of one torch thread each (tests/conftest.py): the two cores of the reference machine.
# The site is built by the suite (tests/test_docs.py: no warning, every lvgp reference resolves,
# equations typeset in a browser), not a second time by `make docs` before it; mypy runs in the suite
# too (tests/test_static_types.py)
test: style browser
	$(PY) -m pytest -n 2 --durations=15

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not network"

# the suite on the lowest versions pyproject.toml admits, in a venv of its own: uv's lowest-direct
# resolution of the runtime dependencies (torch held at the CPU build: its lowest, 2.2, is a CUDA wheel
# of gigabytes, checked by hand as CONTRIBUTING.md says), the dev tools at their newest on top. Left out
# there: mypy (its verdict depends on numpy's stubs), scikit-learn 1.6's own check that subtracts a
# float from integer inputs in place (check_positive_only_tag_during_fit; it passes on 1.9), and the
# notebooks (the newest Jupyter tools on top do not suit the oldest matplotlib and tqdm: matplotlib 3.7's
# inline figures import what IPython 9 removed, tqdm 4.60's notebook bar wants ipywidgets)
LOWEST     := .venv-lowest
LOWEST_PY  := $(LOWEST)/bin/python
test-lowest: $(STAMP)
	rm -rf $(LOWEST) && $(PYTHON) -m venv $(LOWEST)
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST_PY) \
	  $(foreach links,$(PIP_FIND_LINKS),--find-links $(links)) '$(TORCH_CPU)' 2>/dev/null \
	  || $(VENV)/bin/uv pip install --quiet --python $(LOWEST_PY) '$(TORCH)'
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST_PY) --constraint $(TORCH_PIN) --resolution lowest-direct \
	  '.[embeddings]'
	$(VENV)/bin/uv pip freeze --python $(LOWEST_PY) | grep -v '^lvgp' >$(LOWEST)/pins.txt
	$(VENV)/bin/uv pip install --quiet --python $(LOWEST_PY) --constraint $(LOWEST)/pins.txt -e '.[dev]'
	$(LOWEST_PY) -m pip list 2>/dev/null | grep -E -i '^(torch|gpytorch|pyro-ppl|numpy|scipy|scikit-learn|matplotlib) '
	$(LOWEST_PY) -m pytest -n 2 -p no:cacheprovider --deselect tests/test_static_types.py \
	  --deselect tests/test_notebooks.py -k 'not check_positive_only_tag_during_fit'

# the notebooks from their jupytext (percent-format) sources in notebooks/src; outputs kept
notebooks: $(STAMP)
	for src in notebooks/src/[0-9]*.py; do \
	  $(PY) -m jupytext --quiet --from py:percent --to ipynb --update -o notebooks/$$(basename $$src .py).ipynb $$src; \
	done

# run them in full on real data, in place, so they are committed with outputs and figures
notebooks-run: notebooks
	$(PY) notebooks/execute.py

benchmarks: $(STAMP)
	$(PY) benchmarks/ldk_gram.py

clean:
	rm -rf $(VENV) build *.egg-info
