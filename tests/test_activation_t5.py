"""The t5 plugin's activation formula (archzoo_t5.activation) against what autograd saves for backward in transformers'
T5 classes (archzoo.memory.measure_activations): both stacks with the relative position bias each computes once, the
fp32 RMS norms, the plain and the gated feed-forward, every head the formula knows, and the gap to Korthikanti et
al.'s layer."""

from __future__ import annotations

import random
import warnings

import pytest

from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: the module lists of layers a recomputed step checkpoints, per (head, decoder)
LAYER_LISTS = {
    ("lm", True): ("encoder.block", "decoder.block"),
    ("none", True): ("encoder.block", "decoder.block"),
    ("question_answering", True): ("encoder.block", "decoder.block"),
    ("none", False): ("encoder.block",),
    ("token_classification", False): ("transformer.encoder.block",),
}

#: (activation, gated): T5's ReLU, v1.1's and FLAN-T5's gated gelu_new, and others transformers' T5 accepts
FEED_FORWARDS = [("relu", False), ("gelu_new", True), ("gelu", False), ("silu", True), ("relu", True)]


def _config(seed: int) -> dict:
    """A small random T5: its own layers a side, heads d_kv wide (equal to d / h or not), a few buckets, each
    feed-forward, tied or untied, and each head the formula knows (T5EncoderModel among them)."""
    rng = random.Random(seed)
    activation, gated = FEED_FORWARDS[seed % len(FEED_FORWARDS)]
    head, decoder = list(LAYER_LISTS)[seed % len(LAYER_LISTS)]
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=16, d_kv=rng.choice([4, 8]), n_heads=rng.choice([2, 4]),
        d_ff=rng.choice([24, 40]), n_layers=rng.choice([1, 2, 3]),
        relative_attention_num_buckets=rng.choice([4, 8]), activation=activation, gated=gated,
        tie_embeddings=rng.random() < 0.7, head=head, decoder=decoder,
        **({"n_decoder_layers": rng.choice([1, 2, 3])} if decoder else {}),
    )  # fmt: skip


def _fused_reference(ref):
    """transformers' own class for the plugin's reference class, so that SDPA can be switched on
    (archzoo.memory measures fused attention for transformers references only, and the plugin's classes pin eager
    attention, whose products FlopCounterMode counts)."""
    from archzoo.architecture import Reference
    from archzoo_t5 import REFERENCE_CLASSES

    return Reference(
        library="transformers",
        target=f"transformers.{REFERENCE_CLASSES[ref.target.rpartition('.')[2]]}",
        config_class="transformers.T5Config",
        kwargs=ref.kwargs,
        inputs=ref.inputs,
    )


def _check(config: dict, n: int, dtype: str, attention: str, recompute: bool, device: str) -> None:
    from archzoo.memory import activation_formula, measure_activations
    from archzoo.testing import assert_activation_memory_matches

    if attention == "fused":  # in total: transformers' own class keeps the position bias in its first layer
        report = counter("t5")(n, **config)
        ref = _fused_reference(report.architecture.reference(report.config))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            measured = measure_activations(ref, n, dtype=dtype, attention="fused", device="cpu")
        formula = activation_formula(report, dtype=dtype, attention="fused", device="cpu")  # type: ignore[arg-type]
        assert formula.bytes_at(n) == measured.total_bytes, "\n".join(map(str, measured.saved))
        return
    stacks = LAYER_LISTS[config["head"], config.get("decoder", True)] if recompute else ()
    assert_activation_memory_matches(
        "t5",
        config,
        n,
        dtype=dtype,
        attention=attention,
        recompute=stacks,
        device=device,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("case", [pytest.param(c, id="-".join(map(str, c))) for c in ACTIVATION_CASES])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_activation_formula_is_what_autograd_saves(seed, case):
    """In total and block by block (both stacks, their position biases and final norms, the head), at a length that
    changes with the case."""
    _check(_config(seed), 5 + 3 * seed, *case)


@pytest.mark.parametrize(
    "options",
    [
        # one decoder layer: the encoder output its cross-attention reads is that layer's own, not the stack's
        dict(n_layers=2, n_decoder_layers=1, head="lm"),
        dict(n_layers=1, n_decoder_layers=3, head="none", activation="gelu_new", gated=True, tie_embeddings=False),
        dict(n_layers=3, n_decoder_layers=2, head="question_answering", d_kv=8),
        # tanh keeps its output, as relu does; quick_gelu saves its input and the sigmoid's output
        dict(n_layers=2, n_decoder_layers=2, head="lm", activation="tanh"),
        dict(n_layers=2, n_decoder_layers=2, head="lm", activation="quick_gelu", gated=True),
        # the encoder alone (T5EncoderModel), and with a classifier per token
        dict(n_layers=3, head="none", decoder=False),
        dict(n_layers=2, head="token_classification", decoder=False, num_labels=5),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, dtype):
    """Each against autograd, at two lengths, eager and recomputed, and fused on the CPU."""
    config = dict(vocab_size=64, d_model=16, d_kv=4, n_heads=2, d_ff=24, relative_attention_num_buckets=8) | options
    for n in (3, 10):
        _check(config, n, dtype, "eager", False, "meta")
    _check(config, 6, dtype, "eager", True, "meta")
    _check(config, 6, dtype, "fused", False, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("v1_1", [False, True], ids=["t5-small", "t5-v1_1-small"])
def test_the_defaults_shrunk(v1_1, dtype):
    """T5-Small's shape (d = 512, 8 heads of 64, d_ff = 2048, ReLU) and T5 v1.1-Small's (gated gelu_new, d_ff = 1024,
    6 heads, an untied head), two layers a side and a short vocabulary, so that a meta build stays small."""
    shape = dict(gated=True, activation="gelu_new", d_ff=1024, n_heads=6, tie_embeddings=False) if v1_1 else {}
    _check(dict(n_layers=2, vocab_size=1000, **shape), 64, dtype, "eager", False, "meta")


@pytest.mark.slow
def test_the_t5_defaults_whole():
    """T5-Small as transformers' T5Config gives it, all six layers a side and its vocabulary, at N = 512, bf16."""
    _check({}, 512, "bf16", "eager", False, "meta")


def test_korthikanti_plus_the_named_gap_is_the_exact_t5_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    # more decoder layers than encoder layers: the decoder's layer is the one compared, with its cross-attention
    report = counter("t5")(11, d_model=32, d_kv=8, n_heads=4, n_layers=1, n_decoder_layers=2, d_ff=128)
    layer = activation_formula(report, dtype="bf16").per_copy["t5.decoder.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # three RMS norms, each its bf16 input and normalised tensor (2 bytes), an fp32 copy of its input (4 bytes) and
    # the fp32 1/rms a token, where Korthikanti counts two LayerNorms' inputs
    assert gap["T5LayerNorm in fp32"].evaluate(N=11) == 3 * (2 * 2 * 11 * 32 + 4 * 11 * 32 + 4 * 11) - 2 * 2 * 11 * 32
    # relu's output is wo's input: one 2-byte tensor 128 wide where Korthikanti counts GeLU's input and output
    assert gap["relu output shared"].evaluate(N=11) == -2 * 11 * 128


def test_the_json_answers_what_autograd_saves():
    """`archzoo count t5 --json`'s figure is the formula's, no longer a refusal, and equals autograd's bytes."""
    from archzoo.memory import measure_activations, memory_dict

    report = counter("t5")(7, d_model=16, d_kv=4, n_heads=2, n_layers=2, n_decoder_layers=2, d_ff=24, vocab_size=64)
    figures = memory_dict(report)["activations"]
    ref = report.architecture.reference(report.config)
    assert figures["eager_fp32"]["bytes"] == measure_activations(ref, 7, dtype="fp32").total_bytes
    assert figures["eager_bf16"]["bytes"] == measure_activations(ref, 7, dtype="bf16").total_bytes


def test_sequence_classification_is_refused_with_its_reason():
    """T5ForSequenceClassification selects the decoder output with the input's end-of-sequence mask, an index autograd
    saves whose size is the data's count of those tokens: the formula does not claim it."""
    from archzoo.memory import UnsupportedActivationMemory, activation_formula

    report = counter("t5")(7, d_model=16, d_kv=4, n_heads=2, n_layers=1, d_ff=24, vocab_size=64,
                           head="sequence_classification")  # fmt: skip
    with pytest.raises(UnsupportedActivationMemory, match=r"ReferenceT5ForSequenceClassification"):
        activation_formula(report)


def test_measure_activations_zeroes_the_reference_dropout():
    """measure_activations zeroes the dropout of the t5 plugin's own reference classes (T5Config's dropout_rate of
    0.1, read by T5Attention as a float and by nn.Dropout modules), so no mask is saved: the formula's bytes."""
    from archzoo.memory import activation_formula, measure_activations

    report = counter("t5")(5, d_model=16, d_kv=4, n_heads=2, n_layers=1, d_ff=24, vocab_size=64)
    ref = report.architecture.reference(report.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert measure_activations(ref, 5).total_bytes == activation_formula(report).bytes_at(5)


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_gap_explains_every_random_configuration(seed):
    """Korthikanti's layer plus the named gap is the exact bytes of the layer it is compared with (an encoder layer,
    or a decoder layer where the decoder has more layers), whatever the width of the heads and the feed-forward."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = _config(seed)
    report = counter("t5")(7, **config)
    decoder_layers = config.get("n_decoder_layers", 0)
    stack = "decoder" if config.get("decoder", True) and decoder_layers > config["n_layers"] else "encoder"
    layer = activation_formula(report, dtype="bf16").per_copy[f"t5.{stack}.layers.layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
