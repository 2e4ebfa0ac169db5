"""What transformers' DeepSeek-V2 and DeepSeek-V3 classes save for backward in a training step: the deepseek plugin's
activation formulas (the plugin's ``__init__`` imports its hook), each term measured against autograd in
tests/test_activation_deepseek.py.

**Latent attention.** The query is ``q_proj``'s output, or ``q_b_proj``'s after the low-rank ``q_a_proj`` and its
RMSNorm; ``kv_a_proj_with_mqa`` makes the latent and the shared rotary key in one tensor, the latent's RMSNorm reads
a view of it (in fp32 that view's whole storage is saved, ``r_kv + d_r`` wide; in bf16 its fp32 copy, ``r_kv``
wide), and ``kv_b_proj`` expands the normalised latent into every head's keys and values. The products save the
queries and keys, each ``h (d_n + d_r)`` wide (a concatenation and a new tensor), and the values, a view of
``kv_b_proj``'s output: its whole storage, ``h (d_n + d_v)`` wide. Softmax is upcast to fp32. With SDPA, the CPU's
flash kernel runs where a head's query/key and value widths agree (``d_n + d_r = d_v``); where they differ (every
released DeepSeek-V2/V3: 192 and 128) SDPA falls back to its math path, which saves the ``h N²`` probabilities in
fp32 and, from a bf16 model, fp32 copies of the queries, keys and values. DeepSeek-V3's rotary cos and sin tables
(``d_r`` wide, in the dtype) and DeepSeek-V2's complex table (``d_r / 2`` complex64 numbers, 4 bytes a channel in
any dtype) are built once and read by every layer.

**Mixture of experts.** The router casts its input and, from a bf16 model, its ``E x d`` weight to fp32 (a copy
the linear saves: a term that does not grow with N), then saves its scores (V3: sigmoid, V2: softmax), the int64
indices of its top-k choices and, where it limits them to groups of experts (V3 always, V2's group_limited_greedy),
those of each group's best and of the kept groups, and the mask of the experts left out; V3's ``norm_topk_prob`` saves
the renormalised weights and their sum (`Routing`). archzoo's configurations do not carry these keys: the formula
reads them where a configuration does, and otherwise takes the routing archzoo's reference is built with (V3 with one
group and norm_topk_prob, V2 greedy). Each expert runs on the tokens routed to it, and every tensor it saves is as
long as its token count: the gathered inputs, the gate and up projections' output (one storage, of which the
activation and the product read views), the activation's output, the product, the down projection's output, the
weighted output and the routing weights and int64 positions of its tokens. The sum over the experts is therefore
the sum of their token counts, ``N k`` (each token reaches ``k`` distinct experts), whichever experts the router
picks. The shared experts are one gated feed-forward over every token (transformers
builds it ``n_s d_e`` wide even with no shared experts, and a bf16 model saves its input then too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archzoo.decoder_saves import ACTIVATION_ELEMENTS, OUTPUT_SAVED
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    fp32_softmax_gap,
    symbol_of,
)

__all__ = ["V2_SAVES", "V3_SAVES", "Routing", "register_activation_memory", "router_saves"]


def _width(terms: SavedTerms, name: str, value: int) -> Poly:
    """The tree's symbol ``name`` (``r_kv``, ``d_e``), bound to the configuration's ``value``."""
    return symbol_of(terms.root, name, value)


def _elements(terms: SavedTerms) -> int:
    """The tensors, as wide as the feed-forward's hidden layer, the activation saves besides its output (silu's
    input; relu and tanh save their output only); refused for an activation the formula does not know."""
    activation = str(terms.config.activation)
    if activation not in ACTIVATION_ELEMENTS:
        raise UnsupportedActivationMemory(
            f"deepseek: activation {activation!r}: the formula knows what {', '.join(ACTIVATION_ELEMENTS)} save; "
            "measure another with archzoo.memory.measure_activations"
        )
    return 0 if activation in OUTPUT_SAVED else ACTIVATION_ELEMENTS[activation]


def _gated(terms: SavedTerms, width: Poly) -> Poly:
    """A gated feed-forward ``width`` wide over N tokens, its input aside: the activation's own saves, its output,
    the up projection's output and their product (the down projection's input)."""
    return (_elements(terms) + 3) * terms.b * N * width


# ---- latent attention ----------------------------------------------------------------------------------


def _rms_norm(terms: SavedTerms, width: Poly, held: Poly | None = None) -> Poly:
    """transformers' DeepSeek RMSNorm over ``width`` channels: its input in fp32 (``held`` channels in fp32, the
    storage of the view it reads, when that view is an fp32 model's own), 1/rms per token in fp32, and the
    normalised tensor in the dtype for the weight."""
    fp32_input = held if held is not None and terms.dtype == "fp32" else width
    return terms.fp32 * N * fp32_input + terms.fp32 * N + terms.b * N * width


def _core(terms: SavedTerms) -> Poly:
    """What the attention products save (`module docstring`), by kind of attention."""
    cfg, b = terms.config, terms.b
    h = terms.h
    d_n = _width(terms, "d_n", cfg.qk_nope_head_dim)
    d_r = _width(terms, "d_r", cfg.qk_rope_head_dim)
    d_v = _width(terms, "d_v", cfg.v_head_dim)
    qk = h * N * (d_n + d_r)
    values = h * N * (d_n + d_v)  # the storage of kv_b_proj's output, of which the values are a view
    if terms.attention == "eager":
        return 2 * b * qk + b * values + terms.probabilities(upcast=True)
    if cfg.qk_nope_head_dim + cfg.qk_rope_head_dim == cfg.v_head_dim:  # SDPA's flash kernel
        return 2 * b * qk + b * values + terms.fp32 * h * N + b * h * N * d_v
    # SDPA's math path: scaled fp32 queries and keys, the fp32 probabilities, and the values (an fp32 copy of them
    # from a bf16 model, else the view of kv_b_proj's output)
    held_values = terms.fp32 * h * N * d_v if terms.dtype != "fp32" else b * values
    return 2 * terms.fp32 * qk + terms.fp32 * h * N**2 + held_values


def _out_proj(terms: SavedTerms) -> Poly:
    """The output projection's input, ``h d_v`` wide: a copy of the heads' output laid out by token, except after
    SDPA's flash kernel when that layout is already contiguous (one head, or one token), where it is the tensor the
    kernel saved."""
    cfg = terms.config
    flash = terms.attention == "fused" and cfg.qk_nope_head_dim + cfg.qk_rope_head_dim == cfg.v_head_dim
    if flash and (cfg.n_heads == 1 or terms.seq_len == 1):
        return const(0)
    return terms.b * N * terms.h * _width(terms, "d_v", cfg.v_head_dim)


def _attention(terms: SavedTerms) -> dict[str, Poly]:
    cfg, b = terms.config, terms.b
    name = terms.attention_block.name
    r_kv = _width(terms, "r_kv", cfg.kv_lora_rank)
    d_r = _width(terms, "d_r", cfg.qk_rope_head_dim)
    parts: dict[str, Poly] = {}
    if cfg.q_lora_rank is None:
        parts["q_proj"] = b * terms.Nd
    else:
        r_q = _width(terms, "r_q", cfg.q_lora_rank)
        parts["q_a_proj"] = b * terms.Nd
        parts["q_a_norm"] = _rms_norm(terms, r_q)
        parts["q_b_proj"] = b * N * r_q
    parts["kv_a_proj"] = const(0)  # reads the input the query projection saved
    parts["kv_a_norm"] = _rms_norm(terms, r_kv, held=r_kv + d_r)
    parts["kv_b_proj"] = b * N * r_kv
    parts["out_proj"] = _out_proj(terms)
    whole = sum(parts.values(), _core(terms))
    return {name: whole, **{f"{name}.{part}": poly for part, poly in parts.items()}}


# ---- feed-forwards ---------------------------------------------------------------------------------------


def _mixture(terms: SavedTerms) -> bool:
    return any(c.kind == "mixture_of_experts" for c in terms.layer.children)


@dataclass(frozen=True)
class Routing:
    """How the router chooses, as transformers' configuration keys name it: ``n_group`` groups of experts of which
    ``topk_group`` are kept (V3 always; V2 with ``topk_method`` ``group_limited_greedy``), and V3's
    ``norm_topk_prob``. The default is the routing archzoo's reference is built with (`archzoo_deepseek.reference`:
    V3 with one group and DeepseekV3Config's norm_topk_prob, V2 greedy)."""

    n_group: int = 1
    topk_group: int = 1
    norm_topk_prob: bool = True
    topk_method: str = "greedy"

    @classmethod
    def of(cls, config: Any) -> Routing:
        """The routing ``config`` states, each key it does not carry at the reference's value."""
        return cls(**{key: getattr(config, key) for key in _ROUTING_KEYS if getattr(config, key, None) is not None})


_ROUTING_KEYS = ("n_group", "topk_group", "norm_topk_prob", "topk_method")


def router_saves(terms: SavedTerms, v2: bool, routing: Routing | None = None) -> Poly:
    """The router's saves: its fp32 input (a copy from a bf16 model; an fp32 model's norm output, which it saves
    first) and, from a bf16 model, its weight's fp32 copy; then the scores and the int64 indices of its choices,
    and the choices of ``routing`` (default the configuration's, `Routing.of`)."""
    cfg = terms.config
    routing = Routing.of(cfg) if routing is None else routing
    E = _width(terms, "E", cfg.n_experts)
    k = _width(terms, "k", cfg.top_k)
    d = terms.d
    weight = terms.fp32 * E * d if terms.dtype != "fp32" else const(0)
    saves = weight + terms.fp32 * N * d + terms.fp32 * N * E + terms.int64 * N * k
    # the groups left out: the int64 indices of the kept groups (N x topk_group) and the bool mask of the experts
    # outside them (N x E)
    dropped = terms.int64 * N * routing.topk_group + N * E
    if v2:  # softmax scores; group-limited: each group's best score, an int64 index per group (N x n_group)
        if routing.topk_method == "group_limited_greedy":
            saves = saves + terms.int64 * N * routing.n_group + dropped
        return saves
    # sigmoid scores, saved by sigmoid and by the gather of the chosen weights; each group's score is the sum of its
    # best two (int64 indices, N x n_group x 2); norm_topk_prob divides the chosen weights by their sum (its fp32
    # denominator, N x 1, and the quotient, N x k)
    saves = saves + terms.int64 * N * 2 * routing.n_group + dropped
    if routing.norm_topk_prob:
        saves = saves + terms.fp32 * N + terms.fp32 * N * k
    return saves


def _experts(terms: SavedTerms) -> Poly:
    """The routed experts, summed over them: each saves, per token routed to it, two int64 positions (its token and
    its rank among the token's k), the gathered input, the gate and up projections' output (2 d_e), what the
    activation keeps beyond its input, its output, the product, the down projection's output and the weighted
    output (d wide each) and the fp32 routing weight. N k tokens in all."""
    cfg, b = terms.config, terms.b
    d_e = _width(terms, "d_e", cfg.d_ff_expert)
    k = _width(terms, "k", cfg.top_k)
    kept = max(_elements(terms) - 1, 0)  # the activation reads a view of the gate/up storage, saved whole
    per_token = 2 * terms.int64 + terms.fp32 + 3 * b * terms.d + (4 + kept) * b * d_e
    return N * k * per_token


def _shared_experts(terms: SavedTerms) -> Poly:
    cfg = terms.config
    # no shared experts: transformers still builds the feed-forward, 0 wide (no n_s in the tree then)
    width = (
        _width(terms, "n_s", cfg.n_shared_experts) * _width(terms, "d_e", cfg.d_ff_expert)
        if cfg.n_shared_experts
        else const(0)
    )
    # the norm output, which an fp32 model's router saved already (a bf16 router saved its fp32 copy)
    own_input = terms.b * terms.Nd if terms.dtype != "fp32" else const(0)
    return own_input + _gated(terms, width)


def _mlp(terms: SavedTerms, v2: bool) -> dict[str, Poly]:
    name = next(c.name for c in terms.layer.children if c.kind in ("feed_forward", "mixture_of_experts"))
    if not _mixture(terms):
        return {name: terms.b * terms.Nd + _gated(terms, terms.d_ff)}
    parts = {"gate": router_saves(terms, v2), "experts": _experts(terms), "shared_experts": _shared_experts(terms)}
    whole = sum(parts.values(), const(0))
    return {name: whole, **{f"{name}.{part}": poly for part, poly in parts.items()}}


# ---- the layer, the stack and the rest ---------------------------------------------------------------------


def _v3_layer(terms: SavedTerms) -> dict[str, Poly]:
    return {**_attention(terms), **_mlp(terms, v2=False)}


def _v2_layer(terms: SavedTerms) -> dict[str, Poly]:
    return {**_attention(terms), **_mlp(terms, v2=True)}


def _norm(terms: SavedTerms) -> Poly:
    return _rms_norm(terms, terms.d)


def _v3_tables(terms: SavedTerms) -> Poly:
    """DeepSeek-V3's rotary cos and sin tables, ``d_r`` wide in the dtype; recomputed layers take them as arguments."""
    if terms.recompute:
        return const(0)
    return 2 * terms.b * N * _width(terms, "d_r", terms.config.qk_rope_head_dim)


def _v2_table(terms: SavedTerms) -> Poly:
    """DeepSeek-V2's complex rotary table: ``d_r / 2`` complex64 numbers a token (4 bytes a channel, any dtype)."""
    if terms.recompute:
        return const(0)
    return 4 * N * _width(terms, "d_r", terms.config.qk_rope_head_dim)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    """The token ids and the head's input; the sequence classifier picks the last token's scores with an int64
    index (the reference has no padding token); the token classifier's dropout (p = 0.1: DeepSeek's configurations
    have no classifier_dropout) saves its mask, in the dtype."""
    parts = {"token": terms.token_ids, "lm_head": terms.b * terms.Nd, "score": terms.b * terms.Nd}
    if terms.config.head == "sequence_classification":
        parts[""] = terms.int64
    elif terms.config.head == "token_classification":
        parts[""] = terms.b * terms.Nd
    return parts


def _gap(terms: SavedTerms, parts: dict[str, Poly]) -> list[GapTerm | None]:
    """Korthikanti's layer (less its dropout) is four 2-byte LayerNorm inputs' worth of norms (4 s b h), an attention
    of 10 s b h + 2 a s² b, and an MLP of 18 s b h; each of this layer's parts against its own."""
    Nd = terms.Nd
    attention = parts[terms.attention_block.name]
    mlp_name = next(c.name for c in terms.layer.children if c.kind in ("feed_forward", "mixture_of_experts"))
    mlp = parts[mlp_name]
    softmax = fp32_softmax_gap(terms)
    if _mixture(terms):
        mlp_gap = GapTerm(
            "mixture of experts",
            mlp - 18 * Nd,
            "the router saves its fp32 input (and a bf16 model's fp32 copy of its E x d weight), its scores and the "
            "int64 indices of its choices; each of the k experts a token reaches saves the token's gathered input, "
            "its gate and up outputs, activation, product, down output and weighted output, its routing weight and "
            "two int64 positions; the shared experts are a gated feed-forward over every token; Korthikanti's MLP "
            "saves its input and the GeLU's input and output, 4h wide (18 s b h). The router's group choice is the "
            "configuration's, else the reference's (one group of experts; archzoo's DeepSeek configuration carries "
            "no n_group)",
        )
    else:
        mlp_gap = GapTerm(
            "gated feed-forward",
            mlp - 18 * Nd,
            "the gated feed-forward saves the gate's output (or what its activation keeps), the activation's and the "
            "up projection's outputs and their product (d_ff wide, 2 bytes each) besides its input, where "
            "Korthikanti's MLP saves the GeLU's input and output, 4h wide (18 s b h)",
        )
    return [
        GapTerm(
            "RMSNorm in fp32",
            2 * _norm(terms) - 4 * Nd,
            "each RMSNorm saves an fp32 copy of its input, 1/rms per token in fp32 and the 2-byte normalised tensor, "
            "where Korthikanti counts the LayerNorm's 2-byte input",
        ),
        softmax,
        GapTerm(
            "multi-head latent attention",
            attention - softmax.bytes - 10 * Nd - 2 * terms.h * N**2,
            "the low-rank query (q_a_proj, its RMSNorm, q_b_proj) and the key/value latent (its RMSNorm, kv_b_proj) "
            "save their inputs; the queries and keys are h (d_n + d_r) wide, the values a view of kv_b_proj's "
            "h (d_n + d_v)-wide output and the output projection's input h d_v, where Korthikanti's attention "
            "saves four d-wide tensors and the QKV input (10 s b h)",
        ),
        mlp_gap,
    ]


#: the activations beyond the core's own (`archzoo.memory.ACTIVATION_SAVES`) whose saves the formula states
_ACTIVATIONS = {name: ACTIVATION_ELEMENTS[name] for name in ("relu", "tanh", "quick_gelu")}

_FUSED = (
    "fused attention (SDPA): its flash kernel (a log-sum-exp per query and head, no h·N² tensor) where a head's "
    "query/key and value widths agree (d_n + d_r = d_v); else SDPA's math path, which saves the h·N² probabilities "
    "in fp32 (DeepSeek-V2's and V3's heads: 192 and 128 channels)"
)

#: DeepSeek-V3's classes (the reference for every configuration they build), measured with transformers 5.23 and
#: torch 2.13
V3_SAVES = ActivationSaves(
    architecture="deepseek",
    classes=tuple(
        f"transformers.DeepseekV3{suffix}"
        for suffix in ("Model", "ForCausalLM", "ForSequenceClassification", "ForTokenClassification")
    ),
    activations=_ACTIVATIONS,
    layer=_v3_layer,
    outside=_outside,
    gap=lambda terms: _gap(terms, _v3_layer(terms)),
    norm=_norm,
    stack=_v3_tables,
    fused_note=_FUSED,
    fused_label="SDPA, its math path where d_n + d_r differs from d_v",
)

#: DeepSeek-V2's classes (the reference for feed-forward biases, and where V3's cannot build the configuration)
V2_SAVES = ActivationSaves(
    architecture="deepseek",
    classes=tuple(
        f"transformers.DeepseekV2{suffix}" for suffix in ("Model", "ForCausalLM", "ForSequenceClassification")
    ),
    activations=_ACTIVATIONS,
    layer=_v2_layer,
    outside=_outside,
    gap=lambda terms: _gap(terms, _v2_layer(terms)),
    norm=_norm,
    stack=_v2_table,
    fused_note=_FUSED,
    fused_label="SDPA, its math path where d_n + d_r differs from d_v",
)

register_activation_memory = activation_memory_hook(V3_SAVES, V2_SAVES)
