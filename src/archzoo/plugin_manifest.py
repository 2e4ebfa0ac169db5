"""The plugin manifest: what every installed plugin registered at its last full load, cached so a lookup imports only
the plugin it asks for.

Importing every plugin costs a lookup most of its time (each defines pydantic models; the first also pulls in
pydantic itself), while a lookup needs one architecture. After a full load with no problem the host writes down
which plugin registered which architectures, Hugging Face model types and registry folders; later processes read
that and import a plugin only when one of its names is asked for.

The manifest is keyed by everything that could change what a plugin registers without the plugin being imported
to say so: each entry point (name, target, distribution and version), the size and modification time of every
source file of the package it names (found with ``importlib.util.find_spec``, which imports nothing), archzoo's
modules that define the plugin interface and the host's checks, the Python version and the ``ARCHZOO_PLUGINS``
selection; the entry points themselves are reused while no ``sys.path`` folder changed (`environment_key`: the
manifest remembers the last few, since ``archzoo``, ``python -m archzoo.cli`` and a script each start with another
first folder, and each of them once found the same entry points). Any change there, or a manifest that does
not read back as the exact shape written, means a full load. The host also checks each plugin it imports against
its manifest record and falls back to a full load on any difference, so a stale manifest never changes an answer.

Manifests live in ``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo`` (the
registry index's folder); when none can be found or written, every load is a full one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .cache_folder import cache_dir
from .errors import EnvironmentVariableError

__all__ = [
    "FORMAT",
    "Manifest",
    "PluginRecord",
    "discard_manifest",
    "environment_key",
    "manifest_key",
    "read_manifest",
    "source_signature",
    "write_manifest",
]

#: Bumped whenever the layout of a manifest changes.
FORMAT = "archzoo.plugin-manifest/3"

#: A plugin package with more source files than this is not signed (walking it would cost what importing saves):
#: such a plugin makes every load a full one.
MAX_SOURCE_FILES = 2_000

#: A manifest larger than this is not read (nine plugins take about 3 kB).
MAX_MANIFEST_BYTES = 1 << 20

#: The most environments a manifest remembers its entry points for: ``archzoo``, ``python -m archzoo.cli`` and a
#: script each put another folder first on ``sys.path``, and a user alternates between a few of them.
MAX_ENVIRONMENTS = 8

_SOURCE_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".pth")


@dataclass(frozen=True)
class PluginRecord:
    """What one plugin registered at the last full load: enough to name it and route a lookup to it."""

    name: str
    architectures: tuple[str, ...]
    registry_dirs: tuple[str, ...]
    hf_readers: tuple[tuple[str, str], ...]  # (model_type, architecture)


@dataclass(frozen=True)
class Manifest:
    """A full load's outcome: the entry points found (name, target, distribution, version) with the environments
    (`environment_key`) they were found in, newest first, and each loaded plugin's record, in loading order."""

    key: str
    environments: tuple[str, ...]
    entry_points: list[tuple[str, str, str, str]]
    records: list[PluginRecord]


def environment_key() -> str:
    """What the installed distributions depend on: every ``sys.path`` entry and its modification time. Installing,
    upgrading or removing a distribution adds or removes a ``.dist-info`` folder in one of them, which changes
    that folder's time: while the key holds, the entry points found last time are the ones metadata would list."""
    digest = hashlib.sha256(sys.prefix.encode())
    for entry in sys.path:
        try:
            stat = os.stat(entry or ".")
            digest.update(f"\0{entry}\0{stat.st_ino}\0{stat.st_mtime_ns}".encode())
        except OSError:
            digest.update(f"\0{entry}\0-".encode())
    return digest.hexdigest()


def _files_of(paths: Iterable[str]) -> list[str] | None:
    """Every source file under ``paths`` (files or folders), or None when there are too many to sign."""
    found: list[str] = []
    for path in paths:
        if os.path.isfile(path):
            found.append(path)
            continue
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith("."))
            found.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(_SOURCE_SUFFIXES))
            if len(found) > MAX_SOURCE_FILES:
                return None
    return found


def source_signature(module: str) -> str | None:
    """A digest of the size and modification time of every source file of the top-level package that holds
    ``module`` (``pkg.sub:attr`` is signed by ``pkg``), found without importing anything; None when the files
    cannot be found (a module built into the interpreter, a package too large to walk)."""
    top = module.partition(":")[0].strip().split(".")[0]
    if not top.isidentifier():
        return None
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: finders search sys.path, nothing is imported
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        files = _files_of(list(spec.submodule_search_locations))
    elif spec.origin and os.path.isfile(spec.origin):
        files = [spec.origin]
    else:
        return None
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


#: archzoo's own modules that decide what a registration is and whether it is accepted: the plugin interface and
#: the host's checks. (A change elsewhere that altered a registration is caught when the plugin is imported.)
_CORE_MODULES = (
    "__init__.py",
    "architecture.py",
    "hookspecs.py",
    "host.py",
    "hf_config.py",
    "hf_vocabulary.py",
    "plugin_guard.py",
    "plugin_manifest.py",
)


def _core_signature() -> str:
    digest = hashlib.sha256()
    folder = os.path.dirname(os.path.abspath(__file__))
    for name in _CORE_MODULES:
        try:
            stat = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def manifest_key(entry_points: Iterable[tuple[str, ...]], only: Iterable[str] | None) -> str | None:
    """The key a manifest is valid under: ``entry_points`` as (name, target, distribution, version, kind, source
    signature) in loading order, and the ``ARCHZOO_PLUGINS`` selection; None when some plugin cannot be signed."""
    digest = hashlib.sha256(f"{FORMAT}\0{sys.version_info[:2]}\0{_core_signature()}".encode())
    digest.update(f"\0only\0{','.join(sorted(only)) if only is not None else '*'}".encode())
    for fields in entry_points:
        if not all(fields):
            return None
        digest.update(("\0" + "\0".join(fields)).encode())
    return digest.hexdigest()


def _manifest_file(only: Iterable[str] | None) -> Path:
    """The manifest's file, in the cache folder the registry index uses (`archzoo.cache_folder`); OSError
    where there is none (no home folder, or a cache variable archzoo cannot use: then every load is full, and
    the command that needs the folder itself names the variable)."""
    try:
        folder = cache_dir()
    except EnvironmentVariableError as exc:
        raise OSError(str(exc)) from None
    if folder is None:
        raise OSError("no cache folder")
    # one file per environment and selection, overwritten when its key changes: stale manifests do not pile up
    selection = ",".join(sorted(only)) if only is not None else "*"
    name = hashlib.sha256(f"{sys.prefix}\0{selection}".encode()).hexdigest()[:20]
    return folder / f"plugins-{name}.json"


def _strings(value: object) -> tuple[str, ...] | None:
    if type(value) is not list or not all(type(v) is str for v in value):
        return None
    return tuple(value)


def _record(item: object) -> PluginRecord | None:
    """One plugin's record, or None unless ``item`` has exactly the shape `write_manifest` writes."""
    if type(item) is not dict or set(item) != {"name", "architectures", "registry_dirs", "hf_readers"}:
        return None
    name, architectures, dirs = item["name"], _strings(item["architectures"]), _strings(item["registry_dirs"])
    readers = item["hf_readers"]
    if type(name) is not str or architectures is None or dirs is None or type(readers) is not dict:
        return None
    if not all(type(t) is str and type(a) is str and a in architectures for t, a in readers.items()):
        return None
    return PluginRecord(name, architectures, dirs, tuple(readers.items()))


def _entry_point(item: object) -> tuple[str, str, str, str] | None:
    if type(item) is not list or len(item) != 4 or not all(type(v) is str and v for v in item):
        return None
    return (item[0], item[1], item[2], item[3])


def read_manifest(only: Iterable[str] | None) -> Manifest | None:
    """The manifest of this environment and selection, or None when there is none or it is not exactly what
    `write_manifest` writes (a foreign, truncated or forged file is ignored)."""
    try:
        path = _manifest_file(only)
        with open(path, "rb") as file:
            raw = file.read(MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            return None
        data = json.loads(raw)
    except (OSError, RuntimeError, ValueError, RecursionError):
        return None
    if type(data) is not dict or set(data) != {"format", "key", "environments", "entry_points", "plugins"}:
        return None
    key, environments, found, items = data["key"], _strings(data["environments"]), data["entry_points"], data["plugins"]
    if data["format"] != FORMAT or type(key) is not str or environments is None:
        return None
    if not 0 < len(environments) <= MAX_ENVIRONMENTS:
        return None
    if type(found) is not list or type(items) is not list:
        return None
    entry_points = [_entry_point(item) for item in found]
    records = [_record(item) for item in items]
    names = [r.name for r in records if r is not None]
    if None in records or None in entry_points or len(set(names)) != len(names):
        return None
    return Manifest(
        key, environments, [e for e in entry_points if e is not None], [r for r in records if r is not None]
    )


def write_manifest(manifest: Manifest, only: Iterable[str] | None) -> None:
    """Write the manifest in one step (a reader sees the old file or the new one); a cache folder that cannot be
    found or written is not an error: the next load is a full one again."""
    import tempfile  # only a full load writes

    data = {
        "format": FORMAT,
        "key": manifest.key,
        "environments": list(manifest.environments[:MAX_ENVIRONMENTS]),
        "entry_points": [list(e) for e in manifest.entry_points],
        "plugins": [
            {
                "name": r.name,
                "architectures": list(r.architectures),
                "registry_dirs": list(r.registry_dirs),
                "hf_readers": dict(r.hf_readers),
            }
            for r in manifest.records
        ],
    }
    try:
        path = _manifest_file(only)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(prefix=".plugins-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.replace(staging, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staging)
            raise
    except (OSError, RuntimeError):
        return


def discard_manifest(only: Iterable[str] | None) -> None:
    """Remove the manifest of this environment and selection (it disagreed with a plugin as imported)."""
    with contextlib.suppress(OSError, RuntimeError):
        os.unlink(_manifest_file(only))
