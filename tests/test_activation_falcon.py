"""The falcon plugin's activation formula (archzoo_falcon.activation) against what autograd saves for backward in
transformers' Falcon classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from archzoo import memory
from family_checks import activation_cases, assert_activation_case, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]


def _config(seed: int) -> dict:
    """A small random Falcon: multi-query or multi-head attention (parallel behind one LayerNorm, or sequential) or
    the new decoder architecture's grouped attention behind one LayerNorm, rotary or ALiBi positions, biases or
    none, its feed-forward width and activation."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    attention = rng.choice(["multi_query", "multi_head", "grouped"])
    shape = dict(
        multi_query=dict(multi_query=True, parallel_attn=rng.random() < 0.5),
        multi_head=dict(multi_query=False, parallel_attn=rng.random() < 0.5),
        grouped=dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=rng.choice([1, heads // 2, heads])),
    )[attention]
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        alibi=rng.random() < 0.4, bias=rng.random() < 0.5, d_ff=rng.choice([None, 24]),
        activation=rng.choice(["gelu", "gelu_new", "relu"]), head=rng.choice(["lm", "none"]), **shape,
    )  # fmt: skip


@pytest.mark.parametrize("case", activation_cases((1, 2, 3, 4, 5, 6)))
def test_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    assert_activation_case("falcon", _config(case[0]), case, base="transformer.", layers="h")


@pytest.mark.parametrize(
    "options",
    [
        dict(multi_query=True, alibi=False),
        dict(multi_query=True, alibi=True),
        dict(multi_query=False, alibi=False, parallel_attn=False),
        dict(multi_query=False, alibi=True, parallel_attn=True, bias=True),
        dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=2, alibi=False),
        dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=2, alibi=True),
        dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=1, alibi=True),
        dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=4, alibi=True, activation="gelu_new"),
    ],
)
def test_each_option_that_changes_the_saves(options):
    """Multi-query (the key and value heads indexed out), multi-head or grouped (the new decoder architecture with
    one LayerNorm) attention, rotary tables or ALiBi (the query a view of the fused output), one LayerNorm or two:
    against autograd, at two lengths."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, head="lm", **options)
    for n in (3, 10):
        assert_activation_memory_matches("falcon", config, n, dtype="bf16")


def test_the_new_decoder_architecture_with_two_layer_norms_is_refused():
    """ln_mlp reads the input ln_attn saved and saves only its statistics, which the shared terms cannot state."""
    from archzoo.saved_tensors import UnsupportedActivationMemory

    config = dict(d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, new_decoder_architecture=True)
    report = counter("falcon")(7, **config)
    with pytest.raises(UnsupportedActivationMemory, match=r"^falcon: the new decoder architecture's two LayerNorms"):
        memory.activation_formula(report)


@pytest.mark.parametrize(
    "options",
    [
        dict(multi_query=True, alibi=True),
        dict(multi_query=False, parallel_attn=False),
        dict(new_decoder_architecture=True, num_norms=1, n_kv_heads=2),
    ],
)
def test_korthikanti_plus_the_named_gap_is_the_exact_falcon_layer(options):
    from archzoo.formula import total

    report = counter("falcon")(11, d_model=32, n_heads=4, n_layers=2, d_ff=40, **options)
    layer = memory.activation_formula(report, dtype="bf16").per_copy["falcon.layers.layer"]
    gap = {t.name: t.bytes for t in memory.korthikanti_gap(report)}
    assert (memory.korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    if options.get("multi_query"):
        # the query a view of the 32 + 2·8 fused output, key and value 8 wide (2 bytes each), two int64 indices,
        # against Korthikanti's three 32-wide tensors
        assert gap["fused QKV split"].evaluate(N=11) == 2 * 11 * (48 + 8 + 8) + 16 - 6 * 11 * 32
    elif options.get("new_decoder_architecture"):
        # queries, keys and values h heads wide after the broadcast (as Korthikanti's), two int64 indices
        assert gap["fused QKV split"].evaluate(N=11) == 16
    else:
        assert "fused QKV split" not in gap and "one LayerNorm, its output shared" not in gap
