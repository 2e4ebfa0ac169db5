"""The transformer plugin's activation formula (archzoo_transformer.activation) against what autograd saves for backward
in torch.nn.Transformer and the plugin's Seq2SeqTransformer (archzoo.memory.measure_activations): both post-norm
stacks and their final norms, SDPA's math path and its flash kernel, relu and gelu, the embeddings and the output
projection, and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random
import warnings

import pytest

from family_checks import counter

pytest.importorskip("torch")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: (dtype, attention, recompute, device): SDPA's math path is what the meta device runs ("eager"); the CPU runs the
#: flash kernel ("fused"), or the math path when asked to (`_math_path`)
CASES = [
    ("fp32", "eager", False, "meta"),
    ("bf16", "eager", False, "meta"),
    ("bf16", "eager", False, "cpu"),
    ("bf16", "fused", False, "cpu"),
    ("fp32", "fused", False, "cpu"),
    ("bf16", "eager", True, "meta"),
]


def _layer_lists(config: dict) -> tuple[str, ...]:
    base = "transformer." if config.get("vocab_size") else ""
    return (f"{base}encoder.layers", f"{base}decoder.layers")


def _config(seed: int) -> dict:
    """A small random torch.nn.Transformer: each side's layers, heads, feed-forward width, relu or gelu, biases or
    none, and no vocabulary or one (shared or not, the output tied or not)."""
    rng = random.Random(seed)
    config = dict(
        d_model=16, n_heads=rng.choice([2, 4]), d_ff=rng.choice([24, 64]),
        n_encoder_layers=rng.choice([1, 2, 3]), n_decoder_layers=rng.choice([1, 2, 3]),
        activation=rng.choice(["relu", "gelu"]), bias=rng.random() < 0.7,
    )  # fmt: skip
    if seed % 2:
        config |= dict(vocab_size=rng.choice([64, 97]), share_embeddings=rng.random() < 0.5,
                       tie_output=rng.random() < 0.5)  # fmt: skip
    return config


def _check(config: dict, n: int, dtype: str, attention: str, recompute: bool, device: str) -> None:
    from archzoo.testing import assert_activation_memory_matches

    if attention == "fused":
        _check_fused(config, n, dtype)
        return
    with _math_path() if device == "cpu" else _nothing():
        assert_activation_memory_matches(
            "transformer",
            config,
            n,
            dtype=dtype,  # type: ignore[arg-type]
            recompute=_layer_lists(config) if recompute else (),
            device=device,  # type: ignore[arg-type]
        )


def _math_path():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.MATH)


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def _check_fused(config: dict, n: int, dtype: str) -> None:
    """On the CPU, where nn.MultiheadAttention's SDPA runs the flash kernel (archzoo.memory's fused mode switches
    transformers classes to SDPA; torch.nn.Transformer is on it already), in total and block by block."""
    from archzoo.memory import activation_formula, measure_activations

    report = counter("transformer")(n, **config)
    ref = report.architecture.reference(report.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = measure_activations(ref, n, dtype=dtype, device="cpu")  # type: ignore[arg-type]
    formula = activation_formula(report, dtype=dtype, attention="fused", device="cpu")  # type: ignore[arg-type]
    wrong = {
        path: (got, expected.evaluate(N=n))
        for path, got in measured.by_block(report.root).items()
        if (expected := formula.per_copy.get(path, formula.blocks.get(path))) is not None
        and expected.evaluate(N=n) != got
    }
    assert formula.bytes_at(n) == measured.total_bytes and not wrong, (wrong, measured.saved)


@pytest.mark.parametrize("case", [pytest.param(c, id="-".join(map(str, c))) for c in CASES])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_activation_formula_is_what_autograd_saves(seed, case):
    """In total and block by block (both stacks and their final norms, the embeddings, the output projection), at a
    length that changes with the case."""
    _check(_config(seed), 5 + 4 * seed, *case)


@pytest.mark.parametrize(
    "options",
    [
        # one decoder layer: the encoder output its cross-attention reads is that layer's own, not the stack's
        dict(n_encoder_layers=2, n_decoder_layers=1),
        dict(n_encoder_layers=1, n_decoder_layers=2, activation="gelu", bias=False),
        dict(n_encoder_layers=2, n_decoder_layers=2, vocab_size=64),
        dict(n_encoder_layers=1, n_decoder_layers=2, vocab_size=64, share_embeddings=False, tie_output=False),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, dtype):
    """Each against autograd, at two lengths on the meta device, recomputed, and on the CPU (flash and math)."""
    config = dict(d_model=16, n_heads=2, d_ff=24) | options
    for n in (3, 10):
        _check(config, n, dtype, "eager", False, "meta")
    _check(config, 6, dtype, "eager", True, "meta")
    _check(config, 6, dtype, "fused", False, "cpu")
    _check(config, 6, dtype, "eager", False, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_base_model_shrunk(dtype):
    """The paper's base model (d = 512, 8 heads, d_ff = 2048, relu) with two layers a side and a 1,000-token shared
    vocabulary, on the meta device."""
    config = dict(n_encoder_layers=2, n_decoder_layers=2, vocab_size=1000)
    _check(config, 128, dtype, "eager", False, "meta")


@pytest.mark.slow
def test_the_base_model_whole():
    """torch.nn.Transformer's defaults, six layers a side, at N = 512, bf16, on the meta device."""
    _check({}, 512, "bf16", "eager", False, "meta")


def test_korthikanti_plus_the_named_gap_is_the_exact_transformer_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    # more decoder layers than encoder layers: the decoder's layer is the one compared, with its cross-attention
    report = counter("transformer")(11, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=2, d_ff=128)
    layer = activation_formula(report, dtype="bf16").per_copy["transformer.decoder.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # the math path holds q, k, v (32 wide) and the 4·11² probabilities in fp32: 2 bytes more each than Korthikanti
    assert gap["fp32 math-path attention"].evaluate(N=11) == 2 * (3 * 11 * 32 + 4 * 11 * 11)
    # three LayerNorms, each with an fp32 mean and 1/σ a token
    assert gap["LayerNorm statistics"].evaluate(N=11) == 3 * 8 * 11


def test_the_json_answers_what_autograd_saves():
    """`archzoo count transformer --json`'s figure is the formula's, no longer a refusal, and equals autograd's bytes."""
    from archzoo.memory import measure_activations, memory_dict

    report = counter("transformer")(7, d_model=16, n_heads=2, d_ff=24, n_encoder_layers=2, n_decoder_layers=2,
                                    vocab_size=64)  # fmt: skip
    figures = memory_dict(report)["activations"]
    ref = report.architecture.reference(report.config)
    assert figures["eager_fp32"]["bytes"] == measure_activations(ref, 7, dtype="fp32").total_bytes
    assert figures["eager_bf16"]["bytes"] == measure_activations(ref, 7, dtype="bf16").total_bytes


def test_measure_activations_measures_a_training_step():
    """measure_activations zeroes torch.nn.Transformer's dropout (0.1 by default) and hands each side its own input,
    in the model's dtype and needing a gradient as embeddings computed upstream do: the formula's bytes in bf16."""
    import archzoo.memory

    report = counter("transformer")(5, d_model=16, n_heads=2, d_ff=24, n_encoder_layers=1, n_decoder_layers=2)
    ref = report.architecture.reference(report.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = archzoo.memory.measure_activations(ref, 5, dtype="bf16")
    assert measured.total_bytes == archzoo.memory.activation_formula(report, dtype="bf16").bytes_at(5)


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_gap_explains_every_random_configuration(seed):
    """Korthikanti's layer plus the named gap is the exact bytes of the layer it is compared with: an encoder layer,
    or a decoder layer where the decoder has more layers."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = _config(seed)
    report = counter("transformer")(7, **config)
    stack = "encoder" if config["n_encoder_layers"] >= config["n_decoder_layers"] else "decoder"
    layer = activation_formula(report, dtype="bf16").per_copy[f"transformer.{stack}.layers.layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
