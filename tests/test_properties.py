"""Properties that hold for any input: every configuration of every loaded architecture, every sequence
length, every text in a registry entry and every byte-level corruption of one.

Any value either counts (positive integers; each block of the tree adds up to its parent, a repeat block
multiplies its one copy unless its weights are shared, a tied block holds no weight matrix; FLOPs never
shrink as N grows; the JSON report round-trips), or ends in an error that names where the value came from,
on one line per problem, with exit code 1 and no traceback.

The architectures, their keys, types, defaults and constraints come from the plugin host, never from a
list in this file. Each test is one case of the hostile-input corpus (marker ``hostile``), run once per
architecture or per registry field.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import archzoo
from archzoo.architecture import MAX_SIZE, json_number
from archzoo.cli import main
from archzoo.errors import ConfigError
from archzoo.host import PluginHost
from archzoo.report import SCHEMA
from strategies import YAML_TEXT, Raw, config_overrides, hostile_value, set_arguments, yaml_double_quoted

# hypothesis over every architecture: 20 s of CPU even for one case each, so the whole module is left to `make test`
pytestmark = [pytest.mark.hostile, pytest.mark.slow]

HOST = PluginHost().load()
ARCHITECTURES = list(HOST.architectures)

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
REGISTRY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

ERROR = "archzoo: error: "


# ---- checks shared by the properties ---------------------------------------------------------------


def check_block_tree(block: dict[str, Any], parent_path: str = "") -> None:
    """Every block of a report's tree: non-negative integer counts, a path that extends its parent's, and
    counts that follow from its children (the rule of `archzoo.blocks`, multiplied out by its one walk
    `Block.visits`: ``params`` and ``approx`` are for all stored copies of a block, ``flops`` for all its
    executed copies, so a block with children is their sum; ``params`` is ``stored`` times one copy's
    ``params_each``; a repeat runs its one child ``repeat`` times from one set of weights when ``shared``,
    from ``copies`` sets for experts, else from ``repeat`` sets; a tied block reuses another block's weight
    matrix, so its leading-order count is 0)."""
    where = block.get("path")
    for key in ("params", "params_each", "approx", "flops", "stored", "executed"):
        assert type(block[key]) is int and block[key] >= 0, f"{where}: {key} = {block[key]!r}"
    assert block["approx"] <= block["params"], f"{where}: leading order {block['approx']} > exact {block['params']}"
    assert block["params"] == block["stored"] * block["params_each"], f"{where}: params of all copies"
    assert block["path"] == (f"{parent_path}.{block['name']}" if parent_path else block["name"])
    children = block["children"]
    if "tied_to" in block:
        assert block["approx"] == 0, f"{where}: tied to {block['tied_to']} but holds a weight matrix"
    if "repeat" in block:
        assert type(block["repeat"]) is int and block["repeat"] >= 0 and type(block["shared"]) is bool
        assert len(children) == 1, f"{where}: a repeat block holds one copy, got {len(children)} children"
        (copy,) = children
        sets = 1 if block["shared"] else block.get("copies", block["repeat"])
        assert copy["stored"] == block["stored"] * sets, f"{where}: stored copies"
        assert copy["executed"] == block["executed"] * block["repeat"], f"{where}: executed copies"
    else:
        for child in children:
            assert (child["stored"], child["executed"]) == (block["stored"], block["executed"]), f"{where}: copies"
    if children:
        for key in ("params", "approx", "flops"):
            assert block[key] == sum(c[key] for c in children), f"{where}: {key} is not the sum of its children"
    for child in children:
        check_block_tree(child, block["path"])


def check_report(data: dict[str, Any], architecture: str) -> None:
    assert data["schema"] == SCHEMA
    assert data["architecture"] == architecture
    params, flops = data["params"], data["flops"]
    assert type(params["total"]) is int and params["total"] > 0
    assert params["total"] == data["blocks"]["params"] and params["approx"] == data["blocks"]["approx"]
    assert 0 <= params["embedding"] <= params["total"]
    assert params["embedding"] + params["non_embedding"] == params["total"]
    assert type(flops["seq_len"]) is int and flops["seq_len"] >= 1
    assert flops["forward"] == data["blocks"]["flops"]
    assert 0 <= flops["attention"] <= flops["forward"]
    assert flops["attention"] + flops["other"] == flops["forward"]
    check_block_tree(data["blocks"])
    assert json.loads(json.dumps(data)) == data


def strict_json(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON: the bare NaN and Infinity Python's json module writes are refused, as strict
    readers (a browser's JSON.parse, jq) refuse them."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is no JSON number")

    return json.loads(text, parse_constant=refuse)


def check_one_error(code: int, out: str, err: str, source: str) -> None:
    """Exit 1, nothing on stdout, and an error on stderr: one line, or one line per problem when each
    line names ``source``; never a traceback, never a crash of plugin code."""
    assert code == 1, f"exit {code}; stderr: {err!r}"
    assert out == "", f"stdout on error: {out!r}"
    assert "Traceback" not in err
    assert err.startswith(ERROR) and err.endswith("\n"), repr(err)
    lines = err[len(ERROR) :].rstrip("\n").split("\n")
    for line in lines:
        assert line.startswith(source), f"an error line that does not name {source!r}: {line!r} in {err!r}"
    assert " raised " not in err, f"plugin code crashed instead of refusing the value: {err!r}"


#: Every escape YAML 1.2 defines in a double-quoted value.
_YAML_ESCAPE = re.compile(r'\\(?:[0abt\tnvfre "/\\N_LP]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})')
_NAMED_ESCAPE = re.compile(
    r"the escape (\S+) in a double-quoted value (is half of a surrogate pair|is not a YAML escape)"
)


def check_escape_named(message: str) -> None:
    """An error about an escape names the escape that is wrong: half of a surrogate pair, or no YAML escape."""
    for escape, problem in _NAMED_ESCAPE.findall(message):
        if problem.startswith("is half"):
            assert re.fullmatch(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", escape), f"{escape} is no surrogate: {message!r}"
        else:
            assert not _YAML_ESCAPE.fullmatch(escape), f"{escape} is a YAML escape: {message!r}"


def run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- 1. any --set value counts or is refused by name ------------------------------------------------


class Drawn:
    """Stands in for ``st.data()`` in an explicit example: every draw returns ``value``."""

    def __init__(self, value: Any):
        self.value = value

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"Drawn({self.value!r})"


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@PROPERTY_SETTINGS
@given(data=st.data())
@example(data=Drawn({"a\nb": 1}))  # an unknown key holding a line break, echoed in the error
@example(data=Drawn({"x": Raw("\udce9")}))  # a byte that is not UTF-8 (Latin-1 'é') arrives as U+DCE9
@example(data=Drawn({"attn_softcap": float("nan")}))  # counted (no count depends on it), written "NaN" in JSON
@example(data=Drawn({"rotary_fraction": 1}))  # an integer for a float: refused, not counted as 1.0
def test_any_set_value_counts_or_is_refused_on_one_line(architecture: str, data, capsys):
    """Any ``--set`` values: the report counts, or one error line per problem, each naming ``--set``.
    A value that counts is counted as given: ``true`` is no layer count and ``12.0`` no width."""
    overrides = data.draw(config_overrides(HOST.architecture(architecture).config_model), label="overrides")
    code, out, err = run(capsys, "count", architecture, *set_arguments(overrides), "--json")
    if code != 0:
        check_one_error(code, out, err, "--set")
        return
    assert "Traceback" not in err
    data = strict_json(out)
    check_report(data, architecture)
    for key, value in overrides.items():  # a value that counts is the value given, never a converted one
        if key in data["config"] and value is not None and not isinstance(value, Raw):
            got = data["config"][key]
            # a NaN or infinite float is written as JSON's text for it ("NaN"), which has no number for it
            given = json_number(value)
            assert (type(got), got) == (type(given), given), f"{key}: gave {value!r}, counted {got!r}"


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@PROPERTY_SETTINGS
@given(index=st.integers(0, 63), value=hostile_value())
@example(index=0, value=Raw("\udce9"))  # a byte that is not UTF-8 (Latin-1 'é') arrives as U+DCE9
@example(index=0, value="\U0001f600")  # written as JSON writes it, a surrogate pair: "\ud83d\ude00"
@example(index=0, value=Raw("\x01"))  # a control character typed into the value
@example(index=0, value=Raw("2019-13-01"))  # a date YAML cannot construct
@example(index=0, value=Raw('"\\b\\ud800"'))  # a valid escape before a lone surrogate
def test_a_refused_set_value_names_its_key(architecture: str, index: int, value: Any, capsys):
    """One ``--set`` of one of the model's keys (the key at ``index``, counting round): refused, the error
    names that key, speaks of a value rather than a file, and names the escape that is wrong."""
    keys = list(HOST.architecture(architecture).config_model.model_fields)
    key = keys[index % len(keys)]
    code, out, err = run(capsys, "count", architecture, *set_arguments({key: value}), "--json")
    if code == 0:
        check_report(strict_json(out), architecture)
        return
    check_one_error(code, out, err, "--set")
    assert key in err, f"the error does not name {key!r}: {err!r}"
    assert "the file" not in err, f"an error about a --set value that speaks of a file: {err!r}"
    check_escape_named(err)


# ---- 2. FLOPs grow with N; any seq_len works or is a ConfigError ------------------------------------


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_flops_never_shrink_as_n_grows(architecture: str, data):
    """For a configuration that counts, total and attention FLOPs at a few N up to the longest the
    configuration takes (its positions, or archzoo's size limit) never fall as N grows."""
    arch = HOST.architecture(architecture)
    config = data.draw(config_overrides(arch.config_model, hostile=False), label="config")
    try:
        report = archzoo.count(architecture, **config)
    except ConfigError as exc:  # a sensible-looking combination can still be wrong (heads that do not divide)
        assert all(line.startswith("config: ") for line in str(exc).split("\n")), str(exc)
        return
    longest = arch.max_seq_len(report.config) if arch.max_seq_len is not None else MAX_SIZE
    lengths = sorted(data.draw(st.lists(st.integers(1, longest), min_size=2, max_size=6), label="N"))
    figures = [report.flops_at(n) for n in lengths]
    for n, (total, attention) in zip(lengths, figures, strict=True):
        assert type(total) is int and type(attention) is int and 0 <= attention <= total, (n, total, attention)
    for (n1, (total1, attention1)), (n2, (total2, attention2)) in pairwise(zip(lengths, figures, strict=True)):
        assert total1 <= total2, f"FLOPs fell from {total1:,} at N={n1} to {total2:,} at N={n2}"
        assert attention1 <= attention2, (
            f"attention FLOPs fell from {attention1:,} at N={n1} to {attention2:,} at N={n2}"
        )


#: The parameters of `archzoo.count` itself, which a configuration key cannot take.
COUNT_PARAMETERS = ("architecture", "seq_len")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@PROPERTY_SETTINGS
@given(data=st.data())
@example(data=Drawn({"a\nb": 1}))  # an unknown key holding a line break, echoed in the error
@example(data=Drawn({"\udce9": 2**31}))  # a size over the limit under a key that cannot be encoded
def test_any_python_config_counts_or_is_a_config_error(architecture: str, data):
    """`archzoo.count` runs the same checks as the command line: any keyword values count, or raise a
    `ConfigError` of one line per problem, each naming the source ``config``."""
    overrides = data.draw(
        config_overrides(HOST.architecture(architecture).config_model).map(
            lambda values: {k: v for k, v in values.items() if k not in COUNT_PARAMETERS}
        ),
        label="config",
    )
    try:
        report = archzoo.count(architecture, **overrides)
    except ConfigError as exc:
        for line in str(exc).split("\n"):
            assert line.startswith("config: "), f"a problem line that does not name 'config': {line!r} in {exc}"
        return
    check_report(report.to_dict(), architecture)


SEQ_LENS = st.one_of(
    st.integers(),
    st.integers(-4, 4200),
    st.sampled_from([0, -1, 1, 2, 196, 197, 512, 1024, MAX_SIZE, MAX_SIZE + 1, 10**25, 10**80, -(10**80)]),
    st.sampled_from([True, False, "8", "512", 8.0, 512.0, float("nan"), float("inf"), [8], (8,), b"8", 8j]),
)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@PROPERTY_SETTINGS
@given(n=SEQ_LENS)
def test_any_seq_len_counts_or_is_a_config_error(architecture: str, n: Any):
    """`archzoo.count(seq_len=n)`, n of any type or size: a report at exactly n, or a one-line ConfigError."""
    try:
        report = archzoo.count(architecture, seq_len=n)
    except ConfigError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith("seq_len"), message
        return
    assert type(n) is int and 1 <= n <= MAX_SIZE, f"seq_len {n!r} was accepted"
    assert report.seq_len == n
    assert report.flops == report.flops_at(n)[0] and report.attention_flops == report.flops_at(n)[1]


# ---- 3. registry text: any title, summary, tag or source field, any corruption of the file ----------

VALID_ENTRY = Path(__file__).parent.parent / "registry" / "bert" / "bert-base-uncased.yaml"
ENTRY_NAME = VALID_ENTRY.name
ENTRY_ID = VALID_ENTRY.stem
BASE_TEXT = VALID_ENTRY.read_text(encoding="utf-8")


def _value_spans(text: str) -> dict[tuple, tuple[int, int, int, bool]]:
    """``key path -> (start, end, line, is a scalar)`` of every value in the entry, from YAML's own marks."""
    spans: dict[tuple, tuple[int, int, int, bool]] = {}

    def walk(node: yaml.Node, key: tuple) -> None:
        spans[key] = (
            node.start_mark.index,
            node.end_mark.index,
            node.start_mark.line + 1,
            isinstance(node, yaml.ScalarNode),
        )
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(v, key + (k.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, key + (i,))

    walk(yaml.compose(text, Loader=yaml.SafeLoader), ())
    return spans


SPANS = _value_spans(BASE_TEXT)


def _is_text_field(key: tuple) -> bool:
    """title, summary, tags and every published.source field but the year."""
    return key[:1] in (("title",), ("summary",), ("tags",)) or (
        key[:2] == ("published", "source") and len(key) > 2 and key[2] != "year"
    )


def _last_item(key: tuple) -> bool:
    """Of a list's items, only the last: one case per field, not per item."""
    return not isinstance(key[-1], int) or (key[:-1] + (key[-1] + 1,)) not in SPANS


#: Text fields holding one value (a list contributes its last item), and text fields holding a list.
TEXT_VALUES = [key for key, span in SPANS.items() if _is_text_field(key) and span[3] and _last_item(key)]
TEXT_LISTS = [key for key, span in SPANS.items() if _is_text_field(key) and not span[3]]


def dotted(key: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(key))


def splice(key: tuple, replacement: bytes) -> bytes:
    """The valid entry's bytes with the value at ``key`` replaced by ``replacement``."""
    start, end = SPANS[key][:2]
    return BASE_TEXT[:start].encode("utf-8") + replacement + BASE_TEXT[end:].encode("utf-8")


@contextmanager
def registry_with(data: bytes) -> Iterator[tuple[Path, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "registry"
        folder.mkdir()
        path = folder / ENTRY_NAME
        path.write_bytes(data)
        yield folder, path


_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")
_SUMMARY = re.compile(r"^(\d+) problem\(s\) in 1 of 1 file\(s\)$")


def _lines_in(data: bytes) -> int:
    """How many lines any reader could count in the file: every YAML 1.1 line break counts."""
    try:
        return len(_LINE_BREAKS.findall(data.decode("utf-8-sig"))) + 1
    except UnicodeDecodeError:
        return data.count(b"\n") + 1


def check_validate(capsys, folder: Path, path: Path, data: bytes) -> tuple[bool, list[tuple[int, str]]]:
    """``archzoo validate FOLDER`` exits 0 ("1 entry valid") or 1 with ``path:line: ...`` lines and the
    summary; returns whether the entry is valid and each problem's line and text after ``path:line: ``."""
    code, out, err = run(capsys, "validate", str(folder))
    assert "Traceback" not in err
    lines = err.split("\n")
    assert lines[-1] == "", f"stderr does not end in a line break: {err!r}"
    lines = lines[:-1]
    if code == 0:
        assert out == "1 entry valid\n"
    else:
        assert code == 1, f"exit {code}: {err!r}"
        assert out == ""
        summary = _SUMMARY.match(lines[-1]) if lines else None
        assert summary, f"no summary line: {err!r}"
        lines = lines[:-1]
    problems: list[tuple[int, str]] = []
    for line in lines:
        head = f"{path}:"
        assert line.startswith(head), f"a line that is not 'path:line: ...': {line!r} in {err!r}"
        number, sep, rest = line[len(head) :].partition(": ")
        assert sep and number.isdigit() and 1 <= int(number) <= _lines_in(data), (
            f"line {number!r} is not a line of the file ({_lines_in(data)} lines): {line!r}"
        )
        if not rest.endswith(" (warning)"):
            problems.append((int(number), rest))
    if code == 0:
        assert problems == [], err
    else:
        assert int(summary.group(1)) == len(problems) > 0, err
    return code == 0, problems


def check_list(capsys, folder: Path, valid: bool) -> None:
    """``archzoo list --registry FOLDER --json`` agrees with validate: the entry is listed iff it is valid."""
    code, out, err = run(capsys, "list", "--registry", str(folder), "--json")
    assert "Traceback" not in err
    if code == 1:
        check_one_error(code, out, err, "")
        assert not valid
        return
    assert code == 0, f"exit {code}: {err!r}"
    rows = json.loads(out)
    assert [row["id"] for row in rows] == ([ENTRY_ID] if valid else [])
    assert all(line.startswith("archzoo: warning: ") for line in err.splitlines()), err


def value_at(data: Any, key: tuple) -> Any:
    for part in key:
        data = data[part]
    return data


@pytest.mark.parametrize("field", TEXT_VALUES, ids=dotted)
@REGISTRY_SETTINGS
@given(text=st.text())
@example(text="")
@example(text="\x85")
@example(text="\u2028")
@example(text="\U0001f600")
@example(text="\ufeff")
@example(text="1810.04805")
def test_quoted_text_in_a_field_reads_back_or_is_refused_at_its_line(field: tuple, text: str, capsys):
    """Any text, written as a correctly escaped double-quoted YAML value: the entry either loads with
    exactly that text, or every problem is on that field's line and names that field."""
    data = splice(field, yaml_double_quoted(text).encode("ascii"))
    with registry_with(data) as (folder, path):
        valid, problems = check_validate(capsys, folder, path, data)
        check_list(capsys, folder, valid)
        if valid:
            code, out, err = run(capsys, "show", ENTRY_ID, "--registry", str(folder), "--json")
            assert code == 0, err
            assert value_at(json.loads(out), field) == text
            return
    line = SPANS[field][2]
    for number, rest in problems:
        assert number == line and rest.startswith(dotted(field) + ": "), (
            f"{dotted(field)} (line {line}) reported as line {number}: {rest!r}"
        )


@pytest.mark.parametrize("field", TEXT_VALUES + TEXT_LISTS, ids=dotted)
@REGISTRY_SETTINGS
@given(value=st.one_of(st.text(), YAML_TEXT).map(lambda t: t.encode("utf-8")) | st.binary(max_size=40))
@example(value=b"\xff")
@example(value=b"\xed\xa0\x80")  # a UTF-8-encoded lone surrogate, which UTF-8 forbids
@example(value=b'"\\ud800"')
@example(value=b"\x00")
@example(value=b"\r")
@example(value=b"[")
@example(value=b"&a [*a]")
@example(value=b"!!python/object/apply:os.system [ls]")
@example(value=b'"\\b\\ud800"')  # a valid escape before a lone surrogate
@example(value=b'x\n"a\\nb": 1')  # a top-level key holding a line break, echoed in the problem
@example(value=b'\r"\\ud800')  # a CR is a line break to YAML
def test_raw_text_in_a_field_loads_or_is_reported_by_line(field: tuple, value: bytes, capsys):
    """Any text or bytes written into a field as they are, unquoted and unescaped."""
    data = splice(field, value)
    with registry_with(data) as (folder, path):
        valid, problems = check_validate(capsys, folder, path, data)
        check_list(capsys, folder, valid)
    for _, problem in problems:
        check_escape_named(problem)


MUTATIONS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "delete", "replace"]),
        st.integers(0, len(BASE_TEXT.encode("utf-8"))),
        st.binary(min_size=1, max_size=6) | YAML_TEXT.filter(bool).map(lambda t: t.encode("utf-8")),
    ),
    min_size=1,
    max_size=6,
)


def mutate(data: bytes, mutations: list[tuple[str, int, bytes]]) -> bytes:
    for op, at, chunk in mutations:
        at = min(at, len(data))
        if op == "insert":
            data = data[:at] + chunk + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + len(chunk) :]
        else:
            data = data[:at] + chunk + data[at + len(chunk) :]
    return data


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(mutations=MUTATIONS)
def test_byte_mutations_of_an_entry_load_or_are_reported_by_line(mutations, capsys):
    """Any few inserted, deleted or replaced bytes anywhere in a valid entry."""
    data = mutate(BASE_TEXT.encode("utf-8"), mutations)
    with registry_with(data) as (folder, path):
        valid, problems = check_validate(capsys, folder, path, data)
        check_list(capsys, folder, valid)
    for _, problem in problems:
        check_escape_named(problem)
