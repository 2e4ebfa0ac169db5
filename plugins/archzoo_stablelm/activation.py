"""What transformers' StableLmModel and StableLmForCausalLM save for backward in a training step: the stablelm
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from collections.abc import Callable

from archzoo import hookimpl
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
    symbol_of,
)
from archzoo.symbols import declare_symbol

__all__ = ["SAVES", "register_activation_memory"]

#: the channels of a head the rotary positions turn: the width of the cos and sin tables every layer reads
ROTARY = declare_symbol(
    "d_rot", latex="d_{rot}", meaning="rotary channels of a head (partial_rotary_factor · d_h)", order=29
)


def _head_width(terms: SavedTerms) -> Poly:
    if terms.attention_block.d_head is not None:
        return terms.attention_block.d_head
    cfg = terms.config
    return symbol_of(terms.root, "d_h", cfg.d_model // cfg.n_heads, definition="d / h")


def _kv_heads(terms: SavedTerms) -> Poly:
    if terms.attention_block.kv_heads is not None:
        return terms.attention_block.kv_heads
    return terms.h


def _eager_qkv(terms: SavedTerms) -> Poly:
    """The queries, keys and values eager attention's products save: repeat_kv copies the keys and values to every
    query head, except that one key/value head broadcast to all is a view of the h_kv-wide tensor (no copy)."""
    if _kv_heads(terms).evaluate() == 1:
        return terms.Ni + 2 * N * terms.kv
    return 3 * terms.Ni


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
            upcast=True, eager_qkv=_eager_qkv(terms), fused_held=2 * Ni + 2 * N * terms.kv
        ),
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        mlp: (const(0) if cfg.parallel_residual else b * Nd) + 4 * b * Nf,
    }
    if cfg.qk_norm:
        # StableLmLayerNormPerHead: one contiguous copy of the queries (keys) that each head's LayerNorm reads a
        # slice of, and each head's mean and 1/σ per token
        d_h = _head_width(terms)
        for name, heads in (("q_norm", terms.h), ("k_norm", _kv_heads(terms))):
            norm = b * N * heads * d_h + 2 * terms.stats * heads * N
            parts[f"{attention}.{name}"] = norm
            parts[attention] = parts[attention] + norm
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables, ``d_rot`` wide, every layer multiplies by (recomputed layers take them as
    keyword arguments, not saved)."""
    if terms.recompute:
        return const(0)
    cfg = terms.config
    d_h = cfg.d_model // cfg.n_heads
    rotary = ROTARY(int(d_h * cfg.rotary_fraction))  # as StableLmAttention truncates it
    return 2 * terms.b * N * rotary


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    return {"token": terms.token_ids, "lm_head": terms.b * terms.Nd}


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    cfg = terms.config
    Nd, Nf = terms.Nd, terms.Nf
    gaps: list[GapTerm | None] = [layer_norm_statistics_gap(terms), fp32_softmax_gap(terms)]
    width = 2 * _eager_qkv(terms) - 6 * Nd
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
        gaps.append(
            GapTerm(
                "one LayerNorm, its output shared",
                -4 * Nd,
                "the parallel layer has one LayerNorm, whose output both the attention's projections and the "
                "feed-forward read and save once, where Korthikanti's sequential layer saves a second LayerNorm's "
                "input and the MLP's input (2 bytes each)",
            )
        )
    gaps.append(
        GapTerm(
            "SwiGLU feed-forward",
            8 * Nf - 16 * Nd,
            "the gated feed-forward saves the gate's output, silu's output, the up projection's output and their "
            "product (4 tensors of d_ff, 2 bytes each) besides its input, where Korthikanti's MLP saves the GeLU's "
            "input and output, 4h wide (16 s b h)",
        )
    )
    if cfg.qk_norm:
        kv_heads, d_h = _kv_heads(terms), _head_width(terms)
        gaps.append(
            GapTerm(
                "per-head QK LayerNorms",
                2 * N * (terms.h + kv_heads) * d_h + 8 * N * (terms.h + kv_heads),
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
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


@hookimpl
def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
    register(SAVES)
