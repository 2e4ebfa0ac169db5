"""The registry's files and index: which YAML files make the zoo, and one row per entry, cached by file.

This module reads no YAML and imports neither pydantic nor the entry schema: listing a zoo whose rows are
cached needs only the folders and the cache (`archzoo.registry` validates an entry, and is imported where
a file has to be read again).

Validating and counting an entry takes a few milliseconds; a zoo of 20,000 entries took minutes to list.
The index keeps each entry's row, and its problems, in a cache file keyed by the registry folders.
A row is reused while its file keeps the same size, modification time, inode and change time (git's rule
for its own index; the change time cannot be set back, so rewriting a file and restoring its modification
time with ``os.utime`` is noticed), or, when those changed, the same content (SHA-256). A file written
(its modification or change time) within two seconds of being indexed is "racily clean", in git's words:
a second write in the same timestamp tick could leave every stamp as it was, so its row is reused only
while its content is unchanged, until a later listing finds it settled. Everything that could change a
count without changing the entry invalidates the whole cache: archzoo's version and source files, and
every loaded plugin's name, version and module files.

Files that must be read again are validated by worker processes, one per core, when there are enough of
them to pay for the workers (`PARALLEL_MIN`); a listing that takes long says how far it is on standard
error (`Progress`). Entries of one configuration are counted once per process (`archzoo.registry.SharedReports`).

The cache file is a header (format, fingerprint, CRC-32 of the rest) and the items as plain tuples,
written with `marshal`, which decodes them in a third of the time the same rows take as JSON. `marshal`
builds plain values only and never runs code. The header is read first, with a read of its own length,
so a foreign file of any size costs one small read; the rest is read only when the header and the size
match, decoded only when the checksum matches, and trusted only when every value has the type its use
expects and the row agrees with its file (its id is the file name, its path the file's; a file has a row
exactly when it has no problem). A cache file
that another user owns, or that others may write, is never read: its rows could be forged. Anything
else is ignored and the index rebuilt.

The cache lives in ``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo``;
without a home folder (a container started with ``env -i`` under a user with no passwd entry), or when
the folder cannot be written, the index is simply built each time.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import marshal
import os
import stat as stat_module
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from .cache_folder import cache_dir
from .registry_files import (
    RegistryProblem,
    default_registry_dirs,
    registry_folders,
    split_plugin_problems,
    yaml_files,
)

if TYPE_CHECKING:
    from .host import PluginHost
    from .registry import Entry, SharedReports

__all__ = [
    "FORMAT",
    "IndexRow",
    "Progress",
    "RegistryIndex",
    "RegistryProblem",
    "cache_dir",
    "default_registry_dirs",
    "load_index",
    "registry_folders",
    "split_plugin_problems",
    "yaml_files",
]

#: Bumped whenever the layout of the cache file or of a cached row changes.
FORMAT = "archzoo.registry-index/4"

#: A file modified less than this before it was indexed is checked by content until it settles: two
#: writes within one timestamp tick (2 s on FAT, a jiffy on ext4) can leave size and times unchanged.
RACY_NS = 2_000_000_000

#: A cache file larger than this is not read (20,000 entries take about 6 MB).
MAX_CACHE_BYTES = 1 << 30

#: The largest registry file whose content is hashed (as `archzoo.files` reads entries: larger ones are refused).
MAX_ENTRY_BYTES = 1 << 20

#: Fewer files to read again than this are read in this process: starting workers would cost more.
PARALLEL_MIN = 64

#: Files read between two passes of the garbage collector over the young objects (`_Garbage`).
COLLECT_EVERY = 256


# A cached file: (stamp, sha256, settled, stem, row, problems, warnings), where stamp is (size, mtime_ns,
# inode, ctime_ns), row an IndexRow as a tuple (or None when the file has problems) and each problem a
# (line, key, message) tuple: the path is the key it is cached under.
_STAMP, _DIGEST, _SETTLED, _STEM, _ROW, _PROBLEMS, _WARNINGS = range(7)
_ITEM_LENGTH = 7


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


def _row_types() -> frozenset[tuple[type, ...]]:
    """Every sequence of value types a cached row may have (None where a field is optional)."""
    types: list[tuple[type, ...]] = [()]
    for field_type in IndexRow.__annotations__.values():
        options = {
            "str": (str,),
            "int": (int,),
            "tuple[str, ...]": (tuple,),
            "str | None": (str, type(None)),
            "int | None": (int, type(None)),
            "float | None": (float, type(None)),
        }[str(getattr(field_type, "__forward_arg__", field_type))]  # annotations are strings here
        types = [done + (option,) for done in types for option in options]
    return frozenset(types)


#: The types a cached row's values may have, checked as one tuple (`type` is exact: True is no int here).
_ROW_TYPES = _row_types()
_STAMP_TYPES = (int, int, int, int)
_PROBLEM_TYPES = (int, str, str)


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
    return code_fingerprint(host, FORMAT, marshal.version)


def code_fingerprint(host: PluginHost, *parts: object) -> str:
    """A digest of the code that makes anything archzoo caches from an entry: archzoo's version and source
    files, the Python version, each plugin's name, version and files (from its source signature, so a plugin
    not imported yet stays so), the host's problems, and ``parts`` (the cache's own format, the libraries it
    depends on). Any change of one misses every cached item."""
    from . import __version__

    digest = hashlib.sha256(f"{__version__}\0{sys.version_info[:2]}".encode())
    for part in parts:
        digest.update(f"\0{part}".encode())
    files: set[Path] = set(Path(__file__).resolve().parent.rglob("*.py"))
    for name, info in sorted(host.plugin_infos.items()):  # a plugin not imported yet stays so
        digest.update(f"\0{name}\0{info.version}\0{info.module}\0{info.source_signature}".encode())
        if info.source_signature:  # its package's files' sizes and times, found without importing it
            continue
        module = sys.modules.get(info.module.partition(":")[0])  # a plugin registered in process: its files
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


def _cache_file(dirs: list[Path], owners: dict[Path, str]) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    key = "\0".join(f"{d.resolve()}\0{owners.get(d.resolve(), '')}" for d in dirs)
    return folder / f"index-{hashlib.sha256(key.encode()).hexdigest()[:24]}.marshal"


def _header(fingerprint: str) -> bytes:
    return f"{FORMAT}\n{fingerprint}\n".encode()


def _read_regular(path: Path | str, limit: int, head: bytes = b"", *, own: bool = False) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes that starts with ``head``, else None.

    ``head`` is read first, with a read of its own length: a file that does not start with it costs that
    one read, whatever its size. With ``own``, a file another user owns, or that others may write, is
    refused too. The file is opened without blocking (a FIFO put in its place would block the open) and
    checked after it is opened (the path may have been swapped).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or info.st_size > limit or info.st_size < len(head):
            return None
        if own and hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
            return None
        if head and _read_exactly(fd, len(head)) != head:
            return None
        rest = _read_exactly(fd, info.st_size - len(head) + 1)  # one byte more: a file that grew is refused
    except OSError:
        return None
    finally:
        os.close(fd)
    if rest is None or len(rest) != info.st_size - len(head):
        return None
    return head + rest


def _read_exactly(fd: int, size: int) -> bytes | None:
    """Up to ``size`` bytes (fewer at the end of the file)."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, min(1 << 20, size - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _valid_item(key: object, item: object) -> bool:
    """Whether a decoded cache item has every type its use relies on, and a row that agrees with its file."""
    if type(key) is not str or type(item) is not tuple or len(item) != _ITEM_LENGTH:
        return False
    stamp, digest, settled, stem, row, problems, warnings = item
    if (
        type(stamp) is not tuple
        or tuple(map(type, stamp)) != _STAMP_TYPES
        or not (digest is None or type(digest) is bytes)
        or type(settled) is not bool
        or type(stem) is not str
        or type(problems) is not tuple
        or type(warnings) is not tuple
    ):
        return False
    for problem in problems + warnings:
        if type(problem) is not tuple or tuple(map(type, problem)) != _PROBLEM_TYPES:
            return False
    if row is None or problems:  # a file has a row exactly when it has no problem (`_load`)
        return row is None and bool(problems)
    if type(row) is not tuple or tuple(map(type, row)) not in _ROW_TYPES:
        return False
    model_id, path, tags, params, published_value, gap = row[0], row[1], row[5], row[6], row[9], row[10]
    if model_id != stem or path != key or stem != os.path.basename(key).rsplit(".", 1)[0]:
        return False  # the id is the file name, and the row is its file's
    if any(type(tag) is not str for tag in tags):
        return False
    if published_value is None:
        return gap is None
    return published_value > 0 and gap == (params - published_value) / published_value


def _read_cache(path: Path | None, fingerprint: str) -> dict[str, tuple]:
    """The cached files, or nothing when the file is missing, foreign, stale, truncated, corrupt or forged."""
    if path is None:
        return {}
    data = _read_regular(path, MAX_CACHE_BYTES, _header(fingerprint), own=True)
    if data is None:
        return {}
    start = len(_header(fingerprint))
    checksum = data[start : start + 9]
    payload = memoryview(data)[start + 9 :]
    if checksum != b"%08x\n" % zlib.crc32(payload):
        return {}
    try:
        files = marshal.loads(payload)
    except Exception:  # marshal raises ValueError, EOFError or TypeError on bad data, and more on exotic input
        return {}
    if type(files) is not dict:
        return {}
    for key, item in files.items():  # the shape every use below relies on, checked once
        if not _valid_item(key, item):
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


def _write_cache(path: Path | None, fingerprint: str, files: dict[str, tuple]) -> None:
    if path is None:
        return
    import tempfile  # only when writing: it brings shutil, random and the compressors, a warm listing none

    payload = marshal.dumps({key: _shared(key, item) for key, item in files.items()})
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)  # mode 0600
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


class _Garbage:
    """The reference cycles that reading entries leaves (a few dozen objects an entry), collected by hand while
    automatic collection is off: one pass over the young generations every `COLLECT_EVERY` files.

    With automatic collection on, its passes over the whole heap (the entry schema, pydantic, the plugins)
    took a fifth of a cold index's time; the objects made since the last pass are all in the young
    generations, so a pass over those alone finds the cycles the files left. Nothing is collected when the
    caller had switched collection off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.pending = 0

    def read(self) -> None:
        """One more file read."""
        self.pending += 1
        if self.pending >= COLLECT_EVERY:
            self.pending = 0
            if self.enabled:
                gc.collect(1)


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
    data = _read_regular(path, MAX_ENTRY_BYTES)
    return None if data is None else hashlib.sha256(data).digest()


def _problems(path: str, found: tuple) -> list[RegistryProblem]:
    where = Path(path)
    return [RegistryProblem(where, line, key, message) for line, key, message in found]


def _load(
    key: str,
    stamp: tuple | None,
    stem: str,
    host: PluginHost,
    settled_before: int,
    digest: bytes | None,
    reports: SharedReports,
) -> tuple:
    """Validate and count one file, as a cache item; ``digest`` is its content's, taken before this reads it
    (None: taken here first, in the worker that reads it, rather than one by one before the workers start).
    ``reports`` holds the report of each configuration already counted in this process."""
    from .registry import load_entry  # the entry schema and pydantic: only when a file is read again

    if digest is None:
        digest = _digest(key)
    found: list[RegistryProblem] = []
    noted: list[RegistryProblem] = []
    entry = load_entry(Path(key), host, found, noted, None, reports=reports)
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


# ---- reading files again, in parallel ----------------------------------------------------------------

#: (key, stamp, stem, digest) of a file to read again (digest None: not taken yet).
_Job = tuple[str, "tuple[int, int, int, int] | None", str, "bytes | None"]

# What a worker process needs, set in the parent before the workers are forked (nothing is pickled).
_worker_state: tuple[PluginHost, int, _Garbage, SharedReports] | None = None


def _work(job: _Job) -> tuple:
    assert _worker_state is not None, "set before the workers are forked"
    host, settled_before, garbage, reports = _worker_state  # each worker fills its own copies
    item = _load(job[0], job[1], job[2], host, settled_before, job[3], reports)
    garbage.read()
    return item


def _workers(jobs: int) -> int:
    """How many processes read ``jobs`` files: one per core this process may run on, when forking is safe."""
    if jobs < PARALLEL_MIN or not sys.platform.startswith("linux"):  # fork is safe on Linux only
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 16, jobs // (PARALLEL_MIN // 2)))


def _load_all(
    jobs: list[_Job],
    host: PluginHost,
    settled_before: int,
    collecting: bool,
    done: Callable[[int], None],
) -> list[tuple]:
    """The cache item of every job, in order; ``done(n)`` after each ``n`` items come back.

    Entries of one configuration share its report within a process (`archzoo.registry.SharedReports`):
    in a worker, those of its own share of the jobs."""
    global _worker_state
    if not jobs:
        return []
    from .registry import SharedReports  # the entry schema and pydantic: only when a file is read again

    reports = SharedReports()
    garbage = _Garbage(collecting)
    items: list[tuple] = []
    workers = _workers(len(jobs))
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        _worker_state = (host, settled_before, garbage, reports)
        chunk = max(1, min(64, len(jobs) // (workers * 8)))
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                for item in pool.map(_work, jobs, chunksize=chunk):
                    items.append(item)
                    done(1)
        except (BrokenProcessPool, OSError, ImportError):  # a worker killed (out of memory), or none could start
            pass  # (no /dev/shm, no sem_open): the rest is read here
        finally:
            _worker_state = None
    for key, stamp, stem, digest in jobs[len(items) :]:
        items.append(_load(key, stamp, stem, host, settled_before, digest, reports))
        garbage.read()
        done(1)
    return items


class Progress:
    """How far a long indexing is, on standard error: redrawn in place on a terminal (after half a second,
    erased when done), else a plain line every ten seconds once it has taken three (a log keeps lines, and
    output piped elsewhere never sees a carriage return)."""

    TERMINAL_AFTER = 0.5
    PLAIN_AFTER = 3.0
    PLAIN_EVERY = 10.0

    def __init__(self, total: int, stream: TextIO | None, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.shown = 0.0  # when last drawn; 0: never
        self.width = 0
        try:
            self.terminal = bool(stream and stream.isatty())
        except (OSError, ValueError):
            self.terminal = False

    def _text(self) -> str:
        return (
            f"archzoo: indexing the registry: {self.done:,} of {self.total:,} entries read "
            f"({100 * self.done // max(self.total, 1)}%)"
        )

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.stream is None:
            return
        now = self.clock()
        elapsed = now - self.started
        if self.terminal:
            if elapsed >= self.TERMINAL_AFTER and now - self.shown >= 0.1:
                text = self._text()
                self.stream.write("\r" + text.ljust(self.width))
                self.stream.flush()
                self.width, self.shown = len(text), now
        elif elapsed >= self.PLAIN_AFTER and (not self.shown or now - self.shown >= self.PLAIN_EVERY):
            self.stream.write(f"{self._text()}, {elapsed:.0f} s so far\n")
            self.stream.flush()
            self.shown = now

    def close(self) -> None:
        if self.stream is None or not self.shown:
            return
        if self.terminal:
            self.stream.write("\r" + " " * self.width + "\r")
        else:
            self.stream.write(
                f"archzoo: indexed {self.total:,} entries in {self.clock() - self.started:.0f} s; "
                "the next listing reads them from the cache\n"
            )
        self.stream.flush()


def load_index(
    paths: Iterable[Path | str] | None = None,
    host: PluginHost | None = None,
    *,
    plugin_registries: Iterable[str] = (),
    use_cache: bool = True,
    progress: TextIO | bool | None = True,
) -> RegistryIndex:
    """The rows of every entry under ``paths`` (default: `default_registry_dirs`) and plugin folders.

    The same entries, problems and warnings as `archzoo.registry.load_registry`, but each unchanged file's
    row and problems come from the cache, so a warm listing of a large zoo reads no YAML at all. Files to
    read again are read by one worker process per core when there are many. ``progress``: where to say
    how far a long indexing is (True: standard error; False or None: nowhere), as `Progress` does.
    """
    from .host import get_host

    host = host or get_host()
    settled_before = time.time_ns() - RACY_NS  # taken before any file is looked at
    dirs, owners = registry_folders(paths, host, plugin_registries)
    cache_path = _cache_file(dirs, owners) if use_cache else None
    fingerprint = _fingerprint(host) if cache_path is not None else ""
    collecting = gc.isenabled()
    # The cache holds a few hundred thousand acyclic tuples: with the collector running, each of its full
    # passes walks them all, a third of a warm listing's time. Files read again leave cyclic garbage behind,
    # collected by hand (`_Garbage`).
    with _garbage_collection(False):
        cached = _read_cache(cache_path, fingerprint)
        problems: list[RegistryProblem] = []
        files = yaml_files(dirs, problems)
        by_content: dict[tuple[bytes, str], tuple] | None = None  # built when a file's stamp first differs
        fresh: dict[str, tuple] = {}
        first: dict[str, str] = {}
        changed = False  # whether the cache file needs writing again
        reused = 0
        # First pass: each file's item from the cache, or a job to read it again (None: a duplicate id).
        found: list[tuple[str, tuple | None, str | None]] = []  # (key, item, the first file of its id)
        jobs: list[_Job] = []
        for key in files:
            item = cached.get(key)
            stem = os.path.basename(key).rsplit(".", 1)[0] if item is None else item[_STEM]
            duplicate_of = first.setdefault(stem, key)
            if duplicate_of != key:  # never cached: it depends on the other file
                found.append((key, None, duplicate_of))
                continue
            stamp = _stamp(key)
            digest = None  # the content's SHA-256, read once per file and only when the stamp cannot vouch for it
            if item is not None and (stamp is None or item[_STAMP] != stamp):
                item = None
            elif item is not None and not item[_SETTLED]:
                digest = _digest(key)
                if digest != item[_DIGEST]:
                    item = None
            if item is None and stamp is not None and cached:  # a new stamp (a copy, a touch): same content?
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
                jobs.append((key, stamp, stem, digest))  # its digest, if not taken yet, by whoever reads it
            found.append((key, item, None))
        # Second pass: the files read again, then every row and problem in the order of the files.
        stream = sys.stderr if progress is True else (progress or None)
        meter = Progress(len(jobs), stream)
        loaded_items = iter(_load_all(jobs, host, settled_before, collecting, meter.advance))
        meter.close()
        rows: dict[str, IndexRow] = {}
        warnings: list[RegistryProblem] = []
        make_row = IndexRow._make
        for key, item, first_of in found:
            if first_of is not None:
                from .registry import load_entry

                with _garbage_collection(collecting):
                    load_entry(Path(key), host, problems, warnings, Path(first_of))
                continue
            if item is None:
                item = next(loaded_items)
                changed = True
            if item[_STAMP] is not None:
                fresh[key] = item
            if item[_PROBLEMS]:
                problems += _problems(key, item[_PROBLEMS])
            if item[_WARNINGS]:
                warnings += _problems(key, item[_WARNINGS])
            row = item[_ROW]
            if row is not None:
                rows[row[0]] = make_row(row)
        if cache_path is not None and (changed or len(fresh) != len(cached)):  # unchanged: cached items only
            _write_cache(cache_path, fingerprint, fresh)
        del cached, fresh, by_content, found
        rows = {model_id: rows[model_id] for model_id in sorted(rows)}
    problems, plugin_problems = split_plugin_problems(problems, owners)
    return RegistryIndex(rows, problems, warnings, plugin_problems, reused, len(jobs))
