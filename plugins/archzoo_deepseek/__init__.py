"""archzoo plugin: the DeepSeek-V2 and DeepSeek-V3 decoders (multi-head latent attention, dense then MoE layers).

Every layer is pre-norm (RMSNorm) with **multi-head latent attention** (MLA, DeepSeek-AI 2024, arXiv:2405.04434,
Section 2.1): the query is a low-rank projection ``d -> r_q`` with its own RMSNorm, then ``r_q -> h (d_n + d_r)``
(or one plain ``Linear(d, h (d_n + d_r))`` when ``q_lora_rank`` is null, as in DeepSeek-V2-Lite); keys and values
come from one ``Linear(d, r_kv + d_r)`` (``kv_a_proj_with_mqa``) producing the ``r_kv``-wide latent and a
``d_r``-wide rotary key shared by every head, the latent's RMSNorm, and ``Linear(r_kv, h (d_n + d_v))`` expanding
it into each head's ``d_n``-wide keys and ``d_v``-wide values; the output projection is ``Linear(h d_v, d)``.
The score product is over ``d_n + d_r`` channels a head, the weighted sum over ``d_v``.

The first ``L_f`` layers (``first_k_dense_replace``) have a dense SwiGLU feed-forward of width ``d_ff``; every
later layer a mixture of experts: a bias-free router ``Linear(d, E)`` (V3's ``e_score_correction_bias`` is a
buffer, not a parameter: ``model.parameters()`` does not count it, and neither does archzoo, though checkpoints
store it), ``E`` routed SwiGLU experts of width ``d_e`` of which each token runs ``k``, and ``n_s`` shared
experts, run for every token, fused by transformers into one SwiGLU of width ``n_s d_e``. Group-limited routing
(``n_group``, ``topk_group``) and the scores' scaling choose experts and weigh them: no parameters and no matmul
FLOPs. The stack is one ``layers`` block of two runs (`archzoo.blocks.layer_runs`): the dense layers, then the MoE
layers. Active parameters are those
one token uses: everything but the ``E - k`` routed experts it skips in each MoE layer.

Counts are exact against transformers 5.23's ``DeepseekV2*`` and ``DeepseekV3*`` classes (the base model, the
causal LM, sequence classification, and V3's token classification), FLOPs against FlopCounterMode on one eager
forward pass (eager attention, eager experts: each expert's matmuls on the tokens routed to it, ``N k`` expert
evaluations in all). Rotary positions (V3's interleaved layout too) cost no matmul FLOPs. V3's multi-token
prediction module (``num_nextn_predict_layers``) is not built by transformers and is not counted: DeepSeek-V3's
671B total excludes it too (the 685B of its Hub release include it).

**KV cache.** transformers caches what MLA's paper says the cache is: per token and layer, the normalised
latent (``r_kv``) and the rotary key (``d_r``), ``r_kv + d_r`` elements (576 for V2 and V3, against
``h (d_n + d_r + d_v)`` = 40,960 for the keys and values it expands them to). Its decode step therefore expands the
whole cached latent again with ``kv_b_proj``: ``2 N r_kv h (d_n + d_v)`` FLOPs a layer at context ``N``, which
the decode figures include (the paper's absorbed form, folding ``kv_b_proj`` into the query and output
projections, is not what transformers runs).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from archzoo import Architecture, Reference
from archzoo.architecture import TransformerConfig, check_activation
from archzoo.blocks import (
    Block,
    check_run_layers,
    composite,
    embedding,
    experts,
    feed_forward,
    layer_runs,
    linear,
    lm_head,
    rms_norm,
    with_modules,
)
from archzoo.decoder_parts import EXPERTS, TOP_K
from archzoo.formula import N, Poly, const
from archzoo.hf_config import (
    DROPOUT,
    INITIALISATION,
    NORM_EPSILON,
    ROPE_TYPES,
    TOKEN_ID,
    USE_CACHE,
    HFTable,
    check_padding_index,
    check_quantization,
    hf_reader,
)
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field
from archzoo.symbols import declare_symbol, symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: The heads transformers 5.23 has a class for (DeepSeek-V2 has no token classification; neither has question
#: answering).
HEADS = ("lm", "none", "sequence_classification", "token_classification")
FAMILY_HEADS = {
    "deepseek_v2": frozenset({"lm", "none", "sequence_classification"}),
    "deepseek_v3": frozenset(HEADS),
}
#: transformers' class prefix of each model type
FAMILIES = {"deepseek_v2": "DeepseekV2", "deepseek_v3": "DeepseekV3"}

L_DENSE = declare_symbol("L_f", latex="L_{f}", meaning="leading dense layers (first_k_dense_replace)", order=2)
E = EXPERTS  # the shared symbols of a mixture of experts (archzoo.decoder_parts)
K = TOP_K
N_SHARED = declare_symbol("n_s", latex="n_{s}", meaning="shared experts (n_shared_experts)", order=6)
R_Q = declare_symbol("r_q", latex="r_{q}", meaning="query latent rank (q_lora_rank)", order=26)
R_KV = declare_symbol("r_kv", latex="r_{kv}", meaning="key/value latent rank (kv_lora_rank)", order=27)
D_NOPE = declare_symbol("d_n", latex="d_{n}", meaning="query/key channels without rotary (qk_nope_head_dim)", order=28)
D_ROPE = declare_symbol("d_r", latex="d_{r}", meaning="rotary query/key channels (qk_rope_head_dim)", order=29)
D_V = declare_symbol("d_v", latex="d_{v}", meaning="value channels of a head (v_head_dim)", order=30)
D_EXPERT = declare_symbol("d_e", latex="d_{e}", meaning="width of one expert (d_ff_expert)", order=24)


class DeepSeekConfig(TransformerConfig):
    """A DeepSeek-V2/V3 decoder; defaults are DeepSeek-V3 (DeepSeek-AI 2024, arXiv:2412.19437, Section 4.2;
    its config.json: 61 layers, width 7,168, 128 heads, 3 dense layers, 256 routed experts of 2,048, top 8)."""

    DEFAULTS: ClassVar[dict[str, Any]] = dict(vocab_size=129280, d_model=7168, n_layers=61, n_heads=128)
    DESCRIPTIONS: ClassVar = dict(
        vocab_size="vocabulary size",
        d_model="model width",
        n_layers="decoder layers (dense first, then mixture of experts)",
        n_heads="attention heads",
    )

    HEADS_DIVIDE_WIDTH: ClassVar = False  # a head's query, key and value widths are keys of their own
    #: the router's groups change no figure the site's what-if shows, and which values are valid depends on the
    #: expert count: the what-if keeps them as given (`archzoo.site.explore`)
    WHATIF_FIXED: ClassVar[tuple[str, ...]] = ("n_group", "topk_group")
    q_lora_rank: PositiveInt | None = Field(
        1536, description="rank of the low-rank query projection (null = one plain query projection, V2-Lite)"
    )
    kv_lora_rank: PositiveInt = Field(512, description="width of the compressed key/value latent (cached per token)")
    qk_nope_head_dim: PositiveInt = Field(128, description="query/key channels of a head without rotary positions")
    qk_rope_head_dim: PositiveInt = Field(
        64, description="rotary query/key channels of a head (one rotary key shared by all heads, cached)"
    )
    v_head_dim: PositiveInt = Field(128, description="value channels of a head")
    d_ff: PositiveInt = Field(18432, description="hidden width of the dense layers' SwiGLU feed-forward")
    n_dense_layers: NonNegativeInt = Field(
        3, description="leading layers with a dense feed-forward (first_k_dense_replace); the rest have experts"
    )
    n_experts: PositiveInt = Field(256, description="routed experts in each MoE layer (all stored)")
    top_k: PositiveInt = Field(8, description="routed experts each token runs in each MoE layer")
    d_ff_expert: PositiveInt = Field(2048, description="hidden width of one expert (moe_intermediate_size)")
    n_shared_experts: NonNegativeInt = Field(
        1, description="shared experts every token runs, fused into one SwiGLU of width n_shared_experts x d_ff_expert"
    )
    max_positions: PositiveInt = Field(163840, description="context length (rotary positions: no parameters)")
    tie_embeddings: bool = Field(False, description="LM head shares the token embedding matrix")
    activation: str = Field("silu", description="activation of the gated feed-forwards")
    attention_bias: bool = Field(
        False, description="biases on q_a_proj, kv_a_proj_with_mqa and o_proj (transformers' attention_bias)"
    )
    mlp_bias: bool = Field(False, description="biases on the dense and shared feed-forwards (DeepSeek-V2 only)")
    # how the router chooses: no parameters and no matmul FLOPs, but the tensors a training step saves (activation
    # memory) follow the groups and the renormalisation
    n_group: PositiveInt = Field(
        1,
        description="groups the router splits the routed experts into (n_group; 1: no grouping, archzoo's default, "
        "which every expert count allows; DeepSeek-V3's file: 8, DeepSeek-V2's: 8)",
    )
    topk_group: PositiveInt = Field(
        1, description="groups whose experts a token may run (topk_group; DeepSeek-V3: 4, DeepSeek-V2: 3)"
    )
    norm_topk_prob: bool = Field(
        True, description="DeepSeek-V3's router renormalises the chosen experts' weights (norm_topk_prob)"
    )
    topk_method: Literal["greedy", "group_limited_greedy"] = Field(
        "greedy",
        description="DeepSeek-V2's routing: greedy (the top experts of all) or group_limited_greedy (within the "
        "topk_group best groups); DeepSeek-V3 always routes within groups",
    )
    head: Literal[HEADS] = Field(  # type: ignore[valid-type]
        "lm",
        description="lm (*ForCausalLM), none (the base *Model), sequence_classification (a bias-free score layer "
        "on every token, the last one's kept) or token_classification (a score layer with bias, V3 only)",
    )
    num_labels: NumLabels = num_labels_field("outputs of the classification heads (transformers' num_labels)")
    family: Literal["deepseek_v3", "deepseek_v2"] = Field(
        "deepseek_v3",
        description="the transformers classes `archzoo verify` builds for this configuration (no effect on "
        "counts); the other is used where this one cannot build it",
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_run_layers(self.n_layers)  # the dense and MoE runs list every layer's position
        if self.moe_layers and self.top_k > self.n_experts:
            raise ValueError(
                f"top_k: each token cannot run through {self.top_k} of {self.n_experts} experts; "
                f"choose top_k between 1 and n_experts ({self.n_experts})"
            )
        grouped = self.n_group > 1 or self.topk_group > 1  # one group of every expert: no grouping to check
        if self.moe_layers and grouped and (self.family == "deepseek_v3" or self.topk_method == "group_limited_greedy"):
            # each group's score is the sum of its two best experts in V3, its best one in V2
            needed = 2 if self.family == "deepseek_v3" else 1
            if self.n_experts % self.n_group or self.n_experts // self.n_group < needed:
                raise ValueError(
                    f"n_group: {self.n_group} groups cannot split {self.n_experts} experts into equal groups of at "
                    f"least {needed}, which transformers' router needs; choose a divisor of n_experts"
                )
            if self.topk_group > self.n_group:
                raise ValueError(
                    f"topk_group: the router cannot keep {self.topk_group} of {self.n_group} expert groups; choose "
                    "between 1 and n_group"
                )
        if self.qk_rope_head_dim % 2:
            raise ValueError(
                f"qk_rope_head_dim: rotary positions turn pairs of channels, so it must be even, got "
                f"{self.qk_rope_head_dim}; choose an even width"
            )
        check_activation(self.activation)
        return self

    @property
    def dense_layers(self) -> int:
        """Layers with a dense feed-forward: the first ``n_dense_layers``, at most all of them."""
        return min(self.n_dense_layers, self.n_layers)

    @property
    def moe_layers(self) -> int:
        return self.n_layers - self.dense_layers


# ---- the block tree --------------------------------------------------------------------------------------


def _swiglu(name: str, d: Poly, width: Poly, cfg: DeepSeekConfig, bias: bool, what: str) -> Block:
    kind = "SwiGLU" if cfg.activation in ("silu", "swish") else f"{cfg.activation}-gated"
    return feed_forward(
        name,
        d,
        width,
        activation=cfg.activation,
        gated=True,
        bias=bias,
        description=f"{what} ({kind}): gate, up and down projections",
    )


def latent_attention(cfg: DeepSeekConfig) -> Block:
    """Multi-head latent attention as transformers' ``DeepseekV2Attention`` / ``DeepseekV3Attention`` runs it.

    Its cache holds ``r_kv + d_r`` elements a token (the latent after its norm, and the rotary key); a decode
    step expands every cached latent again (``kv_b_proj`` over ``N`` tokens), then scores one query."""
    d = symbol("d", cfg.d_model)
    h = symbol("h", cfg.n_heads)
    d_n, d_r, d_v = D_NOPE(cfg.qk_nope_head_dim), D_ROPE(cfg.qk_rope_head_dim), D_V(cfg.v_head_dim)
    r_kv = R_KV(cfg.kv_lora_rank)
    d_qk = d_n + d_r
    bias = cfg.attention_bias
    if cfg.q_lora_rank is None:
        query = [linear("q_proj", d, h * d_qk, bias=False, description="query projection, every head")]
    else:
        r_q = R_Q(cfg.q_lora_rank)
        query = [
            linear("q_a_proj", d, r_q, bias=bias, description="query down-projection to its latent"),
            rms_norm("q_a_norm", r_q, description="RMSNorm of the query latent"),
            linear("q_b_proj", r_q, h * d_qk, bias=False, description="query up-projection, every head"),
        ]
    kv_b = linear("kv_b_proj", r_kv, h * (d_n + d_v), bias=False, description="keys and values of every head")
    # transformers caches the latent and expands all of it again at each step: kv_b_proj runs over N tokens
    kv_b = replace(kv_b, decode_flops=kv_b.flops)
    core_flops = 2 * N * N * h * d_qk + 2 * N * N * h * d_v
    core = Block(
        name="scores",
        kind="attention_core",
        description="softmax(Q Kᵀ / √(d_n + d_r)) V: scores over d_n + d_r channels a head, the sum over d_v",
        flops=core_flops,
        attention_flops=core_flops,
        backward_flops=2 * core_flops,
        prefill_flops=core_flops,
        decode_flops=2 * N * h * d_qk + 2 * N * h * d_v,
    )
    children = [
        *query,
        linear(
            "kv_a_proj",
            d,
            r_kv + d_r,
            bias=bias,
            description="key/value down-projection: the latent and the shared rotary key (cached)",
        ),
        rms_norm("kv_a_norm", r_kv, description="RMSNorm of the key/value latent"),
        kv_b,
        core,
        linear("out_proj", h * d_v, d, bias=bias, description="output projection"),
    ]
    block = composite("attention", "self_attention", children, "causal multi-head latent attention (MLA)")
    return replace(block, kv_cache=r_kv + d_r, heads=h)


def _layer(cfg: DeepSeekConfig, name: str, mlp: Block, mlp_text: str) -> Block:
    d = symbol("d", cfg.d_model)
    return composite(
        name,
        "decoder_layer",
        [rms_norm("attention_norm", d), latent_attention(cfg), rms_norm("mlp_norm", d), mlp],
        f"pre-norm decoder layer: RMSNorm, latent attention, add; RMSNorm, {mlp_text}, add",
    )


def _moe(cfg: DeepSeekConfig) -> Block:
    d = symbol("d", cfg.d_model)
    d_e = D_EXPERT(cfg.d_ff_expert)
    n_experts = E(cfg.n_experts)
    expert = _swiglu("expert", d, d_e, cfg, False, "one routed expert")
    router = linear("gate", d, n_experts, bias=False, description="router: a score per expert for each token")
    shared = None
    if cfg.n_shared_experts or cfg.mlp_bias:  # no shared experts: transformers keeps a width-0 MLP and its bias
        shared = _swiglu(
            "shared_experts",
            d,
            N_SHARED(cfg.n_shared_experts) * d_e,
            cfg,
            cfg.mlp_bias,
            f"{cfg.n_shared_experts} shared experts fused into one, run for every token",
        )
    return experts(expert, n_experts, K(cfg.top_k), router=router, shared_experts=shared, name="mlp")


def build(cfg: DeepSeekConfig) -> Block:
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    L = symbol("L", cfg.n_layers)
    runs: list[tuple[Block, Poly]] = []
    counts: dict[str, Poly] = {}
    if cfg.dense_layers:
        counts["dense_layer"] = L_DENSE(cfg.dense_layers) if cfg.moe_layers else L
        dense = _swiglu("mlp", d, symbol("d_ff", cfg.d_ff), cfg, cfg.mlp_bias, "dense feed-forward")
        runs.append((_layer(cfg, "dense_layer", dense, "SwiGLU"), const(cfg.dense_layers)))
    if cfg.moe_layers:
        counts["moe_layer"] = L - L_DENSE(cfg.dense_layers) if cfg.dense_layers else L
        shared = " and shared experts" if cfg.n_shared_experts else ""
        text = f"mixture of {cfg.n_experts} experts, top-{cfg.top_k}{shared}"
        runs.append((_layer(cfg, "moe_layer", _moe(cfg), text), const(cfg.moe_layers)))
    # the first L_f layers dense, the rest with experts: one stack of two runs (archzoo.blocks.layer_runs)
    layers = layer_runs("layers", runs, counts=counts)
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        layers,
        rms_norm("final_norm", d),
    ]
    if cfg.head == "lm":
        children.append(lm_head(d, V, tied_to="token" if cfg.tie_embeddings else ""))
    elif cfg.head == "sequence_classification":
        children.append(
            linear(
                "score",
                d,
                LABELS(cfg.num_labels),
                bias=False,
                description="class scores on every token, no bias; the last non-padding token's are kept",
            )
        )
    elif cfg.head == "token_classification":
        children.append(linear("score", d, LABELS(cfg.num_labels), description="a label's scores per token"))
    root = composite("deepseek", "model", children, "DeepSeek decoder with multi-head latent attention")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: DeepSeekConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in transformers' classes (for `archzoo verify`). The dense run's
    layers are ``layers.0`` to ``layers.{L_f - 1}`` and mapped one by one; the MoE run's start at index
    ``L_f`` of the same ``nn.ModuleList`` (its ``positions``), which archzoo's block matching numbers from 0, so
    its blocks are checked through ``layers``, which holds both runs (and by tests/test_deepseek.py, layer by
    layer)."""
    base = "" if cfg.head == "none" else "model."
    layer = "deepseek.layers.dense_layers.dense_layer"
    table: dict[str, tuple[str, ...]] = {
        "deepseek": ("",),
        "deepseek.token": (f"{base}embed_tokens",),
        "deepseek.layers": (f"{base}layers",),
        "deepseek.final_norm": (f"{base}norm",),
        "deepseek.lm_head": ("lm_head",),
        "deepseek.score": ("score",),
    }
    if cfg.dense_layers:
        table.update(
            {
                layer: (f"{base}layers",),
                f"{layer}.attention_norm": ("input_layernorm",),
                f"{layer}.attention": ("self_attn",),
                f"{layer}.attention.q_proj": ("self_attn.q_proj",),
                f"{layer}.attention.q_a_proj": ("self_attn.q_a_proj",),
                f"{layer}.attention.q_a_norm": ("self_attn.q_a_layernorm",),
                f"{layer}.attention.q_b_proj": ("self_attn.q_b_proj",),
                f"{layer}.attention.kv_a_proj": ("self_attn.kv_a_proj_with_mqa",),
                f"{layer}.attention.kv_a_norm": ("self_attn.kv_a_layernorm",),
                f"{layer}.attention.kv_b_proj": ("self_attn.kv_b_proj",),
                f"{layer}.attention.out_proj": ("self_attn.o_proj",),
                f"{layer}.mlp_norm": ("post_attention_layernorm",),
                f"{layer}.mlp": ("mlp",),
                f"{layer}.mlp.fc_in": ("mlp.up_proj",),
                f"{layer}.mlp.fc_gate": ("mlp.gate_proj",),
                f"{layer}.mlp.fc_out": ("mlp.down_proj",),
            }
        )
    return table


# ---- the reference: transformers' classes ---------------------------------------------------------------

#: transformers' class suffix for each head
CLASS_SUFFIX = {
    "none": "Model",
    "lm": "ForCausalLM",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
}


def _builds(family: str, cfg: DeepSeekConfig) -> bool:
    """Whether transformers' ``family`` classes build exactly this configuration and head: V3's feed-forwards
    have no biases and its grouped routing needs two experts a group; V2 refuses heads that do not divide the
    width (DeepseekV2Config.validate_architecture), and its rotary positions, a complex product on views of the
    query and of the latent's projection, run only where both start and step at even offsets."""
    if cfg.head not in FAMILY_HEADS[family]:
        return False
    if family == "deepseek_v3":
        return not cfg.mlp_bias and (cfg.moe_layers == 0 or cfg.n_experts >= 2)
    even = cfg.qk_nope_head_dim % 2 == 0 and cfg.kv_lora_rank % 2 == 0
    return cfg.d_model % cfg.n_heads == 0 and even


def reference(cfg: DeepSeekConfig) -> Reference | None:
    """DeepseekV3ForCausalLM / DeepseekV2ForCausalLM (or the head's class) of the same configuration. Its
    parameters are counted on the meta device; the FLOPs of a model with experts need values (routing reads
    the router's scores), so they are measured with small random weights on the CPU."""
    family = next((f for f in (cfg.family, *FAMILIES) if _builds(f, cfg)), None)
    if family is None:
        return None  # V2's feed-forward biases where V2 cannot run (heads, odd widths), or V2 token classification
    kwargs: dict[str, Any] = dict(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.d_ff,
        moe_intermediate_size=cfg.d_ff_expert,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_heads,
        n_shared_experts=cfg.n_shared_experts,
        n_routed_experts=cfg.n_experts,
        num_experts_per_tok=cfg.top_k,
        first_k_dense_replace=cfg.n_dense_layers,
        kv_lora_rank=cfg.kv_lora_rank,
        q_lora_rank=cfg.q_lora_rank,
        qk_nope_head_dim=cfg.qk_nope_head_dim,
        qk_rope_head_dim=cfg.qk_rope_head_dim,
        v_head_dim=cfg.v_head_dim,
        hidden_act=cfg.activation,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_bias=cfg.attention_bias,
        pad_token_id=None,
    )
    if cfg.head in ("sequence_classification", "token_classification"):
        kwargs["num_labels"] = cfg.num_labels
    # routing: no parameters, and every token still runs top_k experts; what a training step saves follows it
    kwargs.update(n_group=cfg.n_group, topk_group=cfg.topk_group)
    if family == "deepseek_v3":
        kwargs.update(norm_topk_prob=cfg.norm_topk_prob)
    else:
        kwargs.update(mlp_bias=cfg.mlp_bias, topk_method=cfg.topk_method)
    routed = cfg.moe_layers > 0
    return Reference(
        library="transformers",
        target=f"transformers.{FAMILIES[family]}{CLASS_SUFFIX[cfg.head]}",
        config_class=f"transformers.{FAMILIES[family]}Config",
        kwargs=kwargs,
        device="cpu" if routed else "meta",
        note="routing reads the router's scores, so FLOPs are measured with small random weights on the CPU"
        if routed
        else "",
    )


# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------

_ROPE = "rotary position settings: no parameters, and the rotary angles cost no matmul FLOPs in the eager forward pass"
_EPS = NORM_EPSILON.replace("LayerNorm", "RMSNorm")
_ROUTING = (
    "how the router picks and weighs each token's experts: no parameters and no matmul FLOPs, and each token still "
    "runs exactly num_experts_per_tok distinct experts"
)
_ROUTER_LOGITS = (
    "returns each layer's router scores and adds the load-balancing loss to the outputs: no parameters, and that "
    "loss costs no matmul FLOPs"
)
_ORIGINAL = (
    "a setting of DeepSeek's own modeling code (auto_map); transformers 5.23's {} has no such field and no "
    "module of its deepseek code reads it (checked in its source)"
)

_MTP = (
    "multi-token prediction modules, which transformers 5.23 does not build (from_pretrained skips their weights, "
    "model.layers.61 of V3's checkpoint): nothing to count"
)


_SHARED_DEFAULTS: dict[str, Any] = dict(
    hidden_act="silu",
    initializer_range=0.02,
    rms_norm_eps=1e-6,
    use_cache=True,
    pad_token_id=None,
    pretraining_tp=1,
    tie_word_embeddings=False,
    rope_parameters=None,
    attention_bias=False,
    attention_dropout=0.0,
    first_k_dense_replace=0,
    kv_lora_rank=512,
    q_lora_rank=1536,
    n_group=None,
    output_router_logits=False,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    routed_scaling_factor=1.0,
    topk_group=None,
    norm_topk_prob=False,
    v_head_dim=128,
    num_experts_per_tok=None,
)

_READ = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "intermediate_size": "d_ff",
    "moe_intermediate_size": "d_ff_expert",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "(checked: equal to num_attention_heads, the only value whose forward pass runs)",
    "hidden_act": "activation",
    "max_position_embeddings": "max_positions",
    "tie_word_embeddings": "tie_embeddings",
    "attention_bias": "attention_bias",
    "first_k_dense_replace": "n_dense_layers",
    "kv_lora_rank": "kv_lora_rank",
    "q_lora_rank": "q_lora_rank",
    "qk_nope_head_dim": "qk_nope_head_dim",
    "qk_rope_head_dim": "qk_rope_head_dim",
    "v_head_dim": "v_head_dim",
    "n_routed_experts": "n_experts",
    "n_shared_experts": "n_shared_experts",
    "num_experts_per_tok": "top_k",
    "n_group": "n_group",
    "topk_group": "topk_group",
    "pad_token_id": "(checked: inside the vocabulary)",
    "rope_parameters": "(checked: a rotary type transformers builds)",
    "num_labels": "num_labels",
    # DeepSeek's FP8 checkpoints hold every weight at its shape, in fp8, beside per-block scales
    "quantization_config": "(checked: DeepSeek's block-wise fp8, which keeps every weight's shape)",
}
_IGNORED = {
    "initializer_range": INITIALISATION,
    "use_cache": USE_CACHE,
    "bos_token_id": TOKEN_ID,
    "eos_token_id": TOKEN_ID,
    "attention_dropout": DROPOUT,
    "rms_norm_eps": _EPS,
    "pretraining_tp": "tensor-parallel slicing of the original training code; transformers 5.23's DeepSeek code "
    "does not read it (the same weights and FLOPs)",
    "output_router_logits": _ROUTER_LOGITS,
    "routed_scaling_factor": "multiplies the routed experts' weights: " + _ROUTING,
    "moe_layer_freq": "DeepSeek's own code gives experts to every moe_layer_freq-th layer after the dense ones; "
    "transformers 5.23 does not read it and gives experts to every layer from first_k_dense_replace on (every "
    "published file has 1, where both agree)",
    "ep_size": "expert parallelism of DeepSeek's own code: how experts are spread over devices, not their number",
    "qk_head_dim": "qk_nope_head_dim + qk_rope_head_dim, written by save_pretrained; transformers keeps the file's "
    "value as an attribute that the attention does not read (it adds the two widths itself), and generate reads "
    "only whether it is set",
}


def _table(model_type: str, defaults: dict[str, Any], read: dict[str, str], ignored: dict[str, str]) -> HFTable:
    family = FAMILIES[model_type]
    return HFTable(
        model_type=model_type,
        config_class=f"{family}Config",
        defaults={**_SHARED_DEFAULTS, **defaults},
        aliases={"num_experts": "n_routed_experts"}
        if model_type == "deepseek_v2"
        # V3's attribute_map also sends num_mtp_layers to num_nextn_predict_layers, which is no field (the field
        # is num_mtp_layers itself): both are ignored, as no module builds the multi-token prediction layers
        else {"num_local_experts": "n_routed_experts"},
        read={**_READ, **read},
        ignored={**_IGNORED, **ignored},
        refused={},
        base_class=f"{family}Model",
        classes={
            f"{family}{suffix}": {"head": head}
            for head, suffix in CLASS_SUFFIX.items()
            if head in FAMILY_HEADS[model_type]
        },
        defaults_unrunnable="DeepseekV2Config's defaults give every layer experts and no expert count per token "
        "(num_experts_per_tok null), which transformers' forward pass cannot run"
        if model_type == "deepseek_v2"
        else "",
    )


HF_DEEPSEEK_V2 = _table(
    "deepseek_v2",
    defaults=dict(
        vocab_size=102400,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=None,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        mlp_bias=False,
        head_dim=None,
        n_routed_experts=64,
        n_shared_experts=2,
        topk_method="greedy",
        moe_intermediate_size=1407,
    ),
    read={"mlp_bias": "mlp_bias", "topk_method": "topk_method"},
    ignored={
        "head_dim": "replaced by qk_rope_head_dim when the configuration is loaded (DeepseekV2Config.__post_init__)",
        "scoring_func": _ORIGINAL.format("DeepseekV2Config") + "; its router always scores with a softmax",
        "aux_loss_alpha": _ORIGINAL.format("DeepseekV2Config") + "; a training loss weight, no parameters or FLOPs",
        "seq_aux": _ORIGINAL.format("DeepseekV2Config") + "; a training loss choice, no parameters or FLOPs",
        # a field of DeepseekV2Config that its router never reads (it keeps the top-k softmax scores as they are)
        "norm_topk_prob": f"not read by transformers 5.23's DeepseekV2 code: {_ROUTING}",
    },
)

HF_DEEPSEEK_V3 = _table(
    "deepseek_v3",
    defaults=dict(
        vocab_size=129280,
        hidden_size=7168,
        intermediate_size=18432,
        moe_intermediate_size=2048,
        num_hidden_layers=61,
        num_attention_heads=128,
        num_key_value_heads=128,
        n_shared_experts=1,
        n_routed_experts=256,
        routed_scaling_factor=2.5,
        n_group=8,
        topk_group=4,
        num_experts_per_tok=8,
        first_k_dense_replace=3,
        norm_topk_prob=True,
        max_position_embeddings=4096,
        bos_token_id=0,
        eos_token_id=1,
        rope_interleave=True,
        num_mtp_layers=1,
    ),
    read={
        "norm_topk_prob": "norm_topk_prob",
        "head_dim": "(checked: a rotary width transformers' forward pass runs with; it changes only the angles)",
        # the order of the rotary channels: no parameters and no matmul FLOPs, read only to check head_dim
        "rope_interleave": "(checked: with head_dim)",
    },
    ignored={
        "num_mtp_layers": _MTP,
        "num_nextn_predict_layers": "the name DeepSeek's files give num_mtp_layers: " + _MTP,
        "topk_method": _ORIGINAL.format("DeepseekV3Config") + "; its router always routes by sigmoid scores with a "
        "correction bias within the chosen groups",
        "scoring_func": _ORIGINAL.format("DeepseekV3Config") + "; its router always scores with a sigmoid",
        "aux_loss_alpha": _ORIGINAL.format("DeepseekV3Config") + "; a training loss weight, no parameters or FLOPs",
        "seq_aux": _ORIGINAL.format("DeepseekV3Config") + "; a training loss choice, no parameters or FLOPs",
    },
)


def _check_rope(rope: Any, config_class: str) -> None:
    """Refuse a rotary type transformers refuses to build (its other settings change no count)."""
    if rope is None:
        return
    if not isinstance(rope, dict):
        raise ValueError(
            f'rope_parameters: expected an object such as {{"rope_type": "default"}} or null, got {json.dumps(rope)[:60]}'
        )
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ValueError(
            f"rope_parameters: rope_type {json.dumps(kind)[:60]} is not one transformers' {config_class} builds; "
            f"expected one of {', '.join(ROPE_TYPES)}"
        )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _moe_layers(hf: dict[str, Any]) -> bool:
    layers, dense = hf["num_hidden_layers"], hf["first_k_dense_replace"]
    return not (_whole(layers) and _whole(dense) and dense >= layers)


def _common(hf: dict[str, Any], model_type: str) -> dict[str, Any]:
    """The keys both types read alike, after the checks that make transformers' forward pass fail."""
    config_class = f"{FAMILIES[model_type]}Config"
    check_padding_index(hf["vocab_size"], hf.get("pad_token_id"))
    _check_rope(hf["rope_parameters"], config_class)
    check_quantization(hf.get("quantization_config"), "fp8", "DeepSeek's fp8 (every weight at its shape)")
    heads, kv_heads = hf["num_attention_heads"], hf["num_key_value_heads"]
    if kv_heads is not None and kv_heads != heads:
        raise ValueError(
            f"num_key_value_heads: {kv_heads} differs from num_attention_heads {heads}; latent attention expands "
            f"keys and values for every head, and transformers' {FAMILIES[model_type]}Attention then repeats them "
            "again by the group count, which fails its forward pass; set it to num_attention_heads (or null)"
        )
    if _moe_layers(hf) and hf["num_experts_per_tok"] is None:
        raise ValueError(
            "num_experts_per_tok: null, but layers from first_k_dense_replace on have experts and the router "
            f"cannot choose None of them ({config_class}'s default); give the experts each token runs"
        )
    return dict(
        family=model_type,
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=heads,
        q_lora_rank=hf["q_lora_rank"],
        kv_lora_rank=hf["kv_lora_rank"],
        qk_nope_head_dim=hf["qk_nope_head_dim"],
        qk_rope_head_dim=hf["qk_rope_head_dim"],
        v_head_dim=hf["v_head_dim"],
        d_ff=hf["intermediate_size"],
        n_dense_layers=hf["first_k_dense_replace"],
        n_experts=hf["n_routed_experts"],
        top_k=hf["num_experts_per_tok"] if hf["num_experts_per_tok"] is not None else 1,
        d_ff_expert=hf["moe_intermediate_size"],
        n_shared_experts=hf["n_shared_experts"],
        activation=hf["hidden_act"],
        max_positions=hf["max_position_embeddings"],
        tie_embeddings=hf["tie_word_embeddings"],
        attention_bias=hf["attention_bias"],
        num_labels=hf["num_labels"],
    )


def _check_groups(hf: dict[str, Any], config_class: str, needed: int) -> None:
    """Refuse a grouping transformers' router cannot run: the experts split into ``n_group`` groups of at
    least ``needed``, of which ``topk_group`` are kept."""
    experts, groups, keep = hf["n_routed_experts"], hf["n_group"], hf["topk_group"]
    if not all(_whole(v) for v in (experts, groups, keep)) or groups <= 0:
        raise ValueError(
            f"n_group: {json.dumps(groups)} with topk_group {json.dumps(keep)}: {config_class}'s router splits the "
            "experts into n_group groups and keeps topk_group of them; give both as positive integers"
        )
    if experts % groups or experts // groups < needed:
        raise ValueError(
            f"n_group: {groups} groups cannot split {experts} experts into equal groups of at least {needed}, which "
            f"transformers' {config_class} router needs; choose a divisor of n_routed_experts"
        )
    if not 1 <= keep <= groups:
        raise ValueError(
            f"topk_group: the router cannot keep {keep} of {groups} expert groups; choose between 1 and n_group"
        )


@hf_reader(HF_DEEPSEEK_V2)
def _from_deepseek_v2(hf: dict[str, Any], model_class: str = "DeepseekV2Model") -> dict[str, Any]:
    width, heads = hf["hidden_size"], hf["num_attention_heads"]
    if _whole(width) and _whole(heads) and heads > 0 and width % heads:
        raise ValueError(
            f"num_attention_heads: {heads} heads do not divide hidden_size {width}, which transformers' "
            "DeepseekV2Config refuses; choose a divisor of hidden_size"
        )
    for key in ("qk_nope_head_dim", "kv_lora_rank"):
        if _whole(hf[key]) and hf[key] % 2:
            raise ValueError(
                f"{key}: {hf[key]} is odd; transformers' DeepseekV2 attention turns its rotary channels as complex "
                f"numbers on a view that starts {key} channels in, which fails at an odd offset; choose an even "
                f"{key} (DeepSeek-V3's classes take odd ones)"
            )
    if _moe_layers(hf):
        method = hf["topk_method"]
        if method not in ("greedy", "group_limited_greedy"):
            raise ValueError(
                f"topk_method: {json.dumps(method)[:40]} is not a routing transformers' DeepseekV2 router runs (its "
                "forward pass fails on any other); expected greedy or group_limited_greedy"
            )
        if method == "group_limited_greedy":
            _check_groups(hf, "DeepseekV2Config", 1)
            return dict(_common(hf, "deepseek_v2"), mlp_bias=hf["mlp_bias"], **_groups(hf), topk_method=method)
    # greedy routing reads neither n_group nor topk_group (the files of greedy models may hold null)
    return dict(_common(hf, "deepseek_v2"), mlp_bias=hf["mlp_bias"], topk_method="greedy")


def _groups(hf: dict[str, Any]) -> dict[str, Any]:
    """The router's groups, as `_check_groups` found them."""
    return dict(n_group=hf["n_group"], topk_group=hf["topk_group"])


def _check_rotary_width(hf: dict[str, Any]) -> None:
    """Refuse a head_dim with which transformers' DeepseekV3 forward pass fails. DeepseekV3Config keeps a file's
    head_dim (in place of qk_rope_head_dim), and the rotary embedding makes its angles for ``head_dim`` channels
    (``hidden_size // num_attention_heads`` when it is null or 0): ``2 ceil(head_dim / 2)`` cosines, broadcast
    against the rotary channels, half of them with rope_interleave. A width that broadcasts changes only the
    angles (no parameters, no matmul FLOPs); one that does not fails."""
    if "head_dim" not in hf:
        return
    rope, head_dim = hf["qk_rope_head_dim"], hf["head_dim"]
    if head_dim is not None and not _whole(head_dim):
        raise ValueError(f"head_dim: expected an integer or null, got {json.dumps(head_dim)[:40]}")
    width = head_dim or (hf["hidden_size"] // hf["num_attention_heads"] if hf["num_attention_heads"] else 0)
    cosines = 2 * -(-width // 2)
    fits = cosines // 2 in (1, rope // 2) if hf["rope_interleave"] else cosines == rope
    if not fits:
        raise ValueError(
            f"head_dim: {json.dumps(head_dim)} makes DeepseekV3's rotary embedding {cosines} channels wide, which "
            f"do not broadcast against the {rope} rotary channels (qk_rope_head_dim) and fail transformers' forward "
            "pass; remove the key or set it to qk_rope_head_dim"
        )


@hf_reader(HF_DEEPSEEK_V3)
def _from_deepseek_v3(hf: dict[str, Any], model_class: str = "DeepseekV3Model") -> dict[str, Any]:
    _check_rotary_width(hf)
    if not _moe_layers(hf):  # no router: its keys are not run
        return _common(hf, "deepseek_v3")
    _check_groups(hf, "DeepseekV3Config", 2)  # each group's score is the sum of its two best experts
    return dict(_common(hf, "deepseek_v3"), **_groups(hf), norm_topk_prob=hf["norm_topk_prob"])


ARCHITECTURE = Architecture(
    name="deepseek",
    title="DeepSeek-V2/V3",
    summary="Decoder-only Transformer with multi-head latent attention (low-rank queries, keys and values "
    "through a cached latent, decoupled rotary keys), dense feed-forwards in its first layers and a "
    "mixture of routed and shared experts in the rest; covers DeepSeek-V2, V2-Lite, V3 and R1.",
    citation="DeepSeek-AI. DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model. "
    "2024. arXiv:2405.04434; DeepSeek-AI. DeepSeek-V3 Technical Report. 2024. arXiv:2412.19437",
    config_model=DeepSeekConfig,
    build=build,
    reference=reference,
)

#: Hugging Face model type -> its reader
HF_READERS = {"deepseek_v2": _from_deepseek_v2, "deepseek_v3": _from_deepseek_v3}


register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({model_type: (reader, "deepseek") for model_type, reader in HF_READERS.items()})
