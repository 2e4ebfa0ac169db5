"""The stablelm plugin's activation formula (archzoo_stablelm.activation) against what autograd saves for backward in
transformers' StableLM classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from family_checks import activation_cases, assert_activation_case, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]


def _config(seed: int) -> dict:
    """A small random StableLM: grouped or multi-head keys and values, per-head QK LayerNorms or none, parallel or
    sequential layers, q/k/v biases or none, a quarter, half or all of each head rotary."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]), d_ff=rng.choice([24, 40]), qk_norm=rng.random() < 0.6,
        parallel_residual=rng.random() < 0.5, qkv_bias=rng.random() < 0.5,
        rotary_fraction=rng.choice([0.25, 0.5, 1.0]), head=rng.choice(["lm", "none"]),
    )  # fmt: skip


@pytest.mark.parametrize("case", activation_cases())
def test_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    assert_activation_case("stablelm", _config(case[0]), case)


@pytest.mark.parametrize(
    "options",
    [
        dict(qk_norm=True, parallel_residual=False, n_kv_heads=2),
        dict(qk_norm=False, parallel_residual=True, n_kv_heads=4),
        dict(qk_norm=True, parallel_residual=True, n_kv_heads=1),
    ],
)
def test_each_option_that_changes_the_saves(options):
    """QK LayerNorms (a copy of the queries and keys, statistics per head), the parallel layer (the feed-forward's
    input shared with the attention's), grouped keys: each alone against autograd, at two lengths."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=24, head="none", **options)
    for n in (3, 10):
        assert_activation_memory_matches("stablelm", config, n, dtype="bf16")


@pytest.mark.parametrize("qk_norm, parallel, kv_heads", [(False, False, 2), (True, True, 2), (True, False, 1)])
def test_korthikanti_plus_the_named_gap_is_the_exact_stablelm_layer(qk_norm, parallel, kv_heads):
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = dict(
        d_model=32, n_heads=4, n_kv_heads=kv_heads, n_layers=2, d_ff=40, qk_norm=qk_norm, parallel_residual=parallel
    )
    report = counter("stablelm")(11, **config)
    layer = activation_formula(report, dtype="bf16").per_copy["stablelm.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # the parallel layer saves one LayerNorm's input, read by both branches, where Korthikanti's layer saves a
    # second LayerNorm's input and the MLP's (2 bytes a token and channel each, Korthikanti et al. 2022, eq. 1)
    if parallel:
        assert gap["one LayerNorm, its output shared"].evaluate(N=11) == -2 * 2 * 11 * 32
    else:
        assert "one LayerNorm, its output shared" not in gap
    # the per-head QK LayerNorms: a 2-byte copy of 4 query and 2 key heads of 8, and 8 bytes of statistics each
    if qk_norm:
        heads = 4 + kv_heads
        assert gap["per-head QK LayerNorms"].evaluate(N=11) == 11 * (2 * heads * 8 + 8 * heads)
    # one key/value head of 8 channels broadcast, not copied to 4: the key and the value are 2 bytes of 8 a token
    if kv_heads == 1:
        assert gap["one key/value head broadcast"].evaluate(N=11) == 2 * 2 * 11 * (8 - 32)


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_fused_attention_with_each_key_value_grouping(kv_heads):
    """SDPA on the CPU with one, two (grouped) or four key/value heads of four: what its kernel holds (the keys and
    values at their own width) and the output projection's input, against autograd."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64,
        d_model=32,
        n_layers=2,
        n_heads=4,
        n_kv_heads=kv_heads,
        d_ff=24,
        qk_norm=True,
        parallel_residual=True,
    )
    assert_activation_memory_matches("stablelm", config, 6, dtype="bf16", attention="fused", device="cpu")
