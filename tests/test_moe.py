"""The moe architecture (the llama plugin's mixture-of-experts decoder) against transformers' Mixtral and Qwen2-MoE.

Every expected parameter count is ``sum(p.numel() for p in model.parameters())`` of the transformers 5.23 class
named beside it, built on the meta device. Every expected active count is that total less the experts one token
does not use, read off the model's own tensors: each layer's fused ``mlp.experts`` tensors hold ``E`` experts
along their first dimension, so ``E - k`` of those slices are unused. Routing cannot run on the meta device, so
FLOPs are what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of small models
with random weights on the CPU (eager attention, eager experts): each token goes to exactly ``top_k`` experts,
so the count does not depend on the weights. Mixtral 8x7B's figures are pinned as literals (transformers 5.23,
``MixtralForCausalLM(MixtralConfig())`` on the meta device) and rebuilt from transformers in the same test.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

import archzoo
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.registry import load_registry
from archzoo.report import make_report
from archzoo.testing import build_model
from family_checks import saved_config
from transformers_models import forward_flops as _forward_flops
from transformers_models import n_params, unused_expert_params

pytestmark = pytest.mark.sweep

ROOT = Path(__file__).resolve().parents[1]

#: transformers 5.23, MixtralForCausalLM(MixtralConfig()) on the meta device: Mixtral 8x7B (Jiang et al. 2024,
#: arXiv:2401.04088, Table 1: 32 layers, width 4,096, 32 query and 8 key/value heads, 8 experts of width
#: 14,336, top 2, 32,000 tokens)
MIXTRAL_8X7B_PARAMS = 46_702_792_704
#: the same model less 6 unused experts (3 x 4,096 x 14,336 each) in each of its 32 layers
MIXTRAL_8X7B_ACTIVE = 12_879_925_248

CLASSES = {"mixtral": "Mixtral", "qwen2_moe": "Qwen2Moe"}


def forward_flops(model, seq_len: int) -> int:
    return _forward_flops(model, seq_len, random_ids=True)  # routing reads the tokens


def count(**config: Any):
    return archzoo.count("moe", **config)


# ---- published configurations -------------------------------------------------------------------------------


def test_defaults_are_mixtral_8x7b(host):
    report = count()
    assert (report.params, report.active_params) == (MIXTRAL_8X7B_PARAMS, MIXTRAL_8X7B_ACTIVE)


@pytest.mark.reference
def test_mixtral_8x7b_figures_are_transformers_own(T, host):
    model = build_model("MixtralForCausalLM", T.MixtralConfig())
    assert n_params(model) == MIXTRAL_8X7B_PARAMS
    assert n_params(model) - unused_expert_params(model, top_k=2) == MIXTRAL_8X7B_ACTIVE
    ref = host.architecture("moe").reference(count().config)
    assert ref.target == "transformers.MixtralForCausalLM" and ref.device == "cpu"
    from archzoo.reference import reference_params

    assert reference_params(ref) == MIXTRAL_8X7B_PARAMS  # parameters are counted on the meta device


#: released config.json shapes, counted through `archzoo count --hf-config` from the file the Config class writes
PUBLISHED_FILES: dict[str, tuple[str, dict[str, Any]]] = {
    # mistralai/Mixtral-8x22B-v0.1 config.json (the announcement prints 141B total, 39B active)
    "mixtral-8x22b": (
        "mixtral",
        dict(
            vocab_size=32000,
            hidden_size=6144,
            intermediate_size=16384,
            num_hidden_layers=56,
            num_attention_heads=48,
            num_key_value_heads=8,
            max_position_embeddings=65536,
            rope_parameters={"rope_type": "default", "rope_theta": 1e6},
        ),
    ),
    # Qwen/Qwen2-57B-A14B config.json (Qwen2 report, arXiv:2407.10671, Table 1; 8 shared experts of 2,560 fused)
    "qwen2-57b-a14b": (
        "qwen2_moe",
        dict(
            vocab_size=151936,
            hidden_size=3584,
            intermediate_size=18944,
            moe_intermediate_size=2560,
            shared_expert_intermediate_size=20480,
            num_experts=64,
            num_experts_per_tok=8,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            max_position_embeddings=131072,
        ),
    ),
    "mixtral-8x7b": ("mixtral", dict()),
    "qwen1.5-moe-a2.7b": ("qwen2_moe", dict()),  # Qwen2MoeConfig's defaults: Qwen1.5-MoE-A2.7B's shapes
}


def _config_file(T, tmp_path: Path, model_type: str, kwargs: dict[str, Any]):
    return saved_config(tmp_path, getattr(T, f"{CLASSES[model_type]}Config")(**kwargs))


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED_FILES)
def test_published_shapes_via_hf_config(T, host, tmp_path, capsys, model_id):
    from archzoo.cli import main

    model_type, kwargs = PUBLISHED_FILES[model_id]
    path, config = _config_file(T, tmp_path, model_type, kwargs)
    model_class = f"{CLASSES[model_type]}ForCausalLM"
    assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["architecture"] == "moe"
    model = build_model(model_class, config)
    assert report["params"]["total"] == n_params(model)
    assert report["params"]["active"] == n_params(model) - unused_expert_params(model, config.num_experts_per_tok)


# ---- the registry's entries: published total and active ---------------------------------------------------------

REGISTRY = load_registry([ROOT / "registry" / "moe"])
MOE_IDS = [e.id for e in REGISTRY]


def test_the_registry_holds_the_published_mixtures():
    assert not REGISTRY.problems and not REGISTRY.warnings
    assert set(MOE_IDS) >= {"mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b"}


@pytest.mark.parametrize("model_id", MOE_IDS)
def test_entry_publishes_total_and_active_within_rounding_or_reconciled(model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.spec.published is not None and entry.spec.published.active_params is not None
    assert entry.status in ("within-rounding", "reconciled")
    assert entry.active_status in ("within-rounding", "reconciled"), (entry.active_params, entry.active_gap)


@pytest.mark.reference
@pytest.mark.parametrize("model_id", MOE_IDS)
def test_entry_active_count_equals_the_reference_less_unused_experts(T, model_id):
    entry = REGISTRY.get_model(model_id)
    ref = entry.spec.reference
    model = build_model(ref.target.rpartition(".")[2], getattr(T, ref.config_class.rpartition(".")[2])(**ref.kwargs))
    assert entry.params == n_params(model)
    assert entry.active_params == n_params(model) - unused_expert_params(model, entry.config.top_k)


def test_mixtral_8x7b_entry_figures():
    entry = REGISTRY.get_model("mixtral-8x7b")
    figures = entry.figures()
    # Jiang et al. 2024, abstract: "47B parameters, but only uses 13B active parameters"
    assert (figures["published_value"], figures["published_active_value"]) == (47 * 10**9, 13 * 10**9)
    assert (figures["params"], figures["active_params"]) == (MIXTRAL_8X7B_PARAMS, MIXTRAL_8X7B_ACTIVE)
    assert figures["active_gap"] == pytest.approx((MIXTRAL_8X7B_ACTIVE - 13 * 10**9) / (13 * 10**9))
    assert (figures["status"], figures["active_status"]) == ("within-rounding", "within-rounding")


# ---- random small configurations: parameters on the meta device, FLOPs on the CPU -----------------------------


def _random_config(rng: random.Random) -> dict[str, Any]:
    n_heads = rng.choice([1, 2, 3, 4])
    n_experts = rng.randint(1, 6)
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(40, 200),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in range(1, n_heads + 1) if n_heads % k == 0]),
        d_model=n_heads * 2 * rng.randint(1, 5),
        n_experts=n_experts,
        top_k=rng.randint(1, n_experts),
        d_ff_expert=rng.randint(4, 40),
        max_positions=rng.randint(16, 64),
        tie_embeddings=rng.random() < 0.5,
        activation=rng.choice(["silu", "gelu_pytorch_tanh", "relu"]),
        head=rng.choice(["lm", "lm", "none"]),
    )
    if rng.random() < 0.5:
        config.update(family="qwen2_moe", d_ff_shared=rng.randint(4, 40), qkv_bias=rng.random() < 0.7)
        if rng.random() < 0.6:  # layers without experts: a dense feed-forward of width d_ff
            layers = config["n_layers"] = rng.randint(2, 5)
            config.update(
                sparse_step=rng.randint(1, 3),
                dense_layers=tuple(sorted(rng.sample(range(layers), rng.randint(0, layers)))),
                d_ff=rng.randint(4, 40),
            )
    elif rng.random() < 0.4:
        config["d_head"] = 2 * rng.randint(1, 6)  # Mixtral builds any head width
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(16)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_against_transformers(T, host, config):
    from archzoo.reference import reference_flops

    report = count(**config)
    ref = report.architecture.reference(report.config)
    assert ref is not None, config
    family = "qwen2_moe" if config.get("d_ff_shared") else "mixtral"
    assert ref.target == f"transformers.{CLASSES[family]}{'ForCausalLM' if config['head'] == 'lm' else 'Model'}"
    model_class, config_class = ref.target.rpartition(".")[2], ref.config_class.rpartition(".")[2]
    meta = build_model(model_class, getattr(T, config_class)(**ref.kwargs))
    assert report.params == n_params(meta), config
    assert report.active_params == n_params(meta) - unused_expert_params(meta, config["top_k"]), config
    cpu = build_model(model_class, getattr(T, config_class)(**ref.kwargs), device="cpu")
    for n in (1, 7):
        expected = forward_flops(cpu, n)
        assert count(**config, seq_len=n).flops == expected, (config, n)
        assert reference_flops(ref, n) == expected, (config, n)  # archzoo.reference's CPU path


def test_top_k_must_not_exceed_the_experts(host):
    with pytest.raises(archzoo.ConfigError, match=r"top_k: each token cannot run through 3 of 2 experts"):
        count(n_experts=2, top_k=3)


def test_no_reference_where_no_class_builds_the_configuration(host):
    arch = host.architecture("moe")
    for config in (dict(mlp_bias=True), dict(out_bias=True), dict(qkv_bias=True), dict(norm="layer_norm_no_affine")):
        assert arch.reference(count(**config).config) is None, config
    # a shared expert is Qwen2-MoE's, whatever the family asked for
    assert arch.reference(count(d_ff_shared=64).config).target == "transformers.Qwen2MoeForCausalLM"


def test_dense_references_stay_on_the_meta_device(host):
    assert host.architecture("llama").reference(archzoo.count("llama").config).device == "meta"


def test_the_tree_holds_experts_and_the_shared_expert(host):
    report = count(
        family="qwen2_moe", d_ff_shared=128, n_experts=4, top_k=2, d_ff_expert=32, d_model=64, n_heads=4, n_kv_heads=2
    )
    visits = {v.path: v for v in report.root.visits()}
    expert = visits["moe.layers.layer.mlp.experts.expert"]
    assert (expert.stored.evaluate(), expert.executed.evaluate()) == (32 * 4, 32 * 2)
    shared = visits["moe.layers.layer.mlp.shared"]
    assert shared.block.params.evaluate() == 3 * 64 * 128 + 64  # gate, up, down of width 128, and Linear(64, 1)
    assert visits["moe.layers.layer.mlp.gate"].block.params.evaluate() == 64 * 4


# ---- Hugging Face config.json ---------------------------------------------------------------------------------


def test_model_types_are_read_into_moe(host):
    types = host.hf_model_types()
    assert {t: types[t].name for t in CLASSES} == {t: "moe" for t in CLASSES}


@pytest.mark.reference
@pytest.mark.parametrize("model_type", CLASSES)
def test_table_equals_the_transformers_configuration_class(T, host, model_type):
    import dataclasses
    import importlib

    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    from archzoo.hf_config import COMMON_KEYS

    table = hf_table(host.hf_readers()[model_type].reader)
    config_class = getattr(T, table.config_class)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {f.name: f.default for f in dataclasses.fields(config_class) if f.name not in common}
    assert dict(table.aliases) == config_class.attribute_map
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    module = importlib.import_module(config_class.__module__.replace("configuration_", "modeling_"))
    model_classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == model_classes  # every head class is counted: none refused
    assert not table.unsupported_classes
    full = config_class().to_dict()
    assert all(k in table.read or k in table.ignored or k in table.refused or k in COMMON_KEYS for k in full)


def _random_file(rng: random.Random, model_type: str) -> dict[str, Any]:
    heads = rng.choice([2, 4])
    n_experts = rng.randint(2, 6)
    kwargs: dict[str, Any] = dict(
        vocab_size=rng.randint(40, 120),
        hidden_size=heads * 2 * rng.randint(2, 4),
        num_attention_heads=heads,
        num_key_value_heads=rng.choice([1, heads]),
        num_hidden_layers=rng.randint(1, 2),
        num_experts_per_tok=rng.randint(1, n_experts),
        tie_word_embeddings=rng.random() < 0.5,
        max_position_embeddings=32,
        hidden_act=rng.choice(["silu", "gelu"]),
        # keys archzoo ignores, changed: they must leave transformers' figures where archzoo counts them
        output_router_logits=rng.random() < 0.5,
        router_aux_loss_coef=0.5,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3},
    )
    if model_type == "mixtral":
        kwargs.update(
            num_local_experts=n_experts,
            intermediate_size=rng.randint(8, 40),
            router_jitter_noise=0.1,
            sliding_window=9,  # N = 9 below: at the window, where a sliding layer is given its mask
            rms_norm_eps=1e-3,
        )
        if rng.random() < 0.5:
            kwargs["head_dim"] = 2 * rng.randint(2, 5)
    else:
        kwargs.update(
            num_experts=n_experts,
            moe_intermediate_size=rng.randint(8, 40),
            shared_expert_intermediate_size=rng.randint(8, 40),
            intermediate_size=rng.randint(8, 40),
            qkv_bias=rng.random() < 0.5,
            # a negative step acts as its absolute value; listed layers beyond the stack change nothing
            decoder_sparse_step=rng.choice([1, 2, 3, -2]),
            mlp_only_layers=rng.choice([None, [], [0], [1, 5], [-1]]),
            norm_topk_prob=True,
            use_sliding_window=True,
            sliding_window=9,
            max_window_layers=1,
        )
        layers, step = kwargs["num_hidden_layers"], abs(kwargs["decoder_sparse_step"])
        if not any((i + 1) % step == 0 and i not in (kwargs["mlp_only_layers"] or []) for i in range(layers)):
            # no layer has experts: transformers 5.23's load-balancing loss then indexes an empty tuple of router
            # scores (an IndexError in forward), so the router's outputs stay off
            kwargs["output_router_logits"] = False
    return kwargs


@pytest.mark.slow  # over 10 s on the shared machine
@pytest.mark.reference
@pytest.mark.parametrize("model_type", CLASSES)
def test_random_files_against_transformers_on_the_cpu(T, host, tmp_path, model_type):
    """Random small config.json files, each counted as both classes, against the class built from the same file
    with random weights on the CPU (``train()``, as archzoo.reference measures, so the router's jitter runs)."""
    import torch

    rng = random.Random(model_type)
    for _ in range(4):
        kwargs = _random_file(rng, model_type)
        path, _ = _config_file(T, tmp_path, model_type, kwargs)
        for model_class in (f"{CLASSES[model_type]}Model", f"{CLASSES[model_type]}ForCausalLM"):
            reading = load_hf_config(path, host, hf_class=model_class)
            assert reading.architecture.name == "moe"
            assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"
            config = T.AutoConfig.from_pretrained(str(path))
            model = build_model(model_class, config, device="cpu").train()
            with torch.no_grad():
                figures = (n_params(model), forward_flops(model, 9))
            report = make_report(reading.architecture, reading.config, 9)
            assert (report.params, report.flops) == figures, (kwargs, model_class)
            assert report.active_params == figures[0] - unused_expert_params(model, kwargs["num_experts_per_tok"])


def test_num_experts_is_mixtral_alias_of_num_local_experts(host, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mixtral", "num_experts": 4, "num_experts_per_tok": 1}))
    reading = load_hf_config(path, host)
    assert (reading.config.n_experts, reading.config.top_k, reading.config.family) == (4, 1, "mixtral")


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (  # transformers' decoder layer computes (i + 1) % 0: a ZeroDivisionError
            {"model_type": "qwen2_moe", "decoder_sparse_step": 0},
            None,
            "{path}: decoder_sparse_step: 0, by which transformers' decoder layer divides the layer number (a "
            "ZeroDivisionError); give 1 for experts in every layer, or k for every k-th",
        ),
        (
            {"model_type": "qwen2_moe", "num_experts": 0},
            None,
            "{path}: num_experts: 0 gives every layer a dense feed-forward and no router or shared expert: a dense "
            "decoder, which archzoo's moe architecture does not express; count it as model type qwen2 (the same "
            "layers) or give the experts",
        ),
        (
            {"model_type": "qwen2_moe", "shared_expert_intermediate_size": 0},
            None,
            "{path}: shared_expert_intermediate_size: 0 leaves Qwen2-MoE's shared expert without width while its "
            "gate Linear(hidden_size, 1) remains, which archzoo's moe architecture cannot express (d_ff_shared 0 "
            "means no shared expert and no gate); give the shared expert a width",
        ),
        (
            {"model_type": "qwen2_moe", "num_key_value_heads": None},
            None,
            "{path}: num_key_value_heads: null, which Qwen2MoeConfig keeps as null and its attention cannot divide "
            "the heads by; give the number of key/value heads (num_attention_heads for one per query head)",
        ),
        (
            {"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3},
            None,
            "{path}: num_experts_per_tok, read as top_k: each token cannot run through 3 of 2 experts; choose "
            "top_k between 1 and n_experts (2)",
        ),
        (  # transformers 5.23 has no such class
            {"model_type": "mixtral"},
            "MixtralForMultipleChoice",
            "--hf-class: 'MixtralForMultipleChoice' is not a mixtral model class archzoo counts; did you mean "
            "'MixtralForQuestionAnswering'? supported: MixtralModel, MixtralForCausalLM, MixtralForSequenceClassification, "
            "MixtralForTokenClassification, MixtralForQuestionAnswering",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host, hf_class=hf_class)
    assert str(info.value) == message.format(path=path)


def test_count_neutral_keys_are_ignored_with_a_reason(host, tmp_path):
    path = tmp_path / "config.json"
    data = {"model_type": "qwen2_moe", "norm_topk_prob": True, "intermediate_size": 99, "output_router_logits": True}
    path.write_text(json.dumps(data))
    reading = load_hf_config(path, host)
    keys = {k.key: k for k in reading.keys}
    # the router's settings change no count but what a training step saves: read into the configuration
    assert keys["norm_topk_prob"].disposition != "ignored" and reading.config.norm_topk_prob is True
    assert keys["output_router_logits"].disposition != "ignored" and reading.config.output_router_logits is True
    # the dense width is read, and sizes nothing while every layer has experts
    assert keys["intermediate_size"].disposition != "ignored" and reading.config.d_ff == 99
    assert "d_ff" not in archzoo.count("moe", **reading.config.model_dump()).root.params.text()


# ---- archzoo verify: the block mapping --------------------------------------------------------------------------

VERIFY_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "mixtral": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, n_experts=4, top_k=2, d_ff_expert=40),
        "MixtralForCausalLM",
    ),
    "qwen2-moe-base": (
        dict(
            vocab_size=97,
            d_model=48,
            n_layers=2,
            n_heads=4,
            n_kv_heads=1,
            n_experts=3,
            top_k=1,
            d_ff_expert=40,
            d_ff_shared=24,
            qkv_bias=True,
            head="none",
            family="qwen2_moe",
        ),
        "Qwen2MoeModel",
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    from archzoo.verify import verify_target

    config, target = VERIFY_CASES[case]
    path = tmp_path / "small.yaml"
    entry = dict(architecture="moe", title="A test entry", year=2024, summary="Written by the tests.", config=config)
    path.write_text(yaml.safe_dump(entry, sort_keys=False))
    verification = verify_target(str(path), host=host)
    assert verification.target == f"transformers.{target}"
    assert verification.ok, verification.render()
    mapped = {row.path for row in verification.blocks}
    layer = "moe.layers.layer"
    assert {f"{layer}.attention.q_proj", f"{layer}.mlp.gate", f"{layer}.mlp.experts.expert", "moe.final_norm"} <= mapped
    assert (f"{layer}.mlp.shared.shared_expert_gate" in mapped) is bool(config.get("d_ff_shared"))
    assert all(within for _, within in verification.unmapped), verification.unmapped


# ---- layers without experts: Qwen2-MoE's decoder_sparse_step and mlp_only_layers ---------------------------------

SPARSE_CASES = {  # (sparse_step, dense_layers) over 6 layers; which layers have experts is transformers' rule
    "every-second": (2, ()),
    "every-third-less-layer-5": (3, (5,)),
    "listed-dense": (1, (0, 1, 4)),
    "no-experts-left": (2, (1, 3, 5)),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", SPARSE_CASES)
def test_sparse_steps_and_dense_layers_against_qwen2_moe(T, host, case):
    step, dense = SPARSE_CASES[case]
    config = dict(
        family="qwen2_moe",
        vocab_size=90,
        d_model=32,
        n_layers=6,
        n_heads=4,
        n_kv_heads=2,
        n_experts=4,
        top_k=2,
        d_ff_expert=24,
        d_ff_shared=16,
        qkv_bias=True,
        sparse_step=step,
        dense_layers=dense,
        d_ff=56,
    )
    report = count(**config, seq_len=5)
    ref = report.architecture.reference(report.config)
    assert ref.target == "transformers.Qwen2MoeForCausalLM"
    assert (ref.kwargs["decoder_sparse_step"], ref.kwargs["mlp_only_layers"]) == (step, list(dense))
    model = build_model("Qwen2MoeForCausalLM", T.Qwen2MoeConfig(**ref.kwargs), device="cpu")
    assert report.params == n_params(model)
    assert report.active_params == n_params(model) - unused_expert_params(model, 2)
    assert report.flops == forward_flops(model, 5)
    # the tree shows which layers run experts, as transformers built them
    moe_layers = [i for i, layer in enumerate(model.model.layers) if hasattr(layer.mlp, "experts")]
    runs = {c.name: c.positions for c in report.root.children[1].children}
    if moe_layers and len(moe_layers) < 6:
        assert runs == {
            "dense_layers": tuple(i for i in range(6) if i not in moe_layers),
            "moe_layers": tuple(moe_layers),
        }
    else:
        assert report.root.children[1].repeat.evaluate() == 6


def test_dense_layers_need_a_width_and_must_lie_in_the_stack(host):
    with pytest.raises(archzoo.ConfigError, match=r"d_ff: sparse_step and dense_layers leave layers with a dense"):
        count(sparse_step=2)
    with pytest.raises(archzoo.ConfigError, match=r"dense_layers: layer 40 is not one of the 32 layers \(0 to 31\)"):
        count(dense_layers=(40,), d_ff=8)
    # Mixtral gives every layer experts: a stack with dense layers is built by Qwen2-MoE only
    assert host.architecture("moe").reference(count(sparse_step=2, d_ff=64).config) is None
