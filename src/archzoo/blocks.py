"""Building blocks: the layers plugins compose into an architecture, each with its counts as formulas.

A `Block` is a node of a model's tree. Leaves (linear, embedding, norm, attention core, patch
embedding, learned tensor) know their own parameter and FLOP formulas; composites (attention,
feed-forward, a layer, a stack) add up their children; `repeat` multiplies a block by a layer count,
`layer_runs` makes a stack of runs of different layers (dense layers and mixture-of-experts layers), and
`experts` holds ``E`` copies of a feed-forward of which each token runs ``k``. `Block.visits` is the one
walk of the tree that multiplies those copies out; every reader of a tree (reports, the terminal, the
site, ``archzoo compare``, ``archzoo verify``) takes its counts from it.

Conventions, the same as ``torch.utils.flop_counter.FlopCounterMode`` on an eager forward pass:

* FLOPs are for batch 1 and count ``2 x`` the multiply-accumulates of matmul-class work only: linear
  layers, convolutions, and the two attention products ``Q K^T`` and ``A V``. Softmax, norms,
  activations, residual adds and embedding lookups count zero.
* A weight tied to another tensor (an LM head tied to the token embedding) is counted once, where the
  tensor is defined; the tied block still costs FLOPs.
* A shared layer (ALBERT) is counted once for parameters and ``n`` times for FLOPs.
* Experts: all ``E`` are parameters; the FLOPs are those of the ``k`` each token runs through (``N k``
  expert evaluations for ``N`` tokens), plus the router's ``2 N d E``. The *active* parameters are those
  one token uses in one forward pass: the total less ``E - k`` experts in every mixture-of-experts layer.

Beyond one forward pass, every block also carries (leaves set them, composites and copies sum them):

* ``backward_flops``: the backward pass of one training step, a scalar loss taken from the model's main
  output, every parameter trainable and the inputs not requiring gradients. A matmul-class op costs
  ``2 x`` its forward FLOPs when its input needs a gradient (one product for the input's gradient, one
  for the weight's), ``1 x`` when only its weight does (`patch_embedding`, reading the pixels, or a
  `linear` with ``input_grad=False``), and nothing when its output does not reach the loss
  (`off_loss_path`: BERT's pooler when the loss is taken from the last hidden state).
* ``prefill_flops``: the first call of generation. A decoder runs over its ``N`` prompt tokens and
  computes the logits of the last position only (`lm_head`; transformers' ``logits_to_keep=1``, as
  ``generate`` does). An encoder-decoder runs its encoder over ``N`` source tokens and its decoder over
  the one start token, computing every layer's cross-attention keys and values over the ``N`` source
  tokens once (`seq2seq_encoder`, `seq2seq_decoder`).
* ``decode_flops``: one later step with a key/value cache: the step that reads position ``N`` (``N - 1``
  tokens cached, attention over ``N`` keys) and computes its logits. An encoder-decoder's encoder does not
  run, and its cross-attention reads the cached keys and values of ``S`` source tokens (the free symbol
  `archzoo.formula.S`; a report evaluates it at ``S = N`` unless told otherwise). Generating ``M`` tokens
  after a ``P``-token prompt costs ``prefill(P) + sum(decode(n) for n in P+1 .. P+M-1)``; from an
  encoder-decoder's ``S`` source tokens, ``prefill(S) + sum(decode(n, S) for n in 2 .. M)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields, replace
from operator import is_
from typing import Any

from .formula import N, Poly, S, const, total

__all__ = [
    "ACTIVATIONS",
    "Block",
    "BlockVisit",
    "active_params",
    "attention",
    "composite",
    "embedding",
    "experts",
    "feed_forward",
    "layer_norm",
    "layer_runs",
    "learned_tensor",
    "linear",
    "lm_head",
    "off_loss_path",
    "patch_embedding",
    "repeat",
    "rms_norm",
    "runs_in_order",
    "seq2seq_decoder",
    "seq2seq_encoder",
    "windowed_decode",
    "windows",
    "with_modules",
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
    by causal self-attention, ``cross_kv_cache`` the key/value elements cross-attention caches per
    *source* token (an encoder-decoder's decoder attending to the encoder's output), and
    ``embedding_params`` the part of ``params`` held in token and position embeddings (excluded from the
    non-embedding count, after Kaplan et al. 2020). Every formula covers the whole block, copies
    included: a `repeat` of 12 layers holds 12 layers' parameters.

    Copies. A block whose ``repeat`` is set holds one copy of its only child and runs it ``repeat``
    times in one forward pass, each time over every token it sees. Where the weights of those runs come
    from decides how many sets of weights the model stores:

    * each run has its own (a stack of ``L`` layers; neither ``shared`` nor ``copies``): ``repeat`` sets;
    * all runs share one (``shared``, ALBERT's layers): one set, run ``repeat`` times;
    * each token picks its runs from ``copies`` stored sets (``copies``, a mixture of experts: ``E``
      experts stored, ``repeat`` = ``k`` of them run for each token): ``copies`` sets.

    `visits` multiplies these out down the tree: for every block, the sets of its weights stored
    (``stored``), the copies executed in one forward pass (``executed``; per token for experts), and the
    copies one token uses (``active``).

    ``modules`` maps the block to the reference implementation (`Architecture.reference`), for
    ``archzoo verify``: the dotted names of the submodules (or parameters) of the reference model that
    hold exactly this block's parameters, together. Names are relative to the model root (``""`` is the
    whole model), except below a repeated block: the block directly under a `repeat` names its
    ``nn.ModuleList``, its copy ``i`` is ``name.i`` (or, for a ``shared`` repeat, the one layer's own
    name), and the blocks inside it are named relative to the copy. The block directly under `experts`
    names the module holding all its copies together (transformers fuses them into one tensor per
    projection), and the blocks inside one expert are not mapped. Empty: not mapped.
    """

    name: str
    kind: str
    params: Poly = ZERO
    approx: Poly = ZERO
    flops: Poly = ZERO
    attention_flops: Poly = ZERO
    kv_cache: Poly = ZERO
    embedding_params: Poly = ZERO
    children: tuple[Block, ...] = ()
    description: str = ""
    repeat: Poly | None = None  # how many times the only child runs in one forward pass (per token: experts)
    shared: bool = False  # the runs share one set of weights
    tied_to: str = ""  # a tied weight: the path of the tensor it reuses
    modules: tuple[str, ...] = ()  # the reference model's submodules holding this block's parameters
    copies: Poly | None = None  # the stored sets the runs are picked from (experts: E), when not one per run
    cross_kv_cache: Poly = ZERO
    backward_flops: Poly = ZERO  # the backward pass of a training step (module docstring)
    prefill_flops: Poly = ZERO  # the first call of generation: the prompt, logits of its last position
    decode_flops: Poly = ZERO  # one cached step at context N (cross-attention over S source tokens)
    # The shape a reader needs beyond the counts, so the core reads the tree instead of configuration keys
    # (None or empty where the block does not know it): an attention block's query heads, key/value heads
    # and head width; a feed-forward block's activation and whether it is gated; a linear block's input width.
    heads: Poly | None = None
    kv_heads: Poly | None = None
    d_head: Poly | None = None
    activation: str = ""
    gated: bool = False
    d_in: Poly | None = None
    # A run of a `layer_runs` stack: where its copies sit in the stack (copy i is layer positions[i] of the
    # stack's nn.ModuleList); empty for any other block, whose copies are layers 0 .. repeat - 1.
    positions: tuple[int, ...] = ()
    # A self-attention block whose cache keeps a sliding window of W tokens (transformers' sliding layers keep
    # W - 1 between steps): a decode step at context N attends to min(N, W) keys (`decode_formula`). None:
    # every cached token.
    window: Poly | None = None

    def stored_factor(self) -> Poly:
        """The sets of its child's weights this block stores (1 when it holds no copies)."""
        if self.repeat is None or self.shared:
            return ONE
        return self.copies if self.copies is not None else self.repeat

    def executed_factor(self) -> Poly:
        """How many times this block runs its child in one forward pass (1 when it holds no copies)."""
        return ONE if self.repeat is None else self.repeat

    def active_factor(self) -> Poly:
        """The sets of its child's weights one token uses: one per run, or the one shared set."""
        return ONE if self.repeat is None or self.shared else self.repeat

    def visits(self) -> Iterator[BlockVisit]:
        """This block and every block below it, depth first, each with its copies multiplied out."""
        stack: list[BlockVisit] = [BlockVisit(self.name, 0, self, ONE, ONE, ONE)]
        while stack:
            visit = stack.pop()
            yield visit
            block = visit.block
            if block.repeat is None:  # every factor is one: the products are the parent's, already in order
                stored, executed, active = visit.stored, visit.executed, visit.active
            else:
                stored = visit.stored * block.stored_factor()
                executed = visit.executed * block.executed_factor()
                active = visit.active * block.active_factor()
            for child in reversed(block.children):
                stack.append(BlockVisit(f"{visit.path}.{child.name}", visit.depth + 1, child, stored, executed, active))

    def walk(self) -> Iterator[tuple[str, int, Block]]:
        """`visits` as ``(path, depth, block)``, for readers that need only where each block is."""
        for visit in self.visits():
            yield visit.path, visit.depth, visit.block


@dataclass(frozen=True)
class BlockVisit:
    """One block as `Block.visits` reaches it: where it is and how many copies of it there are.

    ``stored`` is how many sets of the block's weights the model holds (the product, over the blocks
    above it, of their stored copies: ``L`` for a layer of a stack, ``1`` under a shared repeat, ``L E``
    for an expert of an ``L``-layer mixture of experts), ``executed`` how many copies of it run in one
    forward pass (per token under experts: ``L k`` for that expert) and ``active`` how many sets of its
    weights one token uses (``L k``, or ``1`` under a shared repeat). The block's own formulas are for
    one copy; the properties here are for all of them.
    """

    path: str
    depth: int
    block: Block
    stored: Poly
    executed: Poly
    active: Poly

    @property
    def kind(self) -> str:
        return self.block.kind

    @property
    def params_each(self) -> Poly:
        """The parameters of one copy."""
        return self.block.params

    @property
    def params(self) -> Poly:
        """The parameters of every stored copy."""
        return self.stored * self.block.params

    @property
    def approx(self) -> Poly:
        """The leading-order parameters of every stored copy."""
        return self.stored * self.block.approx

    @property
    def active_params(self) -> Poly:
        """The parameters of this block one token uses in one forward pass."""
        return self.active * self.block.params

    @property
    def flops(self) -> Poly:
        """The forward FLOPs of every executed copy."""
        return self.executed * self.block.flops

    @property
    def attention_flops(self) -> Poly:
        return self.executed * self.block.attention_flops

    @property
    def backward_flops(self) -> Poly:
        """The backward FLOPs of every executed copy, in one training step."""
        return self.executed * self.block.backward_flops

    @property
    def training_flops(self) -> Poly:
        """Forward and backward FLOPs of every executed copy: one training step."""
        return self.executed * (self.block.flops + self.block.backward_flops)

    @property
    def prefill_flops(self) -> Poly:
        return self.executed * self.block.prefill_flops

    @property
    def decode_flops(self) -> Poly:
        return self.executed * self.block.decode_flops


def active_params(root: Block) -> Poly:
    """The parameters one token uses in one forward pass: each leaf's parameters times the copies of it
    that token uses (composites are the sums of their children). Equal to ``root.params`` unless the
    tree holds experts, where only ``k`` of the ``E`` copies count."""
    return total(v.active_params for v in root.visits() if not v.block.children)


def windows(root: Block) -> tuple[BlockVisit, ...]:
    """The visits of ``root``'s blocks whose cache keeps a sliding window (``window`` set), outermost first and
    none inside another."""
    found: list[BlockVisit] = []
    for visit in root.visits():
        if visit.block.window is not None and not any(visit.path.startswith(f.path + ".") for f in found):
            found.append(visit)
    return tuple(found)


def windowed_decode(decode: Poly, window: Poly | None, context: int) -> Poly:
    """A decode step's formula ``decode`` (in N) for a block under ``window`` at ``context``: past the window it
    attends to ``W`` keys, not ``N`` (transformers' sliding cache layer keeps the last ``W - 1`` tokens and the
    step adds one), so N becomes W."""
    if window is None or context <= window.evaluate():
        return decode
    return decode.substitute("N", window)


#: Each field of a `Block` and its default (None for the name and kind, which every caller gives), in the
#: order of the dataclass's fields.
_BLOCK_DEFAULTS: dict[str, Any] = {f.name: None if f.default is MISSING else f.default for f in fields(Block)}
assert all(f.default_factory is MISSING for f in fields(Block)), "_block copies defaults: no factories"
_new_object = object.__new__


def _block(**given: Any) -> Block:
    """``Block(**given)`` without the dataclass's ``__init__``, which sets each of the thirty fields through
    ``object.__setattr__``: building a model's tree makes hundreds of blocks, and indexing a zoo thousands of
    trees. The object is the same, its fields in the same order."""
    block = _new_object(Block)
    state = block.__dict__
    state.update(_BLOCK_DEFAULTS)
    state.update(given)
    return block


def _replace(block: Block, **changes: Any) -> Block:
    """``dataclasses.replace(block, **changes)`` for a plain `Block`, made as `_block` makes one (a subclass,
    which may have its own ``__init__``, goes through ``replace``)."""
    if type(block) is not Block:
        return replace(block, **changes)
    new = _new_object(Block)
    state = new.__dict__
    state.update(block.__dict__)
    state.update(changes)
    return new


def _leaf(name: str, kind: str, description: str, **formulas: Any) -> Block:
    return _block(name=name, kind=kind, description=description, **formulas)


def _one_token(flops: Poly) -> Poly:
    """A per-token cost for one new token: ``N`` tokens become 1 (a fixed count, image patches, stays)."""
    return flops.substitute("N", 1)


def _map_leaves(block: Block, change: Callable[[Block], Block]) -> Block:
    """``block`` with ``change(leaf)`` applied to every leaf and the phase formulas of the blocks above
    summed again (copies multiplied), so that a marked sub-tree stays consistent from its root down."""
    if not block.children:
        return change(block)
    children = tuple(_map_leaves(child, change) for child in block.children)
    if block.repeat is not None:
        (child,) = children
        return _replace(
            block,
            children=children,
            backward_flops=block.repeat * child.backward_flops,
            prefill_flops=block.repeat * child.prefill_flops,
            decode_flops=block.repeat * child.decode_flops,
        )
    return _replace(
        block,
        children=children,
        backward_flops=total(c.backward_flops for c in children),
        prefill_flops=total(c.prefill_flops for c in children),
        decode_flops=total(c.decode_flops for c in children),
    )


def off_loss_path(block: Block) -> Block:
    """``block`` and everything below it marked off the loss path: its output never reaches the loss of a
    training step, so autograd runs no backward through it (BERT's and ViT's pooler when the loss is taken
    from the last hidden state). Its forward FLOPs are unchanged."""
    return _map_leaves(block, lambda leaf: _replace(leaf, backward_flops=ZERO))


def seq2seq_encoder(block: Block) -> Block:
    """An encoder-decoder's encoder: it runs once, in prefill, over the ``N`` source tokens (its forward
    FLOPs), and never in a decode step."""
    return _map_leaves(block, lambda leaf: _replace(leaf, prefill_flops=leaf.flops, decode_flops=ZERO))


def seq2seq_decoder(block: Block) -> Block:
    """An encoder-decoder's decoder. Prefill runs it over one start token (``generate``'s
    ``decoder_start_token_id``), which is its decode step at context 1 over ``N`` source tokens, plus the
    work a decode step reuses from the cache: the cross-attention keys and values of the source, computed
    there once (a leaf that costs nothing in a decode step costs its forward FLOPs in prefill)."""

    def first_call(leaf: Block) -> Block:
        if leaf.decode_flops.is_zero():
            return _replace(leaf, prefill_flops=leaf.flops)
        return _replace(leaf, prefill_flops=leaf.decode_flops.substitute("N", 1).substitute("S", N))

    return _map_leaves(block, first_call)


def linear(
    name: str,
    d_in: Poly,
    d_out: Poly,
    *,
    bias: bool = True,
    tokens: Poly = N,
    tied_to: str = "",
    input_grad: bool = True,
    description: str = "",
) -> Block:
    """A linear layer ``y = x W^T + b`` applied to ``tokens`` rows; a tied weight counts only its bias.

    Its backward pass costs twice its forward FLOPs (the input's gradient and the weight's), or once with
    ``input_grad=False``: a layer reading the model's inputs, which need no gradient."""
    weight = d_in * d_out
    bias_params = d_out if bias else ZERO
    shape = f"Linear({d_in}, {d_out}{'' if bias else ', bias=False'})"
    flops = 2 * tokens * d_in * d_out
    return _block(
        name=name,
        kind="linear",
        params=bias_params if tied_to else weight + bias_params,
        approx=ZERO if tied_to else weight,
        flops=flops,
        backward_flops=(2 if input_grad else 1) * flops,
        prefill_flops=flops,
        decode_flops=_one_token(flops),
        description=description or (f"{shape}, weight tied to {tied_to}" if tied_to else shape),
        tied_to=tied_to,
        d_in=d_in,
    )


def lm_head(d: Poly, vocab: Poly, *, tied_to: str = "", name: str = "lm_head", description: str = "") -> Block:
    """A language model's head: ``d`` to ``vocab`` logits with no bias. ``tied_to`` names the embedding block
    whose weight it reuses; a tied head holds no parameters of its own (PyTorch counts a shared tensor once).
    In prefill it computes the logits of the last position only (``logits_to_keep=1``)."""
    tied = f", weight tied to the {tied_to} embedding" if tied_to else ""
    head = linear(name, d, vocab, bias=False, tied_to=tied_to, description=description or f"next-token logits{tied}")
    return _replace(head, prefill_flops=head.decode_flops)


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


def learned_tensor(name: str, numel: Poly, *, leading: bool, role: str = "", description: str = "") -> Block:
    """A bare learned tensor (class token, position table); ``leading`` puts it in the approximation."""
    return _leaf(
        name,
        "parameter",
        description or f"nn.Parameter with {numel} elements",
        params=numel,
        approx=numel if leading else ZERO,
        embedding_params=numel if role == "position" else ZERO,
    )


def layer_norm(name: str, d: Poly, *, bias: bool = True, affine: bool = True, description: str = "") -> Block:
    """LayerNorm: a scale, and a shift unless ``bias`` is off; neither without ``affine`` (torch's
    ``elementwise_affine=False``, OLMo's norm: no parameters). Lower order: not in the approximation."""
    if not affine:
        return Block(name=name, kind="layer_norm", description=description or f"LayerNorm({d}), no weight or bias")
    params = 2 * d if bias else d
    return _leaf(name, "layer_norm", description or f"LayerNorm({d}{'' if bias else ', bias=False'})", params=params)


def rms_norm(name: str, d: Poly, *, description: str = "") -> Block:
    """RMSNorm: a scale only."""
    return _leaf(name, "rms_norm", description or f"RMSNorm({d})", params=d)


def composite(name: str, kind: str, children: list[Block] | tuple[Block, ...], description: str = "") -> Block:
    """A block made of others; every formula is the sum of its children's."""
    children = tuple(children)
    return _block(
        name=name,
        kind=kind,
        params=total(c.params for c in children),
        approx=total(c.approx for c in children),
        flops=total(c.flops for c in children),
        attention_flops=total(c.attention_flops for c in children),
        backward_flops=total(c.backward_flops for c in children),
        prefill_flops=total(c.prefill_flops for c in children),
        decode_flops=total(c.decode_flops for c in children),
        kv_cache=total(c.kv_cache for c in children),
        cross_kv_cache=total(c.cross_kv_cache for c in children),
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
    heads: Poly | None = None,
    kv_heads: Poly | None = None,
    d_head: Poly | None = None,
    q_norm: Block | None = None,
    k_norm: Block | None = None,
    description: str = "",
) -> Block:
    """Multi-head attention: Q, K, V projections, the attention products, and the output projection.

    ``inner`` is the width of all query heads together (``h d_h``, which is ``d`` in the classic
    layout); ``kv_inner`` the width of the key/value heads (smaller for grouped- and multi-query
    attention). ``heads``, ``kv_heads`` (default ``heads``) and ``d_head`` record the head layout on the
    block (`Block.heads`) for readers such as the activation-memory formula; given, ``heads d_head`` must
    be ``inner`` and ``kv_heads d_head`` ``kv_inner``. ``q_norm`` and ``k_norm`` are norms of the queries and
    keys before the scores (QK-norm: Qwen3's over each head, OLMo 2's over the whole projection), children
    after the projections; a norm has parameters and no matmul FLOPs. Causal self-attention caches ``2 kv_inner`` elements per token; cross-attention caches
    ``2 kv_inner`` per source token (the keys and values of the memory it attends to, computed once).

    A decode step runs one query: over ``N`` keys in self-attention (the cache and the new token), over
    the ``S`` cached source keys in cross-attention, whose key and value projections do not run.
    """
    kv_inner = inner if kv_inner is None else kv_inner
    out_bias = bias if out_bias is None else out_bias
    if heads is not None and kv_heads is None:
        kv_heads = heads
    if heads is not None and d_head is not None:
        assert kv_heads is not None
        for what, count, width in (("heads", heads, inner), ("kv_heads", kv_heads, kv_inner)):
            difference = count * d_head - width
            if not difference.free_symbols() and difference.evaluate() != 0:
                raise ValueError(
                    f"attention {name!r}: {what} {count.evaluate()} of width {d_head.evaluate()} do not make the "
                    f"projection width {width.evaluate()}; give heads, kv_heads and d_head that multiply to it"
                )
    core_flops = 2 * tokens_q * tokens_kv * inner + 2 * tokens_q * tokens_kv * inner
    keys = tokens_kv.substitute("N", S) if cross else tokens_kv
    core = _leaf(
        "scores",
        "attention_core",
        "softmax(Q Kᵀ / √d_h) V: the score product and the weighted sum, no parameters",
        flops=core_flops,
        attention_flops=core_flops,
        backward_flops=2 * core_flops,
        prefill_flops=core_flops,
        decode_flops=4 * _one_token(tokens_q) * keys * inner,
    )
    k_proj = linear("k_proj", d, kv_inner, bias=bias, tokens=tokens_kv)
    v_proj = linear("v_proj", d, kv_inner, bias=bias, tokens=tokens_kv)
    if cross:  # keys and values of the source: computed in prefill, read from the cache in a decode step
        k_proj, v_proj = _replace(k_proj, decode_flops=ZERO), _replace(v_proj, decode_flops=ZERO)
    children = [
        linear("q_proj", d, inner, bias=bias, tokens=tokens_q),
        k_proj,
        v_proj,
        *(norm for norm in (q_norm, k_norm) if norm is not None),
        core,
        linear("out_proj", inner, d, bias=out_bias, tokens=tokens_q),
    ]
    block = composite(
        name,
        "cross_attention" if cross else "self_attention",
        children,
        description or ("causal " if causal else "") + ("cross-attention" if cross else "multi-head self-attention"),
    )
    block = _replace(block, heads=heads, kv_heads=kv_heads, d_head=d_head)
    if cross:
        block = _replace(block, cross_kv_cache=2 * kv_inner)
    elif causal:
        block = _replace(block, kv_cache=2 * kv_inner)
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
    block = composite(name, "feed_forward", children, description or f"feed-forward, {kind}")
    return _replace(block, activation=activation, gated=gated)


def patch_embedding(
    name: str, channels: Poly, patch: Poly, d: Poly, n_patches: Poly, *, bias: bool = True, description: str = ""
) -> Block:
    """A ``patch x patch`` convolution with stride ``patch``: one ``d``-wide token per image patch. Its
    backward computes the weight's gradient only (``1 x`` its forward): the pixels need none."""
    weight = d * channels * patch * patch
    flops = 2 * n_patches * channels * patch * patch * d
    return _leaf(
        name,
        "patch_embedding",
        description or f"Conv2d({channels}, {d}, kernel={patch}, stride={patch})",
        params=weight + (d if bias else ZERO),
        approx=weight,
        flops=flops,
        backward_flops=flops,
        prefill_flops=flops,
        decode_flops=flops,
    )


def _copies(
    block: Block,
    *,
    name: str,
    kind: str,
    runs: Poly,
    stored: Poly,
    shared: bool = False,
    copies: Poly | None = None,
    description: str,
) -> Block:
    """A block holding copies of ``block``: ``stored`` sets of its weights, run ``runs`` times."""
    return _block(
        name=name,
        kind=kind,
        params=stored * block.params,
        approx=stored * block.approx,
        flops=runs * block.flops,
        attention_flops=runs * block.attention_flops,
        backward_flops=runs * block.backward_flops,
        prefill_flops=runs * block.prefill_flops,
        decode_flops=runs * block.decode_flops,
        kv_cache=runs * block.kv_cache,
        cross_kv_cache=runs * block.cross_kv_cache,
        embedding_params=stored * block.embedding_params,
        children=(block,),
        description=description,
        repeat=runs,
        shared=shared,
        copies=copies,
    )


def repeat(block: Block, n: Poly, *, name: str = "", shared: bool = False, description: str = "") -> Block:
    """``n`` copies of ``block`` in sequence; ``shared`` copies hold one set of weights (ALBERT)."""
    return _copies(
        block,
        name=name or block.name,
        kind="repeat",
        runs=n,
        stored=ONE if shared else n,
        shared=shared,
        description=description or (f"{n} layers sharing one set of weights" if shared else f"{n} × {block.name}"),
    )


def _positions_text(positions: tuple[int, ...]) -> str:
    """Layer indices as ranges: ``0-3, 8, 10-11``."""
    parts: list[str] = []
    start = previous = positions[0]
    for p in (*positions[1:], None):
        if p is not None and p == previous + 1:
            previous = p
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if p is not None:
            start = previous = p
    return ", ".join(parts)


#: The most layers a stack of differing layers may hold: `layer_runs` records each layer's stack position, so its
#: cost grows with the stack; no published model has more than a few hundred layers.
MAX_RUN_LAYERS = 100_000


def check_run_layers(n_layers: int, key: str = "n_layers") -> None:
    """Refuse, naming ``key``, a stack of differing layers too deep to list layer by layer (a configuration
    validator calls it, so the error names the key instead of failing the build)."""
    if n_layers > MAX_RUN_LAYERS:
        raise ValueError(
            f"{key}: {n_layers:,} layers; archzoo counts a stack of differing layers layer by layer, up to "
            f"{MAX_RUN_LAYERS:,} (no published model has more than a few hundred); choose fewer"
        )


def runs_in_order(layers: Iterable[Block]) -> list[tuple[Block, Poly]]:
    """The runs `layer_runs` takes, from a stack's layers in order, one block per layer (the same block object for
    every layer of one kind): consecutive layers of one kind make one run."""
    runs: list[list[Any]] = []
    for layer in layers:
        if runs and runs[-1][0] is layer:
            runs[-1][1] += 1
        else:
            runs.append([layer, 1])
    return [(layer, const(n)) for layer, n in runs]


def layer_runs(
    name: str,
    runs: list[tuple[Block, Poly]] | tuple[tuple[Block, Poly], ...],
    *,
    counts: Mapping[str, Poly] | None = None,
    description: str = "",
) -> Block:
    """A stack of layers that are not all alike, given in order as runs ``[(layer_a, n_a), (layer_b, n_b),
    ...]``: ``n_a`` copies of ``layer_a`` (each with its own weights), then ``n_b`` of ``layer_b``, and so on.

    The runs of one layer (equal blocks) are gathered into one child, a `repeat` of that layer named by it,
    whose ``positions`` list where its copies sit in the stack (Qwen2-MoE with a sparse step of 2: a
    ``dense`` run at layers ``0, 2, 4, ...`` and an ``moe`` run at ``1, 3, 5, ...``). Every count of the stack
    (parameters, active parameters, FLOPs of every phase, KV cache) is the sum over its runs, which are
    independent of order; the tree shows each run with its copies. Different layers must have different
    names, since the name is how a reader tells the runs apart; a stack of one layer is a plain `repeat`.
    Each run is named for its layer in the plural (``dense_layer`` runs as ``dense_layers``).

    ``counts`` names, by layer name, the formula to write for that layer's copies in all (a symbol such as
    ``L_moe``, so the formulas read ``L_moe·(...)`` rather than ``12·(...)`` when the runs interleave); its
    value must be the number of copies the runs give.
    """
    groups: dict[str, tuple[Block, list[int], Poly]] = {}
    start = 0
    for layer, n in runs:
        count = n.evaluate()
        if count < 0:
            raise ValueError(f"layer_runs {name!r}: run of {layer.name!r} has {count} layers; give 0 or more")
        known = groups.get(layer.name)
        if known is not None and known[0] != layer:
            raise ValueError(
                f"layer_runs {name!r}: two different layers are both named {layer.name!r}; name each kind of "
                "layer differently, so the runs can be told apart"
            )
        if count:
            previous = known[1] if known else []
            groups[layer.name] = (layer, previous + list(range(start, start + count)), known[2] + n if known else n)
        start += count
    if not groups:
        raise ValueError(f"layer_runs {name!r}: the stack holds no layer; give at least one run of one or more")
    children = []
    for layer, positions, n in groups.values():
        if counts and layer.name in counts:
            given = counts[layer.name]
            if given.evaluate() != len(positions):
                raise ValueError(
                    f"layer_runs {name!r}: counts gives {layer.name!r} {given.evaluate()} copies, the runs "
                    f"{len(positions)}; give the formula whose value is the runs' number of copies"
                )
            n = given
        where = _positions_text(tuple(positions))
        run = repeat(layer, n, name=f"{layer.name}s", description=f"{len(positions)} × {layer.name}, layers {where}")
        children.append(_replace(run, positions=tuple(positions)))
    shown = ", ".join(f"{len(positions)} × {layer.name}" for layer, positions, _ in groups.values())
    return composite(name, "layer_runs", children, description or f"{start} layers: {shown}")


def experts(
    expert: Block,
    n_experts: Poly,
    top_k: Poly,
    *,
    router: Block,
    shared_experts: Block | None = None,
    name: str = "moe",
    description: str = "",
) -> Block:
    """A mixture-of-experts feed-forward: ``router`` scores the experts for every token, each token runs
    through ``top_k`` of the ``n_experts`` stored copies of ``expert``, and ``shared_experts`` (if any)
    run for every token.

    ``router`` is usually ``linear("gate", d, n_experts, bias=False)`` (``2 N d E`` FLOPs) and ``expert``
    a `feed_forward` over ``N`` tokens: its copies, run ``k`` times per token, cost ``k`` times its FLOPs
    (``N k`` expert evaluations in all, however the tokens spread over the experts). The tree is
    ``name`` (kind ``mixture_of_experts``) holding the router, ``experts`` (``E`` copies of ``expert``,
    ``k`` run per token) and the shared experts.
    """
    k, e = top_k.evaluate(), n_experts.evaluate()
    if not 1 <= k <= e:
        raise ValueError(f"experts {name!r}: top_k {k} must be between 1 and n_experts ({e})")
    pool = _copies(
        expert,
        name="experts",
        kind="experts",
        runs=top_k,
        stored=n_experts,
        copies=n_experts,
        description=f"{n_experts} experts, {top_k} per token",
    )
    children = [router, pool] + ([shared_experts] if shared_experts is not None else [])
    shown = f"mixture of {n_experts} experts, top-{top_k}" + (", with shared experts" if shared_experts else "")
    return composite(name, "mixture_of_experts", children, description or shown)


def with_modules(root: Block, table: dict[str, tuple[str, ...]]) -> Block:
    """``root`` with each block whose path (``bert.layers.layer.attention``) is in ``table`` mapped to
    those reference submodules (`Block.modules`); a plugin's ``build`` ends with it."""

    def mapped(block: Block, parent: str) -> Block:
        path = f"{parent}.{block.name}" if parent else block.name
        children = tuple(mapped(child, path) for child in block.children)
        modules = tuple(table.get(path, block.modules))
        if (
            modules == block.modules
            and type(block.modules) is tuple
            and type(block.children) is tuple
            and all(map(is_, children, block.children))
        ):
            return block  # nothing to map here or below: the block as it is (blocks never change)
        return _replace(block, children=children, modules=modules)

    return mapped(root, "")
