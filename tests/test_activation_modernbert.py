"""The modernbert plugin's activation formula (archzoo_modernbert.activation) against what autograd saves for
backward in transformers' ModernBERT classes (archzoo.memory.measure_activations), and the gap to Korthikanti et
al.'s layer."""

from __future__ import annotations

import random

import pytest

import archzoo_modernbert
from archzoo.blocks import ACTIVATIONS
from archzoo_modernbert.activation import SAVES
from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")

#: the plugin registers its formula once archzoo.memory reads a stack of layer runs (ModernBERT's first layer, without
#: an attention LayerNorm, then the others) and tells a family the length N it is asked at (SavedTerms.seq_len)
REGISTERED = hasattr(archzoo_modernbert, "register_activation_memory")
needs_registration = pytest.mark.skipif(
    not REGISTERED,
    reason="archzoo_modernbert's __init__ does not import its activation hook yet: archzoo.memory reads no layer runs",
)
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

HEADS = ["masked_lm", "none", "sequence_classification", "token_classification", "question_answering"]


def _layers(config: dict) -> tuple[str, ...]:
    return ("layers",) if config.get("head") == "none" else ("model.layers",)


def _config(seed: int) -> dict:
    """A small random ModernBERT: one to five layers (global at 0 and 3, local between), each head class, the
    activations transformers offers it, biases or none."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3, 4, 5]), n_heads=heads,
        d_ff=rng.choice([24, 40]), activation=rng.choice(["gelu", "gelu_new", "silu", "gelu_pytorch_tanh"]),
        classifier_activation=rng.choice(["gelu", "gelu_new", "silu"]), attention_bias=rng.random() < 0.5,
        mlp_bias=rng.random() < 0.5, norm_bias=rng.random() < 0.5, head=HEADS[seed % len(HEADS)],
    )  # fmt: skip


def test_the_formula_states_every_class_the_plugin_builds():
    """One formula for ModernBertModel and each of its heads, as the plugin's reference builds them."""
    assert set(SAVES.classes) == {f"transformers.{name}" for name in archzoo_modernbert.CLASSES.values()}


@needs_registration
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dtype, attention, recompute, device", ACTIVATION_CASES)
def test_activation_formula_is_what_autograd_saves(seed, dtype, attention, recompute, device):
    """In total and block by block, at a length that changes with the case (shorter than the local window)."""
    from archzoo.testing import assert_activation_memory_matches

    config = _config(seed)
    assert_activation_memory_matches(
        "modernbert", config, 5 + 4 * seed, dtype=dtype, attention=attention,
        recompute=_layers(config) if recompute else (), device=device,
    )  # fmt: skip


@needs_registration
@pytest.mark.parametrize("layers", [2, 3, 4, 7])
@pytest.mark.parametrize("n", [63, 64, 80])
def test_sdpa_saves_each_local_layers_window_from_its_length_on(layers, n):
    """With SDPA, transformers gives a local layer its sliding-window mask only when some token lies beyond the window
    (64 tokens each side by ModernBertConfig's default local_attention of 128), and the kernel saves it: none at 63
    tokens, one N×N mask a local layer at 64 and 80, none for the global layers (0, 3, 6) among the others."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=16, n_layers=layers, n_heads=2, d_ff=24, head="none")
    assert_activation_memory_matches("modernbert", config, n, dtype="bf16", attention="fused", device="cpu")


@needs_registration
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_modernbert_base_shrunk_to_four_layers(dtype):
    """ModernBERT-base's widths (768, 12 heads, d_ff 1152, 50,368 tokens) with layers 0 and 3 global, 1 and 2 local,
    its masked-LM head, on the meta device."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("modernbert", dict(n_layers=4), 24, dtype=dtype)


@needs_registration
@pytest.mark.slow
def test_modernbert_base_whole_at_its_context():
    """ModernBERT-base as published, 22 layers, at its 8,192-token context in bf16 (eager, meta device): the figure
    `archzoo show modernbert-base` prints."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("modernbert", None, 8192, dtype="bf16")


@needs_registration
@pytest.mark.parametrize("layers", [1, 2, 3, 4])
def test_rotary_tables_belong_to_the_one_layer_of_their_kind(layers):
    """Global and local layers rotate with tables of their own (cos and sin, N × d_h each), saved by every layer of
    the kind: the stack's when two or more share them, the layer's when it is alone, and nobody's when layers are
    recomputed (they are keyword arguments of the checkpointed layer)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=layers, n_heads=4, d_ff=24, head="masked_lm")
    for recompute in ((), ("model.layers",)):
        assert_activation_memory_matches("modernbert", config, 9, dtype="bf16", recompute=recompute)


@needs_registration
@pytest.mark.parametrize("layers, typical", [(2, "first_layers.first_layer"), (4, "layers.layer")])
def test_korthikanti_plus_the_named_gap_is_the_exact_modernbert_layer(layers, typical):
    """The gap is to the layer of the longest run (the first layer, without an attention LayerNorm, of a stack of
    two; else the others)."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    n, d, d_ff, h = 11, 32, 40, 4
    report = counter("modernbert")(n, d_model=d, n_heads=h, n_layers=layers, d_ff=d_ff)
    layer = activation_formula(report, dtype="bf16").per_copy[f"modernbert.layers.{typical}"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # Wqkv's 3d-wide output held whole for the value (6 bytes where Korthikanti counts V's 2), the rotated q and the
    # transposed k (2 bytes each) against Korthikanti's Q and K
    assert gap["fused QKV output held"].evaluate(N=n) == (6 - 2) * n * d
    # softmax in fp32 (4 bytes) and its copy in bf16, where Korthikanti counts 2 bytes
    assert gap["fp32 softmax"].evaluate(N=n) == 4 * h * n * n
    # Wi's 2·d_ff output, the GeLU's output, the product: 4 tensors of d_ff in bf16, against the GeLU's input and
    # output, 4d wide, in Korthikanti's MLP
    assert gap["gated feed-forward"].evaluate(N=n) == 2 * 4 * n * d_ff - 2 * 2 * 4 * n * d
    if layers == 2:  # the first layer: one LayerNorm, and the only global layer, holding its rotary tables
        assert gap["no LayerNorm before the first layer's attention"].evaluate(N=n) == -2 * n * d
        assert gap["rotary tables"].evaluate(N=n) == 2 * 2 * n * (d // h)
    else:
        assert "rotary tables" not in gap


@needs_registration
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("head", ["masked_lm", "sequence_classification"])
def test_every_activation_in_the_feed_forward_and_the_prediction_head(activation, head):
    """Each activation archzoo accepts, in the gated feed-forward (its input a view of Wi's output) and in the
    prediction head on every token or on the pooled one: relu and tanh save their output, gelu_new and quick_gelu,
    written in Python ops, their intermediates; with the gap to Korthikanti's layer still exact."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=16, n_layers=2, n_heads=2, d_ff=24, head=head, activation=activation,
        classifier_activation=activation,
    )  # fmt: skip
    assert_activation_memory_matches("modernbert", config, 9, dtype="bf16")
    report = counter("modernbert")(9, **config)
    layer = activation_formula(report, dtype="bf16").per_copy["modernbert.layers.first_layers.first_layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
