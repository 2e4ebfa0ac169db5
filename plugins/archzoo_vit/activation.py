"""What transformers' ViT classes save for backward in a training step, as the vit plugin's activation formula."""

from __future__ import annotations

from archzoo.formula import Poly
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    fp32_softmax_gap,
    gelu_new_gap,
    layer_norm_statistics_gap,
    over,
    symbol_of,
)

__all__ = ["SAVES", "register_activation_memory"]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    # ViT's eager attention runs softmax in fp32: its output in fp32, and a copy in the dtype for the value product
    return {terms.attention_block.name: terms.attention_saves(upcast=True), terms.ff.name: terms.feed_forward_saves()}


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    root, cfg = terms.root, terms.config
    channels, patch = symbol_of(root, "C", cfg.channels), symbol_of(root, "p", cfg.patch_size)
    n_p = symbol_of(root, "n_p", cfg.n_patches)
    out = {
        "embeddings.patch_embedding": terms.b * channels * patch**2 * n_p,  # the convolution saves the image
        "head": terms.b * terms.Nd,  # the [CLS] token, a view holding the whole final norm's output
    }
    for block in root.children:
        if block.name == "pooler":  # the [CLS] token, a view holding the last hidden state; tanh's output
            out["pooler"] = terms.b * terms.Nd + terms.b * over(block.approx, terms.d)
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    return [
        layer_norm_statistics_gap(terms),
        fp32_softmax_gap(terms),
        gelu_new_gap(terms),
        feed_forward_width_gap(terms),
    ]


#: measured with transformers 5.23 and torch 2.13 (tests/test_memory.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="vit",
    classes=("transformers.ViTModel", "transformers.ViTForImageClassification"),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
)


register_activation_memory = activation_memory_hook(SAVES)
