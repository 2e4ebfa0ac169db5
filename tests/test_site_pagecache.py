"""Generated pages kept between builds (archzoo.site.pagecache): a page is taken from the cache only when
nothing it is made from changed, and what a cached build publishes is byte for byte what an uncached one
does; a cache file that is not what the build wrote is ignored."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archzoo.host import get_host
from archzoo.site import build_site, generate, records
from archzoo.site.pagecache import PageCache, fingerprint
from plugin_selection import only_plugins

pytestmark = pytest.mark.sweep

REPO = Path(__file__).resolve().parents[1]
ENTRIES = [
    REPO / "registry" / "bert" / "bert-base-uncased.yaml",
    *sorted((REPO / "registry" / "gpt").glob("gpt2*.yaml")),
]


#: the plugins of the zoo's entries: what the cache keeps does not depend on how many architectures there are,
#: and each one installed adds its page and what-if export to every build (most of a small zoo's build time)
ZOO_PLUGINS = ("bert", "gpt")


@pytest.fixture(autouse=True)
def plugins(request) -> Iterator[None]:
    """The zoo's plugins alone, or every installed one where a test asks for ``None``."""
    names = getattr(request, "param", ZOO_PLUGINS)
    if names is None:
        yield
        return
    with only_plugins(*names):
        yield


@pytest.fixture
def registry(tmp_path) -> Path:
    folder = tmp_path / "registry"
    folder.mkdir()
    for path in ENTRIES:
        shutil.copy(path, folder / path.name)
    return folder


def _generated(zoo: generate.Zoo) -> tuple:
    """Everything the site is made of that generation gives: records, pages, what-if data."""
    return (
        [records.model_record(m) for m in zoo.models],
        [(m.id, m.entry_config, m.weights, m.training_bytes) for m in zoo.models],
        zoo.pages,
        zoo.data,
        zoo.architecture_data,
    )


def _collect(registry: Path, cache: PageCache | None) -> generate.Zoo:
    return generate.collect([registry], directory_urls=True, workers=1, cache=cache)


@pytest.mark.parametrize("plugins", [ZOO_PLUGINS, None], ids=["zoo-plugins", "every-plugin"], indirect=True)
def test_a_cached_build_generates_nothing_and_gives_the_same_pages(registry, tmp_path):
    uncached = _generated(_collect(registry, None))
    cache = PageCache(tmp_path / "cache", fingerprint(get_host()))
    assert _generated(_collect(registry, cache)) == uncached
    assert cache.hits == 0
    again = PageCache(tmp_path / "cache", fingerprint(get_host()))
    assert _generated(_collect(registry, again)) == uncached
    assert again.misses == 0 and again.hits == len(ENTRIES) + len(get_host().architectures)


def test_one_changed_entry_is_generated_again_alone(registry, tmp_path):
    _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))
    path = registry / "gpt2-medium.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("n_layers: 24", "n_layers: 25"), encoding="utf-8")
    cache = PageCache(tmp_path / "cache", fingerprint(get_host()))
    zoo = _collect(registry, cache)
    assert cache.misses == 1
    assert _generated(zoo) == _generated(_collect(registry, None))
    medium = next(m for m in zoo.models if m.id == "gpt2-medium")
    # transformers GPT2Model(GPT2Config(n_layer=25, n_embd=1024, n_head=16)) has 354,823,168 + 12,596,224
    # (one more block of 12·d² + 13·d = 12,596,224 at d = 1,024) parameters
    assert medium.params == 354_823_168 + 12_596_224


def test_another_plugin_or_archzoo_version_misses_every_page(registry, tmp_path):
    _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))
    cache = PageCache(tmp_path / "cache", fingerprint(get_host(), ["another version"]))
    _collect(registry, cache)
    assert cache.hits == 0


@pytest.mark.parametrize("damage", ["truncated", "foreign", "flipped", "wrong-fields", "directory"])
def test_a_damaged_cache_file_is_ignored(registry, tmp_path, damage):
    folder = tmp_path / "cache"
    _collect(registry, PageCache(folder, fingerprint(get_host())))
    for path in folder.rglob("*.json"):
        raw = path.read_bytes()
        header, _, body = raw.partition(b"\n")
        if damage == "truncated":
            path.write_bytes(raw[: len(raw) // 2])
        elif damage == "foreign":
            path.write_bytes(b"not a cache file\n{}")
        elif damage == "flipped":
            middle = len(body) // 2  # one bit of the content changed: the checksum no longer matches
            path.write_bytes(header + b"\n" + body[:middle] + bytes([body[middle] ^ 1]) + body[middle + 1 :])
        elif damage == "wrong-fields":  # a valid header over other content: the fields are checked too
            import hashlib

            body = b'{"view":{"id":1},"page":null,"data":""}'
            key = header.split()[1].decode()
            path.write_bytes(f"archzoo.site-pages/1 {key} {hashlib.sha256(body).hexdigest()}\n".encode() + body)
        else:
            path.unlink()
            path.mkdir()
    cache = PageCache(folder, fingerprint(get_host()))
    assert _generated(_collect(registry, cache)) == _generated(_collect(registry, None))
    assert cache.hits == 0


def test_a_cache_folder_that_cannot_be_written_only_makes_the_build_slower(registry, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    cache = PageCache(blocked / "cache", fingerprint(get_host()))
    assert _generated(_collect(registry, cache)) == _generated(_collect(registry, None))


def test_a_site_built_from_the_cache_is_byte_identical(registry, tmp_path, monkeypatch):
    """Three real builds: no cache, a cold cache, a warm one; every file of the three sites is the same."""
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "zoo"
    (project / "docs").mkdir(parents=True)
    config = "site_name: Zoo\ntheme:\n  name: material\nplugins:\n  - search\n  - archzoo:\n      registry: [{}]\n"
    sites = {}
    for name, cached in (("none", False), ("cold", True), ("warm", True)):
        text = config.format(registry) + ("      cache: false\n" if not cached else "")
        (project / "mkdocs.yml").write_text(text, encoding="utf-8")
        site = build_site(tmp_path / f"site-{name}", config_file=project / "mkdocs.yml")
        sites[name] = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert sites["cold"] == sites["none"]
    assert sites["warm"] == sites["none"]
    assert any((tmp_path / "cache").rglob("*.json"))


def test_a_broken_entry_beside_cached_pages_fails_the_build(registry, tmp_path):
    """With most pages cached the registry is read through its index: a new file with a problem, or a second
    file of an id, still fails the build, naming the file and line."""
    from archzoo.errors import RegistryError

    _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))
    (registry / "broken.yaml").write_text(
        (registry / "gpt2.yaml").read_text(encoding="utf-8").replace("config:", "config: {n_layers: many}\nx:"),
        encoding="utf-8",
    )
    with pytest.raises(RegistryError, match=r"broken\.yaml:\d+: "):
        _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))
    (registry / "broken.yaml").unlink()
    (registry / "more").mkdir()
    shutil.copy(registry / "gpt2.yaml", registry / "more" / "gpt2.yaml")
    with pytest.raises(RegistryError, match=r"gpt2\.yaml"):
        _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))


def test_an_entry_warning_is_said_again_when_its_page_is_reused(registry, tmp_path, caplog):
    """A warning of an entry's check (a published figure off by more than its rounding, with no reason) is
    logged by every build, the ones that reuse the entry's page included."""
    gpt2 = (registry / "gpt2.yaml").read_text(encoding="utf-8")
    # 124,439,808 parameters (transformers GPT2LMHeadModel) against a printed 120M: +3.7%, within 5%
    unexplained = gpt2.replace("params: 117M", "params: 120M").split("reconciliation:")[0]
    (registry / "gpt2.yaml").write_text(unexplained, encoding="utf-8")
    said = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level("INFO", logger="mkdocs.plugins.archzoo"):
            _collect(registry, PageCache(tmp_path / "cache", fingerprint(get_host())))
        said.append([r.getMessage() for r in caplog.records if "consider a 'reconciliation:'" in r.getMessage()])
    assert len(said[0]) == 1 and "gpt2.yaml" in said[0][0]
    assert said[1] == said[0]


def test_a_kept_page_no_build_used_for_a_month_is_removed(registry, tmp_path):
    """Each build renews the files it uses and removes those no build used for 30 days (one file is left
    behind per saved version of an entry otherwise)."""
    import os
    import time

    folder = tmp_path / "cache"
    _collect(registry, PageCache(folder, fingerprint(get_host())))
    used = sorted(folder.rglob("*.json"))
    stale = folder / "ab" / ("ab" + "0" * 62 + ".json")
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("an old version's page", encoding="utf-8")
    month = time.time() - 31 * 24 * 3600
    for path in [stale, *used]:
        os.utime(path, (month, month))
    cache = PageCache(folder, fingerprint(get_host()))
    _collect(registry, cache)
    assert cache.misses == 0  # every page still used is read, and renewed, before anything is removed
    assert not stale.exists()
    assert sorted(folder.rglob("*.json")) == used


def test_a_change_to_any_module_of_the_site_misses_every_page(monkeypatch):
    """The key covers the code that writes a page wherever it lives: each module of ``archzoo.site`` (the
    markup, paths, plots, exports and navigation split out of the pages module too), found on disk rather
    than listed here, so a module added later is covered or this test says so."""
    import types
    from pathlib import Path

    import archzoo.site

    host = get_host()
    before = fingerprint(host)
    modules = sorted(Path(archzoo.site.__file__).resolve().parent.glob("*.py"))
    assert {"markup.py", "pages.py", "paths.py", "plots.py", "exports.py", "navigation.py", "records.py"} <= {
        m.name for m in modules
    }
    real_stat = Path.stat
    for module in modules:

        def edited(path, *args, _module=module, **kwargs):
            info = real_stat(path, *args, **kwargs)
            if path == _module:  # the module as it is after an edit: one byte longer
                return types.SimpleNamespace(st_size=info.st_size + 1, st_mtime_ns=info.st_mtime_ns)
            return info

        monkeypatch.setattr(Path, "stat", edited)
        assert fingerprint(host) != before, module.name
        monkeypatch.setattr(Path, "stat", real_stat)
    assert fingerprint(host) == before
