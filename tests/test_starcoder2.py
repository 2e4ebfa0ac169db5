"""The starcoder2 plugin against transformers: defaults, random small configurations over every option,
config.json files key by key, every head class, the KV cache.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Starcoder2 class transformers 5.23
builds (on the meta device, or on the CPU where values are needed), what
``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of batch 1, or the elements
transformers' cache holds. The plugin's own checks go through archzoo's kit for plugin authors (`archzoo.testing`).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
from pathlib import Path

import pytest

from archzoo.architecture import parse_config
from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import COMMON_KEYS, hf_table, load_hf_config
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, check_plugin
from transformers_models import build_model as hf_model
from transformers_models import config_json_figures, forward_flops, host_with, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "Starcoder2ForCausalLM",
    "none": "Starcoder2Model",
    "sequence_classification": "Starcoder2ForSequenceClassification",
    "token_classification": "Starcoder2ForTokenClassification",
}


@pytest.fixture(scope="module")
def host():
    return host_with("starcoder2")


def count(host, n: int | None = None, **config):
    arch = host.architecture("starcoder2")
    return make_report(arch, parse_config(arch, config), n)


def _write(tmp_path: Path, data: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    assert check_plugin("starcoder2") == []


@pytest.mark.reference
def test_defaults_are_transformers_defaults(T, host):
    """The configuration's defaults are Starcoder2Config's: the same parameters and FLOPs."""
    model = hf_model(T, "Starcoder2ForCausalLM", T.Starcoder2Config())
    assert count(host).params == n_params(model)
    for n in (1, 8):
        assert count(host, n).flops == forward_flops(model, n), n


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(vocab_size=301, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_ff=96, head=head, num_labels=3)
    report = count(host, **config)
    ref = host.architecture("starcoder2").reference(report.config)
    assert ref.target == f"transformers.{CLASSES[head]}"
    model = hf_model(T, CLASSES[head], T.Starcoder2Config(**ref.kwargs))
    assert report.params == n_params(model)
    for n in (3, 32):
        assert count(host, n, **config).flops == forward_flops(model, n), n


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4, 6])
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in (1, 2, 3, n_heads) if n_heads % k == 0]),
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu_pytorch_tanh", "relu", "silu", "gelu_new"]),
        bias=rng.random() < 0.6,
        tie_embeddings=rng.random() < 0.6,
        head=rng.choice(list(CLASSES)),
        num_labels=rng.randint(1, 5),
    )
    if rng.random() < 0.3:
        config["d_head"] = 2 * rng.randint(1, 8)
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(12)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    arch = host.architecture("starcoder2")
    assert_blocks_match_modules(arch, config)
    assert_matches_reference(arch, config, seq_lens=(1, 7, 16))


@pytest.mark.reference
def test_kv_cache_equals_what_transformers_caches(T, host):
    """The elements transformers' DynamicCache holds after one forward pass on the CPU (no sliding window)."""
    import torch

    report = count(host, vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=16)
    ref = host.architecture("starcoder2").reference(report.config)
    model = hf_model(T, "Starcoder2ForCausalLM", T.Starcoder2Config(**ref.kwargs), device="cpu")
    tokens = 5
    with torch.no_grad():
        cache = model(input_ids=torch.ones(1, tokens, dtype=torch.long), use_cache=True).past_key_values
    held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
    assert report.kv_cache_elements_per_token * tokens == held


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(n_heads=8, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3"),
        (dict(d_model=48, n_heads=16, n_kv_heads=2), r"n_heads: rotary positions turn pairs of channels"),
        # the width comes from d_model too: the error names both keys (a --set of d_model must see its key)
        (dict(d_model=24, n_heads=24, n_kv_heads=2), r"got 1 \(d_model 24 / n_heads 24\)"),
        (dict(d_model=4, n_heads=8, n_kv_heads=2), r"n_heads: d_model 4 leaves each of 8 heads 0 wide"),
        (dict(activation="prelu"), r"activation: "),
    ],
)
def test_what_transformers_cannot_run_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(host, **config)


# ---- Hugging Face config.json: every key accounted for --------------------------------------------------


def _table(host):
    return hf_table(host.hf_readers()["starcoder2"].reader)


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, AutoModel's class, every model class; every key of a saved config known."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = _table(host)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(T.Starcoder2Config) if f.name not in common}
    assert dict(table.defaults) == fields
    assert table.base_class == MODEL_MAPPING_NAMES["starcoder2"]
    module = importlib.import_module("transformers.models.starcoder2.modeling_starcoder2")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == classes  # every head class is counted: none refused
    full = T.Starcoder2Config().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) - known == set()


BASE = dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
BASE |= dict(intermediate_size=40)
#: one value per key the table reads, each changed alone
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=1,
    num_attention_heads=8,
    num_key_value_heads=1,
    head_dim=10,
    hidden_act="relu",
    max_position_embeddings=64,
    use_bias=False,
    tie_word_embeddings=False,
    pad_token_id=3,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
    num_labels=5,
)


@pytest.mark.reference
def test_the_sweep_covers_every_key(host):
    assert set(SWEEP) == set(_table(host).read)


@pytest.mark.reference
@pytest.mark.parametrize("change", [{}, *({k: v} for k, v in SWEEP.items())], ids=["(base)", *SWEEP])
def test_each_key_against_transformers(T, host, tmp_path, change):
    path = _write(tmp_path, {"model_type": "starcoder2", **BASE, **change})
    classes = ["Starcoder2Model", "Starcoder2ForCausalLM"]
    if "num_labels" in change:
        classes = list(CLASSES.values())[2:]
    for model_class in classes:
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 9)
        assert (report.params, report.flops) == config_json_figures(T, path, model_class, 9), (change, model_class)
        assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key archzoo ignores, changed at once (a sliding window among them): transformers' figures still equal
    archzoo's."""
    changed = dict(
        attention_dropout=0.3,
        residual_dropout=0.2,
        embedding_dropout=0.1,
        classifier_dropout=0.4,
        initializer_range=0.5,
        norm_epsilon=1e-3,
        use_cache=False,
        bos_token_id=5,
        eos_token_id=6,
        sliding_window=4,
    )
    assert set(changed) == set(_table(host).ignored)
    path = _write(tmp_path, {"model_type": "starcoder2", **BASE, **changed})
    for model_class in CLASSES.values():
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 9)
        assert (report.params, report.flops) == config_json_figures(T, path, model_class, 9), model_class


def test_a_rotary_type_transformers_does_not_build_is_refused(host, tmp_path):
    path = _write(tmp_path, {"model_type": "starcoder2", **BASE, "rope_parameters": {"rope_type": "spiral"}})
    with pytest.raises(HFConfigError, match=r"rope_type \"spiral\" is not one transformers' Starcoder2Config accepts"):
        load_hf_config(path, host)
