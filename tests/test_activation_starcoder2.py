"""The starcoder2 plugin's activation formula (archzoo_starcoder2.activation) against what autograd saves for backward
in transformers' StarCoder2 classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s
layer."""

from __future__ import annotations

import random

import pytest

from family_checks import activation_cases, assert_activation_case, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]


def _config(seed: int) -> dict:
    """A small random StarCoder2: grouped, multi-query or multi-head keys and values, biases or none, a head width of
    d / h or its own, and an activation transformers builds."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]), d_head=rng.choice([None, 4, 12]), d_ff=rng.choice([24, 40]),
        bias=rng.random() < 0.5, activation=rng.choice(["gelu_pytorch_tanh", "gelu", "gelu_new", "relu", "quick_gelu"]),
        head=rng.choice(["lm", "none"]),
    )  # fmt: skip


@pytest.mark.parametrize("case", activation_cases())
def test_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    assert_activation_case("starcoder2", _config(case[0]), case)


@pytest.mark.parametrize(
    "options",
    [
        dict(n_kv_heads=2, activation="gelu_pytorch_tanh"),
        dict(n_kv_heads=1, activation="gelu_new"),
        dict(n_kv_heads=4, d_head=12, activation="relu", bias=False),
        dict(n_kv_heads=2, activation="silu"),
        dict(n_kv_heads=2, activation="tanh"),
        dict(n_kv_heads=2, activation="quick_gelu"),
    ],
)
def test_each_option_that_changes_the_saves(options):
    """Grouped and multi-query keys (one key/value head is broadcast, not copied), a head width of its own, each
    activation's saves (gelu_new's Python intermediates, relu's output shared with c_proj): against autograd, at two
    lengths."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=24, head="lm", **options)
    for n in (3, 10):
        assert_activation_memory_matches("starcoder2", config, n, dtype="bf16")


@pytest.mark.parametrize("options", [dict(n_kv_heads=2), dict(n_kv_heads=1, d_head=12, activation="gelu_new")])
def test_korthikanti_plus_the_named_gap_is_the_exact_starcoder2_layer(options):
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = counter("starcoder2")(11, d_model=32, n_heads=4, n_layers=2, d_ff=40, **options)
    layer = activation_formula(report, dtype="bf16").per_copy["starcoder2.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # gelu_new (NewGELUActivation, written out in Python) saves 4 tensors of d_ff = 40, Korthikanti's GeLU 1
    if options.get("activation") == "gelu_new":
        assert gap["activation saves"].evaluate(N=11) == 3 * 2 * 11 * 40
    else:
        assert "activation saves" not in gap


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_fused_attention_with_each_key_value_grouping(kv_heads):
    """SDPA on the CPU with one, two (grouped) or four key/value heads of four: what its kernel holds (the keys and
    values at their own width) and the output projection's input, against autograd."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=kv_heads, d_ff=24, activation="gelu_new")
    assert_activation_memory_matches("starcoder2", config, 6, dtype="bf16", attention="fused", device="cpu")
