"""The bloom plugin against transformers: published configurations, random small ones, config.json files, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of ``BloomModel`` or ``BloomForCausalLM``
(transformers 5.23) built on the meta device, or what ``torch.utils.flop_counter.FlopCounterMode`` reports for one
eager forward pass of batch 1. The six published shapes are pinned as literals (measured with transformers 5.23,
``BloomForCausalLM`` on the meta device; they are also the figures BigScience's model cards print) and rebuilt from
transformers in the same test. The tests use the installed plugin host, and skip only when the bloom plugin is not
installed.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random

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
    assert_config_json_matches,
    assert_config_json_refused,
    assert_random_config_matches,
    assert_verify_maps_every_block,
    counter,
    table_of,
    write_json,
)
from transformers_models import config_json_figures, forward_flops, host_with, n_params

pytestmark = pytest.mark.sweep


count = counter("bloom")


# ---- published configurations -----------------------------------------------------------------------------

#: the shapes BigScience's model cards print (bigscience/bloom-*: layers, heads, hidden width), with the
#: 250,880-row embedding of every released checkpoint;
#: (archzoo config, parameters of BloomForCausalLM: transformers 5.23 on the meta device)
PUBLISHED = {
    "bloom-560m": (dict(d_model=1024, n_layers=24, n_heads=16), 559_214_592),
    "bloom-1b1": (dict(d_model=1536, n_layers=24, n_heads=16), 1_065_314_304),
    "bloom-1b7": (dict(d_model=2048, n_layers=24, n_heads=16), 1_722_408_960),
    "bloom-3b": (dict(d_model=2560, n_layers=30, n_heads=32), 3_002_557_440),
    "bloom-7b1": (dict(d_model=4096, n_layers=30, n_heads=32), 7_069_016_064),
    "bloom-176b": (dict(d_model=14336, n_layers=70, n_heads=112), 176_247_271_424),
}


def _bloom_kwargs(config: dict) -> dict:
    return dict(hidden_size=config["d_model"], n_layer=config["n_layers"], n_head=config["n_heads"])


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_bloom_counts(host, model_id):
    config, expected = PUBLISHED[model_id]
    assert count(**config).params == expected


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_bloom_figures_are_transformers_own(T, model_id):
    config, expected = PUBLISHED[model_id]
    assert n_params(build_model("BloomForCausalLM", T.BloomConfig(**_bloom_kwargs(config)))) == expected


@pytest.mark.reference
def test_published_shape_flops_at_several_lengths(T, host):
    """BLOOM-560m, whole, at a few lengths (the meta device makes this cheap)."""
    config, _ = PUBLISHED["bloom-560m"]
    model = build_model("BloomForCausalLM", T.BloomConfig(**_bloom_kwargs(config)))
    for n in (1, 5, 64):
        assert count(n, **config).flops == forward_flops(model, n), n


# ---- random small configurations: parameters and FLOPs -----------------------------------------------------


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 3, 4, 6])
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * rng.randint(1, 10),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        tie_embeddings=rng.random() < 0.7,
        head=rng.choice(["lm", "lm", "none"]),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(16)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    """Block by block against the reference's submodules, and in total (parameters, FLOPs at 1, 7 and 16)."""
    assert_random_config_matches(host, "bloom", config)


def test_heads_must_divide_the_width(host):
    with pytest.raises(ConfigError, match=r"n_heads: d_model 100 is not divisible by n_heads 16"):
        count(d_model=100)


def test_alibi_has_no_position_parameters(host):
    embeddings = [path for path, _, block in count().root.walk() if block.kind == "embedding"]
    assert embeddings == ["bloom.token"]


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, aliases (attribute_map and n_embed), AutoModel's class, every model class."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, "bloom")
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(T.BloomConfig) if f.name not in common}
    assert dict(table.defaults) == fields
    assert dict(table.aliases) == {**T.BloomConfig.attribute_map, "n_embed": "hidden_size"}
    assert table.base_class == MODEL_MAPPING_NAMES["bloom"]
    module = importlib.import_module("transformers.models.bloom.modeling_bloom")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == classes  # every head class is counted: none refused
    assert not table.unsupported_classes
    full = T.BloomConfig().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) - known == set()


BASE = dict(vocab_size=97, hidden_size=48, n_layer=2, n_head=4)
#: one value per key the table reads, each changed alone; then each alias, alone and beside its native key
SWEEP = dict(vocab_size=101, hidden_size=60, n_layer=1, n_head=6, tie_word_embeddings=False, num_labels=5)
ALIASES = dict(num_hidden_layers=3, num_attention_heads=2, n_embed=36)


@pytest.mark.reference
def test_the_sweep_covers_every_key_and_alias(host):
    table = table_of(host, "bloom")
    assert set(SWEEP) == set(table.read) and set(ALIASES) == set(table.aliases)


@pytest.mark.reference
@pytest.mark.parametrize(
    "change",
    [{}, *({k: v} for k, v in SWEEP.items()), *({k: v} for k, v in ALIASES.items()), SWEEP, ALIASES],
    ids=["(base)", *SWEEP, *(f"alias-{k}" for k in ALIASES), "(all keys)", "(all aliases)"],
)
def test_each_key_against_transformers(T, host, tmp_path, change):
    path = write_json(tmp_path, {"model_type": "bloom", **BASE, **change})
    classes = ["BloomModel", "BloomForCausalLM"]
    if "num_labels" in change:
        classes = ["BloomForSequenceClassification", "BloomForTokenClassification"]
    assert_config_json_matches(T, host, path, classes, label=change)


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key BloomConfig has that archzoo ignores, changed at once (slow_but_exact with pretraining_tp 3 slices
    the down-projections): transformers' figures still equal archzoo's."""
    changed = dict(
        layer_norm_epsilon=1e-3,
        initializer_range=0.5,
        use_cache=False,
        bos_token_id=5,
        eos_token_id=6,
        pad_token_id=7,
        apply_residual_connection_post_layernorm=True,
        hidden_dropout=0.2,
        attention_dropout=0.3,
        pretraining_tp=3,
        slow_but_exact=True,
    )
    assert set(changed) <= set(table_of(host, "bloom").ignored)
    path = write_json(tmp_path, {"model_type": "bloom", **BASE, **changed})
    for model_class in ("BloomModel", "BloomForCausalLM"):
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 9)
        assert (report.params, report.flops) == config_json_figures(T, path, model_class, 9)


@pytest.mark.reference
def test_a_released_file_is_read_key_by_key(T, host, tmp_path, capsys):
    """bigscience/bloom's config.json as the Hub serves it (Megatron settings, n_embed and num_attention_heads)."""
    data = {
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["BloomForCausalLM"],
        "attention_dropout": 0.0,
        "attention_softmax_in_fp32": True,
        "bias_dropout_fusion": True,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_dropout": 0.0,
        "hidden_size": 14336,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "masked_softmax_fusion": True,
        "model_type": "bloom",
        "n_embed": 14336,
        "n_layer": 70,
        "num_attention_heads": 112,
        "offset_alibi": 100,
        "pad_token_id": 3,
        "pretraining_tp": 4,
        "skip_bias_add": True,
        "skip_bias_add_qkv": False,
        "slow_but_exact": False,
        "transformers_version": "4.21.0",
        "unk_token_id": 0,
        "use_cache": True,
        "vocab_size": 250880,
    }
    path = write_json(tmp_path, data)
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["total"] == PUBLISHED["bloom-176b"][1]
    config = T.AutoConfig.from_pretrained(str(path))
    assert n_params(build_model("BloomForCausalLM", config)) == PUBLISHED["bloom-176b"][1]


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (  # transformers 5.23 has no such class
            {"model_type": "bloom"},
            "BloomForMultipleChoice",
            "--hf-class: 'BloomForMultipleChoice' is not a bloom model class archzoo counts; did you mean "
            "'BloomForQuestionAnswering'? supported: BloomModel, BloomForCausalLM, BloomForSequenceClassification, "
            "BloomForTokenClassification, BloomForQuestionAnswering",
        ),
        (
            {"model_type": "bloom", "hidden_size": 100, "n_head": 16},
            None,
            "{path}: n_head, read as n_heads: d_model 100 is not divisible by n_heads 16; choose a divisor of d_model",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    assert_config_json_refused(host, tmp_path, data, hf_class, message)


# ---- archzoo verify: the block mapping ---------------------------------------------------------------------

VERIFY_CASES = {
    "causal-lm": (dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4), "BloomForCausalLM"),
    "causal-lm-untied": (
        dict(vocab_size=97, d_model=48, n_layers=1, n_heads=4, tie_embeddings=False),
        "BloomForCausalLM",
    ),
    "base": (dict(vocab_size=97, d_model=48, n_layers=2, n_heads=6, head="none"), "BloomModel"),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    config, model_class = VERIFY_CASES[case]
    assert_verify_maps_every_block(host, tmp_path, "bloom", config, model_class)


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    from archzoo.testing import check_plugin

    assert check_plugin("bloom") == []


# ---- activation memory: what autograd saves for backward ---------------------------------------------------


#: (dtype, attention, recompute, device); BloomAttention has no SDPA path: asked for it, transformers runs eager
def _activation_config(seed: int) -> dict:
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * rng.choice([4, 6]), n_layers=rng.choice([1, 2, 3]),
        n_heads=heads, head=rng.choice(["lm", "none"]),
    )  # fmt: skip


@pytest.mark.parametrize("case", activation_cases((1, 2, 3)))
def test_activation_formula_is_what_autograd_saves(case):
    """The bloom plugin's activation formula (archzoo_bloom.activation) against torch's saved-tensor hooks on
    transformers' BLOOM classes, in total and block by block."""
    assert_activation_case("bloom", _activation_config(case[0]), case, base="transformer.", layers="h")


def test_korthikanti_plus_the_named_gap_is_the_exact_bloom_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    arch = host_with("bloom").architecture("bloom")
    report = make_report(arch, parse_config(arch, dict(d_model=24, n_heads=4, n_layers=2)), 11)
    layer = activation_formula(report, dtype="bf16").per_copy["bloom.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # the fused QKV output held whole: 6 bytes a token and channel for Q, 2 + 2 for the copies of K and V
    assert gap["fused QKV output held"].evaluate(N=11) == (6 + 2 + 2 - 3 * 2) * 11 * 24
