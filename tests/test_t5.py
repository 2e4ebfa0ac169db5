"""The t5 plugin against transformers: published configurations, random small ones, config.json files, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the transformers class named beside
it, built on the meta device (transformers 5.23), or what ``torch.utils.flop_counter.FlopCounterMode`` reports
for one eager forward pass of batch 1 (input_ids and decoder_input_ids of N tokens each). T5-Small's
60,506,624 is pinned as a literal (T5ForConditionalGeneration, transformers 5.23 on the meta device) and
rebuilt from transformers in the same test.

An untied LM head (T5 v1.1): transformers 5.23's T5Config always ties the head when the class is built from
the configuration, and ``from_pretrained`` unties it when the checkpoint holds its own ``lm_head.weight``.
``test_untied_head_is_what_from_pretrained_loads`` proves archzoo's untied count against a checkpoint written
here and loaded by ``T5ForConditionalGeneration.from_pretrained``; the other untied figures are checked
against the plugin's ``ReferenceT5ForConditionalGeneration`` with ``tie_word_embeddings=False`` (transformers'
class with that one weight untied). Every other figure comes from transformers' own classes; the plugin's
reference classes (which also register each stack's position bias on the stack, for ``archzoo verify``) are
checked against them parameter for parameter and FLOP for FLOP.
"""

from __future__ import annotations

import dataclasses
import json
import random
import warnings
from typing import Any

import pytest
import yaml

from archzoo import testing
from archzoo.architecture import Reference
from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.formula import sym
from archzoo.hf_config import COMMON_KEYS, hf_table, load_hf_config
from archzoo.report import make_report
from archzoo.seq2seq_parts import eos_classification_head, eos_classification_modules
from family_checks import counter, write_json
from transformers_models import forward_flops, n_params

pytestmark = pytest.mark.sweep

CLASSES = ("T5Model", "T5ForConditionalGeneration", "T5EncoderModel")


count = counter("t5")


def build(T, model_class: str, config, device: str = "meta"):
    """transformers' class (or the plugin's untied one, given config kwargs) with eager attention, as the kit
    builds a reference (`archzoo.testing.build_model`)."""
    if model_class.startswith("Reference"):
        return testing.build_model(
            Reference(library="archzoo", target=f"archzoo_t5.{model_class}", kwargs=config), device=device
        )
    return testing.build_model(model_class, config, device=device)


def transformers_model(T, config, device: str = "meta"):
    """transformers' own class for an archzoo configuration: T5EncoderModel, T5Model or T5ForConditionalGeneration.
    An untied head is given a weight of its own here, by hand: transformers 5.23's T5Config forces the tie, and
    from_pretrained unties a head the checkpoint holds (test_untied_head_is_what_from_pretrained_loads), so this
    is the model such a checkpoint loads into, built without the plugin's reference class."""
    import torch

    import archzoo_t5

    kwargs = archzoo_t5.transformers_kwargs(config)
    if kwargs.get("tie_word_embeddings") is False:
        model = build(T, "T5ForConditionalGeneration", T.T5Config(**kwargs), device)
        model.lm_head.weight = torch.nn.Parameter(torch.empty_like(model.lm_head.weight))
        return model
    name = (
        "T5EncoderModel" if not config.decoder else "T5ForConditionalGeneration" if config.head == "lm" else "T5Model"
    )
    return build(T, name, T.T5Config(**kwargs), device)


# ---- published configurations -----------------------------------------------------------------------------

#: T5 1.0 (Raffel et al. 2020, arXiv:1910.10683, Sec. 3.1.1 and 3.7; shapes of google-t5/t5-* config.json), ReLU,
#: head tied; T5 v1.1 (google-research/text-to-text-transfer-transformer, t5.1.1.*.gin; google/t5-v1_1-*),
#: gated GELU, head untied. Every one has the released 32,128-row vocabulary (T5Config's default).
PUBLISHED: dict[str, dict[str, Any]] = {
    "t5-small": dict(d_model=512, n_layers=6, d_ff=2048, n_heads=8, d_kv=64),
    "t5-base": dict(d_model=768, n_layers=12, d_ff=3072, n_heads=12, d_kv=64),
    "t5-large": dict(d_model=1024, n_layers=24, d_ff=4096, n_heads=16, d_kv=64),
    "t5-3b": dict(d_model=1024, n_layers=24, d_ff=16384, n_heads=32, d_kv=128),
    "t5-11b": dict(d_model=1024, n_layers=24, d_ff=65536, n_heads=128, d_kv=128),
    **{
        f"t5-v1_1-{size}": dict(
            d_model=d, n_layers=L, d_ff=ff, n_heads=h, d_kv=64, gated=True, activation="gelu_new", tie_embeddings=False
        )
        for size, d, L, ff, h in (
            ("small", 512, 8, 1024, 6),
            ("base", 768, 12, 2048, 12),
            ("large", 1024, 24, 2816, 16),
            ("xl", 2048, 24, 5120, 32),
            ("xxl", 4096, 24, 10240, 64),
        )
    },
}

#: T5-Small, T5ForConditionalGeneration: transformers 5.23 on the meta device (the figure the HF model card gives)
T5_SMALL = 60_506_624


def _hf_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    return dict(
        d_model=config["d_model"],
        num_layers=config["n_layers"],
        d_ff=config["d_ff"],
        num_heads=config["n_heads"],
        d_kv=config["d_kv"],
        feed_forward_proj="gated-gelu" if config.get("gated") else "relu",
    )


@pytest.mark.reference
def test_t5_small_is_the_known_figure(T, host):
    config = PUBLISHED["t5-small"]
    assert count(**config).params == T5_SMALL
    assert n_params(build(T, "T5ForConditionalGeneration", T.T5Config(**_hf_kwargs(config)))) == T5_SMALL


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
@pytest.mark.parametrize("model_class", CLASSES)
def test_published_shapes_equal_transformers(T, host, model_id, model_class):
    config = dict(PUBLISHED[model_id])
    kwargs = _hf_kwargs(config)
    if model_class == "T5ForConditionalGeneration":
        untied = not config.get("tie_embeddings", True)
        kwargs["tie_word_embeddings"] = not untied
        model = build(T, "ReferenceT5ForConditionalGeneration", kwargs) if untied else None
        model = model or build(T, model_class, T.T5Config(**kwargs))
    else:
        config.update(head="none", **({"decoder": False} if model_class == "T5EncoderModel" else {}))
        model = build(T, model_class, T.T5Config(**kwargs))
    assert count(**config).params == n_params(model)


# ---- random small configurations: parameters and FLOPs -----------------------------------------------------


def _random_config(rng: random.Random) -> dict[str, Any]:
    model_class = rng.choice(CLASSES)
    config: dict[str, Any] = dict(
        vocab_size=rng.randint(20, 120),
        d_model=rng.randint(4, 40),
        n_heads=rng.randint(1, 4),
        d_kv=rng.randint(1, 9),
        d_ff=rng.randint(4, 60),
        n_layers=rng.randint(1, 3),
        relative_attention_num_buckets=rng.randint(4, 40),
        activation=rng.choice(["relu", "gelu_new", "silu", "gelu"]),
        gated=rng.random() < 0.5,
    )
    if model_class == "T5EncoderModel":
        config.update(head="none", decoder=False)
    else:
        if rng.random() < 0.6:
            config["n_decoder_layers"] = rng.randint(1, 3)
        if model_class == "T5Model":
            config["head"] = "none"
        else:
            config["tie_embeddings"] = rng.random() < 0.5
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(20)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_params_and_flops_equal_transformers(T, host, config):
    report = count(**config)
    model = transformers_model(T, report.config)
    assert report.params == n_params(model), config
    arch = host.architecture("t5")
    for n in (1, 6, 13):
        assert make_report(arch, report.config, n).flops == forward_flops(model, n), (config, n)


@pytest.mark.reference
def test_core_reference_measures_the_plugin_references(T, host):
    """archzoo.reference builds and runs what the plugin names (encoder-decoder inputs, the untied class)."""
    from archzoo.reference import reference_flops, reference_params

    arch = host.architecture("t5")
    for config in (CONFIGS[0], dict(CONFIGS[1], tie_embeddings=False, head="lm", decoder=True), CONFIGS[2]):
        config = {k: v for k, v in config.items() if not (k == "n_decoder_layers" and not config.get("decoder", True))}
        report = count(7, **config)
        ref = arch.reference(report.config)
        assert (reference_params(ref), reference_flops(ref, 7)) == (report.params, report.flops), (config, ref)


def test_kv_cache_per_token_and_per_source_token(host):
    report = count(n_heads=3, d_kv=5, n_layers=2, n_decoder_layers=4)
    root = report.root
    # the decoder's self-attention caches 2 h d_kv per token, its cross-attention 2 h d_kv per source token
    assert root.kv_cache.evaluate() == 4 * 2 * 3 * 5
    assert root.cross_kv_cache.evaluate() == 4 * 2 * 3 * 5
    encoder_only = count(n_heads=3, d_kv=5, n_layers=2, decoder=False, head="none").root
    assert encoder_only.kv_cache.is_zero() and encoder_only.cross_kv_cache.is_zero()


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(decoder=False), "head: an LM head reads the decoder's output"),
        (dict(decoder=False, head="none", n_decoder_layers=2), "n_decoder_layers: decoder is false"),
        (dict(activation="gelu_fast"), "activation: unknown activation 'gelu_fast'"),
    ],
)
def test_inconsistent_configurations_are_refused(host, config, message):
    from archzoo.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        count(**config)


@pytest.mark.reference
@pytest.mark.parametrize("model_class", ["T5ForSequenceClassification", "BartForSequenceClassification"])
def test_the_kits_end_of_sequence_head_is_transformers_own(T, model_class):
    """archzoo.seq2seq_parts' classification head on the end-of-sequence token, which T5 and BART share: each of its
    blocks holds the parameters of the modules `eos_classification_modules` names, and the head costs what
    FlopCounterMode counts for the class's ``classification_head`` on the one token it reads."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if model_class.startswith("T5"):
        config = T.T5Config(vocab_size=11, d_model=12, d_kv=4, num_heads=2, d_ff=6, num_layers=1, num_labels=5)
    else:
        config = T.BartConfig(vocab_size=11, d_model=12, encoder_layers=1, decoder_layers=1, num_labels=5)
        config.encoder_attention_heads = config.decoder_attention_heads = 2
    model = build(T, model_class, config)
    head = eos_classification_head(sym("d", 12), sym("K", 5))
    modules = dict(model.named_modules())
    rows = eos_classification_modules("root")
    for path, _, block in head.walk():
        held = sum(p.numel() for name in rows[f"root.{path}"] for p in modules[name].parameters())
        assert block.params.evaluate() == held, path
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.classification_head(torch.zeros(1, 12, device="meta"))
    assert head.flops.evaluate() == counter.get_total_flops()


# ---- the LM head: untied as from_pretrained loads a T5 v1.1 checkpoint -------------------------------------


def _tiny_hf_config(T, **extra: Any):
    return T.T5Config(
        vocab_size=41, d_model=12, d_kv=4, num_heads=2, d_ff=20, num_layers=2, num_decoder_layers=1, **extra
    )


def _pre_5_file(config) -> dict[str, Any]:
    """config.json as transformers 4 wrote it for T5 v1.1: tie_word_embeddings false, none of 5.x's derived keys."""
    data = config.to_dict()
    for key in ("scale_decoder_outputs", "dense_act_fn", "is_gated_act"):
        data.pop(key)
    data["tie_word_embeddings"] = False
    return data


@pytest.mark.reference
@pytest.mark.parametrize("own_head", [True, False])
def test_untied_head_is_what_from_pretrained_loads(T, host, tmp_path, own_head):
    """A checkpoint with its own lm_head.weight loads untied; without it, tied: archzoo counts the first from
    a file saying tie_word_embeddings false, the second from one saying true."""
    import torch
    from safetensors.torch import save_file

    config = _tiny_hf_config(T, feed_forward_proj="gated-gelu")
    model = build(T, "T5ForConditionalGeneration", config, device="cpu")
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    if own_head:
        state["lm_head.weight"] = torch.randn_like(state["shared.weight"])
    else:
        state.pop("lm_head.weight")
    data = _pre_5_file(config)
    data["tie_word_embeddings"] = not own_head
    data["architectures"] = ["T5ForConditionalGeneration"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    save_file(state, str(tmp_path / "model.safetensors"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = T.T5ForConditionalGeneration.from_pretrained(str(tmp_path))
    assert (loaded.lm_head.weight is loaded.shared.weight) is not own_head
    reading = load_hf_config(tmp_path / "config.json", host, hf_class="auto")
    assert reading.config.tie_embeddings is not own_head
    assert make_report(reading.architecture, reading.config).params == n_params(loaded)


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------


def test_t5_is_read_by_the_t5_plugin(host):
    assert host.hf_model_types()["t5"].name == "t5"


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, aliases (attribute_map), AutoModel's class, every model class of the type, and every
    key of a file transformers 5.23 writes."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
    from transformers.models.t5 import modeling_t5

    table = hf_table(host.hf_readers()["t5"].reader)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {f.name: f.default for f in dataclasses.fields(T.T5Config) if f.name not in common}
    assert dict(table.aliases) == T.T5Config.attribute_map
    assert table.base_class == MODEL_MAPPING_NAMES["t5"]
    model_classes = {n for n in modeling_t5.__all__ if "PreTrained" not in n}
    assert set(table.classes) == model_classes  # every head class is counted: none refused
    assert not table.unsupported_classes
    for config in (T.T5Config(), T.T5Config(feed_forward_proj="gated-gelu", tie_word_embeddings=False)):
        known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
        assert set(config.to_dict()) <= known


#: files as transformers 5.23's T5Config(...).to_dict() writes them, counted as each class archzoo supports
FILES: dict[str, dict[str, Any]] = {
    "t5-small-shape": dict(d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=2),
    "decoder-deeper": dict(d_model=20, d_kv=6, num_heads=3, d_ff=30, num_layers=1, num_decoder_layers=3),
    "aliases": dict(hidden_size=24, head_dim=5, num_attention_heads=2, num_hidden_layers=2, d_ff=16),
    "buckets-silu": dict(d_model=16, relative_attention_num_buckets=9, feed_forward_proj="silu", num_layers=1),
    "gated-silu": dict(d_model=16, d_kv=4, num_heads=2, d_ff=24, feed_forward_proj="gated-silu", num_layers=2),
}


@pytest.mark.reference
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("model_class", CLASSES)
def test_files_written_by_transformers_count_as_the_class(T, host, tmp_path, name, model_class):
    config = T.T5Config(vocab_size=61, **FILES[name])
    path = write_json(tmp_path, config.to_dict())
    reading = load_hf_config(path, host, hf_class=model_class)
    report = make_report(reading.architecture, reading.config, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build(T, model_class, T.AutoConfig.from_pretrained(str(tmp_path)))
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 5))


@pytest.mark.reference
@pytest.mark.parametrize("model_class", CLASSES)
def test_a_t5_v1_1_file_from_the_hub_counts_its_own_head(T, host, tmp_path, model_class):
    """google/t5-v1_1-*'s config.json (tie_word_embeddings false, gated-gelu): the head counted untied, the base
    and encoder models as transformers builds them."""
    config = _tiny_hf_config(T, feed_forward_proj="gated-gelu")
    reading = load_hf_config(write_json(tmp_path, _pre_5_file(config)), host, hf_class=model_class)
    report = make_report(reading.architecture, reading.config, 4)
    if model_class == "T5ForConditionalGeneration":
        ref = reading.architecture.reference(reading.config)
        model = build(T, "ReferenceT5ForConditionalGeneration", ref.kwargs)
    else:
        model = build(T, model_class, config)
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 4))
    assert reading.config.gated and reading.config.activation == "gelu_new"


@pytest.mark.reference
def test_derived_keys_a_file_gives_win_as_in_transformers(T, host, tmp_path):
    """transformers sets dense_act_fn and is_gated_act after deriving them from feed_forward_proj."""
    data = {**T.T5Config(d_model=16, num_layers=1).to_dict(), "is_gated_act": True, "dense_act_fn": "silu"}
    path = write_json(tmp_path, data)
    reading = load_hf_config(path, host)
    assert (reading.config.gated, reading.config.activation) == (True, "silu")
    model = build(T, "T5Model", T.AutoConfig.from_pretrained(str(tmp_path)))
    assert make_report(reading.architecture, reading.config).params == n_params(model)


def test_a_hub_t5_small_file_is_read_with_every_key_accounted_for(host, tmp_path, capsys):
    """google-t5/t5-small's config.json as the Hub serves it (transformers 2.x keys: n_positions, output_past)."""
    data = {
        "architectures": ["T5ForConditionalGeneration"],
        "d_ff": 2048,
        "d_kv": 64,
        "d_model": 512,
        "decoder_start_token_id": 0,
        "dropout_rate": 0.1,
        "eos_token_id": 1,
        "initializer_factor": 1.0,
        "is_encoder_decoder": True,
        "layer_norm_epsilon": 1e-06,
        "model_type": "t5",
        "n_positions": 512,
        "num_heads": 8,
        "num_layers": 6,
        "output_past": True,
        "pad_token_id": 0,
        "relative_attention_num_buckets": 32,
        "task_specific_params": {"translation_en_to_de": {"prefix": "translate English to German: "}},
        "vocab_size": 32128,
    }
    path = write_json(tmp_path, data)
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == T5_SMALL


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (  # transformers' forward pass splits the logits into two, and fails on any other number
            {"model_type": "t5", "num_labels": 3},
            "T5ForQuestionAnswering",
            "{path}: num_labels, read as num_labels: head 'question_answering' gives an answer's start and end "
            "logits, so it needs 2 labels (transformers' forward pass splits the logits into two), got 3",
        ),
        (
            {"model_type": "t5", "tie_word_embeddings": True, "scale_decoder_outputs": False},
            "T5ForConditionalGeneration",
            "{path}: scale_decoder_outputs: false beside tie_word_embeddings: true is how transformers 5 saves a T5 "
            "created with tie_word_embeddings false, and the file alone does not say whether its LM head is tied: "
            "from_pretrained keeps a head of its own when the checkpoint holds lm_head.weight (every T5 v1.1 and "
            "FLAN-T5 checkpoint does) and ties it otherwise; in a copy of the file, set tie_word_embeddings to false "
            "to count a separate head, or remove scale_decoder_outputs (it only scales the decoder's output) to "
            "count a tied one",
        ),
        (
            {"model_type": "t5", "is_decoder": True},
            "T5EncoderModel",
            "{path}: is_decoder: true makes T5EncoderModel build its stack as a decoder, with cross-attention "
            "weights the encoder never runs; archzoo counts the encoder T5 uses; set is_decoder to false",
        ),
        (
            {"model_type": "t5", "is_encoder_decoder": False},
            None,
            "{path}: is_encoder_decoder: T5Model is an encoder-decoder, and with this set to false transformers "
            "builds and runs it differently (its decoder caches cross-attention keys with its own); set "
            "is_encoder_decoder to true",
        ),
        (
            {"model_type": "t5", "feed_forward_proj": "gelu-gated"},
            None,
            "{path}: feed_forward_proj: 'gelu-gated' is not an activation transformers' T5Config accepts; expected "
            '"ACTIVATION" or "gated-ACTIVATION", such as "relu" or "gated-gelu"',
        ),
        (
            {"model_type": "t5", "d_model": 64, "num_heads": 0},
            None,
            "{path}: num_heads, read as n_heads: must be greater than 0, got 0",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    path = write_json(tmp_path, data)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host, hf_class=hf_class)
    assert str(info.value) == message.format(path=path)


def test_the_same_file_is_counted_for_the_classes_without_a_head(host, tmp_path):
    """The tie is ambiguous only for the LM head: T5Model and T5EncoderModel count the 5.x file."""
    path = write_json(tmp_path, {"model_type": "t5", "tie_word_embeddings": True, "scale_decoder_outputs": False})
    for model_class in ("T5Model", "T5EncoderModel"):
        assert load_hf_config(path, host, hf_class=model_class).config.head == "none"


# ---- archzoo verify: the block mapping ---------------------------------------------------------------------

VERIFY_CASES: dict[str, dict[str, Any]] = {
    "T5ForConditionalGeneration": dict(vocab_size=97, d_model=24, d_kv=5, n_heads=3, d_ff=40, n_layers=2),
    "untied": dict(
        vocab_size=97,
        d_model=24,
        d_kv=5,
        n_heads=3,
        d_ff=40,
        n_layers=2,
        n_decoder_layers=3,
        gated=True,
        activation="gelu_new",
        tie_embeddings=False,
    ),
    "T5Model": dict(vocab_size=97, d_model=24, n_heads=2, d_ff=40, n_layers=3, n_decoder_layers=1, head="none"),
    "T5EncoderModel": dict(vocab_size=97, d_model=24, d_kv=7, n_layers=2, head="none", decoder=False, gated=True),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    from archzoo.verify import verify_target

    config = VERIFY_CASES[case]
    path = tmp_path / "small.yaml"
    entry = dict(
        architecture="t5", title="A test entry", year=2020, summary="Written by the test suite.", config=config
    )
    path.write_text(yaml.safe_dump(entry, sort_keys=False))
    verification = verify_target(str(path), host=host)
    base = "T5ForConditionalGeneration" if case == "untied" else case
    assert verification.target == f"archzoo_t5.Reference{base}"
    assert verification.ok, verification.render()
    rows = {row.path: row for row in verification.blocks}
    stacks = ("encoder", "decoder") if config.get("decoder", True) else ("encoder",)
    for stack in stacks:
        layer = f"t5.{stack}.layers.layer"
        assert rows[layer].copies == (
            config.get("n_decoder_layers") or config["n_layers"] if stack == "decoder" else config["n_layers"]
        )
        assert {f"t5.{stack}.relative_attention_bias", f"{layer}.self_attention.q_proj", f"{layer}.mlp.fc_out"} <= set(
            rows
        )
    assert ("t5.decoder.layers.layer.cross_attention.k_proj" in rows) is config.get("decoder", True)
    assert ("t5.lm_head" in rows) is (config.get("head", "lm") == "lm")
    # only the attention products (no parameters) are left unmapped
    assert {path.rpartition(".")[2] for path, _ in verification.unmapped} == {"scores"}


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS[:8], ids=[f"seed{i}" for i in range(8)])
def test_reference_classes_are_transformers_own(T, host, config):
    """The plugin's reference class holds transformers' parameters (the position bias reported on its stack)
    and runs transformers' forward pass: the same count and the same FLOPs as the class it extends."""
    report = count(**config)
    ref = host.architecture("t5").reference(report.config)
    ours = build(T, ref.target.rpartition(".")[2], ref.kwargs)
    theirs = transformers_model(T, report.config)
    assert n_params(ours) == n_params(theirs) == report.params
    assert [forward_flops(ours, n) for n in (3, 8)] == [forward_flops(theirs, n) for n in (3, 8)]
    names = [name for name, _ in ours.named_parameters()]
    assert "encoder.relative_attention_bias.weight" in names
    assert not any(name.endswith("SelfAttention.relative_attention_bias.weight") for name in names)
