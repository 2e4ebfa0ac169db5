"""The shared terms of activation memory (archzoo.saved_tensors), read off the block tree.

Every family that states its saved tensors (the register_activation_memory hook, asked of the host) records its
attention's heads and input width on the tree; they must be what the reference class is built with.
"""

from __future__ import annotations

import warnings

import pytest

import archzoo
from archzoo.formula import N, Poly
from archzoo.memory import registered_activation_saves
from archzoo.saved_tensors import attention_shape, over
from archzoo.symbols import symbol

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.reference


def _families() -> list[str]:
    return list(dict.fromkeys(saves.architecture for saves in registered_activation_saves()))


@pytest.mark.parametrize("arch", _families())
def test_the_tree_records_the_heads_and_width_the_reference_is_built_with(arch):
    from archzoo.reference import build_reference

    report = archzoo.count(arch)
    ref = report.architecture.reference(report.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_reference(ref)
    assert attention_shape(report.root) == _first_attention_shape(model)


def _first_attention_shape(model) -> tuple[int, int]:
    """The input width and heads of the reference's first self-attention, as it is built: its configuration's
    (a two-tower configuration's first tower, CLIP's text model), or, for torch.nn.Transformer, which has no
    configuration, its first nn.MultiheadAttention's."""
    import torch

    config = getattr(model, "config", None)
    if config is None:
        first = next(m for m in model.modules() if isinstance(m, torch.nn.MultiheadAttention))
        return first.embed_dim, first.num_heads
    if not hasattr(config, "hidden_size") and hasattr(config, "text_config"):
        config = config.text_config
    return config.hidden_size, config.num_attention_heads


def test_a_width_read_off_a_weight_divides_out_one_symbol():
    d, d_ff = symbol("d", 8), symbol("d_ff", 24)
    assert (over(2 * d * d_ff + 3 * d * d, d) - (2 * d_ff + 3 * d)).is_zero()
    with pytest.raises(ValueError, match="is not a multiple of d"):
        over(d * d_ff + d_ff, d)
    assert isinstance(over(N * d, d), Poly)
