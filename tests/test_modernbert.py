"""The modernbert plugin against transformers: defaults, published shapes, random small configurations over every
option, config.json files key by key, every head class.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the ModernBert class transformers 5.23
builds on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of
batch 1, or a figure the ModernBERT authors printed (named beside it). The plugin's own checks go through archzoo's
kit for plugin authors (`archzoo.testing`).
"""

from __future__ import annotations

import dataclasses
import importlib
import random

import pytest

from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import COMMON_KEYS, load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model, check_plugin
from family_checks import (
    assert_config_json_matches,
    assert_defaults_are_transformers_defaults,
    assert_head_class_matches,
    assert_random_config_matches,
    counter,
    table_of,
    write_json,
)
from transformers_models import config_json_figures, forward_flops, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "masked_lm": "ModernBertForMaskedLM",
    "none": "ModernBertModel",
    "sequence_classification": "ModernBertForSequenceClassification",
    "token_classification": "ModernBertForTokenClassification",
    "question_answering": "ModernBertForQuestionAnswering",
}


count = counter("modernbert")


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    assert check_plugin("modernbert") == []


@pytest.mark.reference
def test_defaults_are_transformers_defaults(T, host):
    """The configuration's defaults are ModernBertConfig's (ModernBERT-base): the same parameters and FLOPs."""
    assert_defaults_are_transformers_defaults(T, count, "ModernBertForMaskedLM", "ModernBertConfig")


#: The model cards of answerdotai/ModernBERT-base and -large (Warner et al. 2024, arXiv:2412.13663) print
#: "22 layers, 149 million parameters" and "28 layers, 395 million parameters"; the widths are those of the released
#: config.json files (hidden 768 and 1,024, intermediate 1,152 and 2,624, 12 and 16 heads, vocabulary 50,368; the
#: base's are ModernBertConfig's defaults). The cards' millions are the exact counts of ModernBertForMaskedLM cut
#: to whole millions (149.66M and 395.88M), not rounded.
PUBLISHED = {
    "modernbert-base": (dict(d_model=768, n_layers=22, n_heads=12, d_ff=1152), 149e6),
    "modernbert-large": (dict(d_model=1024, n_layers=28, n_heads=16, d_ff=2624), 395e6),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_shapes(T, host, model_id):
    shape, printed = PUBLISHED[model_id]
    report = count(**shape)
    ref = host.architecture("modernbert").reference(report.config)
    model = build_model("ModernBertForMaskedLM", T.ModernBertConfig(**ref.kwargs))
    assert report.params == n_params(model)
    assert report.params // 1_000_000 * 1_000_000 == printed
    assert count(16, **shape).flops == forward_flops(model, 16)


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(vocab_size=301, d_model=64, n_layers=4, n_heads=4, d_ff=96, head=head)
    config["num_labels"] = 2 if head == "question_answering" else 3
    assert_head_class_matches(T, host, "modernbert", CLASSES[head], config, (3, 32))


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    head = rng.choice(list(CLASSES))
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 4),
        n_heads=n_heads,
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu", "relu", "silu"]),
        attention_bias=rng.random() < 0.5,
        mlp_bias=rng.random() < 0.5,
        norm_bias=rng.random() < 0.5,
        classifier_bias=rng.random() < 0.5,
        classifier_activation=rng.choice(["gelu", "tanh"]),
        decoder_bias=rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.6,
        head=head,
        num_labels=2 if head == "question_answering" else rng.randint(1, 5),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(12)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "modernbert", config)


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(d_model=100, n_heads=16), r"n_heads: d_model 100 is not divisible by n_heads 16"),
        (dict(d_model=36, n_heads=12), r"n_heads: rotary positions turn pairs of channels"),
        (dict(head="question_answering", num_labels=3), r"num_labels: ModernBertForQuestionAnswering splits"),
        (dict(activation="prelu"), r"activation: "),
        (dict(n_layers=3, layer_types=["full_attention"] * 2), r"layer_types: 2 entries for 3 layers \(n_layers\)"),
        (dict(n_layers=1, layer_types=["chunked_attention"]), r"layer_types"),
        (dict(pooling="max"), r"pooling"),
        (dict(global_every=0), r"global_every"),
    ],
)
def test_what_transformers_cannot_run_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(**config)


def test_the_first_layer_has_no_attention_norm(host):
    """ModernBERT's first layer reads the normalised embedding: one LayerNorm fewer than L pairs."""
    report = count(n_layers=3)
    norms = [path for path, _, block in report.root.walk() if block.kind == "layer_norm" and "layers" in path]
    assert sorted(p.rsplit(".", 1)[-1] for p in norms) == ["attention_norm", "mlp_norm", "mlp_norm"]


# ---- Hugging Face config.json: every key accounted for --------------------------------------------------


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, AutoModel's class, every model class counted or refused with a reason."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, "modernbert")
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(T.ModernBertConfig) if f.name not in common}
    assert dict(table.defaults) == fields
    assert table.base_class == MODEL_MAPPING_NAMES["modernbert"]
    module = importlib.import_module("transformers.models.modernbert.modeling_modernbert")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) | set(table.unsupported_classes) == classes
    full = T.ModernBertConfig().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) - known == set()


BASE = dict(
    vocab_size=97, hidden_size=48, num_hidden_layers=4, num_attention_heads=4, intermediate_size=40, pad_token_id=0
)
BASE |= dict(bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)
#: one value per key the table reads, each changed alone
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=2,
    num_attention_heads=8,
    hidden_activation="relu",
    max_position_embeddings=64,
    norm_bias=True,
    attention_bias=True,
    mlp_bias=True,
    decoder_bias=False,
    classifier_bias=True,
    classifier_activation="tanh",
    tie_word_embeddings=False,
    pad_token_id=5,
    layer_types=["full_attention", "full_attention", "sliding_attention", "full_attention"],
    global_attn_every_n_layers=2,
    local_attention=6,
    classifier_pooling="mean",
    num_labels=5,
)


@pytest.mark.reference
def test_the_sweep_covers_every_key(host):
    assert set(SWEEP) == set(table_of(host, "modernbert").read)


@pytest.mark.reference
@pytest.mark.parametrize("change", [{}, *({k: v} for k, v in SWEEP.items())], ids=["(base)", *SWEEP])
def test_each_key_against_transformers(T, host, tmp_path, change):
    """Parameters and FLOPs of every head class (the label count: of the classifiers that take any), and the layers'
    kinds, the window and the pooling the reading carries for the activation figures, as transformers' AutoConfig
    loads them from the same file."""
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, **change})
    classes = list(CLASSES.values())
    if "num_labels" in change:
        classes = ["ModernBertForSequenceClassification", "ModernBertForTokenClassification"]
    assert_config_json_matches(T, host, path, classes, label=change)
    loaded = T.AutoConfig.from_pretrained(str(path))
    for model_class in classes:
        config = load_hf_config(path, host, hf_class=model_class).config
        assert (config.kinds(), config.local_window) == (loaded.layer_types, loaded.local_attention), model_class
        pools = model_class == "ModernBertForSequenceClassification"
        assert config.pooling == (loaded.classifier_pooling if pools else "cls"), model_class


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key archzoo ignores, changed at once, and the released files' legacy keys: transformers' figures still
    equal archzoo's, for every class."""
    changed = dict(
        attention_dropout=0.3,
        embedding_dropout=0.1,
        mlp_dropout=0.2,
        classifier_dropout=0.4,
        initializer_range=0.5,
        initializer_cutoff_factor=3.0,
        norm_eps=1e-3,
        bos_token_id=5,
        eos_token_id=6,
        cls_token_id=7,
        sep_token_id=8,
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": 500.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 50.0},
        },
        deterministic_flash_attn=True,
        sparse_pred_ignore_index=-1,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
        reference_compile=True,
        repad_logits_with_grad=False,
    )
    assert set(changed) == set(table_of(host, "modernbert").ignored)
    data = {"model_type": "modernbert", **BASE, **changed}
    del data["rope_parameters"]  # the released files give the thetas as global/local_rope_theta instead
    path = write_json(tmp_path, data)
    assert_config_json_matches(T, host, path, CLASSES.values())


@pytest.mark.reference
def test_rotary_settings_per_layer_type_are_read(T, host, tmp_path):
    """The form transformers 5 saves: rope_parameters nested under full_attention and sliding_attention, which
    ModernBERT's rotary embedding reads per layer type."""
    rope = {
        "full_attention": {"rope_type": "default", "rope_theta": 500.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 50.0},
    }
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, "rope_parameters": rope})
    reading = load_hf_config(path, host, hf_class="ModernBertModel")
    report = make_report(reading.architecture, reading.config, 9)
    assert (report.params, report.flops) == config_json_figures(T, path, "ModernBertModel", 9)


def test_sparse_prediction_is_refused_saying_why(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, "sparse_prediction": True})
    with pytest.raises(HFConfigError, match=r"sparse_prediction"):
        load_hf_config(path, host)


def test_multiple_choice_is_refused_saying_why(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE})
    with pytest.raises(HFConfigError, match=r"batch of choices"):
        load_hf_config(path, host, hf_class="ModernBertForMultipleChoice")


#: values of the pattern key transformers loads though they are no positive whole number (it computes each layer's
#: kind as ``i % global_attn_every_n_layers``), and a pattern it never reads (layer_types given)
ODD_PATTERNS = {
    "negative": dict(global_attn_every_n_layers=-2),
    "float": dict(global_attn_every_n_layers=2.0),
    "fraction": dict(global_attn_every_n_layers=1.5),
    "true": dict(global_attn_every_n_layers=True),
    "beyond-the-stack": dict(global_attn_every_n_layers=9),
    "zero-beside-layer-types": dict(
        global_attn_every_n_layers=0,
        layer_types=["sliding_attention", "full_attention", "full_attention", "sliding_attention"],
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("change", ODD_PATTERNS.values(), ids=list(ODD_PATTERNS))
def test_patterns_transformers_loads_are_read_as_it_reads_them(T, host, tmp_path, change):
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, **change})
    loaded = T.AutoConfig.from_pretrained(str(path))
    assert load_hf_config(path, host).config.kinds() == loaded.layer_types
    assert_config_json_matches(T, host, path, ["ModernBertModel"], label=change)


#: what transformers refuses to load or to build (each refusal checked here), and archzoo's one-line reason
REFUSED_FILES = {
    "pattern-zero": (dict(global_attn_every_n_layers=0), r"global_attn_every_n_layers: 0: ModernBertConfig makes"),
    "pattern-null": (dict(global_attn_every_n_layers=None), r"global_attn_every_n_layers: None: ModernBertConfig"),
    "pattern-text": (dict(global_attn_every_n_layers="3"), r"global_attn_every_n_layers: 3: ModernBertConfig"),
    "layer-types-short": (dict(layer_types=["full_attention"] * 3), r"layer_types: 3 entries for 4 layers"),
    # ModernBertConfig loads it, but the rotary embedding has no settings for the kind (KeyError)
    "layer-types-kind": (dict(layer_types=["full_attention", "chunked_attention"] * 2), r"layer_types: expected"),
    "pooling": (dict(classifier_pooling="max"), r"classifier_pooling: expected cls or mean, got max"),
    "window-null": (dict(local_attention=None), r"local_attention"),
    "window-float": (dict(local_attention=12.0), r"local_attention"),
}


@pytest.mark.reference
@pytest.mark.parametrize("change, message", REFUSED_FILES.values(), ids=list(REFUSED_FILES))
def test_what_transformers_cannot_load_is_refused(T, host, tmp_path, change, message):
    """For every class (the pooling too, which only the sequence classifier reads: transformers refuses the file)."""
    from huggingface_hub.errors import StrictDataclassError

    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, **change})
    with pytest.raises((StrictDataclassError, TypeError, KeyError, ZeroDivisionError)):
        build_model("ModernBertModel", T.AutoConfig.from_pretrained(str(path)))
    for model_class in CLASSES.values():
        with pytest.raises(HFConfigError, match=message):
            load_hf_config(path, host, hf_class=model_class)


def test_only_the_sequence_classifier_reads_the_pooling(host, tmp_path):
    """--explain says so: the other classes never pool."""
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, "classifier_pooling": "mean"})
    for model_class in CLASSES.values():
        reading = load_hf_config(path, host, hf_class=model_class)
        (key,) = (k for k in reading.keys if k.key == "classifier_pooling")
        if model_class == "ModernBertForSequenceClassification":
            assert (key.disposition, key.archzoo_key, reading.config.pooling) == ("read", "pooling", "mean")
        else:
            assert (key.disposition, key.archzoo_key, reading.config.pooling) == ("ignored", "", "cls"), model_class
            assert "only ModernBertForSequenceClassification reads it" in key.detail


@pytest.mark.reference
def test_global_every_is_not_used_where_the_file_gives_layer_types(T, host, tmp_path):
    """ModernBertConfig computes layer_types from global_attn_every_n_layers only when layer_types is null: with
    both in a file, transformers' layer kinds do not move with global_attn_every_n_layers, so --explain says the key
    is not used (where it once said "read as global_every"), and the count follows layer_types."""
    layers = BASE["num_hidden_layers"]
    kinds = ["full_attention" if i % 2 == 0 else "sliding_attention" for i in range(layers)]
    loaded = []
    for every in (1, 3):
        data = {"model_type": "modernbert", **BASE, "layer_types": kinds, "global_attn_every_n_layers": every}
        path = write_json(tmp_path, data, f"config-{every}.json")
        loaded.append(list(T.AutoConfig.from_pretrained(str(path)).layer_types))
        reading = load_hf_config(path, host)
        (key,) = (k for k in reading.keys if k.key == "global_attn_every_n_layers")
        assert (key.disposition, key.archzoo_key) == ("ignored", ""), key
        assert "not used: the file gives layer_types" in key.detail
        assert reading.config.kinds() == kinds
        assert reading.config.global_every == 3  # the configuration's default: the file's value is not carried
    assert loaded == [kinds, kinds]  # transformers: the same kinds whatever global_attn_every_n_layers says
    path = write_json(tmp_path, {"model_type": "modernbert", **BASE, "global_attn_every_n_layers": 2}, "own.json")
    (key,) = (k for k in load_hf_config(path, host).keys if k.key == "global_attn_every_n_layers")
    assert (key.disposition, key.archzoo_key) == ("read", "global_every")


@pytest.mark.reference
def test_count_set_global_every_changes_the_activation_figures_as_autograd_does(T, capsys):
    """``archzoo count modernbert --set global_every=...``: the JSON's activation figures (bf16: eager on the meta
    device, SDPA on the CPU) are what autograd saves in ModernBertForMaskedLM built with that
    global_attn_every_n_layers (six layers, 9 tokens, a window of 8: SDPA is given each local layer's mask), and
    every second layer global (3 local layers) saves one 9 × 9 bf16 mask fewer than every third (4 local)."""
    import json

    from archzoo.architecture import Reference
    from archzoo.cli import main
    from archzoo.memory import measure_activations

    fused = {}
    for every in (2, 3):
        shape = dict(vocab_size=64, d_model=32, n_heads=2, d_ff=24, n_layers=6, local_window=8, global_every=every)
        code = main(["count", "modernbert", *(f"--set={k}={v}" for k, v in shape.items()), "--seq-len=9", "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        figures = json.loads(out)["memory"]["step"]["activations"]
        ref = Reference(
            library="transformers", target="transformers.ModernBertForMaskedLM",
            config_class="transformers.ModernBertConfig",
            kwargs=dict(
                vocab_size=64, hidden_size=32, num_attention_heads=2, intermediate_size=24, num_hidden_layers=6,
                local_attention=8, global_attn_every_n_layers=every, pad_token_id=None,
            ),
        )  # fmt: skip
        eager = measure_activations(ref, 9, dtype="bf16").total_bytes
        fused[every] = measure_activations(ref, 9, dtype="bf16", attention="fused", device="cpu").total_bytes
        assert (figures["eager_bf16"]["bytes"], figures["fused_bf16"]["bytes"]) == (eager, fused[every]), every
    assert fused[3] - fused[2] == 2 * 9 * 9
