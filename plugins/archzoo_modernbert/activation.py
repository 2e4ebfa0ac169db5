"""What transformers' ModernBertModel and its head classes save for backward in a training step: the modernbert
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from collections import Counter

from archzoo.formula import N, Poly, const, total
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
)

__all__ = ["SAVES", "register_activation_memory"]

#: tensors of its input's size each activation saves besides its input and its output: gelu_new is written out in
#: Python ops (tanh's output, 1 + tanh, 0.5·x), quick_gelu too (the sigmoid's output); relu and tanh save their
#: output instead of their input, which the next operation saves anyway
_ACTIVATION_EXTRA = {
    "gelu": 0,
    "gelu_pytorch_tanh": 0,
    "silu": 0,
    "swish": 0,
    "gelu_new": 3,
    "quick_gelu": 1,
    "relu": 0,
    "tanh": 0,
}
#: the activations that save their output, not their input
_SAVE_OUTPUT = ("relu", "tanh")


def _rotary_tables(terms: SavedTerms) -> Poly:
    """One kind of layer's cos and sin tables, N × d_h each: global and local layers rotate with tables of their
    own (different bases), which every layer of the kind multiplies its queries and keys by."""
    d_h = terms.attention_block.d_head
    if d_h is None:
        raise UnsupportedActivationMemory("modernbert: its attention records no head width (d_head)")
    return 2 * terms.b * N * d_h


def _windowed(terms: SavedTerms) -> bool:
    """Whether SDPA is given each local layer's sliding-window mask (an N × N tensor in the dtype, saved by its
    kernel): transformers skips the mask while N is under the half window (local_window // 2, ModernBertConfig's
    sliding_window), so from that many tokens on."""
    return terms.attention == "fused" and terms.seq_len >= terms.config.local_window // 2


def _own(terms: SavedTerms, kind: str, alone: bool) -> Poly:
    """What a layer of ``kind`` saves beyond what every layer saves: its kind's rotary tables when it is the only
    layer of that kind (``alone``; else the stack holds them), and, if it is local, SDPA's window mask where SDPA is
    given one. Recomputed layers save neither (the tables are keyword arguments of the checkpointed layer)."""
    if terms.recompute:
        return const(0)
    saves = _rotary_tables(terms) if alone else const(0)
    if kind == "sliding_attention" and _windowed(terms):
        saves = saves + terms.b * N**2
    return saves


def _own_of_layer(terms: SavedTerms, index: int) -> Poly:
    """`_own` of the stack's layer ``index``, by its kind (`ModernBertConfig.kinds`)."""
    kinds = terms.config.kinds()
    return _own(terms, kinds[index], kinds.count(kinds[index]) == 1)


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the blocks: the attention (with its Wqkv) and its output linear, the feed-forward (with its Wi and
    activation) and its output linear. Its LayerNorms are the default's."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    extra = _ACTIVATION_EXTRA.get(terms.activation)
    if extra is None:
        raise UnsupportedActivationMemory(
            f"modernbert: activation {terms.activation!r}: the formula knows what {', '.join(_ACTIVATION_EXTRA)} "
            "save in the gated feed-forward"
        )
    # eager: q and k after the rotation, the transposed key, Wqkv's whole output (the value is a view of it) and the
    # fp32 softmax with its copy in the dtype; SDPA holds the same q, k and Wqkv output, and a log-sum-exp
    held = 2 * Ni + 3 * Ni
    saves = terms.attention_saves(upcast=True, eager_qkv=held, fused_held=held)
    # this copy is the first of its run: layer 0 (the first layer), or layer 1 (the others' run, whose other copies
    # differ from it in `_stack`)
    saves = saves + _own_of_layer(terms, 0 if terms.layer.name == "first_layer" else 1)
    return {
        attention: saves,
        # SDPA's output is saved by SDPA first and read as it is; eager attention's is copied for Wo
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        # Wi's input, its 2·d_ff-wide output (the activation's input and the gate are views of it, the gate saved
        # by the product whatever the activation saves), the activation's output, the product (Wo's input)
        mlp: b * Nd + (4 + extra) * b * Nf,
        f"{mlp}.fc_out": b * Nf,
    }


def _stack(terms: SavedTerms) -> Poly:
    """The rotary tables of each kind of layer that several layers share, held by the stack; and what the copies of
    the "layer" run after its first (layers 2, 3, ...) save beyond or short of that first copy, whose figure the run
    counts for each: a window mask more or less where a layer's kind differs from layer 1's, a kind's tables where
    it is the only layer of that kind."""
    if terms.recompute:
        return const(0)
    kinds = terms.config.kinds()
    counts = Counter(kinds)
    shared = sum(1 for count in counts.values() if count > 1) * _rotary_tables(terms)
    if len(kinds) > 2:
        each = {kind: _own(terms, kind, count == 1) for kind, count in counts.items()}
        later = Counter(kinds[2:])
        shared = shared + total(n * (each[kind] - each[kinds[1]]) for kind, n in later.items())
    return shared


def _activation_saves(activation: str, rows: Poly, width: Poly, b: Poly) -> Poly:
    """What the prediction head's activation saves besides its output (which the LayerNorm saves): its input and
    intermediates, or nothing more for relu and tanh, which save that output."""
    extra = _ACTIVATION_EXTRA.get(activation)
    if extra is None:
        raise UnsupportedActivationMemory(
            f"modernbert: classifier_activation {activation!r}: the formula knows what {', '.join(_ACTIVATION_EXTRA)} "
            "save in the prediction head"
        )
    return (extra + (0 if activation in _SAVE_OUTPUT else 1)) * b * rows * width


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    b, d = terms.b, terms.d
    out = {"token": terms.token_ids}
    names = [block.name for block in terms.root.children]
    if "prediction_head" in names:
        pooled = terms.config.head == "sequence_classification"
        mean = pooled and terms.config.pooling == "mean"
        rows = const(1) if pooled else N
        # dense's input (the first token pooled is a view holding the whole last hidden state; the mean is a vector
        # of its own), the activation's saves (its input is dense's output), the LayerNorm's input and statistics
        out["prediction_head"] = (
            (b * d if mean else b * terms.Nd)
            + _activation_saves(terms.config.classifier_activation, rows, d, b)
            + b * rows * d
            + 2 * terms.stats * rows
        )
        if mean:
            # the mean is (hidden · mask).sum / mask.sum, in the model's own forward: the product saves the mask (a
            # bool a token, made when no attention mask is given) and the division the count (one int64)
            out[""] = N + terms.int64
    for name in ("decoder", "classifier"):
        if name in names:  # the head's output, on every token or on the pooled one
            out[name] = b * (d if terms.config.head == "sequence_classification" else terms.Nd)
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd, Ni, Nf = terms.Nd, terms.Ni, terms.Nf
    parts = _layer(terms)
    attention = parts[terms.attention_block.name]
    gaps: list[GapTerm | None] = [
        layer_norm_statistics_gap(terms),
        GapTerm(
            "fused QKV output held",
            # the rotated q, the transposed k, Wqkv's whole output and Wo's input (2 bytes each) against
            # Korthikanti's Q, K, V and output projection input
            2 * (Ni + Ni + 3 * Ni + Ni) - 8 * Nd,
            "Wqkv computes Q, K and V as one 3d-wide tensor, and the value the probabilities multiply is a view "
            "holding all of it (6 bytes a token and channel), besides the rotated queries and keys, where Korthikanti "
            "counts the value's 2",
        ),
        fp32_softmax_gap(terms),
        GapTerm(
            "gated feed-forward",
            (8 + 2 * _ACTIVATION_EXTRA[terms.activation]) * Nf - 16 * Nd,
            f"Wi makes the {terms.activation}'s input and the gate as one 2·d_ff-wide tensor (both saved as views of "
            "it), and the activation's output and the product are saved too (4 tensors of d_ff, 2 bytes each, and "
            "any intermediate the activation keeps), where Korthikanti's MLP saves the GeLU's input and output, 4h "
            "wide (16 s b h)",
        ),
    ]
    if not any(block.name == "attention_norm" for block in terms.layer.children):
        gaps.append(
            GapTerm(
                "no LayerNorm before the first layer's attention",
                -2 * Nd,
                "the first layer reads the normalised embedding, so it has one LayerNorm, where Korthikanti's layer "
                "saves two LayerNorms' inputs (2 bytes each)",
            )
        )
    rotary = attention - terms.attention_saves(upcast=True, eager_qkv=5 * Ni)
    if not rotary.is_zero():
        gaps.append(
            GapTerm(
                "rotary tables",
                rotary,
                "the only layer of its kind (global or local) holds that kind's rotary cos and sin tables (N·d_h "
                "each), which Korthikanti's layer has no counterpart for",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_modernbert.py, at several configurations,
#: layer kinds, windows, poolings, heads and lengths)
SAVES = ActivationSaves(
    architecture="modernbert",
    classes=(
        "transformers.ModernBertModel",
        "transformers.ModernBertForMaskedLM",
        "transformers.ModernBertForSequenceClassification",
        "transformers.ModernBertForTokenClassification",
        "transformers.ModernBertForQuestionAnswering",
    ),
    # accepted for the gated feed-forward, whose saves `_layer` states: elements in a plain two-linear MLP
    activations={"quick_gelu": 2, "relu": 0, "tanh": 0},
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
