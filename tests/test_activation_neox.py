"""The neox plugin's activation formulas (archzoo_neox.activation) against what autograd saves for backward in
transformers' GPT-NeoX, GPT-J and Phi classes (archzoo.memory.measure_activations), the gap to Korthikanti et al.'s
layer, the sequence classifiers' padding id (pad_token_id, from --set and from a config.json), and the
configurations refused with their reason."""

from __future__ import annotations

import random

import pytest

import archzoo_neox
from archzoo import Reference, memory
from archzoo.cli import main
from archzoo.errors import ConfigError
from archzoo.hf_config import load_hf_config
from archzoo.host import get_host
from archzoo.report import make_report
from archzoo.testing import assert_activation_memory_matches
from archzoo_neox.activation import ACTIVATION_SAVES
from family_checks import activation_cases, assert_config_json_refused, counter, write_json

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: the activations each random configuration draws from: every one the configurations accept
ACTIVATIONS = list(archzoo_neox.ACTIVATIONS)
#: each architecture's head classes (archzoo's heads), as the plugin names them
HEADS = {
    "neox": list(archzoo_neox.CLASSES),
    "gptj": list(archzoo_neox.GPTJ_CLASSES),
    "phi": list(archzoo_neox.PHI_CLASSES),
}


def _neox(seed: int) -> dict:
    """A small random GPT-NeoX: parallel or sequential residual, a quarter, 3/8 (an odd number
    of channels), half, all or none of each head rotary, biases or none, its feed-forward width and activation,
    each head class, and a padding id or none."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        d_ff=rng.choice([24, 40]), parallel_residual=rng.random() < 0.5,
        rotary_fraction=rng.choice([0.0, 0.25, 0.375, 0.5, 1.0]),
        attention_bias=rng.random() < 0.5, activation=rng.choice(ACTIVATIONS),
        tie_embeddings=rng.random() < 0.3, head=rng.choice(HEADS["neox"]), pad_token_id=rng.choice([None, 0, 7]),
    )  # fmt: skip


def _gptj(seed: int) -> dict:
    """A small random GPT-J: rotary on 2 channels up to the whole head, its feed-forward width (4 d by default)
    and activation, each head class, and a padding id or none."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        d_ff=rng.choice([None, 24]), rotary_dim=rng.choice([2, 4, 8]), max_positions=64,
        activation=rng.choice(ACTIVATIONS), head=rng.choice(HEADS["gptj"]), pad_token_id=rng.choice([None, 0, 7]),
    )  # fmt: skip


def _phi(seed: int) -> dict:
    """A small random Phi: grouped, multi-query or multi-head keys and values, per-head QK LayerNorms or none,
    a quarter, half or all of each head rotary, heads that do not divide the width, its activation, each head
    class, and a padding id or none."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8 + rng.choice([0, 1]), n_layers=rng.choice([1, 2, 3]),
        n_heads=heads, n_kv_heads=rng.choice([1, heads // 2, heads]), d_ff=rng.choice([24, 40]),
        qk_norm=rng.random() < 0.5, rotary_fraction=rng.choice([0.25, 0.5, 1.0]), activation=rng.choice(ACTIVATIONS),
        head=rng.choice(HEADS["phi"]), pad_token_id=rng.choice([None, 0, 7]),
    )  # fmt: skip


def _check_case(architecture: str, config: dict, case: tuple, base: str, layers: str = "layers") -> None:
    """`family_checks.assert_activation_case` for a family whose every head class but the bare model holds the
    layers under ``base`` (family_checks' helper places them there for the LM head only)."""
    seed, dtype, attention, recompute, device = case
    stack = ((layers,) if config["head"] == "none" else (f"{base}{layers}",)) if recompute else ()
    assert_activation_memory_matches(
        architecture, config, 5 + 4 * seed, dtype=dtype, attention=attention, recompute=stack, device=device
    )


@pytest.mark.parametrize("case", activation_cases())
def test_neox_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    _check_case("neox", _neox(case[0]), case, "gpt_neox.")


@pytest.mark.parametrize("case", activation_cases())
def test_gptj_activation_formula_is_what_autograd_saves(case):
    _check_case("gptj", _gptj(case[0]), case, "transformer.", "h")


@pytest.mark.parametrize("case", activation_cases())
def test_phi_activation_formula_is_what_autograd_saves(case):
    _check_case("phi", _phi(case[0]), case, "model.")


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("neox", dict(rotary_fraction=0.0, activation="relu")),
        # 3 of 8 channels: the cos and sin tables are 4 wide (GPT-NeoX turns one channel more)
        ("neox", dict(rotary_fraction=0.375, activation="gelu")),
        ("neox", dict(rotary_fraction=1.0, tie_embeddings=True, activation="gelu_new")),
        ("gptj", dict(rotary_dim=8, tie_embeddings=True, activation="tanh")),
        ("gptj", dict(rotary_dim=2, d_ff=40, activation="quick_gelu")),
        ("phi", dict(n_kv_heads=1, qk_norm=True, tie_embeddings=True)),
        ("phi", dict(n_kv_heads=2, qk_norm=False, rotary_fraction=1.0, activation="silu")),
    ],
)
@pytest.mark.parametrize("n", [1, 2, 9])
def test_each_option_that_changes_the_saves_at_short_lengths(architecture, options, n):
    """No rotary channel or every one, a tied LM head, an activation that keeps its output (relu, tanh) or Python
    intermediates (gelu_new, quick_gelu), one key/value head broadcast or two grouped, QK LayerNorms: against
    autograd at one token (SDPA packs a lone query's heads), two and nine, in bf16 on the meta device and with
    SDPA on the CPU."""
    base = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, head="lm")
    if architecture == "neox":
        base.update(d_ff=24, parallel_residual=False)
    if architecture == "gptj":
        base.update(max_positions=16)
    if architecture == "phi":
        base.update(rotary_fraction=0.5)
    config = {**base, **options}
    assert_activation_memory_matches(architecture, config, n, dtype="bf16")
    assert_activation_memory_matches(architecture, config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("architecture", ["neox", "phi"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_one_head_with_sdpa(architecture, dtype):
    """With one head, SDPA's output transposed back to the tokens is contiguous already: the output projection reads
    the tensor SDPA saved, no copy; against autograd on the CPU."""
    config = dict(vocab_size=64, d_model=8, n_layers=2, n_heads=1, d_ff=24, head="lm", rotary_fraction=0.5)
    if architecture == "neox":
        config["parallel_residual"] = False
    assert_activation_memory_matches(architecture, config, 11, dtype=dtype, attention="fused", device="cpu")


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
@pytest.mark.parametrize("n", [1, 5])
def test_phi_sdpa_with_heads_wider_than_256(kv_heads, n):
    """Heads wider than 256 leave SDPA's grouped-query path (transformers' use_gqa_in_sdpa): the keys and values
    are repeated to every query head (one key/value head: broadcast, a view), except for one query token, whose
    heads are packed onto the key/value heads; against autograd on the CPU."""
    config = dict(
        vocab_size=32,
        d_model=4 * 264,
        n_layers=1,
        n_heads=4,
        n_kv_heads=kv_heads,
        d_ff=8,
        rotary_fraction=0.5,
        head="none",
    )
    assert_activation_memory_matches("phi", config, n, dtype="bf16", attention="fused", device="cpu")


def test_gptj_has_no_fused_attention():
    """GPTJForCausalLM keeps its eager attention when asked for SDPA (transformers warns), so its fused figure is
    its eager one, and the assumptions say so."""
    report = counter("gptj")(6, vocab_size=64, d_model=32, n_layers=2, n_heads=4, rotary_dim=4, max_positions=16)
    fused = memory.activation_formula(report, dtype="bf16", attention="fused", device="cpu")
    eager = memory.activation_formula(report, dtype="bf16", device="cpu")
    assert (fused.total - eager.total).is_zero()
    assert any("no attention implementation" in a for a in fused.assumptions)


#: each architecture's defaults (transformers' configuration classes'), shrunk to two layers (GPT-NeoX-20B's parallel
#: residual; the sequential one is drawn by the random configurations)
SHRUNK = {
    "neox": dict(n_layers=2),
    "gptj": dict(n_layers=2),
    "phi": dict(n_layers=2),
}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("architecture", SHRUNK)
def test_the_defaults_shrunk_to_two_layers(architecture, dtype):
    """GPT-NeoX-20B's, GPT-J-6B's and Phi-2's widths, heads, rotary channels and activations at two layers, on the
    meta device, at N = 32."""
    assert_activation_memory_matches(architecture, {"head": "lm", **SHRUNK[architecture]}, 32, dtype=dtype)


@pytest.mark.slow
@pytest.mark.parametrize("architecture", SHRUNK)
def test_the_whole_defaults(architecture):
    """Every layer of the defaults (44, 28 and 32), on the meta device, bf16, at their context length (2,048)."""
    config = {"head": "lm", **SHRUNK[architecture], "n_layers": None}
    config = {k: v for k, v in config.items() if v is not None}
    assert_activation_memory_matches(architecture, config, 2048, dtype="bf16")


# ---- the sequence classifiers: the pooled token's indices, with a padding id and without -------------------

#: a small sequence classifier of each architecture, and the options each needs
SEQUENCE = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, head="sequence_classification")
OWN = dict(neox=dict(parallel_residual=False), gptj=dict(rotary_dim=4), phi=dict(rotary_fraction=0.5))


@pytest.mark.parametrize("pad_token_id", [None, 5])
@pytest.mark.parametrize("architecture", ["neox", "gptj", "phi"])
def test_the_sequence_classifier_against_autograd(architecture, pad_token_id):
    """GPTNeoX-, GPTJ- and PhiForSequenceClassification pick the pooled token's scores with the batch's arange (one
    int64) and, with a padding id, the last non-padding token's index, an argmax (a second int64): eager in fp32 and
    bf16 at one token and at seven, and with SDPA on the CPU for GPT-NeoX and Phi (GPT-J's classes keep their eager
    attention)."""
    config = dict(SEQUENCE, pad_token_id=pad_token_id, **OWN[architecture])
    for n in (1, 7):
        for dtype in ("fp32", "bf16"):
            assert_activation_memory_matches(architecture, config, n, dtype=dtype)
        if architecture != "gptj":
            assert_activation_memory_matches(architecture, config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("architecture", ["neox", "gptj", "phi"])
def test_the_padding_id_changes_no_count(architecture):
    """A padding index holds no parameter and computes nothing FlopCounterMode counts: the same parameters and FLOPs
    with one as without (the autograd checks above build the reference with it)."""
    config = dict(SEQUENCE, **OWN[architecture])
    without, with_padding = counter(architecture)(9, **config), counter(architecture)(9, **config, pad_token_id=5)
    assert (with_padding.params, with_padding.flops) == (without.params, without.flops)
    assert with_padding.architecture.reference(with_padding.config).kwargs["pad_token_id"] == 5


#: the ids torch compares a tensor of int64 ids with: an int64 or, above it, a uint64 scalar
TORCH_IDS = (-(2**63), 2**64 - 1)


@pytest.mark.parametrize("pad_token_id", [-1, 64, 1000, 2**31, *TORCH_IDS])
@pytest.mark.parametrize("architecture", ["neox", "gptj"])
def test_a_padding_id_outside_the_vocabulary_runs_where_the_embedding_has_no_padding_row(architecture, pad_token_id):
    """GPT-NeoX's and GPT-J's token embeddings have no padding row: the id is only compared with the input's, so
    transformers builds and runs any integer torch compares (it logs a warning, and loads configurations on the Hub
    that hold -1), and archzoo counts it, past its limit for a size (2^31 - 1) too: an id is not a size. Against
    autograd on the CPU, where the forward pass really runs."""
    config = dict(SEQUENCE, pad_token_id=pad_token_id, **OWN[architecture])
    assert_activation_memory_matches(architecture, config, 7, dtype="bf16", device="cpu")


@pytest.mark.parametrize("pad_token_id", [TORCH_IDS[0] - 1, TORCH_IDS[1] + 1, 10**25])
@pytest.mark.parametrize("architecture", ["neox", "gptj"])
def test_a_padding_id_torch_cannot_compare_is_refused(tmp_path, capsys, architecture, pad_token_id):
    """Past the integers torch compares ids with, GPT-NeoX's and GPT-J's sequence classifiers build but fail on the
    first forward pass (OverflowError): archzoo refuses the id with one line naming the key, from --set and from a
    config.json, instead of counting a model that cannot run."""
    import torch
    import transformers

    model_type = {"neox": "gpt_neox", "gptj": "gptj"}[architecture]
    config_class, model_class, keys = FILES[model_type]
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys, pad_token_id=pad_token_id))
    with pytest.raises(OverflowError):
        model(torch.zeros(1, 3, dtype=torch.long))
    why = (
        f"{pad_token_id:,} is outside the integers torch takes for a token id, -9,223,372,036,854,775,808 to "
        "18,446,744,073,709,551,615: transformers' model cannot use it; correct the value"
    )
    with pytest.raises(ConfigError) as refused:
        counter(architecture)(**SEQUENCE, **OWN[architecture], pad_token_id=pad_token_id)
    assert str(refused.value) == f"config: pad_token_id: {why}"
    data = {"model_type": model_type, **keys, "pad_token_id": pad_token_id}
    assert_config_json_refused(
        get_host(), tmp_path, data, model_class, "{path}: pad_token_id, read as pad_token_id: " + why
    )
    capsys.readouterr()
    code = main(["count", architecture, "--set", "vocab_size=64", "--set", f"pad_token_id={pad_token_id}"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (1, "", f"archzoo: error: --set: pad_token_id: {why}\n")


@pytest.mark.parametrize("pad_token_id", [64, -65, 2**31])
def test_phi_refuses_a_padding_id_outside_the_vocabulary(tmp_path, capsys, pad_token_id):
    """Phi's token embedding has a padding row, which nn.Embedding refuses outside the vocabulary (transformers fails
    to build the class): archzoo refuses it with one line naming the key, from --set and from a config.json."""
    import torch
    import transformers

    keys = dict(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=24)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"), torch.device("meta"):
        transformers.PhiForSequenceClassification(transformers.PhiConfig(**keys, pad_token_id=pad_token_id))
    message = (
        f"pad_token_id: {pad_token_id:,} is outside the vocabulary of 64 tokens, and transformers' token embedding "
        "refuses such a padding index; set pad_token_id to null or to a token id"
    )
    with pytest.raises(ConfigError) as refused:
        counter("phi")(**SEQUENCE, **OWN["phi"], pad_token_id=pad_token_id)
    assert str(refused.value) == f"config: {message}"
    data = {"model_type": "phi", **keys, "pad_token_id": pad_token_id}
    assert_config_json_refused(get_host(), tmp_path, data, "PhiForSequenceClassification", "{path}: " + message)
    capsys.readouterr()
    code = main(["count", "phi", "--set", "vocab_size=64", "--set", f"pad_token_id={pad_token_id}"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (1, "", f"archzoo: error: --set: {message}\n")


#: a small config.json of each model type, its configuration class and its sequence classifier
FILES = {
    "gpt_neox": (
        "GPTNeoXConfig",
        "GPTNeoXForSequenceClassification",
        dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24),
    ),
    "gptj": (
        "GPTJConfig",
        "GPTJForSequenceClassification",
        dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=16),
    ),
    "phi": (
        "PhiConfig",
        "PhiForSequenceClassification",
        dict(
            vocab_size=64,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=24,
            partial_rotary_factor=0.5,
        ),
    ),
}


@pytest.mark.parametrize("padding", [{}, {"pad_token_id": 5}], ids=["absent", "given"])
@pytest.mark.parametrize("model_type", FILES)
def test_a_config_json_s_padding_id_reaches_the_formula(tmp_path, model_type, padding):
    """A file's pad_token_id, or its configuration class's default where it has none (None for GPTNeoXConfig,
    GPTJConfig and PhiConfig), is what archzoo reads, and the formula follows it: against the class transformers
    builds from the same file's keys (not from archzoo's reference), in bf16 at nine tokens."""
    import transformers

    config_class, model_class, keys = FILES[model_type]
    values = dict(keys, **padding)
    path = write_json(tmp_path, {"model_type": model_type, **values})
    reading = load_hf_config(path, get_host(), hf_class=model_class)
    assert reading.config.pad_token_id == transformers.AutoConfig.from_pretrained(str(path)).pad_token_id
    formula = memory.activation_formula(make_report(reading.architecture, reading.config, 9), dtype="bf16")
    from_file = Reference(
        library="transformers",
        target=f"transformers.{model_class}",
        config_class=f"transformers.{config_class}",
        kwargs=values,
    )
    measured = memory.measure_activations(from_file, 9, dtype="bf16").total_bytes
    assert formula.bytes_at(9) == measured, (
        f"the formula gives {formula.bytes_at(9):,} bytes, autograd saves {measured:,}"
    )


@pytest.mark.parametrize(
    "dtype, attention, recompute, device",
    [("fp32", "eager", (), "meta"), ("bf16", "eager", (), "meta"), ("bf16", "eager", (), "cpu"),
     ("bf16", "fused", (), "cpu"), ("bf16", "eager", ("gpt_neox.layers",), "meta")],
)  # fmt: skip
@pytest.mark.parametrize("n", [1, 7, 13])
def test_the_parallel_residual_against_autograd(dtype, attention, recompute, device, n):
    """GPT-NeoX's parallel residual (GPT-NeoX-20B's and Pythia's): post_attention_layernorm reads the input
    input_layernorm saved, and saves only its statistics; the family states that norm's figure itself."""
    for layers in (1, 3):
        config = dict(vocab_size=64, d_model=32, n_layers=layers, n_heads=4, d_ff=40, parallel_residual=True,
                      rotary_fraction=0.25, head="lm")  # fmt: skip
        assert_activation_memory_matches(
            "neox", config, n, dtype=dtype, attention=attention, recompute=recompute, device=device
        )
    # the reason, as autograd has it: the second LayerNorm's own saves are its mean and 1/σ (fp32, 7 tokens), the
    # first's its input besides (7 tokens of 32 in bf16)
    report = counter("neox")(7, vocab_size=64, d_model=32, n_layers=2, n_heads=4, parallel_residual=True)
    measured = memory.measure_activations(report.architecture.reference(report.config), 7, dtype="bf16")
    by_module = measured.by_module()
    assert by_module["gpt_neox.layers.0.post_attention_layernorm"] == 2 * 4 * 7
    assert by_module["gpt_neox.layers.0.input_layernorm"] == 2 * 7 * 32 + 2 * 4 * 7


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("neox", dict(parallel_residual=False, activation="gelu")),
        ("neox", dict(parallel_residual=False, activation="relu", n_layers=1)),
        ("gptj", dict(rotary_dim=4, activation="gelu_new")),
        ("phi", dict(n_kv_heads=1, qk_norm=True, rotary_fraction=0.5)),
        ("phi", dict(n_kv_heads=2, qk_norm=False, rotary_fraction=0.5, n_layers=1)),
    ],
)
def test_korthikanti_plus_the_named_gap_is_the_exact_layer(architecture, options):
    """Korthikanti et al. 2022 (arXiv:2205.05198), eq. 1, plus the named terms is the exact bf16 layer; the terms
    each family owes to its own layer checked against the paper's accounting (2 bytes an element in 16-bit)."""
    from archzoo.formula import total

    config = {**dict(d_model=32, n_heads=4, n_layers=2, d_ff=40, vocab_size=64), **options}
    report = counter(architecture)(11, **config)
    layer = memory.activation_formula(report, dtype="bf16").per_copy[f"{architecture}.layers.layer"]
    gap = {t.name: t.bytes for t in memory.korthikanti_gap(report)}
    assert (memory.korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    n, d = 11, 32
    if architecture == "neox":
        # two LayerNorms in sequence, as the paper's layer: no shared-input term
        assert "one LayerNorm, its output shared" not in gap
        # relu's output is the down projection's input: one 40-wide tensor where the paper's GeLU saves two 4·d wide
        if options["activation"] == "relu":
            assert gap["activation saves"].evaluate(N=n) == -2 * n * 40
            # the lone layer reads the rotary tables (a quarter of an 8-wide head: 2 channels, cos and sin)
            assert gap["a rotary table of its own"].evaluate(N=n) == 2 * 2 * n * 2
    else:
        # one LayerNorm whose output the attention and the feed-forward share: the paper's second LayerNorm input and
        # MLP input (2 s b h each) are not saved
        assert gap["one LayerNorm, its output shared"].evaluate(N=n) == -2 * 2 * n * d
    if architecture == "gptj":
        # four 4-wide sin/cos tables in bf16, and the queries and keys at 4 bytes where the paper counts 2
        assert gap["rotary tables of its own"].evaluate(N=n) == 4 * 2 * n * 4
        assert gap["fp32 queries and keys"].evaluate(N=n) == 2 * 2 * n * d
    if architecture == "phi" and options["qk_norm"]:
        # a 2-byte copy of 4 query heads and 1 key head of 8, and 8 bytes of statistics per head and token
        assert gap["per-head QK LayerNorms"].evaluate(N=n) == n * (2 * 5 * 8 + 8 * 5)
    if architecture == "phi" and options["n_kv_heads"] == 1:
        # one key/value head broadcast: the key and value held 8 wide, not 32 (2 bytes each)
        assert gap["attention width"].evaluate(N=n) == 2 * 2 * n * (8 - 32)


@pytest.mark.parametrize("activation", archzoo_neox.ACTIVATIONS)
def test_every_activation_the_configurations_accept(activation):
    """What each activation saves (its Python intermediates, its output where the down projection reads it)
    against autograd in bf16, GPT-NeoX's sequential layer and Phi's parallel one."""
    assert set(ACTIVATION_SAVES) == set(archzoo_neox.ACTIVATIONS)
    config = dict(vocab_size=64, d_model=32, n_layers=1, n_heads=4, d_ff=24, activation=activation, head="none")
    assert_activation_memory_matches("neox", {**config, "parallel_residual": False}, 6, dtype="bf16")
    assert_activation_memory_matches("phi", {**config, "rotary_fraction": 0.5}, 6, dtype="bf16", device="cpu")


@pytest.mark.parametrize(
    ("architecture", "config"),
    [
        ("neox", dict(parallel_residual=False, rotary_fraction=0.25)),
        ("gptj", dict(rotary_dim=4, max_positions=16)),
        ("phi", dict(n_kv_heads=2, qk_norm=True, rotary_fraction=0.5)),
    ],
)
def test_count_json_reports_what_autograd_saves(architecture, config):
    """`archzoo count ARCH --json`'s memory.step.activations (memory_dict) holds, for eager attention in bf16 and
    fp32, the bytes autograd saves in the reference class's training step, where it said 'unsupported' before."""
    from archzoo.memory import measure_activations, memory_dict

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, head="lm", **config)
    report = counter(architecture)(9, **config)
    variants = memory_dict(report)["activations"]
    reference = report.architecture.reference(report.config)
    for dtype in ("bf16", "fp32"):
        measured = measure_activations(reference, 9, dtype=dtype)
        assert variants[f"eager_{dtype}"]["bytes"] == measured.total_bytes
