"""Reference implementations: build the real torch / transformers module for a configuration and measure it.

This is how archzoo checks itself: the module is built on the meta device (no memory, no weights),
its parameters are counted with ``sum(p.numel() for p in model.parameters())`` (tied weights once),
and one forward pass of batch 1 is run under ``torch.utils.flop_counter.FlopCounterMode`` with eager
attention. Needs the ``verify`` extra (torch, transformers); nothing on the lookup path imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

from .architecture import Reference

__all__ = ["build_reference", "reference_params", "reference_flops", "Seq2SeqTransformer"]


def _import(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def build_reference(ref: Reference):
    """The reference module, built on the meta device, in eval mode."""
    import torch

    with torch.device("meta"):
        if ref.library == "transformers":
            config_class = _import(ref.config_class)
            config = config_class(**ref.kwargs)
            config._attn_implementation = "eager"  # FLOPs of the attention products are counted
            model = _import(ref.target)(config, **ref.model_kwargs)
        elif ref.library == "timm":
            import timm

            model = timm.create_model(ref.target.rpartition(".")[2], **ref.kwargs)
        else:
            model = _import(ref.target)(**ref.kwargs)
    return model.eval()


def reference_params(ref: Reference) -> int:
    """``sum(p.numel() for p in model.parameters())``: what PyTorch reports, tied weights once."""
    return sum(p.numel() for p in build_reference(ref).parameters())


def _inputs(ref: Reference, model, seq_len: int):
    import torch

    if ref.inputs == "token_ids":
        return (), {"input_ids": torch.zeros(1, seq_len, dtype=torch.long, device="meta")}
    if ref.inputs == "image":
        size, channels = ref.kwargs.get("image_size", 224), ref.kwargs.get("num_channels", 3)
        return (torch.zeros(1, channels, size, size, device="meta"),), {}
    d = ref.kwargs.get("d_model", 512)
    if ref.inputs == "seq2seq_embeddings":  # torch.nn.Transformer takes (sequence, batch, d) by default
        x = torch.zeros(seq_len, 1, d, device="meta")
        return (x, x), {}
    ids = torch.zeros(seq_len, 1, dtype=torch.long, device="meta")
    return (ids, ids), {}


def reference_flops(ref: Reference, seq_len: int) -> int:
    """Forward FLOPs of batch 1 at ``seq_len`` tokens, as FlopCounterMode counts them (eager attention)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_reference(ref)
    args, kwargs = _inputs(ref, model, seq_len)
    # train() keeps torch.nn's encoder layers off their fused inference fast path, whose attention
    # FlopCounterMode cannot see; on the meta device dropout does nothing to the count.
    model.train()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return counter.get_total_flops()


def _seq2seq_transformer_class():
    """torch.nn.Transformer with token embeddings in front and the pre-softmax projection behind."""
    import torch
    from torch import nn

    class Seq2SeqTransformer(nn.Module):
        """torch.nn.Transformer with token embeddings in front and the pre-softmax projection behind."""

        def __init__(self, vocab_size: int, share_embeddings: bool, tie_output: bool, **transformer_kwargs):
            super().__init__()
            d = transformer_kwargs["d_model"]
            self.transformer = nn.Transformer(**transformer_kwargs)
            self.source_embedding = nn.Embedding(vocab_size, d)
            self.target_embedding = self.source_embedding if share_embeddings else nn.Embedding(vocab_size, d)
            self.output_projection = nn.Linear(d, vocab_size, bias=False)
            if tie_output:
                self.output_projection.weight = self.target_embedding.weight

        def forward(self, src: "torch.Tensor", tgt: "torch.Tensor") -> "torch.Tensor":
            out = self.transformer(self.source_embedding(src), self.target_embedding(tgt))
            return self.output_projection(out)

    return Seq2SeqTransformer


def __getattr__(name: str):
    # The class needs torch, so it is made on first access: importing this module stays torch-free.
    if name == "Seq2SeqTransformer":
        cls = _seq2seq_transformer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
