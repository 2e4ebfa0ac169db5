"""The gpt_oss plugin against transformers: defaults (gpt-oss-120b), random small configurations over every option,
config.json files key by key, every head class, the KV cache, and the decode step on both sides of the window.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the GptOss class transformers 5.23 builds
(on the meta device, or on the CPU where routing reads values), what ``torch.utils.flop_counter.FlopCounterMode``
reports for one eager forward pass of batch 1 (eager experts: each expert's matmuls on the tokens routed to it), or
the elements transformers' cache holds. The checks every decoder family makes are `family_checks.RotaryDecoderChecks'`,
through archzoo's kit for plugin authors (`archzoo.testing`); this module gives gpt-oss's facts and its own checks.
"""

from __future__ import annotations

import json
import random

import pytest

from archzoo.architecture import parse_config
from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import make_report
from family_checks import (
    DecoderFamily,
    RotaryDecoderChecks,
    assert_config_json_matches,
    assert_head_class_matches,
    build_model,
    changed_settings,
    counter,
    write_json,
)

count = counter("gpt_oss")

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "GptOssForCausalLM",
    "none": "GptOssModel",
    "sequence_classification": "GptOssForSequenceClassification",
    "token_classification": "GptOssForTokenClassification",
}
KINDS = ("sliding_attention", "full_attention")


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([2, 4, 8])
    n_layers = rng.randint(1, 4)
    n_experts = rng.randint(1, 6)
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=8 * rng.randint(1, 6),
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in (1, 2, n_heads) if n_heads % k == 0]),
        d_head=2 * rng.randint(1, 8),
        d_ff=rng.randint(1, 40),
        n_experts=n_experts,
        top_k=rng.randint(1, n_experts),
        sliding_window=rng.randint(1, 9),
        attention_bias=rng.random() < 0.7,
        tie_embeddings=rng.random() < 0.3,
        head=rng.choice(list(CLASSES)),
        num_labels=rng.randint(1, 5),
    )
    if rng.random() < 0.5:
        config["layer_types"] = [rng.choice(KINDS) for _ in range(n_layers)]
    return config


#: one value per key the table reads, each changed alone (tests/test_hf_sweep.py reads it too)
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=3,
    num_attention_heads=8,
    num_key_value_heads=1,
    head_dim=10,
    num_local_experts=5,
    num_experts_per_tok=3,
    max_position_embeddings=64,
    sliding_window=3,
    layer_types=["full_attention", "full_attention"],
    attention_bias=False,
    tie_word_embeddings=True,
    pad_token_id=3,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
    num_labels=5,
    quantization_config={"quant_method": "mxfp4"},
)

#: a small gpt-oss config.json: two layers (sliding, then global), four experts, top-2
BASE = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=40,
    num_local_experts=4,
    num_experts_per_tok=2,
    max_position_embeddings=64,
)


class TestGptOss(RotaryDecoderChecks):
    @pytest.mark.reference
    def test_defaults_are_transformers_defaults(self, T, host) -> None:
        """The configuration's defaults (gpt-oss-120b) hold the parameters GptOssConfig()'s causal LM holds, built on
        the meta device; its FLOPs need real weights (routing reads them), which 117B parameters do not fit on this
        machine, so they are checked on the small configurations below, through the same tree."""
        from family_checks import n_params

        model = build_model("GptOssForCausalLM", T.GptOssConfig())
        assert count().params == n_params(model)

    FAMILY = DecoderFamily(
        architecture="gpt_oss",
        classes=CLASSES,
        config_class="GptOssConfig",
        modeling="transformers.models.gpt_oss.modeling_gpt_oss",
        configs=[_random_config(random.Random(seed)) for seed in range(12)],
        kv_cache=[
            dict(vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_head=8, d_ff=16, n_experts=3)
            | dict(top_k=2),
            dict(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, d_head=8, d_ff=16, n_experts=2)
            | dict(top_k=1, layer_types=["full_attention", "full_attention"]),
        ],
        refused=[
            (dict(n_heads=8, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3"),
            (dict(d_head=7), r"rotary positions turn pairs of channels"),
            (dict(n_experts=4, top_k=5), r"top_k: 5 experts per token, more than the 4 experts of a layer"),
            (dict(n_layers=3, layer_types=["full_attention"]), r"layer_types: 1 entries for 3 layers"),
            (dict(sliding_window=None), r"sliding_window: expected an integer, got an empty value \(null\)"),
        ],
        base=BASE,
        sweep=SWEEP,
        more_changes={
            "every layer sliding": dict(num_hidden_layers=3, layer_types=["sliding_attention"] * 3),
            "experts and heads": dict(num_local_experts=7, num_experts_per_tok=7, num_attention_heads=2),
        },
        ignored=dict(
            hidden_act="relu",
            swiglu_alpha=1.5,
            swiglu_limit=3.0,
            attention_dropout=0.3,
            classifier_dropout=0.4,
            router_aux_loss_coef=0.5,
            output_router_logits=True,
            experts_per_token=3,
            initial_context_length=2048,
            **changed_settings("rms_norm_eps"),
        ),
    )


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(vocab_size=301, d_model=64, n_layers=3, n_heads=8, n_kv_heads=2, d_head=8, d_ff=48, head=head)
    config |= dict(n_experts=4, top_k=2, num_labels=3)
    assert_head_class_matches(T, host, "gpt_oss", CLASSES[head], config, device="cpu")


def test_gpt_oss_120b_and_20b_are_the_published_totals(host):
    """The released shapes (GptOssConfig's defaults are gpt-oss-120b's; gpt-oss-20b has 24 layers of 32 experts)
    against the model card's Table 1 (OpenAI, arXiv:2508.10925): 116.83B parameters in all for gpt-oss-120b and 20.91B
    for gpt-oss-20b; 5.13B and 3.61B active, counted without the token embedding (archzoo's active figure includes
    it, V·d = 579,133,440)."""
    big, small = count(), count(n_layers=24, n_experts=32)
    embedding = 201_088 * 2_880
    assert round(big.params / 1e7) == 11_683 and round(small.params / 1e7) == 2_091
    assert round((big.active_params - embedding) / 1e7) == 513 and round((small.active_params - embedding) / 1e7) == 361


# ---- generation: prefill, decode and the KV cache past the window ---------------------------------------------------

_WINDOWED = dict(vocab_size=61, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2, d_head=8, d_ff=24, n_experts=3)
_WINDOWED |= dict(top_k=2, sliding_window=6)


@pytest.mark.reference
def test_prefill_and_decode_exact_on_both_sides_of_the_window(host):
    """Prefill and a decode step equal FlopCounterMode's on transformers' GptOssForCausalLM with its own cache, on
    both sides of the window W = 6: past it each sliding layer's step attends to the W keys transformers' sliding cache
    layer hands it, each global layer's to N."""
    from archzoo.reference import reference_decode_flops, reference_prefill_flops

    architecture = host.architecture("gpt_oss")
    ref = architecture.reference(parse_config(architecture, _WINDOWED))
    for n in (4, 6, 11):
        assert count(n, **_WINDOWED).prefill_flops == reference_prefill_flops(ref, n), n
    for n in (3, 6, 7, 9, 14):
        report = count(n, **_WINDOWED)
        assert report.decode_flops == reference_decode_flops(ref, n), n
        assert ("W" in report.decode_formula(n).text()) == (n > 6), n


@pytest.mark.reference
def test_kv_cache_past_the_window_is_what_transformers_cache_holds(T, host):
    """The KV cache per token times N is what transformers' DynamicCache holds after a forward pass of N <= W - 1
    tokens; past it each sliding layer keeps W - 1 tokens, which the cache archzoo says is held after N tokens (the
    memory report's) counts."""
    import torch

    architecture = host.architecture("gpt_oss")
    cfg = parse_config(architecture, _WINDOWED)
    ref = architecture.reference(cfg)
    config = T.GptOssConfig(**ref.kwargs)
    model = build_model("GptOssForCausalLM", config, device="cpu")
    per_token = count(**_WINDOWED).kv_cache_elements_per_token
    sliding = sum(cfg.slides())
    for n in (3, 5, 12):
        cache = T.DynamicCache(config=config)
        with torch.no_grad():
            model(input_ids=torch.zeros(1, n, dtype=torch.long), past_key_values=cache, use_cache=True)
        held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
        beyond = max(0, n - (cfg.sliding_window - 1))
        assert per_token * n - held == sliding * 2 * cfg.n_kv_heads * cfg.d_head * beyond, n
        assert count(**_WINDOWED).kv_cache_elements_held(n) == held, n  # what the memory report counts


# ---- the released files --------------------------------------------------------------------------------------------

#: the keys of the released config.json files besides the shapes (openai/gpt-oss-20b and -120b on the Hugging Face
#: hub): the MXFP4 quantization of the experts, and keys GptOssConfig does not declare
_RELEASED = dict(
    architectures=["GptOssForCausalLM"],
    experts_per_token=4,
    initial_context_length=4096,
    quantization_config={
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
        "quant_method": "mxfp4",
    },
    rope_scaling={
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
    rope_theta=150000,
    eos_token_id=200002,
    pad_token_id=199999,
    torch_dtype="bfloat16",
    transformers_version="4.55.0.dev0",
)


@pytest.mark.reference
def test_a_released_file_s_keys_are_read_as_transformers_reads_them(T, host, tmp_path):
    """A small file with every key the released files carry besides the shapes (MXFP4's quantization_config among
    them): transformers builds the model from it unquantized (from_config), and archzoo counts the same parameters
    and FLOPs, as the base model and the causal LM."""
    data = {"model_type": "gpt_oss", **BASE, "vocab_size": 200_100, **_RELEASED}
    path = write_json(tmp_path, data)
    assert_config_json_matches(T, host, path, [CLASSES["none"], CLASSES["lm"]])


def test_another_quantization_is_still_refused(host, tmp_path):
    """Only MXFP4, the released checkpoints' storage, is read as the unquantized model; another quant_method packs
    the weights into tensors archzoo does not count, and is refused naming the key."""
    data = {
        "model_type": "gpt_oss",
        **BASE,
        "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True},
    }
    with pytest.raises(HFConfigError) as refused:
        load_hf_config(write_json(tmp_path, data), host)
    assert 'quantization_config: quant_method "bitsandbytes" packs weights into tensors of other shapes' in str(
        refused.value
    ), refused.value


def test_the_released_shapes_read_from_a_file_are_the_defaults(host, tmp_path):
    """gpt-oss-120b's shapes in a config.json read as archzoo's defaults, which are gpt-oss-120b's, with its layer kinds
    as the file gives them; the count is the exact total an independent implementation prints, llama.cpp's
    ``general.parameter_count`` as Ollama shows it for gpt-oss:120b (116,829,156,672; equal to the Hugging Face API's
    safetensors total less the MXFP4 scales, 120,412,337,472 - 3,583,180,800; both sources are named in
    tests/data/hf_published/SOURCES-gpt-oss.md)."""
    shapes = dict(
        num_hidden_layers=36, num_local_experts=128, vocab_size=201088, hidden_size=2880, intermediate_size=2880,
        head_dim=64, num_attention_heads=64, num_key_value_heads=8, sliding_window=128, max_position_embeddings=131072,
        num_experts_per_tok=4, attention_bias=True, tie_word_embeddings=False,
        layer_types=["sliding_attention", "full_attention"] * 18,
    )  # fmt: skip
    reading = load_hf_config(
        write_json(tmp_path, {"model_type": "gpt_oss", **shapes, **_RELEASED}), host, hf_class="auto"
    )
    assert make_report(reading.architecture, reading.config).params == count().params == 116_829_156_672
    assert json.loads(reading.config.model_dump_json())["layer_types"] == shapes["layer_types"]
