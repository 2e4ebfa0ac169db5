"""What transformers' Starcoder2Model and Starcoder2ForCausalLM save for backward in a training step: the starcoder2
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from archzoo.decoder_saves import (
    ACTIVATION_ELEMENTS,
    OUTPUT_SAVED,
    activation_elements,
    activation_saves_gap,
    attention_width_gap,
    configured_activation,
    repeat_kv_qkv,
    rotary_tables,
    token_and_lm_head,
)
from archzoo.formula import Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
)

__all__ = ["SAVES", "register_activation_memory"]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    return {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first and read as it is; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_in": b * Nd,
        # relu and tanh save their output first, which c_proj then reads as its input
        f"{mlp}.fc_out": const(0) if configured_activation(terms, "starcoder2") in OUTPUT_SAVED else b * Nf,
        # softmax upcast to fp32, as Llama's
        attention: terms.attention_saves(upcast=True, eager_qkv=repeat_kv_qkv(terms)),
        # c_fc's input, the activation's saves, c_proj's input
        mlp: b * Nd + (activation_elements(terms, "starcoder2") + 1) * b * Nf,
    }


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        fp32_softmax_gap(terms),
        attention_width_gap(terms, repeat_kv_qkv(terms)),
        activation_saves_gap(terms, "starcoder2"),
        feed_forward_width_gap(terms),
    ]


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_starcoder2.py, at several configurations
#: and lengths); the tree's feed-forward does not record its activation, so the formula is registered for the
#: activations it knows and reads the configuration's own
SAVES = ActivationSaves(
    architecture="starcoder2",
    classes=("transformers.Starcoder2Model", "transformers.Starcoder2ForCausalLM"),
    activations=ACTIVATION_ELEMENTS,
    layer=_layer,
    outside=token_and_lm_head,
    gap=_gap,
    stack=rotary_tables,
)


register_activation_memory = activation_memory_hook(SAVES)
