"""The whisper plugin's activation formula (archzoo_whisper.activation) against what autograd saves for backward in
transformers' Whisper classes (archzoo.memory.measure_activations): the encoder over its fixed positions from twice as
many log-mel frames, the decoder over the N tokens, and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from archzoo_whisper.activation import CORE_READS_TWO_STACKS
from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.reference,
    pytest.mark.sweep,
    pytest.mark.skipif(
        not CORE_READS_TWO_STACKS,
        reason="archzoo.memory reads one stack of layers: Whisper's two are refused until the core reads them",
    ),
]

#: the module lists of layers a recomputed step checkpoints, per head
LAYER_LISTS = {
    "none": ("encoder.layers", "decoder.layers"),
    "lm": ("model.encoder.layers", "model.decoder.layers"),
    "causal_lm": ("model.decoder.layers",),
    "audio_classification": ("encoder.layers",),
}


def _config(seed: int) -> dict:
    """A small random Whisper: each side's layers, heads and feed-forward width of its own, a few encoder positions
    and mel channels, GELU, ReLU or gelu_new, tied or untied proj_out, and each head the formula knows."""
    rng = random.Random(seed)
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=16, num_mel_bins=rng.choice([4, 5]),
        max_source_positions=rng.choice([6, 9]), max_target_positions=32,
        n_encoder_layers=rng.choice([1, 2, 3]), n_decoder_layers=rng.choice([1, 2, 3]),
        n_encoder_heads=rng.choice([2, 4]), n_decoder_heads=rng.choice([2, 4]),
        d_ff_encoder=rng.choice([24, 40]), d_ff_decoder=rng.choice([24, 40]),
        activation=rng.choice(["gelu", "relu", "gelu_new"]), tie_embeddings=rng.random() < 0.7,
        head=list(LAYER_LISTS)[seed % len(LAYER_LISTS)],  # each head among any four seeds in a row
    )  # fmt: skip


def _check(config: dict, n: int, dtype: str, attention: str, recompute: bool, device: str) -> None:
    from archzoo.testing import assert_activation_memory_matches

    stacks = LAYER_LISTS[config["head"]] if recompute else ()
    assert_activation_memory_matches(
        "whisper",
        config,
        n,
        dtype=dtype,
        attention=attention,
        recompute=stacks,
        device=device,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("case", [pytest.param(c, id="-".join(map(str, c))) for c in ACTIVATION_CASES])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_activation_formula_is_what_autograd_saves(seed, case):
    """In total and block by block (the convolutions and the GELUs between them, both stacks, the head), at a length
    that changes with the case."""
    _check(_config(seed), 5 + 4 * seed, *case)


@pytest.mark.parametrize(
    "options",
    [
        # one decoder layer: the encoder output its cross-attention reads is that layer's own, not the stack's
        dict(n_encoder_layers=2, n_decoder_layers=1, head="lm"),
        dict(n_encoder_layers=1, n_decoder_layers=2, head="none", activation="relu"),
        dict(n_encoder_layers=2, n_decoder_layers=1, head="lm", activation="tanh"),
        # the decoder alone: its cross-attention and that norm are built but not run, so save nothing
        dict(n_encoder_layers=2, n_decoder_layers=2, head="causal_lm", tie_embeddings=False),
        # the encoder alone, a projector on every position, a mean, a classifier; with the hidden states' learned
        # softmax-weighted sum (the stacked states and the weights' softmax saved for the product)
        dict(n_encoder_layers=2, head="audio_classification", classifier_proj_size=12),
        dict(n_encoder_layers=3, head="audio_classification", use_weighted_layer_sum=True, num_labels=5),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, dtype):
    """Each against autograd, at two lengths (one shorter than the encoder's positions, one longer), eager and (bf16)
    recomputed and fused."""
    config = dict(vocab_size=64, d_model=16, num_mel_bins=4, max_source_positions=7, max_target_positions=32,
                  n_encoder_heads=2, n_decoder_heads=4, d_ff_encoder=24, d_ff_decoder=40, **options)  # fmt: skip
    for n in (3, 10):
        _check(config, n, dtype, "eager", False, "meta")
    if dtype == "bf16":
        _check(config, 6, dtype, "eager", True, "meta")
        _check(config, 6, dtype, "fused", False, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_whisper_tiny_whole(dtype):
    """whisper-tiny, the defaults (80 mel channels, 1,500 encoder positions, 4 + 4 layers of 6 heads, d = 384), at its
    longest N of 448 decoder tokens, on the meta device."""
    _check(dict(head="lm"), 448, dtype, "eager", False, "meta")


def test_korthikanti_plus_the_named_gap_is_the_exact_whisper_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = counter("whisper")(11, d_model=32, n_encoder_heads=4, n_decoder_heads=4, n_encoder_layers=2,
                                n_decoder_layers=2, d_ff_encoder=128, d_ff_decoder=128, max_source_positions=20,
                                num_mel_bins=4)  # fmt: skip
    layer = activation_formula(report, dtype="bf16").per_copy["whisper.encoder.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # the encoder layer runs over 20 positions, not N = 11: per row its LayerNorm inputs and statistics (2·32 + 8
    # bytes each, two of them), the projections' and products' 2·(4·32) + out_proj's 2·32, fc1's 2·32, the GELU's and
    # fc2's 2·2·128, and the 4·rows² probabilities (2 bytes each), at 20 rows less at 11
    per_row = 2 * (2 * 32 + 8) + 2 * 4 * 32 + 2 * 32 + 2 * 32 + 2 * 2 * 128
    assert gap["encoder positions"].evaluate(N=11) == per_row * (20 - 11) + 2 * 4 * (20**2 - 11**2)


def test_the_json_answers_what_autograd_saves():
    """`archzoo count whisper --json`'s figure is the formula's, no longer a refusal, and equals autograd's bytes."""
    from archzoo.memory import measure_activations, memory_dict

    report = counter("whisper")(7, d_model=16, n_encoder_layers=2, n_decoder_layers=2, n_encoder_heads=2,
                                n_decoder_heads=2, d_ff_encoder=24, d_ff_decoder=24, vocab_size=64,
                                max_source_positions=6, num_mel_bins=4)  # fmt: skip
    figures = memory_dict(report)["activations"]
    ref = report.architecture.reference(report.config)
    assert figures["eager_fp32"]["bytes"] == measure_activations(ref, 7, dtype="fp32").total_bytes
    assert figures["eager_bf16"]["bytes"] == measure_activations(ref, 7, dtype="bf16").total_bytes


def test_spec_augment_changes_nothing_saved():
    """SpecAugment (apply_spec_augment, mask_time_prob, mask_feature_prob ...), which archzoo ignores, masks the log-mel
    frames in place in training: they need no gradient, so autograd saves the same bytes as without it."""
    from archzoo.memory import activation_formula, measure_activations

    report = counter("whisper")(5, d_model=16, n_encoder_layers=1, n_decoder_layers=2, n_encoder_heads=2,
                                n_decoder_heads=2, d_ff_encoder=24, d_ff_decoder=24, vocab_size=64,
                                max_source_positions=6, num_mel_bins=4)  # fmt: skip
    ref = report.architecture.reference(report.config)
    masked = dict(apply_spec_augment=True, mask_time_prob=0.5, mask_time_length=2, mask_time_min_masks=1,
                  mask_feature_prob=0.5, mask_feature_length=2, mask_feature_min_masks=1)  # fmt: skip
    augmented = ref.model_copy(update={"kwargs": {**ref.kwargs, **masked}})
    assert measure_activations(augmented, 5).total_bytes == activation_formula(report).bytes_at(5)


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_gap_explains_every_random_configuration(seed):
    """Korthikanti's layer plus the named gap is the exact bytes of the layer it is compared with: an encoder layer
    (over P_s rows), or a decoder layer where the decoder has more layers or runs alone (then its cross-attention is
    not run); the audio classifier has the encoder alone."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = _config(seed)
    report = counter("whisper")(7, **config)
    encoder = config["head"] == "audio_classification" or (
        config["head"] != "causal_lm" and config["n_encoder_layers"] >= config["n_decoder_layers"]
    )
    layer = activation_formula(report, dtype="bf16").per_copy[
        f"whisper.{'encoder' if encoder else 'decoder'}.layers.layer"
    ]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
