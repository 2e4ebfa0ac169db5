"""What transformers' Starcoder2Model and Starcoder2ForCausalLM save for backward in a training step: the starcoder2
plugin's activation formula (the plugin's ``__init__`` imports its hook)."""

from __future__ import annotations

from collections.abc import Callable

from archzoo import hookimpl
from archzoo.formula import N, Poly, const
from archzoo.memory import ACTIVATION_SAVES
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    feed_forward_width_gap,
    fp32_softmax_gap,
    layer_norm_statistics_gap,
    symbol_of,
)

__all__ = ["SAVES", "register_activation_memory"]

#: The feed-forward block of this plugin's tree does not record its activation (`Block.activation` is ""), so the
#: formula is registered for that unnamed activation and reads the configuration's own: the d_ff-wide tensors
#: each activation saves besides the linears' inputs: relu's and tanh's output is the down projection's input,
#: saved once; quick_gelu (x · sigmoid(1.702 x), in Python) saves its input and the sigmoid's output.
_ACTIVATION_ELEMENTS = {**ACTIVATION_SAVES, "relu": 0, "tanh": 0, "quick_gelu": 2}
#: the activations whose saved output is the down projection's input
_OUTPUT_SAVED = ("relu", "tanh")


def _head_width(terms: SavedTerms) -> Poly:
    if terms.attention_block.d_head is not None:
        return terms.attention_block.d_head
    cfg = terms.config
    return symbol_of(terms.root, "d_h", cfg.d_head or cfg.d_model // cfg.n_heads, definition="d / h")


def _kv_heads(terms: SavedTerms) -> Poly:
    if terms.attention_block.kv_heads is not None:
        return terms.attention_block.kv_heads
    return terms.h


def _eager_qkv(terms: SavedTerms) -> Poly:
    """The queries, keys and values eager attention's products save: repeat_kv copies the keys and values to every
    query head, except that one key/value head broadcast to all is a view of the h_kv-wide tensor (no copy)."""
    if _kv_heads(terms).evaluate() == 1:
        return terms.Ni + 2 * N * terms.kv
    return 3 * terms.Ni


def _activation(terms: SavedTerms) -> str:
    return terms.activation or str(terms.config.activation)


def _activation_elements(terms: SavedTerms) -> int:
    activation = _activation(terms)
    if activation not in _ACTIVATION_ELEMENTS:
        raise UnsupportedActivationMemory(
            f"starcoder2: activation {activation!r}: the formula knows what {', '.join(_ACTIVATION_ELEMENTS)} save; "
            "measure another with archzoo.memory.measure_activations"
        )
    return _ACTIVATION_ELEMENTS[activation]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    return {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first and read as it is; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_in": b * Nd,
        # relu and tanh save their output first, which c_proj then reads as its input
        f"{mlp}.fc_out": const(0) if _activation(terms) in _OUTPUT_SAVED else b * Nf,
        # softmax upcast to fp32, as Llama's
        attention: terms.attention_saves(upcast=True, eager_qkv=_eager_qkv(terms)),
        # c_fc's input, the activation's saves, c_proj's input
        mlp: b * Nd + (_activation_elements(terms) + 1) * b * Nf,
    }


def _stack(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables every layer multiplies by (recomputed layers take them as keyword arguments)."""
    if terms.recompute:
        return const(0)
    return 2 * terms.b * N * _head_width(terms)


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    return {"token": terms.token_ids, "lm_head": terms.b * terms.Nd}


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd, Ni, Nf = terms.Nd, terms.Ni, terms.Nf
    gaps: list[GapTerm | None] = [layer_norm_statistics_gap(terms), fp32_softmax_gap(terms)]
    width = 2 * _eager_qkv(terms) + 2 * Ni - 8 * Nd
    if not width.is_zero():
        gaps.append(
            GapTerm(
                "attention width",
                width,
                "the queries, keys and values the products hold and the output projection's input are h·d_h wide "
                "(one key/value head broadcast to every query head is held h_kv·d_h wide), where Korthikanti's are d",
            )
        )
    elements = _activation_elements(terms)
    if elements != 1:
        gaps.append(
            GapTerm(
                "activation saves",
                (elements - 1) * 2 * Nf,
                f"the activation saves {elements} d_ff-wide tensors besides the down projection's input, where "
                "Korthikanti's GeLU saves its input (one)",
            )
        )
    gaps.append(feed_forward_width_gap(terms))
    return gaps


#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_starcoder2.py, at several configurations
#: and lengths)
SAVES = ActivationSaves(
    architecture="starcoder2",
    classes=("transformers.Starcoder2Model", "transformers.Starcoder2ForCausalLM"),
    activations=_ACTIVATION_ELEMENTS,
    layer=_layer,
    outside=_outside,
    gap=_gap,
    stack=_stack,
)


@hookimpl
def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
    register(SAVES)
