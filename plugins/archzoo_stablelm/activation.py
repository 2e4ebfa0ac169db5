"""What transformers' StableLmModel and StableLmForCausalLM save for backward in a training step: the stablelm
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from archzoo.decoder_saves import (
    head_width,
    kv_heads_of,
    repeat_kv_qkv,
    rotary_tables,
    shared_norm_gap,
    swiglu_gap,
    token_and_lm_head,
)
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
)
from archzoo.symbols import declare_symbol

__all__ = ["SAVES", "register_activation_memory"]

#: the channels of a head the rotary positions turn: the width of the cos and sin tables every layer reads
ROTARY = declare_symbol(
    "d_rot", latex="d_{rot}", meaning="rotary channels of a head (partial_rotary_factor · d_h)", order=29
)


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    cfg = terms.config
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    parts = {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # the products' output, transposed back to a token's heads side by side: a copy, with either attention
        f"{attention}.out_proj": b * Ni,
        # the parallel layer's feed-forward reads the LayerNorm output the query projection saved already
        f"{mlp}.fc_gate": const(0) if cfg.parallel_residual else b * Nd,
        f"{mlp}.fc_in": const(0),
        f"{mlp}.fc_out": b * Nf,
        # queries, keys and values after the rotary concatenation (keys and values repeated to every query head
        # for the products), softmax upcast to fp32; the q/k/v projections' shared input, the output's input
        # (SDPA saves its output besides the copy the output projection reads: the rotary concatenation leaves the
        # queries head-major, so the output is too)
        attention: terms.attention_saves(
            upcast=True, eager_qkv=repeat_kv_qkv(terms), fused_held=2 * Ni + 2 * N * terms.kv
        ),
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        mlp: (const(0) if cfg.parallel_residual else b * Nd) + 4 * b * Nf,
    }
    if cfg.qk_norm:
        # StableLmLayerNormPerHead: one contiguous copy of the queries (keys) that each head's LayerNorm reads a
        # slice of, and each head's mean and 1/σ per token
        d_h = head_width(terms)
        for name, heads in (("q_norm", terms.h), ("k_norm", kv_heads_of(terms))):
            norm = b * N * heads * d_h + 2 * terms.stats * heads * N
            parts[f"{attention}.{name}"] = norm
            parts[attention] = parts[attention] + norm
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables, ``d_rot`` wide (the rotary channels of a head, as StableLmAttention truncates
    them)."""
    cfg = terms.config
    return rotary_tables(terms, ROTARY(int((cfg.d_model // cfg.n_heads) * cfg.rotary_fraction)))


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    cfg = terms.config
    gaps: list[GapTerm | None] = [layer_norm_statistics_gap(terms), fp32_softmax_gap(terms)]
    width = 2 * repeat_kv_qkv(terms) - 6 * terms.Nd
    if not width.is_zero():
        gaps.append(
            GapTerm(
                "one key/value head broadcast",
                width,
                "one key/value head is broadcast to every query head as a view, so the key and value the products "
                "save are h_kv·d_h wide, where Korthikanti's are d",
            )
        )
    if cfg.parallel_residual:
        gaps.append(shared_norm_gap(terms))
    gaps.append(swiglu_gap(terms, with_input=True))
    if cfg.qk_norm:
        heads, d_h = terms.h + kv_heads_of(terms), head_width(terms)
        gaps.append(
            GapTerm(
                "per-head QK LayerNorms",
                2 * N * heads * d_h + 8 * N * heads,
                "a LayerNorm per query and key head saves a copy of the queries and keys (2 bytes each) and each "
                "head's mean and 1/σ per token in fp32, which Korthikanti's layer has no counterpart for",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_stablelm.py, at several configurations
#: and lengths)
SAVES = ActivationSaves(
    architecture="stablelm",
    classes=("transformers.StableLmModel", "transformers.StableLmForCausalLM"),
    activations={},
    layer=_layer,
    outside=token_and_lm_head,
    gap=_gap,
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
