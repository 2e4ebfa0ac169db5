"""What transformers' T5 classes save for backward in a training step: the t5 plugin's activation formula.

Two stacks over the N source and the N target tokens (the reference feeds both N tokens), read stack by stack
(`archzoo.saved_tensors.SavedTerms.stack`). What is T5's own:

- T5LayerNorm is an RMS norm written in Python, in fp32 whatever the dtype: it saves its input, an fp32 copy of it
  (16-bit only: in fp32 the copy is the input), the fp32 ``1/rms`` a token, and the normalised tensor the weight
  multiplies; no native kernel, so the device does not change it.
- The relative position bias is looked up once per stack, in the first layer: its ``N²`` int64 bucket indices are
  the stack's (`reference_modules` puts the table there); every layer adds the bias to the unscaled scores, which
  saves nothing. With full recomputation the first layer looks it up without grad, and the later layers take the
  bias as an argument, which they save.
- Eager softmax runs in the dtype. With SDPA, the self-attention's mask carries the learned bias, which needs a
  gradient: SDPA then runs its math path, which on the CPU holds q, k, v and the probabilities in fp32; the
  cross-attention (a zero bias, no gradient) runs the flash kernel and saves that mask.
- The feed-forward is wi, the activation, wo; or gated (v1.1, FLAN-T5: gelu_new of wi_0 times wi_1, then wo), where
  the product saves both of its factors.
"""

from __future__ import annotations

from archzoo.decoder_saves import ACTIVATION_ELEMENTS, OUTPUT_SAVED
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    NORM_KINDS,
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    feed_forward_width_gap,
    gelu_new_gap,
)

__all__ = ["CLASSES", "SAVES", "register_activation_memory"]

#: the classes the formula is measured for (tests/test_activation_t5.py): the plugin's reference classes, transformers'
#: own with each stack's position bias registered on the stack. T5ForSequenceClassification is not among them: its
#: head selects the decoder's output with the input's end-of-sequence mask, and that boolean index, which autograd
#: saves, is as large as the data's count of end-of-sequence tokens, not a function of N.
CLASSES = tuple(
    f"archzoo_t5.ReferenceT5{suffix}"
    for suffix in (
        "Model",
        "ForConditionalGeneration",
        "EncoderModel",
        "ForTokenClassification",
        "ForQuestionAnswering",
    )
)

#: the d_ff-wide tensors each activation saves besides the linear layers' inputs (relu and tanh: their output, which
#: wo, or the gate's product, saves again)
_ACTIVATIONS = {name: ACTIVATION_ELEMENTS[name] for name in ("relu", "tanh", "quick_gelu")}

_FUSED_NOTE = (
    "SDPA, as transformers' T5 classes run it on the CPU: the self-attention's mask carries the learned relative "
    "position bias, which needs a gradient, so SDPA runs its math path (q, k, v and the h·N² probabilities held in "
    "fp32); the cross-attention runs the flash kernel (a log-sum-exp per query and head) and saves its zero-bias mask"
)


def _decoder_layers(terms: SavedTerms) -> int:
    cfg = terms.config
    return int(cfg.n_decoder_layers or cfg.n_layers)


def _rms_norm(terms: SavedTerms) -> Poly:
    """T5LayerNorm: its input, its fp32 copy (16-bit only), the fp32 1/rms a token, the normalised tensor."""
    fp32_copy = terms.fp32 * terms.Nd if terms.dtype != "fp32" else const(0)
    return 2 * terms.b * terms.Nd + fp32_copy + terms.fp32 * N


def _feed_forward(terms: SavedTerms) -> Poly:
    """wi's input (shared by wi_0 and wi_1), the activation's own saves, wo's input (relu's and tanh's output, which
    they saved already), and when gated the two factors the gate's product saves, the activation's output and wi_1's
    (relu's output once more in one storage)."""
    d_ff_wide = terms.activation_elements + (3 if terms.config.gated else 1)
    return terms.b * terms.Nd + d_ff_wide * terms.b * terms.Nf


def _self_attention(terms: SavedTerms) -> Poly:
    """The projections' shared input, the core, o's input; the decoder's SDPA mask (causal, with the bias) is a bool
    a query and key pair."""
    b, Ni, h = terms.b, terms.Ni, terms.h
    if terms.attention == "eager":
        return terms.attention_saves(upcast=False)
    causal = N**2 if terms.layer.kind == "decoder_layer" else const(0)
    return b * terms.Nd + terms.fp32 * (3 * Ni + h * N**2) + causal + b * Ni


def _cross_attention(terms: SavedTerms) -> Poly:
    """q's input and the core over the encoder's N positions (eager: as the self-attention; SDPA: the flash kernel's
    q, k, v, its output, which o reads, and a log-sum-exp); the encoder output k and v read, and with SDPA the zero
    bias every layer's kernel saves, are one layer's when the decoder has one, else the stack's."""
    b, Ni, h = terms.b, terms.Ni, terms.h
    if terms.attention == "eager":
        saved = terms.attention_saves(upcast=False)
    else:
        saved = b * terms.Nd + 4 * b * Ni + terms.fp32 * h * N
    if _decoder_layers(terms) == 1:
        saved = saved + b * terms.Nd + (b * h * N**2 if terms.attention == "fused" else const(0))
    return saved


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    parts = {terms.attention_block.name: _self_attention(terms), terms.ff.name: _feed_forward(terms)}
    if terms.layer.kind == "decoder_layer":
        parts["cross_attention"] = _cross_attention(terms)
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """What a stack's layers share. Without recomputation: the decoder's, the encoder output every layer's k and v
    read and (SDPA) the cross-attention's zero bias, when several layers read them. Recomputed (each layer's
    arguments saved): the position bias the first layer computes and the later ones take; in the decoder also the
    cross-attention's zero bias the first layer makes, the encoder output and (eager) the causal mask, N² in the
    dtype."""
    b, h = terms.b, terms.h
    decoder = terms.stack == "decoder"
    layers = _decoder_layers(terms) if decoder else int(terms.config.n_layers)
    if terms.recompute:
        if terms.attention != "eager":
            raise UnsupportedActivationMemory(
                "t5: full recomputation is measured with eager attention; the masks SDPA's layers take as arguments "
                "are not measured"
            )
        biases = (2 if decoder else 1) * b * h * N**2 if layers > 1 else const(0)
        return biases + (b * terms.Nd + b * N**2 if decoder else const(0))
    if not decoder or layers == 1:
        return const(0)
    return b * terms.Nd + (b * h * N**2 if terms.attention == "fused" else const(0))


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    cfg = terms.config
    ids = terms.token_ids
    sides = ("encoder", "decoder") if cfg.decoder else ("encoder",)
    # the stacks' embed_tokens look their ids up in the shared table; recomputed, the first layer looks the buckets up
    # without grad, so nothing is saved for them
    buckets = const(0) if terms.recompute else terms.int64 * N**2
    out: dict[str, Poly] = {"token": const(0)}
    for side in sides:
        out[side] = ids
        out[f"{side}.relative_attention_bias"] = buckets
    # each head's linear saves its input, the final norm's output (the LM head's scaled by d^-1/2, which saves
    # nothing); question answering's split into start and end logits is a view
    for head, block in (
        ("lm", "lm_head"),
        ("token_classification", "classifier"),
        ("question_answering", "qa_outputs"),
    ):
        if cfg.head == head:
            out[block] = terms.b * terms.Nd
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    """bf16, eager, meta: each term the exact layer less Korthikanti's counterpart (dropout terms apart)."""
    b, Nd, Nf = terms.b, terms.Nd, terms.Nf
    norms = sum(1 for c in terms.layer.children if c.kind in NORM_KINDS)
    gaps: list[GapTerm | None] = [
        GapTerm(
            "T5LayerNorm in fp32",
            norms * _rms_norm(terms) - 2 * b * Nd,
            "T5's RMS norm upcasts to fp32: besides its input it saves the fp32 copy, the fp32 1/rms a token and the "
            "normalised tensor the weight multiplies, where Korthikanti counts two LayerNorms' inputs (a decoder layer "
            "has a third, before its cross-attention)",
        ),
        feed_forward_width_gap(terms),
        gelu_new_gap(terms),
    ]
    inner = terms.attention_saves(upcast=False) - (5 * b * Nd + b * terms.h * N**2)
    if not inner.is_zero():
        gaps.append(
            GapTerm(
                "attention width",
                inner,
                "T5's heads are d_kv wide whatever d_model is: the queries, keys, values and o's input are h·d_kv wide, "
                "where Korthikanti's are d",
            )
        )
    if terms.activation in OUTPUT_SAVED:
        gaps.append(
            GapTerm(
                f"{terms.activation} output shared",
                -b * Nf,
                f"{terms.activation} saves its output, which wo saves as its input (one storage), where Korthikanti "
                "counts GeLU's input beside it",
            )
        )
    if terms.config.gated:
        gaps.append(
            GapTerm(
                "gated feed-forward",
                2 * b * Nf,
                "v1.1's gate: the product saves wi_1's output beside the activation's, and wo reads the product",
            )
        )
    if terms.layer.kind == "decoder_layer":
        gaps.append(
            GapTerm(
                "cross-attention",
                _cross_attention(terms),
                "a decoder layer's cross-attention (q's input, the queries, the keys, values and probabilities over "
                "the encoder's positions, o's input), which Korthikanti's layer has no counterpart for; its norm is "
                "among the norms",
            )
        )
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_t5.py, at several configurations and
#: lengths)
SAVES = ActivationSaves(
    architecture="t5",
    classes=CLASSES,
    activations=_ACTIVATIONS,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_rms_norm,
    fused_note=_FUSED_NOTE,
    fused_label="SDPA, its math path where the mask carries the position bias",
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
