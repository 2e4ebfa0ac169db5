"""What transformers' LlamaModel and LlamaForCausalLM save for backward in a training step: the llama plugin's
activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from collections.abc import Callable

from archzoo import hookimpl
from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import ActivationSaves, GapTerm, SavedTerms, fp32_softmax_gap, symbol_of

__all__ = ["SAVES", "register_activation_memory"]


def _eager_qkv(terms: SavedTerms) -> Poly | None:
    """What eager attention holds of q, k and v: a copy of each at the queries' width (repeat_kv copies the keys and
    values out to every head), except with one key/value head, where repeat_kv's reshape is a view of the one head
    (its repeated dimension has stride 0), so the keys and values are held at their own width."""
    heads, kv_heads = terms.attention_block.heads, terms.attention_block.kv_heads
    if heads is not None and kv_heads is not None and kv_heads.evaluate() == 1 and heads.evaluate() > 1:
        return terms.Ni + 2 * N * terms.kv
    return None


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    return {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_gate": b * Nd,
        f"{mlp}.fc_in": const(0),
        f"{mlp}.fc_out": b * Nf,
        # softmax upcast to fp32, as ViT's
        attention: terms.attention_saves(upcast=True, eager_qkv=_eager_qkv(terms)),
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        mlp: b * Nd + 4 * b * Nf,
    }


def _norm(terms: SavedTerms) -> Poly:
    # LlamaRMSNorm: x in fp32 (a copy in 16 bits), 1/rms in fp32, and x/rms back in the dtype for the weight
    return terms.fp32 * terms.Nd + terms.fp32 * N + terms.b * terms.Nd


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables every layer multiplies by (recomputed layers take them as arguments)."""
    if terms.recompute:
        return const(0)
    d_h = terms.attention_block.d_head
    if d_h is None:
        cfg = terms.config
        d_h = symbol_of(terms.root, "d_h", cfg.d_head or cfg.d_model // cfg.n_heads, definition="d / h")
    return 2 * terms.b * N * d_h


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    return {"token": terms.token_ids, "lm_head": terms.b * terms.Nd}


def _one_kv_head_gap(terms: SavedTerms) -> GapTerm | None:
    held = _eager_qkv(terms)
    if held is None:
        return None
    return GapTerm(
        "one key/value head",
        terms.b * (held - 3 * terms.Ni),
        "with one key/value head repeat_kv's keys and values are views of that head, saved h_kv d_h wide, where "
        "Korthikanti counts them at the full width",
    )


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd = terms.Nd
    norms = sum(1 for c in terms.layer.children if c.kind in ("layer_norm", "rms_norm"))
    return [
        GapTerm(
            "RMSNorm in fp32",
            norms * (4 * Nd + 4 * N),
            "LlamaRMSNorm upcasts its input to fp32 (a 4-byte copy) and saves 1/rms per token in fp32, besides "
            "the 2-byte normalised tensor Korthikanti counts as the LayerNorm's input",
        ),
        fp32_softmax_gap(terms),
        _one_kv_head_gap(terms),
        GapTerm(
            "SwiGLU feed-forward",
            8 * N * terms.d_ff - 16 * Nd,
            "the gated feed-forward saves the gate's output, silu's output, the up projection's output and "
            "their product (4 tensors of d_ff, 2 bytes each) besides its input, where Korthikanti's MLP saves "
            "the GeLU's input and output, 4h wide (16 s b h)",
        ),
    ]


#: measured with transformers 5.23 and torch 2.13 (tests/test_memory.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="llama",
    classes=("transformers.LlamaModel", "transformers.LlamaForCausalLM"),
    activations={},
    layer=_layer,
    outside=_outside,
    gap=_gap,
    norm=_norm,
    stack=_stack,
)


@hookimpl
def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
    register(SAVES)
