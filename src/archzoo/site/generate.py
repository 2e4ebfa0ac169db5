"""The zoo's views: the registry and the plugins read, every model's view and page computed.

`collect` is a plain function of registry folders (no MkDocs involved): the site's MkDocs plugin
(`archzoo.site.plugin`) calls it once per build and turns its result into pages. Large registries are
computed in forked worker processes; the result is the same.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..host import get_host
from ..registry import Entry, Registry, load_registry, registry_folders
from . import pages
from .views import ArchitectureView, ModelView, architecture_view, model_view

__all__ = ["PARALLEL_FROM", "PROGRESS_EVERY", "Zoo", "collect", "shown_path"]

log = logging.getLogger("mkdocs.plugins.archzoo")

#: A progress line is logged every this many pages.
PROGRESS_EVERY = 250

#: Below this many entries the work is done in the build's own process.
PARALLEL_FROM = 300

#: The most worker processes a build forks, whatever ``workers`` says: far above what the work gains
#: from (it is bound by the CPUs), and a typo such as ``workers: 4000`` forks no more than this.
MAX_WORKERS = 64


class Zoo:
    """The views of one build: every model, and every architecture with its models.

    ``sources`` maps each generated page to the file it is made from (a model's YAML file, an
    architecture's plugin module), for edit links; it is never written into a page as it is.
    """

    def __init__(
        self,
        models: list[ModelView],
        architectures: list[ArchitectureView],
        registry: Registry,
        sources: dict[str, Path],
        model_pages: dict[str, str] | None = None,
    ):
        self.models = models
        self.pages = model_pages or {}
        self.architectures = architectures
        self.registry = registry
        self.sources = sources


def shown_path(path: Path, root: Path | None, folders: Iterable[Path] = ()) -> str:
    """A registry file as the site shows it: relative to the site's project folder (``root``, where its
    ``mkdocs.yml`` is) when it is inside it, else as ``FOLDER/relative/path`` from the registry folder
    holding it. Never an absolute path of the build machine."""
    resolved = path.resolve()
    if root is not None and resolved.is_relative_to(root):
        return resolved.relative_to(root).as_posix()
    for folder in folders:
        folder = folder.resolve()
        if resolved.is_relative_to(folder):
            return (Path(folder.name) / resolved.relative_to(folder)).as_posix()
    return resolved.name


def _plugin_module_file(arch: Any) -> Path | None:
    import inspect

    try:
        return Path(inspect.getfile(arch.build)).resolve()
    except (TypeError, OSError):
        return None


def _workers(n_entries: int, configured: int | None) -> int:
    if configured:
        return max(1, min(configured, MAX_WORKERS))
    if n_entries < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if threading.active_count() > 1:  # a server's threads: forking a process with other threads can deadlock
        return 1
    return max(1, min(4, os.cpu_count() or 1))


@dataclasses.dataclass(frozen=True)
class _Job:
    """What each worker needs: the entries, how their files are shown, and how pages link."""

    entries: list[Entry]
    sources: list[str]
    directory_urls: bool | None

    def render(self, index: int) -> tuple[ModelView, str | None]:
        view = model_view(self.entries[index], source_path=self.sources[index])
        page = None
        if self.directory_urls is not None:
            page = pages.model_page(view, page_path=pages.model_path(view.id), directory_urls=self.directory_urls)
        return view, page


#: What the build's own process needs of a view a worker rendered the page of (its tables and downloads);
#: the rest is dropped so that less crosses the process boundary.
_HEAVY: dict[str, Any] = dict(
    rows=(), symbols=(), flops_svg="", params_svg="", mermaid="", config_yaml="", reference_code=None
)

_job: _Job | None = None  # set in each forked worker by `_start_worker`, from the Pool's initargs


def _start_worker(job: _Job) -> None:
    global _job
    _job = job


def _render_chunk(bounds: tuple[int, int]) -> list[tuple[ModelView, str | None]]:
    assert _job is not None
    out = []
    for i in range(*bounds):
        view, page = _job.render(i)
        out.append((dataclasses.replace(view, **_HEAVY) if page is not None else view, page))
    return out


def collect(
    registry_dirs: Iterable[Path | str] | None = None,
    *,
    plugin_registries: Iterable[str] = (),
    root: Path | None = None,
    progress: Callable[[str], None] | None = None,
    directory_urls: bool | None = None,
    workers: int | None = None,
) -> Zoo:
    """Load the registry and the plugins and compute every view (no MkDocs involved).

    ``root`` is the site's project folder: files inside it are shown relative to it (`shown_path`).
    With ``directory_urls`` given, each model's page markdown is rendered too (`Zoo.pages`). Large
    registries are computed in forked worker processes (``workers``: how many; default up to 4).
    """
    from ..errors import RegistryError

    started = time.perf_counter()
    host = get_host()
    plugin_registries = list(plugin_registries)
    registry = load_registry(registry_dirs, host, plugin_registries=plugin_registries)
    if registry.problems:
        raise RegistryError(
            "the registry has problems; fix them (`archzoo validate` lists them too):\n"
            + "\n".join(str(p) for p in registry.problems)
        )
    for warning in registry.warnings:
        log.info("archzoo: %s", warning)
    for problem in registry.plugin_problems:  # a plugin's broken entry is left out; the user's zoo still builds
        log.info("archzoo: skipped %s", problem)
    root = root.resolve() if root else None
    folders, _ = registry_folders(registry_dirs, host, plugin_registries)
    entries: list[Entry] = sorted(registry, key=lambda e: e.id)
    for entry in entries:
        if entry.id == "index":
            raise RegistryError(
                f"{shown_path(entry.path, root, folders)}:1: the id 'index' is reserved for the "
                "all-models page; rename the file"
            )
    sources: dict[str, Path] = {pages.model_path(e.id): e.path.resolve() for e in entries}
    job = _Job(entries, [shown_path(e.path, root, folders) for e in entries], directory_urls)
    results: list[tuple[ModelView, str | None]] = []
    n_workers = _workers(len(entries), workers)
    if n_workers > 1:
        step = max(50, -(-len(entries) // (n_workers * 8)))
        chunks = [(i, min(i + step, len(entries))) for i in range(0, len(entries), step)]
        with multiprocessing.get_context("fork").Pool(n_workers, initializer=_start_worker, initargs=(job,)) as pool:
            for chunk in pool.imap(_render_chunk, chunks):
                before = len(results)
                results += chunk
                if progress and len(results) // PROGRESS_EVERY > before // PROGRESS_EVERY:
                    progress(
                        f"archzoo: computed {len(results):,}/{len(entries):,} models in {n_workers} processes "
                        f"({time.perf_counter() - started:.1f} s)"
                    )
    else:
        for i in range(len(entries)):
            results.append(job.render(i))
            if progress and (i + 1) % PROGRESS_EVERY == 0:
                progress(f"archzoo: computed {i + 1:,}/{len(entries):,} models ({time.perf_counter() - started:.1f} s)")
    models = [view for view, _ in results]
    model_pages = {view.id: page for view, page in results if page is not None}
    by_arch: dict[str, list[ModelView]] = {}
    for m in models:
        by_arch.setdefault(m.architecture, []).append(m)
    architectures = []
    for name, arch in host.architectures.items():
        info = host.plugins.get(arch.plugin)
        view = architecture_view(
            arch,
            plugin_version=info.version if info else "",
            plugin_source=info.source if info else "",
            models=tuple(by_arch.get(name, ())),
        )
        architectures.append(view)
        module_file = _plugin_module_file(arch)
        if module_file is not None:
            sources[pages.architecture_path(name)] = module_file
    if progress:
        progress(
            f"archzoo: computed {len(models):,} models of {len(architectures)} architectures "
            f"({time.perf_counter() - started:.1f} s)"
        )
    return Zoo(models, architectures, registry, sources, model_pages)
