"""What transformers' GPT-NeoX, GPT-J and Phi classes save for backward in a training step: the neox plugin's
activation formulas (the plugin's ``__init__`` imports its hook), each term measured against autograd in
tests/test_activation_neox.py.

GPT-NeoX: the fused projection's output is split and the queries and keys rebuilt by the rotary concatenation,
so the products save a copy of each of q, k and v (with SDPA, its output besides); softmax is upcast to fp32; the
rotary cos and sin tables, ``d_rot`` wide, are built once and read by every layer. GPT-J: one LayerNorm whose
output the query, key and value projections and the feed-forward share; each layer builds its own sin and cos
tables, repeated for the query and for the key (four tensors, ``d_rot`` wide), and casts the queries and keys to
fp32 before the product; it has no SDPA path, so its "fused" figure is its eager one. Phi: the same shared
LayerNorm, grouped-query attention (transformers' repeat_kv, SDPA's grouped path), optional LayerNorms on every
query and key head, and the model's rotary tables as GPT-NeoX's. The heads save their input; Phi's token
classifier its dropout's mask too (GenericForTokenClassification's p = 0.1, which PhiConfig has no key for). Each
activation the configurations accept keeps its own d_ff-wide tensors (`ACTIVATION_SAVES`).

GPT-NeoX's parallel residual: its two LayerNorms read one input, which the first saves and the second does not save
again (the second's figure is the layer's own: its statistics). The sequence classifiers pick the pooled token's
scores with index tensors, which the model's own forward saves: the batch's ``arange`` (one int64) and, when the
configuration has a padding token (``pad_token_id``), the last non-padding token's index, an argmax (a second
int64); without one the last token's index is -1, a Python number.
"""

from __future__ import annotations

from dataclasses import replace

from archzoo.decoder_parts import kv_heads
from archzoo.decoder_saves import (
    attention_width_gap,
    head_width,
    pooled_index,
    rotary_tables,
    shared_norm_gap,
    token_and_lm_head,
)
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    feed_forward_width_gap,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
)
from archzoo.symbols import declare_symbol

__all__ = ["GPTJ_SAVES", "NEOX_SAVES", "PHI_SAVES", "register_activation_memory"]

#: the channels of a head the rotary positions turn: the width of the cos and sin tables
ROTARY = declare_symbol(
    "d_rot",
    latex="d_{rot}",
    meaning="rotary channels of a head (rotary_pct or partial_rotary_factor · d_h rounded up to even, GPT-J's "
    "rotary_dim)",
    order=29,
)

#: each of transformers' activations without parameters (ACT2CLS, as archzoo_neox.ACTIVATIONS lists them): the
#: d_ff-wide tensors its backward saves (in the dtype), and whether its output is one of them, which the down
#: projection then reads without saving it again; measured with torch 2.13 in fp32 and bf16, on the meta device and
#: the CPU (tests/test_activation_neox.py). Those written in Python ops keep their intermediates: gelu_new,
#: gelu_python_tanh and gelu_accurate four, gelu_fast seven, gelu_python three, gelu_10 (a clamp) and quick_gelu two.
ACTIVATION_SAVES: dict[str, tuple[int, bool]] = {
    "gelu": (1, False),
    "gelu_10": (2, False),
    "gelu_accurate": (4, False),
    "gelu_fast": (7, False),
    "gelu_new": (4, False),
    "gelu_python": (3, False),
    "gelu_python_tanh": (4, False),
    "gelu_pytorch_tanh": (1, False),
    "hardswish": (1, False),
    "laplace": (1, False),
    "leaky_relu": (1, False),
    "linear": (0, False),
    "mish": (1, False),
    "quick_gelu": (2, False),
    "relu": (1, True),
    "relu2": (1, False),
    "relu6": (1, False),
    "sigmoid": (1, True),
    "silu": (1, False),
    "sqrtsoftplus": (2, True),
    "swish": (1, False),
    "tanh": (1, True),
}

#: SDPA's grouped-query path takes heads up to this wide (transformers' use_gqa_in_sdpa on the CPU)
SDPA_GROUPED_WIDTH = 256


def _rotary_width(terms: SavedTerms) -> Poly:
    """``d_rot``, the width of the cos and sin tables: GPT-J's rotary_dim, else the fraction of a head
    GPTNeoXAttention and PhiAttention truncate to, rounded up to even: the rotary embedding makes a frequency for
    every channel pair it starts (``arange(0, dim, 2)``) and doubles them, so an odd number of channels (which
    GPT-NeoX runs, turning one channel more) makes a table one wider."""
    cfg = terms.config
    if hasattr(cfg, "rotary_dim"):
        return ROTARY(cfg.rotary_dim)
    channels = int((cfg.d_model // cfg.n_heads) * cfg.rotary_fraction)
    return ROTARY(channels + channels % 2)


def _model_tables(terms: SavedTerms) -> Poly:
    """GPT-NeoX's and Phi's rotary cos and sin tables, built once by the model and read by every layer."""
    return rotary_tables(terms, _rotary_width(terms))


def _own_table_gap(terms: SavedTerms) -> GapTerm | None:
    """A one-layer stack's rotary tables are its layer's (the formula folds them in)."""
    if terms.config.n_layers != 1:
        return None
    return GapTerm(
        "a rotary table of its own",
        _model_tables(terms),
        "the one layer is the only reader of the rotary cos and sin tables, so they are saved with it, where "
        "Korthikanti's layer has no position table",
    )


def _activation(terms: SavedTerms) -> tuple[int, bool]:
    """The configured activation's d_ff-wide saves (`ACTIVATION_SAVES`), refused for one the table lacks."""
    activation = str(terms.config.activation)
    if activation not in ACTIVATION_SAVES:
        raise UnsupportedActivationMemory(
            f"{terms.root.name}: activation {activation!r}: the formula knows what {', '.join(ACTIVATION_SAVES)} "
            "save; measure another with archzoo.memory.measure_activations"
        )
    return ACTIVATION_SAVES[activation]


def _feed_forward(terms: SavedTerms, *, shared_input: bool) -> dict[str, Poly]:
    """The feed-forward's saves: its input (unless the layer's one LayerNorm output, saved by the query projection
    first), what the activation keeps and the down projection's input (unless the activation's own output)."""
    b, Nd, Nf, mlp = terms.b, terms.Nd, terms.Nf, terms.ff.name
    tensors, output_saved = _activation(terms)
    fc_in = const(0) if shared_input else b * Nd
    return {
        f"{mlp}.fc_in": fc_in,
        f"{mlp}.fc_out": const(0) if output_saved else b * Nf,
        mlp: fc_in + (tensors + (0 if output_saved else 1)) * b * Nf,
    }


def _output_copy(terms: SavedTerms) -> Poly:
    """The output projection's input: the products' output with its heads side by side again, a copy; except
    SDPA's for one token or one head, whose transpose is contiguous already, so the projection reads the output
    SDPA saved."""
    if terms.attention == "fused" and (terms.seq_len == 1 or terms.config.n_heads == 1):
        return const(0)
    return terms.b * terms.Ni


def _activation_gaps(terms: SavedTerms) -> list[GapTerm | None]:
    """The activation's d_ff-wide saves against Korthikanti's GeLU (its input and output, two tensors), and the
    feed-forward's width against the paper's 4 d."""
    tensors, output_saved = _activation(terms)
    held = tensors + (0 if output_saved else 1)
    saves = None
    if held != 2:
        saves = GapTerm(
            "activation saves",
            (held - 2) * 2 * terms.Nf,
            f"{terms.config.activation} and the down projection save {held} d_ff-wide tensor(s) (2 bytes each), where "
            "Korthikanti's GeLU saves its input and the down projection its output (two)",
        )
    return [saves, feed_forward_width_gap(terms)]


# ---- GPT-NeoX ----------------------------------------------------------------------------------------


def _neox_layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni = terms.b, terms.Nd, terms.Ni
    attention, out = terms.attention_block.name, _output_copy(terms)
    # eager: the rotary concatenation's queries and keys and a copy of the values, softmax upcast to fp32; SDPA:
    # the queries, keys, values and its output, each h·d_h wide, and a log-sum-exp per query and head
    core = terms.attention_saves(upcast=True, eager_qkv=3 * Ni, fused_held=4 * Ni) - b * Ni + out
    parts = {
        f"{attention}.qkv_proj": b * Nd,
        f"{attention}.out_proj": out,
        attention: core,
        **_feed_forward(terms, shared_input=False),
    }
    if terms.config.parallel_residual:
        # both LayerNorms read the layer's input, which input_layernorm saves: post_attention_layernorm keeps only
        # its statistics (mean and 1/σ per token)
        parts["mlp_norm"] = 2 * terms.stats * N
    return parts


def _neox_gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        fp32_softmax_gap(terms),
        *_activation_gaps(terms),
        _own_table_gap(terms),
    ]


# ---- GPT-J -------------------------------------------------------------------------------------------


def _gptj_tables(terms: SavedTerms) -> Poly:
    """The sin and cos tables each GPT-J layer gathers and repeats for its queries and for its keys: four tensors
    ``d_rot`` wide, in the dtype, the layer's own (recomputed with it)."""
    return 4 * terms.b * N * _rotary_width(terms)


def _gptj_layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    # GPTJForCausalLM takes no attention implementation after it is built: asked for SDPA, transformers keeps its
    # eager attention (with a warning), so the fused figures are the eager ones (fused_note)
    terms = replace(terms, attention="eager")
    b, Nd, Ni = terms.b, terms.Nd, terms.Ni
    attention = terms.attention_block.name
    # the queries and keys cast to fp32 for the product, the values in the dtype; softmax in fp32, and its output
    # cast back for the value product
    core = 2 * terms.fp32 * Ni + b * Ni + terms.probabilities(upcast=True)
    return {
        # the one LayerNorm's output, read by the three projections and the feed-forward, saved once
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        f"{attention}.out_proj": b * Ni,
        attention: b * Nd + _gptj_tables(terms) + core + b * Ni,
        **_feed_forward(terms, shared_input=True),
    }


def _gptj_gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        shared_norm_gap(terms, "the query, key and value projections"),
        GapTerm(
            "rotary tables of its own",
            _gptj_tables(terms),
            "each layer gathers its sin and cos rows and repeats them for the queries and for the keys: four "
            "d_rot-wide tensors (2 bytes each) the products by position save, which Korthikanti's layer lacks",
        ),
        GapTerm(
            "fp32 queries and keys",
            4 * terms.Ni,
            "GPT-J casts the queries and keys to fp32 before their product, which saves them at 4 bytes each where "
            "Korthikanti counts 2",
        ),
        fp32_softmax_gap(terms),
        *_activation_gaps(terms),
    ]


# ---- Phi ---------------------------------------------------------------------------------------------


def _phi_kv_heads(terms: SavedTerms) -> Poly:
    """The key/value heads, as the tree's symbol (``h_kv``) or ``h``."""
    cfg = terms.config
    return kv_heads(cfg.n_heads, cfg.n_kv_heads, terms.h, head_width(terms), terms.inner)[0]


def _phi_repeated_qkv(terms: SavedTerms) -> Poly:
    """The queries, keys and values after repeat_kv: copies at the queries' width, except one key/value head
    broadcast to every query head, a view of that head (no copy)."""
    if (terms.config.n_kv_heads or terms.config.n_heads) == 1:
        return terms.Ni + 2 * N * terms.kv
    return 3 * terms.Ni


def _phi_sdpa_held(terms: SavedTerms) -> Poly:
    """What SDPA saves of q, k and v and its output: the keys and values at their own width on SDPA's grouped
    path (no mask, as a causal training step has, and heads at most 256 wide) or for one query token (its heads
    packed onto the key/value heads), else repeat_kv's."""
    grouped = terms.config.d_model // terms.config.n_heads <= SDPA_GROUPED_WIDTH
    qkv = terms.Ni + 2 * N * terms.kv if grouped or terms.seq_len == 1 else _phi_repeated_qkv(terms)
    return qkv + terms.Ni


def _phi_qk_norms(terms: SavedTerms) -> dict[str, Poly]:
    """PhiAttention's LayerNorm on every query (key) head: a contiguous copy of the transposed queries (keys) and
    each head's mean and 1/σ per token."""
    if not terms.config.qk_norm:
        return {}
    d_h, attention = head_width(terms), terms.attention_block.name
    return {
        f"{attention}.{name}": terms.b * N * heads * d_h + 2 * terms.stats * heads * N
        for name, heads in (("q_norm", terms.h), ("k_norm", _phi_kv_heads(terms)))
    }


def _phi_layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni = terms.b, terms.Nd, terms.Ni
    attention, out = terms.attention_block.name, _output_copy(terms)
    norms = _phi_qk_norms(terms)
    core = terms.attention_saves(upcast=True, eager_qkv=_phi_repeated_qkv(terms), fused_held=_phi_sdpa_held(terms))
    core = core - b * Ni + out
    return {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        f"{attention}.out_proj": out,
        **norms,
        attention: core + sum(norms.values(), const(0)),
        **_feed_forward(terms, shared_input=True),
    }


def _pooled_index(terms: SavedTerms) -> dict[str, Poly]:
    """What the sequence classifier saves in the model's own forward (`pooled_index`); nothing for the other heads."""
    return {"": pooled_index(terms)} if terms.config.head == "sequence_classification" else {}


def _phi_outside(terms: SavedTerms) -> dict[str, Poly]:
    """The token ids, the head's input, the sequence classifier's indices (`_pooled_index`) and, for the token
    classifier, its dropout's mask: PhiConfig declares no classifier_dropout or hidden_dropout, so
    GenericForTokenClassification's dropout runs at p = 0.1 whatever the configuration, its mask in the dtype (the
    model's own module, no block's)."""
    parts = {**token_and_lm_head(terms), "score": terms.b * terms.Nd, **_pooled_index(terms)}
    if terms.config.head == "token_classification":
        parts[""] = terms.b * terms.Nd
    return parts


def _phi_gap(terms: SavedTerms) -> list[GapTerm | None]:
    gaps: list[GapTerm | None] = [
        layer_norm_statistics_gap(terms),
        shared_norm_gap(terms),
        attention_width_gap(terms, _phi_repeated_qkv(terms)),
        fp32_softmax_gap(terms),
    ]
    if terms.config.qk_norm:
        heads = terms.h + _phi_kv_heads(terms)
        gaps.append(
            GapTerm(
                "per-head QK LayerNorms",
                2 * N * heads * head_width(terms) + 8 * N * heads,
                "a LayerNorm on every query and key head saves a copy of the queries and keys (2 bytes each) and each "
                "head's mean and 1/σ per token in fp32, which Korthikanti's layer has no counterpart for",
            )
        )
    return [*gaps, *_activation_gaps(terms), _own_table_gap(terms)]


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    """The token ids, the head's input (each head a linear over every token) and the sequence classifier's indices
    (`_pooled_index`)."""
    head = terms.b * terms.Nd
    heads = {name: head for name in ("score", "classifier", "qa_outputs")}
    return {**token_and_lm_head(terms), **heads, **_pooled_index(terms)}


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_neox.py, at several configurations and
#: lengths)
NEOX_SAVES = ActivationSaves(
    architecture="neox",
    classes=(
        "transformers.GPTNeoXModel",
        "transformers.GPTNeoXForCausalLM",
        "transformers.GPTNeoXForTokenClassification",
        "transformers.GPTNeoXForQuestionAnswering",
        "transformers.GPTNeoXForSequenceClassification",
    ),
    activations={"": 1},  # the tree's unnamed activation: the formula reads the configuration's
    layer=_neox_layer,
    outside=_outside,
    gap=_neox_gap,
    stack=_model_tables,
)

GPTJ_SAVES = ActivationSaves(
    architecture="gptj",
    classes=(
        "transformers.GPTJModel",
        "transformers.GPTJForCausalLM",
        "transformers.GPTJForQuestionAnswering",
        "transformers.GPTJForSequenceClassification",
    ),
    activations={"": 1},
    layer=_gptj_layer,
    outside=_outside,
    gap=_gptj_gap,
    fused_note="GPT-J's classes take no attention implementation after they are built: transformers runs their "
    "eager attention, the h·N² probabilities saved",
)

PHI_SAVES = ActivationSaves(
    architecture="phi",
    classes=(
        "transformers.PhiModel",
        "transformers.PhiForCausalLM",
        "transformers.PhiForTokenClassification",
        "transformers.PhiForSequenceClassification",
    ),
    activations={"": 1},
    layer=_phi_layer,
    outside=_phi_outside,
    gap=_phi_gap,
    stack=_model_tables,
)

register_activation_memory = activation_memory_hook(NEOX_SAVES, GPTJ_SAVES, PHI_SAVES)
