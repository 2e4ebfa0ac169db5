"""The registry's index: one row per entry (its id, sizes, published figure, status), cached by file.

Validating and counting an entry takes about a millisecond; a zoo of 20,000 entries took half a minute to
list. The index keeps each entry's row, and its problems, in a cache file keyed by the registry folders.
A row is reused while its file keeps the same size, modification time, inode and change time (git's rule
for its own index; the change time cannot be set back, so rewriting a file and restoring its modification
time with ``os.utime`` is noticed), or, when those changed, the same content (SHA-256). A file written
(its modification or change time) within two seconds of being indexed is "racily clean", in git's words:
a second write in the same timestamp tick could leave every stamp as it was, so its row is reused only
while its content is unchanged, until a later listing finds it settled. Everything that could change a
count without changing the entry invalidates the whole cache: archzoo's version and source files, and
every loaded plugin's name, version and module files.

The cache file is a header (format, fingerprint, CRC-32 of the rest) and the items as plain tuples,
written with `marshal`, which decodes them in a third of the time the same rows take as JSON. `marshal`
builds plain values only and never runs code, and it is read only after the header and the checksum
match, so a foreign, truncated or corrupt file is ignored and the index rebuilt.

The cache lives in ``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo``;
when it cannot be written the index is simply built each time.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import marshal
import os
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .errors import InputError
from .files import read_user_bytes
from .host import PluginHost
from .registry import Entry, RegistryProblem, _load_entry, registry_folders, split_plugin_problems, yaml_files

__all__ = ["FORMAT", "IndexRow", "RegistryIndex", "cache_dir", "load_index"]

#: Bumped whenever the layout of the cache file or of a cached row changes.
FORMAT = "archzoo.registry-index/4"

#: A file modified less than this before it was indexed is checked by content until it settles: two
#: writes within one timestamp tick (2 s on FAT, a jiffy on ext4) can leave size and times unchanged.
RACY_NS = 2_000_000_000

#: A cache file larger than this is not read (20,000 entries take about 6 MB).
MAX_CACHE_BYTES = 1 << 30

# A cached file: (stamp, sha256, settled, stem, row, problems, warnings), where stamp is (size, mtime_ns,
# inode, ctime_ns), row an IndexRow as a tuple (or None when the file has problems) and each problem a
# (line, key, message) tuple: the path is the key it is cached under.
_STAMP, _DIGEST, _SETTLED, _STEM, _ROW, _PROBLEMS, _WARNINGS = range(7)
_ITEM_LENGTH = 7


def cache_dir() -> Path:
    """Where index files are kept."""
    configured = os.environ.get("ARCHZOO_CACHE_DIR", "").strip()
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "archzoo"


class IndexRow(NamedTuple):
    """What listing an entry needs, without loading it again (a tuple: 20,000 are built per listing)."""

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
    def of(cls, entry: Entry) -> IndexRow:
        spec = entry.spec
        from .report import human_count

        return cls(
            entry.id,
            str(entry.path),
            spec.architecture,
            spec.title,
            spec.year,
            tuple(spec.tags),
            entry.params,
            human_count(entry.params),
            spec.published.params if spec.published else None,
            spec.published.value if spec.published else None,
            entry.gap,
            entry.status,
            spec.reconciliation.reason if spec.reconciliation else None,
        )


_ROW_LENGTH = len(IndexRow._fields)


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

    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{sys.version_info[:2]}\0{marshal.version}".encode())
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
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    for problem in host.problems:
        digest.update(f"\0{problem}".encode())
    return digest.hexdigest()


def _cache_file(dirs: list[Path], owners: dict[Path, str]) -> Path:
    key = "\0".join(f"{d.resolve()}\0{owners.get(d.resolve(), '')}" for d in dirs)
    return cache_dir() / f"index-{hashlib.sha256(key.encode()).hexdigest()[:24]}.marshal"


def _header(fingerprint: str) -> bytes:
    return f"{FORMAT}\n{fingerprint}\n".encode()


def _read_cache(path: Path, fingerprint: str) -> dict[str, tuple]:
    """The cached files, or nothing when the file is missing, foreign, stale, truncated or corrupt."""
    try:
        data = read_user_bytes(path, limit=MAX_CACHE_BYTES)
    except InputError:
        return {}
    header = _header(fingerprint)
    checksum = data[len(header) : len(header) + 9]
    payload = memoryview(data)[len(header) + 9 :]
    if not data.startswith(header) or checksum != b"%08x\n" % zlib.crc32(payload):
        return {}
    try:
        files = marshal.loads(payload)
    except Exception:
        return {}
    if type(files) is not dict:
        return {}
    for key, item in files.items():  # the shape every use below relies on, checked once
        if (
            type(key) is not str
            or type(item) is not tuple
            or len(item) != _ITEM_LENGTH
            or type(item[_STAMP]) is not tuple
            or type(item[_STEM]) is not str
            or type(item[_PROBLEMS]) is not tuple
            or type(item[_WARNINGS]) is not tuple
            or not (item[_ROW] is None or (type(item[_ROW]) is tuple and len(item[_ROW]) == _ROW_LENGTH))
            or (
                (item[_PROBLEMS] or item[_WARNINGS])
                and any(type(p) is not tuple or len(p) != 3 for p in item[_PROBLEMS] + item[_WARNINGS])
            )
        ):
            return {}
    return files


def _shared(key: str, item: tuple) -> tuple:
    """The item with the strings it repeats made one object (marshal then writes them once, and reading
    builds them once): its path, its id, and the architecture, status and tags most rows share."""
    row = item[_ROW]
    if row is None:
        return item
    intern = sys.intern
    row = (
        intern(row[0]),
        key if row[1] == key else row[1],
        intern(row[2]),
        *row[3:5],
        tuple(map(intern, row[5])),
        *row[6:11],
        intern(row[11]),
        row[12] and intern(row[12]),
    )
    return (*item[:_STEM], row[0] if item[_STEM] == row[0] else item[_STEM], row, *item[_ROW + 1 :])


def _write_cache(path: Path, fingerprint: str, files: dict[str, tuple]) -> None:
    payload = marshal.dumps({key: _shared(key, item) for key, item in files.items()})
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(_header(fingerprint) + b"%08x\n" % zlib.crc32(payload))
            f.write(payload)
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache folder: the index is rebuilt next time, nothing is lost
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextmanager
def _garbage_collection(enabled: bool) -> Iterator[None]:
    """Automatic garbage collection switched on or off inside the block, and back as it was after it."""
    before = gc.isenabled()
    gc.enable() if enabled else gc.disable()
    try:
        yield
    finally:
        gc.enable() if before else gc.disable()


def _stamp(path: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns


def _settled(stamp: tuple[int, int, int, int], settled_before: int) -> bool:
    """Whether the file was last written (its modification or change time) well before it was indexed."""
    return max(stamp[1], stamp[3]) < settled_before


def _digest(path: str) -> bytes | None:
    """SHA-256 of a regular file small enough to be an entry; None for anything else."""
    try:
        return hashlib.sha256(read_user_bytes(Path(path))).digest()
    except InputError:
        return None


def _problems(path: str, found: tuple) -> list[RegistryProblem]:
    where = Path(path)
    return [RegistryProblem(where, line, key, message) for line, key, message in found]


def _load(
    key: str, stamp: tuple | None, stem: str, host: PluginHost, settled_before: int, digest: bytes | None
) -> tuple:
    """Validate and count one file, as a cache item; ``digest`` is its content's, taken before this reads it."""
    found: list[RegistryProblem] = []
    noted: list[RegistryProblem] = []
    entry = _load_entry(Path(key), host, found, noted, None)
    if stamp is not None and _stamp(key) != stamp:
        stamp = None  # written to while it was read: never cached, read again next time
    return (
        stamp,
        digest,
        stamp is not None and _settled(stamp, settled_before),
        stem,
        tuple(IndexRow.of(entry)) if entry else None,
        tuple((p.line, p.key, p.message) for p in found),
        tuple((p.line, p.key, p.message) for p in noted),
    )


def load_index(
    paths: Iterable[Path | str] | None = None,
    host: PluginHost | None = None,
    *,
    plugin_registries: Iterable[str] = (),
    use_cache: bool = True,
) -> RegistryIndex:
    """The rows of every entry under ``paths`` (default: `default_registry_dirs`) and plugin folders.

    The same entries, problems and warnings as `archzoo.registry.load_registry`, but each unchanged file's
    row and problems come from the cache, so a warm listing of a large zoo reads no YAML at all.
    """
    from .host import get_host

    host = host or get_host()
    settled_before = time.time_ns() - RACY_NS  # taken before any file is looked at
    dirs, owners = registry_folders(paths, host, plugin_registries)
    fingerprint = _fingerprint(host)
    cache_path = _cache_file(dirs, owners)
    collecting = gc.isenabled()
    # The cache holds a few hundred thousand acyclic tuples: with the collector running, each of its full
    # passes walks them all, a third of a warm listing's time. It runs only while an entry is validated
    # (which leaves cyclic garbage behind).
    with _garbage_collection(False):
        cached = _read_cache(cache_path, fingerprint) if use_cache else {}
        problems: list[RegistryProblem] = []
        files = yaml_files(dirs, problems)
        by_content: dict[tuple[bytes, str], tuple] | None = None  # built when a file's stamp first differs
        fresh: dict[str, tuple] = {}
        rows: dict[str, IndexRow] = {}
        warnings: list[RegistryProblem] = []
        first: dict[str, str] = {}
        changed = False  # whether the cache file needs writing again
        reused = loaded = 0
        make_row = IndexRow._make
        for key in files:
            item = cached.get(key)
            stem = os.path.basename(key).rsplit(".", 1)[0] if item is None else item[_STEM]
            duplicate_of = first.setdefault(stem, key)
            if duplicate_of != key:  # never cached: it depends on the other file
                with _garbage_collection(collecting):
                    _load_entry(Path(key), host, problems, warnings, Path(duplicate_of))
                continue
            stamp = _stamp(key)
            digest = None  # the content's SHA-256, read once per file and only when the stamp cannot vouch for it
            if item is not None and (stamp is None or item[_STAMP] != stamp):
                item = None
            elif item is not None and not item[_SETTLED]:
                digest = _digest(key)
                if digest != item[_DIGEST]:
                    item = None
            if item is None and stamp is not None:  # a new stamp (a copy, a checkout, a touch): same content?
                digest = digest or _digest(key)
                if by_content is None:
                    by_content = {(c[_DIGEST], c[_STEM]): c for c in cached.values() if c[_DIGEST] is not None}
                same = by_content.get((digest, stem)) if digest else None  # the id is the file name: same name too
                if same is not None:
                    row = same[_ROW]
                    item = (
                        stamp,
                        digest,
                        _settled(stamp, settled_before),
                        stem,
                        row and (row[0], key, *row[2:]),
                        same[_PROBLEMS],
                        same[_WARNINGS],
                    )
                    changed = True
            if item is not None:
                reused += 1
                if not item[_SETTLED] and _settled(item[_STAMP], settled_before):  # checked by content, now settled
                    item = (*item[:_SETTLED], True, *item[_SETTLED + 1 :])
                    changed = True
            else:
                loaded += 1
                changed = True
                with _garbage_collection(collecting):
                    item = _load(key, stamp, stem, host, settled_before, digest or _digest(key))
            if item[_STAMP] is not None:
                fresh[key] = item
            if item[_PROBLEMS]:
                problems += _problems(key, item[_PROBLEMS])
            if item[_WARNINGS]:
                warnings += _problems(key, item[_WARNINGS])
            row = item[_ROW]
            if row is not None:
                rows[row[0]] = make_row(row)
        if use_cache and (changed or len(fresh) != len(cached)):  # unchanged: fresh holds cached items only
            _write_cache(cache_path, fingerprint, fresh)
        del cached, fresh, by_content
        rows = {model_id: rows[model_id] for model_id in sorted(rows)}
    problems, plugin_problems = split_plugin_problems(problems, owners)
    return RegistryIndex(rows, problems, warnings, plugin_problems, reused, loaded)
