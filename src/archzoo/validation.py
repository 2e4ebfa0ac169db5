"""pydantic validation errors turned into messages that say what is wrong and how to fix it.

Shared by configurations given on the command line and by registry entries, so a mistyped value reads
the same wherever it was typed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from .errors import closest
from .files import key_path

__all__ = ["describe_error", "dotted"]


_PATTERNS = {
    "arxiv": "expected a bare arXiv id such as '1810.04805' (no 'arXiv:' prefix, version or URL)",
    "url": "expected a web address starting with 'http://' or 'https://'",
    "target": "expected a dotted name in torch, transformers or timm, such as 'transformers.BertModel', "
    "'torch.nn.Transformer' or 'timm.vit_base_patch16_224'",
    "config_class": "expected a transformers configuration class such as 'transformers.BertConfig'",
}

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping (key: value lines)",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}

_RANGES = {
    "greater_than": "greater than",
    "greater_than_equal": "at least",
    "less_than": "less than",
    "less_than_equal": "at most",
}


def _got(value: Any) -> str:
    if value is None:
        return "an empty value (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if hasattr(value, "isoformat"):
        return f"the date {value.isoformat()}"
    return f"{type(value).__name__} {value!r}"


def _describe(
    err: Mapping[str, Any], models: dict[tuple, type[BaseModel]], texts: dict[tuple, str], prefix: tuple = ()
) -> tuple[tuple, tuple, str]:
    """One pydantic error as ``(key path, key path of its line, what is wrong and how to fix it)``.

    ``models`` maps key paths to the schema model there; ``texts`` holds scalars as written, by ``prefix + path``;
    ``prefix`` is where the validated mapping sits in its file (``("config",)``), for messages that name a place.
    """
    loc = tuple(err["loc"])
    kind, ctx = err["type"], err.get("ctx") or {}
    value: Any = err.get("input")  # whatever the file held
    name = str(loc[-1]) if loc else ""
    model = models.get(loc[:-1])
    info = model.model_fields.get(name) if model is not None else None
    description = info.description if info is not None else None
    if kind == "missing":
        parent = loc[:-1]
        where = f"under '{key_path(prefix + parent)}'" if prefix + parent else "at the top level"
        about = f" ({description})" if description else ""
        return loc, parent, f"required key missing; add '{name}:' {where}{about}"
    if kind == "extra_forbidden":
        known = list(model.model_fields) if model is not None else []
        near = closest(name, known)
        hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        return loc, loc, f"unknown key; {hint}valid keys: {', '.join(known)}" if known else "unknown key"
    if kind == "string_unicode":  # half a surrogate: a byte that was not UTF-8, kept by Python's decoder
        what = "a key" if not loc else "the value"
        return loc, loc, f"{what} holds {value!a}, which is not text (a byte that is not UTF-8); type it as UTF-8"
    if kind == "invalid_key":
        return loc[:-1], loc, f"a key must be text, got {_got(value)}; quote the key"
    if kind == "value_error":
        message = err["msg"].removeprefix("Value error, ")
        if not loc and ": " in message:  # a check across keys names its key first: "n_heads: d_model 768 is ..."
            name, _, message = message.partition(": ")
            loc = (name,)
        return loc, loc, message
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        near = closest(str(value), choices) if isinstance(value, str) else []
        hint = f"did you mean {near[0]!r}? " if near else ""
        return loc, loc, f"unknown value {value!r}; {hint}expected one of: {', '.join(choices)}"
    if kind == "string_pattern_mismatch":
        expected = _PATTERNS.get(name, f"expected text matching {ctx.get('pattern')}")
        return loc, loc, f"{expected}, got {_got(value)}"
    if kind in ("string_too_short", "too_short"):
        least = ctx.get("min_length", 1)
        expected = f"; expected {description}" if description else ""
        if least <= 1:
            return loc, loc, f"must not be empty{expected}"
        return loc, loc, f"too short ({len(value)} characters, at least {least}){expected}"
    if kind in _RANGES:
        bound = next(iter(ctx.values()), "")
        return loc, loc, f"must be {_RANGES[kind]} {bound}, got {value!r}"
    if kind in _EXPECTED:
        message = f"expected {_EXPECTED[kind]}, got {_got(value)}"
        if kind == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool):
            message += f'; put it in quotes: "{texts.get(prefix + loc, value)}"'
        elif kind == "list_type" and isinstance(value, (str, int, float)):
            shown = texts.get(prefix + loc, value)
            if isinstance(shown, str) and not shown.isprintable():
                shown = repr(shown)  # a newline or control character would break the one-line message
            message += f"; write a list, e.g. [{shown}]"
        elif kind.startswith("int") and hasattr(value, "year"):
            message += f"; write the year alone: {value.year}"
        elif value is None:
            message += "; write a value after the ':'"
        elif kind.startswith("bool"):
            message += "; write true or false without quotes"
        elif (
            kind.startswith(("int", "float"))
            and isinstance(value, str)
            and re.fullmatch(r"[-+]?\d+(\.\d+)?", value.strip())
        ):
            message += "; write the number without quotes"
        elif kind.startswith("int") and isinstance(value, float):
            message += "; write a whole number without a decimal point"
        return loc, loc, message
    return loc, loc, f"{err['msg']} (got {value!r})"


def describe_error(err: Mapping[str, Any], model: type[BaseModel]) -> tuple[str, str]:
    """``(key path, message)`` for one pydantic error of ``model``."""
    loc, _, message = _describe(err, {(): model}, {})
    return key_path(loc), message


dotted = key_path
