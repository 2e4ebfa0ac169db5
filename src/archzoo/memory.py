"""Memory of a training step and of inference: activations saved for backward, measured and as formulas.

**Activations.** The activation memory of one training step is the bytes of the tensors autograd saves for
backward during the forward pass, batch 1, N tokens, dropout 0, training mode. `measure_activations` records
them with ``torch.autograd.graph.saved_tensors_hooks``: each *storage* is counted once, at its full size
(a view saved twice, or saved by two operations, holds one buffer), and the storages of parameters and
buffers are excluded: weights are not activations (they are counted in the weights, and are there whether or
not a step runs). Each storage belongs to the innermost module running when it was first saved (forward
pre/post hooks keep the stack); one saved by several layers of a stack (LLaMA's rotary cos/sin table, read by
every layer) belongs to the stack. `archzoo.block_match.compare_blocks_to_tensors` then sums them per block through
`Block.modules`, as it sums parameters.

The meta device is enough for eager attention and recomputation: its tensors have storages with an identity
and a size, and the saved set depends on shapes and dtypes only, so measuring BERT-base or TinyLlama costs no
memory. It agrees with a CPU run of the same configuration in fp32 (a test checks it); in bf16 the meta
kernels keep LayerNorm's mean and 1/σ in fp32 (as CUDA's kernel does), the CPU kernel in bf16, so the formula
takes the device. Fused attention is measured on the CPU: there SDPA runs its flash kernel, while on the meta
device it falls back to its math path, which saves the probabilities as eager attention does.

`activation_formula` gives the same bytes as a polynomial in N, d, h, d_ff, ... per block, for the
implementations whose saved tensors it knows (transformers' BertModel, GPT-2, ViT and Llama classes), with
eager attention (the ``h N²`` probabilities saved, in fp32 where the class upcasts softmax), fused attention
(SDPA: queries, keys, values, output and an fp32 log-sum-exp per query and head, no N² tensor) or full
recomputation (each layer's input only; the layer's activations live again, one layer at a time, in backward).
It is read off the block tree (the widths of its linear layers, its kinds and names), the symbols of its
formulas, and three configuration fields the tree does not carry: the heads ``h``, the activation, and, for
ViT, the image's channels and patches.

**Peak memory.** `inference_peak` and `training_peak` add weights, the KV cache, gradients, optimiser states
and activations, each figure with the assumptions it rests on, in words.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .architecture import Reference
from .block_match import compare_blocks_to_tensors
from .errors import ArchzooError
from .figures import human_bytes
from .formula import N, Poly, const, total
from .reference import build_reference, import_dotted, reference_inputs
from .symbols import symbol

if TYPE_CHECKING:
    import torch

    from .blocks import Block
    from .report import Report

__all__ = [
    "SUPPORTED_CLASSES",
    "ActivationFormula",
    "ActivationMeasurement",
    "GapTerm",
    "MemoryItem",
    "PeakMemory",
    "SavedTensor",
    "UnsupportedActivationMemory",
    "activation_formula",
    "inference_peak",
    "korthikanti_gap",
    "korthikanti_layer_bytes",
    "measure_activations",
    "memory_dict",
    "memory_rows",
    "training_peak",
]

Dtype = Literal["fp32", "bf16"]
AttentionKind = Literal["eager", "fused"]

#: bytes of one element in the dtypes activations are measured and computed in
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}


# ---- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavedTensor:
    """One storage autograd saved for backward: the module that owns it, the first tensor saved from it
    (shape, dtype) and the storage's size in bytes (which a view may be smaller than)."""

    module: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    saves: int = 1  # how many times autograd saved a tensor of this storage


@dataclass(frozen=True)
class ActivationMeasurement:
    """What `measure_activations` found: every saved storage, and the parameter bytes it left out."""

    saved: tuple[SavedTensor, ...]
    parameter_saves: int  # saves of a parameter's or buffer's storage, excluded
    module_names: tuple[str, ...] = field(default=(), repr=False)  # every submodule and parameter name

    @property
    def total_bytes(self) -> int:
        return sum(s.nbytes for s in self.saved)

    def by_module(self) -> dict[str, int]:
        """Bytes per owning module (``""`` is the model's own forward)."""
        out: dict[str, int] = {}
        for s in self.saved:
            out[s.module] = out.get(s.module, 0) + s.nbytes
        return out

    def by_block(self, root: Block, plugin: str = "") -> dict[str, int | None]:
        """Bytes per mapped block of ``root`` (its first copy, for a repeated block), summed through
        `Block.modules` by `archzoo.block_match.compare_blocks_to_tensors`; None for a block whose submodule the
        model lacks."""
        named = [(name, 0) for name in self.module_names]  # a module that saves nothing holds 0 bytes
        named += [(f"{s.module}.#" if s.module else "#", s.nbytes) for s in self.saved]
        comparison = compare_blocks_to_tensors(root, named, plugin)
        return {row.path: row.expected for row in comparison.blocks}


def _zero_dropout(ref: Reference) -> Reference:
    """``ref`` with every dropout probability of its configuration class set to 0."""
    if ref.library != "transformers" or not ref.config_class:
        return ref
    defaults = import_dotted(ref.config_class)().to_dict()
    zeroed = {
        key: 0.0
        for key, value in defaults.items()
        if ("dropout" in key or "pdrop" in key) and isinstance(value, float) and key not in ref.kwargs
    }
    zeroed.update({k: 0.0 for k, v in ref.kwargs.items() if ("dropout" in k or "pdrop" in k) and isinstance(v, float)})
    return ref.model_copy(update={"kwargs": {**ref.kwargs, **zeroed}})


@contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _recompute_layers(model: Any, layer_lists: tuple[str, ...]) -> None:
    """Run every layer of the named ``nn.ModuleList``\\ s under ``torch.utils.checkpoint`` (reentrant): the
    layer's forward runs without grad and autograd saves only its inputs, attributed to the layer."""
    import functools

    import torch.utils.checkpoint

    for name in layer_lists:
        for layer in model.get_submodule(name):
            forward = layer.forward

            def checkpointed(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
                return torch.utils.checkpoint.checkpoint(
                    functools.partial(_forward, **kwargs), *args, use_reentrant=True
                )

            layer.forward = checkpointed


def measure_activations(
    ref: Reference,
    seq_len: int,
    *,
    dtype: Dtype = "fp32",
    attention: AttentionKind = "eager",
    recompute: tuple[str, ...] = (),
    device: Literal["meta", "cpu"] = "meta",
) -> ActivationMeasurement:
    """The tensors autograd saves in the forward pass of one training step of ``ref`` at batch 1 and
    ``seq_len`` tokens: dropout 0 (every dropout probability of the configuration), training mode, the
    model built in ``dtype``; ``attention`` eager (the reference's own) or fused (transformers' SDPA);
    ``recompute`` names the ``nn.ModuleList``\\ s whose layers are recomputed in backward (full activation
    checkpointing: only each layer's inputs are saved)."""
    import warnings

    import torch

    ref = _zero_dropout(ref)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    with _default_dtype(torch_dtype), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_reference(ref, device)
    if attention == "fused":
        if ref.library != "transformers":
            raise ArchzooError(f"{ref.target}: fused attention is measured for transformers classes only")
        model.set_attn_implementation("sdpa")  # type: ignore[operator]
    if recompute:
        _recompute_layers(model, recompute)
    model.train()
    args, kwargs = reference_inputs(ref.model_copy(update={"device": device}), seq_len)

    held = {t.untyped_storage()._cdata for t in (*model.parameters(), *model.buffers())}
    names = {module: name for name, module in model.named_modules()}
    stack = [""]
    owners: dict[int, list[str]] = {}  # storage -> the modules that saved it, in order
    first: dict[int, torch.Tensor] = {}
    parameter_saves = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal parameter_saves
        key = tensor.untyped_storage()._cdata
        if key in held:
            parameter_saves += 1
        else:
            owners.setdefault(key, []).append(stack[-1])
            first.setdefault(key, tensor)  # held until the end, so no storage identity is reused
        return tensor

    def enter(module: Any, args: Any) -> None:
        stack.append(names[module])

    def leave(module: Any, args: Any, output: Any) -> None:
        stack.pop()  # returns None: a forward hook's return value would replace the module's output

    handles = []
    for module in model.modules():
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    saved = tuple(
        SavedTensor(
            module=_owner(owners[key]),
            shape=tuple(first[key].shape),
            dtype=str(first[key].dtype).removeprefix("torch."),
            nbytes=first[key].untyped_storage().nbytes(),
            saves=len(owners[key]),
        )
        for key in owners
    )
    every_name = tuple(names.values()) + tuple(name for name, _ in model.named_parameters())
    return ActivationMeasurement(saved, parameter_saves, every_name)


def _owner(modules: list[str]) -> str:
    """The module a storage belongs to: the first that saved it, or, when layers of a stack saved it (their
    names differ in an index), the innermost module holding all of them."""
    split = [m.split(".") for m in modules]
    differs = any(
        a != b and a.isdigit() and b.isdigit() for parts in split[1:] for a, b in zip(split[0], parts, strict=False)
    )
    return _common_ancestor(modules) if differs else modules[0]


def _common_ancestor(modules: list[str]) -> str:
    """The innermost module containing every one of ``modules`` (dotted names; ``""`` is the model)."""
    parts = [m.split(".") if m else [] for m in dict.fromkeys(modules)]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return ".".join(common)


# ---- the formula --------------------------------------------------------------------------------

#: transformers classes whose saved tensors the formula knows, by architecture: measured with transformers
#: 5.23 and torch 2.13 (tests/test_memory.py checks every one at several configurations and lengths)
SUPPORTED_CLASSES: dict[str, tuple[str, ...]] = {
    "bert": ("transformers.BertModel",),
    "gpt": ("transformers.GPT2Model", "transformers.GPT2LMHeadModel"),
    "vit": ("transformers.ViTModel", "transformers.ViTForImageClassification"),
    "llama": ("transformers.LlamaModel", "transformers.LlamaForCausalLM"),
}

#: elements of the feed-forward's hidden width each activation saves, besides the linear layers' inputs:
#: nn.functional.gelu, silu save their input; GPT-2's gelu_new is written out in Python ops and saves four
_ACTIVATION_SAVES = {"gelu": 1, "gelu_pytorch_tanh": 1, "silu": 1, "swish": 1, "gelu_new": 4}

Device = Literal["meta", "cpu"]


class UnsupportedActivationMemory(ArchzooError):
    """The formula does not know what this configuration's implementation saves for backward."""


@dataclass(frozen=True)
class ActivationFormula:
    """Activation bytes of one training step as polynomials in ``N`` (batch 1), per block path: the block's
    own saved tensors plus its children's, every copy included (a stack of ``L`` layers holds ``L`` layers).
    ``per_copy`` holds the same for one copy of a repeated block (one layer)."""

    root: str
    blocks: dict[str, Poly]
    per_copy: dict[str, Poly]
    dtype: str
    attention: str
    recompute: bool
    device: str
    assumptions: tuple[str, ...]

    @property
    def total(self) -> Poly:
        return self.blocks[self.root]

    def bytes_at(self, seq_len: int) -> int:
        return self.total.evaluate(N=seq_len)


def _over(poly: Poly, by: Poly) -> Poly:
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


def _config(report: Report) -> Any:
    """The configuration's fields the block tree does not carry (heads, activation, image), by name."""
    return report.config


def _child(block: Block, name: str) -> Block:
    for child in block.children:
        if child.name == name:
            return child
    raise KeyError(name)


def _symbol_of(root: Block, name: str, value: int, definition: str = "") -> Poly:
    """The tree's own symbol ``name`` when its formulas use it, else the shared symbol bound to ``value``."""
    for poly in (root.params, root.flops, root.kv_cache):
        for used in poly.used_symbols():
            if used.name == name:
                return used.poly()
    return symbol(name, value, definition=definition)


def activation_formula(
    report: Report,
    *,
    dtype: Dtype = "fp32",
    attention: AttentionKind = "eager",
    recompute: bool = False,
    device: Device = "meta",
) -> ActivationFormula:
    """The bytes autograd saves in one training step of ``report``'s configuration (batch 1, dropout 0, its
    transformers reference in ``dtype``), as a polynomial in ``N`` per block: what `measure_activations`
    measures, exactly. ``device`` matters for LayerNorm's mean and reciprocal deviation, which the meta device
    keeps in fp32 for a 16-bit input (as CUDA does) and the CPU kernel in the input's dtype; fused attention
    (SDPA's flash kernel) is what the CPU runs, since the meta device falls back to SDPA's math path, which
    saves the probabilities. Raises `UnsupportedActivationMemory` for an implementation it does not know."""
    arch = report.architecture.name
    config: Any = report.config  # the fields the tree does not carry: heads, activation, image
    root: Block = report.root
    if arch not in SUPPORTED_CLASSES:
        raise UnsupportedActivationMemory(
            f"{arch}: archzoo knows the tensors saved for backward by "
            f"{', '.join(c for cs in SUPPORTED_CLASSES.values() for c in cs)} only; what another "
            "implementation saves (its copies, fp32 upcasts, fused kernels) is measured with "
            "archzoo.memory.measure_activations, not guessed"
        )
    ref = report.architecture.reference(config) if report.architecture.reference else None
    if ref is None or ref.target not in SUPPORTED_CLASSES[arch]:
        target = "no transformers class" if ref is None else ref.target
        raise UnsupportedActivationMemory(
            f"{arch}: this configuration is built by {target}; the activation formula is known for "
            f"{', '.join(SUPPORTED_CLASSES[arch])} (other families and heads save other tensors: measure them "
            "with archzoo.memory.measure_activations)"
        )
    activation = getattr(config, "activation", "")
    if activation not in _ACTIVATION_SAVES:
        raise UnsupportedActivationMemory(
            f"{arch}: activation {activation!r}: the formula knows what {', '.join(_ACTIVATION_SAVES)} save; "
            "relu and tanh save their output, which the next layer shares, and others save several intermediates"
        )
    if attention == "fused" and device != "cpu":
        raise UnsupportedActivationMemory(
            "fused attention is SDPA's flash kernel, which the CPU runs; on the meta device SDPA falls back to its "
            "math path, which saves the h·N² probabilities like eager attention: use device='cpu'"
        )
    b = const(DTYPE_BYTES[dtype])
    stats = const(4) if device == "meta" else b  # LayerNorm's mean and 1/σ, per token
    fp32, int64 = const(4), const(8)
    d = _symbol_of(root, "d", config.d_model)
    h = _symbol_of(root, "h", config.n_heads)
    layers_block = _child(root, "layers")
    layer = layers_block.children[0]
    L = layers_block.repeat
    assert L is not None
    names = [c.name for c in layer.children]
    attention_block = next(c for c in layer.children if c.kind == "self_attention")
    ff = next(c for c in layer.children if c.kind == "feed_forward")
    inner = _over(_child(attention_block, "q_proj").approx, d)
    d_ff = _over(_child(ff, "fc_in").approx, d)
    Nd, Ni, Nf = N * d, N * inner, N * d_ff

    def layer_norm() -> Poly:
        return b * Nd + 2 * stats * N  # the input, and mean and 1/σ per token

    def rms_norm() -> Poly:
        # LlamaRMSNorm: x in fp32 (a copy in 16 bits), 1/rms in fp32, and x/rms back in the dtype for the weight
        return fp32 * Nd + fp32 * N + b * Nd

    norm = rms_norm if arch == "llama" else layer_norm
    # the probabilities: softmax's output, in fp32 where the implementation upcasts it (and a copy in the dtype)
    upcast = arch in ("vit", "llama")
    probs = (fp32 + (b if dtype != "fp32" else const(0))) * h * N**2 if upcast else b * h * N**2
    # queries, keys, values held for the products: GPT-2 holds its fused c_attn output (3 inner wide) for one
    # of them, and contiguous copies of the other two; the others a copy of each
    qkv = 5 * Ni if arch == "gpt" else 3 * Ni
    if attention == "eager":
        core = b * qkv + probs
    else:  # SDPA: q, k, v (keys and values at their own width), the output, a log-sum-exp per query and head
        kv = _over(_child(attention_block, "k_proj").approx, d)
        held = 5 * Ni if arch == "gpt" else Ni + 2 * N * kv
        core = b * held + fp32 * h * N
    attn_own = b * Nd + core + b * Ni  # the input the projections share, the core, the output projection's input
    per: dict[str, Poly] = {}
    lp = f"{root.name}.layers.layer"
    if arch == "llama":  # mapped to the projections: each linear's input where it is first saved
        per.update(
            {
                f"{lp}.attention.q_proj": b * Nd,
                f"{lp}.attention.k_proj": const(0),
                f"{lp}.attention.v_proj": const(0),
                # SDPA's output is saved by SDPA first; eager attention's is copied for the projection
                f"{lp}.attention.out_proj": b * Ni if attention == "eager" else const(0),
                f"{lp}.mlp.fc_gate": b * Nd,
                f"{lp}.mlp.fc_in": const(0),
                f"{lp}.mlp.fc_out": b * Nf,
            }
        )
        per[f"{lp}.attention"] = attn_own
        # SwiGLU: silu's input (the gate's output), the product's two factors, the down projection's input
        per[f"{lp}.mlp"] = b * Nd + 4 * b * Nf
    else:
        per[f"{lp}.attention"] = attn_own
        ff_name = ff.name
        per[f"{lp}.{ff_name}"] = b * Nd + (_ACTIVATION_SAVES[activation] + 1) * b * Nf
    for child in layer.children:
        if child.kind in ("layer_norm", "rms_norm"):
            per[f"{lp}.{child.name}"] = norm()
    if recompute:  # only each layer's input; GPT-2 passes its attention mask positionally, so it is saved too
        per = {path: const(0) for path in per}
        per[lp] = b * Nd
    else:
        per[lp] = total(per[f"{lp}.{name}"] for name in names)
    blocks: dict[str, Poly] = {}
    shared = const(0)
    if arch == "llama" and not recompute:  # the rotary cos and sin tables every layer multiplies by
        d_h = _symbol_of(root, "d_h", config.d_head or config.d_model // config.n_heads, definition="d / h")
        shared = 2 * b * N * d_h
    if arch == "gpt" and recompute:
        shared = b * N**2  # the additive causal mask, an argument of every layer
    if L.evaluate() == 1 and not shared.is_zero():  # one layer saves it: the layer's (its attention's) own
        if not recompute:
            per[f"{lp}.attention"] = per[f"{lp}.attention"] + shared
        per[lp], shared = per[lp] + shared, const(0)
    blocks[f"{root.name}.layers"] = L * per[lp] + shared
    for path, poly in per.items():
        blocks[path] = L * poly
    tops: dict[str, Poly] = {}
    for child in root.children:
        path = f"{root.name}.{child.name}"
        if child.name == "layers":
            continue
        if child.kind in ("layer_norm", "rms_norm"):
            tops[path] = norm()
        elif child.name == "token":
            tops[path] = int64 * N  # the token ids the embedding's backward indexes with
        elif child.name == "position":
            tops[path] = int64 * N if arch == "gpt" else const(0)  # GPT-2's position ids; ViT's is a table
        elif child.name == "lm_head":
            tops[path] = b * Nd
        elif child.name == "pooler":  # the first token, a view holding the whole last hidden state; tanh's output
            tops[path] = b * Nd + b * d
        elif child.name == "head":  # the [CLS] token, a view holding the whole final norm's output
            tops[path] = b * Nd
        elif child.name == "embeddings":
            parts: dict[str, Poly] = {}
            for part in child.children:
                part_path = f"{path}.{part.name}"
                if part.name in ("token", "segment"):
                    parts[part_path] = int64 * N
                elif part.kind == "layer_norm":
                    parts[part_path] = norm()
                elif part.kind == "patch_embedding":  # the convolution saves the image
                    channels, patch = _symbol_of(root, "C", config.channels), _symbol_of(root, "p", config.patch_size)
                    n_p = _symbol_of(root, "n_p", config.n_patches)
                    parts[part_path] = b * channels * patch**2 * n_p
                else:
                    parts[part_path] = const(0)
            tops.update(parts)
            tops[path] = total(parts.values())
        else:
            raise UnsupportedActivationMemory(f"{arch}: block {path} ({child.kind}) is not known to the formula")
    blocks.update(tops)
    blocks[root.name] = blocks[f"{root.name}.layers"] + total(
        poly for path, poly in tops.items() if path.count(".") == 1
    )
    assumptions = (
        f"batch 1, dropout 0, training mode, weights and activations in {dtype}",
        "each storage counted once, parameters and buffers excluded",
        {
            "eager": "eager attention: the h·N² probabilities are saved",
            "fused": "fused attention (SDPA's flash kernel): no h·N² tensor, a log-sum-exp per query and head",
        }[attention],
        *(
            ["full recomputation: only each layer's input is saved (a layer's activations live again in backward)"]
            if recompute
            else []
        ),
        f"LayerNorm statistics in {'fp32 (meta device, as CUDA)' if device == 'meta' else dtype + ' (CPU kernel)'}",
    )
    return ActivationFormula(
        root=root.name,
        blocks=blocks,
        per_copy=per,
        dtype=dtype,
        attention=attention,
        recompute=recompute,
        device=device,
        assumptions=assumptions,
    )


# ---- Korthikanti et al. 2022 --------------------------------------------------------------------


def korthikanti_layer_bytes(report: Report) -> Poly:
    """Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", eq. 1: one
    Transformer layer stores ``s b h (34 + 5 a s / h)`` bytes in 16-bit, with dropout masks (1 byte an element);
    at batch ``b = 1``, ``s = N`` tokens, width ``h = d`` and ``a`` heads: ``34 N d + 5 a N²``."""
    d = _symbol_of(report.root, "d", _config(report).d_model)
    heads = _symbol_of(report.root, "h", _config(report).n_heads)
    return 34 * N * d + 5 * heads * N**2


@dataclass(frozen=True)
class GapTerm:
    """One reason the exact bytes of a layer differ from Korthikanti's: the bytes (a polynomial, per layer) and
    why."""

    name: str
    bytes: Poly
    reason: str


def korthikanti_gap(report: Report) -> tuple[GapTerm, ...]:
    """The terms that take Korthikanti's per-layer bytes to the exact bytes of one layer of ``report``'s
    transformers class in bf16 (eager attention, dropout 0, meta device): Korthikanti's figure plus their sum is
    `activation_formula`'s ``per_copy`` bytes of the layer, exactly. For the implementations the formula knows."""
    arch = report.architecture.name
    activation_formula(report, dtype="bf16")  # refuses what it does not know
    root = report.root
    d = _symbol_of(root, "d", _config(report).d_model)
    heads = _symbol_of(root, "h", _config(report).n_heads)
    layer = _child(root, "layers").children[0]
    ff = next(c for c in layer.children if c.kind == "feed_forward")
    d_ff = _over(_child(ff, "fc_in").approx, d)
    Nd = N * d
    terms = [
        GapTerm(
            "dropout masks",
            -(heads * N**2 + 2 * Nd),
            "at p = 0 no dropout runs, so none of Korthikanti's masks (a s² b for the probabilities, s b h after the "
            "attention and after the MLP, one byte an element) is saved",
        ),
        GapTerm(
            "dropout output",
            -2 * heads * N**2,
            "at p = 0 the probabilities are passed on unchanged: the tensor the value product saves is softmax's "
            "output, stored once, where Korthikanti counts the dropout's output (2 a s² b) beside it",
        ),
    ]
    norms = sum(1 for c in layer.children if c.kind in ("layer_norm", "rms_norm"))
    if arch == "llama":
        terms.append(
            GapTerm(
                "RMSNorm in fp32",
                norms * (4 * Nd + 4 * N),
                "LlamaRMSNorm upcasts its input to fp32 (a 4-byte copy) and saves 1/rms per token in fp32, besides "
                "the 2-byte normalised tensor Korthikanti counts as the LayerNorm's input",
            )
        )
    else:
        terms.append(
            GapTerm(
                "LayerNorm statistics",
                norms * 8 * N,
                "each LayerNorm saves its mean and 1/σ per token, in fp32 (4 bytes each) for a bf16 input; "
                "Korthikanti counts its input only",
            )
        )
    if arch in ("vit", "llama"):
        terms.append(
            GapTerm(
                "fp32 softmax",
                4 * heads * N**2,
                "softmax runs in fp32 (dtype=torch.float32): its 4-byte output is saved for its backward, and a "
                "2-byte copy for the value product, where Korthikanti counts 2 bytes",
            )
        )
    if arch == "gpt":
        terms.append(
            GapTerm(
                "fused QKV output held",
                4 * Nd,
                "GPT-2's Conv1D computes Q, K and V as one 3d-wide tensor; the query saved for Q Kᵀ is a view "
                "holding all of it (6 bytes a token and channel), and the transposed key and the value are saved "
                "as contiguous copies (2 + 2), against Korthikanti's 2 for each of Q, K and V",
            )
        )
    extra = {"gelu_new": 3, "gelu": 0, "gelu_pytorch_tanh": 0}.get(_config(report).activation)
    if arch == "llama":
        terms.append(
            GapTerm(
                "SwiGLU feed-forward",
                8 * N * d_ff - 16 * Nd,
                "the gated feed-forward saves the gate's output, silu's output, the up projection's output and "
                "their product (4 tensors of d_ff, 2 bytes each) besides its input, where Korthikanti's MLP saves "
                "the GeLU's input and output, 4h wide (16 s b h)",
            )
        )
    else:
        if extra:
            terms.append(
                GapTerm(
                    "gelu_new intermediates",
                    extra * 2 * N * d_ff,
                    "GPT-2's gelu_new is written in Python (0.5 x (1 + tanh(...))): autograd saves tanh's output, "
                    "1 + tanh and 0.5 x besides the input, three more d_ff-wide tensors",
                )
            )
        if (d_ff - 4 * d).terms:
            terms.append(
                GapTerm(
                    "feed-forward width",
                    4 * N * d_ff - 16 * Nd,
                    "Korthikanti's MLP is 4h wide; this one is d_ff wide (its GeLU input and output, 2 bytes each)",
                )
            )
    return tuple(t for t in terms if not (t.bytes - const(0)).is_zero())


# ---- peak memory --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryItem:
    """One part of a peak: its bytes, and what the figure assumes."""

    name: str
    bytes: int
    assumption: str


@dataclass(frozen=True)
class PeakMemory:
    """A peak-memory figure: the sum of its items, each with its assumption, and the assumptions of the whole."""

    kind: str  # "inference" or "training"
    items: tuple[MemoryItem, ...]
    assumptions: tuple[str, ...]

    @property
    def total(self) -> int:
        return sum(item.bytes for item in self.items)

    def lines(self) -> list[str]:
        """Plain-text lines: each item with its bytes and assumption, then the total."""
        out = [f"{item.name}: {human_bytes(item.bytes)} ({item.bytes:,} B) - {item.assumption}" for item in self.items]
        out.append(f"{self.kind} peak: {human_bytes(self.total)} ({self.total:,} B)")
        return out + [f"assumes: {a}" for a in self.assumptions]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "total_bytes": self.total,
            "items": [{"name": i.name, "bytes": i.bytes, "assumption": i.assumption} for i in self.items],
            "assumptions": list(self.assumptions),
        }


_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}


def _check_dtype(name: str, dtype: str) -> int:
    if dtype not in _BYTES:
        raise ArchzooError(f"{name}: unknown dtype {dtype!r}; expected one of {', '.join(_BYTES)}")
    return _BYTES[dtype]


def inference_peak(report: Report, *, seq_len: int | None = None, dtype: str = "bf16") -> PeakMemory:
    """Weights, the KV cache of ``seq_len`` tokens and the largest activation alive at once in one eager
    forward pass of batch 1 (under ``torch.no_grad``, nothing is saved for backward). The largest live
    activation is an estimate from the block tree, stated as such: the residual stream plus the larger of the
    attention scores and probabilities of one layer (``2 h N²``, both alive around softmax), the
    feed-forward's hidden tensors of one layer (``2 N d_ff``, or 3 for a gated one), and the logits (``N V``)."""
    n = report.seq_len if seq_len is None else seq_len
    size = _check_dtype("dtype", dtype)
    params = report.params
    kv = report.kv_cache_elements_per_token * n
    cross = report.cross_kv_cache_elements_per_source_token * n
    d, heads = getattr(report.config, "d_model", None), getattr(report.config, "n_heads", None)
    if not isinstance(d, int) or not isinstance(heads, int):
        raise UnsupportedActivationMemory(
            f"{report.architecture.name}: its configuration names no d_model and n_heads, which the largest live "
            "activation is estimated from"
        )
    widest_ff = 0
    logits = 0
    for visit in report.root.visits():
        block = visit.block
        if block.kind == "feed_forward":
            fc_in = _child(block, "fc_in")
            width = fc_in.flops.evaluate(N=1) // (2 * d)
            gated = any(c.name == "fc_gate" for c in block.children)
            widest_ff = max(widest_ff, (3 if gated else 2) * n * width)
        if block.name == "lm_head":
            logits = n * block.flops.evaluate(N=1) // (2 * d)
    scores = 2 * heads * n * n
    largest = n * d + max(scores, widest_ff, logits)
    items = (
        MemoryItem("weights", params * size, f"{params:,} parameters in {dtype}"),
        MemoryItem(
            "KV cache",
            (kv + cross) * size,
            f"keys and values of {n:,} tokens in {dtype}" + (" (and of as many source tokens)" if cross else ""),
        ),
        MemoryItem(
            "largest live activation",
            largest * size,
            f"estimate: the residual stream (N·d) plus the largest of one layer's scores and probabilities "
            f"(2·h·N² = {scores:,}), its feed-forward hidden tensors ({widest_ff:,}) and the logits ({logits:,}) "
            f"elements, in {dtype}",
        ),
    )
    return PeakMemory(
        "inference",
        items,
        (
            f"batch 1, N = {n:,}, eager attention",
            "no allocator overhead, no CUDA context, no workspace",
        ),
    )


def training_peak(
    report: Report,
    *,
    seq_len: int | None = None,
    weights: str = "bf16",
    gradients: str | None = None,
    optimizer_states: str = "fp32",
    master_weights: bool = True,
    activations: ActivationFormula | None = None,
    attention: AttentionKind = "eager",
    recompute: bool = False,
) -> PeakMemory:
    """Weights, gradients, Adam's ``m`` and ``v``, an optional fp32 master copy of the weights, and the
    activations of one training step (`activation_formula`, exact for the implementations it knows; None
    refused with its reason). ``gradients`` default to the weights' dtype."""
    n = report.seq_len if seq_len is None else seq_len
    w = _check_dtype("weights", weights)
    gradients = gradients or weights
    g = _check_dtype("gradients", gradients)
    o = _check_dtype("optimizer_states", optimizer_states)
    params = report.params
    act_dtype: Dtype = "fp32" if weights == "fp32" else "bf16"
    formula = activations or activation_formula(report, dtype=act_dtype, attention=attention, recompute=recompute)
    items = [
        MemoryItem("weights", params * w, f"{params:,} parameters in {weights}"),
        MemoryItem("gradients", params * g, f"one gradient per parameter in {gradients}"),
        MemoryItem("Adam m and v", 2 * params * o, f"two moments per parameter in {optimizer_states}"),
    ]
    if master_weights and weights != "fp32":
        items.append(
            MemoryItem("fp32 master weights", params * 4, "mixed precision: an fp32 copy the optimiser updates")
        )
    items.append(
        MemoryItem(
            "activations",
            formula.bytes_at(n),
            f"saved for backward at N = {n:,}: " + "; ".join(formula.assumptions),
        )
    )
    if recompute:  # backward runs one layer again, saving its activations, while the others' inputs wait
        full = activation_formula(report, dtype=act_dtype, attention=attention)
        layer = full.per_copy[f"{full.root}.layers.layer"].evaluate(N=n)
        items.append(MemoryItem("one recomputed layer", layer, "a layer's saved tensors, alive during its backward"))
    return PeakMemory(
        "training",
        tuple(items),
        (
            "all parameters trainable; every gradient counted alive beside every activation (an upper bound: gradients fill in as backward frees activations)",
            "no allocator fragmentation, no temporary buffers of backward, no CUDA context",
        ),
    )


# ---- for the report, the CLI and the terminal ---------------------------------------------------


def memory_dict(report: Report) -> dict[str, Any]:
    """The memory figures of ``report`` at its N as JSON: activations (bf16 and fp32; eager, fused and full
    recomputation, each with its formula), Korthikanti's figure and the gap, and both peaks with their
    assumptions. Where the formula does not know the implementation, ``activations`` holds the reason."""
    n = report.seq_len
    out: dict[str, Any] = {"seq_len": n}
    try:
        out["inference_peak"] = inference_peak(report).to_dict()
    except UnsupportedActivationMemory as exc:
        out["inference_peak"] = {"unknown": str(exc)}
    try:
        variants: dict[str, Any] = {}
        for dtype in ("bf16", "fp32"):
            for name, kwargs in (
                ("eager", {}),
                ("fused", {"attention": "fused", "device": "cpu"}),
                ("recompute", {"recompute": True}),
            ):
                formula = activation_formula(report, dtype=dtype, **kwargs)  # type: ignore[arg-type]
                variants[f"{name}_{dtype}"] = {
                    "bytes": formula.bytes_at(n),
                    "formula": formula.total.text(),
                    "assumptions": list(formula.assumptions),
                }
        out["activations"] = variants
        layers = _child(report.root, "layers").repeat
        assert layers is not None
        out["korthikanti"] = {
            "bytes": layers.evaluate() * korthikanti_layer_bytes(report).evaluate(N=n),
            "layer_formula": korthikanti_layer_bytes(report).text(),
            "source": "Korthikanti et al. 2022, arXiv:2205.05198, eq. 1 (16-bit, with dropout masks), times L",
            "gap_per_layer": [
                {"term": t.name, "bytes": t.bytes.evaluate(N=n), "formula": t.bytes.text(), "reason": t.reason}
                for t in korthikanti_gap(report)
            ],
        }
        out["training_peak"] = training_peak(report).to_dict()
    except UnsupportedActivationMemory as exc:
        out["activations"] = {"unsupported": str(exc)}
    return out


def memory_rows(report: Report) -> list[tuple[str, str, str]]:
    """Rows for the terminal summary, ``(label, figure, detail)``: activations of a training step in bf16 (eager,
    fused, recomputed) with the eager formula, Korthikanti's figure, and the two peaks."""
    n = report.seq_len
    try:
        peak = inference_peak(report)
        rows = [(f"inference peak (N={n:,})", human_bytes(peak.total), "bf16 weights + KV cache + largest activation")]
    except UnsupportedActivationMemory as exc:
        rows = [("inference peak", "", f"not known: {exc}")]
    try:
        eager = activation_formula(report, dtype="bf16")
    except UnsupportedActivationMemory as exc:
        return [*rows, ("activations", "", f"not known: {exc}")]
    fused = activation_formula(report, dtype="bf16", attention="fused", device="cpu").bytes_at(n)
    recomputed = activation_formula(report, dtype="bf16", recompute=True).bytes_at(n)
    layers = _child(report.root, "layers").repeat
    assert layers is not None
    korthikanti = layers.evaluate() * korthikanti_layer_bytes(report).evaluate(N=n)
    training = training_peak(report)
    return [
        *rows,
        (f"activations (N={n:,})", human_bytes(eager.bytes_at(n)), f"bf16, eager = {eager.total.text()}"),
        ("  fused / recomputed", f"{human_bytes(fused)} / {human_bytes(recomputed)}", "SDPA; only each layer's input"),
        ("  Korthikanti et al.", human_bytes(korthikanti), "L·(34·N·d + 5·h·N²), with dropout masks"),
        ("training peak", human_bytes(training.total), "bf16 weights and gradients, fp32 Adam and master weights"),
    ]
