"""The bart plugin against transformers: published configurations, random small ones, config.json files, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the transformers class named beside
it, built on the meta device (transformers 5.23), or what ``torch.utils.flop_counter.FlopCounterMode`` reports
for one eager forward pass of batch 1 with N source and N target tokens. The two published BART figures are
pinned as literals (measured with transformers 5.23, ``BartForConditionalGeneration`` on the meta device) and
rebuilt from transformers in the same test; the others are built on the fly. The tests use the installed plugin
host, and skip only when the bart plugin is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import COMMON_KEYS, hf_table, load_hf_config
from archzoo.report import Report, make_report
from archzoo.seq2seq_parts import BART_STACK_PARTS, bart_layer_modules
from archzoo.testing import build_model
from family_checks import counter, saved_config, write_json
from transformers_models import forward_flops, n_params

pytestmark = pytest.mark.sweep

FAMILY = {"bart": "Bart", "mbart": "MBart"}


count = counter("bart")


def reference_model(T, report: Report):
    ref = report.architecture.reference(report.config)
    config = getattr(T, ref.config_class.rpartition(".")[2])(**ref.kwargs)
    return build_model(ref.target.rpartition(".")[2], config)


# ---- published configurations -----------------------------------------------------------------------------

#: (archzoo config, BartConfig kwargs, parameters of BartForConditionalGeneration: transformers 5.23 on the
#: meta device). Shapes from fairseq's bart_base_architecture / bart_large_architecture (Lewis et al. 2020,
#: arXiv:1910.13461, Sec. 2.1) and the Hub's facebook/bart-base and facebook/bart-large config.json.
PUBLISHED: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {
    "bart-base": (
        dict(d_model=768, n_encoder_layers=6, n_decoder_layers=6, n_encoder_heads=12, n_decoder_heads=12)
        | dict(d_ff_encoder=3072, d_ff_decoder=3072),
        dict(d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12, decoder_attention_heads=12)
        | dict(encoder_ffn_dim=3072, decoder_ffn_dim=3072),
        139_420_416,
    ),
    # the plugin's defaults, and BartConfig's
    "bart-large": (dict(), dict(), 406_291_456),
}


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_bart_counts(host, model_id):
    config, _, expected = PUBLISHED[model_id]
    assert count(**config).params == expected
    assert count(head="none", **config).params == expected  # the LM head is tied, its bias a buffer


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
@pytest.mark.parametrize("model_class", ["BartForConditionalGeneration", "BartModel"])
def test_published_bart_figures_are_transformers_own(T, host, model_id, model_class):
    config, kwargs, expected = PUBLISHED[model_id]
    assert n_params(build_model(model_class, T.BartConfig(**kwargs))) == expected
    report = count(head="lm" if model_class != "BartModel" else "none", **config)
    assert report.architecture.reference(report.config).target == f"transformers.{model_class}"


@pytest.mark.reference
def test_final_logits_bias_is_a_buffer_not_a_parameter(T, host):
    model = build_model("BartForConditionalGeneration", T.BartConfig(vocab_size=97, d_model=16))
    assert "final_logits_bias" in dict(model.named_buffers())
    assert "final_logits_bias" not in dict(model.named_parameters())
    lm_head = next(b for p, _, b in count(vocab_size=97, d_model=16).root.walk() if p == "bart.lm_head")
    assert lm_head.params.evaluate() == 0 and lm_head.tied_to == "shared"


# ---- random small configurations: parameters and FLOPs -----------------------------------------------------


def _random_config(rng: random.Random) -> dict[str, Any]:
    heads = [1, 2, 4]
    d_model = 4 * rng.randint(1, 8)
    d_ff = rng.randint(4, 64)
    return dict(
        vocab_size=rng.randint(3, 200),
        max_positions=rng.randint(16, 40),
        d_model=d_model,
        n_encoder_layers=rng.randint(1, 3),
        n_decoder_layers=rng.randint(1, 3),
        n_encoder_heads=rng.choice(heads),
        n_decoder_heads=rng.choice(heads),
        d_ff_encoder=d_ff,
        d_ff_decoder=rng.choice([d_ff, rng.randint(4, 64)]),  # the same width on both sides: one symbol, d_ff
        activation=rng.choice(["gelu", "relu", "silu", "gelu_new"]),
        tie_embeddings=rng.random() < 0.7,
        scale_embedding=rng.random() < 0.5,
        pre_norm=rng.random() < 0.4,
        head=rng.choice(["lm", "lm", "none"]),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(20)]
SEQ_LENS = (1, 6, 13)


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_params_and_flops_equal_transformers(T, host, config):
    report = count(**config)
    model = reference_model(T, report)
    family = "MBart" if config["pre_norm"] else "Bart"
    assert type(model).__name__ == family + ("ForConditionalGeneration" if config["head"] == "lm" else "Model")
    assert report.params == n_params(model), config
    for n in SEQ_LENS:
        assert count(seq_len=n, **config).flops == forward_flops(model, n), (config, n)


@pytest.mark.reference
@pytest.mark.parametrize("pre_norm", [False, True], ids=["bart", "mbart"])
def test_kv_caches_equal_what_transformers_caches(T, host, pre_norm):
    """Decoder self-attention caches keys and values per target token, cross-attention per source token:
    the elements transformers' EncoderDecoderCache holds after one forward pass on the CPU."""
    import torch

    config = dict(vocab_size=50, d_model=24, n_encoder_layers=2, n_decoder_layers=3, n_decoder_heads=4)
    config |= dict(n_encoder_heads=2, d_ff_encoder=16, d_ff_decoder=8, max_positions=20, pre_norm=pre_norm)
    report = count(**config)
    model = reference_model(T, report)
    model = build_model(type(model).__name__, model.config, device="cpu")
    source, target = 7, 5
    with torch.no_grad():
        cache = model(
            input_ids=torch.ones(1, source, dtype=torch.long),
            decoder_input_ids=torch.ones(1, target, dtype=torch.long),
            use_cache=True,
        ).past_key_values

    def elements(layers) -> int:
        return sum(layer.keys.numel() + layer.values.numel() for layer in layers)

    assert report.kv_cache_elements_per_token * target == elements(cache.self_attention_cache.layers)
    assert report.cross_kv_cache_elements_per_source_token * source == elements(cache.cross_attention_cache.layers)


# ---- archzoo verify: the block mapping ---------------------------------------------------------------------

_SMALL = dict(vocab_size=97, d_model=48, n_encoder_layers=2, n_decoder_layers=1, n_encoder_heads=4)
_SMALL |= dict(n_decoder_heads=6, d_ff_encoder=80, d_ff_decoder=64, max_positions=30)
VERIFY_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "bart": (_SMALL, "BartForConditionalGeneration"),
    "bart-base-model": (dict(_SMALL, head="none"), "BartModel"),
    "bart-untied": (dict(_SMALL, tie_embeddings=False), "BartForConditionalGeneration"),
    "mbart": (dict(_SMALL, pre_norm=True, scale_embedding=True), "MBartForConditionalGeneration"),
    "mbart-untied-model": (dict(_SMALL, pre_norm=True, tie_embeddings=False, head="none"), "MBartModel"),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    from archzoo.verify import verify_target

    config, model_class = VERIFY_CASES[case]
    path = tmp_path / "small.yaml"
    path.write_text(
        yaml.safe_dump(
            dict(
                architecture="bart",
                title="A test entry",
                year=2020,
                summary="A configuration written by the test suite.",
                config=config,
            ),
            sort_keys=False,
        )
    )
    verification = verify_target(str(path), host=host)
    assert verification.target == f"transformers.{model_class}"
    assert verification.ok, verification.render()
    mapped = {row.path for row in verification.blocks}
    expected = {
        "bart.shared",
        "bart.encoder",
        "bart.encoder.position",
        "bart.encoder.embedding_norm",
        "bart.encoder.layers.layer",
        "bart.encoder.layers.layer.self_attention.q_proj",
        "bart.encoder.layers.layer.feed_forward_norm",
        "bart.decoder.layers.layer.cross_attention",
        "bart.decoder.layers.layer.cross_attention_norm",
        "bart.decoder.layers.layer.feed_forward.fc_out",
    }
    if config.get("head", "lm") == "lm":
        expected.add("bart.lm_head")
    if not config.get("tie_embeddings", True):
        expected |= {"bart.encoder.token", "bart.decoder.token"}
    if config.get("pre_norm"):
        expected |= {"bart.encoder.final_norm", "bart.decoder.final_norm"}
    assert expected <= mapped
    unmapped = {path.rpartition(".")[2] for path, _ in verification.unmapped}
    assert unmapped == {"scores"}, verification.unmapped  # only the attention products, which hold no parameters


#: transformers' BART-style base classes -> their configuration's small values, and the modules of a stack the family
#: maps itself beside the kit's `BART_STACK_PARTS` (BART's embedding norm, Whisper's convolutions)
_LAYOUTS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "BartModel": (dict(max_position_embeddings=4), ("layernorm_embedding",)),
    "MBartModel": (dict(max_position_embeddings=4), ("layernorm_embedding",)),
    "WhisperModel": (dict(num_mel_bins=3, max_source_positions=4, max_target_positions=4), ("conv1", "conv2")),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_class", _LAYOUTS)
def test_the_kits_bart_layout_is_transformers_own(T, model_class):
    """archzoo.seq2seq_parts' module names of a BART-style stack, which BART, mBART and Whisper map their blocks
    with: every parameter of each stack outside its layers lies in one of `BART_STACK_PARTS`' modules or the
    family's own, and every parameter of a layer lies in the module of a leaf row of `bart_layer_modules` (a row
    with no row below it), each leaf's module holding some (no name the layer does not have)."""
    kwargs, own = _LAYOUTS[model_class]
    config = getattr(T, model_class.replace("Model", "Config"))(
        vocab_size=11, d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, pad_token_id=None
    )
    for key, value in dict(kwargs, decoder_attention_heads=4, encoder_ffn_dim=6, decoder_ffn_dim=5).items():
        setattr(config, key, value)
    model = build_model(model_class, config)
    for side in ("encoder", "decoder"):
        stack = getattr(model, side)
        outside = {name.partition(".")[0] for name, _ in stack.named_parameters() if not name.startswith("layers.")}
        assert outside and outside <= set(BART_STACK_PARTS.values()) | set(own), (side, outside)
        rows = bart_layer_modules(decoder=side == "decoder")
        leaves = {m for block, names in rows.items() if not any(r.startswith(f"{block}.") for r in rows) for m in names}
        owners = {name.rpartition(".")[0] for name, _ in stack.layers[0].named_parameters()}
        assert owners == leaves, (side, owners ^ leaves)
        assert {m for names in rows.values() for m in names} <= dict(stack.layers[0].named_modules()).keys()


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------


def _config_file(T, tmp_path: Path, model_type: str, kwargs: dict[str, Any]) -> tuple[Path, Any]:
    return saved_config(tmp_path, getattr(T, f"{FAMILY[model_type]}Config")(**kwargs))


def test_both_types_are_read_by_the_bart_plugin(host, tmp_path):
    types = host.hf_model_types()
    assert {t: types[t].name for t in FAMILY} == {t: "bart" for t in FAMILY}
    for model_type, pre_norm in (("bart", False), ("mbart", True)):  # mBART: pre-LN, a final LayerNorm per stack
        reading = load_hf_config(write_json(tmp_path, {"model_type": model_type, "scale_embedding": True}), host)
        assert (reading.config.pre_norm, reading.config.scale_embedding, reading.config.head) == (
            pre_norm,
            True,
            "none",
        )


def test_the_plugin_is_well_formed(host):
    """archzoo.testing's self-checks: hooks, configuration keys, the defaults' tree and reference (built on the
    meta device, block by block), both readers, and the plugin's registry folders."""
    from archzoo.testing import check_plugin

    assert check_plugin("bart") == []


@pytest.mark.reference
@pytest.mark.parametrize("model_type", FAMILY)
def test_table_equals_the_transformers_configuration_class(T, host, model_type):
    """Fields and defaults, aliases (attribute_map), AutoModel's class, and every model class of the type."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = hf_table(host.hf_readers()[model_type].reader)
    config_class = getattr(T, table.config_class)
    assert config_class.model_type == model_type
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {f.name: f.default for f in dataclasses.fields(config_class) if f.name not in common}
    assert dict(table.aliases) == config_class.attribute_map
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    module = importlib.import_module(config_class.__module__.replace("configuration_", "modeling_"))
    model_classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) | set(table.unsupported_classes) == model_classes
    full = config_class().to_dict()  # a file transformers itself writes: no key is unknown
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) <= known


#: config.json files written by BartConfig / MBartConfig, each counted as both classes
HF_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "bart-base": ("bart", PUBLISHED["bart-base"][1]),
    "bart-large": ("bart", {}),
    "bart-small-untied": (
        "bart",
        dict(vocab_size=64, d_model=24, encoder_layers=2, decoder_layers=1, encoder_attention_heads=3)
        | dict(decoder_attention_heads=2, encoder_ffn_dim=40, decoder_ffn_dim=12, max_position_embeddings=18)
        | dict(tie_word_embeddings=False, scale_embedding=True, activation_function="relu"),
    ),
    "bart-aliases": (
        "bart",
        dict(vocab_size=64, hidden_size=32, num_hidden_layers=3, num_attention_heads=8, decoder_layers=2)
        | dict(encoder_ffn_dim=20, decoder_ffn_dim=20, max_position_embeddings=18, encoder_layerdrop=0.2),
    ),
    # Liu et al. 2020, mBART, arXiv:2001.08210 (facebook/mbart-large-cc25: 250,027 tokens, scaled embeddings)
    "mbart-large-cc25": ("mbart", dict(vocab_size=250027, scale_embedding=True)),
    "mbart-small": (
        "mbart",
        dict(vocab_size=64, d_model=24, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2)
        | dict(decoder_attention_heads=4, encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=18),
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", HF_CASES)
def test_config_files_count_like_transformers(T, host, tmp_path, capsys, case):
    model_type, kwargs = HF_CASES[case]
    path, config = _config_file(T, tmp_path, model_type, kwargs)
    small = config.vocab_size < 1000
    for suffix in ("Model", "ForConditionalGeneration"):
        model_class = FAMILY[model_type] + suffix
        assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json", "--seq-len", "9"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["architecture"] == "bart"
        model = build_model(model_class, config)
        assert report["params"]["total"] == n_params(model), (case, model_class)
        if small:
            assert report["flops"]["forward"] == forward_flops(model, 9), (case, model_class)


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key the bart table ignores, changed from its default at once: transformers' figures (built with
    real weights on the CPU, evaluated) still equal archzoo's."""
    changed = dict(encoder_layerdrop=0.3, decoder_layerdrop=0.4, dropout=0.2, attention_dropout=0.1)
    changed |= dict(activation_dropout=0.1, init_std=0.5, classifier_dropout=0.3)
    changed |= dict(bos_token_id=5, eos_token_id=6, decoder_start_token_id=7, forced_eos_token_id=8, is_decoder=True)
    assert set(changed) == set(hf_table(host.hf_readers()["bart"].reader).ignored)
    kwargs = dict(vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2)
    kwargs |= dict(decoder_attention_heads=2, encoder_ffn_dim=8, decoder_ffn_dim=8, max_position_embeddings=16)
    path, config = _config_file(T, tmp_path, "bart", kwargs | changed)
    for model_class in ("BartModel", "BartForConditionalGeneration"):
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 6)
        model = build_model(model_class, config, device="cpu")
        assert (report.params, report.flops) == (n_params(model), forward_flops(model, 6)), model_class
    keys = {k.key: k for k in reading.keys}
    assert keys["encoder_layerdrop"].disposition == "ignored" and "LayerDrop" in keys["encoder_layerdrop"].detail


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (
            {"model_type": "bart"},
            "PretrainedBartModel",
            "--hf-class: PretrainedBartModel is not counted by archzoo: a deprecated alias of the abstract "
            "BartPreTrainedModel, which builds no model; supported bart classes: BartModel, "
            "BartForConditionalGeneration, BartForSequenceClassification, BartForQuestionAnswering, BartForCausalLM",
        ),
        (  # transformers 5.23 has no such class
            {"model_type": "mbart"},
            "MBartForTokenClassification",
            "--hf-class: 'MBartForTokenClassification' is not a mbart model class archzoo counts; did you mean "
            "'MBartForSequenceClassification'? supported: MBartModel, MBartForConditionalGeneration, "
            "MBartForSequenceClassification, MBartForQuestionAnswering, MBartForCausalLM",
        ),
        (
            {"model_type": "bart", "vocab_size": 1},
            None,
            "{path}: pad_token_id: 1 is outside the vocabulary of 1 tokens, and transformers' token embedding "
            "refuses such a padding index; set pad_token_id to null or to a token id",
        ),
        (
            {"model_type": "bart", "d_model": 96, "decoder_attention_heads": 7},
            None,
            "{path}: decoder_attention_heads, read as n_decoder_heads: d_model 96 is not divisible by "
            "n_decoder_heads 7, which transformers' BartAttention refuses; choose a divisor of d_model",
        ),
        (
            {"model_type": "bart", "hidden_size": 96, "num_attention_heads": 5},
            None,
            "{path}: num_attention_heads, read as n_encoder_heads: d_model 96 is not divisible by "
            "n_encoder_heads 5, which transformers' BartAttention refuses; choose a divisor of d_model",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    path = write_json(tmp_path, data)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host, hf_class=hf_class)
    assert str(info.value) == message.format(path=path)


@pytest.mark.reference
@pytest.mark.parametrize(
    "kwargs",
    [dict(vocab_size=1), dict(d_model=96, decoder_attention_heads=7), dict(d_model=96, encoder_attention_heads=5)],
)
def test_what_is_refused_transformers_cannot_build(T, kwargs):
    """The refusals above are transformers' own: its classes fail on the same files."""
    with pytest.raises((ValueError, IndexError, AssertionError, RuntimeError)):
        build_model("BartModel", T.BartConfig(**kwargs))
