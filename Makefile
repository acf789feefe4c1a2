# `make demo` and `make test` set up .venv on a fresh machine, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test docs bench bench-serve clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch/torchvision first, pinned: these versions resolve from local files here.
	$(PY) -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/lbee demo --out lbee_out/demo

# The documentation site (MkDocs Material; the API reference from the docstrings), offline; --strict fails on a
# broken link, a missing page or a docstring mkdocstrings cannot render.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir site

test: $(STAMP) docs
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q tests

bench: $(STAMP)
	$(PY) benchmarks/bench_analysis.py

bench-serve: $(STAMP)
	$(PY) benchmarks/bench_serve.py

clean:
	rm -rf $(VENV) lbee_out build site *.egg-info
