"""The opt plugin against transformers: published configurations, random small ones, config.json files, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of ``OPTModel`` or ``OPTForCausalLM``
(transformers 5.23) built on the meta device, or what ``torch.utils.flop_counter.FlopCounterMode`` reports for one
eager forward pass of batch 1. The nine published shapes are pinned as literals (measured with transformers 5.23,
``OPTForCausalLM`` on the meta device) and rebuilt from transformers in the same test; the others are built on the
fly. The tests use the installed plugin host, and skip only when the opt plugin is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from archzoo.architecture import parse_config
from archzoo.cli import main
from archzoo.errors import ConfigError
from archzoo.hf_config import COMMON_KEYS, load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model
from family_checks import (
    activation_cases,
    assert_activation_case,
    assert_config_json_refused,
    assert_random_config_matches,
    assert_verify_maps_every_block,
    counter,
    saved_config,
    table_of,
    write_json,
)
from transformers_models import config_json_figures, forward_flops, host_with, n_params

pytestmark = pytest.mark.sweep


count = counter("opt")


# ---- published configurations -----------------------------------------------------------------------------

#: Zhang et al. 2022, OPT, arXiv:2205.01068, Table 1 (#L, #H, d_model), with the released checkpoints' 50,272-row
#: vocabulary, 2,048-token context and ffn_dim 4 d_model; OPT-350m as released (post-LN, a 512-wide embedding).
#: (archzoo config, parameters of OPTForCausalLM: transformers 5.23 on the meta device)
PUBLISHED = {
    "opt-125m": (dict(d_model=768, n_layers=12, n_heads=12), 125_239_296),
    "opt-350m": (dict(d_model=1024, n_layers=24, n_heads=16, d_embed=512, pre_norm=False), 331_196_416),
    "opt-1.3b": (dict(d_model=2048, n_layers=24, n_heads=32), 1_315_758_080),
    "opt-2.7b": (dict(d_model=2560, n_layers=32, n_heads=32), 2_651_596_800),
    "opt-6.7b": (dict(d_model=4096, n_layers=32, n_heads=32), 6_658_473_984),
    "opt-13b": (dict(d_model=5120, n_layers=40, n_heads=40), 12_853_473_280),
    "opt-30b": (dict(d_model=7168, n_layers=48, n_heads=56), 29_974_540_288),
    "opt-66b": (dict(d_model=9216, n_layers=64, n_heads=72), 65_719_701_504),
    "opt-175b": (dict(d_model=12288, n_layers=96, n_heads=96), 174_604_468_224),
}


def _published_config(config: dict) -> dict:
    return dict(config, d_ff=4 * config["d_model"])


def _opt_kwargs(config: dict) -> dict:
    kwargs = dict(
        hidden_size=config["d_model"],
        num_hidden_layers=config["n_layers"],
        num_attention_heads=config["n_heads"],
        ffn_dim=4 * config["d_model"],
    )
    if "d_embed" in config:
        kwargs.update(word_embed_proj_dim=config["d_embed"], do_layer_norm_before=config["pre_norm"])
    return kwargs


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_opt_counts(host, model_id):
    config, expected = PUBLISHED[model_id]
    assert count(**_published_config(config)).params == expected


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_opt_figures_are_transformers_own(T, model_id):
    config, expected = PUBLISHED[model_id]
    assert n_params(build_model("OPTForCausalLM", T.OPTConfig(**_opt_kwargs(config)))) == expected


@pytest.mark.reference
@pytest.mark.parametrize("model_id", ["opt-125m", "opt-350m"])
def test_published_shapes_flops_at_several_lengths(T, host, model_id):
    """The two smallest released shapes, whole, at a few lengths (the meta device makes this cheap)."""
    config, _ = PUBLISHED[model_id]
    model = build_model("OPTForCausalLM", T.OPTConfig(**_opt_kwargs(config)))
    for n in (1, 5, 64):
        assert count(n, **_published_config(config)).flops == forward_flops(model, n), n


# ---- random small configurations: parameters and FLOPs -----------------------------------------------------


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 3, 4])
    pre_norm = rng.random() < 0.6
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(2, 300),
        max_positions=rng.randint(16, 64),
        d_model=n_heads * rng.randint(1, 12),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.randint(4, 120),
        pre_norm=pre_norm,
        bias=rng.random() < 0.7,
        norm_affine=rng.random() < 0.7,
        activation=rng.choice(["relu", "gelu", "gelu_new", "silu"]),
        tie_embeddings=rng.random() < 0.7,
        head=rng.choice(["lm", "lm", "none"]),
    )
    if rng.random() < 0.5:
        config["d_embed"] = rng.randint(2, 40)
    if pre_norm and rng.random() < 0.3:
        config["final_norm"] = False
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(24)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    """Block by block against the reference's submodules, and in total (parameters, FLOPs at 1, 7 and 16)."""
    assert_random_config_matches(host, "opt", config)


def test_final_norm_only_in_pre_ln_models(host):
    with pytest.raises(ConfigError, match=r"final_norm: transformers' OPT builds a final LayerNorm only in pre-LN"):
        count(pre_norm=False, final_norm=True)
    blocks = {path for path, _, _ in count(pre_norm=False).root.walk()}
    assert "opt.final_norm" not in blocks and "opt.project_in" not in blocks


def test_heads_must_divide_the_width(host):
    with pytest.raises(ConfigError, match=r"n_heads: d_model 100 is not divisible by n_heads 12"):
        count(d_model=100)


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------


def _config_file(T, tmp_path: Path, kwargs: dict, name: str = "config.json"):
    return saved_config(tmp_path, T.OPTConfig(**kwargs), name)


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, no aliases, AutoModel's class, every model class, and a full to_dict() file read."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, "opt")
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(T.OPTConfig) if f.name not in common}
    assert dict(table.defaults) == fields
    assert dict(table.aliases) == T.OPTConfig.attribute_map
    assert table.base_class == MODEL_MAPPING_NAMES["opt"]
    module = importlib.import_module("transformers.models.opt.modeling_opt")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == classes  # every head class is counted: none refused
    assert not table.unsupported_classes
    full = T.OPTConfig().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(COMMON_KEYS)
    assert set(full) - known == set()


#: the released checkpoints' shapes, as their config.json on the Hugging Face Hub gives them (facebook/opt-*)
FILES = {
    "opt-125m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, ffn_dim=3072),
    "opt-350m": dict(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        ffn_dim=4096,
        word_embed_proj_dim=512,
        do_layer_norm_before=False,
    ),
    "opt-1.3b": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32, ffn_dim=8192),
    "opt-66b": dict(hidden_size=9216, num_hidden_layers=64, num_attention_heads=72, ffn_dim=36864),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", FILES)
@pytest.mark.parametrize("model_class", ["OPTModel", "OPTForCausalLM"])
def test_published_shapes_via_hf_config(T, host, tmp_path, capsys, model_id, model_class):
    path, config = _config_file(T, tmp_path, FILES[model_id])
    assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["architecture"] == "opt"
    assert report["params"]["total"] == n_params(build_model(model_class, config))


#: one value per key the table reads (the sweep), each changed alone on a small base file
BASE = dict(
    vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, ffn_dim=80, max_position_embeddings=24
)
SWEEP = dict(
    vocab_size=101,
    hidden_size=60,
    num_hidden_layers=1,
    ffn_dim=64,
    max_position_embeddings=40,
    do_layer_norm_before=False,
    _remove_final_layer_norm=True,
    word_embed_proj_dim=20,
    num_attention_heads=6,
    activation_function="gelu",
    enable_bias=False,
    layer_norm_elementwise_affine=False,
    tie_word_embeddings=False,
    pad_token_id=None,
    num_labels=5,
)


@pytest.mark.reference
def test_the_sweep_covers_every_key_the_table_reads(host):
    assert set(SWEEP) == set(table_of(host, "opt").read)


@pytest.mark.reference
@pytest.mark.parametrize("key", ["(base)", *SWEEP, "(all at once)"])
def test_each_key_against_transformers(T, host, tmp_path, key):
    data = {"model_type": "opt", **BASE}
    if key == "(all at once)":
        data.update({k: v for k, v in SWEEP.items() if k != "_remove_final_layer_norm"})
    elif key != "(base)":
        data[key] = SWEEP[key]
    path = write_json(tmp_path, data)
    classes = ["OPTModel", "OPTForCausalLM"]
    if key in ("(base)", "word_embed_proj_dim", "num_labels", "(all at once)"):  # the heads read both
        classes += ["OPTForSequenceClassification", "OPTForQuestionAnswering"]
    for model_class in classes:
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 9)
        assert (report.params, report.flops) == config_json_figures(T, path, model_class, 9), (data, model_class)
        assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key the table ignores, changed at once: transformers' figures still equal archzoo's."""
    changed = dict(
        dropout=0.3,
        attention_dropout=0.2,
        activation_dropout=0.1,
        layerdrop=0.4,
        init_std=0.5,
        use_cache=False,
        bos_token_id=5,
        eos_token_id=6,
    )
    assert set(changed) == set(table_of(host, "opt").ignored)
    path = write_json(tmp_path, {"model_type": "opt", **BASE, **changed})
    for model_class in ("OPTModel", "OPTForCausalLM"):
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 9)
        assert (report.params, report.flops) == config_json_figures(T, path, model_class, 9)


def test_every_key_of_a_released_file_is_accounted_for(host, tmp_path):
    """facebook/opt-350m's config.json as the Hub serves it (transformers 4.21 wrote it), read key by key."""
    data = {
        "_name_or_path": "facebook/opt-350m",
        "activation_dropout": 0.0,
        "activation_function": "relu",
        "architectures": ["OPTForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 2,
        "do_layer_norm_before": False,
        "dropout": 0.1,
        "eos_token_id": 2,
        "ffn_dim": 4096,
        "hidden_size": 1024,
        "init_std": 0.02,
        "layerdrop": 0.0,
        "max_position_embeddings": 2048,
        "model_type": "opt",
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "pad_token_id": 1,
        "prefix": "</s>",
        "torch_dtype": "float16",
        "transformers_version": "4.20.0.dev0",
        "use_cache": True,
        "vocab_size": 50272,
        "word_embed_proj_dim": 512,
    }
    reading = load_hf_config(write_json(tmp_path, data), host, hf_class="auto")
    assert reading.model_class == "OPTForCausalLM"
    config = reading.config
    assert (config.d_embed, config.pre_norm, config.final_norm, config.d_ff) == (512, False, None, 4096)
    assert make_report(reading.architecture, config).params == PUBLISHED["opt-350m"][1]


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (  # transformers 5.23 has no such class
            {"model_type": "opt"},
            "OPTForTokenClassification",
            "--hf-class: 'OPTForTokenClassification' is not a opt model class archzoo counts; did you mean "
            "'OPTForSequenceClassification'? supported: OPTModel, OPTForCausalLM, OPTForSequenceClassification, "
            "OPTForQuestionAnswering",
        ),
        (
            {"model_type": "opt", "vocab_size": 1},
            None,
            "{path}: pad_token_id: 1 is outside the vocabulary of 1 tokens, and transformers' token embedding "
            "refuses such a padding index; set pad_token_id to null or to a token id",
        ),
        (
            {"model_type": "opt", "hidden_size": 100, "num_attention_heads": 12},
            None,
            "{path}: num_attention_heads, read as n_heads: d_model 100 is not divisible by n_heads 12; choose a "
            "divisor of d_model",
        ),
        (
            {"model_type": "opt", "activation_function": "mish"},
            None,
            "{path}: activation_function, read as activation: unknown activation 'mish'; expected one of gelu, "
            "gelu_new, gelu_pytorch_tanh, relu, silu, swish, tanh, quick_gelu",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    assert_config_json_refused(host, tmp_path, data, hf_class, message)


# ---- archzoo verify: the block mapping ---------------------------------------------------------------------

VERIFY_CASES = {
    "pre-ln": (dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=80), "OPTForCausalLM"),
    "post-ln-projected": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=80, d_embed=16, pre_norm=False),
        "OPTForCausalLM",
    ),
    "base-no-bias-no-affine-untied": (
        dict(
            vocab_size=97,
            d_model=48,
            n_layers=2,
            n_heads=4,
            d_ff=80,
            bias=False,
            norm_affine=False,
            tie_embeddings=False,
            head="none",
            d_embed=24,
        ),
        "OPTModel",
    ),
    "removed-final-norm-untied": (
        dict(vocab_size=97, d_model=48, n_layers=1, n_heads=4, d_ff=80, final_norm=False, tie_embeddings=False),
        "OPTForCausalLM",
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    config, model_class = VERIFY_CASES[case]
    verification = assert_verify_maps_every_block(host, tmp_path, "opt", config, model_class)
    assert not verification.unmapped or all(within for _, within in verification.unmapped), verification.unmapped


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    from archzoo.testing import check_plugin

    assert check_plugin("opt") == []


# ---- activation memory: what autograd saves for backward ---------------------------------------------------


#: (dtype, attention, recompute, device): fused attention is SDPA's flash kernel, which the CPU runs
def _activation_config(seed: int) -> dict[str, Any]:
    """A small random OPT: ReLU (OPT's own) or a GELU, pre- or post-LN, with or without biases and affine norms,
    embeddings narrower than the model (project_in and project_out, as OPT-350M's) or not, the base model or the
    causal LM."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), max_positions=32, d_model=heads * rng.choice([4, 6]),
        n_layers=rng.choice([1, 2, 3]), n_heads=heads, d_ff=rng.choice([24, 40]),
        activation=rng.choice(["relu", "relu", "gelu", "gelu_new"]), pre_norm=rng.choice([True, False]),
        bias=rng.choice([True, False]), norm_affine=rng.choice([True, False]), head=rng.choice(["lm", "none"]),
        d_embed=rng.choice([None, 8]),
    )  # fmt: skip


# seeds 6, 3, 14: a post-LN projected ReLU LM; a pre-LN ReLU LM; a projected GELU base model
@pytest.mark.parametrize("case", activation_cases((6, 3, 14)))
def test_activation_formula_is_what_autograd_saves(case):
    """The opt plugin's activation formula (archzoo_opt.activation) against torch's saved-tensor hooks on
    transformers' OPT classes, in total and block by block."""
    config = _activation_config(case[0])
    assert_activation_case("opt", config, case, layers="decoder.layers", seq_len=5 + case[0])


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_korthikanti_plus_the_named_gap_is_the_exact_opt_layer(activation):
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    report = make_report(
        host_with("opt").architecture("opt"),
        parse_config(
            host_with("opt").architecture("opt"),
            dict(d_model=24, n_heads=4, n_layers=2, d_ff=40, activation=activation),
        ),
        11,
    )
    layer = activation_formula(report, dtype="bf16").per_copy["opt.layers.layer"]
    assert (korthikanti_layer_bytes(report) + total(t.bytes for t in korthikanti_gap(report)) - layer).is_zero()
    names = [t.name for t in korthikanti_gap(report)]
    assert ("ReLU output shared" in names) == (activation == "relu")


def test_activation_memory_of_a_class_the_formula_does_not_know_is_refused():
    from archzoo.memory import UnsupportedActivationMemory, activation_formula

    arch = host_with("opt").architecture("opt")
    report = make_report(
        arch, parse_config(arch, dict(d_model=16, n_heads=2, n_layers=1, d_ff=24, head="question_answering"))
    )
    with pytest.raises(
        UnsupportedActivationMemory, match=r"^opt: this configuration is built by transformers\.OPTForQuestionAnswering"
    ):
        activation_formula(report)
