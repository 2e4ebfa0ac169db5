"""The llama plugin's activation formulas for Llama, Qwen3, OLMo 2, Granite and the mixtures of experts
(archzoo_llama.activation) against what autograd saves for backward in transformers' classes
(archzoo.memory.measure_activations), the gap to Korthikanti et al.'s layer, and the configuration keys that change
what is saved."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from archzoo.blocks import ACTIVATIONS
from archzoo.saved_tensors import UnsupportedActivationMemory
from archzoo.testing import assert_activation_memory_matches
from family_checks import ACTIVATION_CASES, counter, write_json

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: the head classes transformers 5.23 has for each model type
HEADS = {
    "llama": ["lm", "none", "sequence_classification", "token_classification", "question_answering"],
    "qwen3": ["lm", "none", "sequence_classification", "token_classification", "question_answering"],
    "olmo2": ["lm", "none", "sequence_classification"],
    "granite": ["lm", "none"],
}


def _layers(architecture: str, head: str) -> str:
    """The module list of layers of the class: below ``model`` in the head classes, ``transformer`` in Llama's,
    Qwen3's and Qwen3-MoE's question answering (an older name), the model's own in the base class."""
    if head == "none":
        return "layers"
    if head == "question_answering" and architecture in ("llama", "qwen3"):
        return "transformer.layers"
    return "model.layers"


def _config(architecture: str, seed: int, seq_len: int) -> dict[str, Any]:
    """A small random model of ``architecture``: grouped, multi-query or multi-head keys and values, a head width of
    its own (Qwen3; OLMo 2 and Granite take d / h or their own), its feed-forward width and gate activation, biases or
    none, a tied LM head or not, every head class the type has, and for Qwen3 no window, a window on every layer
    (shorter or longer than the sequence) or on some layers (no shorter than the sequence, as a mixed stack's N stops
    at its window)."""
    rng = random.Random(f"{architecture}-{seed}")
    heads = rng.choice([2, 4])
    bias = rng.random() < 0.3
    config: dict[str, Any] = dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]), d_head=rng.choice([None, 4, 12]), d_ff=rng.choice([24, 40]),
        qkv_bias=bias, out_bias=bias, activation=rng.choice(ACTIVATIONS), tie_embeddings=rng.random() < 0.3,
        head=rng.choice(HEADS[architecture]), max_positions=64,
    )  # fmt: skip
    if architecture in ("llama", "granite"):
        config["mlp_bias"] = rng.random() < 0.3
    if architecture == "qwen3":
        config["d_head"] = config["d_head"] or 8  # Qwen3 states its head width
        window = rng.choice(["none", "every", "some"])
        n_layers = config["n_layers"]
        if window == "every":
            config["sliding_window"] = rng.choice([4, seq_len, 64])
        elif window == "some" and n_layers > 1:
            kinds = ["sliding_attention"] + [
                rng.choice(["sliding_attention", "full_attention"]) for _ in range(1, n_layers)
            ]
            rng.shuffle(kinds)
            if "full_attention" not in kinds:
                kinds[-1] = "full_attention"
            config |= dict(sliding_window=rng.choice([4, seq_len, seq_len + 3]), layer_types=kinds)
    return config


def _cases() -> list[Any]:
    return [
        pytest.param(arch, seed, *case, id=f"{arch}-{seed}-" + "-".join(map(str, case)))
        for arch in HEADS
        for seed in (1, 2, 3, 4)
        for case in ACTIVATION_CASES
    ]


@pytest.mark.parametrize(("architecture", "seed", "dtype", "attention", "recompute", "device"), _cases())
def test_activation_formula_is_what_autograd_saves(architecture, seed, dtype, attention, recompute, device):
    """In total and block by block, at a length that changes with the seed (9 to 21 tokens)."""
    n = 5 + 4 * seed
    config = _config(architecture, seed, n)
    layers = (_layers(architecture, config["head"]),) if recompute else ()
    assert_activation_memory_matches(
        architecture, config, n, dtype=dtype, attention=attention, recompute=layers, device=device
    )


@pytest.mark.parametrize(
    ("architecture", "head"), [(architecture, head) for architecture, heads in HEADS.items() for head in heads]
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_every_head_class_in_both_dtypes(architecture, head, dtype):
    """Every head class of each type in fp32 and bf16, eager on the meta device and with SDPA on the CPU: the LM
    head's input, the pooled index of sequence classification (the batch's arange, one int64), the token classifier's
    dropout mask (p = 0.1, in the dtype) and the question-answering head's input, each against autograd."""
    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, head=head)
    if architecture == "qwen3":
        config["d_head"] = 12
    assert_activation_memory_matches(architecture, config, 10, dtype=dtype)
    assert_activation_memory_matches(architecture, config, 10, dtype=dtype, attention="fused", device="cpu")


@pytest.mark.parametrize("architecture", list(HEADS))
def test_every_activation_archzoo_accepts(architecture):
    """Each activation a configuration may name (archzoo.blocks.ACTIVATIONS) in the gated feed-forward: relu and tanh
    keep their output (the product's factor too), gelu_new and quick_gelu their Python intermediates."""
    for activation in ACTIVATIONS:
        config = dict(
            vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24, activation=activation
        )
        assert_activation_memory_matches(architecture, config, 7, dtype="bf16")


#: Qwen3 stacks of three layers and a window of 6: sliding and full layers (runs of each kind), or every layer
#: sliding; each at lengths around the window and past it
_WINDOW_STACKS = [
    pytest.param(kinds, n, id=f"{name}-N{n}")
    for name, kinds in (
        ("sliding-first", ["sliding_attention", "full_attention", "sliding_attention"]),
        ("full-first", ["full_attention", "sliding_attention", "sliding_attention"]),
        ("every-layer", None),
    )
    for n in (1, 5, 6, 7, 12)
]


@pytest.mark.parametrize(("kinds", "n"), _WINDOW_STACKS)
@pytest.mark.parametrize(("kv_heads", "dtype"), [(1, "bf16"), (2, "bf16"), (4, "bf16"), (2, "fp32")])
def test_qwen3_fused_attention_around_the_window(kinds, n, kv_heads, dtype):
    """SDPA on the CPU: below the window transformers passes no mask (is_causal), and grouped keys and values stay
    h_kv wide; from N = W on every sliding layer saves its own N x N mask and the keys and values repeat_kv copies to
    every head (one key/value head stays a view of itself; one query token's heads are packed onto the key/value
    heads). A stack of both kinds is runs of sliding-window and global layers, each saving its own kind's tensors."""
    config = dict(
        vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=kv_heads, d_head=8, d_ff=24,
        sliding_window=6, layer_types=kinds, head="lm",
    )  # fmt: skip
    assert_activation_memory_matches("qwen3", config, n, dtype=dtype, attention="fused", device="cpu")


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("llama", {}),  # no window: every layer of one kind
        ("qwen3", dict(sliding_window=6)),  # every layer slides, and N = 7 is past the window
        # some layers slide: at the window, where a sliding layer is given its mask, and past it
        ("qwen3", dict(sliding_window=7, kinds=("sliding_attention", "full_attention", "full_attention"))),
        ("qwen3", dict(sliding_window=7, kinds=("full_attention", "sliding_attention"))),
        ("qwen3", dict(sliding_window=4, kinds=("full_attention", "sliding_attention"))),
    ],
)
def test_a_stack_s_fused_activations_grow_by_one_layer_of_each_kind(architecture, options):
    """Under SDPA a stack saves what each of its layers saves (a sliding layer also a mask and repeated keys and values
    from N = W on): so the total is affine in the count of each kind, checked
    here by adding layers, up to two billion of them where no window limits N. The formula counts the kinds; it once
    walked a list of every layer, which took minutes and gigabytes on such a stack (found by test_properties)."""
    from archzoo.memory import activation_formula

    options = dict(options)
    pattern = options.pop("kinds", None)
    base = dict(vocab_size=64, d_model=32, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24, **options)

    def total(layers: int) -> int:
        config = dict(base, n_layers=layers)
        if pattern is not None:
            config["layer_types"] = [pattern[min(i, len(pattern) - 1)] for i in range(layers)]
        report = counter(architecture)(7, **config)
        return activation_formula(report, dtype="bf16", attention="fused", device="cpu").bytes_at(7)

    # the layers past the pattern's last entry are all of its last kind: one more layer adds one of those
    start = len(pattern) if pattern is not None else 1
    step = total(start + 1) - total(start)
    assert step > 0
    far = 2_000_000_000 if architecture == "llama" else 50_000  # Qwen3's stacks are taken up to 100,000 layers
    assert total(far) == total(start) + (far - start) * step


@pytest.mark.parametrize("architecture", list(HEADS))
@pytest.mark.parametrize("n", [1, 5])
def test_fused_attention_with_heads_wider_than_256(architecture, n):
    """SDPA's grouped-query path takes heads up to 256 wide: wider keys and values are repeated to every query head,
    except for one query token, whose heads transformers packs onto the key/value heads."""
    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=264, d_ff=24, head="lm")
    assert_activation_memory_matches(architecture, config, n, dtype="bf16", attention="fused", device="cpu")


#: each type's defaults (TinyLlama-1.1B, Qwen3-8B, OLMo 2 7B, Granite 3.0 8B: archzoo's configuration classes) and the
#: N they are counted at by default
DEFAULT_N = {"llama": 2048, "qwen3": 40960, "olmo2": 4096, "granite": 4096}


@pytest.mark.parametrize("architecture", list(HEADS))
@pytest.mark.parametrize("recompute", [False, True])
def test_the_defaults_shrunk_to_two_layers(architecture, recompute):
    """TinyLlama's, Qwen3-8B's, OLMo 2 7B's and Granite 3.0 8B's widths, heads and vocabularies, two layers, LM head,
    at N = 512, bf16 eager on the meta device (and every layer recomputed)."""
    layers = ("model.layers",) if recompute else ()
    assert_activation_memory_matches(architecture, dict(n_layers=2), 512, dtype="bf16", recompute=layers)


@pytest.mark.slow
@pytest.mark.parametrize("architecture", list(HEADS))
def test_the_defaults_whole_as_count_shows_them(architecture):
    """TinyLlama-1.1B (22 layers, N = 2,048), Qwen3-8B (36 layers, N = 40,960), OLMo 2 7B (32 layers, N = 4,096) and
    Granite 3.0 8B (40 layers, N = 4,096), bf16 eager on the meta device: the figures ``archzoo count`` prints, against
    autograd."""
    assert counter(architecture)().seq_len == DEFAULT_N[architecture]
    assert_activation_memory_matches(architecture, None, None, dtype="bf16")


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("llama", dict(n_layers=2, n_kv_heads=1, d_head=12, activation="gelu_new")),
        ("qwen3", dict(n_layers=2, n_kv_heads=1, d_head=12)),
        ("qwen3", dict(n_layers=1, n_kv_heads=2, d_head=8)),
        ("olmo2", dict(n_layers=3, n_kv_heads=2)),
        ("olmo2", dict(n_layers=1)),
        ("granite", dict(n_layers=2, n_kv_heads=1, activation="relu")),
        ("granite", dict(n_layers=2, n_kv_heads=2, d_head=12, activation="gelu_new")),
    ],
)
def test_korthikanti_plus_the_named_gap_is_the_exact_layer(architecture, options):
    """Korthikanti et al. 2022 (arXiv:2205.05198, eq. 1) plus the named terms is the bf16 layer exactly (a one-layer
    stack's layer holds the rotary tables too)."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = dict(vocab_size=64, d_model=32, n_heads=4, d_ff=40, **options)
    report = counter(architecture)(11, **config)
    layer = activation_formula(report, dtype="bf16").per_copy[f"{architecture}.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero(), gap
    n, d = 11, 32
    if architecture == "olmo2":
        # OLMo 2's RMSNorm: an fp32 copy of the input, 1/rms per token and the fp32 normalised tensor, twice, against
        # Korthikanti's two 2-byte LayerNorm inputs; QK-norm over the whole 32-wide queries and (h_kv d_h)-wide keys
        assert gap["RMSNorm in fp32"].evaluate(N=n) == 2 * (2 * 4 * n * d + 4 * n) - 2 * 2 * n * d
        kv = (options.get("n_kv_heads") or 4) * 8
        assert gap["QK-norm"].evaluate(N=n) == (2 * 4 * n * d + 4 * n) + (2 * 4 * n * kv + 4 * n)
    else:
        # the RMSNorm's fp32 copy of its input and 1/rms per token, besides the 2-byte normalised tensor, twice
        assert gap["RMSNorm in fp32"].evaluate(N=n) == 2 * (4 * n * d + 4 * n)


def test_count_reads_well_in_the_terminal_and_as_json(capsys):
    """``archzoo count llama``, ``qwen3``, ``olmo2`` and ``granite`` state the activations (the last three no longer
    "unsupported")."""
    from archzoo.cli import main

    for arch in HEADS:
        assert main(["count", arch, "--json"]) == 0
        step = json.loads(capsys.readouterr().out)["memory"]["step"]
        assert "unsupported" not in step["activations"], step["activations"]
        assert step["activations"]["eager_bf16"]["bytes"] > step["activations"]["recompute_bf16"]["bytes"] > 0
    assert main(["count", "olmo2"]) == 0
    assert "activations (N=4,096)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("architecture", "options", "target"),
    [
        ("qwen3", dict(qk_norm="none", d_head=8), "LlamaForCausalLM"),
        ("granite", dict(head="sequence_classification"), "LlamaForSequenceClassification"),
        ("granite", dict(head="token_classification"), "LlamaForTokenClassification"),
        ("granite", dict(head="question_answering"), "LlamaForQuestionAnswering"),
        ("olmo2", dict(qk_norm="none", norm_after=False), "LlamaForCausalLM"),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_a_configuration_its_type_cannot_build_is_counted_as_llama_builds_it(architecture, options, target, dtype):
    """Where a type's own classes cannot build the configuration (Granite has no classifier heads, Qwen3 and OLMo 2
    without their QK-norm), the plugin's reference is Llama's class: the formula holds for it too."""
    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, **options)
    report = counter(architecture)(9, **config)
    assert report.architecture.reference(report.config).target == f"transformers.{target}"
    layers = (_layers("llama", config.get("head", "lm")),)
    assert_activation_memory_matches(architecture, config, 9, dtype=dtype)
    assert_activation_memory_matches(architecture, config, 9, dtype=dtype, attention="fused", device="cpu")
    assert_activation_memory_matches(architecture, config, 9, dtype=dtype, recompute=layers)


def test_a_configuration_no_class_it_knows_builds_is_refused_with_the_reason():
    """Granite with biases on q, k and v but not on the output projection is built by Qwen2ForCausalLM, whose
    activation formula archzoo does not state: refused, naming the class and the classes it knows."""
    from archzoo.memory import activation_formula

    report = counter("granite")(
        9, vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, qkv_bias=True, out_bias=False
    )
    with pytest.raises(UnsupportedActivationMemory, match=r"built by transformers\.Qwen2ForCausalLM; .*GraniteModel"):
        activation_formula(report, dtype="bf16")


# ---- keys a config.json gives that change what is saved, not parameters or FLOPs ------------------------------

_CONFIG_CLASS = {"llama": "LlamaConfig", "qwen3": "Qwen3Config", "olmo2": "Olmo2Config", "granite": "GraniteConfig"}

_FILE = dict(
    vocab_size=64, hidden_size=32, intermediate_size=24, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=8,
)  # fmt: skip


def _from_file(tmp_path, model_type: str, model_class: str, keys: dict[str, Any], n: int, **kwargs: Any) -> None:
    """A config.json read by archzoo, its formula against the class transformers builds from the same file's keys
    (not from archzoo's reference), in total."""
    from archzoo import Reference
    from archzoo.hf_config import load_hf_config
    from archzoo.host import get_host
    from archzoo.memory import activation_formula, measure_activations
    from archzoo.report import make_report

    values = dict(_FILE, **keys)
    path = write_json(tmp_path, {"model_type": model_type, **values})
    reading = load_hf_config(path, get_host(), hf_class=model_class)
    formula = activation_formula(make_report(reading.architecture, reading.config, n), **kwargs)
    from_file = Reference(
        library="transformers",
        target=f"transformers.{model_class}",
        config_class=f"transformers.{_CONFIG_CLASS[model_type]}",
        kwargs=values,
    )
    measured = measure_activations(from_file, n, **kwargs).total_bytes
    assert formula.bytes_at(n) == measured, (
        f"the formula gives {formula.bytes_at(n):,} bytes, autograd saves {measured:,}"
    )


@pytest.mark.parametrize(
    "multipliers",
    [
        dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125, logits_scaling=16.0),
        dict(embedding_multiplier=1.0, residual_multiplier=1.0, attention_multiplier=1.0, logits_scaling=1.0),
        dict(embedding_multiplier=3, logits_scaling=8),
    ],
    ids=["granite-3.0-8b", "ones", "integers"],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_granite_multipliers_save_nothing(tmp_path, multipliers, dtype):
    """Granite's four multipliers (Granite 3.0 8B's values from its config.json, ones, whole numbers) are Python
    numbers the forward multiplies or divides by: autograd saves nothing for them, so the configuration need not
    carry them. Against the class built from the file's keys, eager and with SDPA."""
    keys = dict(multipliers, tie_word_embeddings=True)
    _from_file(tmp_path, "granite", "GraniteForCausalLM", keys, 9, dtype=dtype)
    _from_file(tmp_path, "granite", "GraniteForCausalLM", keys, 9, dtype=dtype, attention="fused", device="cpu")


@pytest.mark.parametrize(
    "keys",
    [
        dict(use_sliding_window=True, sliding_window=9, max_window_layers=1),
        dict(use_sliding_window=True, sliding_window=4, max_window_layers=0),
        dict(use_sliding_window=False, sliding_window=4),
        dict(layer_types=["full_attention", "sliding_attention", "full_attention"], use_sliding_window=True,
             sliding_window=9),
        dict(use_sliding_window=True, sliding_window=4, max_window_layers=1),
    ],
    ids=["from-layer-1", "every-layer", "window-off", "layer-types", "from-layer-1-past-the-window"],
)  # fmt: skip
def test_a_qwen3_config_json_s_window_reaches_the_formula(tmp_path, keys):
    """Qwen3's window keys, as its configuration class reads them (use_sliding_window, max_window_layers,
    layer_types), reach the formula: SDPA's masks of the sliding layers at N = W and past it, against the class built
    from the same file."""
    n = 9
    _from_file(tmp_path, "qwen3", "Qwen3ForCausalLM", keys, n, dtype="bf16", attention="fused", device="cpu")


#: a changed value for every key a config.json table of these types ignores (Granite's multipliers as Granite 3.0
#: 8B's config.json gives them), and a rotary scaling the tables read only to check its type
_IGNORED_CHANGED = dict(
    initializer_range=0.5, use_cache=False, bos_token_id=5, eos_token_id=6, attention_dropout=0.25,
    rms_norm_eps=1e-3, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 50000.0},
)  # fmt: skip
_GRANITE_MULTIPLIERS = dict(
    embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125, logits_scaling=16.0
)


@pytest.mark.parametrize(
    ("model_type", "model_class"),
    [
        ("qwen3", "Qwen3ForCausalLM"),
        ("qwen3", "Qwen3ForTokenClassification"),
        ("olmo2", "Olmo2ForCausalLM"),
        ("granite", "GraniteForCausalLM"),
        ("granite", "GraniteModel"),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_every_ignored_key_changed_leaves_the_formula_exact(tmp_path, model_type, model_class, dtype):
    """Every key the type's config.json table ignores, changed at once, with a rotary scaling: against the class built
    from the same file, the formula stays what autograd saves (the attention dropout is 0 in the measurement, as the
    formula's assumption says), so no ignored key changes the saved tensors. On the CPU: without a cache,
    transformers looks for packed sequences in the position ids, which reads their values."""
    from archzoo.host import get_host
    from family_checks import table_of

    keys = {k: v for k, v in _IGNORED_CHANGED.items() if k != "rope_parameters"}
    if model_type == "granite":
        keys |= _GRANITE_MULTIPLIERS
    assert set(keys) == set(table_of(get_host(), model_type).ignored)
    keys["rope_parameters"] = _IGNORED_CHANGED["rope_parameters"]
    _from_file(tmp_path, model_type, model_class, keys, 9, dtype=dtype, device="cpu")


@pytest.mark.parametrize(
    ("model_type", "model_class", "keys"),
    [
        ("olmo2", "Olmo2ForSequenceClassification", {}),  # Olmo2Config's default padding id, 1
        ("qwen3", "Qwen3ForSequenceClassification", dict(pad_token_id=5)),
        # a negative id, as some Hub files write: nn.Embedding takes it from the vocabulary's end, and transformers
        # builds and runs the classifier (it only warns)
        ("llama", "LlamaForSequenceClassification", dict(pad_token_id=-1)),
    ],
)
def test_a_config_json_s_padding_id_reaches_the_formula(tmp_path, model_type, model_class, keys):
    """Sequence classification with a padding id finds the last non-padding token with an argmax, a one-element
    int64 index autograd saves beside the batch's arange: the file's padding id changes what is saved."""
    _from_file(tmp_path, model_type, model_class, keys, 9, dtype="bf16")


# ---- mixtures of experts --------------------------------------------------------------------------------------

_MIXTURE = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff_expert=20, n_experts=6, top_k=2)

#: Qwen2-MoE (a shared expert, q/k/v biases, a dense layer among the experts' by mlp_only_layers) and Qwen3-MoE (QK-norm
#: over each head, every second layer dense), as the moe and qwen3 architectures build them
_QWEN_MIXTURES = {
    "qwen2_moe": (
        "moe",
        dict(_MIXTURE, n_layers=3, d_ff_shared=16, family="qwen2_moe", qkv_bias=True, dense_layers=[1], d_ff=28),
    ),
    "qwen3_moe": ("qwen3", dict(_MIXTURE, n_layers=3, d_head=8, sparse_step=2, d_ff=28)),
}


def _layer_lists(architecture: str, head: str) -> tuple[str, ...]:
    return (_layers(architecture, head),)


@pytest.mark.parametrize("head", HEADS["qwen3"])
@pytest.mark.parametrize(
    ("dtype", "attention", "recompute"), [("fp32", "eager", False), ("bf16", "fused", False), ("bf16", "eager", True)]
)
def test_mixtral_activation_formula_is_what_autograd_saves(head, dtype, attention, recompute):
    """Every Mixtral head class on the CPU (routing reads real weights): the router's saves (its input, the fp32
    softmax, the int64 top-k indices, the renormalisation's fp32 denominator and weights) and the routed experts',
    N k tokens' worth whatever the router picks, in fp32, with SDPA and recomputed."""
    layers = ("layers",) if head == "none" else ("model.layers",)
    assert_activation_memory_matches(
        "moe", dict(_MIXTURE, head=head), 9, dtype=dtype, attention=attention, recompute=layers if recompute else (),
        device="cpu",
    )  # fmt: skip


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_mixtral_every_activation(activation):
    """Each expert activation: what it keeps beyond the view of the gate/up storage it reads."""
    config = dict(_MIXTURE, activation=activation, n_kv_heads=1)
    assert_activation_memory_matches("moe", config, 7, dtype="bf16", device="cpu")


@pytest.mark.parametrize("n", [5, 9])
def test_mixtral_sliding_window_under_sdpa(n):
    """Mixtral's window on every layer: from N = W on, each layer's mask and the keys and values repeated."""
    config = dict(_MIXTURE, sliding_window=5)
    assert_activation_memory_matches("moe", config, n, dtype="bf16", attention="fused", device="cpu")


@pytest.mark.parametrize("n", [4, 7])
@pytest.mark.parametrize(
    ("dtype", "attention", "recompute"), [("fp32", "eager", False), ("bf16", "fused", False), ("bf16", "eager", True)]
)
def test_qwen2_moe_with_experts_and_windows_in_some_layers(n, dtype, attention, recompute):
    """Qwen2-MoE with a dense layer among the experts' and a window of 4 in some layers: runs of the four kinds of
    layer (with or without experts, sliding or global), at the window and past it."""
    config = dict(
        _QWEN_MIXTURES["qwen2_moe"][1],
        n_layers=4,
        dense_layers=[2],
        sliding_window=4,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    )
    layers = _layer_lists("moe", "lm") if recompute else ()
    assert_activation_memory_matches("moe", config, n, dtype=dtype, attention=attention, recompute=layers, device="cpu")


@pytest.mark.parametrize("norm_topk_prob", [False, True])
@pytest.mark.parametrize("family", list(_QWEN_MIXTURES))
@pytest.mark.parametrize("head", HEADS["qwen3"])
@pytest.mark.parametrize(
    ("dtype", "attention", "recompute"), [("fp32", "eager", False), ("bf16", "fused", False), ("bf16", "eager", True)]
)
def test_qwen_mixtures_activation_formula_is_what_autograd_saves(
    family, head, dtype, attention, recompute, norm_topk_prob
):
    """Qwen2-MoE's and Qwen3-MoE's classes on the CPU: the router's weights in the dtype, Qwen2-MoE's shared expert
    (which saves the router's input first), its sigmoid gate and the product, and the dense layers' runs."""
    architecture, config = _QWEN_MIXTURES[family]
    layers = _layer_lists(architecture, head) if recompute else ()
    config = dict(config, head=head, norm_topk_prob=norm_topk_prob)  # the denominator and weights where true
    assert_activation_memory_matches(
        architecture, config, 11, dtype=dtype, attention=attention, recompute=layers, device="cpu"
    )


def test_mixtral_korthikanti_plus_the_named_gap_is_the_exact_layer():
    """Korthikanti et al. 2022 (arXiv:2205.05198, eq. 1) plus the named terms, the mixture's among them, is the bf16
    Mixtral layer exactly."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = counter("moe")(11, **_MIXTURE)
    layer = activation_formula(report, dtype="bf16").per_copy["moe.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert "mixture of experts" in gap and "gated feed-forward" not in gap
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero(), gap


@pytest.mark.parametrize(
    ("change", "key"),
    [(dict(router_jitter_noise=0.1), "router_jitter_noise"), (dict(output_router_logits=True), "output_router_logits")],
)
def test_a_router_the_formula_does_not_state_is_refused(change, key):
    """Mixtral's jitter noise and the auxiliary loss output_router_logits computes each save more than the formula
    states (measured here: the figures differ); they are refused naming the key, not counted as if absent."""
    import warnings

    from archzoo.memory import activation_formula, measure_activations, memory_dict

    report = counter("moe")(9, **_MIXTURE, **change)
    with pytest.raises(UnsupportedActivationMemory, match=key):
        activation_formula(report, dtype="bf16")
    assert key in memory_dict(report)["activations"]["unsupported"]
    plain = counter("moe")(9, **_MIXTURE)
    ref, plain_ref = (r.architecture.reference(r.config) for r in (report, plain))
    assert ref.kwargs[key] == change[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = measure_activations(ref, 9, dtype="bf16", device="cpu").total_bytes
        assert measured != measure_activations(plain_ref, 9, dtype="bf16", device="cpu").total_bytes


def test_count_moe_reads_well_as_json(capsys):
    """``archzoo count moe`` (Mixtral 8x7B's defaults) states the activations, no longer "unsupported"."""
    from archzoo.cli import main

    assert main(["count", "moe", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)["memory"]["step"]
    assert "unsupported" not in step["activations"], step["activations"]
    assert step["activations"]["eager_bf16"]["bytes"] > step["activations"]["recompute_bf16"]["bytes"] > 0
