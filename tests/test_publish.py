"""Publishing a team's own zoo: `archzoo init`, the owner's configuration, no path of the build machine in
the site, and the whole path from a wheel installed in a fresh virtual environment outside the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: transformers 5.23 BertModel(BertConfig()): sum(p.numel() for p in model.parameters())
BERT_BASE_PARAMS = "109,482,240"


def _run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", **(env or {})}
    env.pop("ARCHZOO_REGISTRY", None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _archzoo(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "archzoo.cli", *args], cwd=cwd, env=env)


def _every_file(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_no_path_of_the_build_machine_in_any_output_file(tmp_path):
    """A zoo made by `archzoo init`, plus a registry folder outside it, built with the owner's settings:
    not one byte of any output file holds the temporary folder, the checkout, the home folder or a file
    URL; the owner's title, description and URLs are used, and only the pages they chose are published."""
    work = tmp_path / "work"
    zoo, outside = work / "acme-zoo", work / "elsewhere" / "models"
    outside.mkdir(parents=True)
    shutil.copy(REPO / "registry" / "bert" / "bert-base-uncased.yaml", outside / "bert-base-uncased.yaml")
    made = _archzoo("init", str(zoo), "--title", "Acme zoo", cwd=work)
    assert made.returncode == 0, made.stderr
    built = _archzoo(
        "build",
        "--out",
        str(work / "public"),
        "--registry",
        "registry",
        "--registry",
        str(outside),
        "--description",
        "Every model Acme serves.",
        "--site-url",
        "https://acme.example.org/zoo/",
        "--repo-url",
        "https://git.example.org/acme/zoo",
        "--pages",
        "writing-entries",
        cwd=zoo,
        env={"TMPDIR": str(tmp_path)},
    )
    assert built.returncode == 0, built.stderr
    site = work / "public"
    files = _every_file(site)
    assert len(files) > 50
    forbidden = {str(tmp_path), str(tmp_path.resolve()), str(REPO), str(Path.home())}
    for path in files:
        data = path.read_bytes()
        for text in forbidden:
            assert text.encode() not in data, f"{path.relative_to(site)} holds {text!r}"
        if not path.relative_to(site).as_posix().startswith("assets/"):  # the theme's source maps name file://
            assert b"file://" not in data, f"{path.relative_to(site)} links to a local file"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "<title>Acme zoo</title>" in home and "Every model Acme serves." in home  # the title once
    page = (site / "models" / "bert-base-uncased" / "index.html").read_text(encoding="utf-8")
    assert BERT_BASE_PARAMS in page and "<title>bert-base-uncased - Acme zoo</title>" in page
    assert "models/bert-base-uncased.yaml" in page  # shown from its registry folder, not from the machine's root
    assert "md-content__button" not in page  # outside the zoo's repository: nothing to edit there
    example = next(p for p in (site / "models").iterdir() if p.name.endswith("-example"))
    assert 'href="https://git.example.org/acme/zoo/edit/main/registry/' in (example / "index.html").read_text("utf-8")
    assert (site / "writing-entries" / "index.html").is_file() and (site / "schema" / "registry-entry.json").is_file()
    assert not (site / "methodology").exists() and not (site / "performance").exists()
    assert "<loc>https://acme.example.org/zoo/models/bert-base-uncased/</loc>" in (site / "sitemap.xml").read_text(
        "utf-8"
    )
    records = json.loads((site / "models.json").read_text(encoding="utf-8"))["models"]
    assert {r["source"] for r in records if r["id"] == "bert-base-uncased"} == {"models/bert-base-uncased.yaml"}


def test_a_configuration_without_the_archzoo_plugin_or_the_material_theme_is_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "registry").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: material\nplugins:\n  - search\n")
    result = _archzoo("build", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == (
        f"archzoo: error: {tmp_path / 'mkdocs.yml'}: plugins: the archzoo plugin is not configured; add "
        "`- archzoo` under `plugins:` (with `- search` before it)\n"
    )
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: mkdocs\nplugins:\n  - archzoo\n")
    result = _archzoo("build", cwd=tmp_path)
    assert result.returncode == 1
    assert "theme: the archzoo plugin needs the material theme, got 'mkdocs'" in result.stderr
    assert not (tmp_path / "site").exists()


def test_unknown_pages_and_plugin_registries_are_clear_errors(tmp_path):
    result = _archzoo("build", "--registry", str(REPO / "registry"), "--pages", "methodology,faq", cwd=tmp_path)
    assert (
        result.returncode == 2
        and "--pages: unknown page 'faq'; expected some of methodology, writing-entries, "
        "writing-plugins, performance, peers (or 'none')"
        in result.stderr
    )
    result = _archzoo("build", "--registry", str(REPO / "registry"), "--plugin-registry", "nosuch", cwd=tmp_path)
    assert result.returncode == 1
    assert "plugin registry 'nosuch': no installed plugin of that name ships a registry folder" in result.stderr
    assert not (tmp_path / "site").exists()


def test_an_error_in_the_default_site_names_no_file_of_the_build(tmp_path):
    """Without a mkdocs.yml the build writes a default configuration of its own: an error in what the
    command line set names that default site, never the temporary file the user cannot open."""
    result = _archzoo(
        "build",
        "--registry",
        str(REPO / "registry" / "gpt"),
        "--repo-url",
        "https://x.org/r",
        "--edit-pattern",
        "javascript:alert(1)/{path}",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(
        "archzoo: error: site build failed: the default site (no mkdocs.yml here; the "
        "command-line options set it): plugins: archzoo: edit_pattern: "
    )
    assert ".building-" not in result.stderr and list(tmp_path.iterdir()) == []


# ---- from a wheel, outside the checkout --------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.wheel
def test_a_wheel_installed_with_the_site_extra_inits_builds_and_serves_a_zoo(tmp_path):
    """Build archzoo's wheel, install it with the `site` extra into a fresh virtual environment outside the
    checkout, and run `archzoo init`, `archzoo validate`, `archzoo build` and `archzoo serve` there."""
    dist = tmp_path / "dist"
    wheel = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(REPO)],
        cwd=tmp_path,
        timeout=900,
    )
    assert wheel.returncode == 0, wheel.stderr[-3000:]
    [built] = dist.glob("archzoo-*.whl")
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python, archzoo = venv / "bin" / "python", venv / "bin" / "archzoo"
    installed = _run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{built}[site]"],
        cwd=tmp_path,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    # nothing of the checkout on the path: the package, its pages and templates all come from the wheel
    where = _run(
        [str(python), "-c", "import archzoo.site.plugin as p; print(p.PACKAGE_DOCS)"],
        cwd=tmp_path,
        env={"PYTHONPATH": ""},
    )
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where.stdout + where.stderr
    env = {"PYTHONPATH": "", "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    result = _run([str(archzoo), "init", "zoo", "--title", "Wheel zoo"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    zoo = tmp_path / "zoo"
    result = _run([str(archzoo), "validate", "registry"], cwd=zoo, env=env)
    assert result.returncode == 0 and result.stdout.endswith("entries valid\n"), result.stdout + result.stderr
    result = _run([str(archzoo), "build"], cwd=zoo, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    site = zoo / "site"
    assert "<title>Wheel zoo</title>" in (site / "index.html").read_text(encoding="utf-8")
    examples = sorted(p.name for p in (site / "models").iterdir() if p.is_dir())
    from archzoo.host import get_host  # the wheel holds the same built-in plugins as this checkout

    # a registry id has no "_": gpt_oss's example is gpt-oss-example
    assert examples == sorted(f"{name.replace('_', '-')}-example" for name in get_host().architectures)
    assert (site / "assets" / "vendor" / "katex" / "katex.min.js").is_file()
    assert (site / "methodology" / "index.html").is_file() and (site / "schema" / "registry-entry.json").is_file()
    for path in _every_file(site):
        assert str(tmp_path).encode() not in path.read_bytes(), path
    # plain `mkdocs build` of the same zoo is the same plugin on the same configuration
    result = _run(
        [str(venv / "bin" / "mkdocs"), "build", "--strict", "-q", "-d", str(tmp_path / "plain")], cwd=zoo, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "plain" / "models" / "gpt-example" / "index.html").is_file()
    port = _free_port()
    server = subprocess.Popen(
        [str(archzoo), "serve", "--port", str(port)],
        cwd=zoo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    try:
        deadline, page = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "Wheel zoo" not in page:
            assert server.poll() is None, server.stderr.read()[-3000:]
            time.sleep(0.5)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/models/vit-example/", timeout=5) as response:
                    page = response.read().decode("utf-8")
            except OSError:
                pass
        assert "Wheel zoo" in page
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert f"archzoo: serving http://127.0.0.1:{port}/" in err
