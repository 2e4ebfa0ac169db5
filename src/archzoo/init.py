"""`archzoo init DIR`: scaffold a team's own model-zoo repository, ready to build, validate and publish.

The scaffold is the site's ``mkdocs.yml`` (the ``archzoo`` MkDocs plugin and its options, each
commented), one example registry entry per installed architecture, an ``About`` page, a README, a
GitHub Actions workflow that validates, builds and publishes to GitHub Pages, and a ``.gitignore``. The
files are rendered from the templates in ``archzoo/templates/zoo/``; every value a user gives (title,
description, address) goes into YAML through ``yaml.safe_dump``, so any text is safe YAML, and into
Markdown on one line. What reaches a page of the site is checked or escaped: the title and description
are written by mkdocs-material into every page's HTML as they are, so the characters that would be
markup there (``<`` and ``"``) are refused; the About page shows the description through the site's one
escaper (`archzoo.site.pages.text_html`); an address is http(s) only.

Nothing is ever overwritten or deleted: the folder must be missing or empty. Everything is written to a
staging folder first and moved into place only once every example entry has been validated with the
registry's own loader, so a failure leaves nothing behind.
"""

from __future__ import annotations

import datetime
import string
import textwrap
import unicodedata
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic_core import to_jsonable_python

from . import __version__
from .architecture import Architecture
from .errors import ArchzooError
from .folders import check_new_folder, write_new_folder
from .host import PluginHost
from .registry import SCHEMA_COMMENT, RegistryProblem, load_registry
from .site.pages import safe_url, text_html

__all__ = ["check_address", "check_page_text", "init_zoo", "schema_url"]

DEFAULT_DESCRIPTION = "Exact parameter counts, FLOPs and memory of our models, explained block by block."

#: Where each rendered template goes in the zoo (the example entries are written separately).
_FILES: dict[str, str] = {
    "mkdocs.yml": "mkdocs.yml.tmpl",
    "README.md": "README.md.tmpl",
    "docs/about.md": "about.md.tmpl",
    ".github/workflows/site.yml": "site.yml.tmpl",
    ".gitignore": "gitignore.tmpl",
}

#: Column comments wrap at: the width of the rest of the scaffold.
_WIDTH = 110


class _ZooTemplate(string.Template):
    """``@@{name}`` placeholders: ``$`` and ``${{ }}`` belong to GitHub Actions and shell in the templates."""

    delimiter = "@@"


def _render(template: str, **fields: str) -> str:
    text = (resources.files("archzoo") / "templates" / "zoo" / template).read_text(encoding="utf-8")
    return _ZooTemplate(text).substitute(fields)  # a missing field is a KeyError: templates and code agree


def _yaml_value(value: Any) -> str:
    """One YAML value to write after ``key: ``, quoted when plain YAML would read it as something else
    (``yes``, ``: #``); a text with line breaks continues on indented lines, as YAML folds quoted text.

    Non-ASCII text is written as it is, unless PyYAML would not read it back (it writes U+0085 raw in
    single quotes, then reads it as a space): then every non-ASCII character is written escaped.
    """
    for readable in (True, False):
        flow = yaml.safe_dump([value], default_flow_style=True, width=float("inf"), allow_unicode=readable)
        text = flow.strip()[1:-1]  # the value without the brackets of the one-item list it was dumped in
        if yaml.safe_load(f"[{text}]") == [value]:
            break
    return text


def _one_line(text: str) -> str:
    """Text for a Markdown paragraph or a YAML comment: on one line, and only characters YAML allows in a
    file (no control characters but tab, no surrogates, no U+FFFE or U+FFFF)."""
    return " ".join("".join(c if _yaml_printable(c) else " " for c in text).split())


def _yaml_printable(char: str) -> bool:
    code = ord(char)
    return code == 0x09 or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000


def schema_url(site_url: str | None) -> str:
    """Where an entry's yaml-language-server line points: the published site's copy of the entry schema,
    else the installed package's file."""
    if site_url:
        return site_url.rstrip("/") + "/schema/registry-entry.json"
    schema = resources.files("archzoo.site") / "docs" / "schema" / "registry-entry.json"
    return Path(str(schema)).resolve().as_uri()


def _config_block(arch: Architecture, commented: frozenset[str] = frozenset()) -> str:
    """``config:`` with every key the architecture's configuration has a default for, each with its
    description; the keys in ``commented`` are shown commented out (left out, they take that default)."""
    rows: list[tuple[str, str]] = []
    for name, info in arch.config_model.model_fields.items():
        if info.is_required():
            continue  # no default to show: the entry fails validation and is left out, saying why
        key = info.alias or name
        value = _yaml_value(to_jsonable_python(info.get_default(call_default_factory=True)))
        prefix = "# " if key in commented else ""
        rows.append((f"{prefix}{_yaml_value(key)}: {value}", _one_line(info.description or "")))
    if not rows:
        return "config: {}"
    if len(commented) == len(rows):
        rows.insert(0, ("{}", ""))  # "config:" with nothing under it would be null, not an empty mapping
    column = max(len(line) for line, _ in rows) + 2
    lines = ["config:"]
    for line, description in rows:
        if line == "{}":
            lines[0] += " {}"
            continue
        wrapped = textwrap.wrap(description, max(40, _WIDTH - 2 - column - 2)) or [""]
        lines.append(f"  {line:<{column}}# {wrapped[0]}".rstrip() if description else f"  {line}")
        lines += [f"  {'':<{column}}# {more}" for more in wrapped[1:]]  # under the first line's comment
    return "\n".join(lines)


def _example_entry(arch: Architecture, schema: str, year: int, commented: frozenset[str] = frozenset()) -> str:
    return _render(
        "entry.yaml.tmpl",
        schema_line=SCHEMA_COMMENT + schema,
        architecture=_yaml_value(arch.name),
        title=_yaml_value(f"{_one_line(arch.title)} (example)"),
        summary=_yaml_value(
            f"An example {_one_line(arch.title)} entry, at the architecture's default "
            f"configuration: {_one_line(arch.summary)}"
        ),
        year=str(year),
        plugin=_one_line(arch.plugin) or "unknown",
        config=_config_block(arch, commented),
    )


def _example_id(name: str, taken: set[str]) -> str:
    """``<architecture>-example``, as a registry id (which allows no ``_``) not used yet."""
    base = "-".join(part for part in name.replace("_", "-").split("-") if part) + "-example"
    model_id, n = base, 2
    while model_id in taken:
        model_id, n = f"{base}-{n}", n + 1
    taken.add(model_id)
    return model_id


#: The characters mkdocs-material's templates would read as markup in the site's name and description, which
#: they write into every page as they are (``{{ config.site_name }}`` in the header, in an aria-label
#: attribute, in the <title>): '<' starts an element, '"' ends the attribute. Escaping them instead would
#: show "&lt;" where the same templates escape the name themselves (its title attribute).
MARKUP = '<"'


def check_page_text(option: str, text: str) -> None:
    """Refuse what no page title or description can show: control characters other than line breaks and
    tabs, lone surrogates (bytes of the command line that were not UTF-8), and the characters the theme
    would read as markup (`MARKUP`). ``option`` names where the text came from, for the message."""
    for position, char in enumerate(text, 1):
        if char in MARKUP:
            raise ArchzooError(
                f"{option}: character {position} is {char!r}, which mkdocs-material writes into every page's HTML "
                "as it is, where it would be markup instead of text; leave out < and \" (write ' or “ ” for quotes)"
            )
        category = unicodedata.category(char)
        if category == "Cs":
            raise ArchzooError(
                f"{option}: character {position} is not text (the command line held bytes that are "
                "not UTF-8); retype it"
            )
        if category == "Cc" and char not in "\n\t":
            raise ArchzooError(
                f"{option}: character {position} is the control character U+{ord(char):04X}, which "
                "no page can show; remove it"
            )


def check_address(
    option: str,
    url: str,
    what: str = "the address the site will be published at",
    example: str = "https://acme.github.io/zoo/",
) -> None:
    """Refuse an address a page cannot link to: a scheme other than http or https (``javascript:``,
    ``data:``, as a browser reads the scheme: `archzoo.site.pages.safe_url`), or a blank in it."""
    if not url.startswith(("https://", "http://")) or safe_url(url) is None:
        raise ArchzooError(
            f"{option} {url!r}: expected {what}, starting with https:// (e.g. {example}); a page links to http(s) "
            "addresses only: another scheme (javascript:, data:) would run or open something else when clicked"
        )
    blank = next((c for c in url if c <= " " or c == "\x7f"), None)
    if blank is not None:
        raise ArchzooError(
            f"{option} {url!r}: an address has no spaces, tabs or line breaks (found U+{ord(blank):04X}); "
            "it goes into mkdocs.yml and every example entry's schema line, so give it on one line"
        )


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8", newline="\n") as file:
        file.write(text)
    return Path(relative)


def _write_examples(
    staging: Path, host: PluginHost, site_url: str, progress: Callable[[str], None]
) -> tuple[dict[str, tuple[Architecture, Path]], list[str]]:
    """One example entry per architecture, each checked by the registry's own loader: ``({id: (architecture,
    file)}, [why each architecture left out has no example])``.

    A key whose default the loader refuses written out (a null the plugin resolves from the other keys)
    is commented out and the entry checked again; an entry that still fails is removed and reported.
    """
    schema = schema_url(site_url or None)
    year = datetime.date.today().year
    examples: dict[str, tuple[Architecture, Path, frozenset[str]]] = {}
    taken: set[str] = set()
    for arch in host.architectures.values():
        model_id = _example_id(arch.name, taken)
        relative = Path("registry") / arch.name / f"{model_id}.yaml"
        _write(staging, relative.as_posix(), _example_entry(arch, schema, year))
        examples[model_id] = (arch, relative, frozenset())

    skipped: list[str] = []
    for attempt in range(2):
        if not examples:
            break
        by_id: dict[str, list[RegistryProblem]] = {}
        for problem in load_registry([staging / "registry"], host).problems:
            by_id.setdefault(problem.path.stem, []).append(problem)
        for model_id, problems in by_id.items():
            if model_id not in examples:
                continue
            arch, relative, commented = examples[model_id]
            keys = {_config_key(p.key) for p in problems}
            written = {
                info.alias or name for name, info in arch.config_model.model_fields.items() if not info.is_required()
            } - commented
            (staging / relative).unlink()
            if attempt == 0 and keys <= written:
                commented = commented | frozenset(k for k in keys if k is not None)
                _write(staging, relative.as_posix(), _example_entry(arch, schema, year, commented))
                examples[model_id] = (arch, relative, commented)
                continue
            del examples[model_id]
            if not any((staging / relative.parent).iterdir()):
                (staging / relative.parent).rmdir()  # an empty folder would read as an architecture with no models
            first = problems[0]
            message = f"{first.key}: {first.message}" if first.key else first.message
            skipped.append(f"{arch.name} (plugin {arch.plugin}): {message}")
            progress(
                f"no example entry for architecture {arch.name!r} (plugin {arch.plugin!r}): its default "
                f"configuration does not validate: {message}"
            )
        if not by_id:
            break
    return {model_id: (arch, relative) for model_id, (arch, relative, _) in examples.items()}, skipped


def _config_key(key: str) -> str | None:
    """``config.pooler`` -> ``pooler``; None for a problem outside the configuration."""
    return key.removeprefix("config.").split(".")[0] if key.startswith("config.") else None


def _scaffold(
    staging: Path,
    directory: Path,
    host: PluginHost,
    *,
    title: str,
    description: str,
    site_url: str,
    progress: Callable[[str], None],
) -> list[Path]:
    """Write every file into ``staging``; the examples that fail validation are removed and reported."""
    examples, skipped = _write_examples(staging, host, site_url, progress)
    if not examples:
        why = "; ".join(skipped) or "no plugin registers one (`archzoo plugins` lists what is loaded)"
        raise ArchzooError(
            f"{directory}: no installed architecture gives a valid example entry ({why}); a zoo "
            "needs at least one architecture to describe its models with"
        )

    names = ", ".join(f"`{arch.name}`" for arch, _ in examples.values())
    skipped_note = ""
    if skipped:
        skipped_note = (
            "\n\nNo example was written for these architectures, whose default configurations do "
            "not validate: " + "; ".join(skipped) + "."
        )
    writing_entries = (
        f"{site_url.rstrip('/')}/writing-entries/" if site_url else "`writing-entries/` on the site, in its navigation"
    )
    files = [
        _write(
            staging,
            "mkdocs.yml",
            _render(
                _FILES["mkdocs.yml"],
                site_name=_yaml_value(title),
                site_description=_yaml_value(description),
                site_url=_yaml_value(site_url) if site_url else '""',
            ),
        ),
        _write(
            staging,
            "README.md",
            _render(
                _FILES["README.md"],
                title=_one_line(title),
                description=_one_line(description),
                architectures=names,
                skipped=skipped_note,
                writing_entries=writing_entries,
                archzoo_version=__version__,
            ),
        ),
        _write(
            staging,
            "docs/about.md",
            _render(_FILES["docs/about.md"], description=f"<p>{text_html(_one_line(description))}</p>"),
        ),
        _write(
            staging,
            ".github/workflows/site.yml",
            _render(_FILES[".github/workflows/site.yml"], archzoo_version=__version__),
        ),
        _write(staging, ".gitignore", _render(_FILES[".gitignore"])),
    ]
    return files + sorted(relative for _, relative in examples.values())


def init_zoo(
    directory: Path,
    host: PluginHost,
    *,
    title: str | None = None,
    description: str | None = None,
    site_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Scaffold a model zoo in ``directory`` (missing or empty) and return the files written, relative to it.

    ``title`` defaults to "<folder name> model zoo"; ``site_url`` (``https://...``) is where the site will
    be published, written into ``mkdocs.yml`` and used for the example entries' schema line (without it,
    they point at the installed package's schema file). ``progress`` receives a line for each architecture
    left without an example because its defaults do not validate.
    """
    directory = Path(directory)
    if site_url:
        check_address("--site-url", site_url)
    if site_url and not site_url.endswith("/"):
        site_url += "/"
    exists = check_new_folder(directory, command="archzoo init")
    name = directory.resolve().name or "my"
    title = title if title is not None else f"{name} model zoo"
    if not title.strip():
        raise ArchzooError("--title: the site's name cannot be empty; give one, e.g. --title 'Acme model zoo'")
    description = description if description is not None else DEFAULT_DESCRIPTION
    for option, text in (("--title", title), ("--description", description)):
        check_page_text(option, text)

    def write(staging: Path) -> list[Path]:
        return _scaffold(
            staging,
            directory,
            host,
            title=title,
            description=description,
            site_url=site_url or "",
            progress=progress or (lambda line: None),
        )

    files = write_new_folder(directory, exists, write, what="zoo")
    return files
