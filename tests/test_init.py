"""`archzoo init`: the scaffold of a team's zoo, its refusals, and that what it writes validates and builds."""

from __future__ import annotations

import os
import re
import types
import unicodedata
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

import archzoo
from archzoo import ArchzooError, hookimpl
from archzoo.cli import main
from archzoo.host import PluginHost
from archzoo.init import init_zoo
from archzoo.registry import SCHEMA_COMMENT, load_registry
from fast_subset import examples

FIXED_FILES = {"mkdocs.yml", "README.md", "docs/about.md", ".github/workflows/site.yml", ".gitignore"}


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(strict=False).load()


@pytest.fixture(scope="module")
def gpt_host() -> PluginHost:
    """GPT's plugin alone: a zoo with one example entry, for the tests of what init does with its options and
    its folder, which do not depend on how many examples it writes (one per installed architecture, most of
    init's time)."""
    return PluginHost(strict=False, only=["gpt"]).load()


@pytest.fixture
def zoo(tmp_path: Path, host: PluginHost) -> tuple[Path, list[Path]]:
    directory = tmp_path / "acme"
    return directory, init_zoo(directory, host)


def _on_disk(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _example_ids(host: PluginHost) -> dict[str, str]:
    """``{architecture: example id}`` for the host's architectures (ids allow no '_')."""
    return {name: name.replace("_", "-") + "-example" for name in host.architectures}


# ---- what is written ------------------------------------------------------------------------------


def test_every_file_is_listed_and_nothing_else_is_written(zoo, host, tmp_path):
    directory, files = zoo
    examples = {f"registry/{arch}/{model_id}.yaml" for arch, model_id in _example_ids(host).items()}
    assert {p.as_posix() for p in files} == FIXED_FILES | examples
    assert len(files) == len(set(files))
    assert all(not p.is_absolute() for p in files)
    assert _on_disk(directory) == FIXED_FILES | examples
    assert os.listdir(tmp_path) == ["acme"]  # no staging folder left beside it
    for path in files:
        assert "@@" not in (directory / path).read_text(encoding="utf-8"), f"{path}: a template field left unfilled"


def test_mkdocs_yml_has_the_site_keys_and_the_archzoo_plugin(zoo):
    directory, _ = zoo
    config = yaml.safe_load((directory / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config == {
        "site_name": "acme model zoo",
        "site_description": archzoo.init.DEFAULT_DESCRIPTION,
        "site_url": "",
        "repo_url": "",
        "theme": {"name": "material"},
        "plugins": [
            "search",
            {
                "archzoo": {
                    "registry": ["registry"],
                    "pages": ["methodology", "writing-entries"],
                    "plugin_registries": [],
                    "edit_pattern": "",
                }
            },
        ],
    }
    text = (directory / "mkdocs.yml").read_text(encoding="utf-8")
    commented = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert len(commented) >= 10, "every key is explained for a newcomer"


def test_site_url_goes_into_mkdocs_yml_and_the_schema_lines(tmp_path, host):
    directory = tmp_path / "zoo"
    files = init_zoo(directory, host, site_url="https://acme.github.io/zoo")
    config = yaml.safe_load((directory / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_url"] == "https://acme.github.io/zoo/"
    entries = [p for p in files if p.parts[0] == "registry"]
    for path in entries:
        first = (directory / path).read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=https://acme.github.io/zoo/schema/registry-entry.json"
    assert "https://acme.github.io/zoo/writing-entries/" in (directory / "README.md").read_text(encoding="utf-8")


def test_without_site_url_the_schema_line_is_the_installed_schema_file(zoo):
    directory, files = zoo
    for path in (p for p in files if p.parts[0] == "registry"):
        first = (directory / path).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(SCHEMA_COMMENT + "file:///")
        schema_file = Path(unquote(urlparse(first.removeprefix(SCHEMA_COMMENT)).path))
        assert schema_file.is_file()
        assert schema_file.parts[-4:] == ("site", "docs", "schema", "registry-entry.json")


def test_gitignore_ignores_the_site_and_its_staging_folders(zoo):
    directory, _ = zoo
    lines = [
        line
        for line in (directory / ".gitignore").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert lines == ["site/", ".site.building-*"]


def test_readme_and_about_page(zoo, host):
    directory, _ = zoo
    readme = (directory / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# acme model zoo\n")
    for text in (
        "pip install 'archzoo[site]'",
        "archzoo serve",
        "archzoo build",
        "archzoo validate registry",
        "Writing a registry entry",
        "GitHub Actions",
        ".github/workflows/site.yml",
    ):
        assert text in readme
    for name in host.architectures:
        assert f"`{name}`" in readme
    about = (directory / "docs" / "about.md").read_text(encoding="utf-8")
    assert about.startswith("# About this zoo\n")
    assert archzoo.init.DEFAULT_DESCRIPTION in about


# ---- the workflow ---------------------------------------------------------------------------------


def _condition_holds(expression: str, event: str, ref: str) -> bool:
    """A GitHub Actions ``if:`` of ==, !=, &&, || and parentheses over ``github.event_name`` and
    ``github.ref``, evaluated for one event."""
    python = expression.replace("&&", " and ").replace("||", " or ")
    assert re.fullmatch(r"[\sa-z_.()=!'/-]*", python.replace(" and ", " ").replace(" or ", " ")), expression
    github = types.SimpleNamespace(event_name=event, ref=ref)
    return eval(python, {"__builtins__": {}}, {"github": github})


def test_workflow_validates_builds_and_deploys_main_only(zoo):
    directory, _ = zoo
    workflow = yaml.safe_load((directory / ".github" / "workflows" / "site.yml").read_text(encoding="utf-8"))
    triggers = workflow[True]  # YAML 1.1 (PyYAML) reads the key `on` as true; GitHub reads it as "on"
    assert triggers["push"] == {"branches": ["main"]}
    assert "pull_request" in triggers
    assert set(workflow["concurrency"]) == {"group", "cancel-in-progress"}
    assert "${{ github.ref }}" in workflow["concurrency"]["group"]  # pull requests never queue behind main

    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert "if" not in build  # every push and pull request builds
    steps = build["steps"]
    runs = [step.get("run", "") for step in steps]
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    python = next(step for step in steps if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"
    install = next(run for run in runs if "pip install" in run)
    assert f'"archzoo[site]=={archzoo.__version__}"' in install
    validate = runs.index("archzoo validate registry")
    build_run = next(i for i, run in enumerate(runs) if run.startswith("archzoo build"))
    assert runs[build_run] == (
        'archzoo build --out site --site-url "${{ steps.pages.outputs.base_url }}/" '
        '--repo-url "${{ github.server_url }}/${{ github.repository }}"'
    )
    configure = uses.index("actions/configure-pages")
    assert steps[configure]["id"] == "pages"
    upload = uses.index("actions/upload-pages-artifact")
    assert steps[upload]["with"]["path"] == "site"
    assert runs.index(install) < validate < build_run < upload and configure < build_run

    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    assert workflow["permissions"] == {"contents": "read"}  # nothing else may write
    condition = deploy["if"]
    assert _condition_holds(condition, "push", "refs/heads/main")
    assert not _condition_holds(condition, "push", "refs/heads/feature")
    assert not _condition_holds(condition, "pull_request", "refs/pull/7/merge")
    assert not _condition_holds(condition, "pull_request", "refs/heads/main")


# ---- the example entries --------------------------------------------------------------------------


def test_every_example_entry_validates(zoo, host, capsys):
    directory, _ = zoo
    assert main(["validate", str(directory / "registry")]) == 0
    out = capsys.readouterr()
    assert out.out == f"{len(host.architectures)} entries valid\n"
    assert out.err == ""


def test_example_entries_write_out_the_default_configuration(zoo, host):
    directory, _ = zoo
    registry = load_registry([directory / "registry"], host)
    assert registry.problems == [] and registry.warnings == []
    ids = _example_ids(host)
    assert sorted(registry.entries) == sorted(ids.values())
    for arch_name, model_id in ids.items():
        entry = registry.get_model(model_id)
        arch = host.architecture(arch_name)
        assert entry.spec.architecture == arch_name
        assert entry.config == arch.config_model()  # the architecture's defaults, whatever is written out
        assert entry.spec.tags == ["example"] and entry.spec.title and entry.spec.summary
        text = entry.path.read_text(encoding="utf-8")
        written = yaml.safe_load(text)["config"]
        for key in arch.config_model.model_fields:
            # each key is either written out or shown commented out with its default (a null the
            # registry refuses written, e.g. BERT's pooler, resolved from the other keys)
            assert key in written or re.search(rf"^  # {key}: ", text, re.M), f"{model_id}: {key} not shown"
        assert len(written) >= len(arch.config_model.model_fields) // 2


def _extra_plugin(*architectures) -> types.ModuleType:
    module = types.ModuleType("archzoo_extra")

    def register_architectures(register):
        for arch in architectures:
            register(arch)

    module.register_architectures = hookimpl(register_architectures)
    return module


def test_an_architecture_without_defaults_gets_no_example_and_is_named(tmp_path):
    gpt = PluginHost(only=["gpt"]).load().architecture("gpt")

    class NeedsWidth(gpt.config_model):
        width: int = Field(description="a key with no default")

    needs = gpt.model_copy(update={"name": "needs_width", "config_model": NeedsWidth, "plugin": ""})
    renamed = gpt.model_copy(update={"name": "my_gpt", "plugin": ""})
    host = PluginHost(only=["gpt", "extra"], extra_plugins={"extra": _extra_plugin(needs, renamed)}).load()
    lines: list[str] = []
    directory = tmp_path / "zoo"
    files = init_zoo(directory, host, progress=lines.append)
    assert {p.as_posix() for p in files} - FIXED_FILES == {
        "registry/gpt/gpt-example.yaml",
        "registry/my_gpt/my-gpt-example.yaml",
    }
    # the reason is the registry loader's own message for the key
    assert len(lines) == 1
    assert lines[0].startswith(
        "no example entry for architecture 'needs_width' (plugin 'extra'): its default "
        "configuration does not validate: config.width: required key missing"
    )
    readme = (directory / "README.md").read_text(encoding="utf-8")
    assert (
        "No example was written for these architectures, whose default configurations do not validate: "
        "needs_width (plugin extra): config.width: required key missing"
    ) in " ".join(readme.split())
    assert not (directory / "registry" / "needs_width").exists()
    assert load_registry([directory / "registry"], host).problems == []


def test_no_architecture_at_all_is_refused_and_leaves_nothing(tmp_path):
    host = PluginHost(only=[]).load()
    with pytest.raises(ArchzooError) as info:
        init_zoo(tmp_path / "zoo", host)
    assert str(info.value) == (
        f"{tmp_path / 'zoo'}: no installed architecture gives a valid example entry (no plugin registers one "
        "(`archzoo plugins` lists what is loaded)); a zoo needs at least one architecture to describe its models with"
    )
    assert os.listdir(tmp_path) == []


# ---- hostile titles -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "Acme: models # of 2024 'best' “ever”\nsecond line",
        "yes",
        "123",
        "- dash",
        "[not, a, list]",
        "{not: a map}",
        "@at & *star !bang %pct `tick` | pipe > gt",
        "Ünïcödé 模型 zoo 🦒",
        "next\u2028line\u2029para",
        "tab\there",
    ],
)
def test_any_title_and_description_round_trip(tmp_path, gpt_host, title):
    directory = tmp_path / "zoo"
    init_zoo(directory, gpt_host, title=title, description=f"About {title}")
    config = yaml.safe_load((directory / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_name"] == title
    assert config["site_description"] == f"About {title}"
    first = (directory / "README.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# " + " ".join(title.split())  # one heading line, whatever the title holds


def _shown(text: str) -> bool:
    """Text a page title can hold: no control characters but line breaks and tabs, no lone surrogates, none
    of the characters mkdocs-material would read as markup in it (< and ")."""
    return all((unicodedata.category(c) not in ("Cc", "Cs") or c in "\n\t") and c not in '<"' for c in text)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.text(min_size=1).filter(str.strip), description=st.text())
def test_any_text_round_trips_or_is_refused_naming_the_character(tmp_path_factory, gpt_host, title, description):
    directory = tmp_path_factory.mktemp("zoo") / "zoo"
    if not (_shown(title) and _shown(description)):
        with pytest.raises(
            ArchzooError,
            match=r"^--(title|description): character \d+ is (not text|the control "
            r"character U\+[0-9A-F]{4}|'<'|'\"')",
        ):
            init_zoo(directory, gpt_host, title=title, description=description)
        assert not directory.exists()
        return
    init_zoo(directory, gpt_host, title=title, description=description)
    config = yaml.safe_load((directory / "mkdocs.yml").read_text(encoding="utf-8"))
    assert (config["site_name"], config["site_description"]) == (title, description)
    assert (directory / "README.md").read_text(encoding="utf-8").splitlines()[0] == "# " + " ".join(title.split())


@pytest.mark.parametrize(
    "title, message",
    [
        ("Acme\x1b[31m zoo", "--title: character 5 is the control character U+001B, which no page can show; remove it"),
        ("zoo\udcff", "--title: character 4 is not text (the command line held bytes that are not UTF-8); retype it"),
    ],
)
def test_text_no_page_can_show_is_refused(tmp_path, host, title, message):
    with pytest.raises(ArchzooError) as info:
        init_zoo(tmp_path / "zoo", host, title=title)
    assert str(info.value) == message
    assert os.listdir(tmp_path) == []


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("option", "text", "position", "char"),
    [
        ("title", "Acme <script>alert(1)</script> zoo", 6, "'<'"),
        ("title", 'Acme" onmouseover="alert(1)', 5, "'\"'"),
        ("description", "<img src=x onerror=alert(1)>", 1, "'<'"),
    ],
)
def test_markup_in_the_title_or_description_is_refused(tmp_path, host, option, text, position, char):
    """mkdocs-material writes the site's name and description into every page's HTML unescaped (the header,
    an aria-label, the <title>, the description meta tag): markup there would run on every page."""
    with pytest.raises(ArchzooError) as info:
        init_zoo(tmp_path / "zoo", host, **{option: text})
    assert str(info.value) == (
        f"--{option}: character {position} is {char}, which mkdocs-material writes into every page's HTML as it is, "
        "where it would be markup instead of text; leave out < and \" (write ' or “ ” for quotes)"
    )
    assert os.listdir(tmp_path) == []


@pytest.mark.hostile
def test_the_about_page_shows_the_description_as_text(tmp_path, gpt_host):
    """Markdown in the description (a javascript: link, emphasis, a list marker) is shown as written on the
    About page, never made into a link or markup: the page is rendered here with Python-Markdown, as MkDocs does."""
    markdown = pytest.importorskip("markdown")
    description = "1. [click](javascript:alert(1)) & *bold* `code` > quote"
    init_zoo(tmp_path / "zoo", gpt_host, description=description)
    html = markdown.markdown((tmp_path / "zoo" / "docs" / "about.md").read_text(encoding="utf-8"))
    assert html.startswith("<h1>About this zoo</h1>\n<p>")  # the description is the first paragraph, whole
    shown = html.split("<p>", 2)[1].split("</p>")[0]
    assert "<" not in shown  # no element: no link, no emphasis, no list, no code
    assert unescape(shown) == description


@pytest.mark.hostile
@pytest.mark.parametrize("site_url", ["javascript:alert(1)//", "JaVaScRiPt:alert(1)", "data:text/html,<b>x</b>"])
def test_a_site_url_that_is_not_http_is_refused(tmp_path, host, site_url):
    with pytest.raises(ArchzooError) as info:
        init_zoo(tmp_path / "zoo", host, site_url=site_url)
    assert str(info.value) == (
        f"--site-url {site_url!r}: expected the address the site will be published at, starting with https:// "
        "(e.g. https://acme.github.io/zoo/); a page links to http(s) addresses only: another scheme (javascript:, "
        "data:) would run or open something else when clicked"
    )
    assert os.listdir(tmp_path) == []


def test_an_empty_title_is_refused(tmp_path, host):
    with pytest.raises(ArchzooError, match=r"^--title: the site's name cannot be empty; "):
        init_zoo(tmp_path / "zoo", host, title=" ")
    assert os.listdir(tmp_path) == []


def test_a_site_url_must_be_an_address(tmp_path, host):
    with pytest.raises(
        ArchzooError,
        match=r"^--site-url 'acme.github.io/zoo': expected the address the site will "
        r"be published at, starting with https://",
    ):
        init_zoo(tmp_path / "zoo", host, site_url="acme.github.io/zoo")
    assert os.listdir(tmp_path) == []


# ---- refusals: never overwrite, never leave anything behind -------------------------------------


def test_a_non_empty_folder_is_refused_and_left_as_it_was(tmp_path, host):
    directory = tmp_path / "zoo"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ArchzooError) as info:
        init_zoo(directory, host)
    assert str(info.value) == (
        f"{directory}: the folder is not empty (it holds notes.txt); give a new or empty "
        "folder (archzoo init never overwrites or deletes anything)"
    )
    assert _on_disk(tmp_path) == {"zoo/notes.txt"}
    assert (directory / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_crowded_folder_names_the_first_five_of_what_it_holds(tmp_path, host):
    for name in ("a", "b", "c", "d", "e", "f", ".git"):
        (tmp_path / name).mkdir()
    with pytest.raises(ArchzooError, match=r"the folder is not empty \(it holds \.git, a, b, c, d and 2 more\)"):
        init_zoo(tmp_path, host)
    assert sorted(os.listdir(tmp_path)) == [".git", "a", "b", "c", "d", "e", "f"]


def test_a_file_in_place_of_the_folder_is_refused(tmp_path, host):
    path = tmp_path / "zoo"
    path.write_text("a file", encoding="utf-8")
    with pytest.raises(ArchzooError) as info:
        init_zoo(path, host)
    assert str(info.value) == (
        f"{path}: is a file, not a folder; give a new or empty folder's name (archzoo init never overwrites anything)"
    )
    assert os.listdir(tmp_path) == ["zoo"] and path.read_text(encoding="utf-8") == "a file"


def test_a_broken_link_in_place_of_the_folder_is_refused(tmp_path, host):
    (tmp_path / "zoo").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ArchzooError, match=r"zoo: is a broken symbolic link, not a folder"):
        init_zoo(tmp_path / "zoo", host)
    assert os.listdir(tmp_path) == ["zoo"] and not (tmp_path / "nowhere").exists()


def test_a_missing_parent_folder_is_refused(tmp_path, host):
    with pytest.raises(ArchzooError, match=r"^.*/a/zoo: its parent folder .*/a does not exist; create it first$"):
        init_zoo(tmp_path / "a" / "zoo", host)
    assert os.listdir(tmp_path) == []


def test_an_existing_empty_folder_is_filled_in_place(tmp_path, gpt_host, monkeypatch):
    directory = tmp_path / "zoo"
    directory.mkdir()
    inode = directory.stat().st_ino
    monkeypatch.chdir(directory)
    files = init_zoo(Path("."), gpt_host)
    assert directory.stat().st_ino == inode  # the same folder (the shell's current one), not a replacement
    assert _on_disk(directory) == {p.as_posix() for p in files}
    assert os.listdir(tmp_path) == ["zoo"]
    config = yaml.safe_load((directory / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_name"] == "zoo model zoo"  # "." is named after the folder it is


def test_a_failure_while_writing_leaves_nothing(tmp_path, gpt_host, monkeypatch):
    calls = []
    real = archzoo.init._write

    def failing(root, relative, text):
        calls.append(relative)
        if relative == "docs/about.md":
            raise OSError(28, "No space left on device")
        return real(root, relative, text)

    monkeypatch.setattr(archzoo.init, "_write", failing)
    with pytest.raises(ArchzooError) as info:
        init_zoo(tmp_path / "zoo", gpt_host)
    assert str(info.value) == f"{tmp_path / 'zoo'}: cannot write the zoo (No space left on device); nothing was changed"
    assert "docs/about.md" in calls
    assert os.listdir(tmp_path) == []


def test_a_failure_while_moving_into_an_empty_folder_undoes_the_moves(tmp_path, gpt_host, monkeypatch):
    directory = tmp_path / "zoo"
    directory.mkdir()
    real = Path.rename
    moved: list[str] = []

    def rename(self, target):
        if Path(target).parent == directory:
            if len(moved) == 2:
                raise OSError(5, "Input/output error")
            moved.append(Path(target).name)
        return real(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(ArchzooError, match=r"cannot write the zoo \(Input/output error\); nothing was changed$"):
        init_zoo(directory, gpt_host)
    assert len(moved) == 2
    assert os.listdir(directory) == []
    assert os.listdir(tmp_path) == ["zoo"]


# ---- end to end: the scaffold builds --------------------------------------------------------------


def test_the_scaffold_builds_a_site_with_a_page_per_example(tmp_path, host, monkeypatch):
    directory = tmp_path / "zoo"
    init_zoo(directory, host)
    monkeypatch.chdir(directory)
    assert (
        main(
            [
                "build",
                "--out",
                "site",
                "--site-url",
                "https://acme.github.io/zoo/",
                "--repo-url",
                "https://github.com/acme/zoo",
            ]
        )
        == 0
    )
    site = directory / "site"
    for name, model_id in _example_ids(host).items():
        page = site / "models" / model_id / "index.html"
        assert page.is_file(), f"no page for {model_id}"
        edit = f'href="https://github.com/acme/zoo/edit/main/registry/{name}/{model_id}.yaml"'
        assert edit in page.read_text(encoding="utf-8")  # the edit link opens the entry's own file
    assert (site / "about" / "index.html").is_file()  # the owner's own page
    assert (site / "writing-entries" / "index.html").is_file()  # where the README sends newcomers
    assert (site / "schema" / "registry-entry.json").is_file()  # where the entries' schema line points
    assert not (site / "writing-plugins" / "index.html").exists()  # only the pages mkdocs.yml asks for
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [".github", ".gitignore", "README.md", "docs", "mkdocs.yml", "registry", "site"]
    )


def test_a_new_zoo_folder_has_the_permissions_mkdir_gives(tmp_path, gpt_host):
    """The zoo is written in a staging folder (made private by tempfile) and renamed into place: it must end
    up as readable as a folder made with mkdir, not private to its owner."""
    umask = os.umask(0o022)
    try:
        init_zoo(tmp_path / "zoo", gpt_host)
        (tmp_path / "plain").mkdir()
    finally:
        os.umask(umask)
    assert (tmp_path / "zoo").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    "site_url", ["https://a.example/\nfoo: bar", "https://a.example/ zoo/", "https://a.example/\t"]
)
def test_a_site_url_with_a_blank_or_line_break_is_refused_before_anything_is_written(tmp_path, host, site_url):
    """The address is written into mkdocs.yml and each example entry's schema comment: a line break there
    would inject a YAML key into every entry."""
    with pytest.raises(ArchzooError, match=r"an address has no spaces, tabs or line breaks \(found U\+00(0A|20|09)\)"):
        init_zoo(tmp_path / "zoo", host, site_url=site_url)
    assert not (tmp_path / "zoo").exists()
