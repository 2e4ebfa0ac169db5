"""Generated pages kept between builds: each entry's page, view and what-if data, keyed by what makes them.

Generating a model's page costs a count, a report and a what-if export; its result depends only on the
entry's file, where the site shows that file, how pages link (``use_directory_urls``), archzoo's version
and source files and every loaded plugin's name, version and module files. A build keeps each result in a
file named by the SHA-256 of all of those, so a build after one entry changed generates that entry alone,
and a change to archzoo or to any plugin misses every entry (a stale page is never reused).

The files live in ``site-pages/`` beside the registry index's cache (`archzoo.cache_folder.cache_dir`:
``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo``). Each is JSON (read
back as plain values, never as code) after a header line with its key and the SHA-256 of the rest, so a
foreign, truncated or corrupt file is a miss and is written again. A folder that cannot be written makes
every lookup a miss: the build still succeeds, only slower. A file no build has used for 30 days is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..cache_folder import cache_dir
from ..host import PluginHost
from .views import ModelView

__all__ = ["FORMAT", "PageCache", "fingerprint"]

#: Bumped whenever what a cached file holds changes.
FORMAT = "archzoo.site-pages/2"
#: The folder under the cache folder.
FOLDER = "site-pages"
#: A cached file larger than this is not read (a model page and its data take a few hundred kB).
MAX_BYTES = 64 * 1024 * 1024

#: A kept file no build has used for this long is removed (each use renews it): a zoo's edits would
#: otherwise leave one file behind per saved version of an entry.
MAX_AGE_S = 30 * 24 * 3600

#: The view fields that are tuples (JSON gives lists back).
_TUPLES = ("tags", "rows", "symbols")


def fingerprint(host: PluginHost, extra: Iterable[str] = ()) -> str:
    """Everything besides the entry that its generated page depends on: archzoo's and the plugins' code (as
    the registry index keys its rows), and the libraries that write the page's markup."""
    import pydantic
    import pygments
    import yaml

    from ..registry_index import code_fingerprint

    return code_fingerprint(host, FORMAT, pygments.__version__, yaml.__version__, pydantic.VERSION, *extra)


def _view_json(view: ModelView) -> dict[str, Any]:
    return {f.name: getattr(view, f.name) for f in dataclasses.fields(view)}


def _view_of(data: Any) -> ModelView | None:
    """The view a cached file holds, or None when it is not one (a foreign or older file)."""
    names = [f.name for f in dataclasses.fields(ModelView)]
    if not isinstance(data, dict) or sorted(data) != sorted(names):
        return None
    values = dict(data)
    for name in _TUPLES:
        if not isinstance(values[name], list):
            return None
        values[name] = tuple(values[name])
    links = values["published_links"]
    if not isinstance(links, list) or not all(isinstance(x, list) and len(x) == 2 for x in links):
        return None
    values["published_links"] = tuple((str(a), str(b)) for a, b in links)
    try:
        return ModelView(**values)
    except TypeError:
        return None


class PageCache:
    """The cached pages of one build's settings; ``folder`` None turns the cache off."""

    def __init__(self, folder: Path | None, fingerprint: str):
        self.folder = folder
        self.fingerprint = fingerprint
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls, host: PluginHost, *settings: str) -> PageCache:
        """The cache in the user's cache folder, for pages made with ``settings`` (how they link)."""
        folder = cache_dir()  # None where there is no cache folder (no home folder): no cache
        return cls(folder / FOLDER if folder is not None else None, fingerprint(host, settings))

    def key(self, *parts: str | bytes) -> str:
        """The key of what is made from ``parts`` (an entry file's bytes, its id, how its file is shown)."""
        digest = hashlib.sha256(self.fingerprint.encode())
        for part in parts:
            digest.update(b"\0" + (part if isinstance(part, bytes) else part.encode("utf-8", "surrogateescape")))
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def page(self, key: str | None) -> tuple[ModelView, str | None, str, list[str]] | None:
        """(view, page markdown, what-if JSON, the entry's warnings) kept under ``key``, or None."""
        data = self._read(key)
        found = None
        if isinstance(data, dict) and sorted(data) == ["data", "page", "view", "warnings"]:
            page, explore, warnings = data["page"], data["data"], data["warnings"]
            view = _view_of(data["view"])
            if (
                view is not None
                and isinstance(explore, str)
                and (page is None or isinstance(page, str))
                and isinstance(warnings, list)
                and all(isinstance(w, str) for w in warnings)
            ):
                found = view, page, explore, warnings
        self._count(found is not None)
        return found

    def text(self, key: str | None) -> str | None:
        """The text kept under ``key`` (an architecture's what-if JSON), or None."""
        data = self._read(key)
        found = data["text"] if isinstance(data, dict) and isinstance(data.get("text"), str) else None
        self._count(found is not None)
        return found

    def _count(self, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1

    def _read(self, key: str | None) -> Any:
        if key is None or self.folder is None:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except OSError:
            return None
        header, _, body = raw.partition(b"\n")
        if len(raw) > MAX_BYTES or header != f"{FORMAT} {key} {hashlib.sha256(body).hexdigest()}".encode():
            return None
        try:
            data = json.loads(body)
        except ValueError:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: kept for another `MAX_AGE_S`
        return data

    def prune(self, max_age_s: float = MAX_AGE_S) -> int:
        """Remove the kept files no build has used for ``max_age_s`` seconds; returns how many."""
        if self.folder is None:
            return 0
        cutoff = time.time() - max_age_s
        removed = 0
        try:
            folders = [entry.path for entry in os.scandir(self.folder) if entry.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        for folder in folders:
            try:
                with os.scandir(folder) as scan:
                    old = [e.path for e in scan if e.is_file(follow_symlinks=False) and e.stat().st_mtime < cutoff]
            except OSError:
                continue
            for path in old:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed += 1
        return removed

    def put_page(self, key: str | None, view: ModelView, page: str | None, explore: str, warnings: list[str]) -> None:
        """Keep an entry's generated page, and the warnings its check gave (logged again when it is reused)."""
        self._write(key, {"view": _view_json(view), "page": page, "data": explore, "warnings": warnings})

    def put_text(self, key: str | None, text: str) -> None:
        self._write(key, {"text": text})

    def _write(self, key: str | None, data: dict[str, Any]) -> None:
        """A folder that cannot be written is left alone: the next build generates the page again."""
        if key is None or self.folder is None:
            return
        body = json.dumps(data, separators=(",", ":")).encode()  # ASCII: a lone surrogate is kept as an escape
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(f"{FORMAT} {key} {hashlib.sha256(body).hexdigest()}\n".encode() + body)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError:
            self.folder = None  # not writable: stop trying for the rest of this build
