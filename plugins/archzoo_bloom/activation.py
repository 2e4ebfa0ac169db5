"""What transformers' BloomModel and BloomForCausalLM save for backward in a training step: the bloom plugin's
activation formula."""

from __future__ import annotations

from dataclasses import replace

from archzoo.decoder_saves import token_and_lm_head
from archzoo.formula import Poly
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
)

__all__ = ["SAVES", "register_activation_memory"]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    # BloomAttention has no SDPA path: asked for fused attention, transformers keeps its eager attention (with a
    # warning), so the fused figures are the eager ones, and say so (FUSED_NOTE)
    terms = replace(terms, attention="eager")
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    return {
        f"{attention}.qkv_proj": b * Nd,
        f"{attention}.out_proj": b * Ni,
        # the query is a view holding the fused projection's whole 3·inner output, the transposed key and the
        # value copies; softmax in fp32, its output and a copy in the dtype; the output projection's input
        attention: terms.attention_saves(upcast=True, eager_qkv=5 * terms.Ni),
        f"{mlp}.fc_in": b * Nd,
        f"{mlp}.fc_out": b * Nf,
        # BloomGelu is one autograd function (the tanh approximation): it saves its input only
        mlp: b * Nd + 2 * b * Nf,
    }


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        fp32_softmax_gap(terms),
        GapTerm(
            "fused QKV output held",
            4 * terms.Nd,
            "BLOOM's query_key_value computes Q, K and V as one 3d-wide tensor; the query saved for the ALiBi "
            "product is a view holding all of it (6 bytes a token and channel), and the transposed key and the "
            "value are saved as copies (2 + 2), against Korthikanti's 2 for each of Q, K and V",
        ),
    ]


#: measured with transformers 5.23 and torch 2.13 (tests/test_bloom.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="bloom",
    classes=("transformers.BloomModel", "transformers.BloomForCausalLM"),
    activations={},
    layer=_layer,
    outside=token_and_lm_head,
    gap=_gap,
    fused_note="BloomAttention has no fused (SDPA) path: transformers runs its eager attention, the h·N² "
    "probabilities saved",
)


register_activation_memory = activation_memory_hook(SAVES)
