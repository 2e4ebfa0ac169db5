"""`archzoo new-plugin`: the scaffolded package imports without torch, passes check_plugin, counts what its reference
module holds and, installed into a fresh virtual environment, is listed, counted and passes its own tests there.

The expected parameter count of the scaffold's default configuration is worked out here from torch.nn's
definitions of the modules its reference class is made of (``Embedding(n, d)``: ``n d``; ``Linear(i, o)``:
``i o + o``, ``i o`` without bias; ``LayerNorm(d)``: ``2 d``), and checked against the reference class itself
built on the meta device; archzoo's count is only ever the side being checked.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from archzoo.scaffold import new_plugin, plugin_files
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, check_plugin

REPO = Path(__file__).resolve().parents[1]

#: the scaffold's defaults (plugin.py.tmpl's configuration model)
DEFAULTS = dict(vocab_size=1000, d_model=128, n_heads=4, d_ff=512, n_layers=4, max_positions=256)


def _params_from_torch_definitions(vocab_size: int, d_model: int, d_ff: int, n_layers: int, max_positions: int) -> int:
    """The reference class's parameters, part by part: token and position Embedding, per layer two LayerNorms,
    four Linear(d, d) projections and Linear(d, d_ff), Linear(d_ff, d); a final LayerNorm; Linear(d, V) without bias."""
    d = d_model
    layer = 2 * (2 * d) + 4 * (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d)
    return vocab_size * d + max_positions * d + n_layers * layer + 2 * d + d * vocab_size


@pytest.fixture
def scaffolded(tmp_path, monkeypatch):
    """A scaffold of plugin ``kit_fast`` in a temporary folder, its module importable in this process."""
    target, files = new_plugin("kit_fast", tmp_path / "plugin")
    monkeypatch.syspath_prepend(str(target / "src"))
    monkeypatch.delitem(sys.modules, "archzoo_kit_fast", raising=False)
    module = importlib.import_module("archzoo_kit_fast")
    yield target, files, module
    sys.modules.pop("archzoo_kit_fast", None)


def test_the_scaffold_names_the_package_module_and_entry_point(tmp_path):
    target, files = new_plugin("my_model", tmp_path / "out")
    assert target == tmp_path / "out"
    assert files == [
        Path("pyproject.toml"),
        Path("README.md"),
        Path(".gitignore"),
        Path("src/archzoo_my_model/__init__.py"),
        Path("src/archzoo_my_model/registry/my_model/my-model-example.yaml"),
        Path("tests/test_my_model.py"),
    ]
    assert sorted(p.relative_to(target) for p in target.rglob("*") if p.is_file()) == sorted(files)
    project = tomllib.loads((target / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["name"] == "archzoo-my-model"
    assert project["project"]["entry-points"]["archzoo"] == {"my_model": "archzoo_my_model"}
    assert project["tool"]["setuptools"]["package-data"] == {"archzoo_my_model": ["registry/**/*.yaml"]}
    readme = (target / "README.md").read_text(encoding="utf-8")
    assert "archzoo count my_model" in readme and "pip install -e" in readme
    assert 'check_plugin("my_model")' in (target / "tests" / "test_my_model.py").read_text(encoding="utf-8")


def test_an_existing_empty_folder_is_filled_and_nothing_is_left_beside_it(tmp_path):
    (tmp_path / "empty").mkdir()
    target, files = new_plugin("kit_empty", tmp_path / "empty")
    assert sorted(p.name for p in target.iterdir()) == [".gitignore", "README.md", "pyproject.toml", "src", "tests"]
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]  # no staging folder left behind
    assert len(files) == 6


def test_the_templates_render_with_every_placeholder_filled():
    for path, text in plugin_files("kit_x").items():
        assert "@@" not in text, path


@pytest.mark.hostile
@pytest.mark.parametrize("name", ["null", "true", "false", "yes", "off"])
def test_a_name_yaml_reads_as_another_value_makes_a_scaffold_that_passes_its_own_check(tmp_path, monkeypatch, name):
    """The example entry's ``architecture:`` is the name as YAML reads it: a plain ``null`` would be None, ``true``
    a boolean, and the scaffold's own entry would fail the registry's check."""
    target, _ = new_plugin(name, tmp_path / "plugin")
    monkeypatch.syspath_prepend(str(target / "src"))
    module_name = f"archzoo_{name}"
    monkeypatch.delitem(sys.modules, module_name, raising=False)
    try:
        module = importlib.import_module(module_name)
        assert check_plugin(module, references=False) == []
    finally:
        sys.modules.pop(module_name, None)


def test_the_generated_module_imports_without_torch(scaffolded):
    target, _, _ = scaffolded
    code = (
        "import sys, archzoo_kit_fast\n"
        "archzoo_kit_fast.ARCHITECTURE.reference(archzoo_kit_fast.KitFastConfig()).code()\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'})\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.reference
def test_the_generated_module_passes_check_plugin_in_process(scaffolded):
    pytest.importorskip("torch")
    _, _, module = scaffolded
    assert check_plugin(module) == []


@pytest.mark.reference
def test_the_generated_reference_is_what_its_torch_parts_hold_and_archzoo_counts_it(scaffolded):
    torch = pytest.importorskip("torch")
    _, _, module = scaffolded
    with torch.device("meta"):
        model = module.KitFastModel(**DEFAULTS)
    expected = _params_from_torch_definitions(**{k: v for k, v in DEFAULTS.items() if k != "n_heads"})
    # by hand: V·d 128,000 + P·d 32,768 + 4 layers × 198,272 + final LayerNorm 256 + head 128,000
    assert sum(p.numel() for p in model.parameters()) == expected == 1_082_112
    from archzoo.report import make_report

    arch = module.ARCHITECTURE
    assert make_report(arch, arch.config_model()).params == expected
    small = dict(vocab_size=61, d_model=24, n_heads=3, d_ff=40, n_layers=2, max_positions=16)
    assert_blocks_match_modules(arch, small)
    assert_matches_reference(arch, small, seq_lens=(5, 16))


def test_the_generated_package_is_clean_under_ruff(scaffolded):
    # ruff comes with the dev extra, into the environment running the tests (make test's .venv, whose bin/
    # is not on PATH): run it as a module of that interpreter, never skip
    target, _, _ = scaffolded
    ruff = [sys.executable, "-m", "ruff"]
    lint = subprocess.run([*ruff, "check", "--no-cache", "."], cwd=target, capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    style = subprocess.run(
        [*ruff, "format", "--no-cache", "--check", "."], cwd=target, capture_output=True, text=True, timeout=120
    )
    assert style.returncode == 0, style.stdout + style.stderr


# ---- scaffold, install, test, list, count: in a fresh virtual environment ---------------------------------


def _run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess:
    unset = ("ARCHZOO_REGISTRY", "ARCHZOO_PLUGINS", "PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")
    env = {**{k: v for k, v in os.environ.items() if k not in unset}, **(env or {})}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _see_this_environments_packages(venv: Path) -> None:
    """Let ``venv`` import torch, transformers and pytest from the environment running this test (make test's
    .venv, or wherever pytest runs), after its own packages. `venv --system-site-packages` would not do:
    from inside a virtual environment it exposes the base interpreter's packages, which a fresh machine lacks."""
    (site,) = (venv / "lib").glob("python*/site-packages")
    paths = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "zz_test_parent_environment.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")


@pytest.mark.wheel
def test_a_scaffolded_plugin_installs_passes_its_tests_and_is_listed_and_counted(tmp_path):
    """`archzoo new-plugin`, then a fresh virtual environment with archzoo (from this checkout, not editable)
    and the new plugin installed into it: the plugin's own generated tests pass there, `archzoo plugins`
    lists it and `archzoo count` counts it. The environment sees the running environment's packages for torch,
    transformers and pytest only (a CPU torch from the index is a large download); archzoo and the plugin
    are the environment's own copies, as the first check below proves."""
    made = _run([sys.executable, "-m", "archzoo.cli", "new-plugin", "tiny_lm"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    plugin = tmp_path / "archzoo-tiny-lm"
    venv = tmp_path / "venv"
    created = _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    _see_this_environments_packages(venv)
    python, archzoo = venv / "bin" / "python", venv / "bin" / "archzoo"
    for source in (REPO, plugin):
        installed = _run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", str(source)],
            cwd=tmp_path,
        )
        assert installed.returncode == 0, installed.stderr[-3000:]
    where = _run(
        [
            str(python),
            "-c",
            "import archzoo, archzoo_tiny_lm; print(archzoo.__file__); print(archzoo_tiny_lm.__file__)",
        ],
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(venv)) for line in where.stdout.splitlines()), where.stdout

    tests = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=plugin)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert tests.stdout.splitlines()[-1].startswith("5 passed"), tests.stdout

    listed = _run([str(archzoo), "plugins"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "tiny_lm 0.1.0  (archzoo_tiny_lm; entry point archzoo:tiny_lm in archzoo-tiny-lm 0.1.0)" in listed.stdout
    assert "  architecture tiny_lm: TinyLm" in listed.stdout

    checked = _run([str(archzoo), "plugins", "--check"], cwd=tmp_path, env={"ARCHZOO_PLUGINS": "tiny_lm"})
    assert (checked.returncode, checked.stdout) == (0, "tiny_lm: ok\n"), checked.stdout + checked.stderr

    expected = _params_from_torch_definitions(**{k: v for k, v in DEFAULTS.items() if k != "n_heads"})
    counted = _run([str(archzoo), "count", "tiny_lm", "--json"], cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["params"]["total"] == expected
    shown = _run([str(archzoo), "count", "tiny_lm"], cwd=tmp_path)
    assert shown.returncode == 0 and f"{expected:,}" in shown.stdout, shown.stdout + shown.stderr
