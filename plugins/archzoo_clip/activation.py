"""What transformers' CLIP classes save for backward in a training step: the clip plugin's activation formula.

Two towers over different rows, read stack by stack (`archzoo.saved_tensors.SavedTerms.stack`), each with its own
widths, heads and activation: the text tower over the N caption tokens, the vision tower over the image's
``R = n_p + 1`` tokens (its patches and class token) whatever N is. The vision tower's terms are the shared ones with
``N`` read as ``R``, as Whisper's encoder reads its positions.

Both towers' layers are pre-LN with eager softmax in fp32 (its output, and a copy in the dtype for the value
product). Outside the layers: the patch convolution saves the image (cast to the dtype), the token embedding its
ids; the text tower pools its end-of-text token by indexing (an int64 index a dimension), the vision tower
normalises its class token (post_layernorm, whose input is a view holding the tower's whole last hidden state); each
projection and the classifier save their one-row input; CLIPModel's own forward normalises both embeddings and
scores them (`_similarity`).
"""

from __future__ import annotations

from archzoo.decoder_saves import ACTIVATION_ELEMENTS, activation_saves_gap
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    NORM_KINDS,
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    feed_forward_width_gap,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
    symbol_of,
)
from archzoo.symbols import declare_symbol

__all__ = ["CLASSES", "SAVES", "register_activation_memory"]

#: the classes the formula is measured for (tests/test_activation_clip.py): every class the plugin builds
CLASSES = tuple(
    f"transformers.{name}"
    for name in (
        "CLIPModel",
        "CLIPTextModel",
        "CLIPTextModelWithProjection",
        "CLIPVisionModel",
        "CLIPVisionModelWithProjection",
        "CLIPForImageClassification",
    )
)

#: the activations each tower may have, with the d_ff-wide tensors each saves besides the linears' inputs (relu's
#: and tanh's output is fc2's input; quick_gelu saves its input and the sigmoid's output)
_ACTIVATIONS = {
    name: ACTIVATION_ELEMENTS[name]
    for name in ("quick_gelu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh", "silu", "swish")
}

#: the image's side in pixels, which the patch convolution's saved input is (its patches need not tile it)
IMAGE_SIDE = declare_symbol("S", latex="S", meaning="image side in pixels (image_size)", order=33)


def _vision(terms: SavedTerms) -> bool:
    return terms.stack == "vision_model"


def _image_tokens(terms: SavedTerms) -> Poly:
    """``R = n_p + 1``: the image's patches and its class token."""
    return symbol_of(terms.root, "n_p", terms.config.n_patches) + 1


def _rows(terms: SavedTerms, poly: Poly) -> Poly:
    """``poly``, stated for N rows, for the rows the layer's tower runs over."""
    return poly.substitute("N", _image_tokens(terms)) if _vision(terms) else poly


def _own_layer(terms: SavedTerms) -> dict[str, Poly]:
    """One layer's blocks at N rows: eager softmax upcast to fp32; SDPA holds q, k, v, its output (out_proj's input)
    and a log-sum-exp. The activation's saves are the tower's own."""
    if terms.activation not in _ACTIVATIONS:
        raise UnsupportedActivationMemory(
            f"clip: activation {terms.activation!r} of the {terms.stack.removesuffix('_model')} tower: the formula "
            f"knows what {', '.join(_ACTIVATIONS)} save; measure another with archzoo.memory.measure_activations"
        )
    return {terms.attention_block.name: terms.attention_saves(upcast=True), terms.ff.name: terms.feed_forward_saves()}


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    return {path: _rows(terms, poly) for path, poly in _own_layer(terms).items()}


def _norm(terms: SavedTerms) -> Poly:
    return _rows(terms, terms.layer_norm())


def _layer_input(terms: SavedTerms) -> Poly:
    return _rows(terms, terms.b * terms.Nd)


def _stack(terms: SavedTerms) -> Poly:
    """Recomputed, the text tower's layers each take the causal mask (N² in the dtype) as an argument; the vision
    tower's take none."""
    if not terms.recompute or _vision(terms):
        return const(0)
    if terms.attention != "eager":
        raise UnsupportedActivationMemory(
            "clip: full recomputation is measured with eager attention; the mask SDPA's layers take is not measured"
        )
    return terms.b * N**2


def _similarity(terms: SavedTerms) -> Poly:
    """CLIPModel's own forward: each embedding divided by its norm (pow saves the embedding, pow(·, 0.5) the sum of
    squares, the division the embedding and the norm), the product of the two normalised embeddings (both saved),
    exp(logit_scale) (its output, which the scaling saves too) and the logit the scaling multiplies."""
    D = symbol_of(terms.root, "D", terms.config.projection_dim)
    return terms.b * (2 * (D + 2) + 2 * D + 2)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    cfg, root, b = terms.config, terms.root, terms.b
    out: dict[str, Poly] = {}
    towers = {child.name for child in root.children}
    if "text_model" in towers:
        # the token ids (the positions are a buffer's); pooling indexes the last hidden state with two int64 indices
        # of one element (the batch's and the end-of-text token's)
        out |= {"text_model.embeddings": terms.token_ids, "text_model": 2 * terms.int64}
    if "vision_model" in towers:
        d_v = symbol_of(root, "d_v", cfg.vision_d_model)
        R = symbol_of(root, "n_p", cfg.n_patches) + 1
        side = IMAGE_SIDE(cfg.image_size)
        out |= {
            # the convolution saves the image, cast to the dtype; the class token is concatenated and the positions
            # looked up in a buffer's indices
            "vision_model.embeddings": b * symbol_of(root, "C", cfg.channels) * side**2,
            "vision_model.pre_norm": b * R * d_v + 2 * terms.stats * R,
            # the class token: a view holding the whole last hidden state, and one row's mean and 1/σ
            "vision_model.post_norm": b * R * d_v + 2 * terms.stats,
        }
    for block in ("text_projection", "visual_projection", "classifier"):
        if block in towers:  # one row: the pooled token, or the mean of the patch tokens
            width = "d" if block == "text_projection" else "d_v"
            value = cfg.d_model if block == "text_projection" else cfg.vision_d_model
            out[block] = b * symbol_of(root, width, value)
    if "similarity" in towers:
        out |= {"logit_scale": const(0), "similarity": const(0), "": _similarity(terms)}
    return out


def _layer_bytes(terms: SavedTerms, parts: dict[str, Poly]) -> Poly:
    norms = sum(1 for c in terms.layer.children if c.kind in NORM_KINDS)
    return sum(parts.values(), const(0)) + norms * terms.layer_norm()


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    gaps: list[GapTerm | None] = [
        layer_norm_statistics_gap(terms),
        fp32_softmax_gap(terms),
        feed_forward_width_gap(terms),
        activation_saves_gap(terms, "clip"),
    ]
    if _vision(terms):
        at_n = _layer_bytes(terms, _own_layer(terms))
        gaps.append(
            GapTerm(
                "image tokens",
                _rows(terms, at_n) - at_n,
                "a vision layer runs over the image's n_p + 1 tokens whatever the N caption tokens are: its bytes at "
                "n_p + 1 rows, less Korthikanti's at N",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_clip.py, at several configurations and
#: lengths)
SAVES = ActivationSaves(
    architecture="clip",
    classes=CLASSES,
    activations=_ACTIVATIONS,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_norm,
    stack=_stack,
    layer_input=_layer_input,
)


register_activation_memory = activation_memory_hook(SAVES)
