"""The terms a plugin states its layers' saved tensors in (`SavedTerms`), and what it registers (`ActivationSaves`).

A training step saves, for backward, tensors whose sizes are polynomials in the sequence length ``N`` and the
widths of the block tree. Most of them are alike in every Transformer (a linear layer saves its input, a
LayerNorm its input and two fp32 numbers a token, the attention products their operands); what differs from
one implementation to the next (an fp32 softmax, a fused QKV projection held whole, a gelu written in Python,
a rotary table every layer reads) is the family's to say. A plugin says it with the
``register_activation_memory`` hook: one `ActivationSaves` per set of transformers classes its formula holds
for, each a few functions of `SavedTerms`, the shared terms built here from the block tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .blocks import Block
from .errors import ArchzooError
from .formula import N, Poly, const
from .hookspecs import hookimpl
from .symbols import symbol

__all__ = [
    "ACTIVATION_SAVES",
    "DTYPE_BYTES",
    "NORM_KINDS",
    "ActivationSaves",
    "GapTerm",
    "SavedTerms",
    "UnsupportedActivationMemory",
    "activation_memory_hook",
    "attention_shape",
    "child",
    "feed_forward_width_gap",
    "fp32_softmax_gap",
    "gelu_new_gap",
    "heads_of",
    "layer_norm_statistics_gap",
    "over",
    "symbol_of",
]

Dtype = Literal["fp32", "bf16"]
AttentionKind = Literal["eager", "fused"]
Device = Literal["meta", "cpu"]

#: bytes of one element in the dtypes activations are measured and computed in
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}

#: the block kinds that are normalisations (their saves are the family's `ActivationSaves.norm`)
NORM_KINDS = ("layer_norm", "rms_norm")


class UnsupportedActivationMemory(ArchzooError):
    """The formula does not know what this configuration's implementation saves for backward."""


@dataclass(frozen=True)
class GapTerm:
    """One reason the exact bytes of a layer differ from Korthikanti's: the bytes (a polynomial, per layer) and
    why."""

    name: str
    bytes: Poly
    reason: str


def over(poly: Poly, by: Poly) -> Poly:
    """``poly / by`` for ``by`` one symbol (``d``), each term of ``poly`` holding it: a width read off a weight
    (``d·d_ff / d``)."""
    (mono,) = by.terms
    ((name, _),) = mono
    terms = {}
    for m, c in poly.terms.items():
        powers = dict(m)
        if powers.get(name, 0) < 1:
            raise ValueError(f"{poly.text()} is not a multiple of {name}")
        powers[name] -= 1
        terms[tuple(sorted((n, p) for n, p in powers.items() if p))] = c
    return Poly(terms, poly.symbols)


def child(block: Block, name: str) -> Block:
    """``block``'s child called ``name`` (KeyError when it has none)."""
    for each in block.children:
        if each.name == name:
            return each
    raise KeyError(name)


def symbol_of(root: Block, name: str, value: int, definition: str = "") -> Poly:
    """The tree's own symbol ``name`` when its formulas use it, else the shared symbol bound to ``value``."""
    for poly in (root.params, root.flops, root.kv_cache):
        for used in poly.used_symbols():
            if used.name == name:
                return used.poly()
    return symbol(name, value, definition=definition)


def heads_of(root: Block, attention: Block, config: Any) -> Poly:
    """The query heads ``h`` of ``attention``: the block's own (`Block.heads`), else the configuration's
    ``n_heads`` for a plugin that does not record them on the tree."""
    if attention.heads is not None:
        return attention.heads
    return symbol_of(root, "h", config.n_heads)


def attention_shape(root: Block) -> tuple[int | None, int | None]:
    """``(d, h)`` of the first self-attention block that records its heads (`Block.heads`): its input width
    (its first projection's `Block.d_in`) and its query heads; ``(None, None)`` when no block records them."""
    for visit in root.visits():
        block = visit.block
        if block.kind == "self_attention" and block.heads is not None:
            first = next((c for c in block.children if c.d_in is not None), None)
            return (None if first is None or first.d_in is None else first.d_in.evaluate()), block.heads.evaluate()
    return None, None


@dataclass(frozen=True)
class SavedTerms:
    """The shared terms of one configuration's saved tensors, read off its block tree: the element sizes
    (``b`` of the dtype, ``stats`` of LayerNorm's statistics, ``fp32``, ``int64``), the widths (``d``, the
    heads ``h``, the attention's ``inner`` and key/value ``kv`` widths, the feed-forward's ``d_ff``, each a
    polynomial in the tree's symbols), the first layer's blocks, and what is measured (dtype, attention,
    recomputation, device)."""

    root: Block
    layer: Block
    attention_block: Block
    ff: Block
    config: Any  # the plugin's own configuration, for what only it knows (an image's channels)
    dtype: Dtype
    attention: AttentionKind
    recompute: bool
    device: Device
    b: Poly
    stats: Poly
    d: Poly
    h: Poly
    inner: Poly
    kv: Poly
    d_ff: Poly
    activation: str
    activation_elements: int = 0  # the d_ff-wide tensors the activation saves (`ActivationSaves.activations`)
    # the N the formula is asked at (the report's): for saves that change form with N, such as a mask SDPA is given
    # only from some length on, the family states the polynomial that holds there
    seq_len: int = 0
    # the stack the layer lies in, below the root (an encoder-decoder's "encoder" or "decoder"); "" for a model of one
    stack: str = ""
    fp32: Poly = field(default_factory=lambda: const(4))
    int64: Poly = field(default_factory=lambda: const(8))

    @property
    def Nd(self) -> Poly:
        return N * self.d

    @property
    def Ni(self) -> Poly:
        return N * self.inner

    @property
    def Nf(self) -> Poly:
        return N * self.d_ff

    @property
    def token_ids(self) -> Poly:
        """The int64 ids an embedding's backward indexes with, one a token."""
        return self.int64 * N

    def layer_norm(self) -> Poly:
        """A LayerNorm saves its input, and its mean and 1/σ per token (`stats` bytes each)."""
        return self.b * self.Nd + 2 * self.stats * N

    def probabilities(self, *, upcast: bool) -> Poly:
        """Softmax's output, the ``h N²`` probabilities: in fp32 (and a copy in the dtype for the value
        product) where the implementation upcasts softmax, else in the dtype."""
        if upcast:
            return (self.fp32 + (self.b if self.dtype != "fp32" else const(0))) * self.h * N**2
        return self.b * self.h * N**2

    def attention_saves(self, *, upcast: bool, eager_qkv: Poly | None = None, fused_held: Poly | None = None) -> Poly:
        """The attention block's own saves: the input the projections share, the core (queries, keys and values
        held for the products, ``eager_qkv``, default a copy of each, and the probabilities; or with fused
        attention SDPA's ``fused_held`` tensors, default q, k and v at their own widths, and an fp32 log-sum-exp
        per query and head), and the output projection's input."""
        if self.attention == "eager":
            qkv = 3 * self.Ni if eager_qkv is None else eager_qkv
            core = self.b * qkv + self.probabilities(upcast=upcast)
        else:
            held = self.Ni + 2 * N * self.kv if fused_held is None else fused_held
            core = self.b * held + self.fp32 * self.h * N
        return self.b * self.Nd + core + self.b * self.Ni

    def feed_forward_saves(self) -> Poly:
        """A feed-forward of two linear layers: the up projection's input, the activation's d_ff-wide saves
        (`activation_elements`) and the down projection's input."""
        return self.b * self.Nd + (self.activation_elements + 1) * self.b * self.Nf


#: elements of the feed-forward's hidden width each of transformers' activations saves, besides the linear
#: layers' inputs: nn.functional.gelu, silu save their input; gelu_new (NewGELUActivation) is written out in
#: Python ops and saves four. A family adds the ones it has measured (`ActivationSaves.activations`).
ACTIVATION_SAVES = {"gelu": 1, "gelu_pytorch_tanh": 1, "silu": 1, "swish": 1, "gelu_new": 4}


@dataclass(frozen=True)
class ActivationSaves:
    """What one family's layers save for backward, for the transformers classes in ``classes`` (measured with
    the transformers and torch versions archzoo is locked to; a plugin's tests check them against
    `archzoo.memory.measure_activations`).

    ``activations`` maps each activation the formula knows to the d_ff-wide tensors it saves besides the linear
    layers' inputs. ``layer`` gives the bytes of one layer's blocks other than its norms (by path below the
    layer: ``attention``, ``mlp``, ``attention.q_proj``; ``""`` for what modules of the layer that no block
    maps save, such as an activation module beside the feed-forward's linears); ``norm`` what each normalisation saves (default a
    LayerNorm's; a norm ``layer`` names takes that figure instead, such as one its class builds but never runs);
    ``stack`` what the stack of layers saves once for all of them (a rotary table; ``recompute`` says whether layers
    are recomputed); ``outside`` the blocks outside the layers, by path below the root
    (``token``, ``embeddings.segment``: a composite's parts it does not name save nothing, a top-level block it
    does not name is refused, a norm it names takes that figure instead of ``norm``'s; ``""`` for what the model's
    own forward saves outside every block); ``gap`` the terms after the dropout ones that take Korthikanti et al.'s
    layer to this one (`archzoo.memory.korthikanti_gap`). ``fused_note`` replaces the fused-attention assumption for
    classes that have no SDPA path (transformers then runs their eager attention). ``layer_input`` is what a
    recomputed layer saves, its input (default ``N d`` in the dtype; a stack over other rows than N tokens says so).

    A model of two stacks (an encoder-decoder, whose root holds no ``layers`` but an ``encoder`` and a ``decoder``
    that each do) is read stack by stack: `SavedTerms.stack` names the stack of the layer ``layer``, ``norm`` and
    ``stack`` are given, and ``outside`` names a stack's blocks beside its layers by ``stack.block``
    (``encoder.position``) and what the stack's own modules save outside its blocks by the stack's name
    (``encoder``); a stack's embedding it does not name saves nothing, another block it does not name is refused."""

    architecture: str
    classes: tuple[str, ...]
    activations: Mapping[str, int]
    layer: Callable[[SavedTerms], dict[str, Poly]]
    outside: Callable[[SavedTerms], dict[str, Poly]]
    gap: Callable[[SavedTerms], list[GapTerm | None]]
    norm: Callable[[SavedTerms], Poly] = SavedTerms.layer_norm
    fused_note: str = ""  # what "fused attention" means for these classes, where it is not SDPA's flash kernel
    # the fused figure's label in a terminal report: "SDPA" without a note, "no SDPA path: eager" with one, unless
    # the family names the path it runs (SDPA's math path where the flash kernel cannot take its heads)
    fused_label: str = ""
    stack: Callable[[SavedTerms], Poly] = lambda terms: const(0)
    layer_input: Callable[[SavedTerms], Poly] = lambda terms: terms.b * terms.Nd


# ---- the gap terms several families share -----------------------------------------------------------


def layer_norm_statistics_gap(terms: SavedTerms) -> GapTerm:
    norms = sum(1 for c in terms.layer.children if c.kind in NORM_KINDS)
    return GapTerm(
        "LayerNorm statistics",
        norms * 8 * N,
        "each LayerNorm saves its mean and 1/σ per token, in fp32 (4 bytes each) for a bf16 input; "
        "Korthikanti counts its input only",
    )


def fp32_softmax_gap(terms: SavedTerms) -> GapTerm:
    return GapTerm(
        "fp32 softmax",
        4 * terms.h * N**2,
        "softmax runs in fp32 (dtype=torch.float32): its 4-byte output is saved for its backward, and a "
        "2-byte copy for the value product, where Korthikanti counts 2 bytes",
    )


def gelu_new_gap(terms: SavedTerms) -> GapTerm | None:
    """gelu_new's three d_ff-wide intermediates beyond the one Korthikanti counts; None for another activation."""
    if terms.activation != "gelu_new":
        return None
    return GapTerm(
        "gelu_new intermediates",
        3 * 2 * N * terms.d_ff,
        "GPT-2's gelu_new is written in Python (0.5 x (1 + tanh(...))): autograd saves tanh's output, "
        "1 + tanh and 0.5 x besides the input, three more d_ff-wide tensors",
    )


def feed_forward_width_gap(terms: SavedTerms) -> GapTerm | None:
    """Korthikanti's MLP is 4 d wide; None when this one is too."""
    if not (terms.d_ff - 4 * terms.d).terms:
        return None
    return GapTerm(
        "feed-forward width",
        4 * N * terms.d_ff - 16 * terms.Nd,
        "Korthikanti's MLP is 4h wide; this one is d_ff wide (its GeLU input and output, 2 bytes each)",
    )


def activation_memory_hook(*saves: ActivationSaves) -> Callable[[Callable[[ActivationSaves], None]], None]:
    """A plugin's ``register_activation_memory`` hook, registering ``saves`` (each family's `ActivationSaves`):
    ``register_activation_memory = activation_memory_hook(SAVES)`` in its ``activation`` module."""

    @hookimpl
    def register_activation_memory(register: Callable[[ActivationSaves], None]) -> None:
        for family_saves in saves:
            register(family_saves)

    return register_activation_memory
