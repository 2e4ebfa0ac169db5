"""Building the site with MkDocs: navigation, edit links, determinism, atomicity, plugins and outside
registries. Each build uses a small registry, so the whole module runs in well under a minute."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from archzoo.errors import ArchzooError
from archzoo.site import build_site

# whole MkDocs builds (20 s of CPU): the fast subset builds a site in test_cli and test_init, `make test` runs these
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BERT_BASE = REPO / "registry" / "bert" / "bert-base-uncased.yaml"
#: transformers 5.23 BertModel(BertConfig()): sum(p.numel() for p in model.parameters())
BERT_BASE_PARAMS = "109,482,240"

GPT2_YAML = (Path(__file__).parent / "data" / "gpt2-small-test.yaml").read_text(encoding="utf-8")


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the hash of its bytes."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def outside_registry(tmp_path_factory) -> Path:
    """A registry folder outside the repository: a copy of bert-base-uncased and a GPT-2 entry."""
    folder = tmp_path_factory.mktemp("outside") / "registry"
    folder.mkdir()
    shutil.copy(BERT_BASE, folder / "bert-base-uncased.yaml")
    (folder / "gpt2-small-test.yaml").write_text(GPT2_YAML, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory, outside_registry) -> Path:
    out = tmp_path_factory.mktemp("build") / "site"
    lines: list[str] = []
    assert build_site(out, registry=[outside_registry], progress=lines.append) == out.resolve()
    assert any("rendering" in line for line in lines) and not any("site written" in line for line in lines)
    return out


def _page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_build_writes_every_generated_page(built):
    for path in (
        "",
        "models",
        "models/bert-base-uncased",
        "models/gpt2-small-test",
        "architectures/bert",
        "architectures/gpt",
        "architectures/vit",
        "architectures/transformer",
        "methodology",
        "writing-plugins",
        "performance",
        "peers",
        "compare",
    ):
        assert (built / path / "index.html").is_file(), path
    assert not (built / "SUMMARY").exists()  # the generated navigation file is not a page
    page = _page(built, "models/bert-base-uncased")
    assert BERT_BASE_PARAMS in page and "110M" in page
    assert 'class="mermaid"' in page and "az-flops" in page and "arithmatex" in page
    assert "assets/vendor/mermaid/mermaid.tiny.js" in page  # loaded locally, never from a CDN


def test_peers_page_is_made_from_the_shipped_results(built):
    page = _page(built, "peers")
    # BERT-base at N = 128: FlopCounterMode (transformers 5.23, eager) counts 22,348,431,360 FLOPs; fvcore reports
    # 11,186,503,680 (MACs: half of it, plus its LayerNorm terms), as the committed benchmark run recorded.
    assert "Peer tools, side by side" in page and "22,348,431,360" in page and "11,186,503,680" in page
    assert "test_peers" in page


def test_downloads(built):
    data = json.loads((built / "models.json").read_text(encoding="utf-8"))
    assert [m["id"] for m in data["models"]] == ["bert-base-uncased", "gpt2-small-test"]
    assert data["models"][0]["params"] == 109_482_240
    csv_text = (built / "models.csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith("id,title,architecture")
    assert 'bert-base-uncased,"BERT-Base, Uncased",bert,2019' in csv_text


def test_navigation_groups_models_under_their_architecture(built):
    page = _page(built, "models/bert-base-uncased")
    nav = page[page.index('<nav class="md-nav md-nav--primary"') : page.index("</nav>", page.index("md-nav--primary"))]
    assert "Architectures" in nav and "BERT" in nav and "bert-base-uncased" in nav
    assert "gpt2-small-test" not in nav  # navigation.prune: another architecture's models are not rendered
    gpt = _page(built, "models/gpt2-small-test")
    assert 'href="../bert-base-uncased/"' not in gpt[: gpt.index('<div class="md-content"')]


def test_a_registry_outside_the_project_has_no_edit_link_and_no_local_path(built, outside_registry):
    page = _page(built, "models/bert-base-uncased")
    assert "md-content__button" not in page  # not a file of the site's repository: nothing to edit there
    assert "file://" not in page and str(outside_registry) not in page
    assert "registry/bert-base-uncased.yaml" in page  # shown from its registry folder
    assert "md-content__button" not in _page(built, "")  # generated without a source file: no edit link


def test_search_finds_models_by_id_title_and_tag(built):
    index = json.loads((built / "search" / "search_index.json").read_text(encoding="utf-8"))
    entry = next(d for d in index["docs"] if d["location"] == "models/bert-base-uncased/")
    assert entry["title"] == "bert-base-uncased"
    assert "BERT-Base, Uncased" in entry["text"] and entry["tags"] == ["encoder", "english", "masked-lm"]
    assert not [d for d in index["docs"] if d["location"].startswith("models/bert-base-uncased/#")]


def test_sitemap_has_no_build_date(built):
    sitemap = (built / "sitemap.xml").read_text(encoding="utf-8")
    assert sitemap.startswith("<?xml") and "lastmod" not in sitemap


def test_two_builds_are_byte_identical(built, outside_registry, tmp_path):
    again = build_site(tmp_path / "again", registry=[outside_registry])
    assert _tree(again) == _tree(built)


def test_failed_build_leaves_the_previous_site_untouched(tmp_path, outside_registry):
    out = tmp_path / "site"
    build_site(out, registry=[outside_registry])
    before = _tree(out)
    broken = tmp_path / "broken"
    shutil.copytree(outside_registry, broken)
    (broken / "bad-entry.yaml").write_text("architecture: bert\ntitle: [unclosed\n", encoding="utf-8")
    with pytest.raises(
        ArchzooError, match=r"(?s)^site build failed: the registry has problems.*/bad-entry\.yaml:2: YAML syntax error"
    ) as info:
        build_site(out, registry=[broken])
    assert f"the previous site in {out.resolve()} is untouched" in str(info.value)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "site"]  # no staging folder left behind


def test_build_into_a_new_folder_that_fails_leaves_nothing(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.yaml").write_text("architecture: nosuch\ntitle: X\nsummary: X\nyear: 2020\n", encoding="utf-8")
    with pytest.raises(ArchzooError, match="unknown architecture 'nosuch'"):
        build_site(tmp_path / "site", registry=[broken])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken"]


def test_missing_registry_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ArchzooError, match=r"--registry .*/nope: no such folder; give a folder of registry YAML files"):
        build_site(tmp_path / "site", registry=[tmp_path / "nope"])


def test_the_site_folder_has_the_usual_permissions(built):
    """Not mkdtemp's 0700: a web server running as another user must be able to read the site."""
    mask = os.umask(0)
    os.umask(mask)
    assert built.stat().st_mode & 0o777 == 0o777 & ~mask


# ---- a third-party plugin installed in the environment, and a registry folder outside the repo -------

TOY_PLUGIN = '''\
"""A third-party archzoo plugin: a toy encoder, and a registry folder of its own."""
from pathlib import Path

from pydantic import Field, PositiveInt

from archzoo import ArchConfig, Architecture, hookimpl
from archzoo.blocks import composite, embedding, feed_forward, layer_norm, repeat
from archzoo.symbols import symbol


class ToyConfig(ArchConfig):
    vocab_size: PositiveInt = Field(1000, description="vocabulary")
    d_model: PositiveInt = Field(64, description="width")
    n_layers: PositiveInt = Field(2, description="layers")


def build(cfg):
    d = symbol("d", cfg.d_model)
    layer = composite("layer", "encoder_layer", [feed_forward("mlp", d, 4 * d), layer_norm("norm", d)])
    return composite("toy", "model", [embedding("token", symbol("V", cfg.vocab_size), d, role="token"),
                                      repeat(layer, symbol("L", cfg.n_layers), name="layers")])


@hookimpl
def register_architectures(register):
    register(Architecture(name="toy", title="Toy encoder", summary="A test plugin's architecture.",
                          citation="none", config_model=ToyConfig, build=build, seq_len=lambda cfg: 128))


@hookimpl
def register_registry_dirs(register):
    register(Path(__file__).parent / "registry")
'''

TOY_ENTRY = """\
architecture: toy
title: Toy one
summary: The toy plugin's own model.
tags: [toy]
year: 2024
config: {n_layers: 3}
"""


def test_installed_plugin_and_outside_registry_show_up(tmp_path, outside_registry):
    """A plugin installed as a distribution (entry point in the ``archzoo`` group) adds an architecture
    and a registry folder; an outside folder adds its models; archzoo itself is not changed."""
    site_packages = tmp_path / "site-packages"
    package = site_packages / "archzoo_toy"
    (package / "registry").mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_PLUGIN, encoding="utf-8")
    (package / "registry" / "toy-one.yaml").write_text(TOY_ENTRY, encoding="utf-8")
    dist = site_packages / "archzoo_toy-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: archzoo-toy\nVersion: 0.1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[archzoo]\ntoy = archzoo_toy\n", encoding="utf-8")
    out = tmp_path / "site"
    script = textwrap.dedent(f"""
        from pathlib import Path
        from archzoo.site import build_site
        from archzoo.site import SiteOptions
        build_site(Path({str(out)!r}), registry=[Path({str(outside_registry)!r})],
                   options=SiteOptions(plugin_registries=("toy",)))
        build_site(Path({str(out)!r} + "-without"), registry=[Path({str(outside_registry)!r})])
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site_packages), os.environ.get("PYTHONPATH", "")])}
    env.pop("ARCHZOO_PLUGINS", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    arch = _page(out, "architectures/toy")
    assert "Toy encoder" in arch and "toy-one" in arch and "archzoo:toy in archzoo-toy 0.1.0" in arch
    assert "Toy one" in _page(out, "models/toy-one")
    assert BERT_BASE_PARAMS in _page(out, "models/bert-base-uncased")  # the outside folder's models
    ids = [m["id"] for m in json.loads((out / "models.json").read_text(encoding="utf-8"))["models"]]
    assert ids == ["bert-base-uncased", "gpt2-small-test", "toy-one"]
    # a plugin's entries are opt-in: without plugin_registries the zoo is the outside folder's alone
    without = Path(f"{out}-without")
    ids = [m["id"] for m in json.loads((without / "models.json").read_text(encoding="utf-8"))["models"]]
    assert ids == ["bert-base-uncased", "gpt2-small-test"]
    assert "Toy encoder" in _page(without, "architectures/toy")  # the architecture itself is installed
    listing = subprocess.run(
        [sys.executable, "-m", "archzoo.cli", "plugins"], env=env, capture_output=True, text=True, timeout=120
    )
    assert f"ships a registry folder: {package / 'registry'}  (opt in: --plugin-registry toy" in listing.stdout


# ---- the repository's own build ---------------------------------------------------------------------


def test_plain_mkdocs_build_and_archzoo_build_are_the_same_build(tmp_path):
    """`mkdocs build --strict` in the repository runs the archzoo plugin on the same configuration as
    `archzoo build`: the two sites are byte for byte the same (but archzoo's marker file)."""
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    env.pop("ARCHZOO_REGISTRY", None)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "plain")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    result = subprocess.run(
        [sys.executable, "-m", "archzoo.cli", "build", "--out", str(tmp_path / "archzoo")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == f"site written to {tmp_path / 'archzoo'}\n"  # once, on standard output
    ours = _tree(tmp_path / "archzoo")
    assert ours.pop(".archzoo-site") and ours == _tree(tmp_path / "plain")
    page = _page(tmp_path / "plain", "models/bert-base-uncased")
    assert BERT_BASE_PARAMS in page
    assert "md-content__button" not in page  # no repository URL configured: no edit link, no local file link


def test_edit_links_open_the_file_in_the_repository(tmp_path):
    """With a repository URL, a model page edits its YAML file, an owner's page its markdown file, and
    archzoo's own pages (not files of the repository) have no edit link; --edit-pattern changes the form."""
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true"}
    out = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "archzoo.cli", "build", "--out", str(out), "--repo-url", "https://example.org/zoo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    page = _page(out, "models/bert-base-uncased")
    assert 'href="https://example.org/zoo/edit/main/registry/bert/bert-base-uncased.yaml"' in page
    assert 'href="https://example.org/zoo/edit/main/docs/about.md"' in _page(out, "about")
    assert 'href="https://example.org/zoo/edit/main/plugins/archzoo_bert/__init__.py"' in _page(
        out, "architectures/bert"
    )
    assert "md-content__button" not in _page(out, "methodology")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "archzoo.cli",
            "build",
            "--out",
            str(out),
            "--repo-url",
            "https://example.org/zoo",
            "--edit-pattern",
            "https://git.example.org/zoo/-/edit/dev/{path}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    page = _page(out, "models/bert-base-uncased")
    assert 'href="https://git.example.org/zoo/-/edit/dev/registry/bert/bert-base-uncased.yaml"' in page


def _one_entry_zoo(folder: Path, edit_pattern: str) -> Path:
    """A zoo (mkdocs.yml, docs/, registry/ with bert-base-uncased) whose edit links follow ``edit_pattern``."""
    (folder / "registry").mkdir(parents=True)
    (folder / "docs").mkdir()
    shutil.copy(BERT_BASE, folder / "registry" / "bert-base-uncased.yaml")
    (folder / "mkdocs.yml").write_text(
        textwrap.dedent(f"""\
        site_name: Edit links
        repo_url: https://example.org/zoo
        theme: {{name: material}}
        plugins:
          - search
          - archzoo:
              edit_pattern: {json.dumps(edit_pattern)}
        """),
        encoding="utf-8",
    )
    return folder / "mkdocs.yml"


def test_edit_pattern_fills_in_repo_url_and_path(tmp_path):
    """{repo_url} and {path} are both filled in, as the scaffold's mkdocs.yml says."""
    config = _one_entry_zoo(tmp_path / "zoo", "{repo_url}/-/edit/dev/{path}?plain=1")
    out = build_site(tmp_path / "site", config_file=config)
    assert 'href="https://example.org/zoo/-/edit/dev/registry/bert-base-uncased.yaml?plain=1"' in _page(
        out, "models/bert-base-uncased"
    )


@pytest.mark.hostile
@pytest.mark.parametrize(
    "pattern",
    [
        "javascript:alert(document.domain)//{path}",
        " JavaScript:alert(1)//{path}",
        "data:text/html,<script>alert(1)</script>{path}",
    ],
)
def test_edit_pattern_with_a_script_address_is_refused(tmp_path, pattern):
    """The pattern is written into href: only an http(s) (or relative) address is taken."""
    config = _one_entry_zoo(tmp_path / "zoo", pattern)
    with pytest.raises(ArchzooError, match=r"edit_pattern: .*: expected an http\(s\) address such as "):
        build_site(tmp_path / "site", config_file=config)
    assert not (tmp_path / "site").exists()


# ---- serving with live reload ---------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, OSError):
        return None


def _get_status(url: str) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def _wait_for(predicate, timeout: float = 120.0, server=None):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None:
            assert server.poll() is None, "the server stopped"
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError("timed out")


def test_serve_prints_its_url_rebuilds_and_shows_a_failed_rebuild(tmp_path):
    """`archzoo serve` says where it serves and each build's progress; a change rebuilds the page; a
    rebuild that fails serves a page naming the file and line (no request hangs), until the file is fixed."""
    import threading

    registry = tmp_path / "registry"
    registry.mkdir()
    entry = registry / "gpt2-small-test.yaml"
    entry.write_text(GPT2_YAML, encoding="utf-8")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "archzoo.cli", "serve", "--registry", str(registry), "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DISABLE_MKDOCS_2_WARNING": "true"},
    )
    said: list[str] = []
    threading.Thread(target=lambda: said.extend(iter(server.stderr.readline, "")), daemon=True).start()
    url = f"http://127.0.0.1:{port}/models/gpt2-small-test/"
    try:
        _wait_for(lambda: any(f"archzoo: serving http://127.0.0.1:{port}/" in line for line in said), server=server)
        assert any(line.startswith("archzoo: site ready in ") for line in said)
        assert any(line.startswith("archzoo: rendering ") for line in said)
        assert "GPT-2 small" in (_get(url) or "")
        entry.write_text(GPT2_YAML.replace("GPT-2 small", "GPT-2 renamed"), encoding="utf-8")
        _wait_for(lambda: "GPT-2 renamed" in (_get(url) or ""), server=server)
        entry.write_text(GPT2_YAML.replace("config: {}", "config: {n_layers: many}"), encoding="utf-8")
        page = _wait_for(
            lambda: (p := _get(f"http://127.0.0.1:{port}/")) and "cannot be read" in p and p, server=server
        )
        assert "registry/gpt2-small-test.yaml:6: config.n_layers: expected an integer" in page, page
        status, other = _get_status(url)  # any other URL answers at once (404), with the same banner
        assert status == 404 and "The registry cannot be read:</strong>" in other
        assert "location.reload()" in other  # the server's live-reload script is not in its 404 answers
        assert "registry/gpt2-small-test.yaml:6" in other
        entry.write_text(GPT2_YAML, encoding="utf-8")
        _wait_for(lambda: "GPT-2 small" in (_get(url) or ""), server=server)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_parallel_and_serial_generation_agree(outside_registry):
    """Large registries are computed in forked workers; the pages and records are the same."""
    from archzoo.site import generate, records

    results = {}
    for workers in ("1", "2"):
        zoo = generate.collect([outside_registry], directory_urls=True, workers=int(workers))
        results[workers] = (zoo.pages, [records.model_record(m) for m in zoo.models])
    assert results["1"] == results["2"]
    assert set(results["2"][0]) == {"bert-base-uncased", "gpt2-small-test"}


def test_a_huge_workers_setting_forks_a_bounded_number_of_processes():
    """``workers`` comes from the owner's mkdocs.yml: a typo must not fork thousands of processes."""
    from archzoo.site import generate

    assert generate._workers(10_000, 4000) == 64
    assert generate._workers(10_000, 3) == 3 and generate._workers(10_000, -1) == 1
