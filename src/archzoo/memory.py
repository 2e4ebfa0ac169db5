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
implementations a plugin states (the ``register_activation_memory`` hook: `archzoo.saved_tensors.ActivationSaves`,
one per family and set of transformers classes), with eager attention (the ``h N²`` probabilities saved, in
fp32 where the class upcasts softmax), fused attention (SDPA: queries, keys, values, output and an fp32
log-sum-exp per query and head, no N² tensor) or full recomputation (each layer's input only; the layer's
activations live again, one layer at a time, in backward). The shared terms are read off the block tree (the
widths of its linear layers, the heads of its attention, the activation of its feed-forward); the family's
plugin says what its implementation saves beyond them.

**Peak memory.** `inference_peak` and `training_peak` add weights, the KV cache, gradients, optimiser states
and activations, each figure with the assumptions it rests on, in words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .architecture import Reference
from .block_match import compare_blocks_to_tensors
from .errors import ArchzooError, PluginError
from .figures import human_bytes
from .formula import N, Poly, const, total
from .host import PluginHost, get_host
from .plugin_guard import call_plugin, plugin_error
from .reference import build_reference, import_dotted, reference_inputs
from .saved_tensors import (
    ACTIVATION_SAVES,
    DTYPE_BYTES,
    NORM_KINDS,
    ActivationSaves,
    AttentionKind,
    Device,
    Dtype,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    attention_shape,
    child,
    heads_of,
    over,
)

if TYPE_CHECKING:
    import torch

    from .blocks import Block
    from .report import Report

__all__ = [
    "ACTIVATION_SAVES",
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
    "plugin_activation_saves",
    "registered_activation_saves",
    "training_peak",
]


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
    """``ref`` with every dropout probability of its configuration class set to 0, LayerDrop's too (a layer skipped
    at random saves nothing)."""
    if ref.library != "transformers" or not ref.config_class:
        return ref

    def dropped(key: str) -> bool:
        return "dropout" in key or "pdrop" in key or key.endswith("layerdrop")

    defaults = import_dotted(ref.config_class)().to_dict()
    zeroed = {
        key: 0.0
        for key, value in defaults.items()
        if dropped(key) and isinstance(value, float) and key not in ref.kwargs
    }
    zeroed.update({k: 0.0 for k, v in ref.kwargs.items() if dropped(k) and isinstance(v, float)})
    return ref.model_copy(update={"kwargs": {**ref.kwargs, **zeroed}})


def _zero_module_dropout(model: Any) -> None:
    """Every dropout of a built ``model`` off: each ``nn.Dropout``'s probability, and each float attribute a module
    keeps under a name holding "dropout" (``nn.MultiheadAttention.dropout``, T5Attention's), which functional
    dropout reads. A reference that is not a transformers class (torch.nn.Transformer, a plugin's own class)
    has no configuration class for `_zero_dropout` to zero."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = 0.0
        for name, value in vars(module).items():
            if "dropout" in name and type(value) is float:
                setattr(module, name, 0.0)


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
    if ref.library != "transformers" or not ref.config_class:  # no configuration class for _zero_dropout to zero
        _zero_module_dropout(model)
    if attention == "fused":
        if ref.library != "transformers":
            raise ArchzooError(f"{ref.target}: fused attention is measured for transformers classes only")
        model.set_attn_implementation("sdpa")  # type: ignore[operator]
    if recompute:
        _recompute_layers(model, recompute)
    model.train()
    args, kwargs = reference_inputs(ref.model_copy(update={"device": device}), seq_len, model)
    if ref.inputs == "seq2seq_embeddings":  # embeddings computed upstream of torch.nn.Transformer need a gradient
        args = tuple(x.requires_grad_() for x in args)

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


_registered: dict[int, tuple[PluginHost, tuple[ActivationSaves, ...]]] = {}


def _accept(plugin: str, found: list[ActivationSaves]) -> Callable[[ActivationSaves], None]:
    def register(saves: ActivationSaves) -> None:
        if not isinstance(saves, ActivationSaves):
            raise plugin_error(
                plugin,
                f"register_activation_memory registered {type(saves).__name__}, expected an "
                "archzoo.saved_tensors.ActivationSaves",
            )
        found.append(saves)

    return register


def plugin_activation_saves(host: PluginHost, name: str) -> tuple[ActivationSaves, ...]:
    """What the loaded plugin ``name`` registers with ``register_activation_memory`` (nothing when it does not
    implement the hook). A hook that raises, or registers anything but an `ActivationSaves`, is a `PluginError`
    naming the plugin."""
    plugin = host.pm.get_plugin(name)
    if plugin is None:
        return ()
    others = [p for n, p in host.pm.list_name_plugin() if n != name]
    caller = host.pm.subset_hook_caller("register_activation_memory", remove_plugins=others)
    own: list[ActivationSaves] = []
    if any(impl.plugin is plugin for impl in caller.get_hookimpls()):
        call_plugin(name, "register_activation_memory", caller, register=_accept(name, own), expected=(PluginError,))
    return tuple(own)


def registered_activation_saves(host: PluginHost | None = None) -> tuple[ActivationSaves, ...]:
    """What every loaded plugin registers with ``register_activation_memory`` (`plugin_activation_saves`), in the
    host's plugin order (the global host's unless ``host`` is given), read once per host."""
    host = host or get_host()
    cached = _registered.get(id(host))
    if cached is not None and cached[0] is host:
        return cached[1]
    found = tuple(saves for name in host.plugins for saves in plugin_activation_saves(host, name))
    _registered[id(host)] = (host, found)
    return found


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


def _family_saves(report: Report) -> tuple[ActivationSaves, ...]:
    """What the plugin of ``report``'s architecture registers, asked of that plugin alone (`PluginHost.plugin_hook`
    imports no other plugin: a lookup of one family stays a lookup of one family)."""
    host, name = get_host(), report.architecture.plugin
    hook = host.plugin_hook(name, "register_activation_memory") if name else None
    own: list[ActivationSaves] = []
    if hook is not None:
        call_plugin(name, "register_activation_memory", hook, register=_accept(name, own), expected=(PluginError,))
    return tuple(own)


def _saves_for(report: Report) -> ActivationSaves:
    """The family's `ActivationSaves` for ``report``'s reference class, or the refusal saying which it knows."""
    arch = report.architecture.name
    mine = [s for s in _family_saves(report) if s.architecture == arch]
    if not mine:
        known = registered_activation_saves()  # every family's, for the refusal's list
        raise UnsupportedActivationMemory(
            f"{arch}: archzoo knows the tensors saved for backward by the classes of "
            f"{', '.join(sorted({s.architecture for s in known}))} only; what another "
            "implementation saves (its copies, fp32 upcasts, fused kernels) is measured with "
            "archzoo.memory.measure_activations, not guessed"
        )
    ref = report.architecture.reference(report.config) if report.architecture.reference else None
    saves = next((s for s in mine if ref is not None and ref.target in s.classes), None)
    if saves is None:
        target = "no transformers class" if ref is None else ref.target
        raise UnsupportedActivationMemory(
            f"{arch}: this configuration is built by {target}; the activation formula is known for "
            f"{', '.join(c for s in mine for c in s.classes)} (other families and heads save other tensors: "
            "measure them with archzoo.memory.measure_activations)"
        )
    return saves


def _stacks(root: Block) -> list[tuple[str, Block]]:
    """The stacks of layers of ``root``, each as (its path, the block holding its ``layers``): the root itself for a
    model of one stack, else each child that holds one (an encoder-decoder's ``encoder`` and ``decoder``), in order."""
    if any(c.name == "layers" for c in root.children):
        return [(root.name, root)]
    stacks = [(f"{root.name}.{c.name}", c) for c in root.children if any(g.name == "layers" for g in c.children)]
    if not stacks:
        raise UnsupportedActivationMemory(f"{root.name}: no stack of layers (a block named layers) to read")
    return stacks


def _holder_runs(path: str, holder: Block) -> list[tuple[str, Block, Poly]]:
    """The runs of the stack of layers ``holder`` holds (at block path ``path``): one run for a stack of alike layers
    (``layers.layer``), one per run of a `archzoo.blocks.layer_runs` stack (``layers.first_layers.first_layer``,
    ...)."""
    stack = child(holder, "layers")
    if stack.kind == "layer_runs":
        runs = []
        for run in stack.children:
            assert run.repeat is not None
            (layer,) = run.children
            runs.append((f"{path}.layers.{run.name}.{layer.name}", layer, run.repeat))
        return runs
    assert stack.repeat is not None
    return [(f"{path}.layers.layer", stack.children[0], stack.repeat)]


def _stack_runs(root: Block) -> list[tuple[str, Block, Poly]]:
    """The runs of every stack of ``root`` (`_stacks`), each as (path of one copy, the layer, its copies)."""
    return [run for path, holder in _stacks(root) for run in _holder_runs(path, holder)]


def _stack_name(root: Block, layer: Block) -> str:
    """The name of the stack ``layer`` lies in, below the root (``encoder``); ``""`` when the root is the stack."""
    for path, holder in _stacks(root):
        if any(run_layer is layer for _, run_layer, _ in _holder_runs(path, holder)):
            return "" if holder is root else holder.name
    raise KeyError(layer.name)


def _typical_layer(root: Block) -> Block:
    """The layer of the longest run of every stack (the first of equal runs): the one layer the shared terms, the
    Korthikanti comparison and the gap are read for."""
    runs = _stack_runs(root)
    return max(runs, key=lambda run: run[2].evaluate())[1]


def _layer_count(root: Block) -> int:
    """The layers of ``root``'s stacks, every run's copies."""
    return sum(copies.evaluate() for _, _, copies in _stack_runs(root))


def _fused_label(saves: ActivationSaves) -> str:
    """The fused figure's label (`ActivationSaves.fused_label`)."""
    return saves.fused_label or ("SDPA" if not saves.fused_note else "no SDPA path: eager")


def _feed_forward(layer: Block) -> Block:
    """The feed-forward the shared terms read ``d_ff`` and the activation off: the layer's own; for a mixture of
    experts, one routed expert (``d_ff`` is an expert's width; the family states what its router, experts and shared
    experts save); a layer whose feed-forward linears are its own children (DeBERTa's fc_in, fc_out) stands for its
    feed-forward, and its plugin states what the activation between them saves."""
    for part in layer.children:
        if part.kind == "feed_forward":
            return part
        if part.kind == "mixture_of_experts":
            return child(part, "experts").children[0]
    return layer


def _terms(
    report: Report,
    saves: ActivationSaves,
    dtype: Dtype,
    attention: AttentionKind,
    recompute: bool,
    device: Device,
    layer: Block | None = None,
    seq_len: int | None = None,
) -> SavedTerms:
    """The shared terms of one layer of ``report``'s stack (default the layer of its longest run), read off its
    block tree."""
    root: Block = report.root
    layer = _typical_layer(root) if layer is None else layer
    attention_block = next(c for c in layer.children if c.kind == "self_attention")
    ff = _feed_forward(layer)
    names = [c.name for c in attention_block.children]
    # the query projection, or the fused one that computes it (its input width is d); keys and values at the
    # query width where no projection of their own says otherwise
    q_proj = child(attention_block, "q_proj" if "q_proj" in names else "out_proj")
    first = next((c for c in attention_block.children if c.d_in is not None), None)
    if first is None:
        raise UnsupportedActivationMemory(f"{report.architecture.name}: its attention records no input width (d_in)")
    d = first.d_in
    assert d is not None
    b = const(DTYPE_BYTES[dtype])
    return SavedTerms(
        root=root,
        layer=layer,
        attention_block=attention_block,
        ff=ff,
        config=report.config,
        dtype=dtype,
        attention=attention,
        recompute=recompute,
        device=device,
        b=b,
        stats=const(4) if device == "meta" else b,  # LayerNorm's mean and 1/σ, per token
        d=d,
        h=heads_of(root, attention_block, report.config),
        inner=over(q_proj.approx, d),
        kv=over(child(attention_block, "k_proj" if "k_proj" in names else q_proj.name).approx, d),
        d_ff=over(child(ff, "fc_in").approx, d),
        activation=ff.activation,
        activation_elements={**ACTIVATION_SAVES, **saves.activations}.get(ff.activation, 0),
        seq_len=report.seq_len if seq_len is None else seq_len,
        stack=_stack_name(root, layer),
    )


def activation_formula(
    report: Report,
    *,
    dtype: Dtype = "fp32",
    attention: AttentionKind = "eager",
    recompute: bool = False,
    device: Device = "meta",
    seq_len: int | None = None,
) -> ActivationFormula:
    """The bytes autograd saves in one training step of ``report``'s configuration (batch 1, dropout 0, its
    transformers reference in ``dtype``), as a polynomial in ``N`` per block: what `measure_activations`
    measures, exactly. ``device`` matters for LayerNorm's mean and reciprocal deviation, which the meta device
    keeps in fp32 for a 16-bit input (as CUDA does) and the CPU kernel in the input's dtype; fused attention
    (SDPA's flash kernel) is what the CPU runs, since the meta device falls back to SDPA's math path, which
    saves the probabilities. ``seq_len`` (default the report's N) is the length the formula is asked at: where what
    a family saves changes form with N (a mask SDPA is given only from some length on), the polynomial is the one
    that holds there. What a family's layers save is its plugin's (`ActivationSaves`); raises
    `UnsupportedActivationMemory` for an implementation no plugin states."""
    arch = report.architecture.name
    saves = _saves_for(report)
    activations = {**ACTIVATION_SAVES, **saves.activations}
    terms = _terms(report, saves, dtype, attention, recompute, device, seq_len=seq_len)
    if terms.ff.kind == "feed_forward" and terms.activation not in activations:
        raise UnsupportedActivationMemory(
            f"{arch}: activation {terms.activation!r}: the formula knows what {', '.join(activations)} save; "
            "relu and tanh save their output, which the next layer shares, and others save several intermediates"
        )
    if attention == "fused" and device != "cpu":
        raise UnsupportedActivationMemory(
            "fused attention is SDPA's flash kernel, which the CPU runs; on the meta device SDPA falls back to its "
            "math path, which saves the h·N² probabilities like eager attention: use device='cpu'"
        )
    root = terms.root
    outside = saves.outside(terms)
    root_own = outside.pop("", const(0))  # what the model's own forward saves, outside every block
    blocks: dict[str, Poly] = {}
    per: dict[str, Poly] = {}
    stacks = _stacks(root)
    for sp, holder in stacks:
        runs = _holder_runs(sp, holder)
        first = max(runs, key=lambda run: run[2].evaluate())[1]  # the stack's own shared terms
        stack_terms = (
            terms
            if first is terms.layer
            else _terms(report, saves, dtype, attention, recompute, device, first, seq_len)
        )
        stack_per: dict[str, Poly] = {}
        copies_of: dict[str, Poly] = {}  # path -> copies of the layer it lies in
        for lp, layer, copies in runs:
            run_terms = (
                stack_terms
                if layer is stack_terms.layer
                else _terms(report, saves, dtype, attention, recompute, device, layer, seq_len)
            )
            layer_parts = saves.layer(run_terms)
            own = layer_parts.pop("", const(0))  # what the layer's own modules save, outside every block of it
            run = {f"{lp}.{path}": poly for path, poly in layer_parts.items()}
            for part in layer.children:  # a norm the family names takes its figure (one its layer never runs)
                if part.kind in NORM_KINDS and f"{lp}.{part.name}" not in run:
                    run[f"{lp}.{part.name}"] = saves.norm(run_terms)
            if recompute:  # only each layer's input (and what the family's layers take as arguments, in `stack`)
                run = {path: const(0) for path in run}
                run[lp] = saves.layer_input(run_terms)
            else:
                run[lp] = total(run[f"{lp}.{part.name}"] for part in layer.children)
                if not own.is_zero():
                    run[lp] = run[lp] + own
            stack_per.update(run)
            copies_of.update(dict.fromkeys(run, copies))
        shared = saves.stack(stack_terms)
        if sum(copies.evaluate() for _, _, copies in runs) == 1 and not shared.is_zero():
            # one layer saves it: the layer's (its attention's) own
            lp, layer, _ = runs[0]
            attention_path = f"{lp}.{next(c for c in layer.children if c.kind == 'self_attention').name}"
            if not recompute:
                stack_per[attention_path] = stack_per[attention_path] + shared
            stack_per[lp], shared = stack_per[lp] + shared, const(0)
        if child(holder, "layers").kind == "layer_runs":  # each run's copies
            for lp, _, copies in runs:
                blocks[lp.rsplit(".", 1)[0]] = copies * stack_per[lp]
        blocks[f"{sp}.layers"] = total(copies * stack_per[lp] for lp, _, copies in runs) + shared
        for path, poly in stack_per.items():
            blocks[path] = copies_of[path] * poly
        per.update(stack_per)
        if holder is not root:  # the stack's blocks beside its layers (embeddings, norms, convolutions)
            parts: dict[str, Poly] = {}
            for part in holder.children:
                if part.name == "layers":
                    continue
                name = f"{holder.name}.{part.name}"
                if name in outside:
                    parts[f"{sp}.{part.name}"] = outside[name]
                elif part.kind in NORM_KINDS:
                    parts[f"{sp}.{part.name}"] = saves.norm(stack_terms)
                elif part.kind == "embedding":  # a table looked up: what its ids cost is the family's to name
                    parts[f"{sp}.{part.name}"] = const(0)
                else:
                    raise UnsupportedActivationMemory(
                        f"{arch}: block {sp}.{part.name} ({part.kind}) is not known to the formula"
                    )
            blocks.update(parts)
            # the family names under the stack's own name what the stack's modules save outside its blocks (the
            # token ids of an embedding it holds, but whose table lies outside it)
            blocks[sp] = blocks[f"{sp}.layers"] + total(parts.values()) + outside.get(holder.name, const(0))
    holders = {holder.name for _, holder in stacks if holder is not root}
    tops: dict[str, Poly] = {}
    for top in root.children:
        path = f"{root.name}.{top.name}"
        if top.name == "layers" or top.name in holders:
            continue
        if top.name in outside:  # the family's own figure first: a norm over other rows than N tokens
            tops[path] = outside[top.name]
        elif top.kind in NORM_KINDS:
            tops[path] = saves.norm(terms)
        elif top.children:  # a composite (the embeddings): its parts' saves
            composite_parts: dict[str, Poly] = {}
            for part in top.children:
                name = f"{top.name}.{part.name}"
                composite_parts[f"{path}.{part.name}"] = (
                    outside[name] if name in outside else saves.norm(terms) if part.kind in NORM_KINDS else const(0)
                )
            tops.update(composite_parts)
            tops[path] = total(composite_parts.values())
        else:
            raise UnsupportedActivationMemory(f"{arch}: block {path} ({top.kind}) is not known to the formula")
    blocks.update(tops)
    stack_blocks = [blocks[f"{sp}.layers"] if holder is root else blocks[sp] for sp, holder in stacks]
    blocks[root.name] = (
        total(stack_blocks) + total(poly for path, poly in tops.items() if path.count(".") == 1) + root_own
    )
    assumptions = (
        f"batch 1, dropout and LayerDrop 0, training mode, weights and activations in {dtype}",
        "each storage counted once, parameters and buffers excluded",
        {
            "eager": "eager attention: the h·N² probabilities are saved",
            "fused": saves.fused_note
            or "fused attention (SDPA's flash kernel): no h·N² tensor, a log-sum-exp per query and head",
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
    terms = _terms(report, _saves_for(report), "bf16", "eager", False, "meta")
    return 34 * N * terms.d + 5 * terms.h * N**2


def korthikanti_gap(report: Report) -> tuple[GapTerm, ...]:
    """The terms that take Korthikanti's per-layer bytes to the exact bytes of one layer of ``report``'s
    transformers class in bf16 (eager attention, dropout 0, meta device): Korthikanti's figure plus their sum is
    `activation_formula`'s ``per_copy`` bytes of the layer, exactly. The dropout terms are every family's; the
    rest its plugin's (`ActivationSaves.gap`)."""
    activation_formula(report, dtype="bf16")  # refuses what it does not know
    saves = _saves_for(report)
    terms = _terms(report, saves, "bf16", "eager", False, "meta")
    Nd = terms.Nd
    gap = [
        GapTerm(
            "dropout masks",
            -(terms.h * N**2 + 2 * Nd),
            "at p = 0 no dropout runs, so none of Korthikanti's masks (a s² b for the probabilities, s b h after the "
            "attention and after the MLP, one byte an element) is saved",
        ),
        GapTerm(
            "dropout output",
            -2 * terms.h * N**2,
            "at p = 0 the probabilities are passed on unchanged: the tensor the value product saves is softmax's "
            "output, stored once, where Korthikanti counts the dropout's output (2 a s² b) beside it",
        ),
        *(term for term in saves.gap(terms) if term is not None),
    ]
    return tuple(t for t in gap if not (t.bytes - const(0)).is_zero())


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


def _out_width(block: Block) -> int | None:
    """A linear block's output features (its FLOPs for one token over twice its input width), or None where the
    block does not record its input width."""
    if block.d_in is None:
        return None
    d_in = block.d_in.evaluate()
    return block.flops.evaluate(N=1) // (2 * d_in) if d_in else None


def inference_peak(report: Report, *, seq_len: int | None = None, dtype: str = "bf16") -> PeakMemory:
    """Weights, the KV cache of ``seq_len`` tokens and the largest activation alive at once in one eager
    forward pass of batch 1 (under ``torch.no_grad``, nothing is saved for backward). The largest live
    activation is an estimate from the block tree, stated as such: the residual stream plus the larger of the
    attention scores and probabilities of one layer (``2 h N²``, both alive around softmax), the
    feed-forward's hidden tensors of one layer (``2 N d_ff``, or 3 for a gated one), and the logits (``N V``)."""
    n = report.seq_len if seq_len is None else seq_len
    size = _check_dtype("dtype", dtype)
    params = report.params
    kv = report.kv_cache_elements_held(n)
    windowed = kv != report.kv_cache_elements_per_token * n  # some layers keep only their sliding window
    cross = report.cross_kv_cache_elements_per_source_token * n
    d, heads = attention_shape(report.root)
    if heads is None:  # a plugin that records no heads on its attention blocks: its configuration's keys
        d, heads = getattr(report.config, "d_model", None), getattr(report.config, "n_heads", None)
    if not isinstance(d, int) or not isinstance(heads, int):
        raise UnsupportedActivationMemory(
            f"{report.architecture.name}: its configuration names no d_model and n_heads, which the largest live "
            "activation is estimated from"
        )
    if report.layers_beyond_n:  # the estimate reads every feed-forward's width off FLOPs it takes to be N tokens'
        raise UnsupportedActivationMemory(
            f"{report.architecture.name}: some of its layers run over a number of tokens other than N (an image's "
            "patches, a fixed span of audio frames), and the largest live activation is estimated for layers that "
            "all run over N"
        )
    widest_ff = 0
    logits = 0
    vocab = next((s.value for s in report.root.params.used_symbols() if s.name == "V"), None)
    for visit in report.root.visits():
        block = visit.block
        # a feed-forward block, or a layer holding its fc_in and fc_out itself (DeBERTa's)
        fc_in = next((c for c in block.children if c.name == "fc_in" and c.kind == "linear"), None)
        if block.kind == "feed_forward" or fc_in is not None:
            fc_in = fc_in or child(block, "fc_in")
            width = fc_in.flops.evaluate(N=1) // (2 * d)
            gated = any(c.name == "fc_gate" for c in block.children)
            widest_ff = max(widest_ff, (3 if gated else 2) * n * width)
        if block.name == "lm_head" or (block.kind == "linear" and vocab and _out_width(block) == vocab):
            # the logits: an LM head, or a masked-LM decoder by another name (BERT's, DeBERTa's, ModernBERT's)
            logits = max(logits, n * block.flops.evaluate(N=1) // (2 * d))
    scores = 2 * heads * n * n
    largest = n * d + max(scores, widest_ff, logits)
    items = (
        MemoryItem("weights", params * size, f"{params:,} parameters in {dtype}"),
        MemoryItem(
            "KV cache",
            (kv + cross) * size,
            f"keys and values of {n:,} tokens in {dtype}"
            + (", of the last W - 1 in each sliding-window layer" if windowed else "")
            + (" (and of as many source tokens)" if cross else ""),
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
    formula = activations or activation_formula(
        report, dtype=act_dtype, attention=attention, recompute=recompute, seq_len=n
    )
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
        full = activation_formula(report, dtype=act_dtype, attention=attention, seq_len=n)
        layer = max(full.per_copy[lp].evaluate(N=n) for lp, _, _ in _stack_runs(report.root))
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
        out["korthikanti"] = {
            "bytes": _layer_count(report.root) * korthikanti_layer_bytes(report).evaluate(N=n),
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
    korthikanti = _layer_count(report.root) * korthikanti_layer_bytes(report).evaluate(N=n)
    training = training_peak(report)
    return [
        *rows,
        (f"activations (N={n:,})", human_bytes(eager.bytes_at(n)), f"bf16, eager = {eager.total.text()}"),
        (
            "  fused / recomputed",
            f"{human_bytes(fused)} / {human_bytes(recomputed)}",
            _fused_label(_saves_for(report)) + "; only each layer's input",
        ),
        ("  Korthikanti et al.", human_bytes(korthikanti), "L·(34·N·d + 5·h·N²), with dropout masks"),
        ("training peak", human_bytes(training.total), "bf16 weights and gradients, fp32 Adam and master weights"),
    ]
