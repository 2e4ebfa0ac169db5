"""What a lookup imports: only the plugin asked for, no registry models, no site code, no YAML reader where no YAML
is read; and no import circle through the core modules (issue 20 item 4, issue 21).

Structural checks, not timings: each runs the command in a fresh interpreter and reads its ``sys.modules``, or
reads the import statements of the source. `benchmarks/lookup.py` measures the time.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
GPT2_LARGE = REPO / "tests" / "data" / "hf_published" / "openai-community--gpt2-large.json"

#: The modules this round made free of circles (issue 21, circle 1): none may import a module that imports it
#: back, directly or through others, by any import statement (top level, in a function, or for type checking).
CORE = (
    "archzoo.architecture",
    "archzoo.build_check",
    "archzoo.cli",
    "archzoo.errors",
    "archzoo.hf_config",
    "archzoo.hf_keys",
    "archzoo.hf_reading",
    "archzoo.hf_vocabulary",
    "archzoo.host",
    "archzoo.plugin_guard",
    "archzoo.plugin_manifest",
    "archzoo.validation",
)


def _module_files(src: Path = SRC) -> dict[str, Path]:
    found = {}
    for path in sorted((src / "archzoo").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every archzoo module ``name`` imports anywhere in its source (the package ``archzoo`` itself aside: importing
    it runs nothing, its names are imported on first use)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known)
    return {m for m in found if m in known and m not in (name, "archzoo")}


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = list(graph[start])
    while stack:
        module = stack.pop()
        if module not in seen:
            seen.add(module)
            stack.extend(graph[module])
    return seen


def _graph(src: Path = SRC) -> dict[str, set[str]]:
    known = _module_files(src)
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_no_core_module_imports_a_module_that_imports_it_back():
    graph = _graph()
    assert set(CORE) <= set(graph), "a core module was renamed: update CORE"
    circles = {module: sorted(m for m in _reaches(graph, module) if module in _reaches(graph, m)) for module in CORE}
    assert {m: c for m, c in circles.items() if c} == {}


def test_the_circle_check_sees_imports_inside_functions_and_for_type_checking(tmp_path):
    # the check above passes vacuously if it misses an arrow: here are the ones circle 1 hid
    package = tmp_path / "archzoo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "host.py").write_text("def accept():\n    from .hf_config import hf_table\n")
    (package / "hf_config.py").write_text("from .host import PluginHost\n")
    (package / "errors.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .guard import P\n"
    )
    (package / "guard.py").write_text("from . import errors\n")
    graph = _graph(tmp_path)
    assert graph["archzoo.host"] == {"archzoo.hf_config"}
    assert "archzoo.host" in _reaches(graph, "archzoo.host")
    assert "archzoo.errors" in _reaches(graph, "archzoo.errors")


def _run(script: str, cache: Path, *args: str, cwd: Path = REPO) -> dict:
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(cache)}
    for name in ("ARCHZOO_PLUGINS", "ARCHZOO_STRICT", "ARCHZOO_TRACE_PLUGINS"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


#: Runs ``archzoo ARGS`` in process and prints what it imported.
PROBE = textwrap.dedent(
    """
    import contextlib, io, json, sys
    import archzoo.host
    from archzoo.cli import main
    read = []  # whether the host read the installed distributions' metadata to find the plugins
    scan = archzoo.host.PluginHost._candidates
    def spy(self):
        read.append(True)
        return scan(self)
    archzoo.host.PluginHost._candidates = spy
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(sys.argv[1:])
    print(json.dumps({
        "code": code,
        "read_metadata": bool(read),
        "plugins": sorted(m for m in sys.modules if m.startswith("archzoo_") and "." not in m),
        "modules": sorted(m for m in sys.modules if m.startswith("archzoo") and "." in m),
        "libraries": sorted(m for m in ("yaml", "rich", "mkdocs", "torch", "transformers") if m in sys.modules),
    }))
    """
)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory) -> Path:
    """A cache folder holding the plugin manifest, written by one full load (as every later lookup finds it)."""
    cache = tmp_path_factory.mktemp("cache")
    first = _run(PROBE, cache, "count", "gpt", "--json")
    assert first["code"] == 0
    assert first["read_metadata"], "the first, cold run reads the installed plugins' metadata"
    assert list(cache.glob("plugins-*.json"))
    return cache


def _registry_or_site(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(("archzoo.registry", "archzoo.site", "archzoo.verify"))]


def test_count_from_a_config_json_imports_one_plugin_and_no_registry_or_site(warm_cache):
    seen = _run(PROBE, warm_cache, "count", "--hf-config", str(GPT2_LARGE), "--json")
    assert seen["code"] == 0
    assert seen["plugins"] == ["archzoo_gpt"]
    assert _registry_or_site(seen["modules"]) == []
    assert not seen["read_metadata"]
    # a config.json is JSON: the file readers (archzoo.files) serve it without importing PyYAML
    assert {"yaml", "rich", "mkdocs", "torch", "transformers"}.isdisjoint(seen["libraries"])


def test_count_of_an_architecture_reads_no_yaml(warm_cache):
    seen = _run(PROBE, warm_cache, "count", "gpt", "--json")
    assert seen["code"] == 0
    assert seen["plugins"] == ["archzoo_gpt"]
    assert _registry_or_site(seen["modules"]) == []
    # no --set, no --config: nothing is read, so neither the file readers nor the config.json reader is imported
    assert "yaml" not in seen["libraries"]
    assert "archzoo.files" not in seen["modules"]
    assert "archzoo.hf_reading" not in seen["modules"]
    assert not seen["read_metadata"]
    assert {"rich", "mkdocs", "torch", "transformers"}.isdisjoint(seen["libraries"])


def test_a_plugin_imports_the_vocabulary_not_the_reader(warm_cache):
    script = textwrap.dedent(
        """
        import json, sys
        import archzoo_llama
        print(json.dumps({"modules": sorted(m for m in sys.modules if m.startswith("archzoo."))}))
        """
    )
    seen = _run(script, warm_cache)
    assert "archzoo.hf_vocabulary" in seen["modules"]
    assert "archzoo.hf_reading" not in seen["modules"]
    assert "archzoo.host" not in seen["modules"]


def test_the_manifest_serves_every_way_of_starting_archzoo(warm_cache, tmp_path):
    # `python -c`, a script and `python -m` each put another folder first on sys.path; once each has found the
    # installed plugins, none of them reads package metadata again, in whatever order they run
    script = tmp_path / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(warm_cache)}
    env.pop("ARCHZOO_PLUGINS", None)

    def via_script() -> dict:
        done = subprocess.run(
            [sys.executable, str(script), "count", "gpt", "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def via_c() -> dict:
        return _run(PROBE, warm_cache, "count", "gpt", "--json")

    via_script()  # this way's first run may read the metadata, once
    via_c()
    for seen in (via_script(), via_c(), via_script()):
        assert not seen["read_metadata"]
        assert seen["plugins"] == ["archzoo_gpt"]


def test_one_plugins_hook_imports_that_plugin_only(warm_cache):
    # what memory needs of a family (its activation saves) is asked of the architecture's own plugin
    script = textwrap.dedent(
        """
        import json, sys
        from archzoo.host import get_host
        host = get_host()
        found = []
        hook = host.plugin_hook("gpt", "register_architectures")
        hook(register=found.append)
        print(json.dumps({
            "plugins": sorted(m for m in sys.modules if m.startswith("archzoo_") and "." not in m),
            "registered": [a.name for a in found],
            "missing_hook": host.plugin_hook("gpt", "no_such_hook"),
            "missing_plugin": host.plugin_hook("no-such-plugin", "register_architectures"),
        }))
        """
    )
    seen = _run(script, warm_cache)
    assert seen == {"plugins": ["archzoo_gpt"], "registered": ["gpt"], "missing_hook": None, "missing_plugin": None}


def test_a_warm_listing_imports_no_plugin_no_pydantic_and_reads_no_yaml(warm_cache, tmp_path):
    registry = tmp_path / "registry" / "gpt"
    registry.mkdir(parents=True)
    for name in ("gpt2.yaml", "gpt2-medium.yaml"):
        (registry / name).write_bytes((REPO / "registry" / "gpt" / name).read_bytes())
    args = ("list", "--registry", str(registry.parent), "--json")
    first = _run(PROBE, warm_cache, *args)  # reads the two entries and caches their rows
    assert first["code"] == 0 and "archzoo_gpt" in first["plugins"]
    script = PROBE.replace('"code": code,', '"code": code, "pydantic": "pydantic" in sys.modules,')
    seen = _run(script, warm_cache, *args)
    assert seen["code"] == 0
    assert seen["plugins"] == [] and seen["pydantic"] is False
    assert "yaml" not in seen["libraries"]
    # the index and the file listing it builds on (archzoo.registry_files), not the entries' pydantic models;
    # of the site, only the model record the listing prints (archzoo.site.records)
    assert _registry_or_site(seen["modules"]) == [
        "archzoo.registry_files",
        "archzoo.registry_index",
        "archzoo.site",
        "archzoo.site.records",
    ]
    # the rows are cached: no block tree is built, so neither the block model nor the build checks are imported
    assert {"archzoo.blocks", "archzoo.formula", "archzoo.build_check"}.isdisjoint(seen["modules"])
