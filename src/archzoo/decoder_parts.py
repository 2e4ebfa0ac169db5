"""The parts Transformer plugins build alike, under other names: heads on top of a decoder, the key/value heads of
grouped-query attention, the reference modules of a transformers decoder, a config.json reader from its table, and
the registration hooks.

Each part is what several families' plugins wrote out for themselves (GPT-NeoX, StableLM, StarCoder2, Cohere,
Falcon, BLOOM, OPT, LLaMA ...): a family passes the names its transformers class uses, and keeps what is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import Field

from .architecture import Architecture
from .blocks import Block, attention, composite, embedding, layer_norm, linear, lm_head, repeat
from .formula import Poly, const, sym
from .hf_vocabulary import HFTable, rope_type
from .hookspecs import hookimpl
from .symbols import declare_symbol

__all__ = [
    "LABELS",
    "LABELS_WORDS",
    "architectures_hook",
    "attention_modules",
    "causal_attention",
    "decoder_heads",
    "decoder_modules",
    "decoder_stack",
    "describe_heads",
    "head_classes",
    "head_field",
    "hf_readers_hook",
    "kv_heads",
    "num_labels_field",
    "rotary_fraction",
    "table_values",
    "with_norms",
]

#: The one symbol the classification heads add: K, the labels (num_labels).
LABELS = declare_symbol("K", latex="K", meaning="labels (num_labels)", order=33)

#: What the heads every transformers decoder offers put on top of it, as the ``head`` field describes them.
_HEAD_WORDS = {
    "sequence_classification": "a bias-free score layer on every token, the last non-padding one's kept",
    "token_classification": "a score layer with bias on every token",
    "question_answering": "Linear(d_model, 2) on every token",
}


def describe_heads(classes: Mapping[str, str], *, prefix: str = "", note: str = "", **words: str) -> str:
    """The ``head`` field's description: each head with its transformers class (``lm``, ``none``) or what it puts on
    top (``words``, else the usual words for a decoder's score layers), then ``note`` and ``: {prefix}For...`` when
    given."""
    parts = [f"{head} ({words.get(head) or _HEAD_WORDS.get(head) or name})" for head, name in classes.items()]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    return text + (f", {note}" if note else "") + (f": {prefix}For..." if prefix else "")


def head_field(classes: Mapping[str, str], *, prefix: str = "", note: str = "", **words: str) -> Any:
    """The ``head`` field of a family whose heads are ``classes`` (archzoo's head -> transformers' class), ``lm``
    by default, described by `describe_heads`: ``head: Literal[tuple(CLASSES)] = head_field(CLASSES)``."""
    return Field("lm", description=describe_heads(classes, prefix=prefix, note=note, **words))


#: how most decoders' ``num_labels`` reads
LABELS_WORDS = (
    "outputs of the sequence_classification and token_classification heads (transformers' num_labels); "
    "question_answering always has 2"
)


def num_labels_field(description: str = LABELS_WORDS) -> Any:
    """The ``num_labels`` field, K: 2 labels by default, as transformers' PretrainedConfig has."""
    return Field(2, description=description)


def head_classes(classes: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """An `HFTable`'s ``classes`` from a family's head -> class map: each class with the head it sets, the base
    model (head ``none``) first."""
    return {name: {"head": head} for head, name in sorted(classes.items(), key=lambda item: item[0] != "none")}


def kv_heads(n_heads: int, n_kv_heads: int | None, h: Poly, d_h: Poly, inner: Poly) -> tuple[Poly, Poly]:
    """The key/value heads and the width of the keys (and of the values): ``h`` and the queries' ``inner`` when
    every query head has its own (``n_kv_heads`` None or ``n_heads``), else the symbol h_kv and h_kv·d_h
    (grouped- or multi-query attention)."""
    kv = n_heads if n_kv_heads is None else n_kv_heads
    if kv == n_heads:
        return h, inner
    h_kv = sym("h_kv", kv, latex="h_{kv}", meaning="key/value heads (n_kv_heads)", order=21)
    return h_kv, h_kv * d_h


def causal_attention(
    d: Poly,
    inner: Poly,
    h: Poly,
    d_h: Poly,
    n_heads: int,
    n_kv_heads: int | None,
    *,
    bias: bool,
    out_bias: bool | None = None,
    positions: str = "rotary positions",
    details: str = "",
) -> Block:
    """A decoder's causal self-attention of ``h`` query heads of ``d_h`` (``inner`` wide) and `kv_heads` key/value
    heads, separate query, key, value and output projections (biases: ``bias``, the output's ``out_bias``),
    described as ``causal [grouped-query ]self-attention with {positions}{details}``."""
    h_kv, kv_inner = kv_heads(n_heads, n_kv_heads, h, d_h, inner)
    grouped = "grouped-query " if kv_inner is not inner else ""
    return attention(
        "attention",
        d,
        inner,
        kv_inner=kv_inner,
        bias=bias,
        out_bias=out_bias,
        causal=True,
        heads=h,
        kv_heads=h_kv,
        d_head=d_h,
        description=f"causal {grouped}self-attention with {positions}{details}",
    )


def with_norms(attn: Block, norms: list[Block]) -> Block:
    """``attn`` with ``norms`` (a query and a key norm, per head or whole) among its children, after the
    projections; its KV cache and head layout are kept (a composite sums its children, so it is built again)."""
    rebuilt = composite(attn.name, attn.kind, [*attn.children, *norms], attn.description)
    return replace(rebuilt, kv_cache=attn.kv_cache, heads=attn.heads, kv_heads=attn.kv_heads, d_head=attn.d_head)


def decoder_stack(
    layer: Block, d: Poly, V: Poly, L: Poly, *, token: str, final_norm: Block | None = None
) -> list[Block]:
    """A decoder's token embedding (its module named ``token`` in the description), its ``L`` layers and the norm
    that closes them (a LayerNorm with bias unless ``final_norm`` says otherwise)."""
    return [
        embedding("token", V, d, role="token", description=f"token embeddings ({token})"),
        repeat(layer, L, name="layers"),
        final_norm if final_norm is not None else layer_norm("final_norm", d),
    ]


def decoder_heads(
    head: str,
    d: Poly,
    V: Poly,
    *,
    tied: bool,
    num_labels: int = 2,
    lm: Block | None = None,
    token_classifier: str = "score",
    answers: Poly | None = None,
) -> list[Block]:
    """What a transformers decoder's head class puts on its last hidden states: for ``lm`` the LM head (tied to the
    token embedding when ``tied``, or the family's own ``lm``); for ``sequence_classification`` a bias-free score
    layer on every token (the last non-padding token's scores are then gathered: no FLOPs); for
    ``token_classification`` a classifier with bias named ``token_classifier``; for ``question_answering`` a
    linear to ``answers`` outputs (2: start and end) on every token; for ``none`` nothing. ``num_labels`` is K,
    the labels of the classification heads."""
    if head == "lm":
        return [lm if lm is not None else lm_head(d, V, tied_to="token" if tied else "")]
    K = LABELS(num_labels)
    if head == "sequence_classification":
        return [linear("score", d, K, bias=False, description="class scores on every token, no bias")]
    if head == "token_classification":
        return [linear(token_classifier, d, K, description="a label's scores per token")]
    if head == "question_answering":
        outputs = const(2) if answers is None else answers
        return [linear("qa_outputs", d, outputs, description="answer start and end logits per token")]
    return []


def attention_modules(
    module: str = "self_attn", *, out: str = "o_proj", norms: tuple[str, str] | None = None
) -> dict[str, str]:
    """The block -> submodule rows of an attention with separate query, key and value projections (``module`` its
    name in the layer, ``out`` its output projection's, ``norms`` its query and key norms' if it has them)."""
    rows = {"attention": module, **{f"attention.{p}": f"{module}.{p}" for p in ("q_proj", "k_proj", "v_proj")}}
    rows["attention.out_proj"] = f"{module}.{out}"
    if norms:
        rows["attention.q_norm"], rows["attention.k_norm"] = (f"{module}.{n}" for n in norms)
    return rows


def decoder_modules(
    root: str,
    head: str,
    layer: Mapping[str, str],
    *,
    base: str = "model.",
    embed: str = "embed_tokens",
    layers: str = "layers",
    final_norm: str = "norm",
    heads: tuple[str, ...] = ("lm_head", "score"),
    more: Mapping[str, str] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in a transformers decoder class (for `archzoo verify`): block path ->
    submodule names. The base model's modules sit under ``base`` in a head class (none in the base model, head
    ``none``); ``layer`` maps a layer's blocks to its submodules, relative to the layer; ``more`` the base model's
    other blocks (BLOOM's embedding norm); ``heads`` names the head modules, the same in block and module."""
    prefix = "" if head == "none" else base
    path = f"{root}.layers.layer"
    return {
        root: ("",),
        f"{root}.token": (f"{prefix}{embed}",),
        **{f"{root}.{block}": (f"{prefix}{module}",) for block, module in (more or {}).items()},
        f"{root}.layers": (f"{prefix}{layers}",),
        path: (f"{prefix}{layers}",),
        **{f"{path}.{block}": (module,) for block, module in layer.items()},
        f"{root}.final_norm": (f"{prefix}{final_norm}",),
        **{f"{root}.{name}": (name,) for name in heads},
    }


def table_values(hf: Mapping[str, Any], table: HFTable, **own: Any) -> dict[str, Any]:
    """The archzoo keys of a config.json's values (resolved as transformers resolves them), as ``table.read`` maps
    them: each read key's value under its archzoo key, a key the configuration class does not define (such as a
    ``head_dim`` the model reads when a file sets it) None when absent. Keys read only to be checked (``(checked:
    ...)``) set nothing; ``own`` gives the keys the plugin computes itself (a fraction from ``rope_parameters``)."""
    values: dict[str, Any] = {}
    for native, target in table.read.items():
        if target.startswith("(") or target in own:
            continue
        values[target] = hf[native] if native in table.defaults or native == "num_labels" else hf.get(native)
    return {**values, **own}


def rotary_fraction(rope: Any, default: float, config_class: str) -> Any:
    """The fraction of each head the rotary positions turn, as ``config_class`` resolves it: rope_parameters'
    partial_rotary_factor (which loading fills from the file's other rotary keys), else the class's ``default``. A
    rotary type transformers does not build is refused (`archzoo.hf_config.rope_type`); the other rotary settings
    change no count."""
    if rope_type(rope, config_class) is None:
        return default
    fraction = rope.get("partial_rotary_factor")
    return default if fraction is None else fraction


def architectures_hook(*architectures: Architecture) -> Callable[[Callable[[Architecture], None]], None]:
    """The plugin's ``register_architectures`` hook, registering ``architectures``:
    ``register_architectures = architectures_hook(ARCHITECTURE)``."""

    @hookimpl
    def register_architectures(register: Callable[[Architecture], None]) -> None:
        for architecture in architectures:
            register(architecture)

    return register_architectures


def hf_readers_hook(
    readers: Mapping[str, tuple[Callable[..., dict[str, Any]], str | None]],
) -> Callable[[Callable[..., None]], None]:
    """The plugin's ``register_hf_readers`` hook: each Hugging Face ``model_type`` with its reader and the
    architecture it reads into (None: the plugin's only one),
    ``register_hf_readers = hf_readers_hook({"stablelm": (_from_stablelm, "stablelm")})``."""

    @hookimpl
    def register_hf_readers(register: Callable[..., None]) -> None:
        for model_type, (reader, architecture) in readers.items():
            register(model_type, reader, architecture=architecture)

    return register_hf_readers
