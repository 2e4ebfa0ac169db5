"""The ``archzoo`` MkDocs plugin: a zoo's site, generated from its registry and the installed plugins.

It is the whole site: ``mkdocs build`` and ``archzoo build`` both run it, configured in the zoo's
``mkdocs.yml``::

    site_name: Acme model zoo
    theme:
      name: material
    plugins:
      - search
      - archzoo:
          registry: [registry]                    # folders of entries, relative to mkdocs.yml
          pages: [methodology, writing-entries]   # archzoo's own pages to publish (PAGES lists them all)
          plugin_registries: []                   # installed plugins whose shipped entries to include, or [all]
          edit_pattern: ""                        # {repo_url} and {path} filled in; default "{repo_url}/edit/main/{path}"
          cache: true                             # keep each entry's generated page between builds (pagecache)

What it does, by MkDocs event:

* ``on_config``: adds what the pages need to the owner's configuration, keeping what the owner set:
  archzoo's theme templates (after the owner's ``custom_dir``), the Markdown extensions (arithmatex,
  superfences with mermaid, ...), the theme features the navigation relies on, the stylesheets and
  scripts, system fonts (no font CDN: the site works offline).
* ``on_files``: reads the registry (`archzoo.site.generate.collect`), and adds every generated page
  (home, all models, a page per model and per architecture, the compare page), ``models.json`` and
  ``models.csv``, the JSON the compare page and the what-if calculators read (`archzoo.site.explore`),
  archzoo's own pages that ``pages`` names, their assets and the entry schema; then the navigation.
  The owner's files in ``docs/`` win over archzoo's pages and assets of the same name; a generated page
  cannot be replaced (a file in its place is an error).
* ``on_page_context``: edit links, from ``edit_pattern``, for the files of the owner's repository (model
  pages edit their YAML file, the owner's pages their markdown file); none for anything outside it, and
  never an absolute path of the build machine. Model pages are indexed for search by id, title, tags and
  summary instead of their tables.
* Progress lines every `PROGRESS_EVERY` pages; every page's date fixed (``SOURCE_DATE_EPOCH``, else
  1980-01-01) so that builds are reproducible.

Each entry's generated page is kept between builds (`archzoo.site.pagecache`, unless ``cache: false``), so
a build generates only the entries that changed. While serving, MkDocs runs dirty builds and the plugin
marks each generated file the last build wrote as it is now (`archzoo.site.rebuild`): saving one entry
re-renders that model's page and the pages that show it. ``on_files`` also refuses a file of ``docs/``
that is a symbolic link out of the zoo: it would be published.

Under ``mkdocs serve`` / ``archzoo serve`` a registry that cannot be read does not stop the server: the
site becomes one page showing the problem (``file:line: key: message``) on every URL, until it is fixed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.utils import clean_directory

from ..errors import ArchzooError
from ..host import get_host
from . import explore, pages, peers
from .exports import models_csv, models_json
from .generate import PROGRESS_EVERY, Zoo, collect
from .markup import safe_url, text_html
from .navigation import nav_config
from .pagecache import PageCache
from .paths import ARCHITECTURES_DIR, MODELS_DIR, architecture_path, model_path
from .rebuild import GeneratedFile, Rebuilds, digest

__all__ = ["DEFAULT_PAGES", "PACKAGE_DOCS", "PAGES", "THEME_DIR", "ArchzooPlugin", "ArchzooPluginConfig"]

log = logging.getLogger("mkdocs.plugins.archzoo")

HERE = Path(__file__).resolve().parent
#: archzoo's own pages, their assets (stylesheet, scripts, vendored KaTeX and mermaid) and the entry schema.
PACKAGE_DOCS = HERE / "docs"
#: Template overrides for mkdocs-material.
THEME_DIR = HERE / "theme"

#: archzoo's own pages a site may publish: name in ``pages`` -> (navigation title, file).
PAGES = {
    "methodology": ("Methodology", "methodology.md"),
    "writing-entries": ("Writing a registry entry", "writing-entries.md"),
    "writing-plugins": ("Writing a plugin", "writing-plugins.md"),
    "performance": ("Performance", "performance.md"),
    "peers": ("Peer tools", "peers.md"),
}
#: What each peer tool reports for the same models (written by benchmarks/peers.py), for the peers page.
PEERS_RESULTS = HERE / "data" / "peers.json"


def _peers_page() -> str:
    return peers.peers_page(json.loads(PEERS_RESULTS.read_text(encoding="utf-8")))


#: Those of archzoo's pages made at build time from package data rather than copied: name -> maker.
GENERATED_PAGES: dict[str, Callable[[], str]] = {"peers": _peers_page}
#: What a zoo publishes unless its configuration says otherwise: how the figures are made, and how to add one.
DEFAULT_PAGES = ["methodology", "writing-entries"]
#: The file every site publishes: the JSON Schema of a registry entry (editors read it through ``$schema``).
SCHEMA_FILE = "schema/registry-entry.json"

_EXTENSIONS: dict[str, dict[str, Any]] = {
    "archzoo.site.mdext": {},  # pre-rendered HTML blocks of the generated pages pass through unparsed
    "toc": {"permalink": True},
    "tables": {},
    "attr_list": {},
    "md_in_html": {},
    "admonition": {},
    "pymdownx.details": {},
    "pymdownx.highlight": {},
    "pymdownx.arithmatex": {"generic": True},
    "pymdownx.superfences": {
        "custom_fences": [{"name": "mermaid", "class": "mermaid", "format": "pymdownx.superfences.fence_code_format"}]
    },
}
_FEATURES_NEEDED = ["navigation.indexes", "navigation.prune", "content.action.edit"]
_FEATURES_DEFAULT = ["navigation.top", "navigation.footer", "search.suggest", "search.highlight", "content.code.copy"]
_CSS = ["assets/vendor/katex/katex.min.css", "assets/archzoo.css", "assets/explore.css"]
_JS = ["assets/vendor/katex/katex.min.js", "assets/archzoo.js", "assets/whatif.js", "assets/compare.js"]
#: mkdocs-material's default fonts, fetched from Google Fonts; replaced by the system's fonts.
_MATERIAL_FONT = {"text": "Roboto", "code": "Roboto Mono"}
_FIXED_DATE = "1980-01-01"


class ArchzooPluginConfig(base.Config):
    registry = c.ListOfItems(c.Type(str), default=["registry"])
    plugin_registries = c.ListOfItems(c.Type(str), default=[])
    pages = c.ListOfItems(c.Choice(tuple(PAGES)), default=list(DEFAULT_PAGES))
    edit_pattern = c.Type(str, default="")
    workers = c.Optional(c.Type(int))
    flat_nav = c.Type(bool, default=False)
    cache = c.Type(bool, default=True)


class ArchzooPlugin(BasePlugin[ArchzooPluginConfig]):
    """See the module docstring. One instance per build (``mkdocs serve`` keeps it across rebuilds);
    everything it learns in a build is reset at the start of the next one."""

    def __init__(self) -> None:
        self.serving = False
        self.rebuilds = Rebuilds()  # kept across builds: what a rebuild while serving may leave as it is
        self._reset()

    def _reset(self) -> None:
        self.root: Path | None = None
        self.registry_dirs: list[Path] = []
        self.edit_pattern = ""
        self.zoo: Zoo | None = None
        self.error: str | None = None
        self.owner_pages: set[str] = set()
        self.package_pages: set[str] = set()
        self.sources: dict[str, Path] = {}
        self.total = 0
        self.done = 0
        self.started = time.perf_counter()
        self.page_uris: list[str] = []
        self.search_mark = 0

    # ---- configuration ----------------------------------------------------------------------------

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.serving = command == "serve"
        self.rebuilds.enabled = self.serving and dirty  # `mkdocs serve --dirty`; `archzoo serve` sets it too

    def on_config(self, config):
        self._reset()
        if config.theme.name != "material":
            raise PluginError(
                f"{config.config_file_path or 'mkdocs.yml'}: theme: the archzoo plugin needs the "
                f"material theme, got {config.theme.name!r}; set `theme: {{name: material}}` "
                "(pip install mkdocs-material)"
            )
        _refuse_unsafe_site_text(config)
        self.root = Path(config.config_file_path).resolve().parent if config.config_file_path else Path.cwd()
        self.registry_dirs = []
        for given in self.config.registry:
            folder = self.root / given
            if not folder.exists():
                raise PluginError(
                    f"{config.config_file_path or 'mkdocs.yml'}: plugins: archzoo: registry: "
                    f"{given!r}: no such folder or file (relative to the folder of mkdocs.yml); "
                    "create it, or list the folders of your entries"
                )
            self.registry_dirs.append(folder)
        self.edit_pattern = _edit_pattern(self.config.edit_pattern, config)
        theme = config.theme
        theme.dirs.insert(1 if theme.custom_dir else 0, str(THEME_DIR))
        features = theme.get("features") or list(_FEATURES_DEFAULT)
        wanted = [f for f in _FEATURES_NEEDED if not (self.config.flat_nav and f == "navigation.prune")]
        theme["features"] = [f for f in features if not (self.config.flat_nav and f == "navigation.prune")]
        theme["features"] += [f for f in wanted if f not in theme["features"]]
        if theme.get("font") == _MATERIAL_FONT:
            theme["font"] = False
        for name, options in _EXTENSIONS.items():  # the owner's settings of an extension win over ours
            if name not in config.markdown_extensions:
                config.markdown_extensions.append(name)
            if options:
                config.mdx_configs[name] = {**_resolve_format(options), **config.mdx_configs.get(name, {})}
        for item in _CSS:
            if item not in config.extra_css:
                config.extra_css.append(item)
        known = {str(item) for item in config.extra_javascript}
        config.extra_javascript += [item for item in _JS if item not in known]
        return config

    def edit_url(self, path: Path) -> str | None:
        """The edit link of a file of the owner's repository (``path`` absolute); None outside it."""
        if not self.edit_pattern or self.root is None:
            return None
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root):
            return None
        return self.edit_pattern.replace("{path}", quote(resolved.relative_to(self.root).as_posix(), safe="/"))

    # ---- files and navigation ---------------------------------------------------------------------

    def on_files(self, files: Files, config):
        _refuse_links_out(files, config, self.root)
        self.owner_pages = {f.src_uri for f in files.documentation_pages()}
        started = time.perf_counter()
        try:
            zoo = collect(
                self.registry_dirs,
                plugin_registries=self.config.plugin_registries,
                root=self.root,
                progress=log.info,
                directory_urls=config.use_directory_urls,
                workers=self.config.workers,
                cache=PageCache.default(get_host()) if self.config.cache else None,
            )
        except ArchzooError as exc:
            if not self.serving:  # MkDocs reports its own error type as one clean line, with no traceback
                raise PluginError(str(exc)) from exc
            return self._error_site(files, config, str(exc))
        self.zoo = zoo
        self.sources = zoo.sources
        generated: dict[str, str] = {}
        for view in zoo.models:
            generated[model_path(view.id)] = zoo.pages[view.id]
        for arch in zoo.architectures:
            generated[architecture_path(arch.name)] = pages.architecture_page(
                arch, directory_urls=config.use_directory_urls
            )
        static = [PAGES[name] for name in self.config.pages]
        own = self._owner_titles(config, {path for _, path in static})
        generated["index.md"] = pages.home_page(
            zoo.models,
            zoo.architectures,
            title=config.site_name,
            description=config.site_description or "",
            static_pages=static + own,
            directory_urls=config.use_directory_urls,
        )
        generated[model_path("index")] = pages.models_page(zoo.models)
        generated["models.json"] = models_json(zoo.models)
        generated["models.csv"] = models_csv(zoo.models)
        generated.update(self._explore_files(zoo))
        for name in self.config.pages:
            if name in GENERATED_PAGES:
                generated[PAGES[name][1]] = GENERATED_PAGES[name]()
        docs = Path(config.docs_dir).name
        for uri in sorted(f.src_uri for f in files):  # the owner's pages, and every other file of docs/
            if uri in generated or uri.startswith((f"{MODELS_DIR}/", f"{ARCHITECTURES_DIR}/")):
                raise PluginError(
                    f"{docs}/{uri}: archzoo generates the home page, models.json, models.csv and "
                    f"everything under {MODELS_DIR}/ and {ARCHITECTURES_DIR}/; rename or "
                    "move your file"
                )
        made = {
            uri: cast(GeneratedFile, GeneratedFile.generated(config, uri, content=text))
            for uri, text in generated.items()
        }
        for file in made.values():
            files.append(file)
        copied = [PAGES[name][1] for name in self.config.pages if name not in GENERATED_PAGES]
        self._add_package_files(files, config, copied)
        nav = nav_config(
            zoo.architectures, static_pages=static + ([] if config.nav else own), flat=self.config.flat_nav
        )
        nav.append({"Compare models": explore.COMPARE_PAGE})
        config.nav = nav + list(config.nav or [])  # the owner's own navigation, if any, after the zoo's
        kept = self.rebuilds.unchanged(self._settings(config), generated)
        if kept is None:
            self._start_afresh(config)
        else:
            for uri in kept:
                made[uri].unchanged = True
            log.info(
                "archzoo: %s of %s generated files unchanged since the last build", f"{len(kept):,}", f"{len(made):,}"
            )
        log.info(
            "archzoo: generated %s model pages and %s architecture pages (%.1f s)",
            f"{len(zoo.models):,}",
            len(zoo.architectures),
            time.perf_counter() - started,
        )
        return files

    def _settings(self, config) -> str:
        """What every page depends on besides its own markdown: the configuration and the navigation."""
        try:
            config_text = Path(config.config_file_path).read_bytes().hex() if config.config_file_path else ""
        except OSError:
            config_text = ""
        return digest(
            config_text,
            dict(self.config),
            config.nav,
            [config.site_name, config.site_url, config.site_description, config.repo_url, config.use_directory_urls],
            [str(d) for d in config.theme.dirs],
            sorted(self.owner_pages),
        )

    def _start_afresh(self, config) -> None:
        """A build that keeps nothing: in a dirty build (serving) the site folder is emptied first, so no page
        of the previous build (a removed model's) stays behind."""
        if self.rebuilds.enabled:
            clean_directory(config.site_dir)

    def _explore_files(self, zoo: Zoo) -> dict[str, str]:
        """The compare page, and the JSON each model's and architecture's what-if and the compare page read."""
        out = {explore.COMPARE_PAGE: explore.compare_page(zoo.models)}
        for model_id in sorted(zoo.data):
            out[explore.model_data_path(model_id)] = zoo.data[model_id]
        for view in zoo.architectures:
            data = zoo.architecture_data.get(view.name)
            if data is not None:
                out[explore.architecture_data_path(view.name)] = data
        return out

    def _owner_titles(self, config, taken: set[str]) -> list[tuple[str, str]]:
        """The owner's own pages, for the navigation and the home page: (first heading, file), by file."""
        return [(_title_of(Path(config.docs_dir) / uri), uri) for uri in sorted(self.owner_pages) if uri not in taken]

    def _add_package_files(self, files: Files, config, page_files: list[str]) -> None:
        """archzoo's pages named in ``pages``, every asset, and the entry schema; the owner's files win."""
        wanted = set(page_files)
        for path in sorted(PACKAGE_DOCS.rglob("*")):
            if not path.is_file():
                continue
            uri = path.relative_to(PACKAGE_DOCS).as_posix()
            if uri.endswith(".md") and uri not in wanted:
                continue
            if files.get_file_from_path(uri) is not None:
                continue
            files.append(File.generated(config, uri, abs_src_path=str(path)))
            if uri.endswith(".md"):
                self.package_pages.add(uri)

    def _error_site(self, files: Files, config, message: str) -> Files:
        """While serving: one page showing why the registry cannot be read, on every URL."""
        log.error("archzoo: %s", message)
        self.error = message
        self.rebuilds.forget()
        self._start_afresh(config)
        for file in list(files):
            if file.is_documentation_page():
                files.remove(file)
        files.append(File.generated(config, "index.md", content=pages.error_page(message)))
        self._add_package_files(files, config, [])
        config.nav = [{"The registry cannot be read": "index.md"}]
        return files

    def on_nav(self, nav, *, config, files):
        self.page_uris = [f.src_uri for f in files.documentation_pages()]
        if self.rebuilds.kept:  # a page MkDocs will not read still gives the navigation its title
            for file in files.documentation_pages():
                if file.page is not None and file.page.markdown is None and not file.is_modified():
                    file.page.read_source(config)
        self.search_mark = 0
        self.total = sum(1 for _ in files.documentation_pages())
        log.info("archzoo: rendering %s pages", f"{self.total:,}")
        self.started = time.perf_counter()
        self.done = 0
        return nav

    def on_env(self, env, *, config, files):
        env.auto_reload = False  # the templates do not change during a build: don't stat every partial per page
        env.globals["archzoo_error"] = self.error
        return env

    # ---- pages ----------------------------------------------------------------------------------------

    def on_page_markdown(self, markdown, *, page, config, files):
        """archzoo's own pages link to each other: a link to one this site does not publish becomes its text."""
        if page.file.src_uri not in self.package_pages:
            return markdown
        missing = [path for name, (_, path) in PAGES.items() if name not in self.config.pages]
        if not missing:
            return markdown
        pattern = re.compile(r"\[([^\]]+)\]\((?:" + "|".join(re.escape(m) for m in missing) + r")(?:#[^)]*)?\)")
        return pattern.sub(r"\1", markdown)

    def on_pre_page(self, page, *, config, files):
        page.update_date = _stable_date()
        return page

    def on_page_context(self, context, *, page, config, nav):
        uri = page.file.src_uri
        if uri in self.sources:
            page.edit_url = self.edit_url(self.sources[uri])
        elif uri in self.owner_pages:
            page.edit_url = self.edit_url(Path(config.docs_dir) / uri)
        else:
            page.edit_url = None  # archzoo's own pages: not files of the owner's repository
        if page.edit_url:  # the theme writes it into href="..." as it is
            page.edit_url = quote(page.edit_url, safe=":/?#[]@!$()*+,;=%~")
        _index_for_search(page, config)
        index = _search_index(config)
        if index is not None:  # this page's entries: those added since the previous page's
            self.rebuilds.page_indexed(page.file.src_uri, index.entries[self.search_mark :])
            self.search_mark = len(index.entries)
        return context

    def on_post_page(self, output, *, page, config):
        self.done += 1
        if self.done % PROGRESS_EVERY == 0 or (self.done == self.total and self.total >= PROGRESS_EVERY):
            log.info(
                "archzoo: rendered %s/%s pages (%.1f s)",
                f"{self.done:,}",
                f"{self.total:,}",
                time.perf_counter() - self.started,
            )
        return output

    @event_priority(50)  # before the search plugin writes its index
    def on_post_build(self, *, config):
        index = _search_index(config)
        if index is not None and self.rebuilds.kept:  # the pages left as they were are in the index too
            index.entries = self.rebuilds.search_entries(self.page_uris)
        search = config.plugins.get("material/search")
        if search is not None and hasattr(search, "search_index_prev"):
            search.search_index_prev = None  # its own dirty-reload merge: the index is whole already
        self.rebuilds.finished()

    def on_build_error(self, *, error):
        self.rebuilds.forget()

    def on_serve(self, server, *, config, builder):
        for folder in self.registry_dirs:
            if folder.exists():
                server.watch(str(folder))
        return server


def _refuse_links_out(files: Files, config, root: Path | None) -> None:
    """Every file MkDocs collected from ``docs/`` must be inside the zoo (the folder of mkdocs.yml, or
    ``docs/`` itself): a symbolic link to a file elsewhere (``~/.ssh/id_rsa``, ``/etc/passwd``) would be
    copied, rendered and indexed for search, published with the site. Checked where the files are
    collected, so no page, copy or search entry is made of it."""
    docs = Path(config.docs_dir)
    inside = [docs.resolve()] + ([root.resolve()] if root is not None else [])
    for file in files:
        if file.abs_src_path is None:
            continue
        source = Path(file.abs_src_path)
        if not source.is_relative_to(docs):
            continue  # the theme's files, and archzoo's own
        target = source.resolve()
        if not any(target.is_relative_to(folder) for folder in inside):
            raise PluginError(
                f"{docs.name}/{file.src_uri}: a symbolic link (or a file under one) to a file outside the zoo; "
                "the site publishes only the zoo's own files: copy the file into docs/, or remove the link"
            )


def _resolve_format(options: dict[str, Any]) -> dict[str, Any]:
    """superfences' fence formatter, given as a dotted name here, as the function it names."""
    fences = options.get("custom_fences")
    if not fences:
        return options
    from pymdownx.superfences import fence_code_format

    return {**options, "custom_fences": [{**f, "format": fence_code_format} for f in fences]}


def _edit_pattern(given: str, config) -> str:
    """The edit link's pattern, ``{path}`` still to fill in: ``edit_pattern`` with ``{repo_url}`` filled in,
    else ``{repo_url}/edit/main/{path}`` once ``repo_url`` is set, else "" (no edit links, as for a pattern
    naming ``{repo_url}`` while it is not set).

    The pattern is the owner's text written into ``href``: an address with a scheme other than http(s)
    (``javascript:``, ``data:``) is refused, as the registry's source links are (`archzoo.site.markup.SAFE_SCHEMES`).
    """
    repo_url = (config.repo_url or "").rstrip("/")
    if not given:
        return f"{repo_url}/edit/main/{{path}}" if repo_url else ""
    if "{repo_url}" in given and not repo_url:
        return ""  # as without a pattern: no repository, no edit links
    pattern = given.replace("{repo_url}", repo_url)
    if safe_url(pattern) is None:
        raise PluginError(
            f"{config.config_file_path or 'mkdocs.yml'}: plugins: archzoo: edit_pattern: {given!r}: "
            "expected an http(s) address such as 'https://git.example.org/zoo/-/edit/main/{path}' "
            "(or one relative to the site); set it to the address that edits {path}"
        )
    return pattern


def _stable_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%d")
    return _FIXED_DATE


def _title_of(path: Path) -> str:
    """A hand-written page's first heading, for the navigation."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    except (OSError, UnicodeDecodeError):
        pass
    return path.stem.replace("-", " ").capitalize()


def _search_index(config) -> Any:
    search = config.plugins.get("material/search") or config.plugins.get("search")
    return getattr(search, "search_index", None)


def _index_for_search(page, config) -> None:
    """A model page is indexed for search by what people look it up by (id, title, tags, architecture,
    summary) instead of its full text: its tables of formulas are noise in search results, and parsing
    them is most of the search plugin's cost."""
    meta = page.meta.get("archzoo_search")
    search = config.plugins.get("material/search") or config.plugins.get("search")
    index = getattr(search, "search_index", None)
    if not isinstance(meta, dict) or index is None:
        return
    # Material's search shows an entry's title, text and tags as HTML: every value is escaped here
    # (the page's title is, from its front matter, already)
    tags = [text_html(t) for t in meta.get("tags", [])]
    params = meta.get("params", 0)
    count = f"{params:,}" if isinstance(params, int) else text_html(params)
    text = (
        f"<p>{text_html(meta.get('title', ''))}. {text_html(meta.get('summary', ''))}</p>"
        f"<p>Architecture {text_html(meta.get('architecture', ''))}; {count} parameters"
        + (f"; tags: {', '.join(tags)}" if tags else "")
        + ".</p>"
    )
    entry = {"location": page.url, "title": str(page.meta.get("title") or page.title), "text": text}
    if tags:
        entry["tags"] = tags
    index.entries.append(entry)


def _refuse_unsafe_site_text(config) -> None:
    """Refuse what mkdocs-material would turn into script on every page: it writes ``site_name`` and
    ``site_description`` into the HTML as they are, and MkDocs' own check of ``repo_url`` takes
    ``javascript://%0a...``, which runs when the repository link is clicked. The same rules as `archzoo init`'s
    (`archzoo.init.check_page_text`, `check_address`), whether the text came from ``--title`` or mkdocs.yml."""
    from ..errors import ArchzooError
    from ..init import check_address, check_page_text

    where = config.config_file_path or "mkdocs.yml"
    try:
        for key in ("site_name", "site_description"):
            if isinstance(config.get(key), str):
                check_page_text(f"{where}: {key}", config[key])
        if config.get("repo_url"):
            check_address(
                f"{where}: repo_url",
                str(config["repo_url"]),
                "the address of the zoo's repository",
                "https://github.com/acme/zoo",
            )
    except ArchzooError as exc:
        raise PluginError(str(exc)) from None
