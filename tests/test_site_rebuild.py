"""Rebuilds while serving (archzoo.site.rebuild): saving one entry re-renders that model's page and the pages
that show it, leaves every other page as the previous build wrote it, and the site is then byte for byte
the one a full build of the same files makes (search index included)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from archzoo.site import SiteOptions
from archzoo.site.build import load_site_config, serve_build

# serve loops rebuilding whole sites (8 s of CPU a case): `make test` runs them, the fast subset tests the page cache
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ENTRIES = [
    REPO / "registry" / "bert" / "bert-base-uncased.yaml",
    *sorted((REPO / "registry" / "gpt").glob("gpt2*.yaml")),
    REPO / "registry" / "llama" / "llama-2-7b.yaml",
]
SERVE_URL = "http://127.0.0.1:8000/"


@pytest.fixture(params=[False, True], ids=["uncached", "cached"])
def zoo(tmp_path, monkeypatch, request) -> Path:
    """A zoo of six entries and an owner's page; its pages kept in a page cache, or not."""
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # the sitemap's gzip header: the same in every build
    project = tmp_path / "zoo"
    (project / "docs").mkdir(parents=True)
    (project / "registry").mkdir()
    for path in ENTRIES:
        shutil.copy(path, project / "registry" / path.name)
    (project / "docs" / "notes.md").write_text("# Notes\n\nThe owner's own page.\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        "site_name: Zoo\ntheme:\n  name: material\nplugins:\n  - search\n  - archzoo:\n"
        + f"      cache: {str(request.param).lower()}\n",
        encoding="utf-8",
    )
    return project


def _serve_build(project: Path, site: Path) -> None:
    """One build as `archzoo serve` runs it: the configuration read again, the plugin instance kept."""
    config = load_site_config(project / "mkdocs.yml", SiteOptions(), site_dir=str(site))
    serve_build(config, SERVE_URL)


def _files(site: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the site: its bytes and when it was last written."""
    return {
        p.relative_to(site).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns) for p in site.rglob("*") if p.is_file()
    }


def _full_build(project: Path, site: Path) -> dict[str, bytes]:
    """The same files built from nothing by MkDocs' ordinary build (not a dirty one), at the same address."""
    from mkdocs.commands.build import build

    config = load_site_config(project / "mkdocs.yml", SiteOptions(), site_dir=str(site))
    config.plugins.on_startup(command="build", dirty=False)
    config.site_url = SERVE_URL
    build(config, serve_url=SERVE_URL)
    return {name: data for name, (data, _) in _files(site).items()}


def test_saving_one_entry_rerenders_its_page_and_the_pages_that_show_it(zoo, tmp_path):
    site = tmp_path / "site"
    config = load_site_config(zoo / "mkdocs.yml", SiteOptions(), site_dir=str(site))
    config.plugins.on_startup(command="serve", dirty=False)
    _serve_build(zoo, site)
    first = _files(site)
    entry = zoo / "registry" / "gpt2-medium.yaml"
    entry.write_text(entry.read_text(encoding="utf-8").replace("n_layers: 24", "n_layers: 25"), encoding="utf-8")
    _serve_build(zoo, site)
    second = _files(site)
    assert set(second) == set(first)
    written = {name for name in second if second[name][1] != first[name][1]}
    # the saved model's page, its architecture's page, the lists and plots, and its data
    assert {
        "models/gpt2-medium/index.html",
        "architectures/gpt/index.html",
        "index.html",
        "models/index.html",
        "models.json",
        "models.csv",
        "explore/models/gpt2-medium.json",
        "search/search_index.json",
    } <= written
    # every other model's page and data, another architecture's page, the owner's page: as they were
    for name in (
        "models/gpt2/index.html",
        "models/gpt2-xl/index.html",
        "models/bert-base-uncased/index.html",
        "models/llama-2-7b/index.html",
        "explore/models/gpt2.json",
        "architectures/bert/index.html",
        "notes/index.html",
    ):
        assert name not in written, name
    # transformers GPT2Model(GPT2Config(n_layer=25, n_embd=1024, n_head=16)): 354,823,168 for 24 layers
    # plus one block of 12·d² + 13·d = 12,596,224
    records = json.loads(second["models.json"][0])
    medium = next(m for m in records["models"] if m["id"] == "gpt2-medium")
    assert medium["params"] == 354_823_168 + 12_596_224
    # what the rebuild left is exactly the site a full build of the same files makes
    assert {name: data for name, (data, _) in second.items()} == _full_build(zoo, tmp_path / "full")


def test_a_new_entry_rebuilds_everything_and_leaves_no_removed_page(zoo, tmp_path):
    """A change to the navigation (an entry added, one removed) renders every page again into an emptied
    folder: no page of the removed model stays behind."""
    site = tmp_path / "site"
    config = load_site_config(zoo / "mkdocs.yml", SiteOptions(), site_dir=str(site))
    config.plugins.on_startup(command="serve", dirty=False)
    _serve_build(zoo, site)
    (zoo / "registry" / "gpt2-xl.yaml").unlink()
    shutil.copy(REPO / "registry" / "gpt" / "openai-gpt.yaml", zoo / "registry" / "openai-gpt.yaml")
    _serve_build(zoo, site)
    rebuilt = _files(site)
    assert "models/openai-gpt/index.html" in rebuilt
    assert not any(name.startswith("models/gpt2-xl") or name.endswith("gpt2-xl.json") for name in rebuilt)
    assert {name: data for name, (data, _) in rebuilt.items()} == _full_build(zoo, tmp_path / "full")


def test_a_registry_that_cannot_be_read_then_fixed_rebuilds_everything(zoo, tmp_path):
    site = tmp_path / "site"
    config = load_site_config(zoo / "mkdocs.yml", SiteOptions(), site_dir=str(site))
    config.plugins.on_startup(command="serve", dirty=False)
    _serve_build(zoo, site)
    entry = zoo / "registry" / "gpt2.yaml"
    good = entry.read_text(encoding="utf-8")
    medium = zoo / "registry" / "gpt2-medium.yaml"
    medium.write_text(medium.read_text(encoding="utf-8").replace("title: ", "title: Renamed ", 1), encoding="utf-8")
    _serve_build(zoo, site)  # a rebuild that keeps most pages, before the one that fails
    assert "Renamed" in (site / "models" / "gpt2-medium" / "index.html").read_text(encoding="utf-8")
    entry.write_text(good.replace("config:", "config: {n_layers: many}\nunused:"), encoding="utf-8")
    _serve_build(zoo, site)
    assert "cannot be read" in (site / "index.html").read_text(encoding="utf-8")
    assert not (site / "models" / "gpt2-medium" / "index.html").exists()  # no stale page is served
    entry.write_text(good, encoding="utf-8")
    _serve_build(zoo, site)
    assert {name: data for name, (data, _) in _files(site).items()} == _full_build(zoo, tmp_path / "full")
