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


def test_the_formula_states_every_class_the_plugin_builds(host):
    """One formula for ModernBertModel and each of its heads, as the plugin's reference builds them; and the plugin
    registers it (its ``__init__`` imports the hook)."""
    assert set(SAVES.classes) == {f"transformers.{name}" for name in archzoo_modernbert.CLASSES.values()}
    hook = host.plugin_hook("modernbert", "register_activation_memory")
    assert hook is not None
    found: list = []
    hook(register=found.append)
    assert found == [SAVES]


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


@pytest.mark.parametrize("layers", [2, 3, 4, 7])
@pytest.mark.parametrize("n", [63, 64, 80])
def test_sdpa_saves_each_local_layers_window_from_its_length_on(layers, n):
    """With SDPA, transformers gives a local layer its sliding-window mask only when some token lies beyond the window
    (64 tokens each side by ModernBertConfig's default local_attention of 128), and the kernel saves it: none at 63
    tokens, one N×N mask a local layer at 64 and 80, none for the global layers (0, 3, 6) among the others."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=16, n_layers=layers, n_heads=2, d_ff=24, head="none")
    assert_activation_memory_matches("modernbert", config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_modernbert_base_shrunk_to_four_layers(dtype):
    """ModernBERT-base's widths (768, 12 heads, d_ff 1152, 50,368 tokens) with layers 0 and 3 global, 1 and 2 local,
    its masked-LM head, on the meta device."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("modernbert", dict(n_layers=4), 24, dtype=dtype)


@pytest.mark.slow
def test_modernbert_base_whole_at_its_context():
    """ModernBERT-base as published, 22 layers, at its 8,192-token context in bf16 (eager, meta device): the figure
    `archzoo show modernbert-base` prints."""
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches("modernbert", None, 8192, dtype="bf16")


@pytest.mark.parametrize("layers", [1, 2, 3, 4])
def test_rotary_tables_belong_to_the_one_layer_of_their_kind(layers):
    """Global and local layers rotate with tables of their own (cos and sin, N × d_h each), saved by every layer of
    the kind: the stack's when two or more share them, the layer's when it is alone, and nobody's when layers are
    recomputed (they are keyword arguments of the checkpointed layer)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=layers, n_heads=4, d_ff=24, head="masked_lm")
    for recompute in ((), ("model.layers",)):
        assert_activation_memory_matches("modernbert", config, 9, dtype="bf16", recompute=recompute)


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


# ---- the layers' kinds, the window and the pooling: what the configuration carries for these figures --------

SLIDING, FULL = "sliding_attention", "full_attention"
#: stacks whose kinds the default pattern never makes: a local first layer, a lone global layer inside the others'
#: run (it holds its rotary tables itself), one kind only, the kinds alternating
LAYER_TYPES = [
    [SLIDING, FULL, SLIDING, SLIDING],
    [SLIDING, SLIDING, FULL, SLIDING, SLIDING],
    [FULL, SLIDING, SLIDING, FULL, FULL],
    [SLIDING, SLIDING, SLIDING],
    [FULL, FULL, FULL],
    [SLIDING, FULL],
]


@pytest.mark.parametrize("layer_types", LAYER_TYPES, ids=["-".join(k[0] for k in t) for t in LAYER_TYPES])
@pytest.mark.parametrize("dtype, attention, recompute, device", ACTIVATION_CASES)
def test_any_layer_kinds_against_autograd(layer_types, dtype, attention, recompute, device):
    """Each layer's kind as layer_types lists it, at 10 tokens with a window of 8 (so SDPA is given the local
    layers' mask from 4 tokens on): rotary tables held by the only layer of a kind or by the stack, a mask for
    each local layer, whichever run the layer is in."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=16, n_layers=len(layer_types), n_heads=2, d_ff=24, head="masked_lm",
        layer_types=layer_types, local_window=8,
    )  # fmt: skip
    assert_activation_memory_matches(
        "modernbert", config, 10, dtype=dtype, attention=attention,
        recompute=("model.layers",) if recompute else (), device=device,
    )  # fmt: skip


@pytest.mark.parametrize("every", [1, 2, 4, 7])
@pytest.mark.parametrize("attention, device", [("eager", "meta"), ("fused", "cpu")])
def test_global_every_against_autograd(every, attention, device):
    """Every every-th layer global, in a stack of 7 at 12 tokens (window 16: SDPA given the mask from 8 on): one
    global layer alone holds its tables (every 7), every layer global has no local tables at all (every 1)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=16, n_layers=7, n_heads=2, d_ff=24, head="none", global_every=every)
    config["local_window"] = 16
    assert_activation_memory_matches("modernbert", config, 12, dtype="bf16", attention=attention, device=device)


@pytest.mark.parametrize("window, n", [(17, 7), (17, 8), (9, 5), (0, 3), (1, 3), (-6, 3), (4096, 40)])
def test_the_window_sdpa_is_given_a_mask_from(window, n):
    """SDPA is given a local layer's mask from local_window // 2 tokens on (ModernBertConfig's sliding_window, the
    half window; an odd window rounds down), at once for a window of 0 or 1 (a token sees itself only) and for a
    negative one (every score masked; transformers builds and runs it), never below a long window's half."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=16, n_layers=4, n_heads=2, d_ff=24, head="none", local_window=window)
    assert_activation_memory_matches("modernbert", config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("dtype, attention, recompute, device", ACTIVATION_CASES)
def test_pooling_against_autograd(pooling, dtype, attention, recompute, device):
    """The sequence classifier's head on the first token (a view holding the whole last hidden state) or on the
    mean (a vector of its own; the product saves the mask, the division the token count)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(
        vocab_size=64, d_model=16, n_layers=3, n_heads=2, d_ff=24, head="sequence_classification", pooling=pooling,
        num_labels=3,
    )  # fmt: skip
    assert_activation_memory_matches(
        "modernbert", config, 7, dtype=dtype, attention=attention,
        recompute=("model.layers",) if recompute else (), device=device,
    )  # fmt: skip


def test_pooling_changes_only_the_sequence_classifier():
    """The other heads never pool: the same figure whichever pooling is set."""
    from archzoo.memory import activation_formula

    for head in HEADS:
        cls, mean = (
            activation_formula(counter("modernbert")(9, n_layers=2, head=head, pooling=p), dtype="bf16").total
            for p in ("cls", "mean")
        )
        assert (cls == mean) is (head != "sequence_classification"), head


def _pattern_config(seed: int) -> dict:
    """A small random ModernBERT over the keys that change no parameter: the pattern or a list of kinds, a
    window around the lengths asked at, the pooling, each head."""
    rng = random.Random(seed)
    layers = rng.randint(1, 6)
    config = dict(
        vocab_size=64, d_model=16, n_layers=layers, n_heads=2, d_ff=24, head=HEADS[seed % len(HEADS)],
        local_window=rng.choice([2, 8, 13, 64]), pooling=rng.choice(["cls", "mean"]),
    )  # fmt: skip
    if rng.random() < 0.5:
        config["layer_types"] = [rng.choice([SLIDING, FULL]) for _ in range(layers)]
    else:
        config["global_every"] = rng.randint(1, 5)
    return config


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype, attention, recompute, device", ACTIVATION_CASES)
def test_random_patterns_windows_and_poolings_against_autograd(seed, dtype, attention, recompute, device):
    from archzoo.testing import assert_activation_memory_matches

    config = _pattern_config(seed)
    assert_activation_memory_matches(
        "modernbert", config, 3 + 2 * seed, dtype=dtype, attention=attention,
        recompute=_layers(config) if recompute else (), device=device,
    )  # fmt: skip


#: a config.json with every key of the kinds, the window and the pooling off its default, as a released file
#: gives the pattern (global_attn_every_n_layers, no layer_types)
NON_DEFAULT_FILE = dict(
    model_type="modernbert", vocab_size=97, hidden_size=32, num_hidden_layers=5, num_attention_heads=4,
    intermediate_size=40, pad_token_id=0, global_attn_every_n_layers=2, local_attention=12,
    classifier_pooling="mean", num_labels=3,
)  # fmt: skip


@pytest.mark.parametrize("model_class", ["ModernBertForSequenceClassification", "ModernBertForMaskedLM"])
@pytest.mark.parametrize("attention, device", [("eager", "meta"), ("fused", "cpu")])
def test_a_config_json_off_the_defaults_against_autograd(T, host, tmp_path, model_class, attention, device):
    """The file read by `archzoo count --hf-config`, against autograd in the class transformers builds from the
    file's own keys (not from archzoo's reading): the pattern, window and pooling carried, not the defaults'."""
    from archzoo.architecture import Reference
    from archzoo.hf_config import load_hf_config
    from archzoo.memory import activation_formula, measure_activations
    from archzoo.report import make_report
    from family_checks import write_json

    path = write_json(tmp_path, NON_DEFAULT_FILE)
    reading = load_hf_config(path, host, hf_class=model_class)
    kwargs = {k: v for k, v in NON_DEFAULT_FILE.items() if k != "model_type"}
    ref = Reference(
        library="transformers", target=f"transformers.{model_class}", config_class="transformers.ModernBertConfig",
        kwargs=kwargs,
    )  # fmt: skip
    for n in (5, 6, 11):  # the half window is 6: SDPA is given the local layers' mask from 6 tokens on
        report = make_report(reading.architecture, reading.config, n)
        formula = activation_formula(report, dtype="bf16", attention=attention, device=device)
        measured = measure_activations(ref, n, dtype="bf16", attention=attention, device=device)
        assert formula.bytes_at(n) == measured.total_bytes, n
    # and the defaults' figure differs, so the keys were carried: at 11 tokens, with SDPA, two local layers of five
    # instead of three (global at 0, 2, 4), and for the sequence classifier a mean instead of the first token
    default_keys = reading.config.model_copy(update=dict(global_every=3, local_window=128, pooling="cls"))
    defaults = make_report(reading.architecture, default_keys, 11)
    moved = activation_formula(defaults, dtype="bf16", attention=attention, device=device).bytes_at(11)
    assert (moved != formula.bytes_at(11)) is (attention == "fused" or model_class.endswith("Classification"))
