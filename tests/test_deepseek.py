"""The deepseek architecture (DeepSeek-V2 and V3: multi-head latent attention, dense then MoE layers) against transformers.

Every expected parameter count is ``sum(p.numel() for p in model.parameters())`` of the transformers 5.23 class named
beside it, built on the meta device; every expected active count is that total less the routed experts one token does
not use, read off the model's own tensors (each MoE layer's fused ``mlp.experts`` tensors hold ``E`` experts along
their first dimension, ``E - k`` of them unused). FLOPs are what ``torch.utils.flop_counter.FlopCounterMode`` reports
for one eager forward pass (eager attention, eager experts) of small models with random weights on the CPU, since
routing reads the router's scores; each token reaches exactly ``top_k`` distinct experts, so the count does not
depend on the weights. Prefill, decode and training FLOPs are FlopCounterMode's on the real cached calls and a real
backward pass, and the KV cache is what transformers' ``DynamicCache`` holds after a forward pass. The config.json
sweeps change one key each table reads at a time and count the file with `archzoo count --hf-config` as every class,
against the class transformers builds from the same file, its FLOPs by test_hf_published's weightless pass (test_llama's
compare_config_json: exact, or refused by both).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import archzoo
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.registry import load_registry
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, build_model, check_plugin
from family_checks import saved_config, write_json
from transformers_models import forward_flops, n_params, unused_expert_params

pytestmark = pytest.mark.sweep

ROOT = Path(__file__).resolve().parents[1]

#: transformers 5.23, DeepseekV3ForCausalLM(DeepseekV3Config(max_position_embeddings=163840)) on the meta device:
#: DeepSeek-V3 (DeepSeek-AI 2024, arXiv:2412.19437, Sec. 4.2: 61 layers, width 7,168, 128 heads, 3 dense layers,
#: 256 routed experts of 2,048, top 8, 1 shared expert; the report prints 671B total, 37B activated)
V3_PARAMS = 671_026_404_352
#: the same model less the 248 routed experts one token does not use (3 x 7,168 x 2,048 each) in each of its
#: 58 MoE layers
V3_ACTIVE = 37_552_282_624

CLASSES = {"deepseek_v2": "DeepseekV2", "deepseek_v3": "DeepseekV3"}


# ---- the plugin and its defaults ----------------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.slow  # about 20 s: the kit builds the 671B default on the meta device, block by block
def test_plugin_passes_check_plugin(host):
    """The kit's checks, with the deepseek_v2 table saying why a file of DeepseekV2Config's defaults is not counted:
    they give every layer experts but no expert count per token, which transformers cannot run (next test)."""
    assert check_plugin("deepseek") == []
    assert hf_table(host.hf_readers()["deepseek_v2"].reader).defaults_unrunnable


@pytest.mark.reference
def test_deepseek_v2_without_num_experts_per_tok_fails_in_transformers(T):
    import torch

    config = T.DeepseekV2Config(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, kv_lora_rank=8, q_lora_rank=8,
        qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4, n_routed_experts=4, moe_intermediate_size=8,
    )  # fmt: skip
    assert config.num_experts_per_tok is None
    model = build_model("DeepseekV2Model", config, device="cpu")
    with pytest.raises(TypeError):
        model(input_ids=torch.zeros(1, 4, dtype=torch.long))


def test_defaults_are_deepseek_v3(host):
    report = archzoo.count("deepseek")
    assert (report.params, report.active_params) == (V3_PARAMS, V3_ACTIVE)
    # MLA's latent cache (arXiv:2405.04434, Sec. 2.1.2 and Table 1: (d_c + d_h^R) l elements a token): 512 + 64 a layer
    assert report.kv_cache_elements_per_token == (512 + 64) * 61


@pytest.mark.reference
def test_deepseek_v3_figures_are_transformers_own(T, host):
    model = build_model("DeepseekV3ForCausalLM", T.DeepseekV3Config(max_position_embeddings=163840))
    assert n_params(model) == V3_PARAMS
    assert n_params(model) - unused_expert_params(model, top_k=8) == V3_ACTIVE
    # the router's correction bias is a buffer: checkpoints store it, model.parameters() does not count it
    buffers = [name for name, _ in model.named_buffers() if name.endswith("e_score_correction_bias")]
    assert len(buffers) == 58 and not any(n.endswith("e_score_correction_bias") for n, _ in model.named_parameters())
    ref = host.architecture("deepseek").reference(archzoo.count("deepseek").config)
    assert ref.target == "transformers.DeepseekV3ForCausalLM" and ref.device == "cpu"


# ---- config.json files of the published shapes, written by transformers' configuration classes ---------------

#: the shapes of the released config.json files (DeepSeek-V2 paper, arXiv:2405.04434, Sec. 3.1.2 and Appendix B.1;
#: DeepSeek-V3 report, arXiv:2412.19437, Sec. 4.2), with their routing keys
PUBLISHED_SHAPES: dict[str, tuple[str, dict[str, Any]]] = {
    "deepseek-v2": (
        "deepseek_v2",
        dict(
            vocab_size=102400, hidden_size=5120, intermediate_size=12288, moe_intermediate_size=1536,
            num_hidden_layers=60, num_attention_heads=128, num_key_value_heads=128, n_shared_experts=2,
            n_routed_experts=160, num_experts_per_tok=6, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=1536,
            qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, topk_method="group_limited_greedy", n_group=8,
            topk_group=3, routed_scaling_factor=16.0, max_position_embeddings=163840,
        ),
    ),
    "deepseek-v2-lite": (
        "deepseek_v2",
        dict(
            vocab_size=102400, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
            num_hidden_layers=27, num_attention_heads=16, num_key_value_heads=16, n_shared_experts=2,
            n_routed_experts=64, num_experts_per_tok=6, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=None,
            qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, topk_method="greedy",
            max_position_embeddings=163840,
        ),
    ),
    "deepseek-v3": ("deepseek_v3", dict(max_position_embeddings=163840)),
}  # fmt: skip


def _config_file(T, tmp_path: Path, model_type: str, kwargs: dict[str, Any]):
    return saved_config(tmp_path, getattr(T, f"{CLASSES[model_type]}Config")(**kwargs))


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED_SHAPES)
def test_published_shapes_via_hf_config(T, host, tmp_path, capsys, model_id):
    from archzoo.cli import main

    model_type, kwargs = PUBLISHED_SHAPES[model_id]
    path, config = _config_file(T, tmp_path, model_type, kwargs)
    model_class = f"{CLASSES[model_type]}ForCausalLM"
    assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["architecture"] == "deepseek"
    model = build_model(model_class, config)
    assert report["params"]["total"] == n_params(model)
    assert report["params"]["active"] == n_params(model) - unused_expert_params(model, config.num_experts_per_tok)


# ---- random small configurations: every option, every head, against transformers ------------------------------


def _random_config(rng: random.Random) -> dict[str, Any]:
    family = rng.choice(["deepseek_v2", "deepseek_v3"])
    n_experts = rng.randint(2, 6)
    n_layers = rng.randint(1, 3)
    heads = ["lm", "none", "sequence_classification"] + (["token_classification"] if family == "deepseek_v3" else [])
    v2 = family == "deepseek_v2"  # DeepSeek-V2's rotary product needs even offsets (see REFUSED)
    return dict(
        family=family,
        vocab_size=rng.randint(40, 120),
        d_model=rng.choice([16, 24, 32]),
        n_layers=n_layers,
        n_heads=rng.choice([1, 2, 4]),
        q_lora_rank=rng.choice([None, rng.randint(3, 12)]),
        kv_lora_rank=rng.randrange(2, 13, 2) if v2 else rng.randint(1, 12),
        qk_nope_head_dim=rng.randrange(2, 9, 2) if v2 else rng.randint(1, 8),
        qk_rope_head_dim=rng.choice([2, 4, 6]),
        v_head_dim=rng.randint(1, 8),
        d_ff=rng.randint(8, 40),
        n_dense_layers=rng.randint(0, n_layers + 1),
        n_experts=n_experts,
        top_k=rng.randint(1, n_experts),
        d_ff_expert=rng.randint(2, 12),
        n_shared_experts=rng.randint(0, 2),
        tie_embeddings=rng.random() < 0.3,
        attention_bias=rng.random() < 0.5,
        mlp_bias=v2 and rng.random() < 0.5,
        head=rng.choice(heads),
        num_labels=rng.randint(1, 5),
        max_positions=64,
    )


#: fixed cases covering every option at least once, then seeded random ones
CASES: list[dict[str, Any]] = [
    dict(family="deepseek_v3", vocab_size=97, d_model=32, n_layers=3, n_heads=4, q_lora_rank=12, kv_lora_rank=8,
         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, d_ff=40, n_dense_layers=1, n_experts=6, top_k=2,
         d_ff_expert=12, n_shared_experts=2, max_positions=64),
    dict(family="deepseek_v2", vocab_size=97, d_model=32, n_layers=3, n_heads=4, q_lora_rank=None, kv_lora_rank=8,
         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, d_ff=40, n_dense_layers=1, n_experts=6, top_k=2,
         d_ff_expert=12, n_shared_experts=2, max_positions=64, attention_bias=True, mlp_bias=True),
    dict(family="deepseek_v3", vocab_size=97, d_model=32, n_layers=2, n_heads=4, q_lora_rank=8, kv_lora_rank=8,
         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, d_ff=40, n_dense_layers=2, d_ff_expert=12,
         max_positions=64, head="token_classification", num_labels=3),
    dict(family="deepseek_v3", vocab_size=97, d_model=32, n_layers=2, n_heads=4, q_lora_rank=8, kv_lora_rank=8,
         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, d_ff=40, n_dense_layers=0, n_experts=4, top_k=3,
         d_ff_expert=12, n_shared_experts=0, max_positions=64, head="sequence_classification", tie_embeddings=True),
    dict(family="deepseek_v2", vocab_size=97, d_model=32, n_layers=2, n_heads=4, q_lora_rank=8, kv_lora_rank=8,
         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5, d_ff=40, n_dense_layers=1, n_experts=4, top_k=3,
         d_ff_expert=12, n_shared_experts=0, max_positions=64, head="none", mlp_bias=True),
] + [_random_config(random.Random(seed)) for seed in range(4)]  # fmt: skip


@pytest.mark.reference
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_counts_and_flops_equal_transformers(T, host, case):
    arch = host.architecture("deepseek")
    config = arch.config_model(**case)
    assert_blocks_match_modules(arch, config)
    assert_matches_reference(arch, config)


@pytest.mark.reference
@pytest.mark.parametrize("case", CASES[:2], ids=["v3", "v2-plain-query-biases"])
def test_prefill_decode_and_training_flops_equal_flop_counter_mode(T, host, case):
    from archzoo.reference import reference_decode_flops, reference_prefill_flops, reference_training_flops

    arch = host.architecture("deepseek")
    config = arch.config_model(**case)
    ref = arch.reference(config)
    report = make_report(arch, config, 9)
    assert report.prefill_flops == reference_prefill_flops(ref, 9)
    # a decode step expands every cached latent again (kv_b_proj over all N tokens), as transformers runs it
    assert report.decode_flops == reference_decode_flops(ref, 9)
    assert report.decode_at(3) == reference_decode_flops(ref, 3)
    assert report.training_flops == reference_training_flops(ref, 9)


@pytest.mark.reference
@pytest.mark.parametrize("case", CASES[:2], ids=["v3", "v2-plain-query"])
def test_kv_cache_is_the_latent_transformers_stores(T, host, case):
    """Per token and layer, the latent after its norm (kv_lora_rank) and the rotary key (qk_rope_head_dim)."""
    import torch

    arch = host.architecture("deepseek")
    config = arch.config_model(**case)
    ref = arch.reference(config)
    from archzoo.reference import build_reference

    model = build_reference(ref, "cpu")
    cache = T.DynamicCache(config=model.config)
    with torch.no_grad():
        model(input_ids=torch.zeros(1, 5, dtype=torch.long), past_key_values=cache, use_cache=True)
    stored = sum(layer.keys[0, :, 0].numel() + layer.values[0, :, 0].numel() for layer in cache.layers)
    assert make_report(arch, config).kv_cache_elements_per_token == stored
    assert stored == config.n_layers * (config.kv_lora_rank + config.qk_rope_head_dim)


# ---- config.json: what transformers reads, and what makes its forward pass fail ------------------------------

SMALL = dict(
    vocab_size=64, hidden_size=32, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
    first_k_dense_replace=1, kv_lora_rank=8, q_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4,
    max_position_embeddings=64,
)  # fmt: skip


def _write(tmp_path: Path, model_type: str, **change: Any) -> Path:
    data = {
        "model_type": model_type,
        **SMALL,
        **({"n_group": 2, "topk_group": 1} if model_type == "deepseek_v3" else {}),
    }
    data.update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


FILE_CASES = [
    ("deepseek_v3", "DeepseekV3Model", {}),
    ("deepseek_v3", "DeepseekV3ForCausalLM", {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}}),
    ("deepseek_v3", "DeepseekV3ForSequenceClassification", {"num_labels": 3, "rope_interleave": False}),
    ("deepseek_v3", "DeepseekV3ForTokenClassification", {"q_lora_rank": None, "attention_bias": True}),
    ("deepseek_v3", "DeepseekV3ForCausalLM", {"qk_nope_head_dim": 5, "kv_lora_rank": 7, "head_dim": 4,
                                              "qk_head_dim": 9}),
    ("deepseek_v3", "DeepseekV3Model", {"head_dim": 2}),  # angles for 2 channels broadcast over 4: transformers runs
    ("deepseek_v3", "DeepseekV3Model", {"head_dim": 3, "rope_interleave": False}),
    ("deepseek_v2", "DeepseekV2ForCausalLM", {"mlp_bias": True, "topk_method": "group_limited_greedy", "n_group": 2,
                                              "topk_group": 1, "moe_layer_freq": 1, "scoring_func": "softmax"}),
    ("deepseek_v2", "DeepseekV2Model", {"first_k_dense_replace": 5}),
    # the keys DeepSeek-V2's released files carry for DeepSeek's own code (auto_map), which transformers never reads
    ("deepseek_v2", "DeepseekV2ForCausalLM", {
        "aux_loss_alpha": 0.001, "seq_aux": True, "ep_size": 1, "moe_layer_freq": 1, "scoring_func": "softmax",
        "norm_topk_prob": False, "pretraining_tp": 1, "rope_theta": 10000,
        "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                         "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096},
        "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV2Config",
                     "AutoModelForCausalLM": "modeling_deepseek.DeepseekV2ForCausalLM"},
    }),
    ("deepseek_v2", "DeepseekV2ForSequenceClassification", {"n_shared_experts": 0, "mlp_bias": True,
                                                             "tie_word_embeddings": True}),
]  # fmt: skip


@pytest.mark.reference
@pytest.mark.parametrize("model_type, model_class, change", FILE_CASES, ids=[c[1] for c in FILE_CASES])
def test_config_json_counts_what_transformers_builds_from_it(T, host, tmp_path, model_type, model_class, change):
    path = _write(tmp_path, model_type, **change)
    reading = load_hf_config(path, host, hf_class=model_class)
    assert reading.model_class == model_class
    config = T.AutoConfig.from_pretrained(str(path))
    model = build_model(model_class, config, device="cpu")
    report = make_report(reading.architecture, reading.config, 7)
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 7, random_ids=True))


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(CLASSES))
def test_table_equals_the_transformers_configuration_class(T, host, model_type):
    """Fields and defaults, aliases (attribute_map), AutoModel's class, every model class; every key a saved
    configuration holds has a disposition."""
    import dataclasses
    import importlib

    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    from archzoo.hf_config import COMMON_KEYS, hf_table

    table = hf_table(host.hf_readers()[model_type].reader)
    config_class = getattr(T, f"{CLASSES[model_type]}Config")
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(config_class) if f.name not in common}
    assert dict(table.defaults) == fields
    # V3's num_mtp_layers -> num_nextn_predict_layers names no field; both keys are ignored in the table instead
    aliases = {a: n for a, n in config_class.attribute_map.items() if a != "num_mtp_layers"}
    assert dict(table.aliases) == aliases
    assert {"num_mtp_layers", "num_nextn_predict_layers"} <= set(table.ignored) or model_type == "deepseek_v2"
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == classes  # every head class is counted: none refused
    saved = config_class(num_experts_per_tok=2).to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(saved) - known == set()


#: config.json changes transformers builds but cannot run a forward pass of, each refused with the key named
REFUSED = [
    ("deepseek_v3", {"num_key_value_heads": 2}, "num_key_value_heads: 2 differs from num_attention_heads 4"),
    ("deepseek_v3", {"n_group": 3}, "n_group: 3 groups cannot split 4 experts"),
    ("deepseek_v3", {"n_group": 4}, "n_group: 4 groups cannot split 4 experts into equal groups of at least 2"),
    ("deepseek_v3", {"topk_group": 3}, "topk_group: the router cannot keep 3 of 2 expert groups"),
    ("deepseek_v2", {"topk_method": "noaux_tc"}, 'topk_method: "noaux_tc" is not a routing'),
    ("deepseek_v2", {"num_experts_per_tok": None}, "num_experts_per_tok: null"),
    ("deepseek_v2", {"qk_nope_head_dim": 5}, "qk_nope_head_dim: 5 is odd"),
    ("deepseek_v2", {"kv_lora_rank": 7}, "kv_lora_rank: 7 is odd"),
    ("deepseek_v3", {"head_dim": 2, "rope_interleave": False}, "head_dim: 2 makes DeepseekV3's rotary embedding 2"),
    ("deepseek_v3", {"head_dim": 8}, "head_dim: 8 makes DeepseekV3's rotary embedding 8 channels wide"),
    ("deepseek_v3", {"head_dim": None}, "head_dim: null makes DeepseekV3's rotary embedding 8 channels wide"),
]


@pytest.mark.reference
@pytest.mark.parametrize("model_type, change, message", REFUSED, ids=[m.split(":")[0] + str(i) for i, (_, _, m) in
                                                                      enumerate(REFUSED)])  # fmt: skip
def test_what_transformers_cannot_run_is_refused_naming_the_key(T, host, tmp_path, model_type, change, message):
    import torch

    path = _write(tmp_path, model_type, **change)
    with pytest.raises(HFConfigError) as refused:
        load_hf_config(path, host)
    text = str(refused.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text, text
    model = build_model(f"{CLASSES[model_type]}Model", T.AutoConfig.from_pretrained(str(path)), device="cpu")
    with pytest.raises((TypeError, RuntimeError, ValueError, IndexError, UnboundLocalError)):
        model(input_ids=torch.randint(0, 64, (1, 6)))


def test_a_quantisation_other_than_fp8_is_refused(host, tmp_path):
    path = _write(tmp_path, "deepseek_v3", quantization_config={"quant_method": "gptq", "bits": 4})
    with pytest.raises(HFConfigError, match=r"quantization_config: quant_method \"gptq\" packs weights"):
        load_hf_config(path, host)


def test_cli_refusal_is_one_line_and_exit_1(host, tmp_path, capsys):
    from archzoo.cli import main

    path = _write(tmp_path, "deepseek_v3", num_key_value_heads=2)
    assert main(["count", "--hf-config", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "num_key_value_heads" in err and "Traceback" not in err


# ---- the registry's entries: published total and active ---------------------------------------------------------

REGISTRY = load_registry([ROOT / "registry" / "deepseek"])
IDS = [e.id for e in REGISTRY]


def test_the_registry_holds_the_published_deepseek_models():
    assert not REGISTRY.problems and not REGISTRY.warnings
    assert set(IDS) >= {"deepseek-v2", "deepseek-v2-lite", "deepseek-v3", "deepseek-r1"}


@pytest.mark.parametrize("model_id", IDS)
def test_entry_publishes_total_and_active_within_rounding_or_reconciled(model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.spec.published is not None and entry.spec.published.active_value is not None
    assert entry.status in ("within-rounding", "reconciled")
    assert entry.active_status in ("within-rounding", "reconciled"), (entry.active_params, entry.active_gap)


@pytest.mark.reference
@pytest.mark.parametrize("model_id", IDS)
def test_entry_active_count_equals_the_reference_less_unused_experts(T, model_id):
    entry = REGISTRY.get_model(model_id)
    ref = entry.spec.reference
    model = build_model(ref.target.rpartition(".")[2], getattr(T, ref.config_class.rpartition(".")[2])(**ref.kwargs))
    assert entry.params == n_params(model)
    assert entry.active_params == n_params(model) - unused_expert_params(model, entry.config.top_k)


def test_deepseek_v3_entry_figures():
    figures = REGISTRY.get_model("deepseek-v3").figures()
    # DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: "671B total parameters with 37B activated"
    assert (figures["published_value"], figures["published_active_value"]) == (671 * 10**9, 37 * 10**9)
    assert (figures["params"], figures["active_params"]) == (V3_PARAMS, V3_ACTIVE)
    assert (figures["status"], figures["active_status"]) == ("within-rounding", "reconciled")


@pytest.mark.reference
@pytest.mark.parametrize("case", CASES[:2], ids=["v3", "v2-plain-query-biases"])
def test_moe_run_blocks_hold_what_each_moe_layer_of_transformers_holds(T, host, case):
    """The MoE run starts at index L_f of transformers' one ``layers`` list, which `archzoo verify` cannot name
    (a repeated block's copies are numbered from 0), so its blocks are compared here, layer by layer."""
    from archzoo.reference import build_reference

    arch = host.architecture("deepseek")
    config = arch.config_model(**case)
    model = build_reference(arch.reference(config))
    layers = model.model.layers
    blocks = {v.path: v.block.params.evaluate() for v in make_report(arch, config).root.visits()}
    layer = "deepseek.layers.moe_layers.moe_layer"
    expected = {
        layer: "",
        f"{layer}.attention": "self_attn",
        f"{layer}.mlp": "mlp",
        f"{layer}.mlp.gate": "mlp.gate",
        f"{layer}.mlp.shared_experts": "mlp.shared_experts",
    }
    for index in range(config.dense_layers, config.n_layers):
        for path, module in expected.items():
            held = layers[index].get_submodule(module) if module else layers[index]
            assert blocks[path] == n_params(held), (index, path)
        experts = layers[index].mlp.experts
        assert blocks[f"{layer}.mlp.experts.expert"] * config.n_experts == n_params(experts)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(CLASSES))
def test_weightless_moe_pass_counts_what_a_real_one_does(T, tmp_path, model_type):
    """test_hf_published counts the published DeepSeek files with zero weights and uncomputed products (every
    router score ties); on small files that shortcut gives the FLOPs of a forward pass with random weights."""
    from test_hf_published import _transformers_figures

    change = {"architectures": [f"{CLASSES[model_type]}ForCausalLM"], "first_k_dense_replace": 1}
    if model_type == "deepseek_v2":
        change.update(topk_method="group_limited_greedy", n_group=2, topk_group=1)
    path = _write(tmp_path, model_type, **change)
    _, n, params, flops = _transformers_figures(T, path, "auto")
    real = build_model(f"{CLASSES[model_type]}ForCausalLM", T.AutoConfig.from_pretrained(str(path)), device="cpu")
    assert (params, flops) == (n_params(real), forward_flops(real, n, random_ids=True))


# ---- config.json key by key: every key the deepseek_v2 and deepseek_v3 tables read, against transformers ----------

from test_llama import (  # noqa: E402
    assert_sweep_covers_the_table,
    compare_config_json,
    mixed_sweep_cases,
    sweep_case_ids,
    sweep_cases,
)

_SWEEP_BASE = dict(
    vocab_size=97, hidden_size=32, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=None, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
    first_k_dense_replace=1, kv_lora_rank=8, q_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4,
    max_position_embeddings=64, n_group=2, topk_group=1,
)  # fmt: skip
#: two layers, a dense one then one of 4 routed experts (2 a token, in 1 of 2 groups) and a shared one; a low-rank
#: query; V2 routes within groups too (its default, greedy, does not read n_group and topk_group)
BASES: dict[str, dict[str, Any]] = {
    "deepseek_v3": _SWEEP_BASE,
    "deepseek_v2": dict(_SWEEP_BASE, topk_method="group_limited_greedy"),
}
_YARN = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4, "original_max_position_embeddings": 16,
         "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}  # fmt: skip
_FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
_SHARED_SWEEP = dict(
    vocab_size=101,
    hidden_size=48,
    intermediate_size=40,
    moe_intermediate_size=12,
    num_hidden_layers=3,
    num_attention_heads=8,
    num_key_value_heads=4,  # the same as the heads: the only count transformers' latent attention runs with
    hidden_act="gelu_pytorch_tanh",
    max_position_embeddings=128,
    first_k_dense_replace=0,  # experts in every layer
    n_routed_experts=6,  # 2 groups of 3
    num_experts_per_tok=3,  # more than the kept group's 2: the rest are taken from the masked scores
    n_shared_experts=0,  # no shared experts (transformers keeps an MLP of width 0)
    topk_group=2,
    q_lora_rank=None,  # one plain query projection, as DeepSeek-V2-Lite
    qk_rope_head_dim=6,
    v_head_dim=7,
    attention_bias=True,
    tie_word_embeddings=True,
    pad_token_id=3,
    rope_parameters=_YARN,
    quantization_config=_FP8,  # DeepSeek-V3's fp8: every weight at its shape
    num_labels=5,
)
#: one value per key each table reads, changed alone; every one is a file transformers builds and runs
SWEEPS: dict[str, dict[str, Any]] = {
    "deepseek_v3": dict(
        _SHARED_SWEEP,
        n_group=1,
        kv_lora_rank=7,  # odd widths: DeepSeek-V3's classes take them
        qk_nope_head_dim=5,
        head_dim=2,  # angles for 2 channels, broadcast over the 4 rotary channels when interleaved
        rope_interleave=False,
        norm_topk_prob=False,
    ),
    "deepseek_v2": dict(
        _SHARED_SWEEP,
        n_group=4,  # 4 groups of 1
        kv_lora_rank=6,  # even: V2 turns its rotary channels as complex numbers at this offset
        qk_nope_head_dim=6,
        mlp_bias=True,
        topk_method="greedy",
    ),
}
#: (model type, change, what transformers 5.23 does with the file: "exact" where it runs it, "refused" where it
#: cannot build or run it) for edges the one-key sweep does not reach
EDGES = [
    ("deepseek_v3", dict(first_k_dense_replace=2), "exact"),  # every layer dense
    ("deepseek_v3", dict(first_k_dense_replace=5), "exact"),  # more dense layers than layers
    ("deepseek_v3", dict(n_shared_experts=2, num_hidden_layers=3), "exact"),
    ("deepseek_v3", dict(num_local_experts=6), "exact"),  # the alias of n_routed_experts
    ("deepseek_v3", dict(num_key_value_heads=2), "refused"),
    ("deepseek_v3", dict(n_group=3), "refused"),  # 3 groups cannot split 4 experts
    ("deepseek_v3", dict(n_group=4), "refused"),  # groups of 1: each group's score sums its 2 best experts
    ("deepseek_v3", dict(topk_group=3), "refused"),
    ("deepseek_v3", dict(num_experts_per_tok=5), "refused"),  # 5 of 4 experts
    ("deepseek_v3", dict(head_dim=8), "refused"),
    ("deepseek_v3", dict(num_hidden_layers=4, moe_layer_freq=3), "exact"),  # not read: experts from layer 1 on
    ("deepseek_v2", dict(num_experts=6, n_group=3), "exact"),  # the alias of n_routed_experts
    ("deepseek_v2", dict(topk_method="noaux_tc"), "refused"),
    ("deepseek_v2", dict(topk_method="group_limited_greedy", n_group=None), "refused"),
    ("deepseek_v2", dict(num_experts_per_tok=None), "refused"),
    ("deepseek_v2", dict(qk_nope_head_dim=5), "refused"),
    ("deepseek_v2", dict(kv_lora_rank=7), "refused"),
    ("deepseek_v2", dict(num_attention_heads=3), "refused"),  # 32 is not a multiple of 3
    ("deepseek_v2", dict(num_hidden_layers=4, moe_layer_freq=2), "exact"),  # not read
]
_IGNORED = dict(
    attention_dropout=0.3, aux_loss_alpha=0.5, bos_token_id=5, eos_token_id=6, ep_size=2, initializer_range=0.5,
    moe_layer_freq=2, norm_topk_prob=True, output_router_logits=True, pretraining_tp=2, qk_head_dim=99,
    rms_norm_eps=1e-3, routed_scaling_factor=2.5, scoring_func="sigmoid", seq_aux=False, use_cache=False,
)  # fmt: skip
#: the keys each table ignores, changed at once
IGNORED: dict[str, dict[str, Any]] = {
    "deepseek_v3": dict(
        {key: value for key, value in _IGNORED.items() if key != "norm_topk_prob"},  # V3's router reads it
        scoring_func="softmax",
        topk_method="noaux_tc",
        num_mtp_layers=2,
        num_nextn_predict_layers=1,
    ),
    "deepseek_v2": dict(_IGNORED, head_dim=16),
}


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
    type: transformers' parameters, and its forward FLOPs by test_hf_published's weightless mixture-of-experts pass
    (checked against a pass with random weights in test_weightless_moe_pass_counts_what_a_real_one_does)."""
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
    for model_class in (f"{CLASSES[model_type]}Model", f"{CLASSES[model_type]}ForSequenceClassification"):
        assert compare_config_json(T, host, path, model_class) == outcome, model_class


@pytest.mark.reference
@pytest.mark.parametrize("model_type", sorted(IGNORED))
def test_ignored_keys_change_no_figure(T, host, tmp_path, model_type):
    """DeepSeek's own routing and training keys, which transformers' classes never read, changed at once."""
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
