"""archzoo plugin: LLaMA-style decoders (RMSNorm, gated feed-forward, grouped-query attention, rotary positions).

One configuration covers the family transformers builds with the same modules: Llama, Mistral, Qwen2
(biases on q/k/v only), Gemma (a head width that is not d_model / n_heads, a tied head), OLMo (a layer
norm with no weight or bias) and Phi-3 (q/k/v and gate/up fused into one linear each: the same weights
and FLOPs). Rotary positions have no parameters, and their angles cost no matmul FLOPs in transformers'
eager forward pass (FlopCounterMode counts none), so they appear in no formula.

Three newer families have architectures of their own, built by the same layer builder:

* ``qwen3``: Qwen3's layers add QK-norm, an RMSNorm of width d_head applied to every query head and one to every
  key head before the scores (2 d_head parameters a layer, no matmul FLOPs), with a head width given explicitly
  (Qwen3-0.6B: 16 heads of 128 in a 1,024-wide model). With ``n_experts`` above 0 it is Qwen3-MoE: a router
  ``Linear(d, E)`` and ``E`` gated experts of which each token runs ``k``, no shared expert.
* ``olmo2``: OLMo 2 norms the outputs of attention and of the feed-forward, before each residual add, instead of
  their inputs (the same two RMSNorms of width d a layer), and its QK-norm spans the whole query projection
  (``h d_h``) and the whole key projection (``h_kv d_h``).
* ``granite``: IBM Granite 3.0 is Llama's layers with four constant multipliers (on the embeddings, each residual
  branch, the attention scores and the logits): elementwise products, so they change no count.

A second architecture, ``moe``, is the same decoder with a mixture of gated experts in place of the
feed-forward: a bias-free router ``Linear(d, E)``, ``E`` stored experts of which each token runs ``k``
(`archzoo.blocks.experts`: the total counts all ``E``, the active parameters ``k``, the FLOPs the ``N k`` expert
evaluations), and optionally Qwen2-MoE's shared expert, run for every token behind a sigmoid gate
``Linear(d, 1)``. It covers Mixtral and Qwen2-MoE.

Qwen2-MoE and Qwen3-MoE may leave layers without experts: a layer ``i`` has them when ``(i + 1)`` is a multiple of
``decoder_sparse_step`` and ``i`` is not in ``mlp_only_layers``; the others have a dense gated feed-forward of
``intermediate_size``. Such a stack is an `archzoo.blocks.layer_runs` of two runs, ``dense_layers`` and
``moe_layers``, each with the positions of its layers, so the parameters, active parameters, FLOPs and KV cache
are summed over the runs (symbols ``L_dense`` and ``L_moe``).

Sliding windows (Mistral's, Phi-3's and Mixtral's ``sliding_window`` on every layer; Qwen2's, Qwen2-MoE's and
Qwen3's ``use_sliding_window`` with ``max_window_layers`` or ``layer_types``; Qwen3-MoE's on every layer) mask the same score products, which
eager attention computes in full: no parameters and the same forward FLOPs. The configuration carries the window
(``sliding_window``) and, where not every layer masks by it, each layer's kind (``layer_types``), as the config.json
readers derive them the way each transformers configuration class does; a window transformers cannot run (under one
token, sliding layers without one, ``layer_types`` of the wrong length or kinds) is refused. Every layer caches
``2 h_kv d_h`` key/value elements per token; transformers' ``DynamicCache`` keeps at most ``W - 1`` tokens between
steps in a layer that masks by a window of ``W``, and the step reading a new token attends to ``W`` keys there. Where
every layer masks by the window (Mistral, Phi-3, Mixtral, Qwen3-MoE), each layer's attention carries it (``window``),
so past it the decode step reads ``W`` for ``N`` (`archzoo.report.Report.decode_formula`). Where only some layers do
(Qwen2, Qwen2-MoE and Qwen3 from ``max_window_layers`` on, or as ``layer_types`` says), the stack is runs of
sliding-window and global layers (`archzoo.decoder_parts.window_runs`), and only the sliding runs read ``W``. ``N``
defaults to the context length either way.

Exact, for every configuration transformers 5.23 builds: parameters (on the meta device), active parameters,
and forward FLOPs of an eager pass (FlopCounterMode), for the base model and every head class of each type
(causal LM, sequence and token classification, question answering where the type has them); training, prefill
and decode FLOPs and the KV cache follow from the same tree. A configuration no transformers class builds is
counted with no reference to check it against.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal, NamedTuple, Self

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, field_validator, model_validator
from pydantic.fields import FieldInfo

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import (
    MAX_SIZE,
    TransformerConfig,
    check_activation,
    check_heads,
    check_kv_heads,
    check_rotary_head_width,
)
from archzoo.blocks import (
    Block,
    attention,
    check_run_layers,
    composite,
    embedding,
    experts,
    feed_forward,
    layer_norm,
    layer_runs,
    linear,
    lm_head,
    repeat,
    rms_norm,
    runs_in_order,
    with_modules,
)
from archzoo.decoder_parts import EXPERTS, TOP_K, kv_heads, window_runs, windowed
from archzoo.formula import Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    ROPE_TYPES,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    check_padding_index,
    hf_reader,
)
from archzoo.plugin_parts import LABELS, NumLabels, PadTokenId, num_labels_field, pad_token_id_field
from archzoo.symbols import declare_symbol, symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"


#: The heads of transformers' classes of these types (*Model, *ForCausalLM, *ForSequenceClassification, ...).
HEADS = ("lm", "none", "sequence_classification", "token_classification", "question_answering")


class LayerKinds(NamedTuple):
    """How many layers of a stack mask by the sliding window and how many attend to every token, and the kind of the
    first (the kind of every layer, in a stack of one kind)."""

    sliding: int
    full: int
    first_slides: bool

    @property
    def one_kind(self) -> bool:
        """Whether every layer is of one kind: all mask by the window, or none does."""
        return (self.sliding == 0) != (self.full == 0)


class DecoderConfig(TransformerConfig):
    """The keys every LLaMA-style decoder shares (attention, norms, embeddings, head); defaults are
    TinyLlama-1.1B (Zhang et al. 2024). `LlamaConfig` adds a dense feed-forward, `MoEConfig` experts; the other
    families change their values in ``DEFAULTS`` (`archzoo.architecture.TransformerConfig`)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=32000, d_model=2048, n_layers=22, n_heads=32)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="vocabulary size", d_model="model width", n_layers="decoder layers", n_heads="query heads"
    )

    #: the name of the architecture this configuration builds, the root of its block tree, and the root's description
    ROOT: ClassVar[str] = "llama"
    TITLE: ClassVar[str] = "LLaMA-style decoder"
    HEADS_DIVIDE_WIDTH: ClassVar = False  # unless d_head is given: checked below, with the hint to give it
    n_kv_heads: PositiveInt | None = Field(
        4, description="key/value heads (grouped- or multi-query attention; null = n_heads); must divide n_heads"
    )
    d_head: PositiveInt | None = Field(None, description="width of one head (null = d_model / n_heads; Gemma 7B: 256)")
    max_positions: PositiveInt = Field(2048, description="context length (rotary positions: no parameters)")
    tie_embeddings: bool = Field(False, description="LM head shares the token embedding matrix (Gemma)")
    norm: Literal["rms_norm", "layer_norm_no_affine"] = Field(
        "rms_norm",
        description="rms_norm (a weight of width d_model) or layer_norm_no_affine (OLMo: no weight, no bias)",
    )
    activation: str = Field(
        "silu", description="activation of the gate: silu (SwiGLU), gelu_pytorch_tanh (GeGLU, Gemma)"
    )
    qk_norm: Literal["none", "per_head", "whole"] = Field(
        "none",
        description="RMSNorm of the queries and keys before the scores: none, per_head (Qwen3: one RMSNorm(d_head) "
        "applied to every head) or whole (OLMo 2: RMSNorm over the whole query projection and the whole key "
        "projection)",
    )
    norm_after: bool = Field(
        False,
        description="a layer's two norms act on the outputs of attention and of the feed-forward, before the "
        "residual add (OLMo 2), instead of on their inputs",
    )
    qkv_bias: bool = Field(False, description="biases on the query, key and value projections (Qwen2)")
    out_bias: bool = Field(False, description="bias on the attention output projection")
    mlp_bias: bool = Field(False, description="biases on the gate, up and down projections")
    head: Literal[HEADS] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (*ForCausalLM), none (the base *Model), sequence_classification (a bias-free score "
        "layer on every token, the last one's kept), token_classification (a score layer with bias on every "
        "token) or question_answering (Linear(d_model, 2) on every token): transformers' *For... classes",
    )
    num_labels: NumLabels = num_labels_field()
    pad_token_id: PadTokenId = pad_token_id_field()

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_padding_index(self.vocab_size, self.pad_token_id)
        if self.d_head is None:
            check_heads(self.d_model, self.n_heads, ", or give d_head explicitly (Gemma 7B: n_heads 16, d_head 256)")
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_rotary_head_width(self.d_model, self.n_heads, self.d_head)
        check_activation(self.activation)
        return self

    def layer_kinds(self) -> LayerKinds:
        """The kinds of the layers, counted: none masks by a window in a configuration without window keys."""
        return LayerKinds(0, self.n_layers, False)


SLIDING: Final = "sliding_attention"
FULL: Final = "full_attention"


class WindowedConfig(DecoderConfig):
    """A decoder whose layers may mask by a sliding window (Mistral, Qwen2, Phi-3, Mixtral, Qwen2-MoE, Qwen3): the
    window's width and which layers mask by it. No parameter or eager FLOP depends on them; the KV cache and the
    decode step do beyond the window (`_stack`: a sliding layer's attention is `windowed`)."""

    sliding_window: PositiveInt | None = Field(
        None,
        description="tokens a layer that masks by a sliding window attends to (null: no window)",
    )
    layer_types: list[Literal["sliding_attention", "full_attention"]] | None = Field(
        None,
        description="each layer's kind, sliding_attention or full_attention (null: every layer masks by "
        "sliding_window, where one is given)",
    )

    @model_validator(mode="after")
    def _check_window(self) -> Self:
        if self.layer_types is None:
            return self
        if len(self.layer_types) != self.n_layers:
            raise ValueError(
                f"layer_types: {len(self.layer_types)} entries for {self.n_layers} layers; give one kind per layer "
                "(as transformers requires) or null"
            )
        if self.sliding_window is None:
            raise ValueError(
                "layer_types: given without a sliding_window, which says the width of the sliding_attention "
                "layers; give sliding_window, or null for layer_types"
            )
        if SLIDING not in self.layer_types:
            raise ValueError(
                "layer_types: no layer masks by the sliding window; give sliding_window null for a model without "
                "one (and layer_types null)"
            )
        return self

    def layer_kinds(self) -> LayerKinds:
        """The kinds of the layers, counted: the work is the length of ``layer_types`` where one is given, and none
        otherwise, however many layers the stack has."""
        if self.sliding_window is None:
            return LayerKinds(0, self.n_layers, False)
        if self.layer_types is None:
            return LayerKinds(self.n_layers, 0, self.n_layers > 0)
        sliding = self.layer_types.count(SLIDING)
        return LayerKinds(sliding, self.n_layers - sliding, self.layer_types[0] == SLIDING)

    def sliding_layers(self) -> list[bool]:
        """Whether each layer masks by the window (all of them when layer_types is null and a window is given): one
        entry per layer, for a reference's layer_types; the formulas count the kinds (`layer_kinds`)."""
        if self.sliding_window is None:
            return [False] * self.n_layers
        if self.layer_types is None:
            return [True] * self.n_layers
        return [kind == SLIDING for kind in self.layer_types]


class DenseConfig(DecoderConfig):
    """A LLaMA-style decoder with one gated feed-forward in every layer: OLMo 2 and Granite as they are, and
    `LlamaConfig`, which adds sliding windows."""

    d_ff: PositiveInt = Field(5632, description="hidden width of the gated feed-forward (gate and up projections)")
    family: Literal["llama", "mistral", "qwen2", "gemma", "olmo", "phi3", "qwen3", "olmo2", "granite"] = Field(
        "llama",
        description="the transformers classes `archzoo verify` builds for this configuration (no effect on "
        "counts); another family is used where this one cannot build it",
    )


class LlamaConfig(WindowedConfig, DenseConfig):
    """A LLaMA-style decoder; defaults are TinyLlama-1.1B (Zhang et al. 2024)."""


def _default(name: str, value: Any, base: type[ArchConfig]) -> Any:
    """``base``'s field ``name`` (its description and constraints) with another default, for a class that is not a
    subclass of ``base`` (an inherited field takes its value from the class's ``DEFAULTS``)."""
    return FieldInfo.merge_field_infos(base.model_fields[name], default=value)


class Olmo2Config(DenseConfig):
    """An OLMo 2 decoder: RMSNorms after attention and the feed-forward, QK-norm over the whole projections;
    defaults are OLMo 2 7B (allenai/OLMo-2-1124-7B config.json; OLMo et al. 2024, 2 OLMo 2 Furious,
    arXiv:2501.00656, Table 1)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(
        vocab_size=100352,
        d_model=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=None,
        max_positions=4096,
        qk_norm="whole",
        norm_after=True,
        d_ff=11008,
        family="olmo2",
    )

    ROOT: ClassVar[str] = "olmo2"
    TITLE: ClassVar[str] = "OLMo 2 decoder"


class GraniteConfig(DenseConfig):
    """An IBM Granite 3.0 decoder: Llama's layers with multipliers on the embeddings, residuals, attention scores
    and logits, which change no count; defaults are Granite 3.0 8B (ibm-granite/granite-3.0-8b-base config.json)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(
        vocab_size=49155,
        d_model=4096,
        n_layers=40,
        n_heads=32,
        n_kv_heads=8,
        max_positions=4096,
        tie_embeddings=True,
        d_ff=12800,
        family="granite",
    )

    ROOT: ClassVar[str] = "granite"
    TITLE: ClassVar[str] = "Granite decoder"


class MoEConfig(WindowedConfig):
    """A LLaMA-style decoder whose feed-forward is a mixture of experts; defaults are Mixtral 8x7B
    (Jiang et al. 2024, Table 1)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(d_model=4096, n_layers=32, n_kv_heads=8, max_positions=32768)

    ROOT: ClassVar[str] = "moe"
    TITLE: ClassVar[str] = "LLaMA-style mixture-of-experts decoder"

    n_experts: PositiveInt = Field(8, description="experts in each layer's mixture (all stored)")
    top_k: PositiveInt = Field(2, description="experts each token runs through in each layer (at most n_experts)")
    d_ff_expert: PositiveInt = Field(
        14336, description="hidden width of one expert's gated feed-forward (Qwen2-MoE: moe_intermediate_size)"
    )
    d_ff_shared: NonNegativeInt = Field(
        0,
        description="hidden width of the shared expert every token runs through, scaled by a sigmoid gate "
        "Linear(d_model, 1) (Qwen2-MoE: shared_expert_intermediate_size); 0 = no shared expert",
    )
    sparse_step: PositiveInt = Field(
        1,
        description="every sparse_step-th layer (layers sparse_step - 1, 2 sparse_step - 1, ... counted from 0) has "
        "experts, the others a dense gated feed-forward of width d_ff (Qwen2-MoE: decoder_sparse_step)",
    )
    dense_layers: tuple[NonNegativeInt, ...] = Field(
        (),
        description="layers (counted from 0) with a dense gated feed-forward of width d_ff instead of experts "
        "(Qwen2-MoE: mlp_only_layers)",
    )
    d_ff: PositiveInt | None = Field(
        None,
        description="hidden width of the dense gated feed-forward of the layers without experts (Qwen2-MoE: "
        "intermediate_size); needed when sparse_step or dense_layers leave a layer without experts",
    )
    # the router's settings: no parameters and no matmul FLOPs, but what a training step saves follows them
    norm_topk_prob: bool = Field(
        False,
        description="Qwen2-MoE's and Qwen3-MoE's router renormalises the chosen experts' weights to sum to one "
        "(norm_topk_prob; their classes' default false; Mixtral's router always does)",
    )
    router_jitter_noise: NonNegativeFloat = Field(
        0.0, description="Mixtral's router scales its input by random factors in training (router_jitter_noise)"
    )
    output_router_logits: bool = Field(
        False, description="the forward pass also computes the router's auxiliary loss (output_router_logits)"
    )
    family: Literal["mixtral", "qwen2_moe", "qwen3_moe"] = Field(
        "mixtral",
        description="the transformers classes `archzoo verify` builds for this configuration (no effect on "
        "counts); another family is used where this one cannot build it",
    )

    @field_validator("dense_layers", mode="before")
    @classmethod
    def _dense_layers_list(cls, value: Any) -> Any:
        # YAML and --set write a sequence as a list; the configuration keeps it as a tuple (it is frozen)
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _check_experts(self) -> Self:
        _check_expert_layout(self.n_experts, self.top_k, self.n_layers, self.sparse_step, self.dense_layers, self.d_ff)
        return self

    def has_experts(self, layer: int) -> bool:
        """Whether layer ``layer`` (from 0) has the mixture of experts, as Qwen2MoeDecoderLayer decides."""
        return _has_experts(layer, self.sparse_step, self.dense_layers)


def _has_experts(layer: int, sparse_step: int, dense_layers: tuple[int, ...]) -> bool:
    """Qwen2MoeDecoderLayer's and Qwen3MoeDecoderLayer's rule: experts unless listed, on every step-th layer."""
    return layer not in dense_layers and (layer + 1) % sparse_step == 0


def _expert_layers(n_layers: int, sparse_step: int, dense_layers: tuple[int, ...]) -> int:
    """How many of ``n_layers`` layers have experts by `_has_experts`' rule, counted, not listed: every step-th layer
    (``n_layers // sparse_step`` of them) less the listed ones among those."""
    listed = {i for i in dense_layers if i < n_layers and (i + 1) % sparse_step == 0}
    return n_layers // sparse_step - len(listed)


def _check_expert_layout(
    n_experts: int, top_k: int, n_layers: int, sparse_step: int, dense_layers: tuple[int, ...], d_ff: int | None
) -> None:
    if top_k > n_experts:
        raise ValueError(
            f"top_k: each token cannot run through {top_k} of {n_experts} experts; "
            f"choose top_k between 1 and n_experts ({n_experts})"
        )
    if outside := [i for i in dense_layers if i >= n_layers]:
        raise ValueError(
            f"dense_layers: layer {outside[0]} is not one of the {n_layers} layers (0 to "
            f"{n_layers - 1}); list only layers of the stack"
        )
    if len(set(dense_layers)) != len(dense_layers):
        raise ValueError("dense_layers: a layer is listed twice; list each layer once")
    with_experts = _expert_layers(n_layers, sparse_step, dense_layers)
    if 0 < with_experts < n_layers:
        check_run_layers(n_layers)  # layers with and without experts make runs, listed layer by layer
    if d_ff is None and with_experts < n_layers:
        raise ValueError(
            "d_ff: sparse_step and dense_layers leave layers with a dense feed-forward, whose width d_ff "
            "is not given; give d_ff (Qwen2-MoE: intermediate_size)"
        )


class Qwen3MoEConfig(MoEConfig):
    """A `Qwen3Config` with experts, as the mixture-of-experts builder reads it (`Qwen3Config.as_moe`): QK-norm
    over each head, an explicit head width, no shared expert; defaults are Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B
    config.json; Qwen3 Technical Report, arXiv:2505.09388, Table 2)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(
        vocab_size=151936,
        d_model=2048,
        n_layers=48,
        n_heads=32,
        n_kv_heads=4,
        d_head=128,
        max_positions=40960,
        qk_norm="per_head",
        n_experts=128,
        top_k=8,
        d_ff_expert=768,
        family="qwen3_moe",
    )

    ROOT: ClassVar[str] = "qwen3"
    TITLE: ClassVar[str] = "Qwen3 mixture-of-experts decoder"


class Qwen3Config(LlamaConfig):
    """A Qwen3 decoder: QK-norm over each head, an explicit head width; with ``n_experts`` above 0, Qwen3-MoE's
    mixture of experts (no shared expert) in every layer but those sparse_step and dense_layers leave dense.
    Defaults are Qwen3-8B (Qwen/Qwen3-8B config.json; Yang et al. 2025, Qwen3 Technical Report, arXiv:2505.09388,
    Table 1)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(
        vocab_size=151936,
        d_model=4096,
        n_layers=36,
        n_heads=32,
        n_kv_heads=8,
        d_head=128,
        max_positions=40960,
        qk_norm="per_head",
        family="qwen3",
    )

    ROOT: ClassVar[str] = "qwen3"
    TITLE: ClassVar[str] = "Qwen3 decoder"
    d_ff: PositiveInt = Field(
        12288,
        description="hidden width of the gated feed-forward of every layer without experts (all of them when "
        "n_experts is 0; Qwen3-MoE: intermediate_size)",
    )
    n_experts: NonNegativeInt = Field(
        0,
        description="experts in each mixture-of-experts layer (Qwen3-MoE: num_experts); 0 = the dense Qwen3, "
        "every layer a gated feed-forward of width d_ff",
    )
    top_k: PositiveInt = _default("top_k", 8, MoEConfig)
    d_ff_expert: PositiveInt = _default("d_ff_expert", 768, MoEConfig)
    sparse_step: PositiveInt = _default("sparse_step", 1, MoEConfig)
    dense_layers: tuple[NonNegativeInt, ...] = _default("dense_layers", (), MoEConfig)
    norm_topk_prob: bool = _default("norm_topk_prob", False, MoEConfig)
    output_router_logits: bool = _default("output_router_logits", False, MoEConfig)

    @model_validator(mode="after")
    def _check_experts(self) -> Self:
        if self.n_experts:
            _check_expert_layout(
                self.n_experts, self.top_k, self.n_layers, self.sparse_step, self.dense_layers, self.d_ff
            )
        return self

    def as_moe(self) -> Qwen3MoEConfig:
        """This configuration as the mixture-of-experts builder reads it (only when ``n_experts`` is above 0)."""
        return Qwen3MoEConfig(**self.model_dump(exclude={"family"}), family="qwen3_moe")


# ---- the block tree: one layer builder for the dense and the mixture-of-experts decoder --------------

E = EXPERTS  # the shared symbols of a mixture of experts (archzoo.decoder_parts)
K = TOP_K
D_EXPERT = declare_symbol("d_e", latex="d_{e}", meaning="width of one expert (d_ff_expert)", order=24)
L_MOE = declare_symbol("L_moe", latex="L_{\\mathrm{moe}}", meaning="layers with experts", order=1)
L_DENSE = declare_symbol(
    "L_dense", latex="L_{\\mathrm{dense}}", meaning="layers with a dense feed-forward instead of experts", order=2
)
D_SHARED = declare_symbol("d_s", latex="d_{s}", meaning="width of the shared expert (d_ff_shared)", order=25)


def _norm(name: str, d: Poly, cfg: DecoderConfig) -> Block:
    if cfg.norm == "rms_norm":
        return rms_norm(name, d)
    return layer_norm(name, d, affine=False)  # OLMo's: neither weight nor bias


def _gated_kind(cfg: DecoderConfig) -> str:
    return "SwiGLU" if cfg.activation in ("silu", "swish") else f"{cfg.activation}-gated"


def _gated(name: str, d: Poly, width: Poly, cfg: DecoderConfig, what: str) -> Block:
    return feed_forward(
        name,
        d,
        width,
        activation=cfg.activation,
        gated=True,
        bias=cfg.mlp_bias,
        description=f"{what} ({_gated_kind(cfg)}): gate, up and down projections",
    )


def _layer(cfg: DecoderConfig, name: str, mlp: Block, mlp_text: str, *, slides: bool | None = None) -> Block:
    """One decoder layer: norm, attention, add; norm, ``mlp``, add (pre-norm), or attention, norm, add; ``mlp``,
    norm, add (``norm_after``, OLMo 2). The norms hold the same parameters either way. Its attention masks by the
    sliding window where ``slides`` says (None: where every layer of the stack does)."""
    d = symbol("d", cfg.d_model)
    h = symbol("h", cfg.n_heads)
    d_h = symbol("d_h", cfg.d_head or cfg.d_model // cfg.n_heads)
    inner = d if cfg.d_head is None else h * d_h
    h_kv, kv_inner = kv_heads(cfg.n_heads, cfg.n_kv_heads, h, d_h, inner)
    norm_name = "RMSNorm" if cfg.norm == "rms_norm" else "LayerNorm without parameters"
    q_norm = k_norm = None
    if cfg.qk_norm == "per_head":  # one RMSNorm(d_head) applied to every head of the queries, one to the keys
        q_norm = rms_norm("q_norm", d_h, description="RMSNorm(d_h) of each query head")
        k_norm = rms_norm("k_norm", d_h, description="RMSNorm(d_h) of each key head")
    elif cfg.qk_norm == "whole":  # over the whole projections, every head together
        q_norm = rms_norm("q_norm", inner, description="RMSNorm of the whole query projection")
        k_norm = rms_norm("k_norm", kv_inner, description="RMSNorm of the whole key projection")
    qk = ", QK-norm" if q_norm else ""
    attention_block = attention(
        "attention",
        d,
        inner,
        kv_inner=kv_inner,
        bias=cfg.qkv_bias,
        out_bias=cfg.out_bias,
        causal=True,
        heads=h,
        kv_heads=h_kv,
        d_head=d_h,
        q_norm=q_norm,
        k_norm=k_norm,
        description=(
            "causal grouped-query self-attention with rotary positions"
            if kv_inner is not inner
            else "causal self-attention with rotary positions"
        )
        + qk,
    )
    if _every_layer_slides(cfg) if slides is None else slides:  # a decode step past the window reads W keys
        assert isinstance(cfg, WindowedConfig)
        attention_block = windowed(attention_block, cfg.sliding_window)
    attention_norm, mlp_norm = _norm("attention_norm", d, cfg), _norm("mlp_norm", d, cfg)
    if cfg.norm_after:
        return composite(
            name,
            "decoder_layer",
            [attention_block, attention_norm, mlp, mlp_norm],
            f"post-norm decoder layer: attention, {norm_name}, add; {mlp_text}, {norm_name}, add",
        )
    return composite(
        name,
        "decoder_layer",
        [attention_norm, attention_block, mlp_norm, mlp],
        f"pre-norm decoder layer: {norm_name}, attention, add; {norm_name}, {mlp_text}, add",
    )


def _decoder(cfg: DecoderConfig, root: str, layers: Block, description: str) -> Block:
    """Embedding, the stack of ``layers``, final norm and LM head (or a task head)."""
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        layers,
        _norm("final_norm", d, cfg),
    ]
    if cfg.head == "lm":
        children.append(lm_head(d, V, tied_to="token" if cfg.tie_embeddings else ""))
    children += task_heads(cfg, d)
    return composite(root, "model", children, description)


def task_heads(cfg: DecoderConfig, d: Poly) -> list[Block]:
    """The classifier of transformers' generic *ForSequenceClassification, *ForTokenClassification and
    *ForQuestionAnswering classes (modeling_layers.py), on the final norm's output. Each scores every token:
    sequence classification then keeps the last non-padding token's scores, an index and no FLOPs."""
    K = LABELS(cfg.num_labels)
    if cfg.head == "sequence_classification":
        return [
            linear(
                "score",
                d,
                K,
                bias=False,
                description="class scores on every token, no bias; the last non-padding token's are kept",
            )
        ]
    if cfg.head == "token_classification":
        return [linear("score", d, K, description="a label's scores per token")]
    if cfg.head == "question_answering":
        return [linear("qa_outputs", d, const(2), description="answer start and end logits per token")]
    return []


def _stack(cfg: DecoderConfig, mlp: Block, mlp_text: str) -> Block:
    """The layers of one feed-forward: one repeated layer where every layer masks alike (each by the sliding window,
    or none), else the runs of sliding-window and global layers (`window_runs`), whose KV caches and decode steps
    differ past the window."""
    kinds = cfg.layer_kinds()
    if kinds.one_kind:
        return repeat(_layer(cfg, "layer", mlp, mlp_text), symbol("L", cfg.n_layers), name="layers")
    assert isinstance(cfg, WindowedConfig)  # only a window makes layers of two kinds
    return window_runs(
        cfg.sliding_layers(),
        _layer(cfg, "sliding_layer", mlp, mlp_text, slides=True),
        _layer(cfg, "global_layer", mlp, mlp_text, slides=False),
        description=f"{kinds.sliding} sliding-window and {kinds.full} global layers; a sliding layer's decode step "
        f"attends to at most W = {cfg.sliding_window:,} keys (transformers' DynamicCache keeps the last W - 1 tokens "
        "there)",
    )


def build(cfg: DenseConfig) -> Block:
    d = symbol("d", cfg.d_model)
    mlp = _gated("mlp", d, symbol("d_ff", cfg.d_ff), cfg, "gated feed-forward")
    root = _decoder(cfg, cfg.ROOT, _stack(cfg, mlp, _gated_kind(cfg)), cfg.TITLE)
    return with_modules(root, reference_modules(cfg))


def build_moe(cfg: MoEConfig) -> Block:
    d = symbol("d", cfg.d_model)
    n_experts = E(cfg.n_experts)
    expert = _gated("expert", d, D_EXPERT(cfg.d_ff_expert), cfg, "one expert's gated feed-forward")
    router = linear("gate", d, n_experts, bias=False, description="router: a score per expert for each token")
    shared = None
    if cfg.d_ff_shared:
        shared = composite(
            "shared",
            "shared_expert",
            [
                _gated("shared_expert", d, D_SHARED(cfg.d_ff_shared), cfg, "shared expert"),
                linear("shared_expert_gate", d, const(1), bias=False, description="sigmoid gate of the shared expert"),
            ],
            "shared expert, run for every token and scaled by a sigmoid gate",
        )
    mlp = experts(expert, n_experts, K(cfg.top_k), router=router, shared_experts=shared, name="mlp")
    text = f"mixture of {cfg.n_experts} {_gated_kind(cfg)} experts, top-{cfg.top_k}" + (
        " and a shared expert" if shared else ""
    )
    with_experts = _expert_layers(cfg.n_layers, cfg.sparse_step, cfg.dense_layers)
    if with_experts == cfg.n_layers:
        layers = _stack(cfg, mlp, text)
    else:
        assert cfg.d_ff is not None  # the configuration refuses dense layers without a width
        dense_mlp = _gated("mlp", d, symbol("d_ff", cfg.d_ff), cfg, "dense gated feed-forward")
        if with_experts == 0:
            layers = _stack(cfg, dense_mlp, _gated_kind(cfg))
        else:  # both kinds: at most MAX_RUN_LAYERS layers (the configuration checks it)
            layers = _expert_runs(cfg, (mlp, text), (dense_mlp, _gated_kind(cfg)), with_experts)
    root = _decoder(cfg, cfg.ROOT, layers, cfg.TITLE)
    return with_modules(root, moe_reference_modules(cfg))


def _expert_runs(cfg: MoEConfig, moe: tuple[Block, str], dense: tuple[Block, str], with_experts: int) -> Block:
    """A stack of layers with experts and layers without, in order: runs of an ``moe_layer`` and a ``dense_layer``
    (counted as ``L_moe`` and ``L_dense``) where every layer masks alike, else of the four kinds of layer the
    sliding window and the experts make (each run counted by its number)."""
    kinds = cfg.layer_kinds()
    experts_in = [cfg.has_experts(i) for i in range(cfg.n_layers)]
    if kinds.one_kind:
        layer = {True: _layer(cfg, "moe_layer", *moe), False: _layer(cfg, "dense_layer", *dense)}
        counts = {"moe_layer": L_MOE(with_experts), "dense_layer": L_DENSE(cfg.n_layers - with_experts)}
        return layer_runs("layers", runs_in_order(layer[e] for e in experts_in), counts=counts)
    assert isinstance(cfg, WindowedConfig)  # only a window makes layers of two kinds
    of_kind = {
        (e, w): _layer(
            cfg, f"{'sliding' if w else 'global'}_{'moe' if e else 'dense'}_layer", *(moe if e else dense), slides=w
        )
        for e in (True, False)
        for w in (True, False)
    }
    return layer_runs(
        "layers", runs_in_order(of_kind[e, w] for e, w in zip(experts_in, cfg.sliding_layers(), strict=True))
    )


#: the families whose question-answering class keeps its base model as ``transformer`` (an older name)
_QA_TRANSFORMER: tuple[str | None, ...] = ("llama", "qwen2", "qwen3", "qwen3_moe")


def _layer_modules(root: str, cfg: DecoderConfig) -> dict[str, tuple[str, ...]]:
    """The block -> submodule table the families share: the model, attention, norms and head."""
    base = "" if cfg.head == "none" else "model."
    family = (
        _reference_family(cfg)
        if isinstance(cfg, DenseConfig)
        else _moe_family(cfg)
        if isinstance(cfg, MoEConfig)
        else None
    )
    if cfg.head == "question_answering" and family in _QA_TRANSFORMER:
        base = "transformer."  # Llama's, Qwen2's and Qwen3's (dense and MoE) ForQuestionAnswering keep an older name
    # OLMo 2 norms the outputs: its attention's norm is post_attention_layernorm, its MLP's post_feedforward_layernorm
    attention_norm, mlp_norm = (
        ("post_attention_layernorm", "post_feedforward_layernorm")
        if cfg.norm_after
        else ("input_layernorm", "post_attention_layernorm")
    )
    table: dict[str, tuple[str, ...]] = {
        root: ("",),
        f"{root}.token": (f"{base}embed_tokens",),
        f"{root}.layers": (f"{base}layers",),
        f"{root}.final_norm": (f"{base}norm",),
        f"{root}.lm_head": ("lm_head",),
        f"{root}.score": ("score",),
        f"{root}.qa_outputs": ("qa_outputs",),
    }
    for layer in _layer_paths(root):  # the runs of a stack share the module list: copy i of a run is its layer i
        table |= {
            layer: (f"{base}layers",),
            f"{layer}.attention_norm": (attention_norm,),
            f"{layer}.attention": ("self_attn",),
            f"{layer}.attention.q_proj": ("self_attn.q_proj",),
            f"{layer}.attention.k_proj": ("self_attn.k_proj",),
            f"{layer}.attention.v_proj": ("self_attn.v_proj",),
            f"{layer}.attention.out_proj": ("self_attn.o_proj",),
            f"{layer}.attention.q_norm": ("self_attn.q_norm",),
            f"{layer}.attention.k_norm": ("self_attn.k_norm",),
            f"{layer}.mlp_norm": (mlp_norm,),
            f"{layer}.mlp": ("mlp",),
        }
    return table


def _layer_paths(root: str) -> tuple[str, ...]:
    """The paths of the layer blocks of a stack: one repeated layer, or the runs of its kinds of layer (sliding-window
    and global, `_stack`; with experts and without, and of both, `_expert_runs`)."""
    mixed = [f"{w}_{e}_layer" for w in ("sliding", "global") for e in ("moe", "dense")]
    kinds = ["sliding_layer", "global_layer", "moe_layer", "dense_layer", *mixed]
    return (f"{root}.layers.layer", *(f"{root}.layers.{kind}s.{kind}" for kind in kinds))


def _mlp_modules(prefix: str, module: str) -> dict[str, tuple[str, ...]]:
    return {
        f"{prefix}.fc_in": (f"{module}.up_proj",),
        f"{prefix}.fc_gate": (f"{module}.gate_proj",),
        f"{prefix}.fc_out": (f"{module}.down_proj",),
    }


def reference_modules(cfg: DenseConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule names, inside a layer relative to the layer. The families name them alike, except
    that Phi-3 fuses q/k/v into ``qkv_proj`` and gate/up into ``gate_up_proj`` (those blocks stay unmapped)."""
    table = _layer_modules(cfg.ROOT, cfg)
    for layer in _layer_paths(cfg.ROOT):
        table |= _mlp_modules(f"{layer}.mlp", "mlp")
        if _reference_family(cfg) == "phi3":
            for fused in ("attention.q_proj", "attention.k_proj", "attention.v_proj", "mlp.fc_in", "mlp.fc_gate"):
                del table[f"{layer}.{fused}"]
    return table


def moe_reference_modules(cfg: MoEConfig) -> dict[str, tuple[str, ...]]:
    """`reference_modules` of the mixture-of-experts decoder: the router is ``mlp.gate``; transformers fuses
    every expert's projections into the tensors of one ``mlp.experts`` module (the blocks of one expert stay
    unmapped); Qwen2-MoE's shared expert is ``mlp.shared_expert`` with its gate ``mlp.shared_expert_gate``."""
    table = _layer_modules(cfg.ROOT, cfg)
    for layer in _layer_paths(cfg.ROOT):
        mlp = f"{layer}.mlp"
        table |= {
            f"{mlp}.gate": ("mlp.gate",),
            f"{mlp}.experts": ("mlp.experts",),
            f"{mlp}.experts.expert": ("mlp.experts",),
            f"{mlp}.shared": ("mlp.shared_expert", "mlp.shared_expert_gate"),
            f"{mlp}.shared.shared_expert": ("mlp.shared_expert",),
            f"{mlp}.shared.shared_expert_gate": ("mlp.shared_expert_gate",),
            **_mlp_modules(f"{mlp}.shared.shared_expert", "mlp.shared_expert"),
            **_mlp_modules(mlp, "mlp"),  # a stack whose every layer is dense (no layer has experts)
        }
    return table


#: model type -> transformers' class prefix
FAMILIES = {
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
    "gemma": "Gemma",
    "olmo": "Olmo",
    "phi3": "Phi3",
    "qwen3": "Qwen3",
    "olmo2": "Olmo2",
    "granite": "Granite",
}


def _builds(family: str, cfg: DenseConfig) -> bool:
    """Whether transformers' ``family`` classes build exactly this configuration."""
    # the families before Qwen3 and OLMo 2 norm a layer's inputs and neither queries nor keys
    rms = cfg.norm == "rms_norm" and cfg.qk_norm == "none" and not cfg.norm_after
    rms_any = cfg.norm == "rms_norm"
    same_bias = cfg.qkv_bias == cfg.out_bias
    no_bias = not (cfg.qkv_bias or cfg.out_bias or cfg.mlp_bias)
    natural_head = cfg.d_head is None or cfg.d_head == cfg.d_model // cfg.n_heads  # what transformers computes
    kinds = cfg.layer_kinds()
    # Mistral and Phi-3 mask every layer by their window or none; Qwen2 and Qwen3 take each layer's kind
    # (layer_types); the other families have no window
    no_window, one_kind = kinds.sliding == 0, kinds.one_kind
    return {
        # LlamaConfig refuses heads that do not divide d_model, even with head_dim given
        "llama": rms and same_bias and cfg.d_model % cfg.n_heads == 0 and no_window,
        "mistral": rms and no_bias and one_kind,
        "qwen2": rms and cfg.qkv_bias and not cfg.out_bias and not cfg.mlp_bias and natural_head,
        # GemmaRMSNorm scales by 1 + weight and the embeddings by sqrt(d): the same parameters, no matmul FLOPs
        "gemma": rms and same_bias and not cfg.mlp_bias and no_window,
        "olmo": cfg.norm != "rms_norm"
        and cfg.qk_norm == "none"
        and not cfg.norm_after
        and same_bias
        and not cfg.mlp_bias
        and natural_head
        and no_window,
        "phi3": rms and no_bias and natural_head and one_kind,
        # Qwen3Attention: biases on q, k, v and o together (attention_bias), RMSNorm(head_dim) on each head
        "qwen3": rms_any and cfg.qk_norm == "per_head" and not cfg.norm_after and same_bias and not cfg.mlp_bias,
        "olmo2": rms_any and cfg.qk_norm == "whole" and cfg.norm_after and same_bias and not cfg.mlp_bias and no_window,
        # Granite reads head_dim as a plain attribute (getattr), so any head width builds
        "granite": rms and same_bias and no_window,
    }[family]


#: transformers' class suffix for each head
CLASS_SUFFIX = {
    "none": "Model",
    "lm": "ForCausalLM",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
    "question_answering": "ForQuestionAnswering",
}
_ALL_HEADS = frozenset(CLASS_SUFFIX)
#: the heads each model type has a class for in transformers 5.23 (Gemma and Phi-3 have no question answering,
#: OLMo only sequence classification beside its base model and causal LM)
FAMILY_HEADS = {
    "llama": _ALL_HEADS,
    "mistral": _ALL_HEADS,
    "qwen2": _ALL_HEADS,
    "gemma": _ALL_HEADS - {"question_answering"},
    "olmo": frozenset({"none", "lm", "sequence_classification"}),
    "phi3": _ALL_HEADS - {"question_answering"},
    "qwen3": _ALL_HEADS,
    "olmo2": frozenset({"none", "lm", "sequence_classification"}),
    "granite": frozenset({"none", "lm"}),
    "mixtral": _ALL_HEADS,
    "qwen2_moe": _ALL_HEADS,
    "qwen3_moe": _ALL_HEADS,
}


def _reference_family(cfg: DenseConfig) -> str | None:
    """``cfg.family`` when its classes build the configuration and its head, else the first family that does."""
    # Mistral last: it builds a window on every layer that Llama cannot, and nothing else the others do not
    for family in (cfg.family, "llama", "qwen2", "gemma", "olmo", "qwen3", "olmo2", "granite", "mistral"):
        if _builds(family, cfg) and cfg.head in FAMILY_HEADS[family]:
            return family
    return None


def _common_kwargs(cfg: DecoderConfig) -> dict[str, Any]:
    """The configuration-class arguments every family takes alike."""
    labels = {"num_labels": cfg.num_labels} if cfg.head in ("sequence_classification", "token_classification") else {}
    return dict(
        **labels,
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads or cfg.n_heads,
        max_position_embeddings=cfg.max_positions,
        hidden_act=cfg.activation,
        tie_word_embeddings=cfg.tie_embeddings,
        # the configuration's padding id (null where it has none: some families' class default lies beyond a
        # small vocabulary)
        pad_token_id=cfg.pad_token_id,
    )


def _transformers_reference(name: str, cfg: DecoderConfig, kwargs: dict[str, Any], **extra: Any) -> Reference:
    return Reference(
        library="transformers",
        target=f"transformers.{name}{CLASS_SUFFIX[cfg.head]}",
        config_class=f"transformers.{name}Config",
        kwargs=kwargs,
        **extra,
    )


def reference(cfg: DenseConfig) -> Reference | None:
    """The transformers class of ``family`` (or of the first family that builds the configuration)."""
    family = _reference_family(cfg)
    if family is None:
        return None  # an output bias without q/k/v biases, or biases with OLMo's norm: no class builds it
    kwargs = dict(_common_kwargs(cfg), intermediate_size=cfg.d_ff)
    if family in ("llama", "gemma", "olmo", "qwen3", "olmo2", "granite"):
        kwargs["attention_bias"] = cfg.qkv_bias
    if family in ("llama", "granite"):
        kwargs["mlp_bias"] = cfg.mlp_bias
    if family in ("llama", "mistral", "gemma", "qwen3", "olmo2", "granite"):
        # a field of Llama, Mistral, Gemma and Qwen3's configurations; a plain attribute OLMo 2 and Granite read
        kwargs["head_dim"] = cfg.d_head or cfg.d_model // cfg.n_heads
    kwargs.update(_window_kwargs(family, cfg))
    return _transformers_reference(FAMILIES[family], cfg, kwargs)


def _window_kwargs(family: str, cfg: DecoderConfig) -> dict[str, Any]:
    """The configuration-class arguments that give ``family``'s class the window of ``cfg`` (none where it has
    none, which MistralConfig must be told: its default is a 4,096-token window)."""
    if cfg.layer_kinds().sliding == 0:
        return {"sliding_window": None} if family == "mistral" else {}
    assert isinstance(cfg, WindowedConfig)  # only a windowed configuration has sliding layers
    if family in ("mistral", "phi3", "mixtral"):  # every layer masks by the window
        return {"sliding_window": cfg.sliding_window}
    kwargs: dict[str, Any] = {"use_sliding_window": True, "sliding_window": cfg.sliding_window}
    if family != "qwen3_moe":  # Qwen3-MoE masks every layer, and has no layer_types
        kwargs["layer_types"] = [SLIDING if s else FULL for s in cfg.sliding_layers()]
    return kwargs


#: MoE model type -> transformers' class prefix
MOE_FAMILIES = {"mixtral": "Mixtral", "qwen2_moe": "Qwen2Moe", "qwen3_moe": "Qwen3Moe"}


def _builds_moe(family: str, cfg: MoEConfig) -> bool:
    """Whether transformers' ``family`` classes build exactly this configuration: RMSNorm, no output or
    feed-forward biases (the experts are fused bias-free tensors); Mixtral has no q/k/v biases and no shared
    expert, Qwen2-MoE always has a shared expert (and its gate) and computes its own head width."""
    rms = cfg.norm == "rms_norm" and not cfg.norm_after and not cfg.mlp_bias
    plain = rms and not cfg.out_bias and cfg.qk_norm == "none"
    natural_head = cfg.d_head is None or cfg.d_head == cfg.d_model // cfg.n_heads
    every_layer = cfg.sparse_step == 1 and not cfg.dense_layers
    one_kind = cfg.layer_kinds().one_kind  # Mixtral and Qwen3-MoE: every layer masks by the window, or none
    return {
        "mixtral": plain and not cfg.qkv_bias and cfg.d_ff_shared == 0 and every_layer and one_kind,
        "qwen2_moe": plain and cfg.d_ff_shared > 0 and natural_head,
        # Qwen3MoeAttention: biases on q, k, v and o together, RMSNorm(head_dim) on each head; no shared expert
        "qwen3_moe": rms
        and cfg.qk_norm == "per_head"
        and cfg.qkv_bias == cfg.out_bias
        and cfg.d_ff_shared == 0
        and one_kind,
    }[family]


def _moe_family(cfg: MoEConfig) -> str | None:
    """``cfg.family`` when its classes build the configuration and its head, else the first family that does."""
    return next((f for f in (cfg.family, *MOE_FAMILIES) if _builds_moe(f, cfg) and cfg.head in FAMILY_HEADS[f]), None)


def moe_reference(cfg: MoEConfig) -> Reference | None:
    """MixtralForCausalLM / Qwen2MoeForCausalLM (or their base models). Its parameters are counted on the
    meta device; its FLOPs need real weights (``device: cpu``), since routing reads the router's scores."""
    family = _moe_family(cfg)
    if family is None:
        return None  # biases beyond q/k/v, OLMo's norm, or q/k/v biases without a shared expert
    kwargs = dict(_common_kwargs(cfg), num_experts_per_tok=cfg.top_k, output_router_logits=cfg.output_router_logits)
    if family == "mixtral":
        kwargs.update(
            intermediate_size=cfg.d_ff_expert,
            num_local_experts=cfg.n_experts,
            head_dim=cfg.d_head or cfg.d_model // cfg.n_heads,
            router_jitter_noise=cfg.router_jitter_noise,
        )
    else:
        kwargs.update(
            norm_topk_prob=cfg.norm_topk_prob,
            moe_intermediate_size=cfg.d_ff_expert,
            num_experts=cfg.n_experts,
            decoder_sparse_step=cfg.sparse_step,
            mlp_only_layers=list(cfg.dense_layers),
        )
        if family == "qwen2_moe":
            kwargs.update(shared_expert_intermediate_size=cfg.d_ff_shared, qkv_bias=cfg.qkv_bias)
        else:  # head_dim: a plain attribute Qwen3MoeAttention reads
            kwargs.update(attention_bias=cfg.qkv_bias, head_dim=cfg.d_head or cfg.d_model // cfg.n_heads)
        if cfg.d_ff is not None:
            kwargs["intermediate_size"] = cfg.d_ff
    kwargs.update(_window_kwargs(family, cfg))
    return _transformers_reference(
        MOE_FAMILIES[family],
        cfg,
        kwargs,
        device="cpu",
        note="routing reads the router's scores, so FLOPs are measured with small random weights on the CPU",
    )


# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------

_ROPE = "rotary position settings: no parameters, and the rotary angles cost no matmul FLOPs in the eager forward pass"
# a sliding window masks the same score products (eager attention computes all N x N of them): no parameters and
# the same forward FLOPs; but a sliding layer's cache keeps only the window, so its decode step reads W keys past it
_WINDOW = (
    "sliding_window, layer_types (the window and the layers that mask by it: past the window their decode step "
    "reads W keys, as transformers' sliding cache holds them; no parameters, the same forward FLOPs)"
)
_EPS = NORM_EPSILON.replace("LayerNorm", "RMSNorm")

_READ = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "intermediate_size": "d_ff",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "hidden_act": "activation",
    "max_position_embeddings": "max_positions",
    "tie_word_embeddings": "tie_embeddings",
    # an index, not a size: no parameters; the sequence classifier saves one index more with it
    "pad_token_id": "pad_token_id",
    # rotary settings change no count; read only to refuse a rotary type transformers does not build
    "rope_parameters": "(checked: a rotary type transformers builds)",
    "num_labels": "num_labels",
}
_IGNORED = {
    "initializer_range": INITIALISATION,
    "use_cache": USE_CACHE,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "attention_dropout": DROPOUT,
}


def _table(
    model_type: str,
    family: str,
    defaults: dict[str, Any],
    read: dict[str, str],
    ignored: dict[str, str],
    refused: dict[str, tuple[tuple[Any, ...], str]] | None = None,
    aliases: dict[str, str] | None = None,
) -> HFTable:
    # the sliding-window keys a table lists among the ignored are read (`_read_window`): they give the window and the
    # layers that mask by it, and a window transformers' forward pass cannot run with must be refused
    window = {k: v for k, v in ignored.items() if v is _WINDOW}
    ignored = {k: v for k, v in ignored.items() if k not in window}
    return HFTable(
        model_type=model_type,
        config_class=f"{family}Config",
        defaults=defaults,
        aliases=aliases or {},
        read={**{k: v for k, v in _READ.items() if k not in ignored}, **read, **window},
        ignored={**{k: v for k, v in _IGNORED.items() if k in defaults}, **ignored},
        refused=refused or {},
        base_class=f"{family}Model",
        # every head class transformers 5.23 has for the type, in the order CLASS_SUFFIX lists them
        classes={
            f"{family}{suffix}": {"head": head}
            for head, suffix in CLASS_SUFFIX.items()
            if head in FAMILY_HEADS[model_type]
        },
    )


HF_LLAMA = _table(
    "llama",
    "Llama",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        pretraining_tp=1,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        mlp_bias=False,
        head_dim=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "mlp_bias": "mlp_bias", "head_dim": "d_head"},
    ignored={
        "rms_norm_eps": _EPS,
        "pretraining_tp": "tensor-parallel slicing of the original training code; transformers 5.23's Llama "
        "does not read it (the same weights and FLOPs)",
    },
)

HF_MISTRAL = _table(
    "mistral",
    "Mistral",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=None,
        hidden_act="silu",
        max_position_embeddings=131072,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        rope_parameters=None,
        sliding_window=4096,
        attention_dropout=0.0,
    ),
    read={"head_dim": "d_head"},
    ignored={"rms_norm_eps": _EPS, "sliding_window": _WINDOW},
)

HF_QWEN2 = _table(
    "qwen2",
    "Qwen2",
    defaults=dict(
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=22016,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        use_sliding_window=False,
        sliding_window=4096,
        max_window_layers=28,
        layer_types=None,
        attention_dropout=0.0,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    ),
    read={},
    ignored={
        "rms_norm_eps": _EPS,
        "use_sliding_window": _WINDOW,
        "sliding_window": _WINDOW,
        "max_window_layers": _WINDOW,
        "layer_types": _WINDOW,
    },
)

HF_GEMMA = _table(
    "gemma",
    "Gemma",
    defaults=dict(
        vocab_size=256000,
        hidden_size=3072,
        intermediate_size=24576,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=16,
        head_dim=256,
        hidden_act="gelu_pytorch_tanh",
        max_position_embeddings=8192,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        tie_word_embeddings=True,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        use_bidirectional_attention=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "head_dim": "d_head"},
    ignored={
        "rms_norm_eps": _EPS,
        "use_bidirectional_attention": "drops the causal mask: the same score products, so no parameters and "
        "the same eager FLOPs",
    },
)

HF_OLMO = _table(
    "olmo",
    "Olmo",
    defaults=dict(
        vocab_size=50304,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        use_cache=True,
        pad_token_id=1,
        bos_token_id=None,
        eos_token_id=50279,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        clip_qkv=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias"},
    ignored={"clip_qkv": "clamps the query, key and value activations: no parameters, and no matmul FLOPs"},
)

HF_PHI3 = _table(
    "phi3",
    "Phi3",
    defaults=dict(
        vocab_size=32064,
        hidden_size=3072,
        intermediate_size=8192,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attention_dropout=0.0,
        hidden_act="silu",
        max_position_embeddings=4096,
        original_max_position_embeddings=4096,
        initializer_range=0.02,
        rms_norm_eps=1e-05,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        bos_token_id=1,
        eos_token_id=32000,
        pad_token_id=32000,
        sliding_window=None,
    ),
    read={},
    ignored={
        "rms_norm_eps": _EPS,
        "resid_pdrop": DROPOUT,
        "embd_pdrop": DROPOUT,
        "sliding_window": _WINDOW,
        "original_max_position_embeddings": "the context length the rotary scaling (longrope) starts from: " + _ROPE,
    },
)


_PHI3_ROPE_TYPES = ("default", "longrope")


def _check_rope(rope: Any, family: str) -> None:
    """Refuse a rotary type transformers refuses to build (its other rotary settings change no count)."""
    if rope is None:
        return
    if not isinstance(rope, dict):
        raise ValueError(
            f'rope_parameters: expected an object such as {{"rope_type": "default"}} or null, '
            f"got {json.dumps(rope)[:60]}"
        )
    kind = rope.get("rope_type", rope.get("type", "default"))
    allowed = _PHI3_ROPE_TYPES if family == "phi3" else ROPE_TYPES
    if kind not in allowed:
        raise ValueError(
            f"rope_parameters: rope_type {json.dumps(kind)[:60]} is not one transformers' "
            f"{({**FAMILIES, **MOE_FAMILIES})[family]}Config accepts; expected one of {', '.join(allowed)}"
        )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _window_layers(hf: dict[str, Any], family: str, window: Any) -> tuple[int, list[bool] | None]:
    """How many layers mask by the window, as each configuration class derives them, and which (a list of one entry
    per layer, only for a stack of both kinds, whose depth `check_run_layers` bounds first): layer_types when the
    file gives it (each entry full_attention or sliding_attention, one a layer); else Qwen2 and Qwen3 from
    max_window_layers on when there is a window, Qwen2-MoE its even-numbered layers below max_window_layers when
    use_sliding_window is true, and the other types every layer when there is a window. Counted, not listed: a
    stack of identical layers may be billions deep."""
    layers = hf["num_hidden_layers"]
    kinds = hf.get("layer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or any(k not in ("full_attention", "sliding_attention") for k in kinds):
            raise ValueError(
                f"layer_types: expected a list of full_attention or sliding_attention, one per layer, got "
                f"{json.dumps(kinds)[:80]} (transformers' {_config_class(family)} refuses other entries, or its "
                "model has no mask for them)"
            )
        if _whole(layers) and len(kinds) != layers:
            raise ValueError(
                f"layer_types: {len(kinds)} entries for num_hidden_layers {layers}, which transformers' "
                f"{_config_class(family)} refuses; give one entry per layer"
            )
        sliding = [k == "sliding_attention" for k in kinds]
        return sum(sliding), sliding
    if not _whole(layers) or layers < 0:
        return 0, []  # the configuration model names num_hidden_layers
    first = hf.get("max_window_layers", 0)
    if not isinstance(first, int) or isinstance(first, bool):
        raise ValueError(f"max_window_layers: expected a number of layers, got {json.dumps(first)[:40]}")
    below = min(max(first, 0), layers)  # the layers numbered below max_window_layers
    if family in ("qwen2", "qwen2_moe", "qwen3"):
        if family == "qwen2_moe":  # the even-numbered layers below max_window_layers
            count = (below + 1) // 2 if hf["use_sliding_window"] else 0
        else:  # the layers from max_window_layers on
            count = layers - below if window is not None else 0
        if 0 < count < layers:
            check_run_layers(layers, "num_hidden_layers")  # a stack of both kinds is listed layer by layer
            if family == "qwen2_moe":
                return count, [i % 2 == 0 and i < below for i in range(layers)]
            return count, [i >= below for i in range(layers)]
        return count, None
    return (layers if window is not None else 0), None


def _read_window(hf: dict[str, Any], family: str) -> dict[str, Any]:
    """The window keys of the configuration (`WindowedConfig`): ``sliding_window`` and ``layer_types`` (null when
    every layer masks by the window), or none when no layer masks by one; a window transformers' forward pass
    cannot run with is refused. The configuration keeps sliding_window only with use_sliding_window where the
    class has that flag (Qwen2-MoE keeps 0 instead of null); a layer that masks by it then needs a window of at
    least one token (null is a TypeError, 0 or less a mask of the wrong shape), and Qwen2-MoE builds its sliding
    mask even with no such layer, which a null window fails."""
    if "sliding_window" not in hf:
        return {}
    flag = hf.get("use_sliding_window", True)
    if not isinstance(flag, bool):
        raise ValueError(f"use_sliding_window: expected true or false, got {json.dumps(flag)[:40]}")
    given = hf["sliding_window"]
    if given is not None and not _whole(given):  # the configuration class's field type, even when unused
        raise ValueError(f"sliding_window: expected a number of tokens or null, got {json.dumps(given)[:40]}")
    window = given if flag else (0 if family == "qwen2_moe" else None)
    count, sliding = _window_layers(hf, family, window)
    if window is None and family == "qwen2_moe":
        raise ValueError(
            "sliding_window: null with use_sliding_window true: transformers' Qwen2Moe model builds its "
            "sliding-window mask whether or not a layer uses it, and cannot without a window (its forward pass "
            "fails); give the window in tokens, or use_sliding_window false"
        )
    if window is None and count:
        raise ValueError(
            f"layer_types: sliding_attention layers without a window (sliding_window null, or use_sliding_window "
            f"false): transformers' {_config_class(family)} model cannot build their mask (its forward pass "
            "fails); give sliding_window and use_sliding_window true, or make every layer full_attention"
        )
    if window is not None and window < 1 and count:
        shown = window if flag else f"{json.dumps(given)[:20]} with use_sliding_window false (kept as 0)"
        raise ValueError(
            f"sliding_window: {shown}, a window under one token for layers that mask by it: transformers' "
            f"{_config_class(family)} model builds their mask with the wrong shape (its forward pass fails); give "
            "the window in tokens, or null"
        )
    if not count:
        return {}
    every = sliding is None or all(sliding)  # every layer masks by the window
    return {
        "sliding_window": window,
        "layer_types": None if every else [SLIDING if s else FULL for s in sliding or ()],
    }


def _config_class(family: str) -> str:
    return f"{({**FAMILIES, **MOE_FAMILIES})[family]}Config"


def _shared(hf: dict[str, Any], family: str) -> dict[str, Any]:
    """The keys every type, dense or mixture of experts, reads alike; num_key_value_heads null means one
    key/value head per query head."""
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    _check_rope(hf["rope_parameters"], family)
    return dict(
        _read_window(hf, family),
        family=family,
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        n_kv_heads=hf["num_key_value_heads"],
        activation=hf["hidden_act"],
        max_positions=hf["max_position_embeddings"],
        tie_embeddings=hf["tie_word_embeddings"],
        num_labels=hf["num_labels"],
        pad_token_id=hf["pad_token_id"],
    )


def _common(hf: dict[str, Any], family: str) -> dict[str, Any]:
    """`_shared` and the dense feed-forward's width."""
    return dict(_shared(hf, family), d_ff=hf["intermediate_size"])


def _head_dim(hf: dict[str, Any]) -> dict[str, Any]:
    """d_head: head_dim when given; else transformers' hidden_size // num_attention_heads, which d_head null
    means when the heads divide the width (when they do not, transformers rounds down, and so does archzoo)."""
    if hf.get("head_dim") is not None:
        return {"d_head": hf["head_dim"]}
    width, heads = hf["hidden_size"], hf["num_attention_heads"]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, heads)) or width % heads == 0:
        return {}  # the configuration model reports a bad value under its own key
    if width < heads:
        raise ValueError(
            f"num_attention_heads: {heads} heads of a {width}-wide model leave each head "
            f"{width // heads} wide; choose at most {width} heads"
        )
    return {"d_head": width // heads}


@hf_reader(HF_LLAMA)
def _from_llama(hf: dict[str, Any], model_class: str = "LlamaModel") -> dict[str, Any]:
    width, heads = hf["hidden_size"], hf["num_attention_heads"]
    if isinstance(width, int) and isinstance(heads, int) and heads > 0 and width % heads:
        raise ValueError(
            f"num_attention_heads: {heads} heads do not divide hidden_size {width}, which transformers' "
            "LlamaConfig refuses even when head_dim is given; choose a divisor of hidden_size"
        )
    return dict(
        _common(hf, "llama"),
        **_head_dim(hf),
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
        mlp_bias=hf["mlp_bias"],
    )


@hf_reader(HF_MISTRAL)
def _from_mistral(hf: dict[str, Any], model_class: str = "MistralModel") -> dict[str, Any]:
    return dict(_common(hf, "mistral"), **_head_dim(hf))


@hf_reader(HF_QWEN2)
def _from_qwen2(hf: dict[str, Any], model_class: str = "Qwen2Model") -> dict[str, Any]:
    return dict(_common(hf, "qwen2"), **_head_dim(hf), qkv_bias=True)  # Qwen2Attention: biases on q, k and v; none on o


@hf_reader(HF_GEMMA)
def _from_gemma(hf: dict[str, Any], model_class: str = "GemmaModel") -> dict[str, Any]:
    # GemmaRMSNorm scales by (1 + weight) and the embeddings by sqrt(d): the same parameters, no matmul FLOPs
    return dict(_common(hf, "gemma"), **_head_dim(hf), qkv_bias=hf["attention_bias"], out_bias=hf["attention_bias"])


@hf_reader(HF_OLMO)
def _from_olmo(hf: dict[str, Any], model_class: str = "OlmoModel") -> dict[str, Any]:
    return dict(
        _common(hf, "olmo"),
        **_head_dim(hf),
        norm="layer_norm_no_affine",
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
    )


@hf_reader(HF_PHI3)
def _from_phi3(hf: dict[str, Any], model_class: str = "Phi3Model") -> dict[str, Any]:
    return dict(
        _common(hf, "phi3"), **_head_dim(hf)
    )  # qkv_proj and gate_up_proj fuse the same weights into one linear each


# ---- Qwen3, OLMo 2, Granite: the newer dense families ------------------------------------------------------

_QK_NORM_EPS = "epsilon of the RMSNorms, the query and key norms included: no parameters, no matmul FLOPs"
_PLAIN_HEAD_DIM = (
    "d_head (a plain attribute, not a field of the configuration class, that the attention reads as "
    "getattr(config, 'head_dim', hidden_size // num_attention_heads))"
)

HF_QWEN3 = _table(
    "qwen3",
    "Qwen3",
    defaults=dict(
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=22016,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        head_dim=128,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        use_sliding_window=False,
        sliding_window=4096,
        max_window_layers=28,
        layer_types=None,
        attention_dropout=0.0,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "head_dim": "d_head"},
    ignored={
        "rms_norm_eps": _QK_NORM_EPS,
        "use_sliding_window": _WINDOW,
        "sliding_window": _WINDOW,
        "max_window_layers": _WINDOW,
        "layer_types": _WINDOW,
    },
)

HF_OLMO2 = _table(
    "olmo2",
    "Olmo2",
    defaults=dict(
        vocab_size=50304,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        use_cache=True,
        pad_token_id=1,
        bos_token_id=None,
        eos_token_id=50279,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        rms_norm_eps=1e-05,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "head_dim": _PLAIN_HEAD_DIM},
    ignored={"rms_norm_eps": _QK_NORM_EPS},
)

_MULTIPLIER = "a constant factor on {what}: no parameters and no matmul FLOPs (an elementwise product)"

HF_GRANITE = _table(
    "granite",
    "Granite",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        hidden_act="silu",
        max_position_embeddings=2048,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        attention_dropout=0.0,
        mlp_bias=False,
        embedding_multiplier=1.0,
        logits_scaling=1.0,
        residual_multiplier=1.0,
        attention_multiplier=1.0,
    ),
    read={"attention_bias": "qkv_bias, out_bias", "mlp_bias": "mlp_bias", "head_dim": _PLAIN_HEAD_DIM},
    ignored={
        "rms_norm_eps": _EPS,
        "embedding_multiplier": _MULTIPLIER.format(what="the token embeddings"),
        "logits_scaling": _MULTIPLIER.format(what="the logits (a division)"),
        "residual_multiplier": _MULTIPLIER.format(what="each residual branch"),
        "attention_multiplier": "the scale of the attention scores in place of 1/sqrt(head_dim): the same score "
        "products, no parameters",
    },
)


def _plain_head_dim(hf: dict[str, Any], config_class: str) -> dict[str, Any]:
    """`_head_dim` for a type whose attention reads head_dim as a plain attribute: a file's null would be
    multiplied by the heads (a TypeError in transformers), so it is refused."""
    if "head_dim" in hf and hf["head_dim"] is None:
        raise ValueError(
            f"head_dim: null, which {config_class}'s attention multiplies by the number of heads (transformers "
            "fails); remove the key for hidden_size // num_attention_heads, or give the width"
        )
    return _head_dim(hf)


@hf_reader(HF_QWEN3)
def _from_qwen3(hf: dict[str, Any], model_class: str = "Qwen3Model") -> dict[str, Any]:
    if hf["head_dim"] is None:
        raise ValueError(
            "head_dim: null, which transformers' Qwen3Config refuses (an int field); give the width of one head "
            "(Qwen3: 128)"
        )
    return dict(
        _common(hf, "qwen3"),
        d_head=hf["head_dim"],
        qk_norm="per_head",
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
    )


@hf_reader(HF_OLMO2)
def _from_olmo2(hf: dict[str, Any], model_class: str = "Olmo2Model") -> dict[str, Any]:
    return dict(
        _common(hf, "olmo2"),
        **_plain_head_dim(hf, "Olmo2Config"),
        qk_norm="whole",
        norm_after=True,
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
    )


@hf_reader(HF_GRANITE)
def _from_granite(hf: dict[str, Any], model_class: str = "GraniteModel") -> dict[str, Any]:
    return dict(
        _common(hf, "granite"),
        **_plain_head_dim(hf, "GraniteConfig"),
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
        mlp_bias=hf["mlp_bias"],
    )


# ---- mixture-of-experts types ----------------------------------------------------------------------------

_ROUTER_LOGITS = (
    "returns each layer's router scores and adds the load-balancing loss to the outputs: no parameters, and "
    "that loss costs no matmul FLOPs"
)
_AUX_LOSS = "weight of the load-balancing loss in training: no parameters or FLOPs"

HF_MIXTRAL = _table(
    "mixtral",
    "Mixtral",
    defaults=dict(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=None,
        hidden_act="silu",
        max_position_embeddings=131072,
        initializer_range=0.02,
        rms_norm_eps=1e-05,
        use_cache=True,
        pad_token_id=None,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        sliding_window=None,
        attention_dropout=0.0,
        num_experts_per_tok=2,
        num_local_experts=8,
        output_router_logits=False,
        router_aux_loss_coef=0.001,
        router_jitter_noise=0.0,
        rope_parameters=None,
    ),
    read={
        "intermediate_size": "d_ff_expert",
        "head_dim": "d_head",
        "num_local_experts": "n_experts",
        "num_experts_per_tok": "top_k",
        "output_router_logits": "output_router_logits",
        "router_jitter_noise": "router_jitter_noise",
    },
    ignored={
        "rms_norm_eps": _EPS,
        "sliding_window": _WINDOW,
        "router_aux_loss_coef": _AUX_LOSS,
    },
    aliases={"num_experts": "num_local_experts"},
)

HF_QWEN2_MOE = _table(
    "qwen2_moe",
    "Qwen2Moe",
    defaults=dict(
        vocab_size=151936,
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=24,
        num_attention_heads=16,
        num_key_value_heads=16,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        use_sliding_window=False,
        sliding_window=4096,
        max_window_layers=28,
        attention_dropout=0.0,
        decoder_sparse_step=1,
        moe_intermediate_size=1408,
        shared_expert_intermediate_size=5632,
        num_experts_per_tok=4,
        num_experts=60,
        norm_topk_prob=False,
        output_router_logits=False,
        router_aux_loss_coef=0.001,
        mlp_only_layers=None,
        qkv_bias=True,
        layer_types=None,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    ),
    read={
        "moe_intermediate_size": "d_ff_expert",
        "shared_expert_intermediate_size": "d_ff_shared",
        "num_experts": "n_experts",
        "num_experts_per_tok": "top_k",
        "qkv_bias": "qkv_bias",
        "intermediate_size": "d_ff",
        "decoder_sparse_step": "sparse_step",
        "mlp_only_layers": "dense_layers",
        "norm_topk_prob": "norm_topk_prob",
        "output_router_logits": "output_router_logits",
    },
    ignored={
        "rms_norm_eps": _EPS,
        "use_sliding_window": _WINDOW,
        "sliding_window": _WINDOW,
        "max_window_layers": _WINDOW,
        "layer_types": _WINDOW,
        "router_aux_loss_coef": _AUX_LOSS,
    },
)


def _sparse_layers(hf: dict[str, Any]) -> dict[str, Any]:
    """decoder_sparse_step and mlp_only_layers as Qwen2MoeDecoderLayer reads them: layer ``i`` has experts when
    ``i`` is not in mlp_only_layers and ``(i + 1) % decoder_sparse_step == 0``, so a negative step acts as its
    absolute value and listed layers beyond the stack change nothing (they are dropped); the layers without
    experts have a dense gated feed-forward of intermediate_size."""
    step, listed, layers = hf["decoder_sparse_step"], hf["mlp_only_layers"] or [], hf["num_hidden_layers"]
    if not isinstance(step, int) or isinstance(step, bool):
        return {}  # the configuration model names the key with a bad type
    if step == 0:
        raise ValueError(
            "decoder_sparse_step: 0, by which transformers' decoder layer divides the layer number (a "
            "ZeroDivisionError); give 1 for experts in every layer, or k for every k-th"
        )
    dense: tuple[int, ...] = ()
    if isinstance(layers, int) and isinstance(listed, list):
        # the layer numbers some entry equals (1.0 and true too, as `in` compares), in order: not a walk over every
        # layer, which may be billions
        dense = tuple(sorted({int(x) for x in listed if _layer_number(x) and 0 <= x < layers}))
    return dict(sparse_step=abs(step), dense_layers=dense, d_ff=hf["intermediate_size"])


def _layer_number(value: Any) -> bool:
    """Whether ``value`` equals a whole number (an int, a bool or a float such as 2.0), as a layer number compares."""
    return isinstance(value, (int, float)) and math.isfinite(value) and value == int(value)


def _experts(hf: dict[str, Any], experts_key: str) -> dict[str, Any]:
    return dict(n_experts=hf[experts_key], top_k=hf["num_experts_per_tok"])


@hf_reader(HF_MIXTRAL)
def _from_mixtral(hf: dict[str, Any], model_class: str = "MixtralModel") -> dict[str, Any]:
    return dict(
        _shared(hf, "mixtral"),
        **_head_dim(hf),
        **_experts(hf, "num_local_experts"),
        d_ff_expert=hf["intermediate_size"],
        **_router(hf, "router_jitter_noise"),
    )


def _router(hf: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The router's settings a mixture's file holds: output_router_logits, and ``keys`` (Mixtral's jitter, Qwen's
    renormalisation), under their own names."""
    return {key: hf[key] for key in ("output_router_logits", *keys)}


@hf_reader(HF_QWEN2_MOE)
def _from_qwen2_moe(hf: dict[str, Any], model_class: str = "Qwen2MoeModel") -> dict[str, Any]:
    if hf["num_key_value_heads"] is None:
        raise ValueError(
            "num_key_value_heads: null, which Qwen2MoeConfig keeps as null and its attention cannot divide the "
            "heads by; give the number of key/value heads (num_attention_heads for one per query head)"
        )
    if hf["shared_expert_intermediate_size"] == 0:
        raise ValueError(
            "shared_expert_intermediate_size: 0 leaves Qwen2-MoE's shared expert without width while its gate "
            "Linear(hidden_size, 1) remains, which archzoo's moe architecture cannot express (d_ff_shared 0 means "
            "no shared expert and no gate); give the shared expert a width"
        )
    if hf["num_experts"] == 0:
        raise ValueError(
            "num_experts: 0 gives every layer a dense feed-forward and no router or shared expert: a dense "
            "decoder, which archzoo's moe architecture does not express; count it as model type qwen2 (the same "
            "layers) or give the experts"
        )
    return dict(
        _shared(hf, "qwen2_moe"),
        **_head_dim(hf),
        **_experts(hf, "num_experts"),
        **_sparse_layers(hf),
        d_ff_expert=hf["moe_intermediate_size"],
        d_ff_shared=hf["shared_expert_intermediate_size"],
        qkv_bias=hf["qkv_bias"],
        **_router(hf, "norm_topk_prob"),
    )


HF_QWEN3_MOE = _table(
    "qwen3_moe",
    "Qwen3Moe",
    defaults=dict(
        vocab_size=151936,
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=24,
        num_attention_heads=32,
        num_key_value_heads=4,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.02,
        rms_norm_eps=1e-06,
        use_cache=True,
        tie_word_embeddings=False,
        rope_parameters=None,
        attention_bias=False,
        use_sliding_window=False,
        sliding_window=4096,
        attention_dropout=0.0,
        decoder_sparse_step=1,
        moe_intermediate_size=768,
        num_experts_per_tok=8,
        num_experts=128,
        norm_topk_prob=False,
        output_router_logits=False,
        router_aux_loss_coef=0.001,
        mlp_only_layers=None,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    ),
    read={
        "moe_intermediate_size": "d_ff_expert",
        "num_experts": "n_experts",
        "num_experts_per_tok": "top_k",
        "attention_bias": "qkv_bias, out_bias",
        "intermediate_size": "d_ff",
        "decoder_sparse_step": "sparse_step",
        "mlp_only_layers": "dense_layers",
        "head_dim": _PLAIN_HEAD_DIM,
        "norm_topk_prob": "norm_topk_prob",
        "output_router_logits": "output_router_logits",
    },
    ignored={
        "rms_norm_eps": _QK_NORM_EPS,
        "use_sliding_window": _WINDOW,
        "sliding_window": _WINDOW,
        # published Qwen3-MoE files carry it (Qwen3-30B-A3B: 48); Qwen3's configuration derives its layer_types from
        # it, Qwen3MoeConfig has no such field and no module of the qwen3_moe code reads it
        "max_window_layers": "stored as a plain attribute, never read by transformers 5.23's modeling_qwen3_moe nor "
        "Qwen3MoeConfig (the dense Qwen3 derives its sliding-window layers from it): no count changes",
        "router_aux_loss_coef": _AUX_LOSS,
    },
    # Qwen3MoeConfig's attribute_map sends num_experts to num_local_experts: the file it writes names the experts
    # num_local_experts, and that key, set last, wins over num_experts
    aliases={"num_local_experts": "num_experts"},
)


@hf_reader(HF_QWEN3_MOE)
def _from_qwen3_moe(hf: dict[str, Any], model_class: str = "Qwen3MoeModel") -> dict[str, Any]:
    # num_experts 0 leaves every layer Qwen3MoeMLP(intermediate_size) and no router: the dense Qwen3 (n_experts 0)
    return dict(
        _shared(hf, "qwen3_moe"),
        family="qwen3",
        # no head_dim: hidden_size // num_attention_heads, as Qwen3MoeAttention computes (not Qwen3-8B's 128)
        **{"d_head": None, **_plain_head_dim(hf, "Qwen3MoeConfig")},
        **_experts(hf, "num_experts"),
        **_sparse_layers(hf),
        d_ff_expert=hf["moe_intermediate_size"],
        qk_norm="per_head",
        qkv_bias=hf["attention_bias"],
        out_bias=hf["attention_bias"],
        **_router(hf, "norm_topk_prob"),
    )


def _every_layer_slides(cfg: DecoderConfig) -> bool:
    """Whether every layer masks by the window (Mistral, Phi-3, Mixtral, Qwen3-MoE; Qwen2 or Qwen3 with every
    layer sliding): then each layer's attention carries the window, and its decode step reads ``W`` keys past it."""
    kinds = cfg.layer_kinds()
    return kinds.sliding > 0 and kinds.full == 0


def _longest_seq_len(cfg: DecoderConfig) -> int:
    """No bound but archzoo's own: rotary positions go on past the context, as transformers computes them, and past
    a sliding window the sliding layers' decode steps read W keys (`_stack`)."""
    return MAX_SIZE


ARCHITECTURE = Architecture(
    name="llama",
    title="LLaMA-style decoder",
    summary="Decoder-only Transformer with RMSNorm, a gated feed-forward (SwiGLU or GeGLU), grouped-query "
    "attention and rotary positions; covers LLaMA, Llama 2, TinyLlama, Mistral, Qwen2, Gemma, OLMo and Phi-3.",
    citation="Touvron et al. LLaMA: Open and Efficient Foundation Language Models. 2023. arXiv:2302.13971; "
    "Touvron et al. Llama 2: Open Foundation and Fine-Tuned Chat Models. 2023. arXiv:2307.09288",
    config_model=LlamaConfig,
    build=build,
    max_seq_len=_longest_seq_len,
    reference=reference,
)

MOE_ARCHITECTURE = Architecture(
    name="moe",
    title="LLaMA-style mixture-of-experts decoder",
    summary="The LLaMA-style decoder with a mixture of gated experts in place of each feed-forward: a router "
    "scores every expert for each token, which runs through the top k of them (and through a shared expert "
    "where there is one); covers Mixtral and Qwen2-MoE. All experts are parameters; one token uses only k per "
    "layer (the active parameters).",
    citation="Jiang et al. Mixtral of Experts. 2024. arXiv:2401.04088; "
    "Shazeer et al. Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer. 2017. "
    "arXiv:1701.06538; Yang et al. Qwen2 Technical Report. 2024. arXiv:2407.10671",
    config_model=MoEConfig,
    build=build_moe,
    max_seq_len=_longest_seq_len,
    reference=moe_reference,
)


def build_qwen3(cfg: Qwen3Config) -> Block:
    """The dense Qwen3 (`build`), or with experts Qwen3-MoE (`build_moe`)."""
    return build_moe(cfg.as_moe()) if cfg.n_experts else build(cfg)


def qwen3_reference(cfg: Qwen3Config) -> Reference | None:
    """Qwen3's classes (`reference`), or with experts Qwen3-MoE's (`moe_reference`)."""
    return moe_reference(cfg.as_moe()) if cfg.n_experts else reference(cfg)


QWEN3_ARCHITECTURE = Architecture(
    name="qwen3",
    title="Qwen3 decoder",
    summary="The LLaMA-style decoder as Qwen3 builds it: grouped-query attention with an explicit head width "
    "(not d_model / n_heads) and an RMSNorm over each query and key head before the scores (QK-norm), SwiGLU, "
    "RMSNorm, rotary positions; the small models tie the LM head to the embedding. Qwen3-MoE (n_experts above 0) "
    "puts a mixture of SwiGLU experts in place of the feed-forward, with no shared expert: each token runs "
    "through the top k; all experts are parameters, k per layer are the active ones. Layers left dense by "
    "decoder_sparse_step or mlp_only_layers form a run of their own.",
    citation="Yang et al. Qwen3 Technical Report. 2025. arXiv:2505.09388",
    config_model=Qwen3Config,
    build=build_qwen3,
    max_seq_len=_longest_seq_len,
    reference=qwen3_reference,
)

OLMO2_ARCHITECTURE = Architecture(
    name="olmo2",
    title="OLMo 2 decoder",
    summary="The LLaMA-style decoder as OLMo 2 builds it: RMSNorms on the outputs of attention and of the SwiGLU "
    "feed-forward (before each residual add) instead of on their inputs, and an RMSNorm over the whole query "
    "projection and the whole key projection (QK-norm); rotary positions.",
    citation="OLMo et al. 2 OLMo 2 Furious. 2024. arXiv:2501.00656",
    config_model=Olmo2Config,
    build=build,
    reference=reference,
)

GRANITE_ARCHITECTURE = Architecture(
    name="granite",
    title="Granite decoder",
    summary="IBM's Granite 3.0 decoder: the LLaMA layers (grouped-query attention, SwiGLU, RMSNorm, rotary "
    "positions) with constant multipliers on the embeddings, the residual branches, the attention scores and "
    "the logits, which change no parameter or matmul count; the LM head tied to the embedding.",
    citation="IBM Granite Team. Granite 3.0 Language Models. 2024. github.com/ibm-granite/granite-3.0-language-models",
    config_model=GraniteConfig,
    build=build,
    reference=reference,
)

#: Hugging Face model type -> its reader (dense decoders)
HF_READERS = {
    "llama": _from_llama,
    "mistral": _from_mistral,
    "qwen2": _from_qwen2,
    "gemma": _from_gemma,
    "olmo": _from_olmo,
    "phi3": _from_phi3,
}
#: Hugging Face model type -> its reader (mixtures of experts)
MOE_HF_READERS = {"mixtral": _from_mixtral, "qwen2_moe": _from_qwen2_moe}
#: Hugging Face model type -> (its reader, the architecture it counts as): the families with their own page
OWN_HF_READERS = {
    "qwen3": (_from_qwen3, "qwen3"),
    "olmo2": (_from_olmo2, "olmo2"),
    "granite": (_from_granite, "granite"),
    "qwen3_moe": (_from_qwen3_moe, "qwen3"),
}


@hookimpl
def register_architectures(register: Callable[[Architecture], None]) -> None:
    register(ARCHITECTURE)
    register(MOE_ARCHITECTURE)
    for architecture in (QWEN3_ARCHITECTURE, OLMO2_ARCHITECTURE, GRANITE_ARCHITECTURE):
        register(architecture)


@hookimpl
def register_hf_readers(register: Callable[..., None]) -> None:
    for model_type, reader in HF_READERS.items():
        register(model_type, reader, architecture="llama")
    for model_type, reader in MOE_HF_READERS.items():
        register(model_type, reader, architecture="moe")
    for model_type, (reader, architecture) in OWN_HF_READERS.items():
        register(model_type, reader, architecture=architecture)
