"""The registry index: the same rows and problems as loading every entry, reused while files are unchanged."""

from __future__ import annotations

import io
import marshal
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from archzoo import registry_index
from archzoo.host import PluginHost
from archzoo.registry import load_registry
from archzoo.registry_index import IndexRow, load_index

#: transformers' GPT2Block at n_embd 768 (GPT2Config's default): sum(p.numel()) = 12·768² + 13·768
GPT2_BLOCK = 7_087_872

REPO = Path(__file__).resolve().parents[1]
ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n  n_layers: {n}\n"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


@pytest.fixture
def registry(tmp_path) -> Path:
    folder = tmp_path / "registry"
    folder.mkdir()
    for n in (1, 2, 3):
        (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (folder / "broken.yaml").write_text(ENTRY.format(n="many"))
    return folder


def test_rows_are_what_loading_every_entry_gives(host):
    """Over the shipped registry, cold and warm, the index equals the full load entry by entry."""
    full = load_registry([REPO / "registry"], host)
    expected = {model_id: IndexRow.of(entry) for model_id, entry in full.entries.items()}
    cold = load_index([REPO / "registry"], host)
    warm = load_index([REPO / "registry"], host)
    assert (cold.loaded, cold.reused) == (len(expected), 0)
    assert (warm.loaded, warm.reused) == (0, len(expected))
    assert cold.rows == warm.rows == expected
    assert warm.problems == full.problems == []


def test_problems_come_back_from_the_cache(registry, host):
    cold = load_index([registry], host)
    warm = load_index([registry], host)
    assert warm.reused == 4
    assert (
        [str(p) for p in warm.problems]
        == [str(p) for p in cold.problems]
        == [f"{registry}/broken.yaml:6: config.n_layers: expected an integer, got the string 'many'"]
    )
    assert sorted(warm.rows) == ["gpt-1", "gpt-2", "gpt-3"]


def test_only_a_changed_file_is_read_again(registry, host):
    load_index([registry], host)
    (registry / "gpt-2.yaml").write_text(ENTRY.format(n=24))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (1, 3)
    # 24 layers against gpt-1's one: 23 more GPT2Block
    assert index.rows["gpt-2"].params - load_index([registry], host).rows["gpt-1"].params == 23 * GPT2_BLOCK


def test_same_content_with_a_new_stamp_is_reused(registry, host):
    load_index([registry], host)
    path = registry / "gpt-3.yaml"
    text = path.read_text()
    path.unlink()
    path.write_text(text)  # a new inode and modification time, the same bytes
    os.utime(path, ns=(1, 1))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (0, 4)
    assert index.rows["gpt-3"].path == str(path)


def test_a_copy_under_another_name_is_not_mistaken_for_the_original(registry, host):
    load_index([registry], host)
    shutil.copy(registry / "gpt-1.yaml", registry / "gpt-one.yaml")
    index = load_index([registry], host)
    assert index.loaded == 1
    assert index.rows["gpt-one"].path == str(registry / "gpt-one.yaml")


def test_another_set_of_plugins_invalidates_the_cache(registry, host):
    import types

    from archzoo import hookimpl

    load_index([registry], host)
    extra = types.ModuleType("archzoo_noop")
    extra.register_registry_dirs = hookimpl(lambda register: None)
    other = PluginHost(extra_plugins={"noop": extra}).load()
    assert load_index([registry], other).loaded == 4


def test_a_changed_plugin_package_invalidates_the_cache(registry, host, monkeypatch):
    """A plugin's source signature (its package's files, found without importing it) keys the cache."""
    import dataclasses

    load_index([registry], host)
    assert load_index([registry], host).reused == 4
    name, info = next((n, i) for n, i in host.plugin_infos.items() if i.source_signature)
    changed = {**host.plugin_infos, name: dataclasses.replace(info, source_signature="another")}
    monkeypatch.setattr(type(host), "plugin_infos", property(lambda self: changed))
    assert load_index([registry], host).loaded == 4


def test_a_corrupt_or_unwritable_cache_is_rebuilt(registry, host, cache, tmp_path, monkeypatch):
    load_index([registry], host)
    for file in cache.iterdir():
        file.write_text("{not json")
    assert load_index([registry], host).loaded == 4
    # the default place (no variable names it) is a file: nothing to complain about, the index is built each time
    monkeypatch.delenv("ARCHZOO_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "archzoo").write_text("a file where the cache folder should be")
    for _ in range(2):
        index = load_index([registry], host)
        assert (index.loaded, sorted(index.rows)) == (4, ["gpt-1", "gpt-2", "gpt-3"])


def _rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    """New content of the same length, with the old modification time put back: only the change time (and
    the content) tell. The change time is bumped until it differs, on a file system with coarse timestamps."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.01)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_settled_file_rewritten_with_its_old_size_and_mtime_is_read_again(registry, host, monkeypatch):
    clock = time.time_ns
    monkeypatch.setattr(registry_index.time, "time_ns", lambda: clock() + 60 * 10**9)  # every file settled
    load_index([registry], host)
    assert load_index([registry], host).reused == 4  # settled: reused on its stamp alone
    path = registry / "gpt-2.yaml"
    _rewrite_keeping_size_and_mtime(path, ENTRY.format(n=5))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (1, 3)
    assert index.rows["gpt-2"].params - index.rows["gpt-1"].params == 4 * GPT2_BLOCK


def test_a_racy_file_is_checked_by_content(registry, host, monkeypatch):
    """Two writes in one timestamp tick leave every stamp as it was: a file written within two seconds of
    being indexed is compared by content until it settles. Coarse timestamps are simulated by leaving the
    change time out of the stamp."""
    real_stamp = registry_index._stamp
    monkeypatch.setattr(registry_index, "_stamp", lambda key: (*real_stamp(key)[:3], 0))
    load_index([registry], host)
    path = registry / "gpt-2.yaml"
    _rewrite_keeping_size_and_mtime(path, ENTRY.format(n=5))
    real_digest, hashed = registry_index._digest, []
    monkeypatch.setattr(registry_index, "_digest", lambda key: hashed.append(key) or real_digest(key))
    index = load_index([registry], host)
    assert (index.loaded, index.reused) == (1, 3)
    assert index.rows["gpt-2"].params - index.rows["gpt-1"].params == 4 * GPT2_BLOCK
    assert sorted(hashed) == sorted(str(registry / f"{name}.yaml") for name in ("broken", "gpt-1", "gpt-2", "gpt-3"))
    monkeypatch.setattr(registry_index, "_digest", real_digest)  # each racy file hashed once, the changed one too
    # once the files have settled, the next listing records it, and the one after trusts the stamps
    clock = time.time_ns
    monkeypatch.setattr(registry_index.time, "time_ns", lambda: clock() + 60 * 10**9)
    assert load_index([registry], host).reused == 4
    digests = []
    monkeypatch.setattr(registry_index, "_digest", lambda key: digests.append(key))
    assert load_index([registry], host).reused == 4
    assert digests == []


def _cache_file(cache: Path) -> Path:
    (file,) = cache.iterdir()
    return file


def _valid_header(host: PluginHost, payload: bytes) -> bytes:
    return registry_index._header(registry_index._fingerprint(host)) + b"%08x\n" % zlib.crc32(payload) + payload


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "empty", "random bytes"])
def test_a_corrupt_cache_is_ignored_and_rebuilt(registry, host, cache, damage):
    load_index([registry], host)
    file = _cache_file(cache)
    data = file.read_bytes()
    middle = len(data) // 2
    file.write_bytes(
        {
            "truncated": data[:middle],
            "flipped byte": data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :],
            "empty": b"",
            "random bytes": os.urandom(len(data)),
        }[damage]
    )
    index = load_index([registry], host)
    assert (index.loaded, sorted(index.rows)) == (4, ["gpt-1", "gpt-2", "gpt-3"])
    assert load_index([registry], host).reused == 4  # rebuilt


@pytest.mark.parametrize(
    "content",
    [
        "an older format",
        "another fingerprint",
        "a list",
        "a short item",
        "a row of the wrong length",
        "an unhashable id",
        "a problem of the wrong shape",
        "a JSON cache",
    ],
)
def test_a_foreign_cache_is_ignored(registry, host, cache, content):
    load_index([registry], host)
    file = _cache_file(cache)
    data = file.read_bytes()
    header = registry_index._header(registry_index._fingerprint(host))
    items = marshal.loads(data[len(header) + 9 :])
    key = str(registry / "gpt-1.yaml")
    item = items[key]
    written = {
        "an older format": data.replace(registry_index.FORMAT.encode(), b"archzoo.registry-index/3", 1),
        "another fingerprint": data.replace(header, registry_index._header("0" * 64), 1),
        "a list": _valid_header(host, marshal.dumps(list(items.items()))),
        "a short item": _valid_header(host, marshal.dumps({**items, key: item[:-1]})),
        "a row of the wrong length": _valid_header(
            host, marshal.dumps({**items, key: (*item[:4], item[4][:-1], *item[5:])})
        ),
        "an unhashable id": _valid_header(host, marshal.dumps({**items, key: (*item[:3], ["gpt-1"], *item[4:])})),
        "a problem of the wrong shape": _valid_header(
            host, marshal.dumps({**items, key: (*item[:5], ((1, "x"),), *item[6:])})
        ),
        "a JSON cache": b'{"format": "archzoo.registry-index/3", "files": {}}',
    }[content]
    file.write_bytes(written)
    index = load_index([registry], host)
    assert (index.loaded, sorted(index.rows)) == (4, ["gpt-1", "gpt-2", "gpt-3"])


def test_code_in_the_cache_is_never_run(registry, host, cache, tmp_path):
    """marshal can hold a code object; the index builds it as a value at most, and never calls it."""
    marker = tmp_path / "ran"
    load_index([registry], host)
    code = compile(f"open({str(marker)!r}, 'w').close()", "<cache>", "exec")
    _cache_file(cache).write_bytes(_valid_header(host, marshal.dumps(code)))
    assert load_index([registry], host).loaded == 4
    assert not marker.exists()


def test_rows_problems_and_warnings_equal_a_full_load(tmp_path, host):
    """Entries with a row, a problem, a warning, a duplicate id and subfolders, cold, warm and after a copy."""
    folder = tmp_path / "zoo"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    for n in (1, 2, 12):
        (folder / "a" / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (folder / "b" / "gpt-2.yaml").write_text(ENTRY.format(n=3))  # a duplicate id
    (folder / "b" / "broken.yaml").write_text(ENTRY.format(n="many"))
    # GPT-2 Medium, printed as 345M in Radford et al. 2019 (Table 2) while GPT2LMHeadModel has 354,823,168
    # parameters: over the rounding of "345M" and under the 5% that needs a reconciliation, so a warning
    (folder / "b" / "gpt2-medium.yaml").write_text(
        "architecture: gpt\ntitle: GPT-2 Medium\nsummary: The 24-layer GPT-2.\nyear: 2019\n"
        "config: {d_model: 1024, n_layers: 24, n_heads: 16}\npublished:\n  params: 345M\n  source:\n"
        "    title: Language Models are Unsupervised Multitask Learners\n    authors: [Alec Radford]\n"
        "    year: 2019\n    venue: OpenAI\n    locator: Table 2\n"
    )
    full = load_registry([folder], host)
    expected = {model_id: IndexRow.of(entry) for model_id, entry in full.entries.items()}
    for label in ("cold", "warm"):
        index = load_index([folder], host)
        assert index.rows == expected, label
        assert list(index.rows) == sorted(expected), label
        assert index.problems == full.problems, label
        assert index.warnings == full.warnings, label
    assert [(p.path.name, p.key) for p in full.problems] == [("broken.yaml", "config.n_layers"), ("gpt-2.yaml", "")]
    assert [(p.path.name, p.key) for p in full.warnings] == [("gpt2-medium.yaml", "published.params")]
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)  # new paths, inodes and times: rows come back by content, with new paths
    moved = load_index([copy], host)
    assert moved.rows == {i: IndexRow.of(e) for i, e in load_registry([copy], host).entries.items()}


# ---- reading files again in parallel, and saying how far it is -------------------------------------------


def _record_pid(folder: Path):
    """A stand-in for `_load` that notes which process ran it (a file per call: workers share no memory)."""
    real = registry_index._load

    def load(key, *args):
        (folder / f"{os.getpid()}-{Path(key).name}").touch()
        return real(key, *args)

    return load


def test_files_read_in_parallel_give_what_one_process_gives(tmp_path, host, monkeypatch):
    folder = tmp_path / "zoo"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    for n in range(1, 13):
        (folder / ("a" if n % 2 else "b") / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (folder / "b" / "gpt-1.yaml").write_text(ENTRY.format(n=30))  # a duplicate id, read by the parent
    (folder / "a" / "broken.yaml").write_text(ENTRY.format(n="many"))
    calls = tmp_path / "calls"
    calls.mkdir()
    monkeypatch.setattr(registry_index, "PARALLEL_MIN", 2)
    monkeypatch.setattr(registry_index.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(registry_index, "_load", _record_pid(calls))
    index = load_index([folder], host)
    full = load_registry([folder], host)
    assert index.rows == {model_id: IndexRow.of(entry) for model_id, entry in full.entries.items()}
    assert (index.problems, index.warnings) == (full.problems, full.warnings)
    assert [(p.path.name, p.key) for p in index.problems] == [("broken.yaml", "config.n_layers"), ("gpt-1.yaml", "")]
    pids = {name.name.split("-", 1)[0] for name in calls.iterdir()}
    assert len(list(calls.iterdir())) == 13 and len(pids) == 2 and str(os.getpid()) not in pids
    assert load_index([folder], host).reused == 13  # what the workers read was cached


@pytest.mark.parametrize("enabled", [True, False])
def test_files_are_read_with_automatic_collection_off_and_their_cycles_collected_every_few(
    registry, host, monkeypatch, enabled
):
    """Automatic passes of the collector walked the whole heap (the schema, pydantic, the plugins) while files
    were read: they are off, the young generations are collected by hand every `COLLECT_EVERY` files (never
    when the caller switched collection off), and the caller's setting is back afterwards."""
    import gc

    seen: list[bool] = []
    passes: list[int] = []
    load = registry_index._load

    def recording_load(*args, **kwargs):
        seen.append(gc.isenabled())
        return load(*args, **kwargs)

    collect = gc.collect
    monkeypatch.setattr(registry_index, "_load", recording_load)
    monkeypatch.setattr(registry_index, "COLLECT_EVERY", 2)
    monkeypatch.setattr(gc, "collect", lambda generation=2: passes.append(generation) or collect(generation))
    before = gc.isenabled()
    gc.enable() if enabled else gc.disable()
    try:
        index = load_index([registry], host)
        after = gc.isenabled()
    finally:
        gc.enable() if before else gc.disable()
    assert seen == [False] * 4 and index.loaded == 4
    assert passes == ([1, 1] if enabled else [])  # four files, a pass after every two
    assert after is enabled


def test_a_worker_that_dies_or_workers_that_cannot_start_leave_the_rest_to_this_process(tmp_path, host, monkeypatch):
    folder = tmp_path / "zoo"
    folder.mkdir()
    for n in range(1, 9):
        (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    expected = {model_id: IndexRow.of(entry) for model_id, entry in load_registry([folder], host).entries.items()}
    monkeypatch.setattr(registry_index, "PARALLEL_MIN", 2)
    monkeypatch.setattr(registry_index.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    parent, real = os.getpid(), registry_index._load

    def killed(key, *args):
        if os.getpid() != parent and key.endswith("gpt-5.yaml"):
            os._exit(9)  # as the kernel's out-of-memory killer would end it
        return real(key, *args)

    monkeypatch.setattr(registry_index, "_load", killed)
    index = load_index([folder], host, use_cache=False)
    assert (index.rows, index.loaded) == (expected, 8)

    tried = []

    def no_semaphores(*args, **kwargs):
        tried.append(args)
        raise OSError(38, "Function not implemented")  # a container without /dev/shm

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_semaphores)
    assert load_index([folder], host, use_cache=False).rows == expected
    assert len(tried) == 1


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def _index_with(clock: _Clock, stream: _Stream, steps: list[float]) -> str:
    meter = registry_index.Progress(len(steps), stream, clock)
    for step in steps:
        clock.now += step
        meter.advance()
    meter.close()
    return stream.getvalue()


def test_a_quick_index_says_nothing():
    for terminal in (True, False):
        assert _index_with(_Clock(), _Stream(terminal), [0.1, 0.1, 0.1]) == ""


def test_a_slow_index_piped_gets_plain_lines_every_ten_seconds():
    text = _index_with(_Clock(), _Stream(False), [1.0] * 25)
    assert text == (
        "archzoo: indexing the registry: 3 of 25 entries read (12%), 3 s so far\n"
        "archzoo: indexing the registry: 13 of 25 entries read (52%), 13 s so far\n"
        "archzoo: indexing the registry: 23 of 25 entries read (92%), 23 s so far\n"
        "archzoo: indexed 25 entries in 25 s; the next listing reads them from the cache\n"
    )


def test_a_slow_index_on_a_terminal_redraws_one_line_and_erases_it():
    text = _index_with(_Clock(), _Stream(True), [0.3, 0.3, 0.3, 0.05, 0.3])
    lines = text.split("\r")
    assert lines == [
        "",
        "archzoo: indexing the registry: 2 of 5 entries read (40%)",
        "archzoo: indexing the registry: 3 of 5 entries read (60%)",
        "archzoo: indexing the registry: 5 of 5 entries read (100%)",
        " " * len("archzoo: indexing the registry: 5 of 5 entries read (100%)"),
        "",
    ]
    assert "\n" not in text


def test_listing_writes_nothing_to_a_pipe_when_quick(registry, host):
    stream = _Stream(False)
    load_index([registry], host, progress=stream)
    assert stream.getvalue() == ""


def test_a_warm_listing_imports_no_entry_schema(registry, tmp_path):
    """`archzoo list` from the cache needs no pydantic model of the registry: the module is never imported."""
    code = (
        "import sys\n"
        "from archzoo.registry_index import load_index\n"
        f"index = load_index([{str(registry)!r}])\n"
        "print(index.loaded, index.reused, 'archzoo.registry' in sys.modules)\n"
        "print(sorted(m for m in sys.modules if m.startswith('archzoo_')))\n"
    )
    env = dict(os.environ, ARCHZOO_CACHE_DIR=str(tmp_path / "own-cache"))
    # a first process reads every file (and imports the schema to validate them), a second reads the cache
    outputs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert outputs[0].startswith("4 0 True\n")
    assert outputs[1] == "0 4 False\n[]\n"  # and no plugin imported: the cache is keyed on their files' stats


def test_the_index_module_imports_neither_pydantic_nor_yaml():
    """registry_index alone, with the package's own __init__ left out: pydantic and PyYAML come with validation."""
    code = (
        "import sys, types\n"
        "package = types.ModuleType('archzoo')\n"
        f"package.__path__ = [{str(Path(registry_index.__file__).parent)!r}]\n"
        "sys.modules['archzoo'] = package\n"
        "import archzoo.registry_index\n"
        "print(sorted(m for m in ('pydantic', 'yaml', 'archzoo.registry', 'archzoo.host') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n", done.stderr
