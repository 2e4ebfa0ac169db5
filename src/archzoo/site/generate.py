"""The MkDocs glue: read the registry and the plugins, and write the generated pages through mkdocs-gen-files.

Run by the gen-files plugin (``gen_pages.py``, configured in ``mkdocs.yml``) at every build: nothing it
writes is committed. The registry folders are ``ARCHZOO_REGISTRY`` (or ``./registry``) plus every
folder a plugin registers; the architectures are every loaded plugin's.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import ArchzooError
from ..host import get_host
from ..registry import Entry, Registry, load_registry
from . import pages
from .views import ArchitectureView, ModelView, architecture_view, model_view

__all__ = ["generate_pages", "collect", "Zoo", "STATIC_PAGES", "PROGRESS_EVERY", "ENV_FLAT_NAV", "ENV_WORKERS"]

log = logging.getLogger("mkdocs.plugins.archzoo")

#: Hand-written pages under docs/, in navigation order (only those that exist are listed).
STATIC_PAGES = (
    ("Methodology", "methodology.md"),
    ("Writing a registry entry", "writing-entries.md"),
    ("Writing a plugin", "writing-plugins.md"),
    ("Performance", "performance.md"),
)

#: A progress line is logged every this many pages.
PROGRESS_EVERY = 250

#: Set to 1 to list every model at the top of the navigation (the benchmark's baseline).
ENV_FLAT_NAV = "ARCHZOO_SITE_FLAT_NAV"


class Zoo:
    """The views of one build: every model, and every architecture with its models."""

    def __init__(self, models: list[ModelView], architectures: list[ArchitectureView], registry: Registry,
                 edit_paths: dict[str, str | None], model_pages: dict[str, str] | None = None):
        self.models = models
        self.pages = model_pages or {}
        self.architectures = architectures
        self.registry = registry
        self.edit_paths = edit_paths


def _source_path(path: Path, repo_root: Path | None) -> str:
    """The YAML file as shown on its page: relative to the repository when it is inside it."""
    resolved = path.resolve()
    if repo_root is not None and resolved.is_relative_to(repo_root):
        return resolved.relative_to(repo_root).as_posix()
    return resolved.as_posix()


def _edit_path(path: Path, repo_root: Path | None, docs_dir: Path | None) -> str:
    """What `set_edit_path` needs: relative to the docs folder inside the repository (the edit URI
    ends in ``docs/``), else the file's own ``file://`` URI."""
    resolved = path.resolve()
    if repo_root is not None and docs_dir is not None and resolved.is_relative_to(repo_root):
        return Path(os.path.relpath(resolved, docs_dir)).as_posix()
    return resolved.as_uri()


def _plugin_module_file(arch: Any) -> Path | None:
    import inspect

    try:
        return Path(inspect.getfile(arch.build)).resolve()
    except (TypeError, OSError):
        return None


#: Worker processes that compute model views and pages (default: up to 4 for large registries, else 1).
ENV_WORKERS = "ARCHZOO_SITE_WORKERS"
#: Below this many entries the work is done in the build's own process.
PARALLEL_FROM = 300

#: generated page -> its source as given to set_edit_path (relative to docs/, or a file:// URI)
EDIT_SOURCES: dict[str, str] = {}

_FORKED: dict[str, Any] = {}  # what forked workers inherit: the entries and where they are shown from


def _workers(n_entries: int) -> int:
    configured = os.environ.get(ENV_WORKERS, "").strip()
    if configured:
        return max(1, int(configured))
    if n_entries < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if threading.active_count() > 1:  # `mkdocs serve`: forking a process with other threads can deadlock
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def _render(index: int) -> tuple[ModelView, str | None]:
    entries, sources, directory_urls = _FORKED["entries"], _FORKED["sources"], _FORKED["directory_urls"]
    view = model_view(entries[index], source_path=sources[index])
    page = None
    if directory_urls is not None:
        page = pages.model_page(view, page_path=pages.model_path(view.id), directory_urls=directory_urls)
    return view, page


#: What the build's own process needs of a view a worker rendered the page of (its tables and downloads);
#: the rest is dropped so that less crosses the process boundary.
_HEAVY = dict(rows=(), symbols=(), flops_svg="", params_svg="", mermaid="", config_yaml="", reference_code=None)


def _render_chunk(bounds: tuple[int, int]) -> list[tuple[ModelView, str | None]]:
    out = []
    for i in range(*bounds):
        view, page = _render(i)
        out.append((dataclasses.replace(view, **_HEAVY) if page is not None else view, page))
    return out


def collect(registry_dirs: Iterable[Path | str] | None = None, *, repo_root: Path | None = None,
            docs_dir: Path | None = None, progress: Callable[[str], None] | None = None,
            directory_urls: bool | None = None) -> Zoo:
    """Load the registry and the plugins and compute every view (no MkDocs involved).

    With ``directory_urls`` given, each model's page markdown is rendered too (`Zoo.pages`). Large
    registries are computed in forked worker processes (`ENV_WORKERS`); the result is the same.
    """
    started = time.perf_counter()
    host = get_host()
    registry = load_registry(registry_dirs, host)
    if registry.problems:
        from ..errors import RegistryError

        raise RegistryError("the registry has problems; fix them (`archzoo validate` lists them too):\n"
                            + "\n".join(str(p) for p in registry.problems))
    for warning in registry.warnings:
        log.info("archzoo: %s", warning)
    for problem in registry.plugin_problems:  # a plugin's broken entry is left out; the user's zoo still builds
        log.info("archzoo: skipped %s", problem)
    repo_root = repo_root.resolve() if repo_root else None
    docs_dir = docs_dir.resolve() if docs_dir else None
    entries: list[Entry] = sorted(registry, key=lambda e: e.id)
    for entry in entries:
        if entry.id == "index":
            from ..errors import RegistryError

            raise RegistryError(f"{entry.path}:1: the id 'index' is reserved for the all-models page; rename the file")
    edit_paths: dict[str, str | None] = {
        pages.model_path(e.id): _edit_path(e.path, repo_root, docs_dir) for e in entries}
    _FORKED.update(entries=entries, sources=[_source_path(e.path, repo_root) for e in entries],
                   directory_urls=directory_urls)
    results: list[tuple[ModelView, str | None]] = []
    workers = _workers(len(entries))
    try:
        if workers > 1:
            step = max(50, -(-len(entries) // (workers * 8)))
            chunks = [(i, min(i + step, len(entries))) for i in range(0, len(entries), step)]
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for chunk in pool.imap(_render_chunk, chunks):
                    before = len(results)
                    results += chunk
                    if progress and len(results) // PROGRESS_EVERY > before // PROGRESS_EVERY:
                        progress(f"archzoo: computed {len(results):,}/{len(entries):,} models in {workers} processes "
                                 f"({time.perf_counter() - started:.1f} s)")
        else:
            for i in range(len(entries)):
                results.append(_render(i))
                if progress and (i + 1) % PROGRESS_EVERY == 0:
                    progress(f"archzoo: computed {i + 1:,}/{len(entries):,} models "
                             f"({time.perf_counter() - started:.1f} s)")
    finally:
        _FORKED.clear()
    models = [view for view, _ in results]
    model_pages = {view.id: page for view, page in results if page is not None}
    by_arch: dict[str, list[ModelView]] = {}
    for m in models:
        by_arch.setdefault(m.architecture, []).append(m)
    architectures = []
    for name, arch in host.architectures.items():
        info = host.plugins.get(arch.plugin)
        view = architecture_view(arch, plugin_version=info.version if info else "",
                                 plugin_source=info.source if info else "", models=tuple(by_arch.get(name, ())))
        architectures.append(view)
        module_file = _plugin_module_file(arch)
        edit_paths[pages.architecture_path(name)] = (
            _edit_path(module_file, repo_root, docs_dir) if module_file and repo_root and
            module_file.is_relative_to(repo_root) else None
        )
    if progress:
        progress(f"archzoo: computed {len(models):,} models of {len(architectures)} architectures "
                 f"({time.perf_counter() - started:.1f} s)")
    return Zoo(models, architectures, registry, edit_paths, model_pages)


def generate_pages() -> None:
    """Write every generated page, the navigation and the downloads into the MkDocs build (gen-files)."""
    import mkdocs_gen_files

    started = time.perf_counter()
    config = mkdocs_gen_files.config
    repo_root = Path(config.config_file_path).resolve().parent if config.config_file_path else None
    docs_dir = Path(config.docs_dir)

    def say(message: str) -> None:
        log.info(message)

    try:
        zoo = collect(None, repo_root=repo_root, docs_dir=docs_dir, progress=say,
                      directory_urls=config.use_directory_urls)
    except ArchzooError as exc:  # MkDocs reports its own error type as one clean line, with no traceback
        from mkdocs.exceptions import PluginError

        raise PluginError(str(exc)) from exc

    def write(path: str, text: str, edit: str | None = None) -> None:
        with mkdocs_gen_files.open(path, "w", encoding="utf-8") as f:
            f.write(text)
        if path.endswith(".md"):
            mkdocs_gen_files.set_edit_path(path, edit)
            if edit:
                EDIT_SOURCES[path] = edit

    for i, view in enumerate(zoo.models, 1):
        path = pages.model_path(view.id)
        write(path, zoo.pages[view.id], zoo.edit_paths.get(path))
        if i % PROGRESS_EVERY == 0:
            say(f"archzoo: wrote {i:,}/{len(zoo.models):,} model pages ({time.perf_counter() - started:.1f} s)")
    for arch in zoo.architectures:
        path = pages.architecture_path(arch.name)
        write(path, pages.architecture_page(arch), zoo.edit_paths.get(path))
    write("index.md", pages.home_page(zoo.models, zoo.architectures))
    write(pages.model_path("index"), pages.models_page(zoo.models))
    write("models.json", pages.models_json(zoo.models))
    write("models.csv", pages.models_csv(zoo.models))
    static = [(title, path) for title, path in STATIC_PAGES if (docs_dir / path).is_file()]
    schema_dir = docs_dir / "schema"
    if schema_dir.is_dir():
        static += [(_title_of(p), p.relative_to(docs_dir).as_posix()) for p in sorted(schema_dir.glob("*.md"))]
    flat = os.environ.get(ENV_FLAT_NAV, "").strip() in ("1", "true", "yes")
    write("SUMMARY.md", pages.nav_summary(zoo.architectures, static_pages=static, flat=flat))
    say(f"archzoo: generated {len(zoo.models):,} model pages and {len(zoo.architectures)} architecture pages "
        f"({time.perf_counter() - started:.1f} s)")


def _title_of(path: Path) -> str:
    """A hand-written page's first heading, for the navigation."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()
