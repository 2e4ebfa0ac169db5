"""The hostile-input corpus of the registry's lookups, second round: what the environment names as the
registry and its cache, a cache file made to fool or exhaust the index, a container without a home, and ids
that cannot exist on Windows. Each case ends in one exact error line or in the right answer, never a
traceback, a wrong row or an unbounded read.

Every case is marked ``hostile``; ``benchmarks/hostile.py`` runs each in its own process and prints the
largest time and peak memory.
"""

from __future__ import annotations

import json
import marshal
import os
import tracemalloc
import zlib
from pathlib import Path

import pytest

from archzoo import registry_index
from archzoo.cli import main
from archzoo.errors import UnknownModelError
from archzoo.host import PluginHost
from archzoo.registry import find_model, load_registry

pytestmark = pytest.mark.hostile

REPO = Path(__file__).resolve().parents[1]
GPT = REPO / "registry" / "gpt"  # one shipped folder: what other folders hold does not matter here
ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n  n_layers: {n}\n"
# GPT-2 Medium, printed as 345M in Radford et al. 2019 (Table 2): a row with a published figure and a gap
MEDIUM = (
    "architecture: gpt\ntitle: GPT-2 Medium\nsummary: The 24-layer GPT-2.\nyear: 2019\n"
    "config: {d_model: 1024, n_layers: 24, n_heads: 16}\npublished:\n  params: 345M\n  source:\n"
    "    title: Language Models are Unsupervised Multitask Learners\n    authors: [Alec Radford]\n"
    "    year: 2019\n    venue: OpenAI\n    locator: Table 2\n"
)
FOLDERS = (
    "set ARCHZOO_REGISTRY to registry folders separated by ':' (check a single entry with `archzoo validate FILE`)"
)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- ARCHZOO_REGISTRY naming a file ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["show", "gpt2"], ["compare", "gpt2", "gpt2-large"], ["list"], ["validate"]],
    ids=["show", "compare", "list", "validate"],
)
@pytest.mark.parametrize("value", ["file", "file:folder"])
def test_a_file_as_archzoo_registry_is_refused_naming_it(command, value, monkeypatch, capsys):
    """It answered every lookup with that one entry: `show gpt2` printed gpt2-medium."""
    file = REPO / "registry" / "gpt" / "gpt2-medium.yaml"
    monkeypatch.setenv("ARCHZOO_REGISTRY", {"file": str(file), "file:folder": f"{file}:{REPO / 'registry'}"}[value])
    code, out, err = run(capsys, *command)
    assert (code, out, err) == (
        1,
        "",
        f"archzoo: error: ARCHZOO_REGISTRY: '{file}' is a file, not a folder; {FOLDERS}\n",
    )


def test_a_missing_folder_in_archzoo_registry_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARCHZOO_REGISTRY", f"{REPO / 'registry'}:{tmp_path / 'nowhere'}")
    assert run(capsys, "show", "gpt2") == (
        1,
        "",
        f"archzoo: error: ARCHZOO_REGISTRY: '{tmp_path / 'nowhere'}' no such folder (or it cannot be reached); "
        f"{FOLDERS}\n",
    )
    monkeypatch.setenv("ARCHZOO_REGISTRY", "::")
    assert run(capsys, "list") == (
        1,
        "",
        "archzoo: error: ARCHZOO_REGISTRY='::': names no folder; set it to registry folders separated by ':', "
        "or unset it\n",
    )


def _locked(monkeypatch, locked: Path) -> None:
    """Paths under ``locked`` cannot be looked at, as under a folder of another user's without search rights
    (the tests may run as root, whom permissions do not stop)."""
    real = os.stat

    def stat(path, *args, **kwargs):
        if str(path).startswith(str(locked) + os.sep):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)


def test_a_folder_that_cannot_be_reached_is_an_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    _locked(monkeypatch, locked)
    monkeypatch.setenv("ARCHZOO_REGISTRY", str(locked / "zoo"))
    assert run(capsys, "list") == (
        1,
        "",
        f"archzoo: error: ARCHZOO_REGISTRY: '{locked / 'zoo'}' no such folder (or it cannot be reached); {FOLDERS}\n",
    )
    # a cache folder whose path cannot be looked at is no error: the cache is used if it can be, else not
    monkeypatch.setenv("ARCHZOO_REGISTRY", str(GPT))
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "list", "--json", "gpt2")
    reachable = [row["id"] for row in json.loads(out)]
    assert (code, err) == (0, "") and {"gpt2", "gpt2-large", "gpt2-medium", "gpt2-xl"} <= set(reachable)
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(locked / "cache"))
    code, out, err = run(capsys, "list", "--json", "gpt2")
    assert (code, err, [row["id"] for row in json.loads(out)]) == (0, "", reachable)


def test_a_file_among_the_paths_answers_only_for_its_own_id(host):
    """Through the Python API a file is a registry of one entry, whose id is its name: never another's."""
    file = REPO / "registry" / "gpt" / "gpt2-medium.yaml"
    with pytest.raises(UnknownModelError, match=r"^unknown model 'gpt2'; did you mean 'gpt2-medium'"):
        find_model("gpt2", [file], host)
    # a file and the folder holding another file of the asked id: that one, and no false duplicate
    found = find_model("gpt2", [file, GPT], host)
    assert (found.id, found.path) == ("gpt2", GPT / "gpt2.yaml")
    assert find_model("gpt2-medium", [file, GPT], host).path == file
    assert load_registry([file, GPT], host).problems == []


# ---- the cache and its folder, named by the environment -----------------------------------------------


@pytest.fixture
def zoo(tmp_path) -> Path:
    folder = tmp_path / "zoo"
    folder.mkdir()
    for n in (1, 2, 3):
        (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (folder / "gpt2-medium.yaml").write_text(MEDIUM)
    return folder


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "ARCHZOO_CACHE_DIR",
            "relative/cache",
            "ARCHZOO_CACHE_DIR='relative/cache': not an absolute path; set ARCHZOO_CACHE_DIR to a folder's full "
            "path (e.g. /var/cache/archzoo), or unset it",
        ),
        (
            "XDG_CACHE_HOME",
            "relative",
            "XDG_CACHE_HOME='relative': not an absolute path; set XDG_CACHE_HOME to a folder's full path "
            "(e.g. /var/cache/archzoo), or unset it",
        ),
        (
            "ARCHZOO_CACHE_DIR",
            "{file}",
            "ARCHZOO_CACHE_DIR='{file}': is a file, not a folder; set ARCHZOO_CACHE_DIR to a folder, or unset it",
        ),
        (
            "XDG_CACHE_HOME",
            "{file}",
            "XDG_CACHE_HOME='{file}': is a file, not a folder; set XDG_CACHE_HOME to a folder, or unset it",
        ),
    ],
)
def test_a_bad_cache_variable_is_refused_naming_it(name, value, message, zoo, tmp_path, monkeypatch, capsys):
    file = tmp_path / "a-file"
    file.write_text("not a folder")
    monkeypatch.chdir(tmp_path)  # where a relative cache folder would have been made
    monkeypatch.delenv("ARCHZOO_CACHE_DIR", raising=False)
    monkeypatch.setenv(name, value.format(file=file))
    assert run(capsys, "list", "--json", "--registry", str(zoo)) == (
        1,
        "",
        f"archzoo: error: {message.format(file=file)}\n",
    )
    assert list(tmp_path.rglob("index-*")) == []  # no index cached under the working folder


def test_no_home_and_no_passwd_entry_lists_without_a_cache(zoo, tmp_path, monkeypatch, capsys):
    """A container's `env -i` under a user id without a passwd entry: Path.home() raised, `list` crashed."""
    import pwd

    expected = run(capsys, "list", "--json", "--registry", str(zoo))
    assert expected[0] == 0
    for name in ("HOME", "ARCHZOO_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)

    def no_entry(uid: int):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    assert registry_index.cache_dir() is None
    for _ in range(2):  # nothing cached, so the second listing reads every file again, and answers the same
        assert run(capsys, "list", "--json", "--registry", str(zoo)) == expected
    assert list(workdir.iterdir()) == []  # no cache left in the working folder ('~' taken literally)


# ---- a cache file made to exhaust or fool the index ----------------------------------------------------


def _cache(zoo: Path) -> Path:
    folder = registry_index.cache_dir()
    assert folder is not None
    (file,) = [f for f in folder.iterdir() if f.name == registry_index._cache_file([zoo], {}).name]  # type: ignore[union-attr]
    return file


def test_a_1_gb_junk_cache_is_not_read(zoo, capsys):
    """A junk file in the cache's place was read whole (1 GB) before its header was looked at."""
    expected = run(capsys, "list", "--json", "--registry", str(zoo))
    file = _cache(zoo)
    file.unlink()
    with open(file, "wb") as f:
        f.truncate(1 << 30)  # sparse: no disk, no time to write
    tracemalloc.start()
    try:
        got = run(capsys, "list", "--json", "--registry", str(zoo))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 64 << 20, f"{peak:,} bytes allocated"
    assert file.stat().st_size < 1 << 20  # rebuilt


def _forge(zoo: Path, change) -> None:
    """The cache with ``change`` applied to its items, rewritten with a valid header and checksum."""
    file = _cache(zoo)
    data = file.read_bytes()
    head_end = data.index(b"\n", data.index(b"\n") + 1) + 1
    items = marshal.loads(data[head_end + 9 :])
    payload = marshal.dumps(change({key: list(item) for key, item in items.items()}, str(zoo)))
    file.write_bytes(data[:head_end] + b"%08x\n" % zlib.crc32(payload) + payload)


def _row(items: dict, key: str, field: int, value) -> dict:
    row = list(items[key][4])
    row[field] = value
    items[key][4] = tuple(row)
    return items


def _tupled(items: dict) -> dict:
    return {key: tuple(item) for key, item in items.items()}


FORGERIES = {
    # wrong types: each would crash `list`, or print a wrong value as if it were a count
    "params as a string": lambda items, z: _row(items, f"{z}/gpt-1.yaml", 6, "124M"),
    "an id of another type": lambda items, z: _row(items, f"{z}/gpt-1.yaml", 0, 1),
    "year as a boolean": lambda items, z: _row(items, f"{z}/gpt-1.yaml", 4, True),
    "a tag that is a number": lambda items, z: _row(items, f"{z}/gpt-1.yaml", 5, ("ok", 7)),
    "gap as a string": lambda items, z: _row(items, f"{z}/gpt2-medium.yaml", 10, "2.85%"),
    "a float in the stamp": lambda items, z: (
        items[f"{z}/gpt-2.yaml"].__setitem__(0, (*items[f"{z}/gpt-2.yaml"][0][:3], 1.5)) or items
    ),
    "settled as a number": lambda items, z: items[f"{z}/gpt-2.yaml"].__setitem__(2, 1) or items,
    "a problem line as a string": lambda items, z: items[f"{z}/gpt-3.yaml"].__setitem__(5, (("1", "k", "m"),)) or items,
    # the right types, but a row that is not its file's
    "another file's row": lambda items, z: (
        _row(items, f"{z}/gpt-1.yaml", 6, items[f"{z}/gpt-3.yaml"][4][6]) and _row(items, f"{z}/gpt-1.yaml", 0, "gpt-3")
    ),
    "a row under another path": lambda items, z: _row(items, f"{z}/gpt-1.yaml", 1, f"{z}/gpt-2.yaml"),
    "a gap that is not the counts'": lambda items, z: _row(items, f"{z}/gpt2-medium.yaml", 10, 0.5),
    "a published value of zero": lambda items, z: _row(items, f"{z}/gpt2-medium.yaml", 9, 0),
    "a dict keyed by numbers": lambda items, z: {i: item for i, item in enumerate(items.values())},
    "a set": lambda items, z: set(items),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_cache_with_a_valid_checksum_is_rebuilt(forgery, zoo, capsys):
    expected = run(capsys, "list", "--json", "--registry", str(zoo))
    assert expected[0] == 0 and len(json.loads(expected[1])) == 4

    def change(items, z):
        forged = FORGERIES[forgery](items, z)
        return _tupled(forged) if isinstance(forged, dict) and all(type(k) is str for k in forged) else forged

    _forge(zoo, change)
    assert run(capsys, "list", "--json", "--registry", str(zoo)) == expected
    index = registry_index.load_index([zoo])
    assert index.reused == 4  # rebuilt by the listing above, and trusted again


def test_a_cache_others_may_write_is_not_trusted(zoo, capsys):
    """Another user who can write the cache could forge any row with valid types: such a file is never read."""
    run(capsys, "list", "--json", "--registry", str(zoo))
    file = _cache(zoo)
    file.chmod(0o666)
    assert registry_index.load_index([zoo]).reused == 0
    assert (_cache(zoo).stat().st_mode & 0o777) == 0o600  # rewritten as the user's own


# ---- ids that cannot exist on Windows ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("con.yaml", "id 'con' (the file name) starts with 'con', {reserved} to 'con-model.yaml'"),
        ("nul.yml", "id 'nul' (the file name) starts with 'nul', {reserved} to 'nul-model.yml'"),
        ("com1.v2.yaml", "id 'com1.v2' (the file name) starts with 'com1', {reserved} to 'com1-model.v2.yaml'"),
        ("lpt9.yaml", "id 'lpt9' (the file name) starts with 'lpt9', {reserved} to 'lpt9-model.yaml'"),
        ("aux.yaml", "id 'aux' (the file name) starts with 'aux', {reserved} to 'aux-model.yaml'"),
        (
            "PRN.yaml",
            "id 'PRN' (the file name) is not a safe slug: use lowercase letters and digits separated by single '-' "
            "or '.'; rename the file to 'prn-model.yaml'",
        ),
    ],
)
def test_a_windows_device_name_is_refused_as_an_id(name, message, tmp_path, capsys):
    folder = tmp_path / "registry"
    folder.mkdir()
    (folder / name).write_text(ENTRY.format(n=2))
    reserved = (
        "a device name Windows reserves (con, prn, aux, nul, com0-9 and lpt0-9, with any extension), so the file "
        "cannot exist on Windows; rename the file, e.g."
    )
    assert run(capsys, "validate", str(folder)) == (
        1,
        "",
        f"{folder / name}:1: {message.format(reserved=reserved)}\n1 problem(s) in 1 of 1 file(s)\n",
    )


def test_names_that_only_look_reserved_are_accepted(tmp_path, capsys):
    folder = tmp_path / "registry"
    folder.mkdir()
    for name in ("console", "com10", "nul-model", "lpt", "aux2x", "icon"):
        (folder / f"{name}.yaml").write_text(ENTRY.format(n=2))
    assert run(capsys, "validate", str(folder)) == (0, "6 entries valid\n", "")
