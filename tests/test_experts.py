"""Mixture-of-experts blocks: stored and executed copies, total and active parameters, top-k FLOPs.

Two kinds of check. The tiny tree's figures are derived by hand beside each assertion (a gated
feed-forward without biases holds ``3 d d_ff`` parameters and costs ``2 N 3 d d_ff`` FLOPs; a router
``Linear(d, E, bias=False)`` holds ``d E`` and costs ``2 N d E``). The ``reference`` tests build a
Mixtral-shaped tree from archzoo's blocks, here in the test, and compare it with transformers'
``MixtralForCausalLM``: parameters on the meta device for Mixtral 8x7B's published configuration, and
FLOPs with ``torch.utils.flop_counter.FlopCounterMode`` on small random models on CPU (eager attention,
eager experts), where the count is deterministic because each token goes to exactly ``top_k`` experts.
"""

from __future__ import annotations

import pytest
from pydantic import PositiveInt

from archzoo import ArchConfig, Architecture, make_report
from archzoo.blocks import (
    Block,
    active_params,
    attention,
    composite,
    embedding,
    experts,
    feed_forward,
    linear,
    repeat,
    rms_norm,
)
from archzoo.formula import sym
from archzoo.testing import build_model

#: transformers 5.23 MixtralForCausalLM(MixtralConfig()) on the meta device (Mixtral 8x7B: vocabulary
#: 32,000, width 4,096, 32 layers, 32 query and 8 key/value heads, 8 experts of width 14,336, top 2)
MIXTRAL_8X7B_PARAMS = 46_702_792_704


# ---- a tiny tree, by hand ------------------------------------------------------------------------------


def tiny_moe(n_layers: int = 2, *, shared_expert: bool = False) -> Block:
    """An embedding, ``n_layers`` layers of one mixture of 4 experts (top 2) of width 32 on d = 16."""
    d, d_ff, E, k, L = sym("d", 16), sym("d_ff", 32), sym("E", 4), sym("k", 2), sym("L", n_layers)
    expert = feed_forward("expert", d, d_ff, activation="silu", gated=True, bias=False)
    shared = (
        feed_forward("shared_expert", d, d_ff, activation="silu", gated=True, bias=False) if shared_expert else None
    )
    moe = experts(expert, E, k, router=linear("gate", d, E, bias=False), shared_experts=shared)
    layer = composite("layer", "decoder_layer", [rms_norm("norm", d), moe])
    return composite(
        "model", "model", [embedding("token", sym("V", 10), d, role="token"), repeat(layer, L, name="layers")]
    )


def visits(root: Block) -> dict[str, object]:
    return {v.path: v for v in root.visits()}


def test_experts_are_stored_e_times_and_run_k_times_per_token():
    walked = visits(tiny_moe())
    expert = walked["model.layers.layer.moe.experts.expert"]
    assert expert.stored.evaluate() == 2 * 4  # 2 layers x 4 experts
    assert expert.executed.evaluate() == 2 * 2  # 2 layers x top 2
    assert expert.active.evaluate() == 2 * 2
    assert expert.params_each.evaluate() == 3 * 16 * 32  # gate, up and down projections, no biases: 1,536
    assert expert.params.evaluate() == 8 * 1_536
    assert expert.flops.evaluate(N=5) == 4 * 2 * 5 * 3 * 16 * 32  # N k = 5 x 2 evaluations per layer
    gate = walked["model.layers.layer.moe.gate"]
    assert (gate.stored.evaluate(), gate.executed.evaluate()) == (2, 2)
    assert gate.flops.evaluate(N=5) == 2 * (2 * 5 * 16 * 4)  # 2 N d E in each layer
    assert walked["model.layers.layer.moe"].kind == "mixture_of_experts"
    assert walked["model.layers.layer.moe.experts"].kind == "experts"


def test_total_and_active_parameters_of_the_tiny_tree():
    root = tiny_moe()
    # embedding 10 x 16; per layer: norm 16, router 16 x 4, 4 experts of 1,536
    per_layer = 16 + 64 + 4 * 1_536
    assert root.params.evaluate() == 160 + 2 * per_layer == 12_608
    # one token uses the router and 2 of the 4 experts in each layer: the total less 2 experts a layer
    assert active_params(root).evaluate() == 12_608 - 2 * 2 * 1_536 == 6_464
    assert active_params(root).text() == "3·L·d·d_ff·k + E·L·d + L·d + V·d"
    assert root.flops.evaluate(N=7) == 2 * (2 * 7 * 16 * 4 + 2 * 2 * 7 * 3 * 16 * 32)


def test_shared_experts_run_for_every_token():
    root = tiny_moe(1, shared_expert=True)
    walked = visits(root)
    shared = walked["model.layers.layer.moe.shared_expert"]
    assert (shared.stored.evaluate(), shared.executed.evaluate()) == (1, 1)
    # 160 embedding, 16 norm, 64 router, 4 experts and 1 shared expert of 1,536 each
    assert root.params.evaluate() == 160 + 16 + 64 + 5 * 1_536
    assert active_params(root).evaluate() == 160 + 16 + 64 + 3 * 1_536  # 2 routed experts and the shared one
    assert root.flops.evaluate(N=3) == 2 * 3 * 16 * 4 + 3 * 2 * 3 * 3 * 16 * 32


def test_dense_trees_are_all_active():
    d, L = sym("d", 8), sym("L", 3)
    layer = composite("layer", "layer", [attention("attention", d, d), feed_forward("ff", d, sym("d_ff", 32))])
    for shared in (False, True):
        root = composite("model", "model", [repeat(layer, L, name="layers", shared=shared)])
        assert active_params(root) == root.params


def test_top_k_must_fit_the_experts():
    d = sym("d", 8)
    expert = feed_forward("expert", d, d)
    with pytest.raises(ValueError, match=r"^experts 'moe': top_k 3 must be between 1 and n_experts \(2\)$"):
        experts(expert, sym("E", 2), sym("k", 3), router=linear("gate", d, sym("E", 2), bias=False))


# ---- the report -----------------------------------------------------------------------------------------


class TinyConfig(ArchConfig):
    n_layers: PositiveInt = 2


TINY = Architecture(
    name="tiny-moe",
    title="tiny MoE",
    summary="test",
    citation="test",
    config_model=TinyConfig,
    build=lambda cfg: tiny_moe(cfg.n_layers),
    seq_len=lambda cfg: 7,
)


def test_report_json_gives_stored_executed_each_and_active():
    report = make_report(TINY, TinyConfig())
    data = report.to_dict()
    assert data["params"]["total"] == 12_608 and data["params"]["active"] == 6_464  # figures derived above
    assert data["params"]["active_formula"]["text"] == "3·L·d·d_ff·k + E·L·d + L·d + V·d"
    moe = data["blocks"]["children"][1]["children"][0]["children"][1]
    pool = moe["children"][1]
    assert (pool["name"], pool["repeat"], pool["copies"], pool["shared"]) == ("experts", 2, 4, False)
    expert = pool["children"][0]
    assert (expert["stored"], expert["executed"]) == (8, 4)
    assert (expert["params_each"], expert["params"]) == (1_536, 8 * 1_536)
    assert expert["flops"] == 4 * 2 * 7 * 3 * 16 * 32
    assert expert["formula"]["text"] == "3·E·L·d·d_ff" and expert["formula_each"]["text"] == "3·d·d_ff"


def test_terminal_shows_active_parameters_and_the_experts_copies():
    from rich.console import Console

    from archzoo.terminal import print_report

    console = Console(record=True, width=200)
    print_report(make_report(TINY, TinyConfig()), max_depth=6, out=console)
    text = console.export_text()
    assert "active parameters" in text and "6,464" in text
    assert "expert (4 of 8 per token)" in text  # 2 layers: 4 of the 8 stored experts run for each token
    assert "layer (× 2)" in text


# ---- against transformers' MixtralForCausalLM ---------------------------------------------------------------


def mixtral_tree(
    *, vocab: int, d: int, n_layers: int, n_heads: int, n_kv_heads: int, d_ff: int, n_experts: int, top_k: int
) -> Block:
    """MixtralForCausalLM as archzoo blocks: RMSNorms, grouped-query attention without biases, a mixture
    of SwiGLU experts with a bias-free router, and an untied LM head."""
    D, F, V, L = sym("d", d), sym("d_ff", d_ff), sym("V", vocab), sym("L", n_layers)
    E, k, d_h = sym("E", n_experts), sym("k", top_k), sym("d_h", d // n_heads)
    h, h_kv = sym("h", n_heads), sym("h_kv", n_kv_heads)
    expert = feed_forward("expert", D, F, activation="silu", gated=True, bias=False)
    layer = composite(
        "layer",
        "decoder_layer",
        [
            rms_norm("input_layernorm", D),
            attention("self_attn", D, h * d_h, kv_inner=h_kv * d_h, bias=False, causal=True),
            rms_norm("post_attention_layernorm", D),
            experts(expert, E, k, router=linear("gate", D, E, bias=False), name="mlp"),
        ],
    )
    return composite(
        "mixtral",
        "model",
        [
            embedding("embed_tokens", V, D, role="token"),
            repeat(layer, L, name="layers"),
            rms_norm("norm", D),
            linear("lm_head", D, V, bias=False),
        ],
    )


MIXTRAL_8X7B = dict(vocab=32_000, d=4_096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14_336, n_experts=8, top_k=2)


def test_mixtral_8x7b_total_and_active():
    root = mixtral_tree(**MIXTRAL_8X7B)
    assert root.params.evaluate() == MIXTRAL_8X7B_PARAMS
    # one token skips 6 of the 8 experts (3 x 4,096 x 14,336 each) in each of the 32 layers; Jiang et al.
    # 2024 (arXiv:2401.04088), Section 2: "each token has access to 47B parameters, but only uses 13B active"
    assert active_params(root).evaluate() == MIXTRAL_8X7B_PARAMS - 32 * 6 * 3 * 4_096 * 14_336 == 12_879_925_248


def _mixtral(torch, **shape):
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(
        vocab_size=shape["vocab"],
        hidden_size=shape["d"],
        num_hidden_layers=shape["n_layers"],
        num_attention_heads=shape["n_heads"],
        num_key_value_heads=shape["n_kv_heads"],
        intermediate_size=shape["d_ff"],
        num_local_experts=shape["n_experts"],
        num_experts_per_tok=shape["top_k"],
        max_position_embeddings=256,
    )
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"  # the per-expert loop: each token through exactly top_k experts
    return config, MixtralForCausalLM


def _expert_params(model) -> int:
    """The parameters of all experts in the reference: the fused gate/up and down tensors of every layer."""
    return sum(p.numel() for name, p in model.named_parameters() if ".mlp.experts." in name)


@pytest.mark.reference
def test_mixtral_8x7b_against_transformers_on_meta():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    config, cls = _mixtral(torch, **MIXTRAL_8X7B)
    model = build_model(cls, config)
    total = sum(p.numel() for p in model.parameters())
    assert total == MIXTRAL_8X7B_PARAMS
    root = mixtral_tree(**MIXTRAL_8X7B)
    assert root.params.evaluate() == total
    # active: the total less the share of the experts one token does not use (6 of 8 in every layer)
    assert active_params(root).evaluate() == total - _expert_params(model) * 6 // 8


SMALL_MIXTRALS = [
    dict(vocab=64, d=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, n_experts=4, top_k=2),
    dict(vocab=50, d=24, n_layers=3, n_heads=3, n_kv_heads=1, d_ff=40, n_experts=8, top_k=1),
    dict(vocab=33, d=16, n_layers=1, n_heads=2, n_kv_heads=2, d_ff=20, n_experts=3, top_k=3),
]


@pytest.mark.reference
@pytest.mark.parametrize("shape", SMALL_MIXTRALS, ids=lambda s: f"E{s['n_experts']}k{s['top_k']}L{s['n_layers']}")
@pytest.mark.parametrize("n", [1, 9])
def test_small_mixtral_params_flops_and_kv_cache_against_transformers(shape, n):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from torch.utils.flop_counter import FlopCounterMode

    config, cls = _mixtral(torch, **shape)
    torch.manual_seed(n)
    model = cls(config).eval()
    ids = torch.randint(0, shape["vocab"], (1, n))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(ids, use_cache=True)
    root = mixtral_tree(**shape)
    assert root.params.evaluate() == sum(p.numel() for p in model.parameters())
    assert root.flops.evaluate(N=n) == counter.get_total_flops()
    unused = shape["n_experts"] - shape["top_k"]
    assert active_params(root).evaluate() == (
        sum(p.numel() for p in model.parameters()) - _expert_params(model) * unused // shape["n_experts"]
    )
    cached = sum(layer.keys.numel() + layer.values.numel() for layer in out.past_key_values.layers)
    assert root.kv_cache.evaluate() * n == cached


@pytest.mark.reference
def test_verify_compares_fused_experts_with_all_their_copies():
    """`archzoo verify`'s block check: the expert maps to transformers' fused MixtralExperts module, which
    holds all E copies; the layers' other blocks are compared copy by copy."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from archzoo.block_match import compare_blocks
    from archzoo.blocks import with_modules

    shape = SMALL_MIXTRALS[1]
    config, cls = _mixtral(torch, **shape)
    model = build_model(cls, config)
    layer = "mixtral.layers.layer"
    root = with_modules(
        mixtral_tree(**shape),
        {
            "mixtral": ("",),
            "mixtral.embed_tokens": ("model.embed_tokens",),
            "mixtral.layers": ("model.layers",),
            layer: ("model.layers",),
            f"{layer}.self_attn": ("self_attn",),
            f"{layer}.mlp": ("mlp",),
            f"{layer}.mlp.gate": ("mlp.gate",),
            f"{layer}.mlp.experts": ("mlp.experts",),
            f"{layer}.mlp.experts.expert": ("mlp.experts",),
            "mixtral.lm_head": ("lm_head",),
        },
    )
    comparison = compare_blocks(root, model, "test")
    rows, unmapped = comparison.blocks, comparison.unmapped
    checked = {row.path: row for row in rows}
    assert all(row.ok for row in rows), [(r.path, r.expected, r.got) for r in rows if not r.ok]
    expert = checked[f"{layer}.mlp.experts.expert"]
    assert expert.copies == 3 and expert.got == 8 * 3 * 24 * 40  # 3 layers' fused modules, each of 8 experts
    assert expert.modules == ("model.layers.<i>.mlp.experts",)
    assert (f"{layer}.mlp.experts.expert.fc_in", f"{layer}.mlp.experts.expert") in unmapped
