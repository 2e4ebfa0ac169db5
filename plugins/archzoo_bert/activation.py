"""What transformers' BertModel saves for backward in a training step, as the bert plugin's activation formula."""

from __future__ import annotations

from archzoo.formula import Poly
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
    # softmax in the dtype; the feed-forward's input, its activation's saves, the down projection's input
    return {terms.attention_block.name: terms.attention_saves(upcast=False), terms.ff.name: terms.feed_forward_saves()}


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    b = terms.b
    return {
        "embeddings.token": terms.token_ids,
        "embeddings.segment": terms.token_ids,  # the token type ids; the position ids are a buffer
        "pooler": b * terms.Nd + b * terms.d,  # the first token, a view holding the last hidden state; tanh's output
    }


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [layer_norm_statistics_gap(terms), gelu_new_gap(terms), feed_forward_width_gap(terms)]


#: measured with transformers 5.23 and torch 2.13 (tests/test_memory.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="bert",
    classes=("transformers.BertModel",),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
)


register_activation_memory = activation_memory_hook(SAVES)
