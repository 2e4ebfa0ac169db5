"""What transformers' OPTModel and OPTForCausalLM save for backward in a training step: the opt plugin's
activation formula."""

from __future__ import annotations

from archzoo.formula import N, Poly, const
from archzoo.saved_tensors import (
    ActivationSaves,
    GapTerm,
    SavedTerms,
    activation_memory_hook,
    feed_forward_width_gap,
    fp32_softmax_gap,
    gelu_new_gap,
    layer_norm_statistics_gap,
)

__all__ = ["SAVES", "register_activation_memory"]


def _layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections, each linear's input where it is first saved; the activation is a module of
    the layer (``activation_fn``) beside fc1 and fc2, so what it saves is the layer's own."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    # ReLU saves its output, which fc2 saves as its input (one storage); the others save their input, and fc2
    # the activation's output
    relu = terms.activation_elements == 0
    return {
        f"{attention}.q_proj": b * Nd,  # the input q, k and v share
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        attention: terms.attention_saves(upcast=True),  # OPT's eager softmax runs in fp32, as ViT's
        f"{mlp}.fc_in": b * Nd,
        f"{mlp}.fc_out": const(0) if relu else b * Nf,
        mlp: b * Nd + (const(0) if relu else b * Nf),
        "": b * Nf * max(terms.activation_elements, 1),
    }


def _outside(terms: SavedTerms) -> dict[str, Poly]:
    out = {
        "token": terms.token_ids,
        "position": terms.token_ids,  # OPT computes its position ids in forward (a cumulative sum of the mask)
    }
    for block in terms.root.children:
        if block.name in ("project_in", "project_out", "lm_head") and block.d_in is not None:
            out[block.name] = terms.b * N * block.d_in  # a linear layer saves its input (E or d wide)
    return out


def _gap(terms: SavedTerms) -> list[GapTerm | None]:
    out: list[GapTerm | None] = [layer_norm_statistics_gap(terms), fp32_softmax_gap(terms)]
    if terms.activation_elements == 0:
        out.append(
            GapTerm(
                "ReLU output shared",
                2 * N * terms.d_ff - 16 * terms.Nd,
                "ReLU saves its output, which fc2 saves as its input: one d_ff-wide tensor (2 bytes an element), "
                "where Korthikanti's MLP saves the GeLU's input and output, 4h wide (16 s b h)",
            )
        )
    else:
        out += [gelu_new_gap(terms), feed_forward_width_gap(terms)]
    return out


#: measured with transformers 5.23 and torch 2.13 (tests/test_opt.py, at several configurations and lengths)
SAVES = ActivationSaves(
    architecture="opt",
    classes=("transformers.OPTModel", "transformers.OPTForCausalLM"),
    activations={"relu": 0},
    layer=_layer,
    outside=_outside,
    gap=_gap,
)


register_activation_memory = activation_memory_hook(SAVES)
