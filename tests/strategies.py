"""Hypothesis strategies for archzoo's property tests: configuration overrides read from each plugin's
pydantic config model, values written as ``--set`` reads them, and registry text and bytes.

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
    "YAML_TEXT",
    "FieldShape",
    "Raw",
    "config_overrides",
    "field_shapes",
    "hostile_value",
    "sensible_value",
    "set_arguments",
    "set_text",
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
        options.append(st.just(shape.default))
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
    if isinstance(value, list):
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
