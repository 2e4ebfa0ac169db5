"""The hostile site corpus of ``tests/hostile/site/``, shared by the page tests and the browser tests: its
folder, and its plugin (a module with hostile strings in every field), loaded from its file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "hostile" / "site"


def _plugin_module():
    spec = importlib.util.spec_from_file_location("archzoo_hostile_text", CORPUS / "archzoo_hostile_text.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hostile_plugin = _plugin_module()
