"""The saved-tensor terms decoder families' activation formulas state alike, built on `archzoo.saved_tensors`.

Cohere, StarCoder2, StableLM, Falcon and BLOOM each say what their transformers layers save for backward (their
``activation`` module); much of it is the same code under other names: a head's width and the key/value heads
read off the tree, what eager attention holds after ``repeat_kv``, the rotary tables every layer reads, the token
ids and the LM head's input outside the layers, an activation read from the configuration, the gaps from
Korthikanti's figure that recur. A family calls these and keeps what is its own; its registration hook is
`archzoo.saved_tensors.activation_memory_hook`.
"""

from __future__ import annotations

from .formula import N, Poly, const
from .saved_tensors import (
    ACTIVATION_SAVES,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    symbol_of,
)

__all__ = [
    "ACTIVATION_ELEMENTS",
    "OUTPUT_SAVED",
    "activation_elements",
    "activation_saves_gap",
    "attention_width_gap",
    "configured_activation",
    "head_width",
    "kv_heads_of",
    "pooled_index",
    "repeat_kv_qkv",
    "rotary_tables",
    "shared_norm_gap",
    "swiglu_gap",
    "token_and_lm_head",
]

#: The d_ff-wide tensors each activation saves besides the linears' inputs, for a family whose tree's feed-forward
#: does not name its activation (`Block.activation` is ""), so that the formula reads the configuration's own:
#: relu's and tanh's output is the down projection's input, saved once; quick_gelu (x · sigmoid(1.702 x), in
#: Python) saves its input and the sigmoid's output.
ACTIVATION_ELEMENTS = {**ACTIVATION_SAVES, "relu": 0, "tanh": 0, "quick_gelu": 2}

#: the activations whose saved output is the down projection's input
OUTPUT_SAVED = ("relu", "tanh")


def head_width(terms: SavedTerms) -> Poly:
    """A head's width ``d_h``: the attention block's own, else the configuration's ``d_head`` when it has one and
    sets it, else ``d_model // n_heads`` (the tree's symbol when its formulas use it)."""
    if terms.attention_block.d_head is not None:
        return terms.attention_block.d_head
    cfg = terms.config
    width = getattr(cfg, "d_head", None) or cfg.d_model // cfg.n_heads
    return symbol_of(terms.root, "d_h", width, definition="d / h")


def kv_heads_of(terms: SavedTerms) -> Poly:
    """The key/value heads: the attention block's own, else as many as the query heads."""
    if terms.attention_block.kv_heads is not None:
        return terms.attention_block.kv_heads
    return terms.h


def repeat_kv_qkv(terms: SavedTerms) -> Poly:
    """The queries, keys and values eager attention's products save: repeat_kv copies the keys and values to every
    query head, except that one key/value head broadcast to all is a view of the h_kv-wide tensor (no copy)."""
    if kv_heads_of(terms).evaluate() == 1:
        return terms.Ni + 2 * N * terms.kv
    return 3 * terms.Ni


def rotary_tables(terms: SavedTerms, width: Poly | None = None) -> Poly:
    """The rotary cos and sin tables, ``width`` wide (a head's, `head_width`, unless the family turns fewer
    channels), every layer multiplies by; recomputed layers take them as keyword arguments, not saved."""
    if terms.recompute:
        return const(0)
    return 2 * terms.b * N * (head_width(terms) if width is None else width)


def token_and_lm_head(terms: SavedTerms) -> dict[str, Poly]:
    """What a decoder saves outside its layers: the token ids the embedding reads, and the LM head's input."""
    return {"token": terms.token_ids, "lm_head": terms.b * terms.Nd}


def pooled_index(terms: SavedTerms) -> Poly:
    """What a decoder's sequence classifier saves in the model's own forward (no block's) to pick the pooled token's
    scores: torch.arange over the batch of 1, an int64, and the last token's index, which is -1 (a Python number)
    without a padding id and, with the configuration's ``pad_token_id``, an argmax over the tokens that are not padding
    (a one-element int64 tensor, saved too)."""
    return terms.int64 * (1 if terms.config.pad_token_id is None else 2)


def configured_activation(terms: SavedTerms, family: str) -> str:
    """The feed-forward's activation, the tree's or else the configuration's, refused (naming ``family``) when the
    formula does not know what it saves (`ACTIVATION_ELEMENTS`)."""
    activation = terms.activation or str(terms.config.activation)
    if activation not in ACTIVATION_ELEMENTS:
        raise UnsupportedActivationMemory(
            f"{family}: activation {activation!r}: the formula knows what {', '.join(ACTIVATION_ELEMENTS)} save; "
            "measure another with archzoo.memory.measure_activations"
        )
    return activation


def activation_elements(terms: SavedTerms, family: str) -> int:
    """The d_ff-wide tensors the configured activation saves besides the linears' inputs."""
    return ACTIVATION_ELEMENTS[configured_activation(terms, family)]


def activation_saves_gap(terms: SavedTerms, family: str) -> GapTerm | None:
    """The activation's saves against Korthikanti's GeLU, which saves its input alone (none when they agree)."""
    elements = activation_elements(terms, family)
    if elements == 1:
        return None
    return GapTerm(
        "activation saves",
        (elements - 1) * 2 * terms.Nf,
        f"the activation saves {elements} d_ff-wide tensors besides the down projection's input, where "
        "Korthikanti's GeLU saves its input (one)",
    )


def attention_width_gap(terms: SavedTerms, qkv: Poly) -> GapTerm | None:
    """The queries, keys and values the products hold (``qkv`` elements) and the output projection's input, h·d_h
    wide, against Korthikanti's four d-wide tensors (none when they agree)."""
    width = 2 * qkv + 2 * terms.Ni - 8 * terms.Nd
    if width.is_zero():
        return None
    return GapTerm(
        "attention width",
        width,
        "the queries, keys and values the products hold and the output projection's input are h·d_h wide "
        "(one key/value head broadcast to every query head is held h_kv·d_h wide), where Korthikanti's are d",
    )


def shared_norm_gap(terms: SavedTerms, readers: str = "the attention's projections") -> GapTerm:
    """A parallel layer's one LayerNorm, whose output ``readers`` and the feed-forward share, against Korthikanti's
    sequential layer."""
    return GapTerm(
        "one LayerNorm, its output shared",
        -4 * terms.Nd,
        f"the parallel layer has one LayerNorm, whose output both {readers} and the feed-forward read and save once, "
        "where Korthikanti's sequential layer saves a second LayerNorm's input and the MLP's input (2 bytes each)",
    )


def swiglu_gap(terms: SavedTerms, *, with_input: bool) -> GapTerm:
    """A gated SiLU feed-forward's four d_ff-wide saves against Korthikanti's GeLU MLP (``with_input``: the
    feed-forward saves its input too, as a sequential layer's does)."""
    besides = " besides its input" if with_input else ""
    return GapTerm(
        "SwiGLU feed-forward",
        8 * terms.Nf - 16 * terms.Nd,
        "the gated feed-forward saves the gate's output, silu's output, the up projection's output and their "
        f"product (4 tensors of d_ff, 2 bytes each){besides}, where Korthikanti's MLP saves the GeLU's input and "
        "output, 4h wide (16 s b h)",
    )
