"""transformers' classes built and measured the way every architecture's reference tests do it.

A model is built by the kit's one builder, `archzoo.testing.build_model`: from its configuration class with
eager attention (FlopCounterMode counts the attention products) and eager experts (each expert's matmuls on
the tokens routed to it; the grouped_mm kernel is an op FlopCounterMode does not count), on the meta device
unless a test needs values (routing, a cache), then on the CPU with weights from a fixed seed. Parameters are ``sum(p.numel() for p in model.parameters())``
(tied weights once); FLOPs are one forward pass of batch 1 under FlopCounterMode, with ``N`` tokens on each
side of an encoder-decoder.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest

from archzoo import testing
from archzoo.host import PluginHost, get_host


def host_with(architecture: str) -> PluginHost:
    """archzoo's host, or a skip saying how to install the plugin that registers ``architecture``."""
    host = get_host()
    if architecture not in host.architectures:
        pytest.skip(f"no installed plugin registers {architecture!r}: run `pip install -e .` in this checkout")
    return host


def build_model(T: Any, model_class: str, config: Any, device: Literal["meta", "cpu"] = "meta") -> Any:
    """transformers' ``model_class`` from ``config`` (a configuration object), in eval mode: the kit's
    `archzoo.testing.build_model`, for the modules that name transformers (``T``) first."""
    return testing.build_model(getattr(T, model_class), config, device=device)


def n_params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def unused_expert_params(model: Any, top_k: int) -> int:
    """The parameters of the routed experts one token does not use: in each layer, ``E - k`` of the ``E`` slices
    of the fused expert tensors (``mlp.experts.gate_up_proj`` and ``mlp.experts.down_proj``, experts first)."""
    return sum((p.shape[0] - top_k) * p[0].numel() for name, p in model.named_parameters() if ".mlp.experts." in name)


def forward_flops(model: Any, seq_len: int, *, random_ids: bool = False) -> int:
    """FlopCounterMode's count for one forward pass of ``seq_len`` tokens (each side of an encoder-decoder).
    ``random_ids`` draws the tokens from a seed (a mixture of experts routes by them); else all are 0."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    device = next(model.parameters()).device
    if random_ids:
        generator = torch.Generator().manual_seed(seq_len)
        ids = torch.randint(0, model.config.vocab_size, (1, seq_len), generator=generator).to(device)
    else:
        ids = torch.zeros(1, seq_len, dtype=torch.long, device=device)
    inputs = {"input_ids": ids}
    if getattr(model.config, "is_encoder_decoder", False) and not type(model).__name__.endswith("EncoderModel"):
        inputs["decoder_input_ids"] = ids
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**inputs)
    return counter.get_total_flops()


def config_json_figures(T: Any, path: Any, model_class: str, seq_len: int) -> tuple[int, int]:
    """Parameters and FlopCounterMode FLOPs of ``model_class`` built from a config.json file by AutoConfig, as
    from_pretrained reads it, with small random weights on the CPU (eager attention; one forward pass of batch 1).
    Gradients are off: FlopCounterMode's module tracker needs a gradient function on every module input that
    requires one, and some models hand a parameter itself to a submodule (DeBERTa's relative-position table)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    config = T.AutoConfig.from_pretrained(str(path))
    model = testing.build_model(getattr(T, model_class), config, device="cpu")
    model.requires_grad_(False)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=torch.ones(1, seq_len, dtype=torch.long))
    return n_params(model), counter.get_total_flops()
