"""Hypothesis strategies for archzoo's property tests: configuration overrides read from each plugin's
pydantic config model, values written as ``--set`` reads them, registry text and bytes, and checkpoints
(safetensors headers and sharded indexes, well formed or not).

Nothing here names an architecture or a configuration key: every key, type, default and constraint is
read from the config model the plugin host loaded, so a new plugin is covered the moment it is installed.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from archzoo.architecture import MAX_SIZE
from archzoo.blocks import ACTIVATIONS

__all__ = [
    "ARGV_TEXT",
    "HOSTILE_VALUES",
    "SAFETENSORS_DTYPES",
    "TENSOR_NAMES",
    "YAML_TEXT",
    "FieldShape",
    "Raw",
    "config_overrides",
    "field_shapes",
    "hostile_value",
    "safetensors_header",
    "sensible_value",
    "set_arguments",
    "set_text",
    "sharded_index",
    "yaml_double_quoted",
]


class Raw(str):
    """Text handed to ``--set KEY=TEXT`` exactly as typed, for YAML (and archzoo) to make of it what they will."""

    def __repr__(self) -> str:
        return f"Raw({str.__repr__(self)})"


@dataclass(frozen=True)
class FieldShape:
    """What a config model says about one key: the types it takes, its bounds, choices and default."""

    name: str
    kinds: frozenset[str]  # "int", "bool", "str", "literal", "other"
    nullable: bool
    minimum: int | None  # the smallest valid integer, from Gt / Ge constraints
    maximum: int | None
    choices: tuple[Any, ...]  # Literal[...] values
    default: Any  # PydanticUndefined for a required key
    divides: str | None  # "must divide KEY" in the description: this key's value must divide KEY's


_DIVIDES = re.compile(r"must divide (\w+)")


def _shape(annotation: Any, metadata: list[Any], into: dict[str, Any]) -> None:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        _shape(args[0], metadata + list(args[1:]), into)
        return
    if origin is typing.Union or origin is types.UnionType:
        for arg in args:
            if arg is type(None):
                into["nullable"] = True
            else:
                _shape(arg, metadata, into)
        return
    if origin is typing.Literal:
        into["kinds"].add("literal")
        into["choices"] += tuple(args)
        return
    if annotation is type(None):
        into["nullable"] = True
        return
    kind = {bool: "bool", int: "int", str: "str"}.get(annotation, "other")
    into["kinds"].add(kind)
    if kind == "int":
        for constraint in metadata:
            if isinstance(constraint, annotated_types.Gt):
                into["minimum"] = int(constraint.gt) + 1
            elif isinstance(constraint, annotated_types.Ge):
                into["minimum"] = int(constraint.ge)
            elif isinstance(constraint, annotated_types.Lt):
                into["maximum"] = int(constraint.lt) - 1
            elif isinstance(constraint, annotated_types.Le):
                into["maximum"] = int(constraint.le)


def field_shapes(model: type[BaseModel]) -> dict[str, FieldShape]:
    """Every key of a config model, read from its pydantic fields (annotation, default, constraints)."""
    shapes = {}
    for name, info in model.model_fields.items():
        found: dict[str, Any] = {"kinds": set(), "nullable": False, "minimum": None, "maximum": None, "choices": ()}
        _shape(info.annotation, list(info.metadata), found)
        divides = _DIVIDES.search(info.description or "")
        shapes[name] = FieldShape(
            name=name,
            kinds=frozenset(found["kinds"]),
            nullable=found["nullable"],
            minimum=found["minimum"],
            maximum=found["maximum"],
            choices=found["choices"],
            default=info.default,
            divides=divides.group(1) if divides and divides.group(1) in model.model_fields else None,
        )
    return shapes


#: Sizes a model could have: small, highly composite, so that one often divides another.
NICE_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096)


def sensible_value(shape: FieldShape) -> st.SearchStrategy[Any]:
    """Values a user would mean: sizes within the key's bounds, its literal choices, booleans, null where allowed."""
    options: list[st.SearchStrategy[Any]] = []
    if "int" in shape.kinds:
        low = 1 if shape.minimum is None else shape.minimum
        high = min(MAX_SIZE if shape.maximum is None else shape.maximum, MAX_SIZE)
        nice = [v for v in (0,) + NICE_SIZES if low <= v <= high]
        if nice:
            options.append(st.sampled_from(nice))
        options.append(st.integers(low, min(high, 4096)) if low <= min(high, 4096) else st.just(low))
    if "bool" in shape.kinds:
        options.append(st.booleans())
    if "literal" in shape.kinds:
        options.append(st.sampled_from(shape.choices))
    if "str" in shape.kinds:
        # Text keys name something from a fixed vocabulary; the activations are the one archzoo's blocks define.
        known = ([shape.default] if isinstance(shape.default, str) else []) + list(ACTIVATIONS)
        options.append(st.sampled_from(known))
    if shape.nullable:
        options.append(st.none())
    if shape.default is not PydanticUndefined:
        # a tuple default is given as the list YAML and --set write (and JSON prints)
        options.append(st.just(list(shape.default) if isinstance(shape.default, tuple) else shape.default))
    return st.one_of(options)


#: Values chosen to break a reader: zero, negatives, the size limit and one past it, numbers far past it,
#: booleans and floats where integers belong, text that YAML 1.1 would have read as a number or a boolean,
#: empty text, lists and mappings.
HOSTILE_VALUES: tuple[Any, ...] = (
    0,
    -1,
    -768,
    MAX_SIZE,
    MAX_SIZE + 1,
    2**32,
    10**25,
    10**80,
    True,
    False,
    0.0,
    -0.0,
    0.5,
    1.5,
    12.0,
    1e25,
    float("inf"),
    float("-inf"),
    float("nan"),
    "12",
    "12:30",
    "yes",
    "no",
    "on",
    "",
    " ",
    "null",
    "0x10",
    "gelu ",
    "GELU",
    [],
    [1, 2],
    ["gelu"],
    {},
    {"a": 1},
    None,
    Raw("12:30"),
    Raw("1:00"),
    Raw("yes"),
    Raw("off"),
    Raw("0x10"),
    Raw("0o17"),
    Raw("017"),
    Raw("1_000"),
    Raw("1e3"),
    Raw("+12"),
    Raw("~"),
    Raw("[1, 2"),
    Raw("{a: 1"),
    Raw("'12'"),
    Raw('"12"'),
    Raw("12 # comment"),
    Raw("&a [*a]"),
    Raw("!!python/object/apply:os.system [ls]"),
    Raw("!!int 12"),
    Raw("2019-13-01"),
    Raw("- 1"),
    Raw("a: b"),
    Raw("|\n  12"),
    Raw("12\n---\n13"),
    Raw("\t12"),
    Raw('"\\ud800"'),
    Raw('"\\x85"'),
    Raw("[" * 40 + "]" * 40),
    Raw("9" * 31),
    Raw("-" + "9" * 31),
)


#: Text as a command line can deliver it: any bytes, decoded the way Python decodes ``sys.argv`` (bytes that
#: are not UTF-8, such as Latin-1 typed in a Latin-1 terminal, become lone surrogates U+DC80 to U+DCFF).
ARGV_TEXT = st.binary(max_size=10).map(lambda b: Raw(b.decode("utf-8", "surrogateescape")))


def hostile_value() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(HOSTILE_VALUES),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.builds(Raw, st.text(max_size=12)),
        ARGV_TEXT,
        st.lists(st.integers(-3, 3), max_size=3),
    )


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


#: Names that are no key of any model: plain identifiers, and text no one would type as a key.
UNKNOWN_KEYS = st.one_of(
    st.from_regex(r"\A[a-z][a-z0-9_]{0,12}\Z"),
    st.text(min_size=1, max_size=8),
    ARGV_TEXT.filter(bool),
)


@st.composite
def config_overrides(draw: st.DrawFn, model: type[BaseModel], *, hostile: bool = True) -> dict[str, Any]:
    """A dict of configuration overrides for ``model``: some of its keys with sensible values and, when
    ``hostile``, up to two of them with hostile values and up to one key the model does not have."""
    shapes = field_shapes(model)
    keys = draw(st.lists(st.sampled_from(list(shapes)), unique=True, max_size=len(shapes)), label="keys")
    values = {name: draw(sensible_value(shapes[name]), label=name) for name in keys}
    for name, shape in shapes.items():  # "n_heads ... must divide d_model": often give it a divisor
        if not shape.divides or (name in values and type(values[name]) is not int):
            continue
        target = values.get(shape.divides, shapes[shape.divides].default)
        if type(target) is int and 0 < target <= 10**6 and draw(st.booleans(), label=f"{name} divides"):
            values[name] = draw(st.sampled_from(_divisors(target)), label=name)
    if hostile and draw(st.booleans(), label="hostile"):
        spoiled = draw(st.lists(st.sampled_from(list(shapes)), unique=True, max_size=2), label="hostile keys")
        for name in spoiled:
            values[name] = draw(hostile_value(), label=name)
        unknown = draw(
            st.dictionaries(UNKNOWN_KEYS.filter(lambda k: k not in shapes), hostile_value(), max_size=1),
            label="unknown key",
        )
        values.update(unknown)
    return values


def set_text(value: Any) -> str:
    """``value`` as ``--set`` reads it: a YAML 1.2 flow scalar or collection meaning exactly ``value``.

    Strings are JSON strings (a YAML double-quoted scalar); `Raw` text is passed as typed.
    """
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(set_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {set_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no --set text for {type(value).__name__}")


def set_arguments(overrides: dict[str, Any]) -> list[str]:
    """``["--set", "KEY=TEXT", ...]`` for every override."""
    args: list[str] = []
    for key, value in overrides.items():
        args += ["--set", f"{key}={set_text(value)}"]
    return args


#: Text rich in what YAML gives meaning to: indicators, quotes, escapes, comments, anchors, line breaks.
YAML_TEXT = st.lists(
    st.one_of(
        st.sampled_from(list(":-[]{}\"'#&*!|>%@`,?\\ \t\n\r") + ["\\u", "\\x", "\\U", "\\ud800", "\\b"]),
        st.characters(codec="utf-8"),
    ),
    max_size=30,
).map("".join)


def yaml_double_quoted(text: str) -> str:
    """A YAML double-quoted scalar that means exactly ``text``: printable ASCII as is, every other
    character as an escape (``\\uXXXX``, or ``\\UXXXXXXXX`` beyond the BMP, never a surrogate pair)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


# ---- checkpoints: safetensors headers and sharded indexes ------------------------------------------------

#: safetensors' dtype names, and names it does not know
SAFETENSORS_DTYPES = ("F32", "F16", "BF16", "I32", "I8", "U8", "BOOL", "F64", "I64", "F8_E4M3", "F4")
TENSOR_NAMES = st.one_of(
    st.from_regex(r"[a-z_]{1,6}(\.[a-z0-9_]{1,6}){0,4}", fullmatch=True),
    st.text(min_size=1, max_size=12),  # anything: control characters, escapes, surrogate-free unicode
    st.sampled_from(["", ".", "..", "a..b", "\x1b[31mred", "x\ny", "__metadata__", "qweight", "w.qweight"]),
)


@st.composite
def safetensors_header(draw: st.DrawFn) -> tuple[dict[str, Any], bytes]:
    """A safetensors header as a dict (name -> dtype, shape, offsets; ``__metadata__`` maybe), and the file
    bytes it makes: the header's length as 8 little-endian bytes, the JSON, then the data. Mostly what the
    format allows (offsets laid end to end, sizes from the dtype), sometimes not: an unknown dtype, offsets
    that overlap or leave gaps or reach past the data, a negative or huge dimension, a non-list shape."""
    names = draw(st.lists(TENSOR_NAMES, max_size=6, unique=True))
    header: dict[str, Any] = {}
    offset = 0
    for name in names:
        dtype = draw(st.sampled_from((*SAFETENSORS_DTYPES, "X9", "f32")))
        shape = draw(st.lists(st.integers(0, 5), max_size=3))
        size = math.prod(shape) * {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2}.get(dtype, 1)
        if dtype == "F4":
            size = (math.prod(shape) + 1) // 2
        entry: dict[str, Any] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        mutation = draw(st.sampled_from(["none"] * 6 + ["offsets", "shape", "huge", "missing", "extra"]))
        if mutation == "offsets":
            entry["data_offsets"] = [draw(st.integers(-2, 40)), draw(st.integers(-2, 40))]
        elif mutation == "shape":
            entry["shape"] = draw(st.sampled_from([[-1], "3", [1.5], None, [[2]]]))
        elif mutation == "huge":
            entry["shape"] = [2**62, 2**62]
        elif mutation == "missing":
            del entry[draw(st.sampled_from(["dtype", "shape", "data_offsets"]))]
        elif mutation == "extra":
            entry["unexpected"] = 1
        header[name] = entry
        offset += size
    if draw(st.booleans()):
        header["__metadata__"] = draw(
            st.sampled_from([{"format": "pt"}, {"a": 1}, "text", {"\x1b": "\x07"}, {"k": "v" * 50}])
        )
    text = json.dumps(header).encode("utf-8")
    pad = draw(st.integers(0, 7))
    text += b" " * pad  # safetensors pads the header with spaces to a multiple of 8
    length = len(text) + draw(st.sampled_from([0] * 8 + [-1, 1, 10**6, -len(text)]))
    data = b"\0" * (offset + draw(st.sampled_from([0] * 6 + [-1, 1, 8])))
    return header, max(length, 0).to_bytes(8, "little") + text + data


@st.composite
def sharded_index(draw: st.DrawFn) -> tuple[Any, dict[str, dict[str, Any]]]:
    """A sharded checkpoint's index (JSON value) and the shards to write beside it (file name -> tensors
    of one shard, each name -> (dtype, shape)): the weight_map agreeing with the shards, or not (a tensor
    listed in the wrong shard or in none, a shard missing, a path that leaves the folder), or no index at all
    (a list, a number, a weight_map of numbers)."""
    shards = draw(st.lists(st.from_regex(r"model-0000[1-4]\.safetensors", fullmatch=True), unique=True, max_size=3))
    files: dict[str, dict[str, Any]] = {}
    weight_map: dict[str, Any] = {}
    for shard in shards:
        names = draw(
            st.lists(
                TENSOR_NAMES.filter(lambda n: n not in weight_map and n != "__metadata__"), max_size=3, unique=True
            )
        )
        files[shard] = {
            name: (
                draw(st.sampled_from(("F32", "F16", "BF16", "I32", "I8", "U8"))),
                draw(st.lists(st.integers(0, 4), max_size=2)),
            )
            for name in names
        }
        for name in names:
            weight_map[name] = shard
    mutation = draw(st.sampled_from(["none"] * 5 + ["moved", "dropped", "outside", "absent", "numbers", "not-a-map"]))
    if mutation == "moved" and weight_map:
        weight_map[next(iter(weight_map))] = draw(st.sampled_from(["model-00009.safetensors", *shards]))
    elif mutation == "dropped" and weight_map:
        del weight_map[next(iter(weight_map))]
    elif mutation == "outside":
        weight_map["x"] = draw(st.sampled_from(["../model.safetensors", "/etc/passwd", "sub/x.safetensors", "a\\b"]))
    elif mutation == "absent" and files:
        del files[next(iter(files))]
    elif mutation == "numbers":
        weight_map = {"a": 1}
    index: Any = {"metadata": draw(st.sampled_from([{"total_size": 1}, None, [], "x"])), "weight_map": weight_map}
    if mutation == "not-a-map":
        index = draw(st.sampled_from([[], 3, "weight_map", {"weight_map": []}, {}]))
    return index, files
