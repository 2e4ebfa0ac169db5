"""The qwen3 architecture (the llama plugin's Qwen3 and Qwen3-MoE) against transformers' Qwen3 and Qwen3Moe classes.

Every expected figure is transformers 5.23's: ``sum(p.numel() for p in model.parameters())`` of the class named
beside it, built on the meta device, and FLOPs as ``torch.utils.flop_counter.FlopCounterMode`` counts one eager
forward pass (archzoo.testing.assert_matches_reference; a mixture of experts on the CPU with random weights, since
routing reads the router's scores). Active parameters are the total less the experts one token does not use, read
off the model's fused ``mlp.experts`` tensors (``E - k`` of their ``E`` slices per layer). The published files are
the copies in tests/data/hf_published (SOURCES-llama.md says where each was taken). The config.json sweeps change
one key each table reads at a time and count the file with `archzoo count --hf-config` as every class, against the
class transformers builds from the same file (test_llama's compare_config_json: exact, or refused by both).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import archzoo
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.registry import load_registry
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, build_model
from family_checks import write_json
from transformers_models import forward_flops, n_params, unused_expert_params

pytestmark = pytest.mark.sweep

CORPUS = Path(__file__).resolve().parent / "data" / "hf_published"

#: transformers 5.23, Qwen3ForCausalLM built on the meta device from Qwen/Qwen3-8B's config.json (the corpus copy):
#: Qwen3-8B, whose model card prints "Number of Parameters: 8.2B"
QWEN3_8B_PARAMS = 8_190_735_360

HEADS = ("lm", "none", "sequence_classification", "token_classification", "question_answering")
SUFFIX = {
    "lm": "ForCausalLM",
    "none": "Model",
    "sequence_classification": "ForSequenceClassification",
    "token_classification": "ForTokenClassification",
    "question_answering": "ForQuestionAnswering",
}


def count(**config: Any):
    return archzoo.count("qwen3", **config)


# ---- the defaults and the published files ----------------------------------------------------------------------


def test_defaults_are_qwen3_8b(host):
    assert count().params == QWEN3_8B_PARAMS


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
def test_qwen3_8b_figure_is_transformers_own(T, host):
    config = T.AutoConfig.from_pretrained(str(CORPUS / "Qwen--Qwen3-8B.json"))
    assert n_params(build_model("Qwen3ForCausalLM", config)) == QWEN3_8B_PARAMS
    assert_matches_reference("qwen3", {}, seq_lens=(1, 9))


DENSE_FILES = ["Qwen--Qwen3-0.6B.json", "Qwen--Qwen3-1.7B.json", "Qwen--Qwen3-8B.json", "Qwen--Qwen3-32B.json"]
MOE_FILES = ["Qwen--Qwen3-30B-A3B.json", "Qwen--Qwen3-235B-A22B.json"]


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
@pytest.mark.parametrize("name", DENSE_FILES)
def test_published_dense_files_count_what_transformers_builds(T, host, name):
    path = CORPUS / name
    config = T.AutoConfig.from_pretrained(str(path))
    for model_class in ("Qwen3Model", "Qwen3ForCausalLM"):
        reading = load_hf_config(path, host, hf_class=model_class)
        assert reading.architecture.name == "qwen3"
        model = build_model(model_class, config)
        report = make_report(reading.architecture, reading.config, 8)
        assert (report.params, report.flops) == (n_params(model), forward_flops(model, 8)), model_class


@pytest.mark.reference
@pytest.mark.parametrize("name", MOE_FILES)
def test_published_moe_files_count_total_and_active_as_transformers_builds(T, host, name):
    """Parameters on the meta device (the FLOPs of these files are tests/test_hf_published.py's, on the CPU)."""
    path = CORPUS / name
    config = T.AutoConfig.from_pretrained(str(path))
    reading = load_hf_config(path, host, hf_class="Qwen3MoeForCausalLM")
    assert reading.architecture.name == "qwen3" and reading.config.n_experts == 128
    model = build_model("Qwen3MoeForCausalLM", config)
    report = make_report(reading.architecture, reading.config, 8)
    assert report.params == n_params(model)
    assert report.active_params == n_params(model) - unused_expert_params(model, config.num_experts_per_tok)


# ---- random configurations: every option, every head class ----------------------------------------------------


def _random_dense(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([1, 2, 4, 6])
    return dict(
        vocab_size=rng.randint(40, 200),
        d_model=rng.choice([16, 24, 32, 40]),  # the heads need not divide it: Qwen3 takes head_dim as given
        n_layers=rng.randint(1, 3),
        n_heads=heads,
        n_kv_heads=rng.choice([k for k in range(1, heads + 1) if heads % k == 0]),
        d_head=2 * rng.randint(1, 8),
        d_ff=rng.randint(4, 64),
        tie_embeddings=rng.random() < 0.5,
        qkv_bias=(bias := rng.random() < 0.4),
        out_bias=bias,  # Qwen3's attention_bias sets q, k, v and o together
        activation=rng.choice(["silu", "gelu_pytorch_tanh", "relu"]),
        max_positions=64,
        head=rng.choice(HEADS),
        num_labels=rng.randint(1, 5),
    )


DENSE_CONFIGS = [_random_dense(random.Random(seed)) for seed in range(10)]


@pytest.mark.reference
@pytest.mark.parametrize("config", DENSE_CONFIGS, ids=[f"seed{i}" for i in range(len(DENSE_CONFIGS))])
def test_random_dense_configs_against_transformers(T, host, config):
    ref = host.architecture("qwen3").reference(count(**config).config)
    assert ref.target == f"transformers.Qwen3{SUFFIX[config['head']]}"
    assert_matches_reference("qwen3", config, seq_lens=(1, 7))
    assert_blocks_match_modules("qwen3", config)


def _random_moe(rng: random.Random) -> dict[str, Any]:
    config = _random_dense(rng)
    n_experts = rng.randint(1, 6)
    layers = config["n_layers"] = rng.randint(1, 4)
    config.update(
        n_experts=n_experts,
        top_k=rng.randint(1, n_experts),
        d_ff_expert=rng.randint(4, 32),
        sparse_step=rng.randint(1, 3),
        dense_layers=tuple(sorted(rng.sample(range(layers), rng.randint(0, layers)))),
    )
    return config


MOE_CONFIGS = [_random_moe(random.Random(100 + seed)) for seed in range(8)]


@pytest.mark.reference
@pytest.mark.parametrize("config", MOE_CONFIGS, ids=[f"seed{i}" for i in range(len(MOE_CONFIGS))])
def test_random_moe_configs_against_transformers(T, host, config):
    report = count(**config)
    ref = report.architecture.reference(report.config)
    assert ref.target == f"transformers.Qwen3Moe{SUFFIX[config['head']]}" and ref.device == "cpu"
    assert_matches_reference("qwen3", config, seq_lens=(1, 7))
    model = build_model(ref.target.rpartition(".")[2], T.Qwen3MoeConfig(**ref.kwargs))
    assert report.active_params == n_params(model) - unused_expert_params(model, config["top_k"])


def test_layers_without_experts_form_their_own_run(host):
    report = count(n_layers=6, n_experts=8, top_k=2, d_ff_expert=32, sparse_step=2, dense_layers=(5,), d_ff=64)
    layers = report.root.children[1]
    assert layers.kind == "layer_runs"
    # Qwen3MoeDecoderLayer: experts where (i + 1) % 2 == 0 and i is not listed, so layers 1 and 3
    assert {c.name: c.positions for c in layers.children} == {"dense_layers": (0, 2, 4, 5), "moe_layers": (1, 3)}


def test_kv_cache_is_two_key_value_heads_of_d_head_per_layer(host):
    # the keys and values Qwen3's attention caches: num_key_value_heads * head_dim each, in every layer
    report = count()
    assert report.kv_cache_elements_per_token == 2 * 36 * 8 * 128


@pytest.mark.reference
def test_kv_cache_equals_what_transformers_caches(T, host):
    import torch

    config = dict(vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_head=12, d_ff=40)
    report = count(**config)
    ref = report.architecture.reference(report.config)
    model = build_model("Qwen3ForCausalLM", T.Qwen3Config(**ref.kwargs), device="cpu")
    with torch.no_grad():
        out = model(torch.zeros(1, 5, dtype=torch.long), use_cache=True)
    cached = sum(layer.keys.numel() + layer.values.numel() for layer in out.past_key_values.layers)
    assert report.kv_cache_elements_per_token * 5 == cached


# ---- config.json: the qwen3 and qwen3_moe tables ------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("model_type, config_class", [("qwen3", "Qwen3Config"), ("qwen3_moe", "Qwen3MoeConfig")])
def test_tables_equal_the_transformers_configuration_classes(T, host, model_type, config_class):
    import dataclasses
    import importlib

    from archzoo.hf_config import COMMON_KEYS

    table = hf_table(host.hf_readers()[model_type].reader)
    cls = getattr(T, config_class)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {f.name: f.default for f in dataclasses.fields(cls) if f.name not in common}
    module = importlib.import_module(cls.__module__.replace("configuration_", "modeling_"))
    heads = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == heads  # every head class is counted
    full = cls().to_dict()
    known = (*table.read, *table.ignored, *table.refused, *table.aliases, *COMMON_KEYS)
    assert [k for k in full if k not in known] == []


def _small_file(model_type: str, rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([2, 4])
    data: dict[str, Any] = dict(
        model_type=model_type,
        vocab_size=rng.randint(40, 120),
        hidden_size=8 * rng.randint(2, 4),
        num_attention_heads=heads,
        num_key_value_heads=rng.choice([1, heads]),
        num_hidden_layers=rng.randint(1, 4),
        intermediate_size=rng.randint(8, 40),
        tie_word_embeddings=rng.random() < 0.5,
        attention_bias=rng.random() < 0.5,
        max_position_embeddings=32,
        # keys archzoo ignores, changed: they must leave transformers' figures where archzoo counts them; and a
        # window of 4 tokens, shorter than the N the figures are compared at
        rms_norm_eps=1e-3,
        use_sliding_window=True,
        sliding_window=4,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3},
    )
    if rng.random() < 0.5:
        data["head_dim"] = 2 * rng.randint(2, 6)
    if model_type == "qwen3_moe":
        experts = rng.randint(2, 6)
        data.update(
            num_experts=experts,
            num_experts_per_tok=rng.randint(1, experts),
            moe_intermediate_size=rng.randint(4, 24),
            decoder_sparse_step=rng.choice([1, 2, -2]),
            mlp_only_layers=rng.choice([[], [0], [1, 9]]),
            norm_topk_prob=True,
        )
    else:
        data.update(max_window_layers=1, head_dim=data.get("head_dim", 8))
    return data


@pytest.mark.reference
@pytest.mark.parametrize("model_type", ["qwen3", "qwen3_moe"])
def test_random_files_against_transformers_on_the_cpu(T, host, tmp_path, model_type):
    import torch

    prefix = {"qwen3": "Qwen3", "qwen3_moe": "Qwen3Moe"}[model_type]
    rng = random.Random(model_type)
    for _ in range(3):
        data = _small_file(model_type, rng)
        path = write_json(tmp_path, data)
        config = T.AutoConfig.from_pretrained(str(path))
        for model_class in (f"{prefix}Model", f"{prefix}ForCausalLM"):
            reading = load_hf_config(path, host, hf_class=model_class)
            assert reading.architecture.name == "qwen3"
            model = build_model(model_class, config, device="cpu")
            n = 4 if reading.config.sliding_window else 6  # within the window where a layer masks by it
            with torch.no_grad():
                figures = (n_params(model), forward_flops(model, n, random_ids=True))
            report = make_report(reading.architecture, reading.config, n)
            assert (report.params, report.flops) == figures, (data, model_class)


@pytest.mark.reference
def test_a_qwen3_moe_file_without_experts_is_the_dense_qwen3(T, host, tmp_path):
    data = dict(
        model_type="qwen3_moe",
        vocab_size=50,
        hidden_size=16,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_hidden_layers=2,
        intermediate_size=24,
        num_experts=0,
        head_dim=8,
    )
    path = write_json(tmp_path, data)
    reading = load_hf_config(path, host, hf_class="Qwen3MoeForCausalLM")
    assert reading.config.n_experts == 0
    model = build_model("Qwen3MoeForCausalLM", T.AutoConfig.from_pretrained(str(path)))
    report = make_report(reading.architecture, reading.config, 5)
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 5))


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"model_type": "qwen3", "head_dim": None},
            "{path}: head_dim: null, which transformers' Qwen3Config refuses (an int field); give the width of one "
            "head (Qwen3: 128)",
        ),
        (
            {"model_type": "qwen3_moe", "head_dim": None},
            "{path}: head_dim: null, which Qwen3MoeConfig's attention multiplies by the number of heads (transformers "
            "fails); remove the key for hidden_size // num_attention_heads, or give the width",
        ),
        (
            {"model_type": "qwen3_moe", "decoder_sparse_step": 0},
            "{path}: decoder_sparse_step: 0, by which transformers' decoder layer divides the layer number (a "
            "ZeroDivisionError); give 1 for experts in every layer, or k for every k-th",
        ),
        (
            {"model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 6},
            "{path}: num_experts_per_tok, read as top_k: each token cannot run through 6 of 4 experts; choose top_k "
            "between 1 and n_experts (4)",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, message):
    path = write_json(tmp_path, data)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host)
    assert str(info.value) == message.format(path=path)


@pytest.mark.reference
def test_the_file_qwen3_moe_config_writes_names_its_experts_num_local_experts(T, host, tmp_path):
    written = T.Qwen3MoeConfig(num_experts=6, num_experts_per_tok=2, num_hidden_layers=1).to_dict()
    assert "num_local_experts" in written and "num_experts" not in written  # transformers' attribute_map at work
    reading = load_hf_config(write_json(tmp_path, {**written, "model_type": "qwen3_moe"}), host)
    assert (reading.config.n_experts, reading.config.top_k) == (6, 2)
    both = {"model_type": "qwen3_moe", "num_experts": 4, "num_local_experts": 6, "num_experts_per_tok": 2}
    assert T.Qwen3MoeConfig.from_dict(both).num_experts == 6  # the alias is set last and wins
    assert load_hf_config(write_json(tmp_path, both), host).config.n_experts == 6


def test_count_neutral_keys_are_ignored_with_a_reason(host, tmp_path):
    """max_window_layers changes nothing in Qwen3-MoE; norm_topk_prob changes what a training step saves (not a
    count), so it is read into the configuration (Qwen3-30B-A3B's file says true)."""
    data = {"model_type": "qwen3_moe", "max_window_layers": 48, "norm_topk_prob": True, "sliding_window": None}
    reading = load_hf_config(write_json(tmp_path, data), host)
    keys = {k.key: k for k in reading.keys}
    assert keys["max_window_layers"].disposition == "ignored" and "never read" in keys["max_window_layers"].detail
    assert keys["norm_topk_prob"].disposition != "ignored" and reading.config.norm_topk_prob is True


# ---- the registry's Qwen3 entries ---------------------------------------------------------------------------------

REGISTRY = load_registry([Path(__file__).resolve().parents[1] / "registry" / "qwen3"])
MOE_IDS = [e.id for e in REGISTRY if e.config.n_experts]


def test_the_registry_holds_the_qwen3_sizes():
    assert not REGISTRY.problems
    assert {e.id for e in REGISTRY} >= {
        "qwen3-0.6b",
        "qwen3-1.7b",
        "qwen3-4b",
        "qwen3-8b",
        "qwen3-14b",
        "qwen3-32b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
    }
    assert set(MOE_IDS) == {"qwen3-30b-a3b", "qwen3-235b-a22b"}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", MOE_IDS)
def test_moe_entries_total_and_active_equal_the_reference(T, model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.spec.published.active_params is not None
    ref = entry.spec.reference
    model = build_model(ref.target.rpartition(".")[2], T.Qwen3MoeConfig(**ref.kwargs))
    assert entry.params == n_params(model)
    assert entry.active_params == n_params(model) - unused_expert_params(model, entry.config.top_k)


# ---- config.json key by key: every key the qwen3 and qwen3_moe tables read, against transformers ------------------

from test_llama import (  # noqa: E402
    assert_sweep_covers_the_table,
    compare_config_json,
    mixed_sweep_cases,
    sweep_case_ids,
    sweep_cases,
)

PREFIX = {"qwen3": "Qwen3", "qwen3_moe": "Qwen3Moe"}
_ROPE = {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}
#: two layers, the second a sliding-window layer of 4 tokens (shorter than the sweep's 9), as Qwen3Config derives it
#: from max_window_layers
BASES: dict[str, dict[str, Any]] = {
    "qwen3": dict(
        vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=40, head_dim=12, max_position_embeddings=24, use_sliding_window=True, sliding_window=4,
        max_window_layers=1,
    ),
    # three layers, the last without experts (a dense gated feed-forward of intermediate_size); every layer masks by
    # the window
    "qwen3_moe": dict(
        vocab_size=97, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=40, max_position_embeddings=24, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, decoder_sparse_step=1, mlp_only_layers=[2], use_sliding_window=True,
        sliding_window=4,
    ),
}  # fmt: skip
_SHARED = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=4,
    num_attention_heads=6,  # the base's 2 key/value heads serve 3 query heads each
    num_key_value_heads=1,
    head_dim=10,
    hidden_act="gelu_pytorch_tanh",
    max_position_embeddings=64,
    attention_bias=True,
    tie_word_embeddings=True,
    pad_token_id=3,
    rope_parameters=_ROPE,
    num_labels=5,
    use_sliding_window=False,
    sliding_window=1,  # a window of one token: each query sees itself
)
#: one value per key each table reads, changed alone; every one is a file transformers builds and runs
SWEEPS: dict[str, dict[str, Any]] = {
    "qwen3": dict(
        _SHARED,
        max_window_layers=0,  # every layer sliding
        layer_types=["sliding_attention", "full_attention"],  # the other way round from the base's
    ),
    "qwen3_moe": dict(
        _SHARED,
        num_experts=6,
        num_experts_per_tok=3,
        moe_intermediate_size=12,
        decoder_sparse_step=2,  # experts in the middle layer only (the last is listed without)
        mlp_only_layers=[0, 1],  # experts in none of the first two
        norm_topk_prob=True,
        output_router_logits=True,
    ),
}
#: (model type, change, what transformers 5.23 does with the file: "exact" where it runs it, "refused" where it cannot
#: build or run it) for edges the one-key sweep does not reach
EDGES = [
    ("qwen3", dict(layer_types=["sliding_attention"]), "refused"),  # one entry for two layers
    ("qwen3", dict(layer_types=["chunked_attention", "full_attention"]), "refused"),  # no chunk size, no such mask
    ("qwen3", dict(use_sliding_window=False, layer_types=["sliding_attention"] * 2), "refused"),  # no window
    ("qwen3", dict(sliding_window=0), "refused"),
    ("qwen3", dict(sliding_window=None, max_window_layers=5), "exact"),  # no layer sliding: no window needed
    ("qwen3", dict(head_dim=None), "refused"),
    ("qwen3", dict(hidden_size=50, head_dim=16, num_attention_heads=3, num_key_value_heads=1), "exact"),
    ("qwen3_moe", dict(sliding_window=None), "exact"),
    ("qwen3_moe", dict(sliding_window=-1), "refused"),
    ("qwen3_moe", dict(num_experts=0), "exact"),  # the dense Qwen3's layers
    ("qwen3_moe", dict(decoder_sparse_step=-2), "exact"),  # (i + 1) % -2 == 0 where (i + 1) % 2 == 0
    ("qwen3_moe", dict(decoder_sparse_step=0), "refused"),
    ("qwen3_moe", dict(mlp_only_layers=[1, 9]), "exact"),  # a listed layer beyond the stack changes nothing
    ("qwen3_moe", dict(mlp_only_layers=None), "exact"),
    ("qwen3_moe", dict(num_local_experts=5), "exact"),  # the alias Qwen3MoeConfig writes, set last
    ("qwen3_moe", dict(num_experts_per_tok=5), "refused"),  # 5 of 4 experts
    ("qwen3_moe", dict(head_dim=None), "refused"),
    (
        "qwen3_moe",
        dict(hidden_size=50, num_attention_heads=3, num_key_value_heads=1),
        "exact",
    ),  # heads of 16, rounded down
]
#: the keys each table ignores, changed at once
IGNORED: dict[str, dict[str, Any]] = {
    "qwen3": dict(attention_dropout=0.3, initializer_range=0.5, rms_norm_eps=1e-3, use_cache=False, bos_token_id=5,
                  eos_token_id=6),
    "qwen3_moe": dict(attention_dropout=0.3, initializer_range=0.5, rms_norm_eps=1e-3, use_cache=False, bos_token_id=5,
                      eos_token_id=6, max_window_layers=1, router_aux_loss_coef=0.5),
}  # fmt: skip


def _classes(host, model_type: str) -> list[str]:
    return list(hf_table(host.hf_readers()[model_type].reader).classes)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(SWEEPS))
def test_the_sweep_covers_every_key(host, model_type):
    assert_sweep_covers_the_table(host, model_type, SWEEPS[model_type])


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, change",
    [(t, c) for t in SWEEPS for c in sweep_cases(SWEEPS[t])],
    ids=[f"{t}-{i}" for t in SWEEPS for i in sweep_case_ids(SWEEPS[t])],
)
def test_each_key_against_transformers(T, host, tmp_path, model_type, change):
    """`archzoo count --hf-config` of the base file with one key changed, as every class transformers has for the
    type: transformers' parameters and forward FLOPs (a mixture of experts by test_hf_published's weightless pass)."""
    path = write_json(tmp_path, {"model_type": model_type, **BASES[model_type], **change})
    for model_class in _classes(host, model_type):
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, change, outcome",
    EDGES,
    ids=[f"{t}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for t, c, _ in EDGES],
)
def test_edges_against_transformers(T, host, tmp_path, model_type, change, outcome):
    path = write_json(tmp_path, {"model_type": model_type, **BASES[model_type], **change})
    for model_class in (f"{PREFIX[model_type]}Model", f"{PREFIX[model_type]}ForSequenceClassification"):
        # without experts the layers are the dense Qwen3's, which archzoo's reference builds (the same figures)
        dense = model_class.replace("Qwen3Moe", "Qwen3") if change.get("num_experts") == 0 else None
        assert compare_config_json(T, host, path, model_class, reference=dense) == outcome, model_class


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(IGNORED))
def test_ignored_keys_change_no_figure(T, host, tmp_path, model_type):
    assert set(IGNORED[model_type]) == set(hf_table(host.hf_readers()[model_type].reader).ignored)
    path = write_json(tmp_path, {"model_type": model_type, **BASES[model_type], **IGNORED[model_type]})
    for model_class in _classes(host, model_type):
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(SWEEPS))
def test_random_combinations_of_the_sweep(T, host, tmp_path, model_type):
    """Exact, or refused by both, on files that change several keys at once."""
    outcomes = [
        compare_config_json(T, host, write_json(tmp_path, data), model_class)
        for data, model_class in mixed_sweep_cases(
            model_type, BASES[model_type], SWEEPS[model_type], _classes(host, model_type)
        )
    ]
    assert "exact" in outcomes, outcomes  # not only refusals


@pytest.mark.reference
def test_weightless_moe_pass_counts_what_a_real_one_does(T, host, tmp_path):
    """The sweeps count a Qwen3-MoE file's FLOPs with zero weights and uncomputed products (every router score ties);
    on the sweep's base (experts in two layers of three) that gives the FLOPs of a forward pass with random weights."""
    from test_llama import SWEEP_SEQ_LEN, sweep_figures

    path = write_json(tmp_path, {"model_type": "qwen3_moe", **BASES["qwen3_moe"]})
    for model_class in ("Qwen3MoeForCausalLM", "Qwen3MoeForSequenceClassification"):
        real = build_model(model_class, T.AutoConfig.from_pretrained(str(path)), device="cpu")
        expected = (n_params(real), forward_flops(real, SWEEP_SEQ_LEN, random_ids=True))
        assert sweep_figures(T, path, model_class) == expected, model_class
