"""The registry package: one job per module, and one report per distinct configuration among entries loaded together."""

from __future__ import annotations

import ast
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import archzoo.errors
import archzoo.registry
from archzoo.errors import RegistryError
from archzoo.folders import remove_dead_staging, start_staging, swap_into_place
from archzoo.host import PluginHost
from archzoo.registry import SharedReports, counts, find_model, load_registry
from archzoo.registry.counts import configuration_key
from archzoo.registry_index import load_index

PACKAGE = Path(archzoo.registry.__file__).parent
ENTRY = "architecture: gpt\ntitle: GPT-2 variant\nsummary: A small GPT-2.\nyear: 2019\nconfig:\n{config}"


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


@pytest.fixture
def builds(monkeypatch) -> list[tuple]:
    """Every report the registry builds, as (architecture, configuration) pairs."""
    made: list[tuple] = []
    real = counts.make_report

    def counting(arch, config, *args, **kwargs):
        made.append((arch.name, config))
        return real(arch, config, *args, **kwargs)

    monkeypatch.setattr(counts, "make_report", counting)
    return made


def write(folder: Path, name: str, config: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(ENTRY.format(config=config), encoding="utf-8")
    return path


def test_the_package_holds_one_module_per_job():
    modules = {m.name for m in pkgutil.iter_modules([str(PACKAGE)])}
    assert modules == {"published", "schema", "counts", "entry", "reading", "checks", "loading"}
    assert not (PACKAGE.parent / "registry.py").exists()
    for name in modules | {"__init__"}:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree)
        assert doc and doc.splitlines()[0].strip(), f"{name}.py opens without a line saying what it does"


def test_every_module_of_the_package_is_named_in_its_docstring():
    modules = {m.name for m in pkgutil.iter_modules([str(PACKAGE)])}
    doc = archzoo.registry.__doc__ or ""
    assert all(f"- `{name}`:" in doc for name in modules)


def test_pydantic_models_stay_out_of_the_rooms_that_do_not_validate():
    """The figures and entry records need no schema library: only `schema`, `counts` and `checks` import pydantic."""
    for name in ("published", "reading"):
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        } | {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert "pydantic" not in imported, name


def test_what_other_modules_import_is_still_exported():
    for name in (
        "Entry",
        "EntryReference",
        "EntrySpec",
        "Published",
        "Reconciliation",
        "Registry",
        "RegistryProblem",
        "Source",
        "GAP_LIMIT",
        "REASONS",
        "SCHEMA_COMMENT",
        "default_registry_dirs",
        "entry_json_schema",
        "find_model",
        "load_registry",
        "parse_published",
        "registry_folders",
        "split_plugin_problems",
        "yaml_files",
        "_load_entry",
    ):
        assert hasattr(archzoo.registry, name), name


def test_two_entries_of_one_configuration_build_one_report(tmp_path, host, builds):
    write(tmp_path, "gpt-a", "  n_layers: 2\n  d_model: 64\n  n_heads: 4\n")
    write(tmp_path, "gpt-b", "  d_model: 64\n  n_layers: 2\n  n_heads: 4\n")  # the same keys in another order
    write(tmp_path, "gpt-c", "  n_layers: 3\n  d_model: 64\n  n_heads: 4\n")
    registry = load_registry([tmp_path], host)
    assert not registry.problems
    assert len(builds) == 2
    a, b, c = (registry.get_model(i) for i in ("gpt-a", "gpt-b", "gpt-c"))
    assert a.report is b.report and a.report is not c.report
    # each figure as the entry's own, unshared load gives it
    for entry in (a, b, c):
        alone = load_registry([entry.path], host).get_model(entry.id)
        assert (entry.params, entry.active_params) == (alone.params, alone.active_params)
    assert a.params != c.params


def test_the_index_counts_each_configuration_once_in_a_process(tmp_path, host, builds):
    for i in range(5):
        write(tmp_path, f"gpt-{i}", "  n_layers: 2\n  d_model: 64\n  n_heads: 4\n")
    write(tmp_path, "gpt-deeper", "  n_layers: 4\n  d_model: 64\n  n_heads: 4\n")
    index = load_index([tmp_path], host, use_cache=False, progress=False)  # below PARALLEL_MIN: one process
    assert len(index) == 6 and not index.problems
    assert len(builds) == 2
    full = load_registry([tmp_path], host)
    assert {row.id: row.params for row in index.rows.values()} == {e.id: e.params for e in full}


def test_a_duplicate_id_found_alone_shares_its_report(tmp_path, host, builds):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    write(tmp_path / "one", "gpt-same", "  n_layers: 2\n  d_model: 64\n  n_heads: 4\n")
    write(tmp_path / "two", "gpt-same", "  n_layers: 2\n  d_model: 64\n  n_heads: 4\n")
    with pytest.raises(RegistryError, match="duplicate id 'gpt-same'"):
        find_model("gpt-same", [tmp_path], host)
    assert len(builds) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"n_layers": 12}, {}),  # the default written out vs left out: another set of given keys
        ({"n_layers": 2}, {"n_layers": 3}),
        ({"tie_embeddings": True}, {"tie_embeddings": False}),
    ],
)
def test_configurations_that_differ_in_anything_are_not_shared(host, first, second):
    model = host.architecture("gpt").config_model
    assert configuration_key(model.model_validate(first)) != configuration_key(model.model_validate(second))
    assert configuration_key(model.model_validate(first)) == configuration_key(model.model_validate(dict(first)))


def test_a_value_of_another_kind_is_never_shared(host):
    """A configuration holding a value archzoo cannot compare exactly gets no key, so its report is its own."""

    class Opaque:
        pass

    config = host.architecture("gpt").config_model.model_construct(d_model=Opaque())
    assert configuration_key(config) is None


def test_values_equal_in_python_but_of_another_type_are_other_configurations():
    kinds = [1, 1.0, True, 0.0, -0.0, "1", [1], (1,), {"a": 1}, {"a": 1.0}]
    keys = [counts._canonical(value) for value in kinds]
    assert len(set(keys)) == len(kinds)


def test_a_failing_build_is_not_kept(host, monkeypatch):
    """Each entry of a configuration whose build fails reports the failure itself."""
    calls: list[int] = []

    def failing(arch, config, *args, **kwargs):
        calls.append(1)
        raise archzoo.errors.ArchzooError("no")

    monkeypatch.setattr(counts, "make_report", failing)
    shared = SharedReports()
    arch = host.architecture("gpt")
    config = arch.config_model.model_validate({"n_layers": 2})
    for _ in range(2):
        with pytest.raises(archzoo.errors.ArchzooError):
            shared.report(arch, config)
    assert len(calls) == 2 and len(shared) == 0


# ---- the one atomic folder writer (`archzoo.folders`), which the site build's swap is to use -------------


def test_a_staged_folder_replaces_the_previous_one_whole(tmp_path):
    target = tmp_path / "site"
    target.mkdir()
    (target / "old.html").write_text("old", encoding="utf-8")
    staging, owner = start_staging(target, ("site", "tmp"))
    try:
        assert staging.parent == tmp_path and staging.name.startswith(".site.building-")
        (staging / "site" / "new.html").write_text("new", encoding="utf-8")
        remove_dead_staging(tmp_path)  # its writer holds the lock: left alone
        assert staging.is_dir()
        swap_into_place(staging, "site", target)
        assert sorted(p.name for p in target.iterdir()) == ["new.html"]
        assert (staging / "previous" / "old.html").read_text(encoding="utf-8") == "old"
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(owner)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_writer_killed_mid_swap_gets_the_previous_folder_back(tmp_path):
    target = tmp_path / "site"
    target.mkdir()
    (target / "old.html").write_text("old", encoding="utf-8")
    staging, owner = start_staging(target, ("site",))
    os.replace(target, staging / "previous")  # the first rename of the swap, then the writer dies
    os.close(owner)
    remove_dead_staging(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
    assert (target / "old.html").read_text(encoding="utf-8") == "old"


def test_the_registry_reads_yaml_only_through_the_one_reader():
    """`archzoo.files.read_yaml` is the one YAML reader: the registry's reading room composes nothing itself."""
    tree = ast.parse((PACKAGE / "reading.py").read_text(encoding="utf-8"))
    called = {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert "read_yaml" in called
    assert not called & {"compose", "check_yaml_events", "check_nodes", "construct_plain", "safe_load", "load"}


def test_counting_a_configuration_imports_no_registry_room():
    """`archzoo count` names no registry entry: neither the entry schema nor the index is imported for it."""
    code = (
        "import sys\n"
        "from archzoo.cli import main\n"
        "assert main(['count', 'gpt', '--json']) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith(('archzoo.registry', 'archzoo.site'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_counts_are_kept_for_every_configuration_and_reports_for_the_latest_only(host, builds, monkeypatch):
    """An index of 20,000 distinct configurations must not hold 20,000 block trees; their counts are small."""
    monkeypatch.setattr(SharedReports, "KEEP", 2)
    shared = SharedReports()
    arch = host.architecture("gpt")
    configs = [arch.config_model.model_validate({"n_layers": n, "d_model": 64, "n_heads": 4}) for n in (1, 2, 3, 4)]
    first = [shared.params(arch, config) for config in configs]
    assert len(builds) == 4 and len(shared) == 4 and len(shared._reports) == 2
    assert [shared.params(arch, config) for config in configs] == first and len(builds) == 4
    assert shared.report(arch, configs[0]).params == first[0] and len(builds) == 5  # its report was let go
    assert shared.report(arch, configs[3]).params == first[3] and len(builds) == 5  # still kept
    assert shared.active_params(arch, configs[0]) == shared.report(arch, configs[0]).active_params
