"""Building blocks: the layers plugins compose into an architecture, each with its counts as formulas.

A `Block` is a node of a model's tree. Leaves (linear, embedding, norm, attention core, patch
embedding, learned tensor) know their own parameter and FLOP formulas; composites (attention,
feed-forward, a layer, a stack) add up their children; `repeat` multiplies a block by a layer count.

Conventions, the same as ``torch.utils.flop_counter.FlopCounterMode`` on an eager forward pass:

* FLOPs are for batch 1 and count ``2 x`` the multiply-accumulates of matmul-class work only: linear
  layers, convolutions, and the two attention products ``Q K^T`` and ``A V``. Softmax, norms,
  activations, residual adds and embedding lookups count zero.
* A weight tied to another tensor (an LM head tied to the token embedding) is counted once, where the
  tensor is defined; the tied block still costs FLOPs.
* A shared layer (ALBERT) is counted once for parameters and ``n`` times for FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .formula import N, Poly, const, total

__all__ = [
    "Block",
    "linear",
    "embedding",
    "learned_tensor",
    "layer_norm",
    "rms_norm",
    "attention",
    "feed_forward",
    "patch_embedding",
    "composite",
    "repeat",
    "with_modules",
    "ACTIVATIONS",
]

ZERO = const(0)
ONE = const(1)

#: Activations a feed-forward block accepts; none of them has parameters or matmul FLOPs.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh", "quick_gelu")


@dataclass(frozen=True)
class Block:
    """One node of an architecture's tree, with its formulas.

    ``params`` is the exact count, ``approx`` its leading-order part (weight matrices and tables, no
    biases or norms), ``flops`` the forward FLOPs as a polynomial in ``N``, ``attention_flops`` the part
    of ``flops`` spent in the attention products, ``kv_cache`` the key/value elements cached per token
    by causal self-attention, and ``embedding_params`` the part of ``params`` held in token and
    position embeddings (excluded from the non-embedding count, after Kaplan et al. 2020).

    ``modules`` maps the block to the reference implementation (`Architecture.reference`), for
    ``archzoo verify``: the dotted names of the submodules (or parameters) of the reference model that
    hold exactly this block's parameters, together. Names are relative to the model root (``""`` is the
    whole model), except below a repeated block: the block directly under a `repeat` names its
    ``nn.ModuleList``, its copy ``i`` is ``name.i`` (or, for a ``shared`` repeat, the one layer's own
    name), and the blocks inside it are named relative to the copy. Empty: not mapped.
    """

    name: str
    kind: str
    params: Poly = ZERO
    approx: Poly = ZERO
    flops: Poly = ZERO
    attention_flops: Poly = ZERO
    kv_cache: Poly = ZERO
    embedding_params: Poly = ZERO
    children: tuple["Block", ...] = ()
    description: str = ""
    repeat: Poly | None = None  # the count of a `repeat` block
    shared: bool = False  # a repeat whose layers share one set of weights
    tied_to: str = ""  # a tied weight: the path of the tensor it reuses
    modules: tuple[str, ...] = ()  # the reference model's submodules holding this block's parameters

    def walk(self, prefix: str = "", depth: int = 0):
        """Yield ``(path, depth, block)`` for this block and every block below it."""
        path = f"{prefix}.{self.name}" if prefix else self.name
        yield path, depth, self
        for child in self.children:
            yield from child.walk(path, depth + 1)


def _leaf(name: str, kind: str, description: str, **formulas: Poly) -> Block:
    return Block(name=name, kind=kind, description=description, **formulas)


def linear(
    name: str,
    d_in: Poly,
    d_out: Poly,
    *,
    bias: bool = True,
    tokens: Poly = N,
    tied_to: str = "",
    description: str = "",
) -> Block:
    """A linear layer ``y = x W^T + b`` applied to ``tokens`` rows; a tied weight counts only its bias."""
    weight = d_in * d_out
    bias_params = d_out if bias else ZERO
    shape = f"Linear({d_in}, {d_out}{'' if bias else ', bias=False'})"
    return Block(
        name=name,
        kind="linear",
        params=bias_params if tied_to else weight + bias_params,
        approx=ZERO if tied_to else weight,
        flops=2 * tokens * d_in * d_out,
        description=description or (f"{shape}, weight tied to {tied_to}" if tied_to else shape),
        tied_to=tied_to,
    )


def embedding(name: str, num: Poly, dim: Poly, *, role: str = "", description: str = "") -> Block:
    """A lookup table of ``num`` rows of width ``dim``; ``role`` is ``token``, ``position`` or ``segment``."""
    params = num * dim
    return _leaf(
        name,
        "embedding",
        description or f"Embedding({num}, {dim})",
        params=params,
        approx=params,
        embedding_params=params if role in ("token", "position") else ZERO,
    )


def learned_tensor(
    name: str, numel: Poly, *, leading: bool, role: str = "", description: str = ""
) -> Block:
    """A bare learned tensor (class token, position table); ``leading`` puts it in the approximation."""
    return _leaf(
        name,
        "parameter",
        description or f"nn.Parameter with {numel} elements",
        params=numel,
        approx=numel if leading else ZERO,
        embedding_params=numel if role == "position" else ZERO,
    )


def layer_norm(name: str, d: Poly, *, bias: bool = True, description: str = "") -> Block:
    """LayerNorm: a scale, and a shift unless ``bias`` is off. Lower order: not in the approximation."""
    params = 2 * d if bias else d
    return _leaf(name, "layer_norm", description or f"LayerNorm({d}{'' if bias else ', bias=False'})", params=params)


def rms_norm(name: str, d: Poly, *, description: str = "") -> Block:
    """RMSNorm: a scale only."""
    return _leaf(name, "rms_norm", description or f"RMSNorm({d})", params=d)


def composite(name: str, kind: str, children: list[Block] | tuple[Block, ...], description: str = "") -> Block:
    """A block made of others; every formula is the sum of its children's."""
    children = tuple(children)
    return Block(
        name=name,
        kind=kind,
        params=total(c.params for c in children),
        approx=total(c.approx for c in children),
        flops=total(c.flops for c in children),
        attention_flops=total(c.attention_flops for c in children),
        kv_cache=total(c.kv_cache for c in children),
        embedding_params=total(c.embedding_params for c in children),
        children=children,
        description=description,
    )


def attention(
    name: str,
    d: Poly,
    inner: Poly,
    *,
    kv_inner: Poly | None = None,
    bias: bool = True,
    out_bias: bool | None = None,
    tokens_q: Poly = N,
    tokens_kv: Poly = N,
    causal: bool = False,
    cross: bool = False,
    description: str = "",
) -> Block:
    """Multi-head attention: Q, K, V projections, the attention products, and the output projection.

    ``inner`` is the width of all query heads together (``h d_h``, which is ``d`` in the classic
    layout); ``kv_inner`` the width of the key/value heads (smaller for grouped- and multi-query
    attention). Causal self-attention caches ``2 kv_inner`` elements per token.
    """
    kv_inner = inner if kv_inner is None else kv_inner
    out_bias = bias if out_bias is None else out_bias
    core_flops = 2 * tokens_q * tokens_kv * inner + 2 * tokens_q * tokens_kv * inner
    core = _leaf(
        "scores",
        "attention_core",
        "softmax(Q Kᵀ / √d_h) V: the score product and the weighted sum, no parameters",
        flops=core_flops,
        attention_flops=core_flops,
    )
    children = [
        linear("q_proj", d, inner, bias=bias, tokens=tokens_q),
        linear("k_proj", d, kv_inner, bias=bias, tokens=tokens_kv),
        linear("v_proj", d, kv_inner, bias=bias, tokens=tokens_kv),
        core,
        linear("out_proj", inner, d, bias=out_bias, tokens=tokens_q),
    ]
    block = composite(
        name,
        "cross_attention" if cross else "self_attention",
        children,
        description or ("causal " if causal else "") + ("cross-attention" if cross else "multi-head self-attention"),
    )
    if causal and not cross:
        block = replace(block, kv_cache=2 * kv_inner)
    return block


def feed_forward(
    name: str,
    d: Poly,
    d_ff: Poly,
    *,
    activation: str = "gelu",
    gated: bool = False,
    bias: bool = True,
    tokens: Poly = N,
    description: str = "",
) -> Block:
    """Position-wise feed-forward: up-projection, activation (gated or not), down-projection."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {', '.join(ACTIVATIONS)}")
    children = [linear("fc_in", d, d_ff, bias=bias, tokens=tokens)]
    if gated:
        children.append(linear("fc_gate", d, d_ff, bias=bias, tokens=tokens))
    children.append(linear("fc_out", d_ff, d, bias=bias, tokens=tokens))
    kind = f"{activation}-gated" if gated else activation
    return composite(name, "feed_forward", children, description or f"feed-forward, {kind}")


def patch_embedding(
    name: str, channels: Poly, patch: Poly, d: Poly, n_patches: Poly, *, bias: bool = True, description: str = ""
) -> Block:
    """A ``patch x patch`` convolution with stride ``patch``: one ``d``-wide token per image patch."""
    weight = d * channels * patch * patch
    return _leaf(
        name,
        "patch_embedding",
        description or f"Conv2d({channels}, {d}, kernel={patch}, stride={patch})",
        params=weight + (d if bias else ZERO),
        approx=weight,
        flops=2 * n_patches * channels * patch * patch * d,
    )


def repeat(block: Block, n: Poly, *, name: str = "", shared: bool = False, description: str = "") -> Block:
    """``n`` copies of ``block`` in sequence; ``shared`` copies hold one set of weights (ALBERT)."""
    weight_factor = ONE if shared else n
    return Block(
        name=name or block.name,
        kind="repeat",
        params=weight_factor * block.params,
        approx=weight_factor * block.approx,
        flops=n * block.flops,
        attention_flops=n * block.attention_flops,
        kv_cache=n * block.kv_cache,
        embedding_params=weight_factor * block.embedding_params,
        children=(block,),
        description=description or (f"{n} layers sharing one set of weights" if shared else f"{n} × {block.name}"),
        repeat=n,
        shared=shared,
    )


def with_modules(root: Block, table: dict[str, tuple[str, ...]]) -> Block:
    """``root`` with each block whose path (``bert.layers.layer.attention``) is in ``table`` mapped to
    those reference submodules (`Block.modules`); a plugin's ``build`` ends with it."""

    def mapped(block: Block, parent: str) -> Block:
        path = f"{parent}.{block.name}" if parent else block.name
        children = tuple(mapped(child, path) for child in block.children)
        return replace(block, children=children, modules=tuple(table.get(path, block.modules)))

    return mapped(root, "")
