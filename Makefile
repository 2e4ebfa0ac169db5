# Two commands do all the set-up a newcomer needs:
#   make serve   install archzoo and the site tools, build the site from registry/ and serve it
#   make test    install everything the tests need (torch CPU, transformers, Chromium) and run them
PYTHON ?= python3
PIP = $(PYTHON) -m pip install --quiet --disable-pip-version-check
PORT ?= 8000

.PHONY: serve build test install install-test chromium

install:
	$(PIP) -e ".[site]"

# torch is pinned first so that transformers does not pull a multi-GB CUDA build.
install-test:
	$(PIP) "torch==2.13.0"
	$(PIP) -e ".[dev]"

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

build: install
	archzoo build --out site

serve: install
	archzoo serve --port $(PORT)

test: install-test chromium
	$(PYTHON) -m pytest
