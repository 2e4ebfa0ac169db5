"""The olmo2 architecture (the llama plugin's OLMo 2) against transformers' Olmo2 classes.

Every expected figure is transformers 5.23's: ``sum(p.numel() for p in model.parameters())`` of the class named
beside it, built on the meta device, and FLOPs as ``torch.utils.flop_counter.FlopCounterMode`` counts one eager
forward pass (archzoo.testing.assert_matches_reference). The published shapes are those of OLMo 2's model cards and
its official training configuration (registry/olmo2 names the sources); their config.json is the one
Olmo2Config writes for them. The config.json sweep changes one key the table reads at a time and counts the file with
`archzoo count --hf-config` as every class, against the class transformers builds from the same file (test_llama's
compare_config_json: exact, or refused by both).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import archzoo
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, build_model
from family_checks import write_json
from transformers_models import forward_flops, n_params

pytestmark = pytest.mark.sweep

#: transformers 5.23, Olmo2ForCausalLM(Olmo2Config(**OLMO2_7B)) on the meta device: OLMo 2 7B (allenai/OLMo-2-1124-7B,
#: whose card's table row prints 32 layers, hidden size 4096, 32 heads, 4096 context; the official configuration a
#: 100,352-row embedding and a combined SwiGLU width of 22,016)
OLMO2_7B_PARAMS = 7_298_617_344
OLMO2_7B = dict(
    vocab_size=100352,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    max_position_embeddings=4096,
    pad_token_id=None,
)
#: allenai/OLMo-2-1124-13B: 40 layers, hidden size 5120, 40 heads (card), combined SwiGLU width 27,648 (configuration)
OLMO2_13B = dict(
    OLMO2_7B,
    hidden_size=5120,
    intermediate_size=13824,
    num_hidden_layers=40,
    num_attention_heads=40,
    num_key_value_heads=40,
)

HEADS = ("lm", "none", "sequence_classification")
SUFFIX = {"lm": "ForCausalLM", "none": "Model", "sequence_classification": "ForSequenceClassification"}


def count(**config: Any):
    return archzoo.count("olmo2", **config)


def test_defaults_are_olmo2_7b(host):
    assert count().params == OLMO2_7B_PARAMS


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
def test_olmo2_7b_figure_is_transformers_own(T, host):
    assert n_params(build_model("Olmo2ForCausalLM", T.Olmo2Config(**OLMO2_7B))) == OLMO2_7B_PARAMS
    assert_matches_reference("olmo2", {}, seq_lens=(1, 9))
    assert_blocks_match_modules("olmo2", {})


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
@pytest.mark.parametrize("shape", [OLMO2_7B, OLMO2_13B], ids=["7b", "13b"])
def test_published_shapes_via_the_file_olmo2_config_writes(T, host, tmp_path, shape):
    config = T.Olmo2Config(**shape)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_dict()))
    for model_class in ("Olmo2Model", "Olmo2ForCausalLM", "Olmo2ForSequenceClassification"):
        reading = load_hf_config(path, host, hf_class=model_class)
        assert reading.architecture.name == "olmo2"
        model = build_model(model_class, T.AutoConfig.from_pretrained(str(path)))
        report = make_report(reading.architecture, reading.config, 8)
        assert (report.params, report.flops) == (n_params(model), forward_flops(model, 8)), model_class


def _random_config(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([1, 2, 4, 6])
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(40, 200),
        n_layers=rng.randint(1, 3),
        n_heads=heads,
        n_kv_heads=rng.choice([k for k in range(1, heads + 1) if heads % k == 0]),
        d_ff=rng.randint(4, 64),
        tie_embeddings=rng.random() < 0.5,
        qkv_bias=(bias := rng.random() < 0.4),
        out_bias=bias,  # attention_bias sets q, k, v and o together
        activation=rng.choice(["silu", "gelu_pytorch_tanh", "relu"]),
        max_positions=64,
        head=rng.choice(HEADS),
        num_labels=rng.randint(1, 5),
    )
    if rng.random() < 0.5:  # a head width that is not d_model / n_heads: a plain attribute Olmo2Attention reads
        config.update(d_model=8 * rng.randint(2, 5), d_head=2 * rng.randint(1, 6))
    else:
        config["d_model"] = heads * 2 * rng.randint(1, 5)
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(10)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_against_transformers(T, host, config):
    ref = host.architecture("olmo2").reference(count(**config).config)
    assert ref.target == f"transformers.Olmo2{SUFFIX[config['head']]}"
    assert_matches_reference("olmo2", config, seq_lens=(1, 7))
    assert_blocks_match_modules("olmo2", config)


def test_the_norms_follow_attention_and_the_feed_forward_and_the_qk_norm_spans_the_projections(host):
    report = count(d_model=64, n_heads=4, n_kv_heads=2, n_layers=1, d_ff=32, vocab_size=50)
    layer = report.root.children[1].children[0]
    assert [c.name for c in layer.children] == ["attention", "attention_norm", "mlp", "mlp_norm"]
    attention = {c.name: c for c in layer.children[0].children}
    # Olmo2Attention: q_norm = RMSNorm(num_heads * head_dim), k_norm = RMSNorm(num_key_value_heads * head_dim)
    assert (attention["q_norm"].params.evaluate(), attention["k_norm"].params.evaluate()) == (64, 32)


@pytest.mark.reference
def test_kv_cache_equals_what_transformers_caches(T, host):
    import torch

    report = count(vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=40)
    ref = report.architecture.reference(report.config)
    model = build_model("Olmo2ForCausalLM", T.Olmo2Config(**ref.kwargs), device="cpu")
    with torch.no_grad():
        out = model(torch.zeros(1, 5, dtype=torch.long), use_cache=True)
    cached = sum(layer.keys.numel() + layer.values.numel() for layer in out.past_key_values.layers)
    assert report.kv_cache_elements_per_token * 5 == cached


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    import dataclasses

    from archzoo.hf_config import COMMON_KEYS

    table = hf_table(host.hf_readers()["olmo2"].reader)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {
        f.name: f.default for f in dataclasses.fields(T.Olmo2Config) if f.name not in common
    }
    from transformers.models.olmo2 import modeling_olmo2

    heads = {n for n in modeling_olmo2.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == heads
    known = (*table.read, *table.ignored, *table.refused, *table.aliases, *COMMON_KEYS)
    assert [k for k in T.Olmo2Config().to_dict() if k not in known] == []


@pytest.mark.reference
def test_random_files_against_transformers(T, host, tmp_path):
    rng = random.Random("olmo2")
    for _ in range(4):
        heads = rng.choice([2, 4])
        data: dict[str, Any] = dict(
            model_type="olmo2",
            vocab_size=rng.randint(40, 120),
            hidden_size=heads * 2 * rng.randint(2, 4),
            num_attention_heads=heads,
            num_key_value_heads=rng.choice([None, 1, heads]),
            num_hidden_layers=rng.randint(1, 3),
            intermediate_size=rng.randint(8, 40),
            tie_word_embeddings=rng.random() < 0.5,
            attention_bias=rng.random() < 0.5,
            max_position_embeddings=32,
            pad_token_id=None,
            rms_norm_eps=1e-3,  # ignored: it must leave transformers' figures where archzoo counts them
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3},
        )
        if rng.random() < 0.5:
            data["head_dim"] = 2 * rng.randint(2, 5)
        path = write_json(tmp_path, data)
        config = T.AutoConfig.from_pretrained(str(path))
        for model_class in ("Olmo2Model", "Olmo2ForCausalLM"):
            reading = load_hf_config(path, host, hf_class=model_class)
            model = build_model(model_class, config)
            report = make_report(reading.architecture, reading.config, 6)
            assert (report.params, report.flops) == (n_params(model), forward_flops(model, 6)), (data, model_class)


def test_a_null_head_dim_is_refused(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "olmo2", "head_dim": None})
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host)
    assert str(info.value) == (
        f"{path}: head_dim: null, which Olmo2Config's attention multiplies by the number of heads (transformers "
        "fails); remove the key for hidden_size // num_attention_heads, or give the width"
    )


# ---- config.json key by key: every key the olmo2 table reads, against transformers --------------------------------

from test_llama import (  # noqa: E402
    assert_sweep_covers_the_table,
    compare_config_json,
    mixed_sweep_cases,
    sweep_case_ids,
    sweep_cases,
)

BASE = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=40,
    max_position_embeddings=24,
    pad_token_id=None,
)
#: one value per key the table reads, changed alone; every one is a file transformers builds and runs
SWEEPS: dict[str, dict[str, Any]] = {
    "olmo2": dict(
        vocab_size=101,
        hidden_size=64,
        intermediate_size=33,
        num_hidden_layers=3,
        num_attention_heads=6,  # the base's 2 key/value heads serve 3 query heads each
        num_key_value_heads=1,
        head_dim=10,  # a plain attribute Olmo2Attention reads: the query and key norms span 4 x 10 and 2 x 10
        hidden_act="gelu_pytorch_tanh",
        max_position_embeddings=64,
        attention_bias=True,
        tie_word_embeddings=True,
        pad_token_id=3,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
        num_labels=5,
    )
}
#: (change, what transformers 5.23 does with the file: "exact" where it runs it, "refused" where it cannot)
EDGES = [
    (dict(num_key_value_heads=None), "exact"),  # one key/value head per query head
    (dict(head_dim=None), "refused"),  # multiplied by the number of heads
    (dict(hidden_size=50), "exact"),  # heads of 50 // 4 = 12, rounded down as transformers does
    (dict(num_attention_heads=5), "refused"),  # 2 key/value heads cannot serve 5 query heads
    (dict(rope_parameters={"rope_type": "spiral"}), "refused"),
    (dict(pad_token_id=97), "refused"),  # outside the vocabulary
]
IGNORED = dict(
    attention_dropout=0.3, initializer_range=0.5, rms_norm_eps=1e-3, use_cache=False, bos_token_id=5, eos_token_id=6
)


def _classes(host) -> list[str]:
    return list(hf_table(host.hf_readers()["olmo2"].reader).classes)


@pytest.mark.reference
def test_the_sweep_covers_every_key(host):
    assert_sweep_covers_the_table(host, "olmo2", SWEEPS["olmo2"])


@pytest.mark.reference
@pytest.mark.parametrize("change", sweep_cases(SWEEPS["olmo2"]), ids=sweep_case_ids(SWEEPS["olmo2"]))
def test_each_key_against_transformers(T, host, tmp_path, change):
    """`archzoo count --hf-config` of the base file with one key changed, as every Olmo2 class: transformers'
    parameters and forward FLOPs."""
    path = write_json(tmp_path, {"model_type": "olmo2", **BASE, **change})
    for model_class in _classes(host):
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


@pytest.mark.reference
@pytest.mark.parametrize("change, outcome", EDGES, ids=["-".join(f"{k}={v}" for k, v in c.items()) for c, _ in EDGES])
def test_edges_against_transformers(T, host, tmp_path, change, outcome):
    path = write_json(tmp_path, {"model_type": "olmo2", **BASE, **change})
    for model_class in ("Olmo2Model", "Olmo2ForSequenceClassification"):
        assert compare_config_json(T, host, path, model_class) == outcome, model_class


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """The norms' epsilon (OLMo 2's QK-norms' too) and the rest of what the table ignores, changed at once."""
    assert set(IGNORED) == set(hf_table(host.hf_readers()["olmo2"].reader).ignored)
    path = write_json(tmp_path, {"model_type": "olmo2", **BASE, **IGNORED})
    for model_class in _classes(host):
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


@pytest.mark.reference
def test_random_combinations_of_the_sweep(T, host, tmp_path):
    """Exact, or refused by both, on files that change several keys at once."""
    outcomes = [
        compare_config_json(T, host, write_json(tmp_path, data), model_class)
        for data, model_class in mixed_sweep_cases("olmo2", BASE, SWEEPS["olmo2"], _classes(host))
    ]
    assert "exact" in outcomes, outcomes  # not only refusals
