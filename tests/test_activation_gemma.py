"""The gemma plugin's activation formula (archzoo_gemma.activation) against what autograd saves for backward in
transformers' Gemma 2 and Gemma 3 text classes (archzoo.memory.measure_activations), and the gap to Korthikanti et
al.'s layer."""

from __future__ import annotations

import random

import pytest

from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

HEADS = {
    "gemma2": ["lm", "none", "sequence_classification", "token_classification"],
    "gemma3": ["lm", "none", "sequence_classification"],
}


def _config(architecture: str, seed: int) -> dict:
    """A small random Gemma model: grouped, multi-query or multi-head keys and values, a head width of its own, a
    window shorter or longer than the sequence, the kinds of layers from the pattern or listed (a lone global or
    sliding layer among the others), each head class, each gate activation the formula states, each soft-cap set,
    unset or at another value, a padding id or none."""
    rng = random.Random(f"{architecture}-{seed}")
    heads = rng.choice([2, 4])
    n_layers = rng.choice([1, 2, 3, 7])
    config = dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=n_layers, n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]), d_head=rng.choice([4, 8, 12]), d_ff=rng.choice([24, 40]),
        sliding_window=rng.choice([4, 8, 512]), attention_bias=rng.random() < 0.3,
        activation=rng.choice(["gelu_pytorch_tanh", "gelu_pytorch_tanh", "gelu", "silu"]),
        head=rng.choice(HEADS[architecture]),
    )  # fmt: skip
    if rng.random() < 0.4:
        config["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(n_layers)]
    # drawn last, so the draws above stay what they were: each cap set, unset or another value, a padding id or none
    config |= dict(
        attn_softcap=rng.choice([None, 50.0, 3.5]),
        final_softcap=rng.choice([None, 30.0, 0.75]),
        pad_token_id=rng.choice([None, 0, 7]),
    )
    return config


def _stack(config: dict) -> tuple[str, ...]:
    """The module list of layers, below the head classes' ``model``."""
    return ("layers",) if config["head"] == "none" else ("model.layers",)


def _cases() -> list:
    """Each of family_checks.ACTIVATION_CASES for each architecture and seed; Gemma 2 has no fused attention in
    transformers (test_gemma2_has_no_fused_attention)."""
    return [
        pytest.param(arch, seed, *case, id=f"{arch}-{seed}-" + "-".join(map(str, case)))
        for arch in ("gemma2", "gemma3")
        for seed in (1, 2, 3, 4)
        for case in ACTIVATION_CASES
        if not (arch == "gemma2" and case[1] == "fused")
    ]


@pytest.mark.parametrize(("architecture", "seed", "dtype", "attention", "recompute", "device"), _cases())
def test_activation_formula_is_what_autograd_saves(architecture, seed, dtype, attention, recompute, device):
    """In total and block by block, at a length that changes with the seed (9 to 21 tokens, on either side of the
    window)."""
    from archzoo.testing import assert_activation_memory_matches

    config = _config(architecture, seed)
    assert_activation_memory_matches(
        architecture,
        config,
        5 + 4 * seed,
        dtype=dtype,
        attention=attention,
        recompute=_stack(config) if recompute else (),
        device=device,
    )


@pytest.mark.parametrize(
    "architecture, head", [(architecture, head) for architecture, heads in HEADS.items() for head in heads]
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_every_head_class_in_both_dtypes(architecture, head, dtype):
    """Every head class of both architectures, in fp32 and bf16, on a stack of both kinds of layers with a lone
    layer of one kind (Gemma 3's own rotary table for it), at a length beyond the window: the final logit
    soft-capping (Gemma 2's LM head), the pooled index (sequence classification) and the classifier's dropout mask
    (Gemma 2's token classification) each against autograd."""
    from archzoo.testing import assert_activation_memory_matches

    kinds = ["sliding_attention"] * 3 + ["full_attention"]
    config = dict(
        vocab_size=64, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2, d_head=12, d_ff=24, sliding_window=6,
        layer_types=kinds, head=head,
    )  # fmt: skip
    assert_activation_memory_matches(architecture, config, 10, dtype=dtype)


@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])
def test_every_activation_archzoo_accepts(architecture):
    """Each activation a configuration may name (archzoo.blocks.ACTIVATIONS) in the gated feed-forward: relu and
    tanh keep their output (the product's factor too), gelu_new and quick_gelu their Python intermediates."""
    from archzoo.blocks import ACTIVATIONS
    from archzoo.testing import assert_activation_memory_matches

    for activation in ACTIVATIONS:
        config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_head=8, d_ff=24, activation=activation)
        assert_activation_memory_matches(architecture, config, 7, dtype="bf16")


@pytest.mark.parametrize("n", [5, 6, 7, 12])
@pytest.mark.parametrize(("kv_heads", "dtype"), [(1, "bf16"), (2, "bf16"), (4, "bf16"), (2, "fp32")])
def test_gemma3_fused_attention_around_the_window(n, kv_heads, dtype):
    """SDPA on the CPU: below the window transformers passes no mask (is_causal), and grouped keys and values stay
    h_kv wide; from N = W on, every sliding layer saves its own N x N mask and the keys and values repeat_kv copies
    to every head (one key/value head stays a view of itself)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=kv_heads, d_head=8, d_ff=24, sliding_window=6,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"], head="lm",
    )  # fmt: skip
    assert_activation_memory_matches("gemma3", config, n, dtype=dtype, attention="fused", device="cpu")


@pytest.mark.parametrize("n", [1, 3, 4, 9])
@pytest.mark.parametrize(("dtype", "attention", "device"), [("bf16", "fused", "cpu"), ("fp32", "eager", "meta")])
def test_gemma3_bidirectional(n, dtype, attention, device):
    """use_bidirectional_attention: SDPA is given every layer's mask at every length (transformers never skips a
    mask built with an extra mask function), and one query token's heads are packed onto the key/value heads."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24, sliding_window=4,
        bidirectional=True, layer_types=["sliding_attention", "full_attention", "sliding_attention"], head="lm",
    )  # fmt: skip
    assert_activation_memory_matches("gemma3", config, n, dtype=dtype, attention=attention, device=device)


@pytest.mark.parametrize("n", [1, 5])
def test_gemma3_fused_attention_with_heads_wider_than_256(n):
    """SDPA's grouped-query path takes heads up to 256 wide: wider keys and values are repeated to every query head,
    except for one query token, whose heads transformers packs onto the key/value heads."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=264, d_ff=24, head="lm")
    assert_activation_memory_matches("gemma3", config, n, dtype="bf16", attention="fused", device="cpu")


def test_gemma2_has_no_fused_attention():
    """transformers 5.23 refuses SDPA for Gemma 2 (its soft-capped scores), so its 'fused' figure is its eager
    one, and says so."""
    from archzoo.memory import activation_formula, measure_activations

    report = counter("gemma2")(9, vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24)
    ref = report.architecture.reference(report.config)
    with pytest.raises(ValueError, match="does not support an attention implementation through"):
        measure_activations(ref, 9, dtype="bf16", attention="fused", device="cpu")
    fused = activation_formula(report, dtype="bf16", attention="fused", device="cpu")
    eager = activation_formula(report, dtype="bf16", device="cpu")
    assert (fused.total - eager.total).is_zero()
    assert any("no fused (SDPA) path" in a for a in fused.assumptions)


@pytest.mark.parametrize(
    ("architecture", "n_layers", "seq_len", "recompute"),
    [("gemma2", 3, 64, False), ("gemma3", 7, 600, False), ("gemma3", 7, 600, True)],
)
def test_the_defaults_shrunk_to_a_few_layers(architecture, n_layers, seq_len, recompute):
    """Gemma 2 2B's and Gemma 3 1B's widths, vocabularies and windows, a few layers (Gemma 3's seven: six sliding
    and its first global one), LM head, bf16 eager on the meta device; Gemma 3 beyond its 512-token window."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(n_layers=n_layers)
    stack = ("model.layers",) if recompute else ()
    assert_activation_memory_matches(architecture, config, seq_len, dtype="bf16", recompute=stack)


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])
def test_the_defaults_whole_as_count_shows_them(architecture):
    """Gemma 2 2B (26 layers, N = 8,192) and Gemma 3 1B (26 layers, N = 32,768), bf16 eager on the meta device: the
    figures ``archzoo count gemma2`` and ``gemma3`` print, against autograd (about 6 s each)."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches(architecture, None, None, dtype="bf16")


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("gemma2", dict(n_layers=3)),
        ("gemma2", dict(n_layers=1)),
        ("gemma3", dict(n_layers=2, n_kv_heads=1)),
        ("gemma3", dict(n_layers=7)),
        ("gemma3", dict(layer_types=["sliding_attention", "full_attention"], n_layers=2)),
    ],
)
def test_korthikanti_plus_the_named_gap_is_the_exact_gemma_layer(architecture, options):
    """Korthikanti et al. 2022 (arXiv:2205.05198, eq. 1) plus the named terms is the bf16 layer exactly, for the
    layer the gap is read for (the longest run's)."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = counter(architecture)(11, vocab_size=64, d_model=32, n_heads=4, d_head=8, d_ff=40, **options)
    formula = activation_formula(report, dtype="bf16")
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    layers = [path for path in formula.per_copy if path.endswith("layer") and path.count(".") in (2, 3)]
    exact = korthikanti_layer_bytes(report) + total(gap.values())
    assert any((exact - formula.per_copy[path]).is_zero() for path in layers), (layers, exact.text())
    n, d = 11, 32
    # Gemma's RMSNorm: an fp32 copy of the input and the fp32 normalised tensor (4 bytes each), 1/rms per token and
    # the fp32 1 + w, four times, against Korthikanti's two 2-byte LayerNorm inputs
    assert gap["four RMSNorms in fp32"].evaluate(N=n) == 4 * (2 * 4 * n * d + 4 * n + 4 * d) - 2 * 2 * n * d
    if architecture == "gemma2":  # tanh's 2-byte output, h N² elements
        assert gap["attention soft-capping"].evaluate(N=n) == 2 * 4 * n * n


def test_count_reads_well_in_the_terminal_and_as_json(capsys):
    """``archzoo count gemma2`` and ``gemma3`` state the activations (no longer "unsupported"), Gemma 2's fused
    figure as its eager one."""
    import json

    from archzoo.cli import main

    for arch in ("gemma2", "gemma3"):
        assert main(["count", arch, "--json"]) == 0
        step = json.loads(capsys.readouterr().out)["memory"]["step"]
        assert "unsupported" not in step["activations"], step["activations"]
        assert step["activations"]["eager_bf16"]["bytes"] > step["activations"]["recompute_bf16"]["bytes"] > 0
    assert main(["count", "gemma2"]) == 0
    text = capsys.readouterr().out
    assert "no SDPA path: eager" in text
    assert "activations (N=8,192)" in text


# ---- soft-capping and the padding id: keys that change what autograd saves, not parameters or FLOPs -------------

_CAPPED = dict(vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24, sliding_window=6)


@pytest.mark.parametrize(
    ("attn_softcap", "final_softcap"),
    [(None, None), (50.0, 30.0), (2.5, None), (None, 7.0), (-3.0, 0.5)],
    ids=["off", "gemma2-defaults", "scores-only", "logits-only", "other-values"],
)
@pytest.mark.parametrize("head", ["lm", "none", "sequence_classification"])
@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])
def test_soft_capping_on_off_and_other_values(architecture, head, attn_softcap, final_softcap):
    """Each cap set, unset or at another value, in both architectures and three head classes, against autograd:
    Gemma 2's capped scores save tanh's h·N² output in each layer, a causal LM's capped logits tanh's N·V output
    (the other heads' outputs are not capped), and Gemma 3's attention saves nothing for its cap (transformers 5.23's
    Gemma3Attention never passes it on)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(_CAPPED, head=head, attn_softcap=attn_softcap, final_softcap=final_softcap)
    assert_activation_memory_matches(architecture, config, 9, dtype="bf16")


@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])
def test_soft_capping_in_fp32_and_recomputed(architecture):
    """Both caps at other values, in fp32 and with every layer recomputed (tanh's output lives in the layer)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(_CAPPED, attn_softcap=20.0, final_softcap=10.0)
    assert_activation_memory_matches(architecture, config, 7, dtype="fp32")
    assert_activation_memory_matches(architecture, config, 7, dtype="bf16", recompute=("model.layers",))


@pytest.mark.parametrize("n", [5, 9])
def test_gemma3_soft_capping_under_sdpa(n):
    """Gemma 3 with both caps set runs SDPA (its attention passes no softcap, which transformers' SDPA would refuse):
    the fused figure is SDPA's, below and beyond the window, with the logits' tanh output."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(_CAPPED, head="lm", attn_softcap=50.0, final_softcap=30.0)
    assert_activation_memory_matches("gemma3", config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("pad_token_id", [None, 0, 5, -1])
@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])
def test_padding_id_of_sequence_classification(architecture, pad_token_id):
    """Sequence classification without a padding id takes the last token's scores (index -1, a Python number: one
    int64 index tensor saved, the batch's arange); with one, the last non-padding token's index is an argmax, a
    second int64 tensor autograd saves. Transformers' default padding id is 0."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(_CAPPED, head="sequence_classification", pad_token_id=pad_token_id)
    assert_activation_memory_matches(architecture, config, 9, dtype="bf16")
    assert_activation_memory_matches(architecture, config, 9, dtype="fp32")


@pytest.mark.parametrize(
    ("model_type", "model_class", "config_class", "keys"),
    [
        ("gemma2", "Gemma2ForCausalLM", "Gemma2Config", dict(attn_logit_softcapping=None)),
        ("gemma2", "Gemma2ForCausalLM", "Gemma2Config", dict(final_logit_softcapping=None)),
        ("gemma2", "Gemma2ForCausalLM", "Gemma2Config", dict(attn_logit_softcapping=5.0, final_logit_softcapping=2.0)),
        ("gemma2", "Gemma2ForSequenceClassification", "Gemma2Config", dict(pad_token_id=None)),
        ("gemma2", "Gemma2ForSequenceClassification", "Gemma2Config", dict(pad_token_id=7)),
        ("gemma2", "Gemma2ForSequenceClassification", "Gemma2Config", {}),  # the default padding id, 0
        ("gemma3_text", "Gemma3ForCausalLM", "Gemma3TextConfig", dict(final_logit_softcapping=30.0)),
        ("gemma3_text", "Gemma3ForCausalLM", "Gemma3TextConfig", dict(attn_logit_softcapping=50.0)),
        ("gemma3_text", "Gemma3TextForSequenceClassification", "Gemma3TextConfig", dict(pad_token_id=None)),
        ("gemma3_text", "Gemma3TextForSequenceClassification", "Gemma3TextConfig", {}),
    ],
)
def test_a_config_json_s_caps_and_padding_id_reach_the_formula(tmp_path, model_type, model_class, config_class, keys):
    """A config.json read by archzoo, against the class transformers builds from the same file's keys (not from
    archzoo's reference): the caps and the padding id the file gives (or leaves to the class's defaults) are the
    ones the formula follows."""
    import json

    from archzoo import Reference
    from archzoo.hf_config import load_hf_config
    from archzoo.host import get_host
    from archzoo.memory import activation_formula, measure_activations
    from archzoo.report import make_report

    values = dict(
        vocab_size=64, hidden_size=32, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, sliding_window=6, **keys,
    )  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **values}))
    reading = load_hf_config(path, get_host(), hf_class=model_class)
    formula = activation_formula(make_report(reading.architecture, reading.config, 9), dtype="bf16")
    from_file = Reference(
        library="transformers",
        target=f"transformers.{model_class}",
        config_class=f"transformers.{config_class}",
        kwargs=values,
    )
    assert formula.bytes_at(9) == measure_activations(from_file, 9, dtype="bf16").total_bytes
