"""The parts Transformer plugins build alike, under other names: the configuration keys decoders add to
`TransformerConfig`'s four and their checks, the symbols a decoder is built on, heads on top of a decoder, the
key/value heads of grouped-query attention, the reference modules and keyword arguments of a transformers decoder, and
a decoder's config.json table and readers. What every plugin registers alike, whatever its family (the ``head``
field, the label count, the registration hooks), is in `archzoo.plugin_parts`.

Each part is what several families' plugins wrote out for themselves (GPT-NeoX, StableLM, StarCoder2, Cohere,
Falcon, BLOOM, OPT, LLaMA ...): a family passes the names its transformers class uses, and keeps what is its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from pydantic import Field, model_validator

from .architecture import (
    Reference,
    TransformerConfig,
    check_activation,
    check_head_count,
    check_kv_heads,
    check_rotary_head_width,
)
from .blocks import (
    Block,
    attention,
    composite,
    embedding,
    layer_norm,
    layer_runs,
    linear,
    lm_head,
    repeat,
    runs_in_order,
    with_modules,
)
from .formula import Poly, const, sym
from .hf_vocabulary import INITIALISATION, NORM_EPSILON, TOKEN_ID, USE_CACHE, HFTable, check_padding_index, rope_type
from .plugin_parts import LABELS, head_classes, table_values
from .symbols import declare_symbol, symbol

__all__ = [
    "D_HEAD_WORDS",
    "EXPERTS",
    "KV_HEADS_WORDS",
    "LABELLED_HEADS",
    "L_GLOBAL",
    "L_SLIDING",
    "PADDING_CHECKED",
    "ROTARY_TYPE_CHECKED",
    "SPECIAL_TOKENS",
    "TOP_K",
    "WINDOW",
    "DecoderKeys",
    "DecoderSymbols",
    "HeadWidthConfig",
    "attention_modules",
    "causal_attention",
    "d_head_field",
    "decoder_descriptions",
    "decoder_heads",
    "decoder_kwargs",
    "decoder_model",
    "decoder_modules",
    "decoder_reference",
    "decoder_stack",
    "decoder_symbols",
    "decoder_table",
    "fused_attention",
    "fused_attention_modules",
    "head_dim_kwargs",
    "kv_heads",
    "kv_heads_field",
    "labels_kwargs",
    "mlp_modules",
    "partial_rotary",
    "read_partial_rotary",
    "read_rotary_decoder",
    "rotary_fraction",
    "settings_ignored",
    "window_runs",
    "windowed",
    "with_norms",
]


# ---- configuration: what decoders add to TransformerConfig's four keys ---------------------------------------


def decoder_descriptions(vocab_size: str, n_heads: str = "query heads (num_attention_heads)") -> dict[str, str]:
    """A ``DESCRIPTIONS`` table of `TransformerConfig`'s four keys as most transformers decoders name them
    (hidden_size, num_hidden_layers, num_attention_heads), with the family's words for its vocabulary and heads."""
    return dict(
        vocab_size=vocab_size,
        d_model="model width (hidden_size)",
        n_layers="decoder layers (num_hidden_layers)",
        n_heads=n_heads,
    )


#: how most decoders' ``n_kv_heads`` reads
KV_HEADS_WORDS = "key/value heads (num_key_value_heads; null = n_heads); must divide n_heads"

#: how ``d_head`` reads in a family whose transformers class takes head_dim and otherwise rounds a head down
D_HEAD_WORDS = "width of one head (head_dim; null = d_model // n_heads, rounded down as transformers does)"


def kv_heads_field(default: int | None = None, description: str = KV_HEADS_WORDS) -> Any:
    """The ``n_kv_heads`` field: the key/value heads of grouped-query attention (None: as many as the queries)."""
    return Field(default, description=description)


def d_head_field() -> Any:
    """The ``d_head`` field: a head's own width (head_dim), None for d_model // n_heads rounded down."""
    return Field(None, description=D_HEAD_WORDS)


class HeadWidthConfig(TransformerConfig):
    """Base of a decoder whose heads are ``d_head`` wide (head_dim), or ``d_model // n_heads`` rounded down as its
    transformers class rounds them, with grouped key/value heads and rotary positions: the family declares
    ``n_kv_heads`` (`kv_heads_field`), ``d_head`` (`d_head_field`) and ``activation``; this checks them the way the
    class fails on them (an unknown activation, more heads than channels, key/value heads that do not divide the
    queries, an odd head width the rotary positions cannot turn) and gives ``head_width``."""

    HEADS_DIVIDE_WIDTH: ClassVar = False  # a head is d_head wide, or d_model // n_heads rounded down

    if TYPE_CHECKING:  # the family's own fields, declared in its class (they keep its order of keys)
        n_kv_heads: int | None
        d_head: int | None
        activation: str

    @model_validator(mode="after")
    def _check_head_width(self) -> Self:
        check_activation(self.activation)
        if self.d_head is None:
            check_head_count(self.d_model, self.n_heads, "or give d_head")
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_rotary_head_width(self.d_model, self.n_heads, self.d_head)
        return self

    @property
    def head_width(self) -> int:
        """A head's width: ``d_head``, else ``d_model // n_heads`` rounded down."""
        return self.d_head or self.d_model // self.n_heads


class DecoderKeys(Protocol):
    """What a decoder's configuration names alike (`TransformerConfig`'s four keys, or a family's own of the same
    names)."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def n_layers(self) -> int: ...
    @property
    def n_heads(self) -> int: ...


@dataclass(frozen=True)
class DecoderSymbols:
    """The symbols a decoder's tree is built on: the width ``d``, the vocabulary ``V``, the layers ``L``, the query
    heads ``h`` of ``d_h`` channels, and the queries' width ``inner``."""

    d: Poly
    V: Poly
    L: Poly
    h: Poly
    d_h: Poly
    inner: Poly


def decoder_symbols(cfg: DecoderKeys) -> DecoderSymbols:
    """The symbols of ``cfg``: a head is its ``d_head`` wide when the family has that key and it is set, else
    ``d_model // n_heads`` rounded down; the queries are ``d`` wide when the heads divide it with no ``d_head``,
    else ``h·d_h``."""
    d_head = getattr(cfg, "d_head", None)
    d = symbol("d", cfg.d_model)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", d_head or cfg.d_model // cfg.n_heads)
    inner = d if d_head is None and cfg.d_model % cfg.n_heads == 0 else h * d_h
    return DecoderSymbols(d, symbol("V", cfg.vocab_size), symbol("L", cfg.n_layers), h, d_h, inner)


def kv_heads(n_heads: int, n_kv_heads: int | None, h: Poly, d_h: Poly, inner: Poly) -> tuple[Poly, Poly]:
    """The key/value heads and the width of the keys (and of the values): ``h`` and the queries' ``inner`` when
    every query head has its own (``n_kv_heads`` None or ``n_heads``), else the symbol h_kv and h_kv·d_h
    (grouped- or multi-query attention)."""
    kv = n_heads if n_kv_heads is None else n_kv_heads
    if kv == n_heads:
        return h, inner
    h_kv = sym("h_kv", kv, latex="h_{kv}", meaning="key/value heads (n_kv_heads)", order=21)
    return h_kv, h_kv * d_h


#: the width of a sliding window, in the decode formula of a layer that masks by one (past the window)
WINDOW = declare_symbol("W", latex="W", meaning="sliding window (sliding_window)", order=4)


def windowed(attention_block: Block, window: int | None) -> Block:
    """``attention_block`` in a layer that masks by a sliding window of ``window`` tokens (None: no window).
    transformers' sliding cache layer keeps the last ``W - 1`` tokens and the step reading a new token attends to
    ``W`` keys, so past the window the decode step reads ``W`` for ``N`` (`archzoo.report.Report.decode_formula`);
    parameters and eager FLOPs are the same under either mask."""
    return attention_block if window is None else replace(attention_block, window=WINDOW(window))


#: the experts of each layer of a mixture of experts, and how many of them each token runs
EXPERTS = declare_symbol("E", latex="E", meaning="experts in each layer (n_experts)", order=4)
TOP_K = declare_symbol("k", latex="k", meaning="experts each token runs (top_k)", order=5)

#: the layers of each kind in a stack of sliding-window and global layers (`window_runs`)
L_SLIDING = declare_symbol("L_s", latex="L_{s}", meaning="sliding-window layers", order=2)
L_GLOBAL = declare_symbol("L_g", latex="L_{g}", meaning="global attention layers", order=3)


def window_runs(slides: Sequence[bool], sliding_layer: Block, global_layer: Block, *, description: str) -> Block:
    """A stack whose layers mask by a sliding window or attend to every token, in order (``slides``: whether each
    layer masks by the window; both kinds present): the runs (`archzoo.blocks.layer_runs`) of ``sliding_layer``,
    whose attention is `windowed`, and of ``global_layer``, counted as ``L_s`` and ``L_g``. Parameters and forward
    FLOPs are the same in both kinds; the KV cache and the decode step past the window differ, run by run."""
    n_sliding = sum(slides)
    counts = {sliding_layer.name: L_SLIDING(n_sliding), global_layer.name: L_GLOBAL(len(slides) - n_sliding)}
    runs = runs_in_order(sliding_layer if slide else global_layer for slide in slides)
    return layer_runs("layers", runs, counts=counts, description=description)


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


def fused_attention(d: Poly, qkv_width: Poly, *, bias: bool, qkv: str, scores: str, description: str) -> Block:
    """Causal self-attention whose queries, keys and values come out of one fused linear, ``qkv_proj`` from ``d`` to
    ``qkv_width`` (described as ``qkv``), then the attention products over all heads (``scores``) and ``out_proj``;
    biases on both linears when ``bias``. Its KV cache is multi-head attention's, ``2 d`` a token: a family whose
    cache differs sets its own."""
    split = attention("attention", d, d, causal=True, bias=bias)  # for its attention products and its KV cache
    core = next(child for child in split.children if child.kind == "attention_core")
    fused = composite(
        "attention",
        "self_attention",
        [
            linear("qkv_proj", d, qkv_width, bias=bias, description=qkv),
            replace(core, description=scores),
            linear("out_proj", d, d, bias=bias),
        ],
        description,
    )
    return replace(fused, kv_cache=split.kv_cache)


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


def decoder_model(
    cfg: Any,
    name: str,
    description: str,
    layer: Block,
    s: DecoderSymbols,
    modules: dict[str, tuple[str, ...]],
    *,
    token: str,
    final_norm: Block | None = None,
    **heads: Any,
) -> Block:
    """A decoder's whole tree, ``name`` (described as ``description``): `decoder_stack` of ``layer`` (its token
    embedding's module ``token``, its ``final_norm``), then `decoder_heads` for the configuration's ``head``, tied
    by its ``tie_embeddings``, with its ``num_labels`` when it has that key (``heads``: that function's other
    keywords), mapped to the reference's ``modules`` (`archzoo.blocks.with_modules`)."""
    children = [
        *decoder_stack(layer, s.d, s.V, s.L, token=token, final_norm=final_norm),
        *decoder_heads(cfg.head, s.d, s.V, tied=cfg.tie_embeddings, num_labels=getattr(cfg, "num_labels", 2), **heads),
    ]
    return with_modules(composite(name, "model", children, description), modules)


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


def fused_attention_modules(module: str, qkv: str, out: str) -> dict[str, str]:
    """The block -> submodule rows of a `fused_attention` (``module`` its name in the layer, ``qkv`` its fused
    projection's, ``out`` its output projection's)."""
    return {"attention": module, "attention.qkv_proj": f"{module}.{qkv}", "attention.out_proj": f"{module}.{out}"}


def mlp_modules(fc_in: str, fc_out: str, *, gate: str | None = None, module: str = "mlp") -> dict[str, str]:
    """The block -> submodule rows of a feed-forward (``module`` its name in the layer; its up, down and, gated, gate
    projections' names)."""
    rows = {"mlp": module, "mlp.fc_in": f"{module}.{fc_in}"}
    if gate is not None:
        rows["mlp.fc_gate"] = f"{module}.{gate}"
    rows["mlp.fc_out"] = f"{module}.{fc_out}"
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
    runs: tuple[str, ...] = (),
) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in a transformers decoder class (for `archzoo verify`): block path ->
    submodule names. The base model's modules sit under ``base`` in a head class (none in the base model, head
    ``none``); ``layer`` maps a layer's blocks to its submodules, relative to the layer; ``more`` the base model's
    other blocks (BLOOM's embedding norm); ``heads`` names the head modules, the same in block and module. ``runs``
    names the layers of a stack of runs (`window_runs`' ``sliding_layer`` and ``global_layer``), mapped like the one
    repeated layer: the runs share the module list, copy i of a run being its layer i."""
    prefix = "" if head == "none" else base
    paths = [f"{root}.layers.layer", *(f"{root}.layers.{run}s.{run}" for run in runs)]
    return {
        root: ("",),
        f"{root}.token": (f"{prefix}{embed}",),
        **{f"{root}.{block}": (f"{prefix}{module}",) for block, module in (more or {}).items()},
        f"{root}.layers": (f"{prefix}{layers}",),
        **{path: (f"{prefix}{layers}",) for path in paths},
        **{f"{path}.{block}": (module,) for path in paths for block, module in layer.items()},
        f"{root}.final_norm": (f"{prefix}{final_norm}",),
        **{f"{root}.{name}": (name,) for name in heads},
    }


#: the head classes whose configuration takes num_labels in most decoders
LABELLED_HEADS = ("sequence_classification", "token_classification")


def decoder_kwargs(cfg: Any) -> dict[str, Any]:
    """The keyword arguments most transformers decoder configurations name alike, in their usual order: the
    vocabulary, width, layers, heads, key/value heads (when the family has ``n_kv_heads``; null: ``n_heads``), the
    feed-forward's width, the context and the activation."""
    kwargs: dict[str, Any] = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
    )
    if hasattr(cfg, "n_kv_heads"):
        kwargs["num_key_value_heads"] = cfg.n_kv_heads or cfg.n_heads
    kwargs.update(intermediate_size=cfg.d_ff, max_position_embeddings=cfg.max_positions, hidden_act=cfg.activation)
    return kwargs


def head_dim_kwargs(cfg: Any) -> dict[str, Any]:
    """``head_dim`` when the configuration gives ``d_head`` (transformers' class then reads it), else nothing."""
    return {} if cfg.d_head is None else {"head_dim": cfg.d_head}


def labels_kwargs(cfg: Any, heads: tuple[str, ...] = LABELLED_HEADS) -> dict[str, Any]:
    """``num_labels`` for a head class among ``heads`` (those that read it), else nothing."""
    return {"num_labels": cfg.num_labels} if cfg.head in heads else {}


def partial_rotary(fraction: float) -> dict[str, Any]:
    """``rope_parameters`` turning ``fraction`` of each head, with transformers' default type and base."""
    return {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": fraction}


def decoder_reference(classes: Mapping[str, str], head: str, config_class: str, kwargs: dict[str, Any]) -> Reference:
    """The transformers class of ``head`` (``classes``: archzoo's head -> class), built from ``config_class`` (a
    name in ``transformers``) with ``kwargs``."""
    return Reference(
        library="transformers",
        target=f"transformers.{classes[head]}",
        config_class=f"transformers.{config_class}",
        kwargs=kwargs,
    )


def rotary_fraction(rope: Any, default: float, config_class: str) -> Any:
    """The fraction of each head the rotary positions turn, as ``config_class`` resolves it: rope_parameters'
    partial_rotary_factor (which loading fills from the file's other rotary keys), else the class's ``default``. A
    rotary type transformers does not build is refused (`archzoo.hf_config.rope_type`); the other rotary settings
    change no count."""
    if rope_type(rope, config_class) is None:
        return default
    fraction = rope.get("partial_rotary_factor")
    return default if fraction is None else fraction


#: what a decoder's table reads ``pad_token_id`` for: an index, not a size, read only to refuse what transformers'
#: nn.Embedding refuses (`read_rotary_decoder`)
PADDING_CHECKED = "(checked: inside the vocabulary)"

#: what a decoder's table reads ``rope_parameters`` for when the family turns whole heads: rotary settings change no
#: count, and a type transformers does not build is refused (`read_rotary_decoder`)
ROTARY_TYPE_CHECKED = "(checked: a rotary type transformers builds)"

#: the special tokens' ids, which most decoders' configurations hold and no module sizes anything by
SPECIAL_TOKENS = {"bos_token_id": TOKEN_ID, "eos_token_id": TOKEN_ID}


def settings_ignored(norm_epsilon: str = "layer_norm_eps") -> dict[str, str]:
    """What most decoders' tables ignore, in their usual order: the initialisation's range, the norms' epsilon
    (under the family's key ``norm_epsilon``), the cache switch and the special tokens' ids; none sizes anything."""
    return {"initializer_range": INITIALISATION, norm_epsilon: NORM_EPSILON, "use_cache": USE_CACHE, **SPECIAL_TOKENS}


def decoder_table(
    model_type: str,
    config_class: str,
    classes: Mapping[str, str],
    *,
    defaults: Mapping[str, Any],
    read: Mapping[str, str],
    ignored: Mapping[str, str],
    aliases: Mapping[str, str] | None = None,
) -> HFTable:
    """The `HFTable` of a decoder's ``model_type``, whose head classes are ``classes`` (archzoo's head ->
    transformers' class; the base model, head ``none``, is the class AutoModel builds), with nothing refused."""
    return HFTable(
        model_type=model_type,
        config_class=config_class,
        defaults=defaults,
        aliases=aliases or {},
        read=read,
        ignored=ignored,
        refused={},
        base_class=classes["none"],
        classes=head_classes(classes),
    )


def read_partial_rotary(hf: Mapping[str, Any], table: HFTable, default: float) -> dict[str, Any]:
    """A decoder's values (`table_values`) with the fraction of each head its rotary positions turn
    (`rotary_fraction`; ``default``: the configuration class's own when neither rope_parameters nor the file's
    partial_rotary_factor sets it), after refusing a padding index outside the vocabulary."""
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    fraction = rotary_fraction(hf["rope_parameters"], default, table.config_class)
    return table_values(hf, table, rotary_fraction=fraction)


def read_rotary_decoder(hf: Mapping[str, Any], table: HFTable) -> dict[str, Any]:
    """A rotary decoder's values (`table_values`), after refusing what its transformers class cannot build: a
    padding index outside the vocabulary (``pad_token_id``, which ``nn.Embedding`` refuses) and a rotary type it
    does not know (the other rotary settings change no count)."""
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    rope_type(hf["rope_parameters"], table.config_class)
    return table_values(hf, table)
