"""What transformers' CohereModel and CohereForCausalLM save for backward in a training step: the cohere plugin's
activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from collections.abc import Callable

from archzoo import hookimpl
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import ActivationSaves, GapTerm, SavedTerms, fp32_softmax_gap, symbol_of

__all__ = ["SAVES", "register_activation_memory"]


def _head_width(terms: SavedTerms) -> Poly:
    if terms.attention_block.d_head is not None:
        return terms.attention_block.d_head
    cfg = terms.config
    return symbol_of(terms.root, "d_h", cfg.d_head or cfg.d_model // cfg.n_heads, definition="d / h")


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


def _cohere_layer_norm(terms: SavedTerms, elements: Poly, rows: Poly, width: Poly) -> Poly:
    """CohereLayerNorm is written out in Python ops in fp32: it saves three fp32 tensors of its input's size (the
    centred input, for the square and for the scaling, and the normalised one the weight multiplies), 1/σ per row in
    fp32 and, for a 16-bit model, the fp32 copy of its weight (``width`` elements) the product reads."""
    fp32 = terms.fp32
    weight = const(0) if terms.dtype == "fp32" else fp32 * width
    return 3 * fp32 * elements + fp32 * rows + weight


def _norm(terms: SavedTerms) -> Poly:
    return _cohere_layer_norm(terms, terms.Nd, N, terms.d)


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    parts = {
        # the one LayerNorm's output, read by the q/k/v projections and by the feed-forward (parallel layers)
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first and read as it is; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_gate": const(0),
        f"{mlp}.fc_in": const(0),
        f"{mlp}.fc_out": b * Nf,
        # softmax upcast to fp32, as Llama's
        attention: terms.attention_saves(upcast=True, eager_qkv=_eager_qkv(terms)),
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        mlp: 4 * b * Nf,
    }
    if terms.config.qk_norm:
        # a CohereLayerNorm over each head's d_h channels, on the queries and on the keys (weights h·d_h, h_kv·d_h)
        d_h = _head_width(terms)
        for name, heads in (("q_norm", terms.h), ("k_norm", _kv_heads(terms))):
            norm = _cohere_layer_norm(terms, N * heads * d_h, N * heads, heads * d_h)
            parts[f"{attention}.{name}"] = norm
            parts[attention] = parts[attention] + norm
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables every layer multiplies by (recomputed layers take them as keyword arguments)."""
    if terms.recompute:
        return const(0)
    return 2 * terms.b * N * _head_width(terms)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    # the logits are scaled by logit_scale, a Python number: the product saves nothing
    return {"token": terms.token_ids, "lm_head": terms.b * terms.Nd}


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd, Ni, Nf = terms.Nd, terms.Ni, terms.Nf
    gaps: list[GapTerm | None] = [
        GapTerm(
            "CohereLayerNorm in fp32",
            _norm(terms) - 2 * Nd,
            "CohereLayerNorm is written out in fp32 Python ops: three 4-byte tensors of its input's size, 1/σ per "
            "token and the fp32 copy of its weight, where Korthikanti counts the 2-byte input",
        ),
        GapTerm(
            "one LayerNorm, its output shared",
            -4 * Nd,
            "the parallel layer has one LayerNorm, whose output both the attention's projections and the "
            "feed-forward read and save once, where Korthikanti's sequential layer saves a second LayerNorm's "
            "input and the MLP's input (2 bytes each)",
        ),
    ]
    width = 2 * _eager_qkv(terms) + 2 * Ni - 8 * Nd
    if not width.is_zero():
        gaps.append(
            GapTerm(
                "attention width",
                width,
                "the queries, keys and values the products hold and the output projection's input are h·d_h wide "
                "(one key/value head broadcast to every query head is held h_kv·d_h wide), where Korthikanti's are d",
            )
        )
    gaps.append(fp32_softmax_gap(terms))
    gaps.append(
        GapTerm(
            "SwiGLU feed-forward",
            8 * Nf - 16 * Nd,
            "the gated feed-forward saves the gate's output, silu's output, the up projection's output and their "
            "product (4 tensors of d_ff, 2 bytes each), where Korthikanti's MLP saves the GeLU's input and output, "
            "4h wide (16 s b h)",
        )
    )
    if terms.config.qk_norm:
        parts = _layer(terms)
        gaps.append(
            GapTerm(
                "per-head QK LayerNorms",
                parts[f"{terms.attention_block.name}.q_norm"] + parts[f"{terms.attention_block.name}.k_norm"],
                "a CohereLayerNorm per query and key head saves three fp32 copies of the queries and keys, 1/σ per "
                "token and head and its fp32 weight, which Korthikanti's layer has no counterpart for",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_cohere.py, at several configurations and
#: lengths)
SAVES = ActivationSaves(
    architecture="cohere",
    classes=("transformers.CohereModel", "transformers.CohereForCausalLM"),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_norm,
    stack=_stack,
)


@hookimpl
def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
    register(SAVES)
