"""What transformers' WhisperModel, ForConditionalGeneration, ForCausalLM and ForAudioClassification save for
backward in a training step: the whisper plugin's activation formula.

Two stacks over different rows: the encoder always runs over its ``P_s`` positions (from ``2 P_s`` log-mel frames),
the decoder over the ``N`` tokens. The formula is read stack by stack (`archzoo.saved_tensors.SavedTerms.stack`),
which archzoo's core does from the version whose ``SavedTerms`` names a layer's stack; the plugin's ``__init__``
imports the hook only then (`CORE_READS_TWO_STACKS`). The encoder's terms are the shared ones with ``N`` read as
``P_s``.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from archzoo.formula import N, Poly, const, total
from archzoo.saved_tensors import (
    NORM_KINDS,
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    gelu_new_gap,
    layer_norm_statistics_gap,
    symbol_of,
)

__all__ = ["CLASSES", "CORE_READS_TWO_STACKS", "SAVES", "register_activation_memory"]

#: whether archzoo's activation formula reads a model of two stacks (its `SavedTerms` names the layer's stack)
CORE_READS_TWO_STACKS = "stack" in {f.name for f in fields(SavedTerms)}

#: the classes the formula is measured for (tests/test_activation_whisper.py)
CLASSES = (
    "transformers.WhisperModel",
    "transformers.WhisperForConditionalGeneration",
    "transformers.WhisperForCausalLM",
    "transformers.WhisperForAudioClassification",
)

#: relu and tanh keep their output, which fc2 saves as its input (one storage)
_ACTIVATIONS = {"relu": 0, "tanh": 0}


def _positions(terms: SavedTerms) -> Poly:
    """``P_s``, the encoder's positions."""
    return symbol_of(terms.root, "P_s", terms.config.max_source_positions)


def _mel_bins(terms: SavedTerms) -> Poly:
    return symbol_of(terms.root, "n_mel", terms.config.num_mel_bins)


def _rows(terms: SavedTerms, poly: Poly) -> Poly:
    """``poly``, stated for N rows, for the rows the layer's stack runs over: the encoder's ``P_s`` positions."""
    return poly.substitute("N", _positions(terms)) if terms.stack == "encoder" else poly


def _causal_lm(terms: SavedTerms) -> bool:
    return bool(terms.config.head == "causal_lm")


def _encoder_output_shared(terms: SavedTerms) -> bool:
    """Whether several decoder layers read the encoder's output (it is then the stack's, not one layer's)."""
    return terms.config.n_decoder_layers > 1


def _cross_attention(terms: SavedTerms) -> Poly:
    """Cross-attention from the N decoder tokens to the ``P_s`` encoder positions: q_proj's input, the queries, the
    keys and values over the positions, the ``h N P_s`` probabilities (eager) or an fp32 log-sum-exp per query and head
    (SDPA), and out_proj's input; the encoder output k_proj and v_proj read is added by the caller."""
    b, P, Ni = terms.b, _positions(terms), terms.Ni
    held = b * (Ni + 2 * P * terms.inner)
    # SDPA also holds its output, which out_proj reads through a copy
    core = held + b * terms.h * N * P if terms.attention == "eager" else held + b * Ni + terms.fp32 * terms.h * N
    return b * terms.Nd + core + b * Ni


def _own_layer(terms: SavedTerms) -> dict[str, Poly]:
    """One layer's blocks at N rows, the decoder's cross-attention apart."""
    b, Nd, Nf = terms.b, terms.Nd, terms.Nf
    # relu's and tanh's output, saved first by the activation module, is fc2's input
    output_saved = terms.activation in _ACTIVATIONS
    return {
        # softmax in the dtype; SDPA holds q, k, v and its output, which out_proj reads through a copy
        terms.attention_block.name: terms.attention_saves(upcast=False, fused_held=3 * terms.Ni + terms.Ni),
        terms.ff.name: b * Nd + (const(0) if output_saved else b * Nf),
        "": (1 if output_saved else terms.activation_elements) * b * Nf,  # the activation module beside fc1 and fc2
    }


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    parts = {path: _rows(terms, poly) for path, poly in _own_layer(terms).items()}
    if terms.layer.kind == "decoder_layer":
        if _causal_lm(terms):  # built, never run without an encoder output
            parts |= {"cross_attention": const(0), "cross_attention_norm": const(0)}
        else:
            encoder_output = const(0) if _encoder_output_shared(terms) else terms.b * _positions(terms) * terms.d
            parts["cross_attention"] = _cross_attention(terms) + encoder_output
    return parts


def _norm(terms: SavedTerms) -> Poly:
    return _rows(terms, terms.layer_norm())


def _stack(terms: SavedTerms) -> Poly:
    """The decoder's: the encoder's output (``P_s d``), read by every layer's cross-attention (and, recomputed, an
    argument of every layer's), and, recomputed with eager attention, the causal mask every layer takes (N² in the
    dtype). The encoder's layers take no mask."""
    if terms.stack != "decoder":
        return const(0)
    saved = const(0)
    if not _causal_lm(terms) and (terms.recompute or _encoder_output_shared(terms)):
        saved = saved + terms.b * _positions(terms) * terms.d
    if terms.recompute and terms.attention == "eager":
        saved = saved + terms.b * N**2
    return saved


def _layer_input(terms: SavedTerms) -> Poly:
    return _rows(terms, terms.b * terms.Nd)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    b, d, ids = terms.b, terms.d, terms.token_ids
    cfg = terms.config
    out: dict[str, Poly] = {}
    if cfg.head != "audio_classification":
        out |= {"decoder.token": ids, "decoder.position": ids}  # int64 indices, not buffers
    if not _causal_lm(terms):
        P = _positions(terms)
        out |= {
            "encoder.conv1": b * _mel_bins(terms) * 2 * P,  # its input, the 2 P_s log-mel frames
            "encoder.conv2": b * d * 2 * P,  # its input, GELU's output
            # nn.functional.gelu after each convolution, in the encoder's own forward: each saves its input (whatever
            # activation_function says); the positions' table is a parameter, added
            "encoder": b * d * 2 * P + b * d * P,
        }
    if cfg.head in ("lm", "causal_lm"):
        out["lm_head"] = b * terms.Nd  # proj_out's input, the decoder's output
    if cfg.head == "audio_classification":
        P = _positions(terms)
        out["projector"] = b * P * d  # its input: the encoder's output, or the weighted sum of its hidden states
        out["classifier"] = b * symbol_of(terms.root, "d_p", cfg.classifier_proj_size)  # the mean over positions
        if cfg.use_weighted_layer_sum:
            states = symbol_of(terms.root, "L_e", cfg.n_encoder_layers) + 1
            out["layer_weights"] = const(0)  # a parameter: its softmax, in the model's forward, saves
            # the softmax of the L_e + 1 weights (its output, read by its backward and by the product), and the L_e + 1
            # hidden states stacked for the product
            out[""] = b * states + b * states * P * d
    return out


def _layer_bytes(terms: SavedTerms, parts: dict[str, Poly]) -> Poly:
    norms = sum(1 for c in terms.layer.children if c.kind in NORM_KINDS)
    return total(parts.values()) + norms * terms.layer_norm()


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
    if terms.stack == "encoder":
        at_n = _layer_bytes(terms, _own_layer(terms))
        gaps.append(
            GapTerm(
                "encoder positions",
                _rows(terms, at_n) - at_n,
                "an encoder layer runs over the encoder's P_s positions whatever the N decoder tokens are: its bytes at "
                "P_s rows, less Korthikanti's at N",
            )
        )
    elif _causal_lm(terms):
        gaps.append(
            GapTerm(
                "cross-attention not run",
                -8 * N,
                "the decoder alone never runs its cross-attention: that LayerNorm, counted with the others, saves no "
                "fp32 mean and 1/σ",
            )
        )
    else:
        gaps.append(
            GapTerm(
                "cross-attention",
                _cross_attention(terms) + terms.b * terms.Nd,
                "a decoder layer's cross-attention sub-block (its LayerNorm's input, q_proj's input, the queries, the "
                "keys, values and probabilities over the encoder's P_s positions, out_proj's input), which "
                "Korthikanti's layer has no counterpart for",
            )
        )
    return gaps


def _saves() -> ActivationSaves:
    # a core that reads one stack has no layer_input either (the recomputed layer's input, P_s rows in the encoder)
    extra: dict[str, Any] = {"layer_input": _layer_input} if CORE_READS_TWO_STACKS else {}
    return ActivationSaves(
        architecture="whisper",
        classes=CLASSES,
        activations=_ACTIVATIONS,
        layer=_layer,
        outside=_outside,
        gap=_gap,
        norm=_norm,
        stack=_stack,
        **extra,
    )


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_whisper.py, at several configurations and
#: lengths)
SAVES = _saves()


register_activation_memory = activation_memory_hook(SAVES)
