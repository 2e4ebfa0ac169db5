"""The zoo's views: the registry and the plugins read, every model's view and page computed.

`collect` is a plain function of registry folders (no MkDocs involved): the site's MkDocs plugin
(`archzoo.site.plugin`) calls it once per build and turns its result into pages. Large registries are
computed in forked worker processes; the result is the same. Pages kept by a previous build
(`archzoo.site.pagecache`) are reused, and only the entries without one are read, checked and computed.
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

from ..errors import RegistryError
from ..host import get_host
from ..registry import (
    Entry,
    Registry,
    RegistryProblem,
    _load_entry,
    load_registry,
    registry_folders,
    split_plugin_problems,
    yaml_files,
)
from .explore import WhatifProbes, architecture_data, model_data, to_json
from .pagecache import PageCache
from .pages import model_page
from .paths import architecture_path, model_path
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
    ``data`` holds each model's what-if JSON (`archzoo.site.explore.model_data`) by id, and
    ``architecture_data`` each architecture's (None: it has no valid default configuration).
    """

    def __init__(
        self,
        models: list[ModelView],
        architectures: list[ArchitectureView],
        registry: Registry | None,
        sources: dict[str, Path],
        model_pages: dict[str, str] | None = None,
        data: dict[str, str] | None = None,
        architecture_data: dict[str, str | None] | None = None,
    ):
        self.models = models
        self.pages = model_pages or {}
        self.data = data or {}
        self.architecture_data = architecture_data or {}
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


def _refuse(problems: list[RegistryProblem]) -> None:
    if problems:
        raise RegistryError(
            "the registry has problems; fix them (`archzoo validate` lists them too):\n"
            + "\n".join(str(p) for p in problems)
        )


def _key(cache: PageCache | None, path: Path, model_id: str, shown: str, directory_urls: bool | None) -> str | None:
    """The cache key of an entry's page: its file's bytes, its id, how its file is shown, how pages link."""
    if cache is None:
        return None
    try:
        content = path.read_bytes()
    except OSError:
        return None  # made, not kept
    return cache.key(content, model_id, shown, str(directory_urls))


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


_Made = tuple[ModelView, str | None, str]  # a model's view, page markdown and what-if JSON


@dataclasses.dataclass(frozen=True)
class _Job:
    """What each worker needs: the entries (or the files to read them from), how their files are shown,
    and how pages link. ``probes`` are the what-if structures learnt so far (each worker learns its own)."""

    paths: list[Path]
    entries: list[Entry | None]  # None: read and checked by `render` (or its page is cached)
    sources: list[str]
    directory_urls: bool | None
    probes: WhatifProbes = dataclasses.field(default_factory=WhatifProbes)

    def render(self, index: int) -> tuple[_Made | None, list[RegistryProblem], list[str]]:
        """The model's view, page and data, slimmed (`_slim`); its file's problems (then no model) and
        warnings."""
        entry = self.entries[index]
        problems: list[RegistryProblem] = []
        warnings: list[RegistryProblem] = []
        if entry is None:
            entry = _load_entry(self.paths[index], get_host(), problems, warnings)
            if entry is None:
                return None, problems, [str(w) for w in warnings]
        view = model_view(entry, source_path=self.sources[index])
        page = None
        if self.directory_urls is not None:
            page = model_page(view, page_path=model_path(view.id), directory_urls=self.directory_urls)
        data = to_json(model_data(entry, self.probes))
        return _slim((view, page, data)), problems, [str(w) for w in warnings]

    def architecture(self, name: str) -> str | None:
        arch = get_host().architectures.get(name)
        data = architecture_data(arch, self.probes) if arch is not None else None
        return None if data is None else to_json(data)


#: What the build's own process needs of a view a worker rendered the page of (its tables and downloads);
#: the rest is dropped so that less crosses the process boundary (and less is cached).
_HEAVY: dict[str, Any] = dict(
    rows=(), symbols=(), flops_svg="", params_svg="", mermaid="", config_yaml="", reference_code=None
)

_job: _Job | None = None  # set in each forked worker by `_start_worker`, from the Pool's initargs


def _start_worker(job: _Job) -> None:
    global _job
    _job = job


def _slim(result: _Made) -> _Made:
    view, page, data = result
    return (dataclasses.replace(view, **_HEAVY) if page is not None else view), page, data


def _render_chunk(indexes: list[int]) -> list[tuple[_Made | None, list[RegistryProblem], list[str]]]:
    assert _job is not None
    return [_job.render(i) for i in indexes]


def _architecture_chunk(names: list[str]) -> list[str | None]:
    assert _job is not None
    return [_job.architecture(name) for name in names]


def collect(
    registry_dirs: Iterable[Path | str] | None = None,
    *,
    plugin_registries: Iterable[str] = (),
    root: Path | None = None,
    progress: Callable[[str], None] | None = None,
    directory_urls: bool | None = None,
    workers: int | None = None,
    cache: PageCache | None = None,
) -> Zoo:
    """Load the registry and the plugins and compute every view (no MkDocs involved).

    ``root`` is the site's project folder: files inside it are shown relative to it (`shown_path`).
    With ``directory_urls`` given, each model's page markdown is rendered too (`Zoo.pages`), and taken
    from ``cache`` when it holds the entry's page made with the same settings (`PageCache`). Large
    registries are computed in forked worker processes (``workers``: how many; default up to 4).
    """
    started = time.perf_counter()
    host = get_host()
    plugin_registries = list(plugin_registries)
    root = root.resolve() if root else None
    folders, owners = registry_folders(registry_dirs, host, plugin_registries)
    if directory_urls is None:
        cache = None  # views without pages keep their tables, which the cache does not hold
    listing: list[RegistryProblem] = []
    files = yaml_files(folders, listing)
    registry: Registry | None = None
    warnings: dict[str, list[str]] = {}  # each file's warnings, logged below
    if listing or len({Path(name).stem for name in files}) != len(files):
        # a folder that cannot be listed, a link out of it, two files of one id: the registry's own check
        # says which, and every problem besides
        registry = load_registry(registry_dirs, host, plugin_registries=plugin_registries)
        _refuse(registry.problems)
        for problem in registry.plugin_problems:  # a plugin's broken entry is left out; the user's zoo builds
            log.info("archzoo: skipped %s", problem)
        for warning in registry.warnings:
            warnings.setdefault(str(warning.path), []).append(str(warning))
        found: list[tuple[str, Path, Entry | None]] = [(e.id, e.path, e) for e in registry]
    else:
        # each file is read, checked and counted where its page is made (in the workers), or not at all
        # when a page kept under its bytes and archzoo's and the plugins' code exists: it was made from a
        # valid entry (an entry's id is its file's name, and every name is once)
        found = [(Path(name).stem, Path(name), None) for name in files]
    found.sort(key=lambda item: item[0])
    for model_id, path, _ in found:
        if model_id == "index":
            raise RegistryError(
                f"{shown_path(path, root, folders)}:1: the id 'index' is reserved for the "
                "all-models page; rename the file"
            )
    shown = [shown_path(path, root, folders) for _, path, _ in found]
    keys = [_key(cache, path, model_id, shown[i], directory_urls) for i, (model_id, path, _) in enumerate(found)]
    results: list[_Made | None] = [None] * len(found)
    if cache is not None:
        for i, (_, path, _) in enumerate(found):
            kept = cache.page(keys[i])
            if kept is not None:
                results[i] = kept[:3]
                warnings[str(path)] = kept[3]
    job = _Job([path for _, path, _ in found], [entry for _, _, entry in found], shown, directory_urls)
    missing = [i for i, made in enumerate(results) if made is None]
    names = list(host.architectures)
    arch_data: dict[str, str | None] = {}
    arch_keys = {name: cache.key("architecture", name) if cache is not None else None for name in names}
    for name in names:
        kept_text = cache.text(arch_keys[name]) if cache is not None else None
        if kept_text is not None:
            arch_data[name] = kept_text or None
    missing_archs = [name for name in names if name not in arch_data]
    n_workers = _workers(len(missing), workers)
    done = len(found) - len(missing)

    def report(count: int, how: str = "") -> None:
        nonlocal done
        before, done = done, done + count
        if progress and done // PROGRESS_EVERY > before // PROGRESS_EVERY:
            progress(f"archzoo: computed {done:,}/{len(found):,} models{how} ({time.perf_counter() - started:.1f} s)")

    problems: list[RegistryProblem] = []

    def take(i: int, rendered: tuple[_Made | None, list[RegistryProblem], list[str]]) -> None:
        results[i], file_problems, warnings[str(found[i][1])] = rendered
        problems.extend(file_problems)

    if n_workers > 1:
        step = max(50, -(-len(missing) // (n_workers * 8)))
        chunks = [missing[i : i + step] for i in range(0, len(missing), step)]
        arch_chunks = [missing_archs[i : i + 4] for i in range(0, len(missing_archs), 4)]
        with multiprocessing.get_context("fork").Pool(n_workers, initializer=_start_worker, initargs=(job,)) as pool:
            pending = pool.map_async(_architecture_chunk, arch_chunks) if arch_chunks else None
            for indexes, chunk in zip(chunks, pool.imap(_render_chunk, chunks), strict=True):
                for i, rendered in zip(indexes, chunk, strict=True):
                    take(i, rendered)
                report(len(chunk), f" in {n_workers} processes")
            computed = [d for part in pending.get() for d in part] if pending is not None else []
        arch_data.update(zip(missing_archs, computed, strict=True))
    else:
        for i in missing:
            take(i, job.render(i))
            report(1)
        arch_data.update((name, job.architecture(name)) for name in missing_archs)
    order = {str(path): i for i, (_, path, _) in enumerate(found)}
    problems.sort(key=lambda p: (order.get(str(p.path), -1), p.line))
    problems, plugin_problems = split_plugin_problems(problems, owners)
    _refuse(problems)
    for problem in plugin_problems:  # a plugin's broken entry is left out; the user's zoo still builds
        log.info("archzoo: skipped %s", problem)
    for _, path, _ in found:
        for text in warnings.get(str(path), ()):
            log.info("archzoo: %s", text)
    if cache is not None:
        for i in missing:
            made = results[i]
            model_id, path, _ = found[i]
            # not kept if the file changed while it was read: the page may be of either content
            if made is not None and keys[i] == _key(cache, path, model_id, shown[i], directory_urls):
                cache.put_page(keys[i], *made, warnings.get(str(path), []))
        for name in missing_archs:
            cache.put_text(arch_keys[name], arch_data[name] or "")
        cache.prune()
    sources = {model_path(model_id): path.resolve() for model_id, path, _ in found}
    finished = [r for r in results if r is not None]
    models = [view for view, _, _ in finished]
    model_pages = {view.id: page for view, page, _ in finished if page is not None}
    model_data = {view.id: data for view, _, data in finished}
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
            sources[architecture_path(name)] = module_file
    if progress:
        reused = f", {len(found) - len(missing):,} unchanged since a previous build" if cache is not None else ""
        progress(
            f"archzoo: computed {len(models):,} models of {len(architectures)} architectures{reused} "
            f"({time.perf_counter() - started:.1f} s)"
        )
    return Zoo(models, architectures, registry, sources, model_pages, model_data, arch_data)
