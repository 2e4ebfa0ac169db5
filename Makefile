# Two commands do all the set-up a newcomer needs:
#   make serve   install archzoo and the site tools, build the site from registry/ and serve it
#   make test    install everything the tests need (torch CPU, transformers, Chromium) and run them
# Everything is installed into a virtual environment, .venv/, made here with the system's python3:
# nothing needs activating first, and Debian's "externally managed" system Python is never touched.
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PYTHON = $(VENV)/bin/python
PIP = $(PYTHON) -m pip install --quiet --disable-pip-version-check
PORT ?= 8000

.PHONY: serve build test lint install install-test chromium venv clean

venv: $(PYTHON)

# Debian and Ubuntu ship venv's pip in a separate package (their ensurepip imports, then refuses to run):
# when making the environment fails, install it (as root) and try once more.
$(PYTHON):
	@$(SYSTEM_PYTHON) -m venv $(VENV) >/dev/null 2>&1 || { \
	  rm -rf $(VENV); echo "installing python3-venv (Debian's venv support)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && \
	  $(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PIP) --upgrade pip

install: venv
	$(PIP) -e ".[site]"

# torch is pinned first so that transformers does not pull a multi-GB CUDA build.
install-test: venv
	$(PIP) "torch==2.13.0"
	$(PIP) -e ".[dev]"

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

test: install-test chromium lint
	$(PYTHON) -m pytest

clean:
	rm -rf $(VENV) site
