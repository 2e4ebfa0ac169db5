"""What transformers' Gemma 2 and Gemma 3 text classes save for backward in a training step: the gemma plugin's
activation formula (the plugin's ``__init__`` imports its hook), each term measured against autograd in
tests/test_activation_gemma.py.

Gemma's layers save what Llama's do, and: each of the four RMSNorms of a layer (and the final one) works in fp32 and
scales by ``1 + w``, a sum it computes, so it saves an fp32 copy of its input, ``1/rms`` per token, the fp32
normalised tensor and the fp32 ``1 + w``; soft-capping, ``c tanh(x / c)``, saves tanh's output in the dtype: Gemma
2's scores' (``attn_softcap``, ``h N²``) and a causal LM's logits (``final_softcap``, ``N V``), where the configuration
sets a cap (Gemma 2's defaults do, Gemma 3's do not; transformers 5.23's Gemma 3 attention never caps its scores,
whatever ``attn_logit_softcapping`` says); Gemma 3 norms every query and key head with the same RMSNorm and builds a
rotary table per layer kind. Gemma 2 has no SDPA path in transformers 5.23, so its "fused" figure is its eager one;
Gemma 3's SDPA saves each sliding layer's own ``N x N`` mask from ``N = W``
on (every layer's at every N when bidirectional), with the keys and values repeated to every head wherever
transformers cannot use SDPA's grouped-query path. The heads' own saves (the pooled index of sequence
classification, two with a padding id, the token classifier's dropout mask, at its fixed p = 0.1) are the model's
own forward's.
"""

from __future__ import annotations

from dataclasses import replace

from archzoo.decoder_saves import (
    attention_width_gap,
    head_width,
    kv_heads_of,
    pooled_index,
    repeat_kv_qkv,
    rotary_tables,
)
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    fp32_softmax_gap,
    symbol_of,
)

__all__ = ["GEMMA2_SAVES", "GEMMA3_SAVES", "register_activation_memory"]

#: what the activations the core's table lacks keep of their input, for the gated feed-forward (Gemma's tree names
#: its activation): relu and tanh their output, which the product reads too (one tensor for both, so none beyond
#: it), quick_gelu (x · sigmoid(1.702 x), in Python) its input and the sigmoid's output
GATE_SAVES = {"relu": 0, "tanh": 0, "quick_gelu": 2}


def _gemma_rms_norm(terms: SavedTerms, elements: Poly, rows: Poly, width: Poly) -> Poly:
    """Gemma's RMSNorm runs in fp32 and multiplies by ``1 + w``: it saves its input in fp32 (a copy for a 16-bit
    model, the input itself in fp32), 1/rms per row, the normalised fp32 tensor the scale multiplies and the fp32
    ``1 + w`` (``width`` elements, a sum the norm computes, so no parameter)."""
    fp32 = terms.fp32
    return 2 * fp32 * elements + fp32 * rows + fp32 * width


def _norm(terms: SavedTerms) -> Poly:
    return _gemma_rms_norm(terms, terms.Nd, N, terms.d)


def _gemma3(terms: SavedTerms) -> bool:
    """A Gemma 3 text class (the gemma3 architecture's tree), not a Gemma 2 one."""
    return terms.root.name == "gemma3"


def _scores_capped(terms: SavedTerms) -> bool:
    """Gemma 2's attention soft-caps its scores where ``attn_softcap`` is set (Gemma2Config's default, 50).
    Gemma3Attention keeps attn_logit_softcapping but passes no ``softcap`` to its attention function (transformers
    5.23 and 5.24), so a Gemma 3 model's scores are never capped, whatever the configuration says."""
    return not _gemma3(terms) and terms.config.attn_softcap is not None


def _logits_capped(terms: SavedTerms) -> bool:
    """The LM head's logits are soft-capped (``final_softcap``; Gemma2Config's default 30, Gemma3TextConfig's None):
    only the causal-LM classes cap them, the others' outputs are not logits over the vocabulary."""
    return terms.config.final_softcap is not None and terms.config.head == "lm"


def _kind(terms: SavedTerms) -> str:
    """The kind of ``terms``' layer: its run's (``sliding_layer``, ``global_layer``), or the stack's one kind."""
    kinds = terms.config.kinds()
    if terms.layer.name == "sliding_layer":
        return "sliding_attention"
    if terms.layer.name == "global_layer":
        return "full_attention"
    return str(kinds[0])


def _table_readers(terms: SavedTerms) -> dict[str, int]:
    """The layers reading each rotary cos and sin table, by the kind that reads it: Gemma 3's model builds one
    table for each layer kind it has (the global layers' base and scaling, the sliding layers' base), Gemma 2's one
    for all its layers."""
    kinds = [str(kind) for kind in terms.config.kinds()]
    if _gemma3(terms):
        return {kind: kinds.count(kind) for kind in set(kinds)}
    return {"": len(kinds)}


def _rotary_stack(terms: SavedTerms) -> Poly:
    """The rotary tables several layers read (a storage saved by several layers belongs to the stack); a table
    only one layer of several reads is that layer's attention's (`_layer`), and a one-layer stack's table the
    layer's, as the formula's core folds it."""
    readers = _table_readers(terms)
    if sum(readers.values()) == 1:
        return rotary_tables(terms)
    return sum((rotary_tables(terms) for count in readers.values() if count > 1), const(0))


def _own_table(terms: SavedTerms) -> Poly:
    """The rotary table the one layer of its kind reads in a stack of several (Gemma 3's lone global layer)."""
    readers = _table_readers(terms)
    if sum(readers.values()) > 1 and readers.get(_kind(terms)) == 1:
        return rotary_tables(terms)
    return const(0)


def _sdpa_mask(terms: SavedTerms) -> Poly:
    """The mask SDPA saves in a Gemma 3 layer, ``N²`` in the dtype, each layer its own (SDPA saves the mask it turns
    the model's into): a causal sliding layer's from ``N = W`` on (below it the window is the causal one and
    transformers passes SDPA no mask, is_causal instead), and every layer's at every N in a bidirectional model (its
    masks are built with an extra mask function, which transformers never skips). None in eager attention (the mask
    is added, which saves nothing). ``terms.seq_len`` is the N the formula is asked at."""
    if terms.attention != "fused" or not _gemma3(terms):
        return const(0)
    sliding_from_window = _kind(terms) == "sliding_attention" and terms.seq_len >= terms.config.sliding_window
    if terms.config.bidirectional or sliding_from_window:
        return terms.b * N**2
    return const(0)


def _sdpa_held(terms: SavedTerms, mask: Poly) -> Poly:
    """The queries, keys and values SDPA saves (transformers' sdpa_attention_forward): the keys and values at their
    own width where it runs SDPA's grouped-query path (no mask, heads at most 256 wide) or else packs one query
    token's heads onto the key/value heads (N = 1); else the copies repeat_kv makes for every query head."""
    grouped = mask.is_zero() and terms.config.d_head <= 256
    if grouped or terms.seq_len == 1:
        return terms.Ni + 2 * N * terms.kv
    return repeat_kv_qkv(terms)


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    if not _gemma3(terms):  # Gemma 2 has no SDPA path (transformers refuses it): its attention is eager
        terms = replace(terms, attention="eager")
    mask = _sdpa_mask(terms)
    core = terms.attention_saves(upcast=True, eager_qkv=repeat_kv_qkv(terms), fused_held=_sdpa_held(terms, mask))
    core = core + mask + _own_table(terms)
    if _scores_capped(terms):
        core = core + b * terms.h * N**2  # the soft-capping's tanh output, in the dtype
    parts = {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_gate": b * Nd,
        f"{mlp}.fc_in": const(0),
        f"{mlp}.fc_out": b * Nf,
        attention: core,
        # the gated feed-forward: what the activation saves of the gate's output (its input, for gelu), the
        # product's two factors (the activation's output, the up projection's), the down projection's input
        mlp: b * Nd + (terms.activation_elements + 3) * b * Nf,
    }
    if terms.config.qk_norm:
        d_h = head_width(terms)
        for name, heads in (("q_norm", terms.h), ("k_norm", kv_heads_of(terms))):
            norm = _gemma_rms_norm(terms, N * heads * d_h, N * heads, d_h)
            parts[f"{attention}.{name}"] = norm
            parts[attention] = parts[attention] + norm
    return parts


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    """The token ids, the head's input and, for a soft-capped LM head, the final soft-capping's tanh output (``N V``
    in the dtype), which the model's own forward computes after the head: no block's."""
    parts = {"token": terms.token_ids, "lm_head": terms.b * terms.Nd, "score": terms.b * terms.Nd}
    head = terms.config.head
    if _logits_capped(terms):
        V = symbol_of(terms.root, "V", terms.config.vocab_size)
        parts[""] = terms.b * N * V
    elif head == "token_classification":
        # GenericForTokenClassification's dropout reads classifier_dropout or hidden_dropout, which Gemma2Config does
        # not declare, so it runs at its own p = 0.1 whatever the configuration's dropout: it saves its mask, in the
        # dtype, which the score layer's input (its output) does not share
        parts[""] = terms.b * terms.Nd
    elif head == "sequence_classification":
        parts[""] = pooled_index(terms)
    return parts


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd, N2h = terms.Nd, terms.h * N**2
    gaps: list[GapTerm | None] = [
        GapTerm(
            "four RMSNorms in fp32",
            4 * _norm(terms) - 4 * Nd,
            "the sandwich layer has four RMSNorms, each saving an fp32 copy of its input, 1/rms per token, the fp32 "
            "normalised tensor and the fp32 1 + w, where Korthikanti counts two LayerNorms' 2-byte inputs",
        ),
        attention_width_gap(terms, repeat_kv_qkv(terms)),
        fp32_softmax_gap(terms),
        GapTerm(
            "gated feed-forward",
            2 * (terms.activation_elements + 3) * terms.Nf - 16 * Nd,
            f"the gated feed-forward saves {terms.activation_elements} d_ff-wide tensor(s) its activation keeps "
            "besides its output, the activation's and the up projection's outputs and their product (2 bytes each; "
            "an activation that keeps its output shares it with the product), where Korthikanti's MLP saves the "
            "GeLU's input and output, 4h wide (16 s b h)",
        ),
    ]
    if _scores_capped(terms):
        gaps.append(
            GapTerm(
                "attention soft-capping",
                2 * N2h,
                "Gemma 2 soft-caps the scores, c·tanh(s / c): tanh saves its 2-byte output, h·N² elements",
            )
        )
    if terms.config.qk_norm:
        parts = _layer(terms)
        attention = terms.attention_block.name
        gaps.append(
            GapTerm(
                "QK-norm",
                parts[f"{attention}.q_norm"] + parts[f"{attention}.k_norm"],
                "Gemma 3's RMSNorm on every query and key head saves an fp32 copy of the queries and keys, 1/rms per "
                "token and head, the fp32 normalised tensors and the fp32 1 + w, which Korthikanti's layer lacks",
            )
        )
    # a table only this layer reads is its own: a one-layer stack's, or the lone layer of its kind's (Gemma 3)
    own = _rotary_stack(terms) if len(terms.config.kinds()) == 1 else _own_table(terms)
    if not own.is_zero():
        gaps.append(
            GapTerm(
                "a rotary table of its own",
                own,
                "no other layer reads this layer's rotary cos and sin table (Gemma 3 builds one per layer kind), so it "
                "is saved with the layer, where Korthikanti's layer has no position table",
            )
        )
    return gaps


GEMMA2_SAVES = ActivationSaves(
    architecture="gemma2",
    classes=(
        "transformers.Gemma2Model",
        "transformers.Gemma2ForCausalLM",
        "transformers.Gemma2ForSequenceClassification",
        "transformers.Gemma2ForTokenClassification",
    ),
    activations=GATE_SAVES,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_norm,
    fused_note="Gemma 2's classes have no fused (SDPA) path in transformers 5.23 (set_attn_implementation('sdpa') "
    "is refused): transformers runs their eager attention, the h·N² probabilities saved",
    stack=_rotary_stack,
)

GEMMA3_SAVES = ActivationSaves(
    architecture="gemma3",
    classes=(
        "transformers.Gemma3TextModel",
        "transformers.Gemma3ForCausalLM",
        "transformers.Gemma3TextForSequenceClassification",
    ),
    activations=GATE_SAVES,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_norm,
    stack=_rotary_stack,
)

register_activation_memory = activation_memory_hook(GEMMA2_SAVES, GEMMA3_SAVES)
