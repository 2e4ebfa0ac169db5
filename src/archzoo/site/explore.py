"""What the site's compare page and what-if calculators read: each model's and architecture's figures as
polynomials (terms, symbols, derived symbols), its block tree, and the compare page's Markdown.

The browser recomputes parameters, forward FLOPs and the KV cache from the same `archzoo.formula.Poly`
objects the CLI evaluates, exported term by term and evaluated with exact integers (BigInt). A polynomial
holds symbols (``d = 768``), not configuration keys (``d_model``), so the export also says which key sets
which symbol, and that is learnt, not assumed: each integer key is changed to a few other valid values
(`probe_values`), the block tree is rebuilt for each, and the key is offered only when `evaluate` (the
Python twin of the browser's arithmetic) gives exactly what the rebuilt tree gives for every one of them.
A key that changes the tree's structure (a block appears, a formula changes), or a derived symbol whose
definition is not a plain expression of other symbols (ViT's ``(224 / 16)²``), is exported as refused,
with the reason the page shows instead of a figure.

Probing costs some fifty builds of the block tree, so a build learns it once per architecture and
structural signature (`WhatifProbes`): configurations with the same non-integer keys and the same
polynomials term by term share which key moves which symbol and which keys are refused; each model then
gets that structure with its own values and polynomials, once its own values are checked to obey it.
`whatif` itself probes the one configuration it is given, and is what the tests compare the shared
structure with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..architecture import MAX_SIZE, ArchConfig, Architecture, parse_config
from ..blocks import Block, active_params
from ..errors import ArchzooError
from ..formula import Poly, Symbol
from ..host import build_blocks, call_plugin
from ..registry import Entry
from .markup import front_matter
from .views import ModelView

__all__ = [
    "COMPARE_PAGE",
    "DATA_DIR",
    "FIGURES",
    "SCHEMA",
    "Refused",
    "WhatifProbes",
    "architecture_data",
    "architecture_data_path",
    "compare_page",
    "evaluate",
    "model_data",
    "model_data_path",
    "probe_values",
    "whatif",
]

SCHEMA = "archzoo.explore/1"
#: The folder of the per-model and per-architecture JSON files the pages' scripts read.
DATA_DIR = "explore"
#: The compare page (``compare/`` in the site).
COMPARE_PAGE = "compare/index.md"
#: The figures a what-if recomputes: name -> what it is, as the page labels it.
FIGURES = {
    "params": "parameters",
    "active": "active parameters (per token)",
    "flops": "forward FLOPs at N",
    "kv_cache": "KV cache elements per token",
    "cross_kv_cache": "cross-attention KV cache elements per source token",
}
#: At most this many other values are tried for each key (each costs one build of the block tree).
PROBES_PER_KEY = 5


def model_data_path(model_id: str) -> str:
    return f"{DATA_DIR}/models/{model_id}.json"


def architecture_data_path(name: str) -> str:
    return f"{DATA_DIR}/architectures/{name}.json"


class Refused(ArchzooError, ValueError):
    """A what-if the exported polynomials cannot answer exactly; the message says which key and why."""


# ---- polynomials as JSON ----------------------------------------------------------------------------


def _terms(poly: Poly) -> list[list[Any]]:
    """``[[coefficient, [[symbol, power], ...]], ...]``; coefficients as decimal strings (BigInt in the browser)."""
    return [[str(coef), [[name, power] for name, power in mono]] for mono, coef in sorted(poly.terms.items())]


def _figures(root: Block) -> dict[str, Poly]:
    return {
        "params": root.params,
        "active": active_params(root),
        "flops": root.flops,
        "kv_cache": root.kv_cache,
        "cross_kv_cache": root.cross_kv_cache,
    }


def _symbols_of(polys: Iterable[Poly]) -> dict[str, Symbol]:
    seen: dict[str, Symbol] = {}
    for poly in polys:
        for s in poly.used_symbols():
            seen.setdefault(s.name, s)
    return seen


# ---- derived symbols: plain expressions of other symbols --------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/()²^·×]))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise Refused(f"definition {text!r}: cannot read {text[pos:]!r}")
        out.append(match.group(match.lastindex or 0))
        pos = match.end()
    return out


#: The longest derived-symbol definition read (``(224 / 16)²`` is 11), which also bounds its nesting.
MAX_DEFINITION = 200
#: The widest value a definition may reach on the way: far beyond any model's, well short of a hang.
MAX_BITS = 1024


def evaluate_expression(text: str, values: Mapping[str, int]) -> int:
    """The exact integer value of a derived symbol's definition (``d / h``, ``(a + b)²``): integers, symbol
    names, ``+ - * / ( ) ² ^``; a division must come out whole, else `Refused`. The browser's twin is
    ``expression`` in whatif.js."""
    if len(text) > MAX_DEFINITION:
        raise Refused(f"definition of {len(text):,} characters: longer than the {MAX_DEFINITION} this reads")
    tokens = _tokens(text)
    pos = 0

    def bounded(value: int) -> int:
        if value.bit_length() > MAX_BITS:  # a plugin's "d²²²²²²²²..." would otherwise grow without end
            raise Refused(f"definition {text!r}: a value beyond {MAX_BITS} bits")
        return value

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom() -> int:
        token = take() if peek() is not None else ""
        if token == "(":
            value = add()
            if take() != ")":
                raise Refused(f"definition {text!r}: a parenthesis is not closed")
        elif token == "-":
            value = -atom()
        elif token.isdigit():
            value = int(token)
        elif token in values:
            value = values[token]
        else:
            raise Refused(f"definition {text!r}: {token!r} is not a symbol of this model")
        while peek() in ("²", "^", "**"):
            if take() == "²":
                value = bounded(value**2)
            else:
                exponent = atom()
                if exponent < 0 or exponent > 64:
                    raise Refused(f"definition {text!r}: exponent {exponent} out of range")
                value = bounded(value**exponent)
        return value

    def mul() -> int:
        value = atom()
        while peek() in ("*", "·", "×", "/"):
            op = take()
            right = atom()
            if op == "/":
                if right == 0 or value % right:
                    raise Refused(f"{text} = {value} / {right} is not a whole number")
                value //= right
            else:
                value = bounded(value * right)
        return value

    def add() -> int:
        value = mul()
        while peek() in ("+", "-"):
            op = take()
            value = value + mul() if op == "+" else value - mul()
        return value

    result = add()
    if pos != len(tokens):
        raise Refused(f"definition {text!r}: unexpected {tokens[pos]!r}")
    return result


def _names_in(text: str) -> set[str]:
    try:
        return {t for t in _tokens(text) if t[0].isalpha() or t[0] == "_"}
    except Refused:
        return set()


# ---- the what-if data and its evaluation --------------------------------------------------------------


def _int_keys(config: ArchConfig) -> list[str]:
    """The configuration keys a reader may change: those holding an integer (not a flag, a choice or null), but
    those the configuration class lists in ``WHATIF_FIXED`` (keys no figure of the what-if follows, whose valid
    values depend on other keys: DeepSeek's router groups); like the flags, they are part of the signature."""
    fixed = getattr(type(config), "WHATIF_FIXED", ())
    return [
        k
        for k, v in config.model_dump().items()
        if isinstance(v, int) and not isinstance(v, bool) and k != "family" and k not in fixed
    ]


def _minimum(arch: Architecture, key: str) -> int:
    info = arch.config_model.model_fields[key]
    low = 0
    for meta in info.metadata:
        if getattr(meta, "gt", None) is not None:
            low = max(low, int(meta.gt) + 1)
        if getattr(meta, "ge", None) is not None:
            low = max(low, int(meta.ge))
    return low


def probe_values(key: str, config: Mapping[str, Any]) -> list[int]:
    """Other values of ``key`` to check a what-if against: doubled, halved, one more, one less, 1, and the
    values of the other integer keys (where thresholds such as ``n_kv_heads == n_heads`` hide)."""
    value = config[key]
    others = sorted({v for k, v in config.items() if k != key and isinstance(v, int) and not isinstance(v, bool)})
    wanted = [2 * value, value // 2, value + 1, value - 1, 1, 0, *others, 3 * value, value + 2]
    out: list[int] = []
    for v in wanted:
        if v != value and 0 <= v <= MAX_SIZE and v not in out:
            out.append(v)
    return out


def _near_values(key: str, config: Mapping[str, Any]) -> set[int]:
    """The other integer keys' values within a factor of four of ``key``'s: the equalities a configuration may
    treat as a threshold (a key equal to another dropping a block), probed beyond `PROBES_PER_KEY`."""
    value = config[key]
    return {
        v
        for k, v in config.items()
        if k != key and isinstance(v, int) and not isinstance(v, bool) and v != value and 4 * v >= value >= v // 4
    }


@dataclass
class _Built:
    figures: dict[str, int]
    symbols: dict[str, int]
    seq_len: int
    max_seq_len: int | None


def _build(arch: Architecture, data: Mapping[str, Any]) -> _Built | None:
    """The figures of configuration ``data`` at its own N, or None when the configuration is invalid."""
    try:
        config = parse_config(arch, dict(data))
        root = build_blocks(arch, config)
        n = call_plugin(arch.plugin, "seq_len", arch.seq_len, config)
        longest = None
        if arch.max_seq_len is not None:
            longest = call_plugin(arch.plugin, "max_seq_len", arch.max_seq_len, config)
    except (ArchzooError, ValueError):  # invalid (ConfigError), or the plugin failed on it (PluginError)
        return None
    polys = _figures(root)
    return _Built(
        {name: poly.evaluate(N=n) for name, poly in polys.items()},
        {s.name: s.value for s in _symbols_of(polys.values()).values() if s.value is not None},
        n,
        longest,
    )


def _symbol_values(data: Mapping[str, Any], values: Mapping[str, int]) -> dict[str, int]:
    """Every symbol's value once the keys in ``values`` change (the rest keep the configuration's values)."""
    config = {**data["config"], **values}
    out: dict[str, int] = {}
    for name, s in data["symbols"].items():
        if s["key"] is not None:
            out[name] = config[s["key"]] + s["offset"]
        elif not s["derived"]:
            out[name] = int(s["value"])
    keys = {k: v for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool)}
    for _ in range(len(data["symbols"])):  # derived symbols, in as many rounds as they nest
        for name, s in data["symbols"].items():
            if s["derived"] and name not in out and _names_in(s["derived"]) <= out.keys() | keys.keys():
                out[name] = evaluate_expression(s["derived"], {**out, **keys})
    return out


def _bound(rule: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """A value that is a constant or follows a key: ``{"value", "key", "offset"}``."""
    if rule["key"] is not None:
        return int(config[rule["key"]]) + int(rule["offset"])
    return None if rule["value"] is None else int(rule["value"])


def evaluate(data: Mapping[str, Any], values: Mapping[str, int], seq_len: int | None = None) -> dict[str, int]:
    """The figures of the what-if ``data`` (from `whatif`) with the keys in ``values`` changed, at ``seq_len``
    (None: the configuration's own N): what the browser computes, in Python. Raises `Refused` for a key the
    export refuses, a value out of range or a division that does not come out whole."""
    fields = {f["key"]: f for f in data["fields"]}
    for key, value in values.items():
        field = fields.get(key)
        if field is None:
            raise Refused(f"{key}: not a key this calculator can change")
        if field["refused"]:
            raise Refused(f"{key}: {field['refused']}")
        if isinstance(value, bool) or not isinstance(value, int) or not field["min"] <= value <= MAX_SIZE:
            raise Refused(f"{key}: expected a whole number from {field['min']} to {MAX_SIZE:,}, got {value!r}")
    config = {**data["config"], **values}
    for rule in data.get("rules", ()):
        if config[rule["divisor"]] == 0 or config[rule["key"]] % config[rule["divisor"]]:
            raise Refused(
                f"{rule['key']} {config[rule['key']]:,} is not divisible by {rule['divisor']} "
                f"{config[rule['divisor']]:,}; the configuration requires it (archzoo count refuses it)"
            )
    n_rule = data["n"]
    default = _bound(n_rule, config)
    assert default is not None
    if seq_len is None or n_rule["fixed"]:
        n = default
        longest = _bound(n_rule["max"], config)
        if longest is not None and n > longest:  # N's rule, learnt below the longest N, holds no further (Gemma 2's
            # N is its window only while the window is shorter than the context)
            raise Refused(
                f"N: this change makes the configuration's own N {n:,}, beyond its {longest:,} positions, where these "
                "formulas do not follow how archzoo sets N; give N explicitly"
            )
    else:
        longest = _bound(n_rule["max"], config)
        if not 1 <= seq_len <= (longest if longest is not None else MAX_SIZE):
            raise Refused(f"N: expected a whole number from 1 to {longest or MAX_SIZE:,}, got {seq_len}")
        n = seq_len
    symbols = {**_symbol_values(data, values), "N": n}
    out = {}
    for name, figure in data["figures"].items():
        total = 0
        for coef, mono in figure["terms"]:
            term = int(coef)
            for symbol, power in mono:
                term *= symbols[symbol] ** power
            total += term
        out[name] = total
    return out


def _rule(base_value: int | None, key: str, base: Mapping[str, Any], seen: Sequence[tuple[int, int | None]]) -> Any:
    """How a value behaves as ``key`` changes: ``"same"`` (unchanged), ``("key", offset)`` (the key's value plus
    a constant) or None (neither). ``seen`` holds (the key's value, the value) for each probe."""
    if all(v == base_value for _, v in seen):
        return "same"
    if base_value is None or any(v is None for _, v in seen):
        return None
    offset = base_value - int(base[key])
    if all(v is not None and v - k == offset for k, v in seen):
        return ("key", offset)
    return None


def whatif(arch: Architecture, config: ArchConfig, *, model: str = "") -> dict[str, Any]:
    """The what-if calculator's data for ``config``: its figures' polynomials, its symbols (each bound to a
    key, derived by a definition, or fixed), N, and each integer key with its range and, when the browser
    cannot answer for it exactly, why (``refused``). See the module docstring for how keys are checked."""
    base_config = config.model_dump(mode="json")
    # the probes rebuild the configuration from its Python form, which its model takes back as it is (a
    # strict tuple field refuses the list of the JSON form the browser gets)
    probe_config = config.model_dump()
    root = build_blocks(arch, config)
    polys = _figures(root)
    symbols = {name: s for name, s in _symbols_of(polys.values()).items() if name != "N"}
    base = _build(arch, probe_config)
    if base is None:
        raise ArchzooError(
            f"{arch.name}: the configuration cannot be built again from its own values, so no what-if is offered"
        )
    keys = _int_keys(config)
    n_fixed = bool(arch.seq_len_fixed)
    meaning = call_plugin(arch.plugin, "seq_len_note", arch.seq_len_note, config)

    # 1. each key alone: which symbols, N and its bound follow it
    probes: dict[str, list[tuple[int, _Built]]] = {}
    for key in keys:
        found: list[tuple[int, _Built]] = []
        near = _near_values(key, base_config)
        for value in probe_values(key, base_config):
            # past the first few, only another key's nearby value: where a threshold such as ELECTRA's
            # embedding_size == d_model (no projection then) hides, however far down the list it comes
            if len(found) >= PROBES_PER_KEY and value not in near:
                continue
            built = _build(arch, {**probe_config, key: value})
            if built is not None:
                found.append((value, built))
        probes[key] = found
    bindings: dict[str, tuple[str, int]] = {}
    moved_by: dict[str, set[str]] = {name: set() for name in symbols}
    for key in keys:
        for name, s in symbols.items():
            # a probe where the symbol is gone (T = 0: no segment embedding) says nothing of what it follows;
            # the figures' check below still covers it
            present = [(v, b.symbols[name]) for v, b in probes[key] if name in b.symbols]
            rule = _rule(s.value, key, base_config, present)
            if rule != "same":
                moved_by[name].add(key)
                if isinstance(rule, tuple) and name not in bindings:
                    bindings[name] = (key, rule[1])
    symbols_json: dict[str, dict[str, Any]] = {}
    for name, s in symbols.items():
        key_offset = bindings.get(name) if moved_by[name] == {bindings.get(name, ("",))[0]} else None
        derived = ""
        if key_offset is None and moved_by[name]:
            derived = _derivation(s, symbols, base_config, bindings, probes, moved_by[name])
        symbols_json[name] = {
            "value": str(s.value),
            "latex": s.tex(),
            "meaning": s.meaning,
            "definition": s.definition,
            "key": key_offset[0] if key_offset else None,
            "offset": key_offset[1] if key_offset else 0,
            "derived": derived,
        }
    n_rule: dict[str, Any] = {"value": base.seq_len, "key": None, "offset": 0, "fixed": n_fixed, "meaning": meaning}
    max_rule: dict[str, Any] = {"value": base.max_seq_len, "key": None, "offset": 0}
    refused: dict[str, str] = {}
    for key in keys:
        seen = probes[key]
        for rule_json, attr in ((n_rule, "seq_len"), (max_rule, "max_seq_len")):
            rule = _rule(getattr(base, attr), key, base_config, [(v, getattr(b, attr)) for v, b in seen])
            if isinstance(rule, tuple) and rule_json["key"] is None:
                rule_json["key"], rule_json["offset"] = key, rule[1]
            elif rule is None or (isinstance(rule, tuple) and rule_json["key"] != key):
                refused.setdefault(key, f"changing {key} changes N in a way these formulas do not follow")
    for rule_json, attr in ((n_rule, "seq_len"), (max_rule, "max_seq_len")):
        # a rule learnt from a few nearby probes may stop beyond them (Gemma 2's N is its window only while the
        # window is shorter than the context): one far probe of the key it follows must follow it too
        key = rule_json["key"]
        if key is not None:
            far = min(MAX_SIZE, 16 * int(base_config[key]) + 16)
            built = _build(arch, {**probe_config, key: far})
            if built is not None and getattr(built, attr) != far + rule_json["offset"]:
                refused.setdefault(key, f"changing {key} changes N in a way these formulas do not follow")
                rule_json["key"], rule_json["offset"] = None, 0  # N stays the configuration's own value
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "architecture": arch.name,
        "model": model,
        "config": base_config,
        "symbols": symbols_json,
        "n": {**n_rule, "max": max_rule},
        "figures": {name: {"terms": _terms(poly), "text": poly.text()} for name, poly in polys.items()},
        "fields": [],
    }
    fields = []
    for key in keys:
        info = arch.config_model.model_fields[key]
        fields.append(
            {
                "key": key,
                "value": base_config[key],
                "min": _minimum(arch, key),
                "description": info.description or "",
                "symbols": sorted(name for name, keys_ in moved_by.items() if key in keys_),
                "refused": "",
            }
        )
    data["fields"] = fields
    data["rules"] = _divisibility_rules(arch, probe_config, keys)
    # 2. every probe of every key, evaluated as the browser would, must equal the rebuilt tree's figures
    for field in fields:
        key = field["key"]
        if key in refused:
            field["refused"] = refused[key]
            continue
        if not probes[key]:
            field["refused"] = f"no other value of {key} could be checked (every one tried is invalid here)"
            continue
        for value, built in probes[key]:
            if _predicts(data, {key: value}, built) is not True:
                field["refused"] = (
                    f"changing {key} changes the block tree's structure (or a derived value these formulas "
                    f"cannot follow), not just a symbol's value; run archzoo count --set {key}=VALUE"
                )
                break
    # 3. the accepted keys changed together, one more at a time: a key that breaks the sum is refused too
    together: dict[str, int] = {}
    for field in fields:
        if field["refused"]:
            continue
        for value, _ in probes[field["key"]]:
            trial = {**together, field["key"]: value}
            built = _build(arch, {**probe_config, **trial})
            if built is None:
                continue
            if _predicts(data, trial, built) is True:
                together = trial
            else:
                field["refused"] = (
                    f"changing {field['key']} together with {', '.join(together) or 'other keys'} is not "
                    f"followed exactly by these formulas; run archzoo count --set {field['key']}=VALUE"
                )
            break
    return data


# ---- one probe per structure: the what-if of a model from its architecture's learnt structure ---------

#: The parts of a what-if that describe the structure (which key moves which symbol, which keys are refused),
#: learnt once per signature; everything else is the model's own (its values, polynomials and rules).
_STRUCTURE_SYMBOL = ("key", "offset", "derived")
_STRUCTURE_RULE = ("key", "offset")
_STRUCTURE_FIELD = ("min", "description", "symbols", "refused")


def _signature(config: Mapping[str, Any], keys: Sequence[str], polys: Mapping[str, Poly]) -> Any:
    """What decides a what-if's structure, without the numbers: the keys that are not integers (flags,
    choices, nulls: they change the block tree), the figures' polynomials term by term (the tree's shape),
    and the symbols with their plain definitions. Configurations that share it differ only in the values
    of their integer keys, which the exported polynomials take as symbols."""
    fixed = tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in config.items() if k not in keys))
    shape = tuple((name, tuple(sorted(poly.terms.items()))) for name, poly in polys.items())
    definitions = tuple(
        sorted(
            (name, s.definition if _names_in(s.definition) else "") for name, s in _symbols_of(polys.values()).items()
        )
    )
    return (fixed, shape, definitions)


class WhatifProbes:
    """The what-if structures learnt in one build, by architecture and `_signature`: a configuration whose
    signature was seen gets the structure of the first one (which key moves which symbol, which keys are
    refused and why) with its own values and polynomials, instead of rebuilding its block tree some fifty
    times. The structure is taken only when the configuration's own values obey it (each key-bound symbol
    is its key's value plus the same offset, each derived symbol its definition, N and its bound likewise);
    otherwise the configuration is probed on its own (`whatif`). ``probed`` and ``reused`` count both."""

    def __init__(self) -> None:
        self._learnt: dict[Any, dict[str, Any]] = {}
        self.probed = 0
        self.reused = 0

    def whatif(
        self, arch: Architecture, config: ArchConfig, *, model: str = "", root: Block | None = None
    ) -> dict[str, Any]:
        """`whatif`'s data for ``config``; ``root`` is its block tree when the caller has built it already."""
        base_config = config.model_dump(mode="json")
        if root is None:
            root = build_blocks(arch, config)
        polys = _figures(root)
        keys = _int_keys(config)
        signature = (arch.name, arch.plugin, _signature(base_config, keys, polys))
        learnt = self._learnt.get(signature)
        if learnt is not None:
            data = _with_structure(arch, config, base_config, keys, polys, learnt, model)
            if data is not None:
                self.reused += 1
                return data
        self.probed += 1
        data = whatif(arch, config, model=model)
        self._learnt.setdefault(signature, data)
        return data


def _with_structure(
    arch: Architecture,
    config: ArchConfig,
    base_config: Mapping[str, Any],
    keys: Sequence[str],
    polys: Mapping[str, Poly],
    learnt: Mapping[str, Any],
    model: str,
) -> dict[str, Any] | None:
    """The what-if of ``config`` with the structure of ``learnt`` (same signature), or None when the
    configuration's own values do not obey that structure."""
    symbols = {name: s for name, s in _symbols_of(polys.values()).items() if name != "N"}
    if set(symbols) != set(learnt["symbols"]):
        return None
    ints = {k: base_config[k] for k in keys}
    values = {name: s.value for name, s in symbols.items() if s.value is not None}
    symbols_json: dict[str, dict[str, Any]] = {}
    for name, s in symbols.items():
        rule = learnt["symbols"][name]
        if rule["key"] is not None and (s.value is None or s.value != ints[rule["key"]] + rule["offset"]):
            return None
        if rule["derived"]:
            try:
                if evaluate_expression(rule["derived"], {**values, **ints}) != s.value:
                    return None
            except Refused:
                return None
        symbols_json[name] = {
            "value": str(s.value),
            "latex": s.tex(),
            "meaning": s.meaning,
            "definition": s.definition,
            **{part: rule[part] for part in _STRUCTURE_SYMBOL},
        }
    seq_len = call_plugin(arch.plugin, "seq_len", arch.seq_len, config)
    longest = None
    if arch.max_seq_len is not None:
        longest = call_plugin(arch.plugin, "max_seq_len", arch.max_seq_len, config)
    n_learnt = learnt["n"]
    for rule, value in ((n_learnt, seq_len), (n_learnt["max"], longest)):
        if rule["key"] is not None and (value is None or value != ints[rule["key"]] + rule["offset"]):
            return None
    n_rule = {
        "value": seq_len,
        **{part: n_learnt[part] for part in _STRUCTURE_RULE},
        "fixed": n_learnt["fixed"],
        "meaning": call_plugin(arch.plugin, "seq_len_note", arch.seq_len_note, config),
    }
    max_rule = {"value": longest, **{part: n_learnt["max"][part] for part in _STRUCTURE_RULE}}
    fields = []
    for key, rule in zip(keys, learnt["fields"], strict=True):
        if rule["key"] != key:
            return None
        fields.append({"key": key, "value": base_config[key], **{part: rule[part] for part in _STRUCTURE_FIELD}})
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "architecture": arch.name,
        "model": model,
        "config": dict(base_config),
        "symbols": symbols_json,
        "n": {**n_rule, "max": max_rule},
        "figures": {name: {"terms": _terms(poly), "text": poly.text()} for name, poly in polys.items()},
        "fields": fields,
        "rules": _divisibility_rules(arch, config.model_dump(), keys),
    }
    # the configuration's own figures, as the browser computes them, must be its tree's
    own = {name: poly.evaluate(N=seq_len) for name, poly in polys.items()}
    try:
        if evaluate(data, {}) != own:
            return None
    except Refused:
        return None
    return data


def _valid(arch: Architecture, data: Mapping[str, Any]) -> bool:
    """Whether the architecture takes ``data``, as the CLI and the registry ask (`parse_config`: the plugin's
    model run under the plugin guard, so a plugin failing on a probed value refuses it)."""
    try:
        parse_config(arch, dict(data))
    except ArchzooError:
        return False
    return True


def _divisibility_rules(arch: Architecture, config: Mapping[str, Any], keys: Sequence[str]) -> list[dict[str, str]]:
    """The configuration's rules that one key divides another (``n_heads`` divides ``d_model``), as far as
    they show: ``a`` plus ``b`` is valid but ``a`` plus one is not. The browser refuses a what-if that breaks
    one. A rule seen where there is none only makes the calculator refuse more; a rule of another kind (a
    head width must be even) is left to archzoo count, as the page says."""
    rules = []
    for a in keys:
        for b in keys:
            small, big = config[b], config[a]
            if a == b or small < 2 or big % small or big + small > MAX_SIZE:
                continue
            if not _valid(arch, {**config, a: big + small}) or _valid(arch, {**config, a: big + 1}):
                continue
            # the rule is b's, not another key's of the same value (n_layers = n_heads = 12): with b changed
            # to another divisor of a, a plus the new b must be valid and a plus the old b not
            for other in (2 * small, small // 2, 3 * small):
                if other >= 2 and big % other == 0 and (big + small) % other and big + other <= MAX_SIZE:
                    changed = {**config, b: other}
                    if (
                        _valid(arch, changed)
                        and _valid(arch, {**changed, a: big + other})
                        and not _valid(arch, {**changed, a: big + small})
                    ):
                        rules.append({"key": a, "divisor": b})
                    break
    return rules


def _predicts(data: Mapping[str, Any], values: Mapping[str, int], built: _Built) -> bool | str:
    try:
        predicted = evaluate(data, {k: v for k, v in values.items()}, None)
    except Refused as exc:
        return str(exc)
    return predicted == built.figures


def _derivation(
    s: Symbol,
    symbols: Mapping[str, Symbol],
    config: Mapping[str, Any],
    bindings: Mapping[str, tuple[str, int]],
    probes: Mapping[str, list[tuple[int, _Built]]],
    keys: set[str],
) -> str:
    """A derived symbol's definition the browser can evaluate: the plugin's own when it is a plain expression
    of other symbols, else ``a / b`` or ``a * b`` of two key-bound symbols or of two of the keys that move it
    (``d_model / n_heads`` for LLaMA's head width), when that matches the symbol's value in the configuration
    and in every probe of those keys; "" (the keys that move it are refused) otherwise."""
    candidates = []
    if s.definition and _names_in(s.definition) and _names_in(s.definition) <= set(symbols):
        candidates.append(s.definition)
    pairs = [n for n in symbols if n in bindings and n != s.name]
    for names in (pairs, sorted(keys)):
        for a in names:
            for b in names:
                if a != b:
                    candidates += [f"{a} / {b}", f"{a} * {b}"]
    for text in candidates:
        if _derivation_holds(text, s, symbols, config, probes, keys):
            return text
    return ""


def _derivation_holds(
    text: str,
    s: Symbol,
    symbols: Mapping[str, Symbol],
    config: Mapping[str, Any],
    probes: Mapping[str, list[tuple[int, _Built]]],
    keys: set[str],
) -> bool:
    def value_of(values: Mapping[str, int]) -> int | None:
        try:
            return evaluate_expression(text, values)
        except Refused:
            return None

    ints = {k: v for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool)}
    base = {**{n: x.value for n, x in symbols.items() if x.value is not None}, **ints}
    if value_of(base) != s.value:
        return False
    for key in keys:
        for value, built in probes[key]:
            if s.name in built.symbols and value_of({**base, **built.symbols, key: value}) != built.symbols[s.name]:
                return False
    return True


# ---- per-model and per-architecture files -----------------------------------------------------------


def _tree(root: Block, seq_len: int) -> list[dict[str, Any]]:
    """The block tree, one row per block in reading order: its depth, name, copies, parameters (all stored
    copies) and forward FLOPs at N (all copies run)."""
    rows = []
    for visit in root.visits():
        block = visit.block
        rows.append(
            {
                "path": visit.path,
                "name": block.name,
                "depth": visit.depth,
                "kind": block.kind,
                "copies": block.repeat.evaluate() if block.repeat is not None else 1,
                "params": str(visit.params.evaluate()),
                "flops": str(visit.flops.evaluate(N=seq_len)),
                "formula": block.params.text(),
            }
        )
    return rows


def model_data(entry: Entry, probes: WhatifProbes | None = None) -> dict[str, Any]:
    """``explore/models/ID.json``: the model's block tree (the compare page) and its what-if data; ``probes``
    are the structures learnt so far in this build (without them, every key of the model is probed)."""
    report = entry.report
    return {
        "schema": SCHEMA,
        "id": entry.id,
        "architecture": entry.architecture.name,
        "seq_len": report.seq_len,
        # exact, as strings: models.json's numbers lose digits above 2^53 in a browser's JSON.parse
        "figures": {
            "params": str(report.params),
            "active": str(report.active_params),
            "flops": str(report.flops),
            "attention_flops": str(report.attention_flops),
            "kv_cache": str(report.kv_cache_elements_per_token),
            "weights_fp16_bytes": str(report.weight_bytes()["fp16"]),
        },
        "tree": _tree(report.root, report.seq_len),
        "whatif": (
            probes.whatif(entry.architecture, entry.config, model=entry.id, root=report.root)
            if probes is not None
            else whatif(entry.architecture, entry.config, model=entry.id)
        ),
    }


def architecture_data(arch: Architecture, probes: WhatifProbes | None = None) -> dict[str, Any] | None:
    """``explore/architectures/NAME.json``: the what-if data of the architecture's default configuration
    (None when it has no valid default)."""
    try:
        config = parse_config(arch, {})
    except ArchzooError:
        return None
    try:
        data = probes.whatif(arch, config) if probes is not None else whatif(arch, config)
        return {"schema": SCHEMA, "architecture": arch.name, "whatif": data}
    except (ArchzooError, ValueError):
        return None


def to_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


# ---- the compare page --------------------------------------------------------------------------------


def compare_page(models: Sequence[ModelView]) -> str:
    """The compare page's Markdown: a form the compare script fills in from ``models.json``; without
    JavaScript, a note and a link to the table of every model."""
    return (
        front_matter(
            "Compare models", "Two to four models' figures and block trees side by side", archzoo_page="compare"
        )
        + "\n\n# Compare models\n\n"
        "Pick two to four models to see their headline figures and block trees side by side. The "
        "selection is kept in the address (`?models=a,b`), so a comparison can be linked. Figures are "
        "those of the model pages; FLOPs are at each model's own sequence length N, "
        "shown beside them.\n\n"
        f'<div class="archzoo-compare" data-models="../models.json" data-data="../{DATA_DIR}/models/" '
        f'data-count="{len(models)}" markdown="0">'
        "<noscript><p>The comparison is drawn by JavaScript; without it, the "
        '<a href="../models/">table of every model</a> lists the same figures.</p></noscript></div>\n'
    )
