# Two commands do all the set-up a newcomer needs:
#   make serve   install archzoo and the site tools, build the site from registry/ and serve it
#   make test    install everything the tests need (torch CPU, transformers, Chromium) and run them
# Everything is installed into a virtual environment, .venv/, made here with the system's python3:
# nothing needs activating first, and Debian's "externally managed" system Python is never touched.
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PYTHON = $(VENV)/bin/python
PIP = $(PYTHON) -m pip install --quiet --disable-pip-version-check
# The exact versions the suite last passed with (constraints.txt); `make test-latest` runs it without them.
LOCK = --constraint constraints.txt
LATEST_VENV = .venv-latest
PORT ?= 8000
# Python's bytecode cache for test runs, kept inside the environment: some containers set PYTHONDONTWRITEBYTECODE, and
# then each pytest worker, and each archzoo the tests start, compiles archzoo, its plugins and pytest's rewritten test
# modules anew (half of a fast run's collection time)
TEST_ENV = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(abspath $(VENV))/pycache"

.PHONY: serve build test test-fast test-latest lint install install-test chromium venv clean

venv: $(PYTHON)

# Debian and Ubuntu ship venv's pip in a separate package (their ensurepip imports, then refuses to run):
# when making the environment fails, install it (as root) and try once more.
$(PYTHON):
	@$(SYSTEM_PYTHON) -m venv $(VENV) >/dev/null 2>&1 || { \
	  rm -rf $(VENV); echo "installing python3-venv (Debian's venv support)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && \
	  $(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PIP) $(LOCK) pip

install: venv
	$(PIP) $(LOCK) -e ".[site]"

# torch is pinned first so that transformers does not pull a multi-GB CUDA build; every other package comes
# at the version constraints.txt locks, so a fresh machine runs the suite on what it last passed with.
install-test: venv
	$(PIP) $(LOCK) "torch==2.13.0"
	$(PIP) $(LOCK) -e ".[dev]"

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

build: install
	$(VENV)/bin/archzoo build --out site

serve: install
	$(VENV)/bin/archzoo serve --port $(PORT)

# The habits that keep the code readable: ruff's lint and format, and mypy over src/ and plugins/
# (settings in pyproject.toml). `make test` runs them first: they take seconds.
lint: install-test
	$(PYTHON) -m ruff check src plugins tests benchmarks
	$(PYTHON) -m ruff format --check src plugins tests benchmarks
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy --disallow-untyped-defs plugins  # plugins are what strangers copy: every function typed

# The whole suite, spread over the machine's cores (pytest-xdist): it builds hundreds of models and sites.
test: install-test chromium lint
	$(TEST_ENV) $(PYTHON) -m pytest -n auto

# The inner loop (see README): no browser, wheel or slow tests, a sweep module's first case of each test,
# on every core.
test-fast: install-test
	$(TEST_ENV) $(PYTHON) -m pytest -n auto -m "not slow and not browser and not wheel"

# The suite on the newest releases pyproject.toml's ranges admit (torch stays 2.13.0, the CPU build on
# disk), in its own environment: what a renewal of constraints.txt would bring, before it is made.
test-latest: chromium
	@test -x $(LATEST_VENV)/bin/python || $(SYSTEM_PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(LATEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade --upgrade-strategy eager -e ".[dev]"
	$(LATEST_VENV)/bin/python -m pip freeze --exclude-editable | grep -iE '^(transformers|pyyaml|pydantic|mkdocs-material)=='
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(abspath $(LATEST_VENV))/pycache" $(LATEST_VENV)/bin/python -m pytest

clean:
	rm -rf $(VENV) $(LATEST_VENV) site
