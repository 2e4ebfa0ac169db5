"""What transformers' BART and mBART classes save for backward in a training step: the bart plugin's activation formula.

Two stacks, each over the ``N`` source (encoder) or target (decoder) tokens: the formula is read stack by stack
(`archzoo.saved_tensors.SavedTerms.stack`), which archzoo's core does from the version whose ``SavedTerms`` names a
layer's stack; the plugin's ``__init__`` imports the hook only then (`CORE_READS_TWO_STACKS`).
"""

from __future__ import annotations

from dataclasses import fields

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

__all__ = ["CLASSES", "CORE_READS_TWO_STACKS", "SAVES", "register_activation_memory"]

#: whether archzoo's activation formula reads a model of two stacks (its `SavedTerms` names the layer's stack)
CORE_READS_TWO_STACKS = "stack" in {f.name for f in fields(SavedTerms)}

#: the classes the formula is measured for (tests/test_activation_bart.py): BART's and mBART's
CLASSES = tuple(
    f"transformers.{family}{suffix}"
    for family in ("Bart", "MBart")
    for suffix in ("Model", "ForConditionalGeneration", "ForQuestionAnswering", "ForCausalLM")
)

#: what an activation saves besides the linear layers' inputs, d_ff wide: relu and tanh keep their output, which fc2
#: saves as its input (one storage)
_ACTIVATIONS = {"relu": 0, "tanh": 0}


def _causal_lm(terms: SavedTerms) -> bool:
    return bool(terms.config.head == "causal_lm")


def _encoder_output_shared(terms: SavedTerms) -> bool:
    """Whether the encoder's output, which every decoder layer's cross-attention key and value projections read, is
    saved by several layers (the stack's, then) rather than by the one decoder layer."""
    return terms.config.n_decoder_layers > 1


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    b, Nd, Nf = terms.b, terms.Nd, terms.Nf
    attention = terms.attention_saves(upcast=False)  # softmax in the dtype, as BartAttention's eager path runs it
    # fc1's input and fc2's; the activation module (activation_fn) beside them saves its own, the layer's; relu and
    # tanh save their output first, which fc2 then saves again (one storage, the activation module's)
    output_saved = terms.activation in _ACTIVATIONS
    parts = {
        terms.attention_block.name: attention,
        terms.ff.name: b * Nd + (const(0) if output_saved else b * Nf),
        "": (1 if output_saved else terms.activation_elements) * b * Nf,
    }
    if terms.layer.kind == "decoder_layer":
        if _causal_lm(terms):  # built, never run without an encoder output
            parts |= {"cross_attention": const(0), "cross_attention_norm": const(0)}
        else:
            # the same products over the encoder's N positions, q_proj's input the decoder's; the encoder output its
            # k_proj and v_proj read besides is the stack's when several layers read it
            encoder_output = const(0) if _encoder_output_shared(terms) else b * Nd
            parts["cross_attention"] = attention + encoder_output
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The decoder's: the encoder's output, read by every layer's cross-attention (and, recomputed, an argument of
    every layer's), and, recomputed with eager attention, the causal mask every layer takes as an argument (N² in the
    dtype; SDPA is given none). The encoder's layers take no mask: a batch of one is not padded."""
    if terms.stack != "decoder":
        return const(0)
    saved = const(0)
    if not _causal_lm(terms) and (terms.recompute or _encoder_output_shared(terms)):
        saved = saved + terms.b * terms.Nd
    if terms.recompute and terms.attention == "eager":
        saved = saved + terms.b * N**2
    return saved


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    ids = terms.token_ids  # each lookup's int64 indices
    cfg = terms.config
    sides = ("decoder",) if _causal_lm(terms) else ("encoder", "decoder")
    # BartLearnedPositionalEmbedding computes its positions (offset by 2): int64 indices, not a buffer
    out = {f"{side}.position": ids for side in sides}
    for side in sides:
        # a side's embed_tokens looks its ids up in the shared table (tied) or in its own (the stack's token block)
        out[side if cfg.tie_embeddings and not _causal_lm(terms) else f"{side}.token"] = ids
    if not _causal_lm(terms):
        out["shared"] = const(0)  # the table: the sides' lookups save the ids
    if cfg.head in ("lm", "causal_lm"):
        out["lm_head"] = terms.b * terms.Nd  # the decoder's output; final_logits_bias is added, which saves nothing
    if cfg.head == "question_answering":
        out["qa_outputs"] = terms.b * terms.Nd  # the split into start and end logits is a view
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    gaps: list[GapTerm | None] = [layer_norm_statistics_gap(terms), gelu_new_gap(terms), feed_forward_width_gap(terms)]
    if terms.activation in _ACTIVATIONS:
        gaps.append(
            GapTerm(
                f"{terms.activation} output shared",
                -2 * terms.Nf,
                f"{terms.activation} saves its output, which fc2 saves as its input (one storage), where Korthikanti "
                "counts GeLU's input beside it",
            )
        )
    if terms.layer.kind == "decoder_layer" and _causal_lm(terms):
        gaps.append(
            GapTerm(
                "cross-attention not run",
                -8 * N,
                "the decoder alone never runs its cross-attention: that LayerNorm, counted with the others, saves no "
                "fp32 mean and 1/σ",
            )
        )
    if terms.layer.kind == "decoder_layer" and not _causal_lm(terms):
        cross = _layer(terms)["cross_attention"]
        gaps.append(
            GapTerm(
                "cross-attention",
                cross + terms.b * terms.Nd,
                "a decoder layer's cross-attention sub-block (its LayerNorm's input and the attention's saves over the "
                "encoder's positions), which Korthikanti's layer has no counterpart for",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_bart.py, at several configurations and
#: lengths)
SAVES = ActivationSaves(
    architecture="bart",
    classes=CLASSES,
    activations=_ACTIVATIONS,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
