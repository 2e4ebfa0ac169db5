"""Stacks of differing layers (`archzoo.blocks.layer_runs`) against a torch ``nn.ModuleList`` of the same layers.

The expected figures are what torch 2.13 reports for the reference stack built in each test on the meta device:
``sum(p.numel())`` for parameters and ``torch.utils.flop_counter.FlopCounterMode`` for one forward pass.
"""

from __future__ import annotations

import pytest

from archzoo.blocks import (
    Block,
    active_params,
    composite,
    experts,
    feed_forward,
    layer_runs,
    linear,
    repeat,
    rms_norm,
)
from archzoo.formula import const, sym

torch = pytest.importorskip("torch")

D, D_FF, D_E, E, K = 64, 96, 32, 4, 2
d = sym("d", D)


class DenseLayer(torch.nn.Module):
    """An RMSNorm and a gated feed-forward of width D_FF."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(D)
        self.gate = torch.nn.Linear(D, D_FF, bias=False)
        self.up = torch.nn.Linear(D, D_FF, bias=False)
        self.down = torch.nn.Linear(D_FF, D, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def dense_layer() -> Block:
    mlp = feed_forward("mlp", d, sym("d_ff", D_FF), activation="silu", gated=True, bias=False)
    return composite("dense_layer", "decoder_layer", [rms_norm("norm", d), mlp])


def moe_layer() -> Block:
    expert = feed_forward("expert", d, sym("d_e", D_E), activation="silu", gated=True, bias=False)
    router = linear("gate", d, sym("E", E), bias=False)
    return composite(
        "moe_layer", "decoder_layer", [rms_norm("norm", d), experts(expert, sym("E", E), sym("k", K), router=router)]
    )


def torch_stack(kinds: str) -> tuple[int, int]:
    """Parameters and forward FLOPs (N = 5) of a ModuleList of dense layers ('d') and plain linear layers
    ('l': Linear(D, D)), on the meta device."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        layers = torch.nn.ModuleList(DenseLayer() if k == "d" else torch.nn.Linear(D, D) for k in kinds)
        x = torch.zeros(1, 5, D)
    with FlopCounterMode(display=False) as counter:
        for layer in layers:
            x = layer(x)
    return sum(p.numel() for p in layers.parameters()), counter.get_total_flops()


@pytest.mark.parametrize("kinds", ["ddll", "dldld", "lllld", "d", "lddddl"])
def test_a_stack_of_runs_counts_what_the_module_list_holds_and_runs(kinds):
    plain = linear("linear_layer", d, d)
    runs: list[tuple[Block, object]] = []
    for kind in kinds:  # one run per layer, in order; layer_runs gathers the runs of one layer
        runs.append((dense_layer() if kind == "d" else plain, const(1)))
    stack = layer_runs("layers", [(layer, n) for layer, n in runs])  # type: ignore[misc]
    params, flops = torch_stack(kinds)
    assert stack.params.evaluate() == params
    assert stack.flops.evaluate(N=5) == flops
    visits = {v.path: v for v in stack.visits()}
    assert sum(v.params.evaluate() for v in visits.values() if not v.block.children) == params


def test_runs_are_gathered_per_layer_with_their_positions_and_shown_in_the_tree():
    dense, moe = dense_layer(), moe_layer()
    one = const(1)
    stack = layer_runs("layers", [(dense, one), (moe, one), (dense, one), (moe, one), (dense, one), (dense, one)])
    assert [c.name for c in stack.children] == ["dense_layers", "moe_layers"]
    assert [c.positions for c in stack.children] == [(0, 2, 4, 5), (1, 3)]
    assert [c.repeat.evaluate() for c in stack.children] == [4, 2]
    assert stack.children[0].description == "4 × dense_layer, layers 0, 2, 4-5"
    assert stack.description == "6 layers: 4 × dense_layer, 2 × moe_layer"
    visits = {v.path: v for v in stack.visits()}
    router = visits["layers.moe_layers.moe_layer.moe.gate"]
    assert router.stored.evaluate() == 2  # one router in each of the two mixture-of-experts layers
    expert_in = visits["layers.moe_layers.moe_layer.moe.experts.expert.fc_in"]
    assert (expert_in.stored.evaluate(), expert_in.executed.evaluate(), expert_in.active.evaluate()) == (
        2 * E,
        2 * K,
        2 * K,
    )


def test_active_parameters_drop_the_unused_experts_of_the_moe_runs_only():
    dense, moe = dense_layer(), moe_layer()
    stack = layer_runs("layers", [(dense, sym("a", 3)), (moe, sym("b", 2))])
    unused_per_layer = (E - K) * 3 * D * D_E  # each unused expert: gate, up, down Linear(…, bias=False)
    assert stack.params.evaluate() - active_params(stack).evaluate() == 2 * unused_per_layer
    # torch.nn.RMSNorm(64) + three Linear(64, 96, bias=False): 64 + 3*64*96 per dense layer
    assert repeat(dense, sym("a", 3)).params.evaluate() == 3 * (64 + 3 * 64 * 96)


def test_counts_name_the_copies_and_must_agree_with_the_runs():
    dense, moe = dense_layer(), moe_layer()
    one = const(1)
    l_moe = sym("L_moe", 2)
    stack = layer_runs("layers", [(dense, one), (moe, one), (dense, one), (moe, one)], counts={"moe_layer": l_moe})
    assert stack.children[1].repeat == l_moe
    with pytest.raises(ValueError, match=r"^layer_runs 'layers': counts gives 'moe_layer' 3 copies, the runs 2;"):
        layer_runs("layers", [(dense, one), (moe, one), (moe, one)], counts={"moe_layer": sym("L_moe", 3)})


def test_two_different_layers_of_one_name_and_an_empty_stack_are_refused():
    other = composite("dense_layer", "decoder_layer", [rms_norm("norm", sym("d", 8))])
    with pytest.raises(ValueError, match="two different layers are both named 'dense_layer'"):
        layer_runs("layers", [(dense_layer(), sym("a", 1)), (other, sym("b", 1))])
    with pytest.raises(ValueError, match="the stack holds no layer"):
        layer_runs("layers", [(dense_layer(), sym("a", 0))])


def test_kv_cache_and_every_phase_sum_over_the_runs():
    from archzoo.blocks import attention

    attn = attention("attn", d, d, causal=True)
    a = composite("a_layer", "decoder_layer", [attn, dense_layer().children[1]])
    b = composite("b_layer", "decoder_layer", [attn, moe_layer().children[1]])
    stack = layer_runs("layers", [(a, sym("x", 2)), (b, sym("y", 3))])
    assert stack.kv_cache.evaluate() == 5 * 2 * D  # keys and values of width D in each of 5 layers
    for phase in ("flops", "backward_flops", "prefill_flops", "decode_flops"):
        expected = 2 * getattr(a, phase).evaluate(N=7) + 3 * getattr(b, phase).evaluate(N=7)
        assert getattr(stack, phase).evaluate(N=7) == expected


#: each architecture's keys that make its stack one of differing layers (Mixtral's and Qwen3's have experts in every
#: layer by default: one repeated layer)
_DIFFERING = {
    "gemma2": {},
    "gemma3": {},
    "modernbert": {},
    "deepseek": {},
    "moe": dict(dense_layers=[0], d_ff=14336),
    "qwen3": dict(n_experts=8, top_k=2, sparse_step=2),
}


@pytest.mark.parametrize("architecture", list(_DIFFERING))
def test_a_stack_too_deep_to_list_is_refused_naming_the_key(architecture):
    """A stack of differing layers lists each layer's position, so ten million layers would take minutes and
    gigabytes before a count; the configuration is refused at once, naming n_layers."""
    import archzoo
    from archzoo.errors import ConfigError

    with pytest.raises(ConfigError, match=r"n_layers: 10,000,000 layers"):
        archzoo.count(architecture, n_layers=10_000_000, **_DIFFERING[architecture])


@pytest.mark.parametrize(
    ("architecture", "keys"), [("moe", {}), ("qwen3", {}), ("qwen3", dict(n_experts=8, top_k=2))], ids=str
)
def test_a_deep_stack_of_one_kind_of_layer_is_counted(architecture, keys):
    """Mixtral's stack, the dense Qwen3's and a Qwen3 with experts in every layer repeat one layer, as transformers
    builds any number of them: two billion layers are counted (once refused by the limit of differing stacks), the
    parameters one layer's more per layer."""
    import archzoo

    def params(layers: int) -> int:
        return archzoo.count(architecture, n_layers=layers, **keys).params

    assert params(2_000_000_000) == params(1) + (2_000_000_000 - 1) * (params(2) - params(1))
