"""What torch.nn.Transformer (and the plugin's Seq2SeqTransformer around it) saves for backward in a training step.

Two stacks, each over N tokens (the source's, the target's), read stack by stack
(`archzoo.saved_tensors.SavedTerms.stack`); each layer post-norm (the reference builds ``norm_first=False``), every
stack closed by its LayerNorm (torch.nn.Transformer always adds one). The forward is the reference's: no source or
target mask is given, so the decoder's self-attention reads every target token.

nn.MultiheadAttention projects queries, keys and values with one packed weight and always calls
``scaled_dot_product_attention``: "eager" here is SDPA's math path (what the meta device runs, and SDPA's fallback),
which saves the scaled queries and keys, the ``h N²`` probabilities and the values, all upcast to fp32 for a 16-bit
input (in fp32 the values are a view holding the whole packed projection); "fused" is SDPA's flash kernel, which the
CPU runs: it saves the queries, keys and values (views of the packed projection), its output (out_proj's input) and
an fp32 log-sum-exp per query and head. The activation is ``F.relu`` or ``F.gelu`` called in the layer's forward,
so what it saves is the layer's own: relu its output (linear2's input, one storage), gelu its input.
"""

from __future__ import annotations

from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    layer_norm_statistics_gap,
)

__all__ = ["CLASSES", "SAVES", "register_activation_memory"]

#: the classes the formula is measured for (tests/test_activation_transformer.py)
CLASSES = ("torch.nn.Transformer", "archzoo_transformer.Seq2SeqTransformer")

#: relu keeps its output, which linear2 saves as its input (one storage)
_ACTIVATIONS = {"relu": 0}


def _several_decoder_layers(terms: SavedTerms) -> bool:
    """Whether several decoder layers read the encoder's output (``memory``): it is then the stack's."""
    return int(terms.config.n_decoder_layers) > 1


def _attention(terms: SavedTerms, *, cross: bool) -> Poly:
    """The query projection's input, the core, out_proj's input. Self-attention projects q, k and v together (one
    3·N·d output), cross-attention q alone and k, v together from the encoder's output (2·N·d), which the caller
    adds."""
    b, Nd, h = terms.b, terms.Nd, terms.h
    packed = (2 if cross else 3) * Nd  # the projection the values (and, fused, the keys) are views of
    query = Nd if cross else const(0)  # cross-attention's q has its own storage
    if terms.attention == "fused":
        # q, k, v (views, and q apart in cross-attention), the output out_proj reads, the log-sum-exp
        return b * Nd + b * (packed + query) + terms.fp32 * h * N + b * Nd
    if terms.dtype == "fp32":  # the scaled q and k, the probabilities, the values a view of the packed projection
        return b * Nd + b * (2 * Nd + h * N**2 + packed) + b * Nd
    # 16-bit: fp32 copies of q, k (scaled) and v, and fp32 probabilities
    return b * Nd + terms.fp32 * (3 * Nd + h * N**2) + b * Nd


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    b, Nd, Nf = terms.b, terms.Nd, terms.Nf
    relu = terms.activation == "relu"
    parts = {
        terms.attention_block.name: _attention(terms, cross=False),
        # linear1's input; linear2's, gelu's output (relu's output is saved by relu, in the layer's own forward)
        terms.ff.name: b * Nd + (const(0) if relu else b * Nf),
        "": b * Nf,  # F.relu's output or F.gelu's input
    }
    if terms.layer.kind == "decoder_layer":
        memory = const(0) if _several_decoder_layers(terms) else b * Nd
        parts["cross_attention"] = _attention(terms, cross=True) + memory
    return parts


def _stack(terms: SavedTerms) -> Poly:
    """The decoder's: the encoder output every layer's cross-attention reads (and, recomputed, every layer takes as
    an argument); one layer's own when the decoder has one."""
    if terms.stack != "decoder":
        return const(0)
    if terms.recompute or _several_decoder_layers(terms):
        return terms.b * terms.Nd
    return const(0)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    cfg = terms.config
    if not cfg.vocab_size:  # torch.nn.Transformer takes the embeddings themselves
        return {}
    ids = terms.token_ids  # each lookup's int64 indices: the source's and the target's
    out = {"output_projection": terms.b * terms.Nd}  # the decoder's final norm's output
    if cfg.share_embeddings:
        out["embedding"] = 2 * ids
    else:
        out |= {"source_embedding": ids, "target_embedding": ids}
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    """bf16, eager (SDPA's math path), meta: the exact layer less Korthikanti's, dropout terms apart."""
    b, Nd, Nf, h = terms.b, terms.Nd, terms.Nf, terms.h
    math_path = terms.fp32 * (3 * Nd + h * N**2) - (b * 3 * Nd + b * h * N**2)
    gaps: list[GapTerm | None] = [
        layer_norm_statistics_gap(terms),
        feed_forward_width_gap(terms),
        GapTerm(
            "fp32 math-path attention",
            math_path,
            "nn.MultiheadAttention calls SDPA, whose math path upcasts a 16-bit input: q, k, v and the probabilities "
            "are held in fp32 (4 bytes each), where Korthikanti counts 2",
        ),
    ]
    if terms.activation == "relu":
        gaps.append(
            GapTerm(
                "relu output shared",
                -b * Nf,
                "relu saves its output, which linear2 saves as its input (one storage), where Korthikanti counts "
                "GeLU's input beside it",
            )
        )
    if terms.layer.kind == "decoder_layer":
        memory = const(0) if _several_decoder_layers(terms) else b * Nd
        gaps.append(
            GapTerm(
                "cross-attention",
                _attention(terms, cross=True) + memory + b * Nd,
                "a decoder layer's cross-attention sub-block (q's input, the queries, keys, values and probabilities "
                "over the encoder's positions, out_proj's input) and its LayerNorm's input, which Korthikanti's layer "
                "has no counterpart for (the norm's statistics are among the others')",
            )
        )
    return gaps


#: measured with torch 2.13 (tests/test_activation_transformer.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="transformer",
    classes=CLASSES,
    activations=_ACTIVATIONS,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


register_activation_memory = activation_memory_hook(SAVES)
