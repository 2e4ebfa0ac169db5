"""The clip plugin against transformers: defaults, published shapes, every head class, random small configurations
over every option, training FLOPs, the caption-length limit, and config.json files key by key (CLIPConfig with its
nested text_config and vision_config, and a tower's own clip_text_model and clip_vision_model files).

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the CLIP class transformers 5.23 builds
on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of batch 1
(one image at the configuration's size and N caption tokens, the inputs written out here), or a figure OpenCLIP
published (named beside it). The plugin's own checks go through archzoo's kit for plugin authors
(`archzoo.testing`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import COMMON_KEYS, load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model, check_plugin
from family_checks import assert_random_config_matches, counter, table_of, write_json
from transformers_models import n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "model": "CLIPModel",
    "text": "CLIPTextModel",
    "text_projection": "CLIPTextModelWithProjection",
    "vision": "CLIPVisionModel",
    "vision_projection": "CLIPVisionModelWithProjection",
    "image_classification": "CLIPForImageClassification",
}
#: the configuration class each head's class is built from
CONFIG_CLASSES = {
    "model": "CLIPConfig",
    "text": "CLIPTextConfig",
    "text_projection": "CLIPTextConfig",
    "vision": "CLIPVisionConfig",
    "vision_projection": "CLIPVisionConfig",
    "image_classification": "CLIPConfig",
}
TEXT_HEADS = ("model", "text", "text_projection")

count = counter("clip")


# ---- transformers' side, written out ------------------------------------------------------------------------


def _inputs(model: Any, n: int) -> dict[str, Any]:
    """N caption tokens (all 0) for a class that reads text, one image of zeros at the configuration's size for a
    class that reads images: what each class's ``forward`` takes."""
    import torch

    config, taken = model.config, inspect.signature(model.forward).parameters
    inputs: dict[str, Any] = {}
    if "input_ids" in taken:
        inputs["input_ids"] = torch.zeros(1, n, dtype=torch.long, device="meta")
    if "pixel_values" in taken:
        vision = getattr(config, "vision_config", config)
        side = vision.image_size
        inputs["pixel_values"] = torch.zeros(1, vision.num_channels, side, side, device="meta")
    return inputs


def _flops(model: Any, n: int) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**_inputs(model, n))
    return counter.get_total_flops()


def _training_flops(model: Any, n: int) -> int:
    """One training step: the forward pass and the backward of the sum of the class's main output (CLIPModel's
    logits_per_image, a classifier's logits, else the last hidden state), every parameter trainable."""
    from torch.utils.flop_counter import FlopCounterMode

    model.train()
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    with FlopCounterMode(display=False) as counter:
        output = model(**_inputs(model, n))
        main = next(
            getattr(output, name) for name in ("logits_per_image", "logits", "last_hidden_state") if name in output
        )
        main.sum().backward()
    return counter.get_total_flops()


def _reference_model(T: Any, host: Any, config: dict) -> tuple[Any, Any]:
    """archzoo's report and transformers' class built from the reference the plugin names for ``config``."""
    report = count(**config)
    ref = host.architecture("clip").reference(report.config)
    config_class = getattr(T, ref.config_class.rpartition(".")[2])
    return report, build_model(ref.target.removeprefix("transformers."), config_class(**ref.kwargs))


def _loaded_model(T: Any, path: Path, model_class: str) -> Any:
    """``model_class`` built (on the meta device) from a config.json as from_pretrained loads it: a tower's class
    reads its own sub-configuration from a clip file (its configuration class's base_config_key)."""
    config_class = {"CLIPTextModel": "CLIPTextConfig", "CLIPTextModelWithProjection": "CLIPTextConfig"}.get(model_class)
    if model_class.startswith("CLIPVisionModel"):
        config_class = "CLIPVisionConfig"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = (getattr(T, config_class) if config_class else T.AutoConfig).from_pretrained(str(path))
    return build_model(model_class, config)


def _file_figures(T: Any, path: Path, model_class: str, n: int) -> tuple[int, int]:
    """Parameters and forward FLOPs of ``model_class`` built from a config.json as from_pretrained loads it."""
    model = _loaded_model(T, path, model_class)
    return n_params(model), _flops(model, n)


# ---- the plugin ---------------------------------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.slow  # a fresh host, the reference built, a file read for each of ten classes: over 10 s on a busy machine
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF tables."""
    assert check_plugin("clip") == []


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_defaults_are_transformers_defaults(T, host, head):
    """The configuration's defaults are transformers' (CLIP ViT-B/32), for every class: parameters, and FLOPs at a
    short caption and at the full 77 tokens."""
    config = getattr(T, CONFIG_CLASSES[head])()
    model = build_model(CLASSES[head], config)
    assert count(head=head).params == n_params(model)
    for n in (1, 77):
        assert count(n, head=head).flops == _flops(model, n), n


#: OpenCLIP's model profile table (github.com/mlfoundations/open_clip, docs/model_profile.csv at commit
#: 29b90b8dde9125c479c0ddbab477310f665a0435): total parameters in millions (mparams) and GFLOPs of the image and of
#: the 77-token text (image_gflops, text_gflops), each printed to two decimals. The shapes are OpenCLIP's
#: model_configs (ViT-B-32.json ...), the same as the released openai/clip-vit-* config.json files.
_L14 = dict(d_model=768, n_heads=12, d_ff=3072, vision_d_model=1024, vision_n_layers=24, vision_n_heads=16)
_L14 |= dict(vision_d_ff=4096, patch_size=14, projection_dim=768)
PUBLISHED = {
    "ViT-B-32": ({}, "151.28", "8.82", "5.96"),
    "ViT-B-16": (dict(patch_size=16), "149.62", "35.13", "5.96"),
    "ViT-L-14": (_L14, "427.62", "162.03", "13.30"),
    "ViT-L-14-336": (dict(_L14, image_size=336), "427.94", "381.92", "13.30"),
}


@pytest.mark.reference
@pytest.mark.parametrize("name", PUBLISHED)
def test_published_shapes(T, host, name):
    shape, mparams, image_gflops, text_gflops = PUBLISHED[name]
    report, model = _reference_model(T, host, shape)
    assert report.params == n_params(model)
    assert f"{report.params / 1e6:.2f}" == mparams
    assert report.flops == _flops(model, 77)
    # OpenCLIP's image and text FLOPs include each tower's projection (ViT-L/14's image: 162.025 billion in the
    # vision tower, 0.0016 in its projection); together with the one score product they make CLIPModel's
    image = count(head="vision_projection", **shape).flops
    text = count(77, head="text_projection", **shape).flops
    assert (f"{image / 1e9:.2f}", f"{text / 1e9:.2f}") == (image_gflops, text_gflops)
    assert report.flops == image + text + 2 * report.config.projection_dim


SMALL = dict(vocab_size=301, max_positions=20, d_model=32, n_layers=2, n_heads=4, d_ff=40)
SMALL |= dict(image_size=30, patch_size=8, vision_d_model=48, vision_n_layers=2, vision_n_heads=4, vision_d_ff=56)
SMALL |= dict(projection_dim=24, num_labels=3)


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    """A small configuration whose image is not a whole number of patches (30 pixels, 8-pixel patches: transformers'
    convolution keeps 3 a side, and so does archzoo), at two caption lengths and at the longest."""
    config = dict(SMALL, head=head)
    report, model = _reference_model(T, host, config)
    assert type(model).__name__ == CLASSES[head]
    assert report.params == n_params(model)
    for n in (3, 11, 20):
        assert count(n, **config).flops == _flops(model, n), n


@pytest.mark.reference
def test_image_classification_without_labels_has_no_classifier(T, host):
    """num_labels 0: CLIPForImageClassification's classifier is an identity."""
    config = dict(SMALL, head="image_classification", num_labels=0)
    report, model = _reference_model(T, host, config)
    assert (report.params, report.flops) == (n_params(model), _flops(model, 5))


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_training_flops_equal_flop_counter_mode(T, host, head):
    """Forward and backward of the class's main output: the projections of the ...WithProjection classes are off
    the path of their last hidden state, the patch convolution computes no pixel gradient."""
    config = dict(SMALL, head=head)
    _, model = _reference_model(T, host, config)
    assert count(7, **config).training_flops == _training_flops(model, 7)


def test_flops_depend_on_the_caption_through_the_text_tower_only(host):
    """N is the caption's tokens: the vision-only classes cost the same at every N, and CLIPModel's FLOPs grow with
    N exactly as its text tower's do."""
    for head in ("vision", "vision_projection", "image_classification"):
        assert count(1, head=head).flops == count(77, head=head).flops, head
    model = count(77).flops - count(5).flops
    assert model == count(77, head="text").flops - count(5, head="text").flops > 0


def test_clip_does_not_generate(host):
    """No key/value cache, no prefill, no decode, and the report says why."""
    for head in CLASSES:
        report = count(head=head)
        assert report.prefill_flops is None and report.decode_flops is None
        assert report.kv_cache_elements_per_token == 0
        assert "no prefill and no decode" in report.generation_note


def _random_config(rng: random.Random) -> dict:
    heads, vision_heads = rng.choice([1, 2, 4]), rng.choice([1, 2, 4])
    patch = rng.randint(2, 8)
    return dict(
        head=rng.choice(list(CLASSES)),
        vocab_size=rng.randint(2, 300),
        max_positions=rng.randint(16, 40),
        d_model=heads * rng.randint(1, 8),
        n_layers=rng.randint(1, 3),
        n_heads=heads,
        d_ff=rng.randint(1, 64),
        activation=rng.choice(["quick_gelu", "gelu", "relu"]),
        image_size=rng.randint(patch, 40),
        patch_size=patch,
        channels=rng.randint(1, 4),
        vision_d_model=vision_heads * rng.randint(1, 8),
        vision_n_layers=rng.randint(1, 3),
        vision_n_heads=vision_heads,
        vision_d_ff=rng.randint(1, 64),
        vision_activation=rng.choice(["quick_gelu", "gelu", "silu"]),
        projection_dim=rng.randint(1, 40),
        num_labels=rng.randint(0, 5),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(12)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "clip", config)


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(d_model=100, n_heads=16), r"n_heads: the width 100 \(d_model\) is not divisible by 16 heads"),
        (
            dict(vision_d_model=100, vision_n_heads=16),
            r"vision_n_heads: the width 100 \(vision_d_model\) is not divisible by 16",
        ),
        (dict(patch_size=300), r"patch_size: 300 pixels is larger than the 224-pixel image"),
        (dict(activation="prelu"), r"activation: unknown activation"),
        (dict(vision_activation="prelu"), r"vision_activation: unknown activation"),
        (dict(num_labels=-1), r"num_labels"),
    ],
)
def test_what_transformers_cannot_run_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(**config)


def test_a_text_class_keeps_a_patch_larger_than_the_image(host):
    """CLIPTextModel never builds the vision tower, so its vision keys cannot make it fail."""
    assert count(head="text", patch_size=300).params == count(head="text").params


@pytest.mark.reference
def test_a_caption_longer_than_the_positions_is_refused_as_transformers_refuses_it(T, host):
    model = build_model("CLIPModel", T.CLIPConfig())
    with pytest.raises(ValueError, match="Sequence length must be less than max_position_embeddings"):
        _flops(model, 78)
    with pytest.raises(ConfigError, match=r"seq_len 78: longer than the 77 positions .* raise max_positions"):
        count(78)
    from archzoo_clip import reference_inputs

    with pytest.raises(ValueError, match=r"N = 78: CLIP's text tower has 77 learned positions"):
        reference_inputs(model, 78, "meta")
    assert count(10_000, head="vision").flops == count(head="vision").flops  # no caption to limit


# ---- Hugging Face config.json: every key accounted for ------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, config_class",
    [("clip", "CLIPConfig"), ("clip_text_model", "CLIPTextConfig"), ("clip_vision_model", "CLIPVisionConfig")],
)
def test_tables_equal_the_transformers_configuration_classes(T, host, model_type, config_class):
    """Fields and defaults, AutoModel's class, every key a loaded configuration holds accounted for."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, model_type)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(getattr(T, config_class)) if f.name not in common}
    assert dict(table.defaults) == fields
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    full = getattr(T, config_class)().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.nested) | set(COMMON_KEYS)
    assert set(full) - known == set()


@pytest.mark.reference
def test_every_class_of_modeling_clip_is_counted(host):
    module = importlib.import_module("transformers.models.clip.modeling_clip")
    classes = {n for n in module.__all__ if "PreTrained" not in n}
    assert set(table_of(host, "clip").classes) == classes
    assert set(table_of(host, "clip_text_model").classes) | set(table_of(host, "clip_vision_model").classes) == {
        c for c in classes if c.startswith(("CLIPTextModel", "CLIPVisionModel"))
    }


TEXT_BASE = dict(
    vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4, projection_dim=16
)
TEXT_BASE |= dict(max_position_embeddings=24)
VISION_BASE = dict(
    hidden_size=48, intermediate_size=56, num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8
)
VISION_BASE |= dict(projection_dim=16)
CLIP_BASE = dict(text_config=TEXT_BASE, vision_config=VISION_BASE, projection_dim=16)

#: one value per key each table reads, changed alone: CLIPConfig's own, then its sub-configurations' (read from a
#: clip file and from a tower's own file)
TEXT_SWEEP = dict(
    vocab_size=101,
    hidden_size=48,
    intermediate_size=33,
    projection_dim=20,
    num_hidden_layers=3,
    num_attention_heads=8,
    max_position_embeddings=30,
    hidden_act="gelu",
)
VISION_SWEEP = dict(
    hidden_size=64,
    intermediate_size=30,
    projection_dim=12,
    num_hidden_layers=1,
    num_attention_heads=8,
    num_channels=1,
    image_size=40,
    patch_size=5,  # 32 pixels: 6 patches a side and 2 pixels no patch covers
    hidden_act="gelu",
)
SWEEP: dict[str, Any] = dict(projection_dim=24, num_labels=5)
SWEEP |= {f"text_config.{k}": v for k, v in TEXT_SWEEP.items()}
SWEEP |= {f"vision_config.{k}": v for k, v in VISION_SWEEP.items()}
#: the sweep of each model type, by the keys its table reads (nested ones as text_config.X)
SWEEPS = {"clip": SWEEP, "clip_text_model": TEXT_SWEEP, "clip_vision_model": VISION_SWEEP}


def test_the_sweep_covers_every_key(host):
    table = table_of(host, "clip")
    nested = {f"{key}.{name}" for key, sub in table.nested.items() for name in sub.read}
    assert set(SWEEP) == set(table.read) | nested
    assert set(TEXT_SWEEP) == set(table_of(host, "clip_text_model").read)
    assert set(VISION_SWEEP) == set(table_of(host, "clip_vision_model").read)


def _changed(base: dict, key: str, value: Any) -> dict:
    data = json.loads(json.dumps(base))
    target = data
    *parents, last = key.split(".")
    for parent in parents:
        target = target[parent]
    target[last] = value
    return data


N = 9


def _check(T, host, path: Path, classes: list[str], what: Any) -> None:
    for model_class in classes:
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, N)
        assert (report.params, report.flops) == _file_figures(T, path, model_class, N), (what, model_class)
        assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"


@pytest.mark.reference
@pytest.mark.parametrize("change", [{}, *({k: v} for k, v in SWEEP.items())], ids=["(base)", *SWEEP])
def test_each_key_of_a_clip_file_against_transformers(T, host, tmp_path, change):
    data = {"model_type": "clip", **CLIP_BASE}
    for key, value in change.items():
        data = _changed(data, key, value)
    path = write_json(tmp_path, data)
    classes = ["CLIPModel", "CLIPForImageClassification"]
    if any(key.startswith("text_config.") for key in change):
        classes = ["CLIPModel", "CLIPTextModelWithProjection"]
    elif any(key.startswith("vision_config.") for key in change):
        classes += ["CLIPVisionModelWithProjection"]
    _check(T, host, path, classes, change)


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, key",
    [("clip_text_model", k) for k in TEXT_SWEEP] + [("clip_vision_model", k) for k in VISION_SWEEP],
)
def test_each_key_of_a_tower_file_against_transformers(T, host, tmp_path, model_type, key):
    base, sweep = (TEXT_BASE, TEXT_SWEEP) if model_type == "clip_text_model" else (VISION_BASE, VISION_SWEEP)
    path = write_json(tmp_path, {"model_type": model_type, **base, key: sweep[key]})
    _check(T, host, path, list(table_of(host, model_type).classes), key)


#: every key the three tables ignore, each changed from its default (eos_token_id 2: transformers then pools at the
#: largest token id, the one vector either way)
IGNORED = {
    "logit_scale_init_value": 1.5,
    "initializer_factor": 3.0,
    "text_config.layer_norm_eps": 1e-3,
    "text_config.attention_dropout": 0.2,
    "text_config.initializer_range": 0.5,
    "text_config.initializer_factor": 2.0,
    "text_config.pad_token_id": 0,
    "text_config.bos_token_id": 5,
    "text_config.eos_token_id": 2,
    "text_config.dropout": 0.3,
    "vision_config.layer_norm_eps": 1e-3,
    "vision_config.attention_dropout": 0.2,
    "vision_config.initializer_range": 0.5,
    "vision_config.initializer_factor": 2.0,
    "vision_config.dropout": 0.3,
}


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key archzoo ignores, changed at once (the released files' dropout too): transformers' figures still
    equal archzoo's, for every class."""
    table = table_of(host, "clip")
    ignored = set(table.ignored) | {f"{k}.{n}" for k, sub in table.nested.items() for n in sub.ignored}
    assert set(IGNORED) == ignored
    data = {"model_type": "clip", **CLIP_BASE}
    for key, value in IGNORED.items():
        data = _changed(data, key, value)
    path = write_json(tmp_path, data)
    _check(T, host, path, list(CLASSES.values()), "ignored keys")
    reading = load_hf_config(path, host)
    dispositions = {k.key: k.disposition for k in reading.keys}
    assert all(dispositions[key] == "ignored" for key in IGNORED)


@pytest.mark.reference
def test_a_file_without_sub_configurations_reads_their_defaults(T, host, tmp_path):
    """text_config and vision_config absent, or null: CLIPConfig builds both from their classes' defaults."""
    for data in ({"model_type": "clip"}, {"model_type": "clip", "text_config": None, "vision_config": None}):
        path = write_json(tmp_path, data)
        _check(T, host, path, ["CLIPModel"], data)
        reading = load_hf_config(path, host)
        assert {k.key: k.disposition for k in reading.keys}["text_config.hidden_size"] == "defaulted"


@pytest.mark.reference
def test_legacy_config_dicts_replace_the_sub_configurations_as_transformers_does(T, host, tmp_path):
    """text_config_dict and vision_config_dict (transformers 4.x files): CLIPConfig builds each sub-configuration
    from the dict alone, its class's defaults filling what the dict does not give, over every field of
    text_config / vision_config; a tower's class, loaded from the tower's object alone, sees none of it."""
    data = {
        "model_type": "clip",
        **CLIP_BASE,
        "text_config_dict": {"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 2, "vocab_size": 50},
        "vision_config_dict": {"num_hidden_layers": 1, "image_size": 40, "patch_size": 20, "hidden_size": 24},
    }
    path = write_json(tmp_path, data)
    _check(T, host, path, ["CLIPModel", "CLIPTextModelWithProjection", "CLIPVisionModel"], "overrides")
    reading = load_hf_config(path, host)
    keys: dict[str, list[str]] = {}
    for k in reading.keys:
        keys.setdefault(k.key, []).append(k.disposition)
    assert keys["text_config_dict"] == ["converted"]
    assert keys["text_config.hidden_size"] == ["ignored"]  # replaced by the override's
    assert keys["text_config.intermediate_size"] == ["ignored", "defaulted"]  # replaced by CLIPTextConfig's default
    assert keys["text_config_dict.hidden_size"] == ["read"]
    assert reading.config.d_ff == 2048 and reading.config.d_model == 64
    # a tower's class is loaded from text_config as written: from_pretrained does not apply text_config_dict
    tower = load_hf_config(path, host, hf_class="CLIPTextModelWithProjection")
    assert (tower.config.d_model, tower.config.d_ff) == (32, 40)
    assert {k.key: k.disposition for k in tower.keys}["text_config_dict"] == "ignored"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"text_config": "small"}, r"text_config: expected an object of CLIPTextConfig's keys or null"),
        ({"vision_config_dict": [1]}, r"vision_config_dict: expected an object of CLIPVisionConfig's keys"),
        ({"text_config": {"pruned_heads": {"0": [1]}}}, r": text_config\.pruned_heads: .* is not supported"),
        (
            {"vision_config": {"image_size": [224, 224]}},
            r": vision_config\.image_size: \[224, 224\] is a pair of sides",
        ),
        ({"text_config_dict": {"num_hidden_layers": 0}}, r"text_config_dict\.num_hidden_layers, read as n_layers"),
        (
            {"vision_config": {"hidden_size": 100}},
            r"vision_n_heads: the width 100 \(vision_d_model\) is not divisible by 12 heads",
        ),
        ({"vision_config": {"hidden_size": 0}}, r"vision_config\.hidden_size, read as vision_d_model"),
    ],
)
def test_bad_sub_configurations_are_refused_naming_the_nested_key(host, tmp_path, data, message):
    path = write_json(tmp_path, {"model_type": "clip", **data})
    with pytest.raises(HFConfigError, match=message):
        load_hf_config(path, host)


@pytest.mark.reference
def test_a_null_projection_dim_is_counted_where_no_projection_reads_it(T, host, tmp_path):
    """CLIPTextConfig and CLIPConfig take projection_dim null: CLIPTextModel and CLIPForImageClassification build
    with it, and the classes with a projection cannot."""
    path = write_json(tmp_path, {"model_type": "clip_text_model", **TEXT_BASE, "projection_dim": None})
    _check(T, host, path, ["CLIPTextModel"], "null projection")
    with pytest.raises(HFConfigError, match=r"projection_dim, read as projection_dim"):
        load_hf_config(path, host, hf_class="CLIPTextModelWithProjection")
    path = write_json(tmp_path, {"model_type": "clip", **CLIP_BASE, "projection_dim": None})
    _check(T, host, path, ["CLIPForImageClassification"], "null projection")
    with pytest.raises(HFConfigError, match=r"projection_dim, read as projection_dim"):
        load_hf_config(path, host)


def test_the_nested_model_type_is_not_read(host, tmp_path):
    """transformers builds text_config as a CLIPTextConfig whatever model type the object names."""
    path = write_json(tmp_path, {"model_type": "clip", "text_config": {"model_type": "bert", "hidden_size": 64}})
    reading = load_hf_config(path, host)
    assert {k.key: k.disposition for k in reading.keys}["text_config.model_type"] == "ignored"
    assert reading.config.d_model == 64


def test_a_tower_class_of_a_clip_file_projects_to_its_own_projection_dim(host, tmp_path):
    """from_pretrained builds CLIPTextModelWithProjection from text_config, whose projection_dim it reads."""
    data = _changed({"model_type": "clip", **CLIP_BASE}, "text_config.projection_dim", 20)
    path = write_json(tmp_path, data)
    assert load_hf_config(path, host, hf_class="CLIPTextModelWithProjection").config.projection_dim == 20
    assert load_hf_config(path, host, hf_class="CLIPModel").config.projection_dim == 16


@pytest.mark.reference
def test_a_tower_class_of_a_clip_file_without_its_object_reads_the_whole_file(T, host, tmp_path):
    """No text_config: CLIPTextConfig.from_pretrained builds the text configuration from the whole file (its
    projection_dim too); a null text_config it cannot load, and archzoo refuses it."""
    path = write_json(tmp_path, {"model_type": "clip", "projection_dim": 20, "vision_config": VISION_BASE})
    _check(T, host, path, ["CLIPTextModelWithProjection", "CLIPVisionModel"], "no text_config")
    assert load_hf_config(path, host, hf_class="CLIPTextModelWithProjection").config.projection_dim == 20
    path = write_json(tmp_path, {"model_type": "clip", "text_config": None})
    with pytest.raises(HFConfigError, match=r"text_config: transformers builds CLIPTextModel from this object alone"):
        load_hf_config(path, host, hf_class="CLIPTextModel")
    assert load_hf_config(path, host).model_class == "CLIPModel"  # CLIPConfig reads null as its defaults


@pytest.mark.reference
def test_the_explanation_says_which_projection_and_labels_each_class_reads(T, host, tmp_path, capsys):
    """CLIPModel projects both towers to CLIPConfig's own projection_dim and never reads text_config's or
    vision_config's; no class reads a sub-configuration's label count (CLIPForImageClassification takes the
    top-level one); a ...WithProjection class, loaded from its sub-configuration alone, projects to that one's
    projection_dim. Each fact is checked on the classes transformers builds from the file, then in what --explain
    and --json tell (before, both listed the nested projection_dim and id2label as read for CLIPModel)."""
    from archzoo.cli import main

    data = {"model_type": "clip", **CLIP_BASE}
    for key, value in {
        "text_config.projection_dim": 20,
        "vision_config.projection_dim": 12,
        "text_config.id2label": {"0": "a", "1": "b", "2": "c"},
        "vision_config.id2label": {"0": "a", "1": "b", "2": "c", "3": "d"},
    }.items():
        data = _changed(data, key, value)
    path = write_json(tmp_path, data)
    model = _loaded_model(T, path, "CLIPModel")
    assert model.text_projection.out_features == model.visual_projection.out_features == 16  # the top level's
    assert _loaded_model(T, path, "CLIPForImageClassification").classifier.out_features == 2  # its own default
    assert _loaded_model(T, path, "CLIPTextModelWithProjection").text_projection.out_features == 20
    assert _loaded_model(T, path, "CLIPVisionModelWithProjection").visual_projection.out_features == 12
    _check(T, host, path, list(CLASSES.values()), "nested projection_dim and id2label")

    def told(model_class: str) -> dict[str, tuple[str, str | None]]:
        assert main(["count", "--hf-config", str(path), "--hf-class", model_class, "--json"]) == 0
        keys = json.loads(capsys.readouterr().out)["hf_config"]["keys"]
        return {k["key"]: (k["disposition"], k["archzoo_key"]) for k in keys}

    unread = ("ignored", None)
    keys = told("CLIPModel")
    assert keys["projection_dim"] == ("read", "projection_dim")
    for key in ("projection_dim", "id2label"):
        assert keys[f"text_config.{key}"] == keys[f"vision_config.{key}"] == unread, key
    keys = told("CLIPForImageClassification")
    assert keys["vision_config.id2label"] == unread and keys["num_labels"] == ("defaulted", "num_labels")
    keys = told("CLIPTextModelWithProjection")
    assert keys["text_config.projection_dim"] == ("read", "projection_dim")
    assert keys["text_config.id2label"] == unread
    assert told("CLIPVisionModelWithProjection")["vision_config.projection_dim"] == ("read", "projection_dim")
    # the classes without a projection read no projection_dim at all (before, each listed one as read)
    for model_class, key in (
        ("CLIPForImageClassification", "projection_dim"),
        ("CLIPTextModel", "text_config.projection_dim"),
        ("CLIPVisionModel", "vision_config.projection_dim"),
    ):
        modules = [name for name, _ in _loaded_model(T, path, model_class).named_modules()]
        assert not any(name.endswith("projection") for name in modules), model_class
        assert told(model_class)[key] == unread, model_class
    # the same when the file leaves every projection_dim to its default: CLIPConfig's own sets the archzoo key
    defaults = write_json(tmp_path, {"model_type": "clip"}, "defaults.json")
    keys = {k.key: (k.disposition, k.archzoo_key) for k in load_hf_config(defaults, host).keys}
    assert keys["projection_dim"] == ("defaulted", "projection_dim")
    assert keys["text_config.projection_dim"] == keys["vision_config.projection_dim"] == ("defaulted", "")
    # and in the terminal's table: the nested key's row says it is not read
    assert main(["count", "--hf-config", str(path), "--explain"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("text_config.projection_dim ")]
    assert len(rows) == 1 and " ignored " in rows[0] and "not read" in rows[0] and "read as" not in rows[0]


@pytest.mark.reference
def test_a_tower_files_label_count_is_not_read(T, host, tmp_path):
    """A clip_text_model or clip_vision_model file's id2label or num_labels: no class built from it has a classifier."""
    for model_type, base in (("clip_text_model", TEXT_BASE), ("clip_vision_model", VISION_BASE)):
        path = write_json(tmp_path, {"model_type": model_type, **base, "id2label": {"0": "a", "1": "b", "2": "c"}})
        _check(T, host, path, list(table_of(host, model_type).classes), model_type)
        for model_class in table_of(host, model_type).classes:
            assert not any(
                name.endswith("classifier") for name, _ in _loaded_model(T, path, model_class).named_modules()
            )
            keys = {k.key: k for k in load_hf_config(path, host, hf_class=model_class).keys}
            assert (keys["id2label"].disposition, keys["id2label"].archzoo_key) == ("ignored", "")


@pytest.mark.reference
@pytest.mark.parametrize(
    "layout",
    ["two objects at the top level", "vision_config naming another type, holding two", "after vision_config_dict"],
)
def test_a_tower_class_takes_the_last_object_naming_its_type_as_from_pretrained_does(T, host, tmp_path, layout):
    """A clip file without vision_config (or whose vision_config names another model type): from_pretrained of
    CLIPVisionConfig takes, of the object's entries naming clip_vision_model, the last (before, archzoo took the
    first)."""
    narrow = {"model_type": "clip_vision_model", **VISION_BASE}
    wide = {**narrow, "hidden_size": 64, "num_hidden_layers": 1}
    data, last = {
        "two objects at the top level": ({"model_type": "clip", "first": narrow, "second": wide}, "second"),
        "vision_config naming another type, holding two": (
            {"model_type": "clip", "vision_config": {"model_type": "siglip_vision_model", "a": narrow, "b": wide}},
            "vision_config.b",
        ),
        "after vision_config_dict": ({"model_type": "clip", "vision_config_dict": narrow, "z": wide}, "z"),
    }[layout]
    path = write_json(tmp_path, data)
    classes = ["CLIPVisionModel", "CLIPVisionModelWithProjection"]
    _check(T, host, path, classes, layout)
    for model_class in classes:
        reading = load_hf_config(path, host, hf_class=model_class)
        assert reading.config.vision_d_model == 64
        keys = {k.key: k for k in reading.keys}
        assert (keys[f"{last}.hidden_size"].disposition, keys[f"{last}.hidden_size"].archzoo_key) == (
            "read",
            "vision_d_model",
        )


@pytest.mark.parametrize(
    "data, key",
    [
        ({"vision_config": {"image_size": [224, 224]}}, "vision_config.image_size"),
        ({"vision_config": {"patch_size": [32, 32]}}, "vision_config.patch_size"),
        (
            {"vision_config": {"patch_size": 16}, "vision_config_dict": {"patch_size": [16, 16]}},
            "vision_config_dict.patch_size",
        ),
    ],
)
def test_a_readers_refusal_names_the_nested_key_as_the_file_gives_it(host, tmp_path, capsys, data, key):
    """CLIP's reader refuses a pair of sides; the message names the key where the file wrote it (before: the bare
    image_size or patch_size), in one line from the command line."""
    from archzoo.cli import main

    path = write_json(tmp_path, {"model_type": "clip", **data})
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value).startswith(f"{path}: {key}: [") and "is a pair of sides" in str(caught.value)
    assert main(["count", "--hf-config", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"archzoo: error: {path}: {key}: [") and len(err.strip().splitlines()) == 1


# ---- the kit's nested tables, as any plugin declares them ---------------------------------------------------


def _tiny(**changes: Any):
    from archzoo.hf_config import HFTable

    fields: dict[str, Any] = dict(
        model_type="outer",
        config_class="OuterConfig",
        defaults={"inner": None, "width": 8},
        aliases={},
        read={"width": "width"},
        ignored={},
        refused={},
        base_class="OuterModel",
        classes={"OuterModel": {}, "InnerModel": {}},
    )
    inner = HFTable("inner", "InnerConfig", {"size": 4}, {}, {"size": "size"}, {}, {}, "InnerModel", {"InnerModel": {}})
    return HFTable(**{**fields, "nested": {"inner": inner}, **changes})


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(defaults={"width": 8}), r"nested keys that are no field: \['inner'\]"),
        (dict(ignored={"inner": "x"}), r"\['inner'\] both nested and read, ignored or refused"),
        (dict(nested_overrides={"inner_dict": "other"}), r"nested override 'inner_dict' must .* replace a nested key"),
        (dict(nested_overrides={"width": "inner"}), r"nested override 'width' must be no field"),
        (dict(class_sub_configs={"InnerModel": "other"}), r"class_sub_configs must map a class to a nested key"),
        (dict(class_sub_configs={"Unknown": "inner"}), r"class_sub_configs must map a class to a nested key"),
    ],
)
def test_a_nested_table_that_contradicts_itself_is_refused(changes, message):
    assert _tiny().nested and _tiny(nested_overrides={"inner_dict": "inner"}, class_sub_configs={"InnerModel": "inner"})
    with pytest.raises(ValueError, match=message):
        _tiny(**changes)


def test_the_cli_refuses_a_bad_clip_file_in_one_line(tmp_path, capsys):
    """A sub-configuration that is no object: one line naming the file and the key, exit 1, no traceback."""
    from archzoo.cli import main

    path = write_json(tmp_path, {"model_type": "clip", "text_config": [512]})
    code = main(["count", "--hf-config", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("archzoo: error: ") and f"{path}: text_config: expected an object" in lines[0]
