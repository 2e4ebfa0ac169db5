"""The bart plugin's activation formula (archzoo_bart.activation) against what autograd saves for backward in
transformers' BART and mBART classes (archzoo.memory.measure_activations), and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from archzoo_bart.activation import CORE_READS_TWO_STACKS
from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.reference,
    pytest.mark.sweep,
    pytest.mark.skipif(
        not CORE_READS_TWO_STACKS,
        reason="archzoo.memory reads one stack of layers: BART's two are refused until the core reads them",
    ),
]

#: the module lists of layers a recomputed step checkpoints, per head (the encoder-decoder is `model` in a head class)
LAYER_LISTS = {
    "none": ("encoder.layers", "decoder.layers"),
    "lm": ("model.encoder.layers", "model.decoder.layers"),
    "question_answering": ("model.encoder.layers", "model.decoder.layers"),
    "causal_lm": ("model.decoder.layers",),
}


def _config(seed: int) -> dict:
    """A small random BART or mBART: each side's layers, heads and feed-forward width of its own, tied or untied
    embeddings, scaled or not, GELU, ReLU or gelu_new, and each head the formula knows."""
    rng = random.Random(seed)
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=16, max_positions=32,
        n_encoder_layers=rng.choice([1, 2, 3]), n_decoder_layers=rng.choice([1, 2, 3]),
        n_encoder_heads=rng.choice([2, 4]), n_decoder_heads=rng.choice([2, 4]),
        d_ff_encoder=rng.choice([24, 40]), d_ff_decoder=rng.choice([24, 40]),
        activation=rng.choice(["gelu", "relu", "gelu_new"]), pre_norm=rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.7, scale_embedding=rng.random() < 0.5,
        head=rng.choice(list(LAYER_LISTS)),
    )  # fmt: skip


def _check(config: dict, n: int, dtype: str, attention: str, recompute: bool, device: str) -> None:
    from archzoo.testing import assert_activation_memory_matches

    stacks = LAYER_LISTS[config["head"]] if recompute else ()
    assert_activation_memory_matches(
        "bart",
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
    """In total and block by block (both stacks, their embeddings and norms, the head), at a length that changes with
    the case."""
    _check(_config(seed), 5 + 4 * seed, *case)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["bart", "mbart"])
@pytest.mark.parametrize(
    "options",
    [
        # one decoder layer: the encoder output its cross-attention reads is that layer's own, not the stack's
        dict(n_encoder_layers=2, n_decoder_layers=1, head="lm"),
        # untied: each side looks its ids up in its own table (the stack's token block), beside the unread `shared`
        dict(n_encoder_layers=1, n_decoder_layers=2, head="none", tie_embeddings=False),
        dict(n_encoder_layers=2, n_decoder_layers=2, head="question_answering", activation="relu"),
        # tanh, like relu, keeps its output, which fc2 saves too
        dict(n_encoder_layers=1, n_decoder_layers=1, head="lm", activation="tanh"),
        # the decoder alone: its cross-attention and that norm are built but not run, so save nothing
        dict(n_encoder_layers=2, n_decoder_layers=2, head="causal_lm"),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, pre_norm, dtype):
    """Each against autograd, at two lengths, eager and (bf16) recomputed."""
    config = dict(vocab_size=64, d_model=16, max_positions=32, n_encoder_heads=2, n_decoder_heads=4, d_ff_encoder=24,
                  d_ff_decoder=40, pre_norm=pre_norm, **options)  # fmt: skip
    for n in (3, 10):
        _check(config, n, dtype, "eager", False, "meta")
    if dtype == "bf16":
        _check(config, 6, dtype, "eager", True, "meta")
        _check(config, 6, dtype, "fused", False, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("pre_norm", [False, True], ids=["bart-large", "mbart-large"])
def test_the_defaults_shrunk(pre_norm):
    """BART-large's and mBART-large's shape (12 + 12 layers, 16 heads, d_ff = 4 d) at a quarter of the width and two
    layers a side, so a meta build stays small."""
    config = dict(d_model=256, n_encoder_layers=2, n_decoder_layers=2, d_ff_encoder=1024, d_ff_decoder=1024,
                  vocab_size=1000, max_positions=64, pre_norm=pre_norm, head="lm")  # fmt: skip
    _check(config, 64, "bf16", "eager", False, "meta")
    _check(config, 64, "fp32", "eager", False, "meta")


def test_korthikanti_plus_the_named_gap_is_the_exact_bart_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    # more decoder layers than encoder layers: the decoder's layer is the one compared, with its cross-attention
    report = counter("bart")(11, d_model=32, n_encoder_heads=4, n_decoder_heads=4, n_encoder_layers=1,
                             n_decoder_layers=2, d_ff_encoder=128, d_ff_decoder=128)  # fmt: skip
    layer = activation_formula(report, dtype="bf16").per_copy["bart.decoder.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # the cross-attention sub-block: its LayerNorm's input, q_proj's input, q, k, v, the 4·11² probabilities and
    # out_proj's input, 2 bytes each (the encoder output k_proj and v_proj read is the stack's)
    assert gap["cross-attention"].evaluate(N=11) == 2 * (11 * 32 + 11 * 32 + 3 * 11 * 32 + 4 * 11 * 11 + 11 * 32)
    # three LayerNorms, each with an fp32 mean and 1/σ a token
    assert gap["LayerNorm statistics"].evaluate(N=11) == 3 * 8 * 11


def test_the_json_answers_what_autograd_saves():
    """`archzoo count bart --json`'s figure is the formula's, no longer a refusal, and equals autograd's bytes."""
    from archzoo.memory import measure_activations, memory_dict

    report = counter("bart")(7, d_model=16, n_encoder_layers=2, n_decoder_layers=2, n_encoder_heads=2,
                             n_decoder_heads=2, d_ff_encoder=24, d_ff_decoder=24, vocab_size=64, max_positions=32)  # fmt: skip
    figures = memory_dict(report)["activations"]
    ref = report.architecture.reference(report.config)
    assert figures["eager_fp32"]["bytes"] == measure_activations(ref, 7, dtype="fp32").total_bytes
    assert figures["eager_bf16"]["bytes"] == measure_activations(ref, 7, dtype="bf16").total_bytes


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_gap_explains_every_random_configuration(seed):
    """Korthikanti's layer plus the named gap is the exact bytes of the layer it is compared with: an encoder layer, or
    a decoder layer where the decoder has more layers or runs alone (then its cross-attention is not run)."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = _config(seed)
    report = counter("bart")(7, **config)
    encoder = config["head"] != "causal_lm" and config["n_encoder_layers"] >= config["n_decoder_layers"]
    layer = activation_formula(report, dtype="bf16").per_copy[
        f"bart.{'encoder' if encoder else 'decoder'}.layers.layer"
    ]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
