# `make demo` and `make test` set up .venv on a fresh machine, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.installed-torch
DEMO_STAMP := $(VENV)/.installed-demo
DOCS_STAMP := $(VENV)/.installed-docs
# The torch / torchvision lbee is tested with (pyproject.toml has floors only); these resolve from local files here.
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
# Where torch comes from. PyPI's Linux wheel carries CUDA (some 5 GB with its libraries) even without a GPU, so
# by default (auto), on a machine without nvidia-smi, the CPU build (about 200 MB) comes from pytorch.org's CPU
# index when that index answers within 5 s; otherwise from PyPI. TORCH_INDEX= (empty) always takes PyPI's,
# TORCH_INDEX="--index-url URL" any index.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_INDEX ?= auto

.PHONY: install demo test lint browser docs wheel wheel-check bench bench-serve clean

# torch / torchvision first, pinned, once per venv.
$(TORCH_STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@index='$(TORCH_INDEX)'; \
	if [ "$$index" = auto ]; then \
		index=; \
		if ! command -v nvidia-smi >/dev/null && $(PY) -c "import urllib.request as u; u.urlopen('$(TORCH_CPU_INDEX)/torch/', timeout=5)" 2>/dev/null; then \
			index="--index-url $(TORCH_CPU_INDEX)"; \
			echo "No GPU here (no nvidia-smi): torch's CPU build from $(TORCH_CPU_INDEX) (about 200 MB; make TORCH_INDEX= takes PyPI's)"; \
		else \
			echo "torch from PyPI: its Linux wheel carries CUDA libraries, some 5 GB (docs/install.md says how to take the CPU build)"; \
		fi; \
	fi; \
	echo "$(PY) -m pip install -q $$index $(TORCH_PINS)"; \
	$(PY) -m pip install -q $$index $(TORCH_PINS)
	touch $(TORCH_STAMP)

# What the demo needs (the spotcheck and html extras); `make test` installs everything else on top.
# setuptools frames a notice on every editable install (folders named like the package); it is not news here.
# A .venv whose lbee comes from another checkout (a shared or linked venv) is not re-pointed in silence.
$(DEMO_STAMP): pyproject.toml $(TORCH_STAMP)
	$(PY) scripts/check_venv_home.py
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e ".[spotcheck,html]"
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml $(TORCH_STAMP)
	$(PY) scripts/check_venv_home.py
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP) $(DEMO_STAMP) $(DOCS_STAMP)

# What the site needs: the `docs` extra's tools alone, not lbee nor torch (mkdocstrings reads the docstrings from
# the source, it does not import lbee); `make test` has installed them already.
$(DOCS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $$($(PY) scripts/extra_requirements.py docs)
	touch $(DOCS_STAMP)

# Renumics Spotlight (pyproject's `spotlight` extra) pins pandas < 3, so it gets a venv of its own: the Spotlight
# browser test (tests/test_spotlight.py) starts its server from there on a file `lbee export spotlight` wrote.
SPOTLIGHT_VENV := .venv-spotlight
SPOTLIGHT_STAMP := $(SPOTLIGHT_VENV)/.installed
SPOTLIGHT_REQ := renumics-spotlight>=1.6

$(SPOTLIGHT_STAMP): pyproject.toml
	test -x $(SPOTLIGHT_VENV)/bin/python || $(PYTHON) -m venv $(SPOTLIGHT_VENV)
	$(SPOTLIGHT_VENV)/bin/python -m pip install -q "$(SPOTLIGHT_REQ)"
	touch $(SPOTLIGHT_STAMP)

install: $(STAMP) $(SPOTLIGHT_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/lbee demo --out lbee_out/demo

# The HTML report is checked in a real headless browser: Debian's chromium and its driver, installed here when
# missing and root; otherwise the browser tests are skipped (and fail under CI=true), and this says so.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian's chromium and chromium-driver for the browser tests ..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else \
		echo "NOTE: chromium / chromedriver are missing and cannot be installed here (needs root and apt-get):" \
		     "the browser tests (tests/test_report_browser.py, the Chromium tests of tests/test_service_live.py) will NOT run." \
		     "Install them with: sudo apt-get install chromium chromium-driver" >&2; \
	fi

# The documentation site (MkDocs Material; the API reference from the docstrings), offline; --strict fails on a
# broken link, a missing page or a docstring mkdocstrings cannot render. Never --quiet: it drops the warnings that
# --strict counts, and the build passes with a broken anchor.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# ruff (lint, then the format check) and mypy (strict on lbee/core), configured in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: $(STAMP) $(SPOTLIGHT_STAMP) lint browser docs
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q tests

# The wheel for another machine (docs/install.md), in dist/; setuptools' build/ and lbee.egg-info/ are removed after.
wheel:
	$(PYTHON) -m pip wheel -q --no-deps . -w dist/
	rm -rf build lbee.egg-info
	@ls dist/lbee-*.whl
	@echo "To install it without a GPU, torch's CPU build first (else pip takes PyPI's, with some 5 GB of CUDA libraries):"
	@echo "  pip install --index-url $(TORCH_CPU_INDEX) $(TORCH_PINS)"
	@echo "  pip install \"$$(ls dist/lbee-*.whl | tail -1)[spotcheck,html]\""

# Build the wheel, install it into a fresh venv (torch pins first) and run `lbee demo` outside the tree.
wheel-check: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) scripts/check_wheel.py --preinstall "$(TORCH_PINS)"

bench: $(STAMP)
	$(PY) benchmarks/bench_analysis.py

bench-serve: $(STAMP)
	$(PY) benchmarks/bench_serve.py

clean:
	rm -rf $(VENV) $(SPOTLIGHT_VENV) lbee_out build dist site *.egg-info
