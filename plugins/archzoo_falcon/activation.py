"""What transformers' FalconModel and FalconForCausalLM save for backward in a training step: the falcon plugin's
activation formula, registered by the plugin's ``register_activation_memory`` hook (its ``__init__`` imports it)."""

from __future__ import annotations

from dataclasses import replace

from archzoo.decoder_saves import (
    ACTIVATION_ELEMENTS,
    OUTPUT_SAVED,
    activation_saves_gap,
    configured_activation,
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
    layer_norm_statistics_gap,
    symbol_of,
)

__all__ = ["SAVES", "register_activation_memory"]


def _head_width(terms: SavedTerms) -> Poly:
    # d_model // n_heads, by the tree's symbol only where its formulas use it (multi-head attention's do not)
    cfg = terms.config
    return symbol_of(terms.root, "d_h", cfg.d_model // cfg.n_heads, definition="d / h")


def _check(terms: SavedTerms) -> None:
    cfg = terms.config
    if cfg.parallel_attn and cfg.norms == 2:
        raise UnsupportedActivationMemory(
            "falcon: the new decoder architecture's two LayerNorms read the same input, which ln_attn saves and "
            "ln_mlp does not save again; archzoo.saved_tensors gives every LayerNorm of a layer the same saves, so "
            "this layer is measured with archzoo.memory.measure_activations, not stated"
        )


def _eager_qkv(terms: SavedTerms) -> Poly:
    """The queries, keys and values the two products save, split out of the fused projection's output. Multi-query
    attention indexes its one key and one value head out (copies, d_h wide); the new decoder architecture
    broadcasts each key/value head to its group and flattens, and classic attention transposes its slices (copies, h
    heads each). Rotary positions make a new query (and key); with ALiBi the query the product saves is a view of
    the fused output, holding all of it, except in the new decoder architecture with groups of several query heads
    around several key/value heads, whose flattened query is a copy."""
    cfg = terms.config
    Ni = terms.Ni
    d_h = _head_width(terms)
    if cfg.new_decoder_architecture:
        kv_heads = cfg.n_kv_heads or cfg.n_heads
        fused = N * (terms.inner + 2 * kv_heads * d_h)
        # flatten keeps a view when either of the two dimensions it merges is 1 (one group, or one query a group)
        query = fused if cfg.alibi and kv_heads in (1, cfg.n_heads) else Ni
        return query + 2 * Ni
    if cfg.multi_query:
        query = N * (terms.inner + 2 * d_h) if cfg.alibi else Ni
        return query + 2 * N * d_h
    return (3 * Ni if cfg.alibi else Ni) + 2 * Ni


def _indices(terms: SavedTerms) -> Poly:
    """The int64 index tensors ([-2], [-1]) that pick the key and value heads out of the fused output."""
    cfg = terms.config
    return 2 * terms.int64 if cfg.new_decoder_architecture or cfg.multi_query else const(0)


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    _check(terms)
    cfg = terms.config
    # FalconModel takes no attention implementation after it is built: asked for fused attention, transformers
    # keeps its eager attention (with a warning), so the fused figures are the eager ones (fused_note)
    terms = replace(terms, attention="eager")
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    activation = configured_activation(terms, "falcon")
    shared = cfg.norms == 1  # one LayerNorm whose output the fused projection and dense_h_to_4h both read
    mlp_in = const(0) if shared else b * Nd
    fc_out = const(0) if activation in OUTPUT_SAVED else b * Nf
    return {
        f"{attention}.qkv_proj": b * Nd,
        f"{attention}.out_proj": b * Ni,
        # softmax in the model's dtype (no fp32 copy): the probabilities saved once
        attention: terms.attention_saves(upcast=False, eager_qkv=_eager_qkv(terms)) + _indices(terms),
        f"{mlp}.fc_in": mlp_in,
        f"{mlp}.fc_out": fc_out,
        mlp: mlp_in + (ACTIVATION_ELEMENTS[activation] + 1) * b * Nf,
    }


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables every layer multiplies by (none with ALiBi)."""
    return const(0) if terms.config.alibi else rotary_tables(terms, _head_width(terms))


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    _check(terms)
    gaps: list[GapTerm | None] = [layer_norm_statistics_gap(terms)]
    if terms.config.norms == 1:
        gaps.append(shared_norm_gap(terms, "the fused projection"))
    width = 2 * _eager_qkv(terms) - 6 * terms.Nd + _indices(terms)
    if not width.is_zero():
        gaps.append(
            GapTerm(
                "fused QKV split",
                width,
                "multi-query attention's one key and value head are indexed out of the fused output (d_h wide each, "
                "with two int64 indices); with ALiBi the query saved is a view holding the whole fused output; "
                "Korthikanti's Q, K and V are d wide each",
            )
        )
    return [*gaps, activation_saves_gap(terms, "falcon"), feed_forward_width_gap(terms)]


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_falcon.py, at several configurations and
#: lengths)
SAVES = ActivationSaves(
    architecture="falcon",
    classes=("transformers.FalconModel", "transformers.FalconForCausalLM"),
    activations={"": 1},  # the tree's unnamed activation: configured_activation reads the configuration's
    layer=_layer,
    outside=token_and_lm_head,
    gap=_gap,
    stack=_stack,
    fused_note="FalconModel takes no attention implementation after it is built: transformers runs its eager "
    "attention, the h·N² probabilities saved",
)


register_activation_memory = activation_memory_hook(SAVES)
