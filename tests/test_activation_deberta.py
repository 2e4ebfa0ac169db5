"""The deberta plugin's activation formula (archzoo_deberta.activation) against what autograd saves for backward in
transformers' DeBERTa-v2/v3 classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s
layer."""

from __future__ import annotations

import random

import pytest

import archzoo_deberta
from archzoo.blocks import ACTIVATIONS
from archzoo_deberta.activation import SAVES
from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")

#: the plugin registers its formula once archzoo.memory reads a layer whose feed-forward linears are its own
#: children (fc_in, fc_out), the model's own saves (the embeddings' mask) and a family's figure for a norm that does
#: not run over the N tokens (the 2k-row position table's)
REGISTERED = hasattr(archzoo_deberta, "register_activation_memory")
needs_registration = pytest.mark.skipif(
    not REGISTERED,
    reason="archzoo_deberta's __init__ does not import its activation hook yet: archzoo.memory reads no layer "
    "without a feed-forward block",
)
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

HEADS = ["masked_lm", "none", "sequence_classification", "token_classification", "question_answering"]


def _layers(config: dict) -> tuple[str, ...]:
    return ("encoder.layer",) if config.get("head") == "none" else ("deberta.encoder.layer",)


def _config(seed: int) -> dict:
    """A small random DeBERTa-v2/v3: relative attention with c2p, p2c, both or neither term, shared or own position
    projections, bucketed or plain spans shorter and longer than N, the position table normalised or not, absolute
    positions, token types, a narrow token table, each head class."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    head = HEADS[seed % len(HEADS)]
    legacy = rng.random() < 0.6
    buckets = rng.choice([3, 4, -1])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        d_ff=rng.choice([24, 40]), activation=rng.choice(["gelu", "gelu_new"]),
        relative_attention=rng.random() < 0.8, position_buckets=buckets,
        max_relative_positions=rng.choice([5, 12]) if buckets < 0 else -1,
        pos_att_type=rng.choice([["p2c", "c2p"], ["c2p"], ["p2c"], []]), share_att_key=rng.random() < 0.6,
        norm_rel_embeddings=rng.random() < 0.7, position_biased_input=rng.random() < 0.4,
        type_vocab_size=rng.choice([0, 2]),
        embedding_size=rng.choice([None, 16]) if legacy or head != "masked_lm" else None,
        legacy=legacy, pooler_activation=rng.choice(["gelu", "silu"]), head=head,
    )  # fmt: skip


def test_the_formula_states_every_class_the_plugin_builds():
    """One formula for DebertaV2Model and each of its heads, as the plugin's reference builds them."""
    assert set(SAVES.classes) == {f"transformers.{name}" for name in archzoo_deberta.CLASSES.values()}


@needs_registration
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("dtype, attention, recompute, device", ACTIVATION_CASES)
def test_activation_formula_is_what_autograd_saves(seed, dtype, attention, recompute, device):
    """In total and block by block, at a length that changes with the case."""
    from archzoo.testing import assert_activation_memory_matches

    config = _config(seed)
    assert_activation_memory_matches(
        "deberta", config, 3 + 3 * seed, dtype=dtype, attention=attention,
        recompute=_layers(config) if recompute else (), device=device,
    )  # fmt: skip


@needs_registration
@pytest.mark.parametrize(
    "options",
    [
        dict(pos_att_type=["c2p"], share_att_key=False),
        dict(pos_att_type=["p2c"], share_att_key=False),
        dict(pos_att_type=["p2c"], share_att_key=True),
        dict(pos_att_type=[], share_att_key=True),
        dict(pos_att_type=[], share_att_key=False),
        dict(norm_rel_embeddings=False),
        dict(relative_attention=False),
        dict(embedding_size=16, position_biased_input=True, type_vocab_size=2),
    ],
)
@pytest.mark.parametrize("layers", [1, 2])
def test_each_option_that_changes_the_saves(options, layers):
    """Each relative term alone (the position keys or queries, the scores the gather reads, its int64 index, the
    keys p2c reads), the shared projections that run without a term, the table a parameter when not normalised
    (then nobody saves it), no relative attention, a token table narrower than the model (projected up, and the
    masked-LM head's dense layer, LayerNorm and decoder that narrow) with absolute positions and token types: one
    layer (the position table the layer's own) and two (the stack's)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=layers, n_heads=4, d_ff=24, position_buckets=4, **options)
    for n in (3, 10):
        assert_activation_memory_matches("deberta", config, n, dtype="bf16")


@needs_registration
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_deberta_v3_base_shrunk_to_two_layers(dtype):
    """DeBERTa-v3-base's widths (768, 12 heads, d_ff 3072, 128,100 tokens, 256 position buckets each side, shared
    position projections, both terms) with its masked-LM head, on the meta device."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("deberta", dict(n_layers=2), 24, dtype=dtype)


@needs_registration
@pytest.mark.slow
def test_deberta_v3_base_whole_at_its_context():
    """DeBERTa-v3-base as published, 12 layers, at its 512-token context in bf16 (eager, meta device): the figure
    `archzoo show deberta-v3-base` prints."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("deberta", None, 512, dtype="bf16")


@needs_registration
@pytest.mark.parametrize("options", [dict(), dict(pos_att_type=["c2p"], share_att_key=False, n_layers=1)])
def test_korthikanti_plus_the_named_gap_is_the_exact_deberta_layer(options):
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    n, d, h, k = 11, 32, 4, 4
    config = dict(d_model=d, n_heads=h, n_layers=2, d_ff=40, position_buckets=k) | options
    report = counter("deberta")(n, **config)
    layer = activation_formula(report, dtype="bf16").per_copy["deberta.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # c2p: the 2k position keys (d wide), the h·N·2k scores before the gather, its N² int64 index, all in bf16 but
    # the index
    assert gap["c2p relative scores"].evaluate(N=n) == 2 * 2 * k * d + 2 * h * n * 2 * k + 8 * n * n
    # the inverted mask, a bool a token pair
    assert gap["attention mask"].evaluate(N=n) == n * n
    if "p2c" in report.config.pos_att_type:
        # p2c adds the keys, a copy of their own, to what c2p saves
        assert gap["p2c relative scores"].evaluate(N=n) == gap["c2p relative scores"].evaluate(N=n) + 2 * n * d
    if report.config.n_layers == 1:  # the one layer holds the normalised table, 2k rows of d
        assert gap["relative-position table"].evaluate(N=n) == 2 * 2 * k * d


@needs_registration
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("head", ["masked_lm", "sequence_classification"])
def test_every_activation_in_the_feed_forward_and_the_heads(activation, head):
    """Each activation archzoo accepts, between fc_in and fc_out, in the masked-LM head and in the sequence
    classifier's pooler: relu and tanh save their output (which the next linear layer then does not save again),
    gelu_new and quick_gelu, written in Python ops, their intermediates; with the gap to Korthikanti's layer still
    exact."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=16, n_layers=2, n_heads=2, d_ff=24, position_buckets=3, head=head,
        activation=activation, pooler_activation=activation,
    )  # fmt: skip
    assert_activation_memory_matches("deberta", config, 9, dtype="bf16")
    report = counter("deberta")(9, **config)
    layer = activation_formula(report, dtype="bf16").per_copy["deberta.layers.layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
