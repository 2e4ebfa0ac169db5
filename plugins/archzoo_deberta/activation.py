"""What transformers' DebertaV2Model and its head classes save for backward in a training step: the deberta
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    child,
    feed_forward_width_gap,
    layer_norm_statistics_gap,
    over,
    symbol_of,
)

__all__ = ["SAVES", "register_activation_memory"]

#: tensors of its input's size each activation saves: its input, and for gelu_new, written out in Python ops,
#: tanh's output, 1 + tanh and 0.5·x, for quick_gelu the sigmoid's output; relu and tanh save their output, which
#: the next linear layer reads (`_SAVE_OUTPUT`: saved once, by the activation first)
_ACTIVATION_SAVES = {
    "gelu": 1,
    "gelu_pytorch_tanh": 1,
    "silu": 1,
    "swish": 1,
    "gelu_new": 4,
    "quick_gelu": 2,
    "relu": 1,
    "tanh": 1,
}
_SAVE_OUTPUT = ("relu", "tanh")


def _activation(terms: SavedTerms, key: str) -> int:
    """The tensors of its input's size the activation the configuration names under ``key`` saves."""
    activation = getattr(terms.config, key)
    if activation not in _ACTIVATION_SAVES:
        raise UnsupportedActivationMemory(
            f"deberta: {key} {activation!r}: the formula knows what {', '.join(_ACTIVATION_SAVES)} save"
        )
    return _ACTIVATION_SAVES[activation]


def _next_reads_own(terms: SavedTerms, key: str) -> bool:
    """Whether the linear layer after the activation saves its input itself (else the activation saved it first:
    relu, tanh)."""
    return getattr(terms.config, key) not in _SAVE_OUTPUT


def _rows(terms: SavedTerms) -> Poly:
    """The 2k rows of the relative-position table."""
    return 2 * symbol_of(terms.root, "k", terms.config.span)


def _relative_terms(terms: SavedTerms) -> tuple[str, ...]:
    """The relative terms the attention adds (c2p, p2c), none without relative attention."""
    cfg = terms.config
    return tuple(cfg.pos_att_type) if cfg.relative_attention else ()


def _table_saver(terms: SavedTerms) -> str | None:
    """The projection that first saves the normalised position table (the layer's query projection when the
    position keys and queries share its weights, else the position key or query projection), or None where no
    projection saves it: without relative attention, without a term to project for, or without the LayerNorm (the
    table is then the embedding's weight, a parameter)."""
    cfg = terms.config
    if not (cfg.relative_attention and cfg.norm_rel_embeddings):
        return None
    if cfg.share_att_key:  # both shared projections run whatever the terms
        return "q_proj"
    if "c2p" in cfg.pos_att_type:
        return "pos_key_proj"
    if "p2c" in cfg.pos_att_type:
        return "pos_query_proj"
    return None


def _table(terms: SavedTerms) -> Poly:
    return terms.b * _rows(terms) * terms.d


def _relative(terms: SavedTerms, term: str) -> Poly:
    """What one relative term saves: the position keys (c2p) or queries (p2c), 2k rows each, for the product; its
    scores before the gather (h·N·2k, which the gather's backward keeps); the gather's index (N² int64); the scale
    it is divided by (a 0-dimensional tensor); and for p2c the keys, which c2p does not read."""
    b, rows = terms.b, _rows(terms)
    saves = b * rows * terms.inner + b * terms.h * N * rows + terms.int64 * N**2 + b
    return saves + b * terms.Ni if term == "p2c" else saves


def _attention(terms: SavedTerms) -> Poly:
    b, Ni = terms.b, terms.Ni
    saves = (
        b * terms.Nd  # the input the query, key and value projections share
        + b  # the scale the keys are divided by (a 0-dimensional tensor)
        + 2 * b * Ni  # the queries and the scaled, transposed keys for Q Kᵀ
        + N**2  # the inverted mask masked_fill fills by (bool)
        + b * terms.h * N**2  # softmax's output, in the dtype, read by the value product
        + b * Ni  # the values
        + b * Ni  # the output linear's input
    )
    for term in _relative_terms(terms):
        saves = saves + _relative(terms, term)
    return saves


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    b, Nd, Nf = terms.b, terms.Nd, terms.Nf
    attention = terms.attention_block.name
    parts = {
        attention: _attention(terms),
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        f"{attention}.out_proj": b * terms.Ni,
        "fc_in": b * Nd,
        "fc_out": b * Nf if _next_reads_own(terms, "activation") else const(0),
        # the activation between fc_in and fc_out, a module no block maps
        "": _activation(terms, "activation") * b * Nf,
    }
    for block in terms.attention_block.children:
        if block.name.startswith("pos_"):
            parts[f"{attention}.{block.name}"] = const(0)
    saver = _table_saver(terms)
    if saver is not None and terms.config.n_layers == 1 and not terms.recompute:
        # one layer: the table is its own, first saved by this projection; else the stack's (every layer reads it)
        parts[f"{attention}.{saver}"] = parts[f"{attention}.{saver}"] + _table(terms)
        parts[attention] = parts[attention] + _table(terms)
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The normalised position table, which every layer's projections read: held by the stack of two or more.
    Recomputed layers take it as a keyword argument, but the N×N attention mask as a positional one, which
    checkpointing saves: made from a mask of ones in the default dtype (fp32) whatever the model's."""
    if terms.recompute:
        return terms.fp32 * N**2
    if _table_saver(terms) is None or terms.config.n_layers == 1:
        return const(0)
    return _table(terms)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    cfg, b, d, Nd = terms.config, terms.b, terms.d, terms.Nd
    root = terms.root
    names = {block.name for block in root.children}
    out: dict[str, Poly] = {
        "token": terms.token_ids,
        "position": const(0),  # the position ids are a slice of a buffer
        "token_type": terms.token_ids,  # zeros made in forward
        "relative": const(0),  # the table's weight is read whole, a parameter
        # the LayerNorm of the 2k rows runs on the weight (a parameter): its statistics only
        "relative_norm": 2 * terms.stats * _rows(terms) if cfg.relative_attention else const(0),
        "unused_bias": const(0),
        # the embeddings are multiplied by the attention mask, cast to the dtype (one number a token)
        "": b * N,
    }
    if "embed_proj" in names:
        out["embed_proj"] = b * N * over(child(root, "embed_proj").approx, d)
    if "mlm_head" in names:
        width = over(child(child(root, "mlm_head"), "dense").approx, d)
        # dense's input, the activation's saves (dense's output; relu's and tanh's output is the LayerNorm's input),
        # the LayerNorm's input and statistics, the decoder's input
        norm_input = b * N * width if _next_reads_own(terms, "activation") else const(0)
        out["mlm_head"] = (
            b * Nd + _activation(terms, "activation") * b * N * width + norm_input + 2 * terms.stats * N + b * N * width
        )
    if cfg.head == "sequence_classification":
        # the first token is a view holding the last hidden state; the pooler's activation (a module no block maps)
        # saves the dense layer's output; the classifier reads the pooled vector
        out["pooler"] = b * Nd
        out[""] = out[""] + _activation(terms, "pooler_activation") * b * d
        out["classifier"] = b * d if _next_reads_own(terms, "pooler_activation") else const(0)
    else:
        for name in ("classifier", "qa_outputs"):
            out[name] = b * Nd
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    b = terms.b
    relative_terms = _relative_terms(terms)
    gaps: list[GapTerm | None] = [
        layer_norm_statistics_gap(terms),
        GapTerm(
            "attention scales",
            (1 + len(relative_terms)) * b,
            "each score product is divided by a 0-dimensional tensor (the square root of d_h times the number of "
            "score terms), which the division saves (2 bytes each)",
        ),
        GapTerm(
            "attention mask",
            N**2,
            "the mask is inverted for masked_fill in every layer, an N×N bool tensor (1 byte each) that Korthikanti's "
            "layer has no counterpart for",
        ),
    ]
    reasons = {
        "c2p": "content-to-position: the 2k position keys, the h·N·2k scores the gather reads from, its N² int64 "
        "index and the scale",
        "p2c": "position-to-content: the 2k position queries, the keys (a copy of their own), the h·N·2k scores the "
        "gather reads from, its N² int64 index and the scale",
    }
    for term in relative_terms:
        gaps.append(GapTerm(f"{term} relative scores", _relative(terms, term) - b, reasons[term]))
    if _table_saver(terms) is not None and terms.config.n_layers == 1:
        gaps.append(
            GapTerm(
                "relative-position table",
                _table(terms),
                "the one layer holds the normalised 2k-row position table its projections read",
            )
        )
    intermediates = {
        "gelu_new": "gelu_new is written in Python (0.5 x (1 + tanh(...))): autograd saves tanh's output, 1 + tanh "
        "and 0.5 x besides the input, three more d_ff-wide tensors",
        "quick_gelu": "quick_gelu is written in Python (x · sigmoid(1.702 x)): autograd saves the sigmoid's output "
        "besides the input, one more d_ff-wide tensor",
    }
    activation = terms.config.activation
    if activation in intermediates:
        more = _activation(terms, "activation") - 1
        gaps.append(GapTerm(f"{activation} intermediates", more * b * terms.Nf, intermediates[activation]))
    if activation in _SAVE_OUTPUT:
        gaps.append(
            GapTerm(
                f"{activation} output shared",
                -b * terms.Nf,
                f"{activation} saves its output, the tensor fc_out reads, once (2 bytes each), where Korthikanti's "
                "MLP saves the GeLU's input and its output",
            )
        )
    gaps.append(feed_forward_width_gap(terms))
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_deberta.py, at several configurations,
#: heads and lengths)
SAVES = ActivationSaves(
    architecture="deberta",
    classes=(
        "transformers.DebertaV2Model",
        "transformers.DebertaV2ForMaskedLM",
        "transformers.DebertaV2ForSequenceClassification",
        "transformers.DebertaV2ForTokenClassification",
        "transformers.DebertaV2ForQuestionAnswering",
    ),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
    fused_note="DebertaV2's disentangled attention has no fused (SDPA) path: transformers runs its eager "
    "attention, the h·N² probabilities saved",
)


register_activation_memory = activation_memory_hook(SAVES)
