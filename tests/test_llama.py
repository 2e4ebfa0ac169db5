"""The llama plugin against transformers: published configurations, random small ones, config.json files, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the transformers class named beside
it, built on the meta device (transformers 5.23), or what ``torch.utils.flop_counter.FlopCounterMode`` reports
for one eager forward pass of batch 1. The four published Llama figures are pinned as literals (measured with
transformers 5.23, ``LlamaForCausalLM`` on the meta device) and rebuilt from transformers in the same test; the
others are built on the fly. The tests use the installed plugin host, and skip only when the llama plugin is
not installed. Granite's config.json is swept key by key here, with the exact-or-refused comparison
(`compare_config_json`: `archzoo count --hf-config` against the class transformers builds from the same file) that the
Qwen3, OLMo 2 and DeepSeek modules' sweeps import; the sliding-window edges of the types swept in test_hf_sweep too.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.host import get_host
from archzoo.report import make_report
from archzoo.testing import build_model
from family_checks import counter, saved_config, write_json
from transformers_models import forward_flops, host_with, n_params

pytestmark = pytest.mark.sweep

#: every config.json model type the host reads as architecture llama, asked of the host (a type the plugin comes to
#: read is tested the moment it does)
_READERS = {t: r for t, r in get_host().hf_readers().items() if r.architecture == "llama"}
MODEL_TYPES = tuple(sorted(_READERS))
#: each type's transformers class prefix, from its table's base class (LlamaModel: Llama)
FAMILY = {t: hf_table(r.reader).base_class.removesuffix("Model") for t, r in _READERS.items()}


count = counter("llama")


# ---- published configurations -----------------------------------------------------------------------------

#: (archzoo config, LlamaConfig kwargs, parameters of LlamaForCausalLM: transformers 5.23 on the meta device)
PUBLISHED = {
    # Touvron et al. 2023, Llama 2, arXiv:2307.09288, Table 1; shapes from meta-llama/Llama-2-*-hf config.json
    "llama-2-7b": (
        dict(d_model=4096, d_ff=11008, n_layers=32, n_heads=32, n_kv_heads=32, max_positions=4096),
        6_738_415_616,
    ),
    "llama-2-13b": (
        dict(d_model=5120, d_ff=13824, n_layers=40, n_heads=40, n_kv_heads=40, max_positions=4096),
        13_015_864_320,
    ),
    "llama-2-70b": (
        dict(d_model=8192, d_ff=28672, n_layers=80, n_heads=64, n_kv_heads=8, max_positions=4096),
        68_976_648_192,
    ),
    # Zhang et al. 2024, TinyLlama, arXiv:2401.02385: the plugin's defaults
    "tinyllama-1.1b": (dict(), 1_100_048_384),
}


def _llama_kwargs(config: dict) -> dict:
    c = config or dict(d_model=2048, d_ff=5632, n_layers=22, n_heads=32, n_kv_heads=4, max_positions=2048)
    return dict(
        vocab_size=32000,
        hidden_size=c["d_model"],
        intermediate_size=c["d_ff"],
        num_hidden_layers=c["n_layers"],
        num_attention_heads=c["n_heads"],
        num_key_value_heads=c["n_kv_heads"],
        max_position_embeddings=c["max_positions"],
    )


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_llama_counts(host, model_id):
    config, expected = PUBLISHED[model_id]
    assert count(**config).params == expected


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_llama_figures_are_transformers_own(T, model_id):
    config, expected = PUBLISHED[model_id]
    assert n_params(build_model("LlamaForCausalLM", T.LlamaConfig(**_llama_kwargs(config)))) == expected


#: other families' published shapes, as their config.json on the Hugging Face Hub gives them; counted from a
#: config.json written by the Config class's to_dict(), against the class built from the same Config
FAMILIES = {
    # Jiang et al. 2023, Mistral 7B, arXiv:2310.06825, Table 1 (mistralai/Mistral-7B-v0.1)
    "mistral-7b": (
        "mistral",
        dict(
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            vocab_size=32000,
            max_position_embeddings=32768,
            sliding_window=4096,
        ),
    ),
    # Qwen2 technical report, arXiv:2407.10671, Table 1 (Qwen/Qwen2-0.5B, Qwen/Qwen2-1.5B)
    "qwen2-0.5b": (
        "qwen2",
        dict(
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            vocab_size=151936,
            tie_word_embeddings=True,
        ),
    ),
    "qwen2-1.5b": (
        "qwen2",
        dict(
            hidden_size=1536,
            intermediate_size=8960,
            num_hidden_layers=28,
            num_attention_heads=12,
            num_key_value_heads=2,
            vocab_size=151936,
            tie_word_embeddings=True,
        ),
    ),
    # Gemma Team 2024, arXiv:2403.08295, Table 1 (google/gemma-2b): multi-query attention, 256-wide heads
    "gemma-2b": (
        "gemma",
        dict(
            hidden_size=2048,
            intermediate_size=16384,
            num_hidden_layers=18,
            num_attention_heads=8,
            num_key_value_heads=1,
            head_dim=256,
            vocab_size=256000,
        ),
    ),
    # Gemma 7B: 16 heads of 256 are wider than d_model 3072 (GemmaConfig's defaults)
    "gemma-7b": ("gemma", dict()),
    # Groeneveld et al. 2024, OLMo, arXiv:2402.00838, Table 1 (allenai/OLMo-1B-hf)
    "olmo-1b": (
        "olmo",
        dict(
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=16,
            num_attention_heads=16,
            vocab_size=50304,
            tie_word_embeddings=True,
        ),
    ),
    # Abdin et al. 2024, Phi-3, arXiv:2404.14219 (microsoft/Phi-3-mini-4k-instruct: Phi3Config's defaults)
    "phi-3-mini": ("phi3", dict()),
}


def _config_file(T, tmp_path: Path, model_type: str, kwargs: dict, name: str = "config.json"):
    return saved_config(tmp_path, getattr(T, f"{FAMILY[model_type]}Config")(**kwargs), name)


@pytest.mark.reference
@pytest.mark.parametrize("model_id", FAMILIES)
def test_published_family_shapes_via_hf_config(T, host, tmp_path, capsys, model_id):
    model_type, kwargs = FAMILIES[model_id]
    path, config = _config_file(T, tmp_path, model_type, kwargs)
    model_class = f"{FAMILY[model_type]}ForCausalLM"
    assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["architecture"] == "llama"
    assert report["params"]["total"] == n_params(build_model(model_class, config))


# ---- random small configurations: parameters and FLOPs -----------------------------------------------------


def _random_config(rng: random.Random) -> dict[str, Any]:
    n_heads = rng.choice([1, 2, 3, 4, 6])
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(50, 300),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in range(1, n_heads + 1) if n_heads % k == 0]),
        d_ff=rng.randint(8, 120),
        max_positions=rng.randint(16, 64),
        tie_embeddings=rng.random() < 0.5,
        activation=rng.choice(["silu", "gelu_pytorch_tanh", "relu"]),
        head=rng.choice(["lm", "lm", "none"]),
    )
    family = rng.choice(["llama", "llama-head-dim", "qwen2", "olmo"])
    if family == "llama-head-dim":
        config.update(
            d_model=rng.randint(8, 40), d_head=2 * rng.randint(1, 12), qkv_bias=(b := rng.random() < 0.5), out_bias=b
        )
        # Llama's class (mlp_bias) needs heads dividing d_model; Gemma's (no mlp_bias) builds any head layout
        config["mlp_bias"] = config["d_model"] % n_heads == 0 and rng.random() < 0.5
    else:
        config["d_model"] = n_heads * 2 * rng.randint(1, 6)
    if family == "llama":
        config.update(qkv_bias=(b := rng.random() < 0.5), out_bias=b, mlp_bias=rng.random() < 0.5)
    if family == "qwen2":
        config.update(qkv_bias=True)
    if family == "olmo":
        config.update(norm="layer_norm_no_affine", qkv_bias=(b := rng.random() < 0.5), out_bias=b)
    config["family"] = rng.choice(list(FAMILY))  # the class verify builds, where that family can build it
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(24)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_params_and_flops_equal_transformers(T, host, config):
    report = count(**config)
    arch = host.architecture("llama")
    ref = arch.reference(report.config)
    assert ref is not None, config
    model = build_model(ref.target.rpartition(".")[2], getattr(T, ref.config_class.rpartition(".")[2])(**ref.kwargs))
    assert report.params == n_params(model), (config, ref)
    for n in (1, 7, 16):
        assert make_report(arch, report.config, n).flops == forward_flops(model, n), (config, ref, n)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_each_model_type_on_the_cpu_with_random_files(T, host, tmp_path, model_type):
    """Each type's own classes (Phi-3's fused projections, Gemma's and Mistral's own code), built on the CPU with
    real weights from random small config.json files, against the count from the same file."""
    import torch

    rng = random.Random(model_type)
    for i in range(3):
        heads = rng.choice([2, 4])
        kwargs = dict(
            vocab_size=rng.randint(40, 120),
            hidden_size=heads * 2 * rng.randint(2, 4),
            num_attention_heads=heads,
            num_key_value_heads=rng.choice([1, heads]),
            intermediate_size=rng.randint(8, 40),
            num_hidden_layers=rng.randint(1, 2),
            tie_word_embeddings=rng.random() < 0.5,
            pad_token_id=None,
            max_position_embeddings=32,
        )
        if model_type in ("llama", "gemma", "olmo"):
            kwargs["attention_bias"] = rng.random() < 0.5
        if model_type in ("llama", "mistral", "gemma") and i == 2:
            kwargs["head_dim"] = 2 * rng.randint(2, 5)
        path, config = _config_file(T, tmp_path, model_type, kwargs)
        for model_class in (f"{FAMILY[model_type]}Model", f"{FAMILY[model_type]}ForCausalLM"):
            reading = load_hf_config(path, host, hf_class=model_class)
            report = make_report(reading.architecture, reading.config, 9)
            assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"
            model = build_model(model_class, config, device="cpu")
            with torch.no_grad():
                assert (report.params, report.flops) == (n_params(model), forward_flops(model, 9)), (
                    kwargs,
                    model_class,
                )


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------
# (each type's table against its transformers configuration class: test_hf_sweep.py's
# test_table_equals_the_transformers_configuration_class, parametrized over every type a plugin reads)


def test_every_type_is_read_by_the_llama_plugin(host):
    """The types the llama architecture reads are exactly these (the list MODEL_TYPES is asked of the host)."""
    written = ("llama", "mistral", "qwen2", "gemma", "olmo", "phi3")
    types = host.hf_model_types()
    assert {t: types[t].name for t in written} == {t: "llama" for t in written}
    assert set(MODEL_TYPES) == set(written)


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (  # transformers 5.23 has no GemmaForQuestionAnswering
            {"model_type": "gemma"},
            "GemmaForQuestionAnswering",
            "--hf-class: 'GemmaForQuestionAnswering' is not a gemma model class archzoo counts; did you mean "
            "'GemmaForSequenceClassification'? supported: GemmaModel, GemmaForCausalLM, GemmaForSequenceClassification, "
            "GemmaForTokenClassification",
        ),
        (
            {"model_type": "phi3", "vocab_size": 1000},
            None,
            "{path}: pad_token_id: 32,000 is outside the vocabulary of 1,000 tokens, and transformers' token embedding "
            "refuses such a padding index; set pad_token_id to null or to a token id",
        ),
        (
            {"model_type": "qwen2", "hidden_size": 8, "num_attention_heads": 16, "num_key_value_heads": 16},
            None,
            "{path}: num_attention_heads: 16 heads of a 8-wide model leave each head 0 wide; choose at most 8 heads",
        ),
        (
            {"model_type": "llama", "hidden_size": 100, "num_attention_heads": 8, "head_dim": 16},
            None,
            "{path}: num_attention_heads: 8 heads do not divide hidden_size 100, which transformers' LlamaConfig refuses "
            "even when head_dim is given; choose a divisor of hidden_size",
        ),
        (
            {"model_type": "phi3", "pad_token_id": None, "rope_parameters": {"rope_type": "linear", "factor": 2.0}},
            None,
            '{path}: rope_parameters: rope_type "linear" is not one transformers\' Phi3Config accepts; expected one of '
            "default, longrope",
        ),
        (
            {"model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 5},
            None,
            "{path}: num_key_value_heads, read as n_kv_heads: n_heads 32 is not divisible by n_kv_heads 5; choose a "
            "divisor of n_heads (1 for multi-query attention)",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    path = write_json(tmp_path, data)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host, hf_class=hf_class)
    assert str(info.value) == message.format(path=path)


def test_count_neutral_keys_are_ignored_with_a_reason(T, host, tmp_path):
    data = {
        "model_type": "qwen2",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "use_sliding_window": True,
        "sliding_window": 16,
        "max_window_layers": 1,
        "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6},
    }
    reading = load_hf_config(write_json(tmp_path, data), host)
    assert reading.config.family == "qwen2"
    keys = {k.key: k for k in reading.keys}
    for key in ("use_sliding_window", "sliding_window", "max_window_layers"):  # read into the window keys
        assert keys[key].disposition == "read" and keys[key].archzoo_key.startswith("sliding_window, layer_types"), key
    # the layers that mask by the window, as Qwen2Config derives them (from max_window_layers on)
    expected = T.Qwen2Config(**{k: v for k, v in data.items() if k != "model_type"})
    assert (reading.config.sliding_window, reading.config.layer_types) == (16, expected.layer_types)
    assert keys["rope_parameters"].disposition == "read"  # only its type is checked: yarn changes no count
    assert reading.config.qkv_bias and not reading.config.out_bias


def test_heads_that_do_not_divide_the_width_round_down_like_transformers(host, tmp_path):
    data = {"model_type": "qwen2", "hidden_size": 50, "num_attention_heads": 4, "num_key_value_heads": 2}
    assert load_hf_config(write_json(tmp_path, data), host).config.d_head == 12  # transformers: 50 // 4


# ---- archzoo verify: the block mapping ---------------------------------------------------------------------

VERIFY_CASES = {
    "llama": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=80),
    "llama-base-biases": dict(
        vocab_size=97,
        d_model=48,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_ff=80,
        head="none",
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        d_head=20,
    ),
    "qwen2-tied": dict(
        vocab_size=97, d_model=48, n_layers=1, n_heads=4, n_kv_heads=1, d_ff=80, qkv_bias=True, tie_embeddings=True
    ),
    "olmo": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=6, n_kv_heads=3, d_ff=80, norm="layer_norm_no_affine"),
    "phi3-fused": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=80, family="phi3"),
    "gemma-wide-heads": dict(
        vocab_size=97,
        d_model=48,
        n_layers=1,
        n_heads=4,
        n_kv_heads=1,
        d_ff=80,
        d_head=16,
        tie_embeddings=True,
        activation="gelu_pytorch_tanh",
        family="gemma",
    ),
    "mistral": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=80, family="mistral"),
}
VERIFY_CLASSES = {
    "llama": "LlamaForCausalLM",
    "llama-base-biases": "LlamaModel",
    "qwen2-tied": "Qwen2ForCausalLM",
    "olmo": "OlmoForCausalLM",
    "phi3-fused": "Phi3ForCausalLM",
    "gemma-wide-heads": "GemmaForCausalLM",
    "mistral": "MistralForCausalLM",
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    from archzoo.verify import verify_target

    path = tmp_path / "small.yaml"
    path.write_text(
        yaml.safe_dump(
            dict(
                architecture="llama",
                title="A test entry",
                year=2024,
                summary="A configuration written by the test suite.",
                config=VERIFY_CASES[case],
            ),
            sort_keys=False,
        )
    )
    verification = verify_target(str(path), host=host)
    assert verification.target == f"transformers.{VERIFY_CLASSES[case]}"
    assert verification.ok, verification.render()
    mapped = {row.path for row in verification.blocks}
    assert {
        "llama.token",
        "llama.layers.layer.attention",
        "llama.layers.layer.mlp.fc_out",
        "llama.final_norm",
    } <= mapped
    fused = case.startswith("phi3")  # qkv_proj and gate_up_proj: the parts are checked through their block
    assert ("llama.layers.layer.attention.q_proj" in mapped) is not fused
    assert all(within for _, within in verification.unmapped), verification.unmapped  # only parts of mapped blocks


def test_reference_is_none_where_no_class_builds_the_configuration(host):
    arch = host.architecture("llama")
    for config in (
        dict(out_bias=True),
        dict(norm="layer_norm_no_affine", mlp_bias=True),
        dict(qkv_bias=True, d_head=40),
    ):
        assert arch.reference(count(**config).config) is None, config


@pytest.mark.reference
def test_heads_that_do_not_divide_the_width_with_feed_forward_biases_are_granite(T, host):
    # LlamaConfig refuses heads that do not divide hidden_size; Granite reads head_dim as a plain attribute
    report = count(d_model=2050, d_head=64, mlp_bias=True, n_layers=2)
    ref = report.architecture.reference(report.config)
    assert ref.target == "transformers.GraniteForCausalLM"
    model = build_model("GraniteForCausalLM", T.GraniteConfig(**ref.kwargs))
    assert report.params == n_params(model)


# ---- Granite: the granite architecture (Llama's layers, count-neutral multipliers) ------------------------------------

#: transformers 5.23, GraniteForCausalLM(GraniteConfig(**GRANITE_8B)) on the meta device: Granite 3.0 8B (the Granite
#: 3.0 report's Table 1: 40 layers, embedding size 4096, 32 heads of 128, 8 KV heads, MLP hidden size 12,800; the
#: released config.json's 49,155-token vocabulary tied to the LM head)
GRANITE_8B_PARAMS = 8_170_848_256
GRANITE_8B = dict(
    vocab_size=49155,
    hidden_size=4096,
    intermediate_size=12800,
    num_hidden_layers=40,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)
#: Granite 3.0 2B: Table 1's embedding size 2048, 32 heads of 64, MLP hidden size 8192
GRANITE_2B = dict(GRANITE_8B, hidden_size=2048, intermediate_size=8192)


def test_granite_defaults_are_granite_3_0_8b():
    assert archzoo_count("granite").params == GRANITE_8B_PARAMS


def archzoo_count(arch: str, **config):
    import archzoo

    return archzoo.count(arch, **config)


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
@pytest.mark.parametrize("shape", [GRANITE_8B, GRANITE_2B], ids=["8b", "2b"])
def test_granite_published_shapes_with_multipliers_via_config_json(T, tmp_path, shape):
    host = host_with("granite")
    # multipliers other than 1 scale activations only: they must change no parameter and no matmul FLOP
    multipliers = dict(
        embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125, logits_scaling=16.0
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(T.GraniteConfig(**shape, **multipliers).to_dict()))
    if shape is GRANITE_8B:
        assert build_model("GraniteForCausalLM", T.GraniteConfig(**shape)).num_parameters() == GRANITE_8B_PARAMS
    for model_class in ("GraniteModel", "GraniteForCausalLM"):
        reading = load_hf_config(path, host, hf_class=model_class)
        assert reading.architecture.name == "granite"
        model = build_model(model_class, T.AutoConfig.from_pretrained(str(path)))
        report = make_report(reading.architecture, reading.config, 8)
        assert (report.params, report.flops) == (n_params(model), forward_flops(model, 8)), model_class


def _granite_random(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([1, 2, 4])
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(40, 200),
        n_layers=rng.randint(1, 3),
        n_heads=heads,
        n_kv_heads=rng.choice([k for k in range(1, heads + 1) if heads % k == 0]),
        d_model=heads * 2 * rng.randint(1, 5),
        d_ff=rng.randint(4, 64),
        tie_embeddings=rng.random() < 0.5,
        qkv_bias=(bias := rng.random() < 0.5),
        out_bias=bias,
        mlp_bias=rng.random() < 0.5,
        activation=rng.choice(["silu", "gelu_pytorch_tanh"]),
        max_positions=64,
        head=rng.choice(["lm", "none"]),
    )
    if rng.random() < 0.4:
        config["d_head"] = 2 * rng.randint(1, 6)
    return config


GRANITE_CONFIGS = [_granite_random(random.Random(f"granite{seed}")) for seed in range(8)]


@pytest.mark.reference
@pytest.mark.parametrize("config", GRANITE_CONFIGS, ids=[f"seed{i}" for i in range(len(GRANITE_CONFIGS))])
def test_granite_random_configs_against_transformers(T, config):
    from archzoo.testing import assert_blocks_match_modules, assert_matches_reference

    host = host_with("granite")
    ref = host.architecture("granite").reference(archzoo_count("granite", **config).config)
    assert ref.target == f"transformers.Granite{'ForCausalLM' if config['head'] == 'lm' else 'Model'}"
    assert_matches_reference("granite", config, seq_lens=(1, 7))
    assert_blocks_match_modules("granite", config)


@pytest.mark.reference
def test_granite_table_equals_the_transformers_configuration_class(T):
    import dataclasses

    from transformers.models.granite import modeling_granite

    from archzoo.hf_config import COMMON_KEYS, hf_table

    table = hf_table(host_with("granite").hf_readers()["granite"].reader)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {
        f.name: f.default for f in dataclasses.fields(T.GraniteConfig) if f.name not in common
    }
    heads = {n for n in modeling_granite.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == heads
    known = (*table.read, *table.ignored, *table.refused, *table.aliases, *COMMON_KEYS)
    assert [k for k in T.GraniteConfig().to_dict() if k not in known] == []
    for multiplier in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
        assert multiplier in table.ignored


# ---- config.json key by key: the comparison the Granite, Qwen3, OLMo 2 and DeepSeek sweeps share ----------------

#: tokens of one forward pass in the key-by-key sweeps (test_qwen3, test_olmo2 and test_deepseek use these helpers)
SWEEP_SEQ_LEN = 9


def sweep_figures(T, path: Path, model_class: str, seq_len: int = SWEEP_SEQ_LEN) -> tuple[int, int]:
    """Parameters and FlopCounterMode forward FLOPs of transformers' ``model_class`` built from the config.json at
    ``path`` by AutoConfig, as from_pretrained reads it (eager attention and experts). A dense model runs on the CPU
    with small random weights (a padding index makes the forward pass read values); a mixture of experts runs the
    weightless pass of test_hf_published (each parameter one broadcast zero, matrix products counted from their
    shapes and left uncomputed), checked there and in test_deepseek against a pass with random weights. Raises
    whatever transformers raises for a file it cannot build or run."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from test_hf_published import _ShapesOnly, _weightless

    config = T.AutoConfig.from_pretrained(str(path))
    routed = getattr(config, "num_experts_per_tok", None) is not None  # routing reads activation values
    model = build_model(model_class, config, device="meta" if routed else "cpu")
    params = n_params(model)
    ids = torch.zeros(1, seq_len, dtype=torch.long)
    with torch.no_grad():
        if routed:
            _weightless(model)
            with _ShapesOnly(), FlopCounterMode(display=False) as flop_counter:
                model(input_ids=ids)
        else:
            with FlopCounterMode(display=False) as flop_counter:
                model(input_ids=ids)
    return params, flop_counter.get_total_flops()


def count_via_cli(path: Path, model_class: str, seq_len: int = SWEEP_SEQ_LEN) -> tuple[int, str, str]:
    """``archzoo count --hf-config PATH --hf-class CLASS --seq-len N --json``: its exit code, output and errors."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["count", "--hf-config", str(path), "--hf-class", model_class, "--seq-len", str(seq_len), "--json"])
    return code, out.getvalue(), err.getvalue()


def compare_config_json(
    T, host, path: Path, model_class: str, seq_len: int = SWEEP_SEQ_LEN, *, reference: str | None = None
) -> str:
    """Exact or refused: ``archzoo count --hf-config`` of the file as ``model_class`` prints transformers'
    parameters and forward FLOPs (and archzoo's reference names that class, or ``reference``), or, where
    transformers cannot build or run the file, archzoo refuses it with one line naming the file and a non-zero exit.
    Returns which."""
    try:
        expected = sweep_figures(T, path, model_class, seq_len)
    except Exception as exc:  # transformers refuses the file for this class
        code, out, err = count_via_cli(path, model_class, seq_len)
        assert code != 0 and out == "", (
            f"transformers refuses {path.read_text()} as {model_class} ({type(exc).__name__}: {exc}), but archzoo "
            f"counts it: {out[:200]}"
        )
        assert err.startswith(f"archzoo: error: {path}: ") and err.count("\n") == 1 and "Traceback" not in err, err
        with pytest.raises(HFConfigError):
            load_hf_config(path, host, hf_class=model_class)
        return "refused"
    code, out, err = count_via_cli(path, model_class, seq_len)
    assert code == 0, f"transformers builds and runs {path.read_text()} as {model_class}, archzoo refuses: {err}"
    report = json.loads(out)
    counted = (report["params"]["total"], report["flops"]["forward"])
    assert counted == expected, (
        f"{path.read_text()} as {model_class}: archzoo {counted[0]:,} params and {counted[1]:,} FLOPs, transformers "
        f"{expected[0]:,} and {expected[1]:,}"
    )
    reading = load_hf_config(path, host, hf_class=model_class)
    assert reading.architecture.reference(reading.config).target == f"transformers.{reference or model_class}"
    return "exact"


def sweep_case_ids(sweep: dict[str, Any]) -> list[str]:
    return ["(base)", *sweep]


def sweep_cases(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """The base file unchanged, then each key of ``sweep`` changed alone."""
    return [{}, *({key: value} for key, value in sweep.items())]


def mixed_sweep_cases(
    model_type: str, base: dict[str, Any], sweep: dict[str, Any], classes: list[str], count: int = 6
) -> list[tuple[dict[str, Any], str]]:
    """``count`` files of ``base`` with each key of ``sweep`` at its base or its sweep value at random (the
    combinations the one-key sweep never makes), each with a class drawn from ``classes``; seeded by the type."""
    rng = random.Random(model_type)
    cases = []
    for _ in range(count):
        data = {"model_type": model_type, **base}
        data.update({key: value for key, value in sweep.items() if rng.random() < 0.5})
        cases.append((data, rng.choice(classes)))
    return cases


def assert_sweep_covers_the_table(host, model_type: str, sweep: dict[str, Any]) -> None:
    """The sweep changes exactly the keys the type's table reads (a key the table comes to read fails this)."""
    assert set(sweep) == set(hf_table(host.hf_readers()[model_type].reader).read), model_type


# ---- Granite's config.json, key by key ----------------------------------------------------------------------------

GRANITE_CLASSES = ("GraniteModel", "GraniteForCausalLM")  # transformers 5.23 has no other Granite head
GRANITE_BASE = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=40,
    max_position_embeddings=24,
)
#: one value per key the granite table reads, each changed alone; every one is a file transformers builds and runs
SWEEPS: dict[str, dict[str, Any]] = {
    "granite": dict(
        vocab_size=101,
        hidden_size=64,
        intermediate_size=33,
        num_hidden_layers=3,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=10,  # a plain attribute GraniteAttention reads: 8 heads of 10 in a 48-wide model
        hidden_act="gelu_pytorch_tanh",
        max_position_embeddings=64,
        attention_bias=True,
        mlp_bias=True,
        tie_word_embeddings=True,
        pad_token_id=3,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
        num_labels=5,  # no Granite class has a label head: the same figures
    )
}
#: Granite 3.0 8B's multipliers (its released config.json), and the other keys archzoo ignores, changed at once
GRANITE_IGNORED = dict(
    embedding_multiplier=12.0,
    residual_multiplier=0.22,
    attention_multiplier=0.0078125,
    logits_scaling=16.0,
    rms_norm_eps=1e-3,
    initializer_range=0.5,
    attention_dropout=0.3,
    use_cache=False,
    bos_token_id=5,
    eos_token_id=6,
)


@pytest.mark.reference
def test_the_granite_sweep_covers_every_key(host):
    assert_sweep_covers_the_table(host, "granite", SWEEPS["granite"])


@pytest.mark.reference
@pytest.mark.parametrize("change", sweep_cases(SWEEPS["granite"]), ids=sweep_case_ids(SWEEPS["granite"]))
def test_each_granite_key_against_transformers(T, host, tmp_path, change):
    path = write_json(tmp_path, {"model_type": "granite", **GRANITE_BASE, **change})
    for model_class in GRANITE_CLASSES:
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


@pytest.mark.reference
def test_granite_random_combinations_of_the_sweep(T, host, tmp_path):
    """Exact, or refused by both, on files that change several keys at once."""
    cases = mixed_sweep_cases("granite", GRANITE_BASE, SWEEPS["granite"], list(GRANITE_CLASSES))
    outcomes = [compare_config_json(T, host, write_json(tmp_path, data), model_class) for data, model_class in cases]
    assert "exact" in outcomes, outcomes  # not only refusals


@pytest.mark.reference
def test_granite_ignored_keys_change_no_figure(T, host, tmp_path):
    """The multipliers scale activations (elementwise: FlopCounterMode counts none), the rest change no module."""
    assert set(GRANITE_IGNORED) == set(hf_table(host.hf_readers()["granite"].reader).ignored)
    path = write_json(tmp_path, {"model_type": "granite", **GRANITE_BASE, **GRANITE_IGNORED})
    for model_class in GRANITE_CLASSES:
        assert compare_config_json(T, host, path, model_class) == "exact", model_class


# ---- sliding windows: read to refuse what transformers cannot run ----------------------------------------------------

_WINDOW_BASES: dict[str, dict[str, Any]] = {
    "qwen2": dict(GRANITE_BASE),
    "mistral": dict(GRANITE_BASE),
    "phi3": dict(GRANITE_BASE, pad_token_id=None),
    "mixtral": dict(GRANITE_BASE, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(
        GRANITE_BASE, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=8
    ),
}
#: (model type, change, what transformers 5.23 does with the file: runs it, so archzoo counts it exactly, or fails,
#: so archzoo refuses it, with the message's start) on the 2-layer bases above
WINDOW_EDGES = [
    ("qwen2", dict(use_sliding_window=True, sliding_window=4, max_window_layers=1), "exact", ""),
    ("qwen2", dict(use_sliding_window=True, sliding_window=1, layer_types=["sliding_attention"] * 2), "exact", ""),
    ("qwen2", dict(layer_types=["full_attention"] * 2), "exact", ""),
    ("qwen2", dict(layer_types=["sliding_attention"]), "refused", "layer_types: 1 entries for num_hidden_layers 2"),
    ("qwen2", dict(layer_types=["chunked_attention"] * 2), "refused", "layer_types: expected a list of full_attention"),
    ("qwen2", dict(layer_types=["full_attention", "sliding_attention"]), "refused", "layer_types: sliding_attention"),
    ("qwen2", dict(use_sliding_window=True, sliding_window=0, max_window_layers=0), "refused", "sliding_window: 0,"),
    ("qwen2", dict(use_sliding_window=True, sliding_window=-1, max_window_layers=1), "refused", "sliding_window: -1"),
    ("qwen2", dict(use_sliding_window="yes"), "refused", 'use_sliding_window: expected true or false, got "yes"'),
    ("qwen2", dict(sliding_window=4.5), "refused", "sliding_window: expected a number of tokens or null, got 4.5"),
    ("qwen2", dict(max_window_layers=None), "refused", "max_window_layers: expected a number of layers, got null"),
    ("mistral", dict(sliding_window=1), "exact", ""),
    ("mistral", dict(sliding_window=None), "exact", ""),
    ("mistral", dict(sliding_window=-3), "refused", "sliding_window: -3, a window under one token"),
    ("phi3", dict(sliding_window=4), "exact", ""),
    ("phi3", dict(sliding_window=0), "refused", "sliding_window: 0, a window under one token"),
    ("mixtral", dict(sliding_window=4), "exact", ""),
    ("mixtral", dict(sliding_window=0), "refused", "sliding_window: 0, a window under one token"),
    ("qwen2_moe", dict(use_sliding_window=True, sliding_window=3), "exact", ""),
    # Qwen2MoeConfig keeps 0 without use_sliding_window; a window under one token runs while no layer masks by it
    ("qwen2_moe", dict(sliding_window=None), "exact", ""),
    ("qwen2_moe", dict(use_sliding_window=True, sliding_window=-2, max_window_layers=0), "exact", ""),
    ("qwen2_moe", dict(use_sliding_window=True, sliding_window=0), "refused", "sliding_window: 0, a window under"),
    ("qwen2_moe", dict(layer_types=["sliding_attention", "full_attention"]), "refused", "sliding_window: 4096 with"),
    # its sliding-window mask is built whether or not a layer masks by it
    ("qwen2_moe", dict(use_sliding_window=True, sliding_window=None, max_window_layers=0), "refused", "sliding_window: null"),
]  # fmt: skip


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, change, outcome, message",
    WINDOW_EDGES,
    ids=[f"{t}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for t, c, _, _ in WINDOW_EDGES],
)
def test_a_window_transformers_cannot_run_with_is_refused(T, host, tmp_path, model_type, change, outcome, message):
    path = write_json(tmp_path, {"model_type": model_type, **_WINDOW_BASES[model_type], **change})
    base_class = hf_table(host.hf_readers()[model_type].reader).base_class
    assert compare_config_json(T, host, path, base_class) == outcome
    if outcome == "refused":
        with pytest.raises(HFConfigError) as refused:
            load_hf_config(path, host)
        assert str(refused.value).startswith(f"{path}: {message}"), str(refused.value)


# ---- sliding windows: the KV cache and the decode step, as transformers' own cache holds them -----------------------

#: a window of 6 tokens on the 24-position bases: Mistral, Phi-3 and Mixtral mask every layer by it; Qwen2's three
#: layers from max_window_layers (1) on, as Qwen2Config derives them
_WINDOW = 6
_WINDOWED_FILES: dict[str, dict[str, Any]] = {
    "mistral": dict(_WINDOW_BASES["mistral"], sliding_window=_WINDOW),
    "qwen2": dict(
        _WINDOW_BASES["qwen2"],
        num_hidden_layers=3,
        use_sliding_window=True,
        sliding_window=_WINDOW,
        max_window_layers=1,
    ),
    "phi3": dict(_WINDOW_BASES["phi3"], sliding_window=_WINDOW),
    "mixtral": dict(_WINDOW_BASES["mixtral"], sliding_window=_WINDOW),
    # the even-numbered layers below max_window_layers, as Qwen2MoeConfig derives them; layer 1 dense (mlp_only_layers):
    # a stack of the four kinds of layer, with or without experts and sliding or not
    "qwen2_moe": dict(
        _WINDOW_BASES["qwen2_moe"], num_hidden_layers=3, use_sliding_window=True, sliding_window=_WINDOW, max_window_layers=2,
        mlp_only_layers=[1],
    ),
    # Qwen3 as Qwen2; Qwen3-MoE masks every layer
    "qwen3": dict(
        _WINDOW_BASES["qwen2"], head_dim=12, num_hidden_layers=3, use_sliding_window=True, sliding_window=_WINDOW,
        max_window_layers=2,
    ),
    "qwen3_moe": dict(
        _WINDOW_BASES["qwen2"], head_dim=12, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
        use_sliding_window=True, sliding_window=_WINDOW,
    ),
}  # fmt: skip


@pytest.mark.parametrize("model_type", list(_WINDOWED_FILES))
def test_a_deep_windowed_file_is_read_without_listing_its_layers(host, tmp_path, model_type):
    """Each type's windowed file with two billion layers: where every layer masks by the window (Mistral, Phi-3,
    Mixtral, Qwen3-MoE) the stack repeats one layer and is read with its window, parameters one layer's more per
    layer; where only some do (Qwen2, Qwen2-MoE, Qwen3 from max_window_layers) it is refused at once, naming
    num_hidden_layers. Reading the window once built a list of every layer: minutes and gigabytes."""
    deep = 2_000_000_000

    def read(layers: int):
        data = {"model_type": model_type, **_WINDOWED_FILES[model_type], "num_hidden_layers": layers}
        return load_hf_config(write_json(tmp_path, data, f"{layers}.json"), host)

    if model_type in ("qwen2", "qwen2_moe", "qwen3"):
        with pytest.raises(HFConfigError, match=r"num_hidden_layers: 2,000,000,000 layers; archzoo counts a stack of"):
            read(deep)
        return
    reading = read(deep)
    assert (reading.config.n_layers, reading.config.sliding_window, reading.config.layer_types) == (deep, _WINDOW, None)
    params = {n: make_report(read(n).architecture, read(n).config).params for n in (1, 2)}
    assert make_report(reading.architecture, reading.config).params == params[1] + (deep - 1) * (params[2] - params[1])


#: the types whose routing reads values: built on the CPU with random weights
_ROUTED = ("mixtral", "qwen2_moe", "qwen3_moe")


def _windowed(T, host, tmp_path, model_type: str):
    """archzoo's reading of the type's windowed file as its causal LM, and that class as transformers builds it from
    the same file (AutoConfig), eager; a mixture of experts on the CPU with random weights (routing reads values),
    the rest on the meta device."""
    path = write_json(tmp_path, {"model_type": model_type, **_WINDOWED_FILES[model_type]})
    model_class = hf_table(host.hf_readers()[model_type].reader).base_class.removesuffix("Model") + "ForCausalLM"
    reading = load_hf_config(path, host, hf_class=model_class)
    config = T.AutoConfig.from_pretrained(str(path))
    model = build_model(model_class, config, device="cpu" if model_type in _ROUTED else "meta")
    # the file's window is one transformers' cache honours: some of its layers keep only the window
    assert any(layer.is_sliding for layer in T.DynamicCache(config=config).layers)
    return path, model_class, reading, config, model


def _cache_and_decode(T, model, config, n: int) -> tuple[int, int, int]:
    """What transformers' ``DynamicCache(config=...)`` holds after a prefill of ``n`` tokens; the keys and values
    the decode step reading token ``n`` holds (after a prefill of ``n - 1``: what each layer's update hands the
    attention, the cached tokens and the new one); and that step's FlopCounterMode FLOPs, as
    tests/test_generation_flops.py measures a decode step (archzoo.reference.reference_decode_flops)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    device = next(model.parameters()).device

    def prefill(tokens: int):
        cache = T.DynamicCache(config=config)
        model(input_ids=torch.zeros(1, tokens, dtype=torch.long, device=device), past_key_values=cache, use_cache=True)
        return cache

    with torch.no_grad():
        after_prefill = sum(layer.keys.numel() + layer.values.numel() for layer in prefill(n).layers)
        cache = prefill(n - 1)
        held: list[int] = []
        for layer in cache.layers:
            update = layer.update

            def recording(*args, _update=update, **kwargs):
                keys, values = _update(*args, **kwargs)
                held.append(keys.numel() + values.numel())
                return keys, values

            layer.update = recording
        step = torch.zeros(1, 1, dtype=torch.long, device=device)
        with FlopCounterMode(display=False) as flops:
            model(input_ids=step, past_key_values=cache, use_cache=True)
    assert len(held) == config.num_hidden_layers
    return after_prefill, sum(held), flops.get_total_flops()


@pytest.mark.reference
@pytest.mark.parametrize("model_type", list(_WINDOWED_FILES))
def test_kv_cache_and_decode_within_the_window_are_transformers(T, host, tmp_path, model_type):
    """Up to the window, N <= W, the KV cache (per token times N) is what transformers' DynamicCache holds while the
    step reading token N runs, and after a prefill of N < W tokens (the cache held after N tokens, at N = W too); the
    decode step's FLOPs are FlopCounterMode's. Past the window: the test below."""
    _, _, reading, config, model = _windowed(T, host, tmp_path, model_type)
    # the class archzoo's reference builds (archzoo verify, the reference's code on the site) has the file's window
    ref = reading.architecture.reference(reading.config)
    assert ref.target == f"transformers.{type(model).__name__}"
    ref_config = getattr(T, ref.config_class.rsplit(".", 1)[1])(**ref.kwargs)
    for built in (ref_config, config):
        windows = [getattr(layer, "sliding_window", None) for layer in T.DynamicCache(config=built).layers]
        assert windows == [_WINDOW if s else None for s in reading.config.sliding_layers()], built
    for n in (3, _WINDOW - 1, _WINDOW):
        report = make_report(reading.architecture, reading.config, n)
        after_prefill, during_step, decode = _cache_and_decode(T, model, config, n)
        assert report.kv_cache_elements_per_token * n == during_step, n
        if n < _WINDOW:  # between steps a sliding layer keeps W - 1 tokens
            assert report.kv_cache_elements_per_token * n == after_prefill, n
        assert report.kv_cache_elements_held(n) == after_prefill, n
        assert report.decode_flops == decode, n


@pytest.mark.reference
@pytest.mark.parametrize("model_type", list(_WINDOWED_FILES))
def test_past_the_window_each_sliding_layer_s_decode_step_reads_w_keys(T, host, tmp_path, model_type):
    """The default N is the context, and past the window the decode step is FlopCounterMode's: each layer that masks
    by the window reads the W keys transformers' sliding cache layer hands it, each other layer the N it holds.
    Where only some layers mask by it (Qwen2, Qwen2-MoE and Qwen3 from max_window_layers on) the stack is runs of
    sliding-window and global layers; it used to be one repeated layer, and N past the window, which transformers
    runs, was refused. The KV cache per token counts N tokens in every layer; the cache held after N tokens (the
    memory report's) counts W - 1 in a sliding layer, as transformers' does, and W during the step. Through the CLI
    too."""
    path, model_class, reading, config, model = _windowed(T, host, tmp_path, model_type)
    slides = reading.config.sliding_layers()
    assert all(slides) == (model_type in ("mistral", "phi3", "mixtral", "qwen3_moe")), slides
    assert make_report(reading.architecture, reading.config).seq_len == reading.config.max_positions
    for n in (_WINDOW + 1, _WINDOW + 4):
        report = make_report(reading.architecture, reading.config, n)
        after_prefill, during_step, decode = _cache_and_decode(T, model, config, n)
        assert report.decode_flops == decode, n
        formula = report.decode_formula(n).text()
        assert "W" in formula and ("N" in formula) == (not all(slides)), (n, formula)
        one_layer = report.kv_cache_elements_per_token // len(slides)  # the layers' caches are alike per token
        assert report.kv_cache_elements_per_token * n - during_step == sum(slides) * one_layer * (n - _WINDOW), n
        assert report.kv_cache_elements_held(n) == after_prefill, n  # the memory report's: W - 1 in a sliding layer
    code, out, err = count_via_cli(path, model_class, _WINDOW + 4)
    assert (code, err) == (0, "")
    assert json.loads(out)["flops"]["decode"] == _cache_and_decode(T, model, config, _WINDOW + 4)[2]


PUBLISHED_FILES = Path(__file__).parent / "data" / "hf_published"


def test_published_mistral_7b_v0_1_counts_past_its_window(host, tmp_path, capsys):
    """mistralai/Mistral-7B-v0.1's config.json (tests/data/hf_published): every layer masks by its 4,096-token
    sliding_window, so N defaults to its 32,768 positions and 8,192 tokens are counted, the decode step reading
    W = 4,096 keys in every layer: its 32 layers, 4,096 wide, spend 4·L·W·d FLOPs on attention products, against
    4·L·N·d where the same file has sliding_window null, as Mistral 7B v0.2 and later publish it."""
    published = json.loads((PUBLISHED_FILES / "mistralai--Mistral-7B-v0.1.json").read_text())
    path = write_json(tmp_path, published)
    assert main(["count", "--hf-config", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"]["seq_len"] == published["max_position_embeddings"] == 32768
    assert main(["count", "--hf-config", str(path), "--seq-len", "8192", "--json"]) == 0
    windowed = json.loads(capsys.readouterr().out)["flops"]
    without = write_json(tmp_path, {**published, "sliding_window": None}, "v0.2.json")
    assert main(["count", "--hf-config", str(without), "--seq-len", "8192", "--json"]) == 0
    full = json.loads(capsys.readouterr().out)["flops"]
    assert windowed["forward"] == full["forward"]  # eager attention computes every product under either mask
    assert full["decode"] - windowed["decode"] == 4 * 32 * (8192 - 4096) * 4096
    assert main(["count", "--hf-config", str(without), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"]["seq_len"] == published["max_position_embeddings"]
