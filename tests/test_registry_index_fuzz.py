"""Fuzzing the registry index's cache reader: whatever the cache file holds, listing never raises and never
gives a row other than the entry's own. Failures hypothesis found are kept as explicit examples."""

from __future__ import annotations

import marshal
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archzoo import registry_index
from archzoo.host import PluginHost
from archzoo.registry import load_registry
from archzoo.registry_index import IndexRow, load_index
from fast_subset import examples

ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n  n_layers: {n}\n"
# GPT-2 Medium, printed as 345M in Radford et al. 2019 (Table 2): a row with a published figure and a gap
MEDIUM = (
    "architecture: gpt\ntitle: GPT-2 Medium\nsummary: The 24-layer GPT-2.\nyear: 2019\n"
    "config: {d_model: 1024, n_layers: 24, n_heads: 16}\npublished:\n  params: 345M\n  source:\n"
    "    title: Language Models are Unsupervised Multitask Learners\n    authors: [Alec Radford]\n"
    "    year: 2019\n    venue: OpenAI\n    locator: Table 2\n"
)
FUZZ = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Zoo:
    """A registry of a row with a published figure, plain rows and a broken file, its truth and its cache."""

    def __init__(self, folder: Path, host: PluginHost):
        folder.mkdir()
        for n in (1, 2):
            (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
        (folder / "gpt2-medium.yaml").write_text(MEDIUM)
        (folder / "broken.yaml").write_text(ENTRY.format(n="many"))
        os.utime(folder / "gpt-1.yaml", ns=(10**18, 10**18))  # written in 2001: settled, trusted on its stamp
        self.folder, self.host = folder, host
        full = load_registry([folder], host)
        self.rows = {model_id: IndexRow.of(entry) for model_id, entry in full.entries.items()}
        self.problems = [str(p) for p in full.problems]
        load_index([folder], host)  # a genuine cache, the material the mutations start from
        path = registry_index._cache_file([folder], {})
        assert path is not None
        self.path: Path = path
        self.genuine = self.path.read_bytes()
        self.header = registry_index._header(registry_index._fingerprint(host))
        assert self.genuine.startswith(self.header)
        self.items = marshal.loads(self.genuine[len(self.header) + 9 :])

    def write(self, data: bytes) -> None:
        self.path.write_bytes(data)
        self.path.chmod(0o600)

    def with_checksum(self, payload: bytes) -> bytes:
        return self.header + b"%08x\n" % zlib.crc32(payload) + payload

    def check(self) -> None:
        """Listing gives the truth, whatever the cache held, and leaves a cache that gives it again."""
        for _ in range(2):
            index = load_index([self.folder], self.host)
            assert index.rows == self.rows
            assert [str(p) for p in index.problems] == self.problems


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Iterator[Zoo]:
    cache = tmp_path_factory.mktemp("cache")
    previous = os.environ.get("ARCHZOO_CACHE_DIR")
    os.environ["ARCHZOO_CACHE_DIR"] = str(cache)
    try:
        yield Zoo(tmp_path_factory.mktemp("fuzz") / "zoo", PluginHost().load())
    finally:
        if previous is None:
            os.environ.pop("ARCHZOO_CACHE_DIR", None)
        else:
            os.environ["ARCHZOO_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def same_cache(zoo, monkeypatch):
    """Each test's own ARCHZOO_CACHE_DIR (conftest sets one) points at the zoo's cache."""
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(zoo.path.parent))


# Values marshal can write: what a cache file could decode to, nested.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.binary(max_size=12),
)
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.tuples(inner, inner),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=5), inner, max_size=3),
        st.frozensets(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    ),
    max_leaves=12,
)


@FUZZ
@given(data=st.binary(max_size=400))
@example(data=b"")
@example(data=marshal.dumps({}))
@example(data=marshal.dumps(compile("1", "<cache>", "eval")))
@example(data=b"\xff" * 16)
def test_any_payload_with_a_valid_checksum(zoo, data):
    zoo.write(zoo.with_checksum(data))
    zoo.check()


@FUZZ
@given(cut=st.integers(min_value=0, max_value=10**6), flip=st.integers(min_value=0, max_value=10**6))
@example(cut=0, flip=0)
def test_a_damaged_genuine_cache(zoo, cut, flip):
    data = bytearray(zoo.genuine[: cut % (len(zoo.genuine) + 1)])
    if data:
        data[flip % len(data)] ^= 0x20
    zoo.write(bytes(data))
    zoo.check()


def _different(old, new) -> bool:
    """Whether ``new`` differs from ``old`` in type or shape (a value of the same type may be a forgery the
    reader cannot see: the cache's owner is trusted for those, see `test_a_cache_others_may_write_is_not_trusted`)."""
    if type(old) is not type(new):
        return True
    if isinstance(old, tuple):
        return len(old) != len(new) or any(_different(a, b) for a, b in zip(old, new, strict=True))
    return False


@FUZZ
@given(key=st.integers(min_value=0), field=st.integers(min_value=0, max_value=6), value=values)
@example(key=0, field=4, value=(None,) * 13)  # a row of the right length, every value None
@example(key=0, field=0, value=(1, 2, 3, 4.0))  # a float in the stamp
@example(key=0, field=2, value=1)  # an int where a bool belongs
@example(key=0, field=5, value=((1, "key", b"message"),))  # bytes in a problem
@example(key=0, field=5, value=())  # the broken file's problems gone: no row and no problem
@example(key=1, field=5, value=((1, "key", "message"),))  # a problem beside a good file's row
def test_an_item_field_of_another_type(zoo, key, field, value):
    keys = sorted(zoo.items)
    name = keys[key % len(keys)]
    item = list(zoo.items[name])
    if not _different(item[field], value):
        return
    item[field] = value
    zoo.write(zoo.with_checksum(marshal.dumps({**zoo.items, name: tuple(item)})))
    zoo.check()


@FUZZ
@given(key=st.integers(min_value=0), field=st.integers(min_value=0, max_value=12), value=values)
@example(key=0, field=4, value=True)  # a year that is a boolean
@example(key=0, field=6, value="124M")  # a count that is text
@example(key=0, field=5, value=("ok", 7))  # a tag that is a number
@example(key=0, field=5, value=("",))  # other tags, of the same type: the owner is trusted for those
@example(key=0, field=10, value=float("nan"))  # a gap that is not a number
def test_a_row_field_of_another_type(zoo, key, field, value):
    names = sorted(name for name, item in zoo.items.items() if item[4] is not None)
    name = names[key % len(names)]
    item = list(zoo.items[name])
    row = list(item[4])
    if not _different(row[field], value) and not (field == 10 and value != value):  # NaN: the same type
        return
    if field == 5 and isinstance(value, tuple) and all(type(tag) is str for tag in value):
        return  # tags are any number of texts: other tags are a forgery of the same type, as above
    row[field] = value
    item[4] = tuple(row)
    zoo.write(zoo.with_checksum(marshal.dumps({**zoo.items, name: tuple(item)})))
    zoo.check()


@FUZZ
@given(value=values)
@example(value={})
@example(value=[])
def test_a_payload_of_any_structure(zoo, value):
    zoo.write(zoo.with_checksum(marshal.dumps(value)))
    zoo.check()


@FUZZ
@given(
    model=st.sampled_from(["gpt-1", "gpt-2", "gpt2-medium"]), other=st.sampled_from(["gpt-1", "gpt-2", "gpt2-medium"])
)
@example(model="gpt-1", other="gpt-2")  # found by hypothesis before rows were checked against their file
def test_a_row_moved_to_another_file(zoo, model, other):
    """Right types, wrong file: another entry's row (its id, its path, or both) under this file's key."""
    if model == other:
        return
    key = str(zoo.folder / f"{model}.yaml")
    theirs = zoo.items[str(zoo.folder / f"{other}.yaml")][4]
    for row in (theirs, (zoo.items[key][4][0], *theirs[1:]), (theirs[0], key, *theirs[2:])):
        item = (*zoo.items[key][:4], row, *zoo.items[key][5:])
        zoo.write(zoo.with_checksum(marshal.dumps({**zoo.items, key: item})))
        zoo.check()
