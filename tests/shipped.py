"""The shipped registry (``registry/``), loaded once per test process: the modules that read it while pytest collects
them share this one load (about a second each) instead of each validating its 300-odd files again."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from archzoo.registry import Registry, load_registry

REGISTRY_DIR = Path(__file__).resolve().parents[1] / "registry"


@cache
def shipped_registry() -> Registry:
    """The registry of ``registry/`` with the default plugin host, as ``archzoo`` loads it (read-only: shared)."""
    return load_registry([REGISTRY_DIR])
