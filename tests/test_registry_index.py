"""The registry index: the same rows and problems as loading every entry, reused while files are unchanged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from archzoo.host import PluginHost
from archzoo.registry import load_registry
from archzoo.registry_index import IndexRow, load_index

REPO = Path(__file__).resolve().parents[1]
ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n  n_layers: {n}\n"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


@pytest.fixture
def registry(tmp_path) -> Path:
    folder = tmp_path / "registry"
    folder.mkdir()
    for n in (1, 2, 3):
        (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (folder / "broken.yaml").write_text(ENTRY.format(n="many"))
    return folder


def test_rows_are_what_loading_every_entry_gives(host):
    """Over the shipped registry, cold and warm, the index equals the full load entry by entry."""
    full = load_registry([REPO / "registry"], host)
    expected = {model_id: IndexRow.of(entry) for model_id, entry in full.entries.items()}
    cold = load_index([REPO / "registry"], host)
    warm = load_index([REPO / "registry"], host)
    assert (cold.loaded, cold.reused) == (len(expected), 0)
    assert (warm.loaded, warm.reused) == (0, len(expected))
    assert cold.rows == warm.rows == expected
    assert warm.problems == full.problems == []


def test_problems_come_back_from_the_cache(registry, host):
    cold = load_index([registry], host)
    warm = load_index([registry], host)
    assert warm.reused == 4
    assert [str(p) for p in warm.problems] == [str(p) for p in cold.problems] == [
        f"{registry}/broken.yaml:6: config.n_layers: expected an integer, got the string 'many'"]
    assert sorted(warm.rows) == ["gpt-1", "gpt-2", "gpt-3"]


def test_only_a_changed_file_is_read_again(registry, host):
    load_index([registry], host)
    (registry / "gpt-2.yaml").write_text(ENTRY.format(n=24))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (1, 3)
    # 24 layers against gpt-1's one: 23 more GPT2Block of 7,087,872 parameters each (transformers'
    # GPT2Block at n_embd 768: sum(p.numel()) = 12·768² + 13·768)
    assert index.rows["gpt-2"].params - load_index([registry], host).rows["gpt-1"].params == 23 * 7_087_872


def test_same_content_with_a_new_stamp_is_reused(registry, host):
    load_index([registry], host)
    path = registry / "gpt-3.yaml"
    text = path.read_text()
    path.unlink()
    path.write_text(text)  # a new inode and modification time, the same bytes
    os.utime(path, ns=(1, 1))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (0, 4)
    assert index.rows["gpt-3"].path == str(path)


def test_a_copy_under_another_name_is_not_mistaken_for_the_original(registry, host):
    load_index([registry], host)
    shutil.copy(registry / "gpt-1.yaml", registry / "gpt-one.yaml")
    index = load_index([registry], host)
    assert index.loaded == 1
    assert index.rows["gpt-one"].path == str(registry / "gpt-one.yaml")


def test_another_set_of_plugins_invalidates_the_cache(registry, host):
    import types

    from archzoo import hookimpl

    load_index([registry], host)
    extra = types.ModuleType("archzoo_noop")
    extra.register_registry_dirs = hookimpl(lambda register: None)
    other = PluginHost(extra_plugins={"noop": extra}).load()
    assert load_index([registry], other).loaded == 4


def test_a_corrupt_or_unwritable_cache_is_rebuilt(registry, host, cache):
    load_index([registry], host)
    for file in cache.iterdir():
        file.write_text("{not json")
    assert load_index([registry], host).loaded == 4
    shutil.rmtree(cache)
    cache.write_text("a file where the cache folder should be")
    first = load_index([registry], host)
    assert (first.loaded, sorted(first.rows)) == (4, ["gpt-1", "gpt-2", "gpt-3"])
