"""The deepseek plugin's activation formulas (archzoo_deepseek.activation) against what autograd saves for backward
in transformers' DeepSeek-V2 and DeepSeek-V3 classes (archzoo.memory.measure_activations): latent attention with
and without the low-rank query, dense then MoE layers, every routing the router makes, the gap to Korthikanti et
al.'s layer.

A layer with experts is measured on the CPU with seeded weights: which experts run is read off the router's values
(the meta device cannot choose). Every expected figure is autograd's own, or a count of the tensors it saved."""

from __future__ import annotations

import random
from typing import Any

import pytest

from archzoo import memory
from archzoo.blocks import ACTIVATIONS
from archzoo.formula import const, total
from archzoo.saved_tensors import DTYPE_BYTES, SavedTerms, child, symbol_of
from archzoo.testing import assert_activation_memory_matches
from archzoo_deepseek.activation import Routing, router_saves
from family_checks import counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep, pytest.mark.filterwarnings("ignore")]

count = counter("deepseek")

#: (dtype, attention, recompute, device): a mixture of experts runs on the CPU only (its routing reads values)
MODES = [
    ("fp32", "eager", False, "cpu"),
    ("bf16", "eager", False, "cpu"),
    ("fp32", "fused", False, "cpu"),
    ("bf16", "fused", False, "cpu"),
    ("bf16", "eager", True, "cpu"),
]

#: a small DeepSeek-V3: one dense layer, then experts (4 routed, top 2, one shared)
SMALL = dict(
    vocab_size=64, d_model=16, n_layers=2, n_heads=2, q_lora_rank=8, kv_lora_rank=6, qk_nope_head_dim=4,
    qk_rope_head_dim=2, v_head_dim=6, d_ff=20, n_dense_layers=1, n_experts=4, top_k=2, d_ff_expert=10,
    n_shared_experts=1, head="lm",
)  # fmt: skip


def _random_config(seed: int) -> dict[str, Any]:
    """A small random DeepSeek: V2's or V3's classes, a low-rank or plain query, query/key and value widths that agree
    (SDPA's flash kernel) or not (its math path), 1 to 3 heads, dense then MoE layers in any split, 2 to 6 experts of
    which 1 to all run, 0 to 2 shared experts, each activation, biases, every head class its classes have."""
    rng = random.Random(seed)
    family = rng.choice(["deepseek_v2", "deepseek_v3"])
    heads = rng.choice([1, 2, 3])
    nope, rope = rng.choice([2, 4]), rng.choice([2, 4])
    experts = rng.choice([2, 3, 6])
    layers = rng.choice([1, 2, 3])
    heads_of_family = ["lm", "none", "sequence_classification"] + (["token_classification"] * (family != "deepseek_v2"))
    return dict(
        family=family, vocab_size=rng.choice([64, 97]), d_model=heads * rng.choice([4, 6]), n_layers=layers,
        n_heads=heads, q_lora_rank=rng.choice([None, 6, 8]), kv_lora_rank=rng.choice([4, 6]),
        qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=rng.choice([nope + rope, 5, 8]),
        d_ff=rng.choice([12, 20]), n_dense_layers=rng.randint(0, layers), n_experts=experts,
        top_k=rng.randint(1, experts), d_ff_expert=rng.choice([4, 10]), n_shared_experts=rng.choice([0, 1, 2]),
        activation=rng.choice(["silu", "gelu", "relu", "gelu_new", "quick_gelu"]),
        attention_bias=rng.random() < 0.5, mlp_bias=family == "deepseek_v2" and rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.3, head=rng.choice(heads_of_family),
    )  # fmt: skip


def _check(config: dict[str, Any], n: int, mode: tuple[str, str, bool, str]) -> None:
    dtype, attention, recompute, device = mode
    stack = (("layers",) if config["head"] == "none" else ("model.layers",)) if recompute else ()
    assert_activation_memory_matches(
        "deepseek",
        config,
        n,
        dtype=dtype,
        attention=attention,
        recompute=stack,
        device=device,
    )


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: "-".join(map(str, mode)))
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_random_configurations_against_autograd(seed, mode):
    """In total and block by block, at a length that changes with the case (one token, and longer)."""
    _check(_random_config(seed), 1 + 3 * (seed - 1), mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: "-".join(map(str, mode)))
@pytest.mark.parametrize(
    "options",
    [
        {},
        dict(family="deepseek_v2"),
        # a plain query projection (DeepSeek-V2-Lite's), no shared experts: transformers' 0-wide one still runs
        dict(q_lora_rank=None, n_shared_experts=0, head="none"),
        # query/key and value widths that differ (every released DeepSeek's): SDPA's math path
        dict(v_head_dim=8, family="deepseek_v2", mlp_bias=True),
        # one head: SDPA's output needs no copy for the output projection
        dict(n_heads=1, d_model=8, head="token_classification"),
        # every expert runs for every token, every layer has experts, V3's classes cannot build it (one expert): V2's
        dict(n_experts=1, top_k=1, n_dense_layers=0, head="sequence_classification"),
        # one layer: the rotary table the stack shares is that layer's
        dict(n_layers=1, n_dense_layers=0, activation="relu", tie_embeddings=True),
    ],
    ids=["v3", "v2", "plain-query", "v2-widths-differ", "one-head", "one-expert", "one-layer"],
)
@pytest.mark.parametrize("n", [1, 2, 9])
def test_each_option_that_changes_the_saves(options, n, mode):
    _check({**SMALL, **options}, n, mode)


def random_token_ids(model: Any, seq_len: int, device: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Token ids drawn from a fixed seed (`archzoo.Reference.inputs`): tokens that differ reach different experts,
    where the reference's all-zero ids send every token to the same ones."""
    import torch

    generator = torch.Generator().manual_seed(seq_len)
    ids = torch.randint(0, model.config.vocab_size, (1, seq_len), generator=generator)
    return (), {"input_ids": ids.to(device)}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    ("options", "n"),
    [
        (dict(family="deepseek_v3"), 13),
        (dict(family="deepseek_v3"), 32),
        (dict(family="deepseek_v2"), 21),
        # DeepSeek-V3's expert layout (arXiv:2412.19437, Sec. 4.2): three dense layers, then 256 routed experts of
        # which each token runs 8, and one shared expert; at small widths, so that its weights fit on the CPU
        (dict(family="deepseek_v3", n_layers=5, n_dense_layers=3, n_experts=256, top_k=8, d_ff_expert=4), 48),
    ],
    ids=["v3-13", "v3-32", "v2-21", "v3-experts-of-the-defaults"],
)
def test_exact_whatever_the_router_picks(options, n, dtype):
    """Tokens spread unevenly over the experts (some get none, some many: the saved per-expert tensors have different
    lengths), and the formula, which sums over the experts to N k token-expert pairs, is still what autograd saves."""
    config = {**SMALL, "n_experts": 6, "top_k": 2, "n_layers": 3, **options}
    report = count(n, **config)
    reference = report.architecture.reference(report.config).model_copy(
        update={"inputs": f"{__name__}.random_token_ids", "device": "cpu"}
    )
    measured = memory.measure_activations(reference, n, dtype=dtype, device="cpu")
    formula = memory.activation_formula(report, dtype=dtype, device="cpu")
    assert formula.bytes_at(n) == measured.total_bytes
    # the gathered inputs of each expert that ran (one n_e x d tensor each, in the dtype): their lengths differ, and
    # they add up to N k tokens in each MoE layer
    for layer in range(config["n_dense_layers"], config["n_layers"]):
        owner = f"model.layers.{layer}.mlp.experts"
        gathered = [
            s.shape[0]
            for s in measured.saved
            if s.module == owner and s.dtype != "int64" and len(s.shape) == 2 and s.shape[1] == config["d_model"]
        ]
        # three d-wide tensors an expert: its gathered input, its down projection's output, its weighted output
        assert sum(gathered) == 3 * n * config["top_k"]
        assert len(set(gathered)) > 1


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "config",
    [
        # DeepSeek-V3's widths (arXiv:2412.19437 and its config.json): its three dense layers
        dict(n_layers=3, vocab_size=1024),
        # DeepSeek-V2-Lite's plain query projection, at V2's classes
        dict(n_layers=2, vocab_size=1024, q_lora_rank=None, family="deepseek_v2"),
    ],
    ids=["v3-dense-layers", "v2-lite-query"],
)
def test_the_defaults_shrunk_to_their_dense_layers(config, dtype):
    """The defaults' latent attention (128 heads, r_q 1,536, r_kv 512, 128 + 64 query/key channels, 128 value
    channels) and dense feed-forward (18,432 wide), on the meta device at N = 16; their MoE layers need real weights to
    route, 11 billion parameters a layer, more than archzoo allocates on the CPU (the sweeps above check them small)."""
    assert_activation_memory_matches("deepseek", {**config, "n_dense_layers": 3}, 16, dtype=dtype)


@pytest.mark.parametrize(
    ("options", "run"),
    [
        (dict(n_layers=3), "moe_layers.moe_layer"),
        (dict(family="deepseek_v2", n_dense_layers=0), "moe_layers.moe_layer"),
        (dict(n_dense_layers=2, q_lora_rank=None), "dense_layers.dense_layer"),
    ],
    ids=["v3-moe", "v2-moe", "dense"],
)
def test_korthikanti_plus_the_named_gap_is_the_exact_layer(options, run):
    """Korthikanti et al. 2022 (arXiv:2205.05198), eq. 1, plus the named terms is the exact bf16 layer of the longest
    run (the MoE layers, or the dense ones); the norms' term checked against the paper's accounting."""
    report = count(11, **{**SMALL, **options})
    layer = memory.activation_formula(report, dtype="bf16").per_copy[f"deepseek.layers.{run}"]
    gap = {t.name: t.bytes for t in memory.korthikanti_gap(report)}
    assert (memory.korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    n, d = 11, SMALL["d_model"]
    # two RMSNorms, each an fp32 copy of its input, 1/rms in fp32 and the 2-byte normalised tensor, where the paper
    # counts a LayerNorm's 2-byte input
    assert gap["RMSNorm in fp32"].evaluate(N=n) == 2 * (4 * n * d + 4 * n + 2 * n * d) - 2 * 2 * n * d


def test_count_json_reports_the_activations():
    """`archzoo count deepseek --json`'s memory.step.activations (memory_dict) holds, for the defaults, every
    variant's bytes where it said 'unsupported' before; for a small configuration the eager ones are what autograd
    saves."""
    variants = memory.memory_dict(count())["activations"]
    assert set(variants) == {f"{v}_{d}" for v in ("eager", "fused", "recompute") for d in ("bf16", "fp32")}
    report = count(9, **SMALL)
    variants = memory.memory_dict(report)["activations"]
    reference = report.architecture.reference(report.config)
    for dtype in ("bf16", "fp32"):
        measured = memory.measure_activations(reference, 9, dtype=dtype, device="cpu")
        assert variants[f"eager_{dtype}"]["bytes"] == measured.total_bytes


def _router_terms(report: Any, dtype: str) -> SavedTerms:
    """The shared terms `router_saves` reads (the tree's symbols, the configuration, the dtype and its element size,
    the width d) for ``report``'s MoE layer; the attention and feed-forward terms, which it does not read, are d."""
    moe = child(child(child(report.root, "layers"), "moe_layers"), "moe_layer")
    d = symbol_of(report.root, "d", report.config.d_model)
    b = const(DTYPE_BYTES[dtype])
    return SavedTerms(
        root=report.root, layer=moe, attention_block=child(moe, "attention"), ff=moe, config=report.config,
        dtype=dtype, attention="eager", recompute=False, device="cpu", b=b, stats=b, d=d, h=d, inner=d, kv=d, d_ff=d,
        activation="silu",
    )  # fmt: skip


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(
    ("family", "routing"),
    [
        ("deepseek_v3", Routing()),
        # DeepSeek-V3's released routing is 8 groups of 32 experts, 4 kept (its config.json)
        ("deepseek_v3", Routing(n_group=2, topk_group=1)),
        ("deepseek_v3", Routing(n_group=3, topk_group=2, norm_topk_prob=False)),
        ("deepseek_v2", Routing()),
        # DeepSeek-V2's: group_limited_greedy over 8 groups, 3 kept (its config.json)
        ("deepseek_v2", Routing(topk_method="group_limited_greedy", n_group=3, topk_group=2)),
    ],
    ids=["v3-one-group", "v3-two-groups", "v3-three-groups-not-renormalised", "v2-greedy", "v2-group-limited"],
)
def test_the_router_saves_for_each_routing(family, routing, dtype):
    """Group-limited routing saves the int64 indices of each group's best (V3: its two best experts; V2: its best) and
    of the kept groups, and the bool mask of the experts left out; V3's norm_topk_prob its denominator and quotient.
    archzoo's configurations do not carry these keys (the reference is built with one group, V3's norm_topk_prob and
    V2's greedy routing); against autograd's saves in the router's module, with each routing set on the reference."""
    n = 7
    report = count(n, **{**SMALL, "family": family, "n_experts": 6})
    reference = report.architecture.reference(report.config)
    keys = ("topk_method", "n_group", "topk_group") if family == "deepseek_v2" else ("n_group", "topk_group")
    keys += ("norm_topk_prob",) * (family == "deepseek_v3")
    kwargs = {**reference.kwargs, **{key: getattr(routing, key) for key in keys}}
    measured = memory.measure_activations(reference.model_copy(update={"kwargs": kwargs}), n, dtype=dtype, device="cpu")
    expected = router_saves(_router_terms(report, dtype), family == "deepseek_v2", routing)
    assert measured.by_module()["model.layers.1.mlp.gate"] == expected.evaluate(N=n)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_every_activation_the_configurations_accept(activation):
    """What each activation keeps (its input, its output, its Python intermediates) in the dense feed-forward, the
    routed experts (which read a view of one gate/up tensor) and the shared experts, against autograd in bf16."""
    config = {**SMALL, "activation": activation, "n_layers": 3}
    _check(config, 6, ("bf16", "eager", False, "cpu"))


@pytest.mark.parametrize(
    "options",
    [
        dict(family="deepseek_v3", n_group=2, topk_group=1, norm_topk_prob=False),
        dict(family="deepseek_v3", n_group=3, topk_group=2),
        dict(family="deepseek_v2", topk_method="group_limited_greedy", n_group=3, topk_group=1),
    ],
    ids=["v3-2-groups-keep-1-no-renorm", "v3-3-groups-keep-2", "v2-group-limited"],
)
def test_the_configuration_s_routing_is_what_the_reference_runs(options):
    """The routing keys a configuration carries (DeepSeek-V3's file: n_group 8, topk_group 4, norm_topk_prob true;
    V2's: group_limited_greedy, 8, 3) reach the reference and the formula alike: what the router saves follows them,
    exact against autograd. Before, the configuration did not carry them and the reference always ran one group."""
    config = {**SMALL, "n_experts": 6, "top_k": 2, "n_layers": 3, **options}
    report = count(7, **config)
    reference = report.architecture.reference(report.config)
    for key in ("n_group", "topk_group", "norm_topk_prob", "topk_method"):
        if key in options:
            assert reference.kwargs[key] == options[key], key
    reference = reference.model_copy(update={"inputs": f"{__name__}.random_token_ids", "device": "cpu"})
    measured = memory.measure_activations(reference, 7, dtype="fp32", device="cpu")
    assert memory.activation_formula(report, device="cpu").bytes_at(7) == measured.total_bytes
    one_group = count(7, **{**config, "n_group": 1, "topk_group": 1, "topk_method": "greedy"})
    assert memory.activation_formula(one_group, device="cpu").bytes_at(7) != measured.total_bytes


def test_a_published_file_s_routing_is_read(host):
    """deepseek-ai/DeepSeek-V3's config.json (tests/data/hf_published): n_group 8, topk_group 4, norm_topk_prob true,
    as its file states them, reach the configuration, and so the activation formula."""
    from pathlib import Path

    from archzoo.hf_config import load_hf_config

    path = Path(__file__).parent / "data" / "hf_published" / "deepseek-ai--DeepSeek-V3.json"
    config = load_hf_config(path, host).config
    assert (config.n_group, config.topk_group, config.norm_topk_prob) == (8, 4, True)
