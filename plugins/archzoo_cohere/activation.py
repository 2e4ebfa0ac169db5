"""What transformers' CohereModel and CohereForCausalLM save for backward in a training step: the cohere plugin's
activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from archzoo.decoder_saves import (
    attention_width_gap,
    head_width,
    kv_heads_of,
    repeat_kv_qkv,
    rotary_tables,
    shared_norm_gap,
    swiglu_gap,
    token_and_lm_head,
)
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import ActivationSaves, GapTerm, SavedTerms, activation_memory_hook, fp32_softmax_gap

__all__ = ["SAVES", "register_activation_memory"]


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
        attention: terms.attention_saves(upcast=True, eager_qkv=repeat_kv_qkv(terms)),
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        mlp: 4 * b * Nf,
    }
    if terms.config.qk_norm:
        # a CohereLayerNorm over each head's d_h channels, on the queries and on the keys (weights h·d_h, h_kv·d_h)
        d_h = head_width(terms)
        for name, heads in (("q_norm", terms.h), ("k_norm", kv_heads_of(terms))):
            norm = _cohere_layer_norm(terms, N * heads * d_h, N * heads, heads * d_h)
            parts[f"{attention}.{name}"] = norm
            parts[attention] = parts[attention] + norm
    return parts


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    gaps: list[GapTerm | None] = [
        GapTerm(
            "CohereLayerNorm in fp32",
            _norm(terms) - 2 * terms.Nd,
            "CohereLayerNorm is written out in fp32 Python ops: three 4-byte tensors of its input's size, 1/σ per "
            "token and the fp32 copy of its weight, where Korthikanti counts the 2-byte input",
        ),
        shared_norm_gap(terms),
        attention_width_gap(terms, repeat_kv_qkv(terms)),
        fp32_softmax_gap(terms),
        swiglu_gap(terms, with_input=False),
    ]
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
    # the logits are scaled by logit_scale, a Python number: the product saves nothing
    outside=token_and_lm_head,
    gap=_gap,
    norm=_norm,
    stack=rotary_tables,
)


register_activation_memory = activation_memory_hook(SAVES)
