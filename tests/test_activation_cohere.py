"""The cohere plugin's activation formula (archzoo_cohere.activation) against what autograd saves for backward in
transformers' Cohere classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from family_checks import activation_cases, assert_activation_case, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]


def _config(seed: int) -> dict:
    """A small random Cohere model: grouped, multi-query or multi-head keys and values, per-head QK LayerNorms or
    none, biases or none, a head width of d / h or its own."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]), d_head=rng.choice([None, 4, 12]), d_ff=rng.choice([24, 40]),
        qk_norm=rng.random() < 0.6, attention_bias=rng.random() < 0.5, head=rng.choice(["lm", "none"]),
    )  # fmt: skip


@pytest.mark.parametrize("case", activation_cases())
def test_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    assert_activation_case("cohere", _config(case[0]), case)


@pytest.mark.parametrize(
    "options",
    [
        dict(qk_norm=True, n_kv_heads=2),
        dict(qk_norm=False, n_kv_heads=4, d_head=12),
        dict(qk_norm=True, n_kv_heads=1),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, dtype):
    """QK LayerNorms (fp32 Python ops, with the weight's fp32 copy in a 16-bit model), grouped and multi-query keys
    (one key/value head is broadcast, not copied), a head width of its own: each against autograd, at two lengths."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=24, head="lm", **options)
    for n in (3, 10):
        assert_activation_memory_matches("cohere", config, n, dtype=dtype)


@pytest.mark.parametrize("options", [dict(qk_norm=False, n_kv_heads=2), dict(qk_norm=True, n_kv_heads=1, d_head=12)])
def test_korthikanti_plus_the_named_gap_is_the_exact_cohere_layer(options):
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = counter("cohere")(11, d_model=32, n_heads=4, n_layers=2, d_ff=40, **options)
    layer = activation_formula(report, dtype="bf16").per_copy["cohere.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # one LayerNorm for both branches: Korthikanti's second LayerNorm input and MLP input (2 bytes each) not saved
    assert gap["one LayerNorm, its output shared"].evaluate(N=11) == -2 * 2 * 11 * 32
    # CohereLayerNorm: three 4-byte copies of the 32-wide input, 4 bytes of 1/σ a token, the weight's 4-byte copy,
    # against Korthikanti's 2-byte input
    assert gap["CohereLayerNorm in fp32"].evaluate(N=11) == 3 * 4 * 11 * 32 + 4 * 11 + 4 * 32 - 2 * 11 * 32


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_fused_attention_with_each_key_value_grouping(kv_heads):
    """SDPA on the CPU with one, two (grouped) or four key/value heads of four: what its kernel holds (the keys and
    values at their own width) and the output projection's input, against autograd."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=kv_heads, d_ff=24, qk_norm=True, d_head=12
    )
    assert_activation_memory_matches("cohere", config, 6, dtype="bf16", attention="fused", device="cpu")
