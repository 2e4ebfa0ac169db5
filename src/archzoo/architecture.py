"""What a plugin registers: an `Architecture`, its pydantic configuration and its reference implementation."""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from .blocks import ACTIVATIONS, Block
from .errors import ArchzooError, ConfigError
from .plugin_guard import call_plugin

__all__ = [
    "MAX_SIZE",
    "TORCH_ID_RANGE",
    "ArchConfig",
    "Architecture",
    "InputKind",
    "Reference",
    "TokenIndex",
    "TransformerConfig",
    "check_activation",
    "check_head_count",
    "check_heads",
    "check_kv_heads",
    "check_rotary_head_width",
    "context_length",
    "describe_validation_error",
    "float_keys",
    "json_number",
    "parse_config",
    "size_text",
    "token_index_keys",
    "validate_config",
]

SLUG = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")


#: The largest integer any configuration value (a width, a layer count, a vocabulary, a sequence length)
#: may take: 2**31 - 1, the largest a 32-bit signed integer holds. No published model comes near it
#: (the widest d_model is tens of thousands, the largest vocabulary a few hundred thousand), and every
#: count, FLOP figure and plot stays exact and fast below it.
MAX_SIZE = 2**31 - 1

#: The integers torch compares a tensor of token ids with (a Python integer becomes an int64 or uint64 scalar):
#: beyond them the comparison raises OverflowError, so transformers cannot run a model given such a token id.
TORCH_ID_RANGE = (-(2**63), 2**64 - 1)


class TokenIndex:
    """Marks a configuration key that holds a token id, ``Annotated[int | None, TokenIndex()]``: an index the model
    compares with the input's ids (a padding id), not a size. `ArchConfig` bounds it by `TORCH_ID_RANGE`, as
    transformers does, not by `MAX_SIZE`; a family whose token embedding has a padding row checks it against the
    vocabulary too (`archzoo.hf_vocabulary.check_padding_index`)."""

    def __repr__(self) -> str:
        return "TokenIndex()"


def _float_only(annotation: Any) -> bool:
    """Whether a configuration key's type takes a float and no integer (``float``, ``float | None``, a float with
    constraints or validators): an integer given for it is refused, not counted as the float it equals."""
    import types
    import typing

    leaves: set[Any] = set()

    def walk(node: Any) -> None:
        origin, args = typing.get_origin(node), typing.get_args(node)
        if origin is typing.Annotated:
            walk(args[0])
        elif origin is typing.Union or origin is types.UnionType:
            for arg in args:
                walk(arg)
        else:
            leaves.add(node)

    walk(annotation)
    return float in leaves and not leaves & {int, Any, object}


@functools.cache  # asked for every integer every configuration is validated with: once per model class
def float_keys(model: type[ArchConfig]) -> frozenset[str]:
    """The keys of a configuration model that take a float and no integer (`ArchConfig` refuses an integer there)."""
    return frozenset(name for name, info in model.model_fields.items() if _float_only(info.annotation))


@functools.cache  # as float_keys
def token_index_keys(model: type[ArchConfig]) -> frozenset[str]:
    """The keys of a configuration model that hold a token id (marked `TokenIndex`), bounded by `TORCH_ID_RANGE`."""
    return frozenset(
        name for name, info in model.model_fields.items() if any(isinstance(m, TokenIndex) for m in info.metadata)
    )


#: how JSON writes a float it has no number for: the spellings JavaScript and Python's ``float()`` read back
NON_FINITE_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_number(value: Any) -> Any:
    """``value`` with every NaN or infinite float in it (in lists and objects too) written as ``"NaN"``,
    ``"Infinity"`` or ``"-Infinity"``: RFC 8259 JSON has no such number, and a strict reader refuses the bare
    ``NaN`` Python's json module writes."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE_TEXT[repr(value)]
    if isinstance(value, dict):
        return {k: json_number(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_number(v) for v in value]
    return value


def size_text(value: int) -> str:
    """An integer for a message: ``12,345``, or its number of digits when printing it would be absurd."""
    if abs(value) < 10**40:
        return f"{value:,}"
    sign = "a negative" if value < 0 else "an"
    return f"{sign} integer of about {int(abs(value).bit_length() * 0.30103) + 1:,} digits"


class ArchConfig(BaseModel):
    """Base of every architecture's configuration: unknown keys are errors, values are immutable and
    strictly typed (``true`` is not a layer count, ``"768"`` is not a width), and no integer exceeds
    `MAX_SIZE`."""

    # defer_build: a plugin's configuration models are built when first used, not when it is imported, so that a
    # lookup builds the one it validates (pydantic's schema building is most of a plugin's import)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: ValidationInfo) -> Any:
        # every field of every plugin's configuration, each reported under its own key with the others
        if isinstance(value, int) and not isinstance(value, bool):
            if info.field_name in float_keys(cls):
                # pydantic's strict mode still takes 1 for a float and counts 1.0: another value than the one given
                raise ValueError(
                    f"expected a float such as {float(value)!r}, got the integer {size_text(value)}; write it with "
                    "a decimal point"
                )
            if info.field_name in token_index_keys(cls):
                low, high = TORCH_ID_RANGE
                if not low <= value <= high:
                    raise ValueError(
                        f"{size_text(value)} is outside the integers torch takes for a token id, {low:,} to "
                        f"{high:,}: transformers' model cannot use it; correct the value"
                    )
            elif value > MAX_SIZE:
                raise ValueError(
                    f"{size_text(value)} is larger than archzoo's limit for a size, {MAX_SIZE:,} "
                    "(2^31 - 1); no model comes near it, so correct the value"
                )
            elif value < -MAX_SIZE:
                raise ValueError(
                    f"{size_text(value)} is beyond archzoo's limit for a size, {MAX_SIZE:,} (2^31 - 1) in "
                    "magnitude; no model comes near it, so correct the value"
                )
        return value

    @field_serializer("*", mode="wrap", when_used="json")
    def _finite_json(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        # transformers takes a NaN or infinite float (a soft-cap of NaN builds and runs; no count depends on it),
        # and so does archzoo, but JSON has no such number: strict readers refuse Python's bare NaN
        return json_number(handler(value))


#: How a configuration type reads to a person writing a registry entry (YAML's, JSON's words).
_TYPE_WORDS = {int: "integer", float: "number", bool: "boolean", str: "string", type(None): "null"}


def _type_name(annotation: Any) -> str:
    """A configuration key's type as a person would write it: ``int | None`` -> ``integer or null``,
    ``Literal['a', 'b']`` -> ``'a' | 'b'``, ``PositiveInt | None`` -> ``integer or null`` (constraints
    such as pydantic's ``Annotated[int, Gt(0)]`` are checked, not named), ``list[int]`` -> ``list of integer``."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if args and (origin is typing.Union or origin is types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names + (["null"] if type(None) in args else []))
    if origin in (list, tuple, set, frozenset) and args:
        return f"list of {_type_name(args[0])}"
    if origin is dict and len(args) == 2:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    if annotation in _TYPE_WORDS:
        return _TYPE_WORDS[annotation]
    return getattr(annotation, "__name__", str(annotation))


def check_heads(d_model: int, n_heads: int, hint: str = "") -> None:
    """Raise the shared, key-naming error when ``n_heads`` does not divide ``d_model``."""
    if d_model % n_heads:
        raise ValueError(
            f"n_heads: d_model {d_model} is not divisible by n_heads {n_heads}; choose a divisor of d_model{hint}"
        )


def check_rotary_head_width(d_model: int, n_heads: int, d_head: int | None = None) -> None:
    """Raise the shared, key-naming error for rotary positions on heads of odd width: they turn pairs of channels
    (a head is ``d_head`` wide, or ``d_model // n_heads``, and the error names whichever the width came from)."""
    width = d_head or d_model // n_heads
    if width % 2:
        raise ValueError(
            f"{'d_head' if d_head else 'n_heads'}: rotary positions turn pairs of channels, so a head's width must "
            f"be even, got {width}"
            + ("" if d_head else f" (d_model {d_model} / n_heads {n_heads})")
            + "; choose an even head width"
        )


def check_head_count(d_model: int, n_heads: int, fix: str) -> None:
    """Raise the shared, key-naming error for more heads than d_model has channels, where transformers rounds a
    head's width down (``d_model // n_heads``) instead of refusing heads that do not divide it; ``fix`` ends the
    advice (``or give d_head``, ``or a wider d_model``)."""
    if n_heads > d_model:
        raise ValueError(
            f"n_heads: d_model {d_model} leaves each of {n_heads} heads {d_model // n_heads} wide; choose at most "
            f"{d_model} heads, {fix}"
        )


def check_kv_heads(n_heads: int, n_kv_heads: int | None) -> None:
    """Raise the shared, key-naming error when the key/value heads (None: as many as the query heads) do not
    divide the query heads, which grouped-query attention shares out evenly."""
    kv = n_heads if n_kv_heads is None else n_kv_heads
    if n_heads % kv:
        raise ValueError(
            f"n_kv_heads: n_heads {n_heads} is not divisible by n_kv_heads {kv}; "
            "choose a divisor of n_heads (1 for multi-query attention)"
        )


def check_activation(activation: str, key: str = "activation") -> None:
    """Raise the shared, key-naming error for an activation no block knows (``key``: the configuration key that
    holds it, when a configuration has more than one)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"{key}: unknown activation {activation!r}; expected one of {', '.join(ACTIVATIONS)}")


class TransformerConfig(ArchConfig):
    """Base of a Transformer family's configuration: the four keys every family names alike, with their types and
    their checks, so that a family declares only what is its own.

    A family gives its reference model's values in ``DEFAULTS``, and its own wording of a shared key in
    ``DESCRIPTIONS`` (the transformers key it reads, what the family's vocabulary holds)::

        class NeoXConfig(TransformerConfig):
            DEFAULTS = dict(vocab_size=50432, d_model=6144, n_layers=44, n_heads=64)
            DESCRIPTIONS = dict(d_model="model width (hidden_size)")

    Each re-declares the inherited field in the family's class, as a field written there would be (pydantic keeps
    it at its base's position, with its type and constraints), so the four keys come first, in this order, and
    every family validates them the same way. They name any inherited key, so a family's variant changes its
    parent's values alike (``class Olmo2Config(LlamaConfig)`` with ``DEFAULTS = dict(d_model=4096,
    qk_norm="whole")``); a field the class body declares itself is its own (and may not be named in them too). A
    key given no default stays required.

    ``HEADS_DIVIDE_WIDTH``: the family's attention refuses heads that do not divide ``d_model`` (`check_heads`),
    checked before the family's own checks; a family whose heads have a width of their own (``d_head``) or whose
    transformers class rounds it down sets it false and checks what its class refuses.
    """

    vocab_size: PositiveInt = Field(description="vocabulary size (rows of the token embedding)")
    d_model: PositiveInt = Field(description="model width")
    n_layers: PositiveInt = Field(description="layers")
    n_heads: PositiveInt = Field(description="attention heads")

    DEFAULTS: ClassVar[dict[str, Any]] = {}
    DESCRIPTIONS: ClassVar[dict[str, str]] = {}
    HEADS_DIVIDE_WIDTH: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the class's own values only: a subclass of a family inherits the fields they made, not the tables
        defaults: dict[str, Any] = cls.__dict__.get("DEFAULTS", {})
        descriptions: dict[str, str] = cls.__dict__.get("DESCRIPTIONS", {})
        # pydantic reads a class's fields after this hook: a re-declaration written into the class here is read as
        # one written in its body
        own = inspect.get_annotations(cls)
        for key in {**defaults, **descriptions}:
            # the nearest base's field: a family's subclass (OLMo 2 of LLaMA) changes its parent's values too
            inherited = next(
                (
                    base.model_fields[key]
                    for base in cls.__mro__[1:]
                    if issubclass(base, TransformerConfig) and key in base.model_fields
                ),
                None,
            )
            if inherited is None:
                raise TypeError(
                    f"{cls.__name__}: {key!r} is no key of its bases; declare it as a field of the class instead"
                )
            if key in own:
                raise TypeError(
                    f"{cls.__name__}: {key!r} is declared in the class body and in DEFAULTS or DESCRIPTIONS"
                )
            changes: dict[str, Any] = {}
            if key in defaults:
                changes["default"] = defaults[key]
            if key in descriptions:
                changes["description"] = descriptions[key]
            cls.__annotations__[key] = inherited.annotation
            setattr(cls, key, FieldInfo.merge_field_infos(inherited, **changes))

    @model_validator(mode="after")
    def _check_heads(self) -> Self:
        if self.HEADS_DIVIDE_WIDTH:
            check_heads(self.d_model, self.n_heads)
        return self


def context_length(config: Any) -> int:
    """The sequence length a report uses by default: the configuration's context length, ``max_positions``."""
    return int(config.max_positions)


#: the kinds of input `archzoo.reference.reference_inputs` makes itself (`Reference.inputs`)
InputKind = Literal["token_ids", "image", "seq2seq_embeddings", "seq2seq_token_ids", "encoder_decoder_token_ids"]


def _python(value: Any) -> str:
    """``value`` as Python source: a NaN or infinite float as ``float('nan')``, which its repr (``nan``) is not."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value!r}')"
    return repr(value)


class Reference(BaseModel):
    """The real implementation a configuration corresponds to, and how to build it.

    ``target`` is a dotted name (``transformers.BertModel``, ``torch.nn.Transformer``,
    ``timm.vit_base_patch16_224``), or for ``library: "archzoo"`` a class a plugin defines, named by its
    module (``archzoo_transformer.Seq2SeqTransformer``; a class that needs torch is best made on first
    access, through the module's ``__getattr__``, so that importing the plugin stays torch-free). For
    transformers, ``kwargs`` go to ``config_class`` and the model is built with
    ``target(config, **model_kwargs)``; otherwise they are passed to ``target`` directly.
    ``inputs`` says what one forward pass of batch 1 takes: ``token_ids`` (``input_ids`` of N tokens),
    ``image``, ``seq2seq_embeddings`` / ``seq2seq_token_ids`` (torch.nn.Transformer's positional
    ``(source, target)``, sequence first) or ``encoder_decoder_token_ids`` (a transformers encoder-decoder:
    ``input_ids`` and ``decoder_input_ids``, N tokens each). A family whose inputs are none of these (mel
    frames, an image with its caption) names its own function instead, by its dotted name
    (``archzoo_whisper.reference_inputs``): ``function(model, seq_len, device)`` returns the positional and
    keyword arguments of one forward pass of batch 1, its sizes read off the built ``model``; the plugin's
    architecture page says what N means for it.

    ``device`` is where `archzoo.reference.reference_flops` runs the forward pass: ``meta`` (no memory, no
    weights) for every model whose FLOPs do not depend on its weights' values, ``cpu`` (weights drawn from a
    fixed seed) for one whose forward pass reads them, as a mixture of experts' routing reads the router's
    scores: each token still runs exactly ``top_k`` experts, so the count is the same for any weights, but the
    meta device cannot pick them. Only small configurations are measured there. Parameters are always counted
    on the meta device.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built when a reference is asked for

    library: Literal["torch", "transformers", "timm", "archzoo"]
    target: str
    config_class: str | None = None
    kwargs: dict[str, Any] = {}
    model_kwargs: dict[str, Any] = {}
    inputs: InputKind | Annotated[str, StringConstraints(pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")] = "token_ids"
    device: Literal["meta", "cpu"] = "meta"
    note: str = ""

    def code(self) -> str:
        """Python that builds the reference on the meta device and counts its parameters."""
        module, _, name = self.target.rpartition(".")
        lines = ["import torch"]
        if self.library == "timm":
            args = "".join(f", {k}={_python(v)}" for k, v in self.kwargs.items())
            lines += ["import timm", "", 'with torch.device("meta"):', f"    model = timm.create_model({name!r}{args})"]
        elif self.config_class:
            cmod, _, cname = self.config_class.rpartition(".")
            lines += [f"from {module} import {name}" + (f", {cname}" if cmod == module else ""), ""]
            if cmod != module:
                lines.insert(-1, f"from {cmod} import {cname}")
            args = ", ".join(f"{k}={_python(v)}" for k, v in self.kwargs.items())
            extra = "".join(f", {k}={_python(v)}" for k, v in self.model_kwargs.items())
            lines += [f"config = {cname}({args})", 'with torch.device("meta"):', f"    model = {name}(config{extra})"]
        else:
            args = ", ".join(f"{k}={_python(v)}" for k, v in self.kwargs.items())
            if self.library == "archzoo":
                lines.insert(0, f"# {self.note} (archzoo[verify] installs torch)")
            lines += [f"from {module} import {name}", "", 'with torch.device("meta"):', f"    model = {name}({args})"]
        lines.append("print(sum(p.numel() for p in model.parameters()))")
        return "\n".join(lines)


class Architecture(BaseModel):
    """An architecture a plugin contributes: its configuration model and how it is built from blocks.

    ``build(config) -> Block`` returns the model's block tree; ``seq_len(config)`` the sequence length
    a report uses by default (the context, `context_length`, unless the family says otherwise: the number of
    image tokens); ``reference(config)`` the real implementation, or None when there is none.

    ``hf_model_types`` is filled in by the host, like ``plugin``: each Hugging Face ``model_type`` read into
    this architecture, mapped to the function turning that ``config.json`` into its config keys. Plugins
    register those readers with the ``register_hf_readers`` hook; setting the field directly is the
    deprecated way to do it, still accepted (with a DeprecationWarning) and checked the same way.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str
    title: str
    summary: str
    citation: str
    config_model: type[ArchConfig]
    build: Callable[[Any], Block]
    seq_len: Callable[[Any], int] = context_length
    reference: Callable[[Any], Reference | None] | None = None
    hf_model_types: dict[str, Callable[..., dict[str, Any]]] = {}  # filled in by the host (register_hf_readers)
    seq_len_fixed: bool = False  # N is set by the configuration (image tokens), not chosen per call
    seq_len_note: Callable[[Any], str] = lambda config: "the model's context length"
    max_seq_len: Callable[[Any], int] | None = None  # the longest N the configuration can run (positions)
    plugin: str = ""  # filled in by the host: the plugin that registered it

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG.match(value):
            raise ValueError(f"architecture name {value!r} must be a lowercase slug such as 'bert' or 'gpt'")
        return value

    @field_validator("config_model")
    @classmethod
    def _config_model(cls, value: type) -> type:
        if not (isinstance(value, type) and issubclass(value, ArchConfig)):
            raise ValueError("config_model must be a subclass of archzoo.ArchConfig")
        return value

    @model_validator(mode="after")
    def _context_for_the_default_seq_len(self) -> Self:
        # the default N reads max_positions: a configuration without one must say what N is, when registered
        if self.seq_len is context_length and "max_positions" not in self.config_model.model_fields:
            raise ValueError(
                f"seq_len: {self.config_model.__name__} has no max_positions, the context the default sequence "
                "length reads; give the architecture its own seq_len(config)"
            )
        return self

    def config_fields(self) -> list[tuple[str, str, Any, str]]:
        """``(name, type, default, description)`` for every configuration key; a required key's default is None."""
        rows = []
        for name, info in self.config_model.model_fields.items():
            annotation = _type_name(info.annotation)
            default = None if info.is_required() else info.default
            rows.append(
                (name, annotation + (" (required)" if info.is_required() else ""), default, info.description or "")
            )
        return rows


def _problems(exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    """``(key, what is wrong and how to fix it)`` for each of pydantic's errors (key empty for the whole model)."""
    # the wording module reads files' key paths (and with them yaml): imported when a configuration is refused
    from .validation import describe_error

    return [describe_error(err, model) for err in exc.errors()]


def describe_validation_error(exc: ValidationError, source: str, model: type[BaseModel]) -> list[str]:
    """One line per problem: ``source: key: what is wrong (expected ..., got ...); how to fix it``."""
    return [f"{source}: {key}: {message}" if key else f"{source}: {message}" for key, message in _problems(exc, model)]


def validate_config(arch: Architecture, data: Mapping[str, Any]) -> ArchConfig:
    """``data`` validated by the architecture's configuration model, through the plugin guard: a pydantic
    ``ValidationError`` propagates, for callers that word it by their own sources (`parse_config`, the registry's
    line numbers); anything else the model raises is a `PluginError` naming the plugin."""
    return call_plugin(
        arch.plugin,
        "its configuration model",
        arch.config_model.model_validate,
        data,
        expected=(ValidationError,),
    )


def parse_config(
    arch: Architecture,
    data: Mapping[str, Any],
    source: str = "config",
    *,
    error: type[ArchzooError] = ConfigError,
    locate: Callable[[str], str] | None = None,
) -> ArchConfig:
    """Validate ``data`` against the architecture's config model (`validate_config`), or raise ``error`` (a
    `ConfigError` unless the caller reads another kind of input) with one line per problem: ``WHERE: what is wrong
    (expected ..., got ...); how to fix it``. WHERE is ``source: key`` (``source`` for a problem of no key), or
    ``locate(key)`` when the caller knows better where a key came from (a config.json's own key, a ``--set``)."""
    try:
        return validate_config(arch, data)
    except ValidationError as exc:
        if locate is None:
            lines = describe_validation_error(exc, source, arch.config_model)
        else:
            lines = [f"{locate(key)}: {message}" for key, message in _problems(exc, arch.config_model)]
        raise error("\n".join(lines)) from None
