"""Reference implementations: build the real torch / transformers module for a configuration and measure it.

This is how archzoo checks itself: the module is built on the meta device (no memory, no weights),
its parameters are counted with ``sum(p.numel() for p in model.parameters())`` (tied weights once),
and one forward pass of batch 1 is run under ``torch.utils.flop_counter.FlopCounterMode`` with eager
attention. Needs the ``verify`` extra (torch, transformers); nothing on the lookup path imports it.

A reference is built from its description alone (`archzoo.Reference`): a transformers class from its
configuration class, a timm model by name, and anything else, a torch module or a class a plugin
defines (``library: "archzoo"``, ``target: "archzoo_transformer.Seq2SeqTransformer"``), by calling the
dotted ``target`` with ``kwargs``. A plugin's class may need torch, so its module makes it on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal

from .architecture import Reference
from .errors import ArchzooError

if TYPE_CHECKING:
    import torch

__all__ = ["build_reference", "reference_flops", "reference_params"]


#: the largest reference built with real weights (`Reference.device` "cpu"): 4 bytes each, 400 MB
MAX_CPU_PARAMS = 100_000_000


def _import(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def build_reference(ref: Reference, device: Literal["meta", "cpu"] = "meta") -> torch.nn.Module:
    """The reference module, in eval mode: on the meta device, or on the CPU with weights drawn from a fixed
    seed (the same weights on every call), for a forward pass that reads them (`Reference.device`)."""
    import torch

    if device == "cpu":
        held = reference_params(ref)  # counted on the meta device first: real weights take real memory
        if held > MAX_CPU_PARAMS:
            raise ArchzooError(
                f"{ref.target}: measuring its FLOPs needs real weights on the CPU ({held:,} parameters, more than "
                f"the {MAX_CPU_PARAMS:,} archzoo allocates); check a smaller configuration of the same shape "
                "(fewer layers, a narrower width): the count is a polynomial in them"
            )
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(0)  # the same weights on every call, without touching the caller's random state
        if ref.library == "transformers":
            config_class = _import(ref.config_class or "")
            config = config_class(**ref.kwargs)
            config._attn_implementation = "eager"  # FLOPs of the attention products are counted
            # experts run one by one, each on the tokens routed to it (fused kernels hide them from FlopCounterMode)
            config._experts_implementation = "eager"
            model = _import(ref.target)(config, **ref.model_kwargs)
        elif ref.library == "timm":
            import timm

            model = timm.create_model(ref.target.rpartition(".")[2], **ref.kwargs)
        else:
            model = _import(ref.target)(**ref.kwargs)
    return model.eval()


def reference_params(ref: Reference) -> int:
    """``sum(p.numel() for p in model.parameters())``: what PyTorch reports, tied weights once."""
    return sum(p.numel() for p in build_reference(ref).parameters())  # always on the meta device


def _inputs(ref: Reference, seq_len: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import torch

    device = ref.device
    if ref.inputs == "token_ids":
        return (), {"input_ids": torch.zeros(1, seq_len, dtype=torch.long, device=device)}
    if ref.inputs == "encoder_decoder_token_ids":  # the same N on both sides
        ids = torch.zeros(1, seq_len, dtype=torch.long, device=device)
        return (), {"input_ids": ids, "decoder_input_ids": ids}
    if ref.inputs == "image":
        size, channels = ref.kwargs.get("image_size", 224), ref.kwargs.get("num_channels", 3)
        return (torch.zeros(1, channels, size, size, device=device),), {}
    d = ref.kwargs.get("d_model", 512)
    if ref.inputs == "seq2seq_embeddings":  # torch.nn.Transformer takes (sequence, batch, d) by default
        x = torch.zeros(seq_len, 1, d, device=device)
        return (x, x), {}
    ids = torch.zeros(seq_len, 1, dtype=torch.long, device=device)
    return (ids, ids), {}


def reference_flops(ref: Reference, seq_len: int) -> int:
    """Forward FLOPs of batch 1 at ``seq_len`` tokens, as FlopCounterMode counts them (eager attention), on
    the reference's device (`Reference.device`: the meta device, or the CPU with seeded weights)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_reference(ref, ref.device)
    args, kwargs = _inputs(ref, seq_len)
    # train() keeps torch.nn's encoder layers off their fused inference fast path, whose attention
    # FlopCounterMode cannot see; on the meta device dropout does nothing to the count (and on the CPU it
    # changes values, never which matrices are multiplied).
    model.train()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return counter.get_total_flops()
