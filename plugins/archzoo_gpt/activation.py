"""What transformers' GPT-2 classes save for backward in a training step, as the gpt plugin's activation formula."""

from __future__ import annotations

from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    gelu_new_gap,
    layer_norm_statistics_gap,
)

__all__ = ["SAVES", "register_activation_memory"]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    # Conv1D computes Q, K and V as one 3·inner-wide tensor: the query is a view holding all of it, the key and
    # value contiguous copies (eager), or the whole output and SDPA's copies (fused): 5 inner-wide tensors
    held = 5 * terms.Ni
    attention = terms.attention_saves(upcast=False, eager_qkv=held, fused_held=held)
    return {terms.attention_block.name: attention, terms.ff.name: terms.feed_forward_saves()}


def _stack(terms: SavedTerms) -> Poly:
    # GPT-2 passes its additive causal mask to every layer positionally: recomputed layers save it as an input
    return terms.b * N**2 if terms.recompute else const(0)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    return {
        "token": terms.token_ids,
        "position": terms.token_ids,  # GPT-2 makes its position ids in forward, where BERT keeps a buffer
        "lm_head": terms.b * terms.Nd,
    }


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        GapTerm(
            "fused QKV output held",
            4 * terms.Nd,
            "GPT-2's Conv1D computes Q, K and V as one 3d-wide tensor; the query saved for Q Kᵀ is a view "
            "holding all of it (6 bytes a token and channel), and the transposed key and the value are saved "
            "as contiguous copies (2 + 2), against Korthikanti's 2 for each of Q, K and V",
        ),
        gelu_new_gap(terms),
        feed_forward_width_gap(terms),
    ]


#: measured with transformers 5.23 and torch 2.13 (tests/test_memory.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="gpt",
    classes=("transformers.GPT2Model", "transformers.GPT2LMHeadModel"),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
