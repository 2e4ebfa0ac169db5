"""The registry's index: one row per entry (its id, sizes, published figure, status), cached by file.

Validating and counting an entry takes about a millisecond; a zoo of 20,000 entries took half a minute to
list. The index keeps each entry's row, and its problems, in a cache file keyed by the registry folders;
a row is reused while its file keeps the same size, modification time and inode (git's rule for its own
index), or, when those changed, the same content (SHA-256). Everything that could change a count without
changing the entry invalidates the whole cache: archzoo's version and source files, and every loaded
plugin's name, version and module files.

The cache lives in ``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo``;
when it cannot be written the index is simply built each time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .host import PluginHost
from .files import MAX_FILE_BYTES
from .registry import Entry, RegistryProblem, _load_entry, registry_folders, split_plugin_problems, yaml_files

__all__ = ["IndexRow", "RegistryIndex", "load_index", "cache_dir", "FORMAT"]

#: Bumped whenever the shape of a cached row changes.
FORMAT = "archzoo.registry-index/3"


def cache_dir() -> Path:
    """Where index files are kept."""
    configured = os.environ.get("ARCHZOO_CACHE_DIR", "").strip()
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "archzoo"


@dataclass(frozen=True)
class IndexRow:
    """What listing an entry needs, without loading it again."""

    id: str
    path: str
    architecture: str
    title: str
    year: int
    tags: tuple[str, ...]
    params: int
    params_human: str
    published: str | None
    published_value: int | None
    gap: float | None
    status: str
    reason: str | None

    @classmethod
    def of(cls, entry: Entry) -> "IndexRow":
        spec = entry.spec
        from .report import human_count

        return cls(entry.id, str(entry.path), spec.architecture, spec.title, spec.year, tuple(spec.tags),
                   entry.params, human_count(entry.params), spec.published.params if spec.published else None,
                   spec.published.value if spec.published else None, entry.gap, entry.status,
                   spec.reconciliation.reason if spec.reconciliation else None)


@dataclass
class RegistryIndex:
    """Every entry's row, the problems and warnings of the files, and how much of it came from the cache."""

    rows: dict[str, IndexRow]
    problems: list[RegistryProblem]
    warnings: list[RegistryProblem]
    plugin_problems: list[RegistryProblem]
    reused: int = 0
    loaded: int = 0

    def __len__(self) -> int:
        return len(self.rows)


def _fingerprint(host: PluginHost) -> str:
    """Everything besides the entry itself that its row depends on."""
    from . import __version__

    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{sys.version_info[:2]}".encode())
    files: set[Path] = set(Path(__file__).resolve().parent.rglob("*.py"))
    for name, info in sorted(host.plugins.items()):
        digest.update(f"\0{name}\0{info.version}\0{info.module}".encode())
        module = sys.modules.get(info.module.partition(":")[0])
        origin = getattr(module, "__file__", None)
        if origin:
            base = Path(origin).resolve()
            files |= set(base.parent.rglob("*.py")) if base.name == "__init__.py" else {base}
    for path in sorted(files):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"\0{path}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    for problem in host.problems:
        digest.update(f"\0{problem}".encode())
    return digest.hexdigest()


def _cache_file(dirs: list[Path], owners: dict[Path, str]) -> Path:
    key = "\0".join(f"{d.resolve()}\0{owners.get(d.resolve(), '')}" for d in dirs)
    return cache_dir() / f"index-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _problem_dict(problem: RegistryProblem) -> dict[str, Any]:
    return {"path": str(problem.path), "line": problem.line, "key": problem.key, "message": problem.message,
            "plugin": problem.plugin}


def _problem(data: dict[str, Any]) -> RegistryProblem:
    return RegistryProblem(Path(data["path"]), data["line"], data["key"], data["message"], data.get("plugin", ""))


def _read_cache(path: Path, fingerprint: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != fingerprint:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache(path: Path, fingerprint: str, files: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "fingerprint": fingerprint, "files": files}, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache folder: the index is rebuilt next time, nothing is lost
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


def _digest(path: str, info: os.stat_result | None) -> str | None:
    """SHA-256 of a regular file small enough to be an entry; None for anything else."""
    if info is None or not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
        return None
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read(MAX_FILE_BYTES + 1)).hexdigest()
    except OSError:
        return None


def load_index(paths: Iterable[Path | str] | None = None, host: PluginHost | None = None,
               *, plugin_registries: Iterable[str] = (), use_cache: bool = True) -> RegistryIndex:
    """The rows of every entry under ``paths`` (default: `default_registry_dirs`) and plugin folders.

    The same entries, problems and warnings as `archzoo.registry.load_registry`, but each unchanged file's
    row and problems come from the cache, so a warm listing of a large zoo reads no YAML at all.
    """
    from .host import get_host

    host = host or get_host()
    dirs, owners = registry_folders(paths, host, plugin_registries)
    fingerprint = _fingerprint(host)
    cache_path = _cache_file(dirs, owners)
    cached = _read_cache(cache_path, fingerprint) if use_cache else {}
    by_content = {item["sha256"]: item for item in cached.values() if isinstance(item, dict) and "sha256" in item}
    problems: list[RegistryProblem] = []
    files = yaml_files(dirs, problems)
    fresh: dict[str, Any] = {}
    rows: dict[str, IndexRow] = {}
    warnings: list[RegistryProblem] = []
    first: dict[str, str] = {}
    reused = loaded = 0
    for key in files:
        stem = os.path.basename(key).rsplit(".", 1)[0]
        duplicate_of = first.setdefault(stem, key)
        if duplicate_of != key:  # never cached: it depends on the other file
            _load_entry(Path(key), host, problems, warnings, Path(duplicate_of))
            continue
        try:
            info = os.stat(key)
        except OSError:
            info = None
        stamp = [info.st_size, info.st_mtime_ns, info.st_ino] if info else None
        item = cached.get(key)
        if item is None or stamp is None or item.get("stamp") != stamp:
            item = None
            digest = _digest(key, info)
            same = by_content.get(digest) if digest else None
            if same is not None and Path(same["row"][1] if same.get("row") else key).stem == stem:
                item = dict(same, stamp=stamp)
                if item.get("row"):
                    item["row"] = [item["row"][0], key, *item["row"][2:]]
                item["problems"] = [dict(p, path=key) for p in item.get("problems", [])]
                item["warnings"] = [dict(p, path=key) for p in item.get("warnings", [])]
        if item is not None:
            reused += 1
        else:
            loaded += 1
            found: list[RegistryProblem] = []
            noted: list[RegistryProblem] = []
            entry = _load_entry(Path(key), host, found, noted, None)
            item = {"stamp": stamp, "row": list(dataclasses.astuple(IndexRow.of(entry))) if entry else None,
                    "problems": [_problem_dict(p) for p in found], "warnings": [_problem_dict(p) for p in noted]}
            digest = _digest(key, info)
            if digest:
                item["sha256"] = digest
        if stamp is not None:
            fresh[key] = item
        problems += [_problem(p) for p in item["problems"]]
        warnings += [_problem(p) for p in item["warnings"]]
        row = item["row"]
        if row is not None:  # cached as a list in field order: a third of the decoding a mapping costs
            rows[row[0]] = IndexRow(*row[:5], tuple(row[5]), *row[6:])
    if use_cache and (loaded or set(fresh) != set(cached)):
        _write_cache(cache_path, fingerprint, fresh)
    problems, plugin_problems = split_plugin_problems(problems, owners)
    return RegistryIndex(dict(sorted(rows.items())), problems, warnings, plugin_problems, reused, loaded)
