"""Inputs transformers 5.23 accepts that archzoo refused or printed as invalid JSON (issue 22): each is counted as
transformers builds it, or refused for the reason transformers itself fails; and every ``--json`` output is strict
JSON (RFC 8259: no bare NaN or Infinity), whatever float the configuration holds.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the class transformers builds from the
file (AutoConfig, as from_pretrained reads it) or from the keys (the kit's reference), what
``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of batch 1
(`transformers_models.config_json_figures`, `_file_figures`), or the bytes autograd saves in one training step
(`archzoo.testing.assert_activation_memory_matches`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from archzoo import Reference
from archzoo.architecture import float_keys, json_number, parse_config
from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.host import get_host
from archzoo.plugin_parts import NumLabels
from archzoo.reference import reference_inputs
from archzoo.report import make_report
from archzoo.testing import assert_activation_memory_matches, assert_matches_reference, build_model
from family_checks import assert_config_json_matches, assert_head_class_matches, counter, table_of, write_json
from transformers_models import n_params

#: small config.json files of the families whose plugins this module's fixes touch
FILES: dict[str, dict[str, Any]] = {
    "gpt_neox": dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40),
    "gemma2": dict(
        vocab_size=97,
        hidden_size=48,
        intermediate_size=40,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
        sliding_window=4,
    ),
    "modernbert": dict(
        vocab_size=97, hidden_size=48, num_hidden_layers=4, num_attention_heads=4, intermediate_size=40, pad_token_id=0
    ),
}
FILES["gemma3_text"] = dict(FILES["gemma2"], sliding_window_pattern=2)  # one sliding, one global layer
#: the classes of each that read num_labels
CLASSIFIERS = {
    "gemma3_text": ["Gemma3TextForSequenceClassification"],
    "gpt_neox": ["GPTNeoXForSequenceClassification", "GPTNeoXForTokenClassification"],
    "gemma2": ["Gemma2ForSequenceClassification", "Gemma2ForTokenClassification"],
    "modernbert": ["ModernBertForSequenceClassification", "ModernBertForTokenClassification"],
}


def strict_json(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON: Python's json module takes NaN, Infinity and -Infinity, strict readers
    (a browser's JSON.parse, jq) do not."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is no JSON number")

    return json.loads(text, parse_constant=refuse)


def run(capsys: Any, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- 1. num_labels: 0, negative, true ---------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("num_labels", [0, -1, True], ids=["zero", "negative", "true"])
@pytest.mark.parametrize("model_type", list(FILES))
def test_a_label_count_transformers_builds_is_counted(T, host, tmp_path, model_type, num_labels):
    """PreTrainedConfig makes id2label of range(num_labels): -1 gives no labels (a classifier Linear(d, 0)), true
    one; each classifier is counted as transformers builds and runs it."""
    path = write_json(tmp_path, {"model_type": model_type, **FILES[model_type], "num_labels": num_labels})
    loaded = T.AutoConfig.from_pretrained(str(path))
    for model_class in CLASSIFIERS[model_type]:
        reading = load_hf_config(path, host, hf_class=model_class)
        assert type(reading.config.num_labels) is int and reading.config.num_labels == loaded.num_labels
    assert_config_json_matches(T, host, path, CLASSIFIERS[model_type], seq_len=5, label=num_labels)


@pytest.mark.reference
@pytest.mark.parametrize("num_labels", [2.5, None, "3"], ids=["float", "null", "text"])
def test_a_label_count_transformers_cannot_load_is_refused_naming_it(T, host, tmp_path, num_labels):
    path = write_json(tmp_path, {"model_type": "gpt_neox", **FILES["gpt_neox"], "num_labels": num_labels})
    with pytest.raises(TypeError):  # range(num_labels), in PreTrainedConfig's num_labels setter
        T.AutoConfig.from_pretrained(str(path))
    with pytest.raises(HFConfigError, match=r"^\S+: num_labels, read as num_labels: expected an integer") as info:
        load_hf_config(path, host, hf_class="GPTNeoXForSequenceClassification")
    assert "\n" not in str(info.value)


@pytest.mark.reference
@pytest.mark.parametrize(
    "architecture, model_class, config",
    [
        ("neox", "GPTNeoXForSequenceClassification", dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40)),
        ("gemma2", "Gemma2ForTokenClassification", dict(vocab_size=97, d_model=48, n_layers=2, d_ff=40, d_head=16)),
        ("modernbert", "ModernBertForSequenceClassification", dict(vocab_size=97, d_model=48, n_layers=4, d_ff=40)),
    ],
)
def test_no_labels_given_as_a_key_is_counted(T, host, architecture, model_class, config):
    head = "token_classification" if "Token" in model_class else "sequence_classification"
    assert_head_class_matches(T, host, architecture, model_class, dict(config, head=head, num_labels=0), (5,))


def test_a_negative_label_count_given_as_a_key_is_refused(capsys):
    """transformers would build no labels from -1; archzoo counts the value given or refuses it, never another."""
    code, out, err = run(capsys, "count", "neox", "--set", "head=sequence_classification", "--set", "num_labels=-1")
    assert (code, out) == (1, "") and err.startswith("archzoo: error: --set: num_labels: ") and err.count("\n") == 1


# ---- 1b. num_labels in every other family: 0, negative, true, an empty id2label ----------------------------------

_DECODER = dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40)
_EXPERTS = dict(num_experts_per_tok=2, moe_intermediate_size=16)
_LATENT = dict(
    _EXPERTS,
    kv_lora_rank=8,
    q_lora_rank=None,
    qk_nope_head_dim=8,
    qk_rope_head_dim=4,
    v_head_dim=8,
    n_routed_experts=4,
    first_k_dense_replace=1,
    n_group=1,
    topk_group=1,
)
_SEQ2SEQ = dict(
    vocab_size=97,
    d_model=48,
    encoder_layers=2,
    decoder_layers=1,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=40,
    decoder_ffn_dim=40,
)
_VISION = dict(
    hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40, image_size=32, patch_size=8
)
#: a small config.json of each model type the other families' plugins read. BART's and T5's sequence classifiers read
#: the decoder at the end-of-sequence tokens: token 0 is one, so that the all-zero input ends with one
FAMILY_FILES: dict[str, dict[str, Any]] = {
    "opt": dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, ffn_dim=40),
    "bloom": dict(vocab_size=97, hidden_size=48, n_layer=2, n_head=4),
    "falcon": dict(_DECODER),
    "starcoder2": dict(_DECODER, num_key_value_heads=2),
    "stablelm": dict(_DECODER, hidden_size=64, num_key_value_heads=4),  # a quarter of a 16-wide head rotates
    "bart": dict(_SEQ2SEQ, eos_token_id=0),
    "mbart": dict(_SEQ2SEQ, eos_token_id=0),
    "bert": dict(_DECODER),
    "roberta": dict(_DECODER),
    "xlm-roberta": dict(_DECODER),
    "xlm-roberta-xl": dict(_DECODER),
    "electra": dict(_DECODER, embedding_size=16),
    "albert": dict(_DECODER, embedding_size=16),
    "distilbert": dict(vocab_size=97, dim=48, n_layers=2, n_heads=4, hidden_dim=40),
    "deberta-v2": dict(_DECODER),
    "t5": dict(vocab_size=97, d_model=24, d_kv=6, num_heads=4, d_ff=40, num_layers=2, eos_token_id=0),
    "whisper": dict(
        vocab_size=97,
        num_mel_bins=8,
        d_model=16,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=24,
        decoder_ffn_dim=20,
        max_source_positions=10,
        max_target_positions=12,
        classifier_proj_size=6,
    ),
    "gpt2": dict(vocab_size=97, n_embd=48, n_layer=2, n_head=4),
    "openai-gpt": dict(vocab_size=97, n_embd=48, n_layer=2, n_head=4),
    "deepseek_v2": dict(_DECODER, **_LATENT),
    "deepseek_v3": dict(_DECODER, num_key_value_heads=4, **_LATENT),
    "llama": dict(_DECODER, num_key_value_heads=2),
    "mistral": dict(_DECODER, num_key_value_heads=2),
    "qwen2": dict(_DECODER, num_key_value_heads=2),
    "gemma": dict(_DECODER, num_key_value_heads=2, head_dim=12),
    "olmo": dict(_DECODER),
    "phi3": dict(_DECODER, pad_token_id=0),
    "qwen3": dict(_DECODER, num_key_value_heads=2, head_dim=12),
    "olmo2": dict(_DECODER),
    "granite": dict(_DECODER),
    "mixtral": dict(_DECODER, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(_DECODER, num_key_value_heads=2, num_experts=4, shared_expert_intermediate_size=16, **_EXPERTS),
    "qwen3_moe": dict(_DECODER, num_key_value_heads=2, head_dim=12, num_experts=4, **_EXPERTS),
    "cohere": dict(_DECODER),
    "clip": dict(
        text_config=dict(_DECODER, max_position_embeddings=16), vision_config=dict(_VISION), projection_dim=16
    ),
    "vit": dict(_VISION),
    "deit": dict(_VISION),
}
#: the class names of a base model or a language-model head, which put nothing on top that counts labels
_NO_CLASSIFIER = (
    "Model",
    "ForCausalLM",
    "ForMaskedLM",
    "ForConditionalGeneration",
    "ForMaskedImageModeling",
    "WithProjection",
)
#: the classes that split their num_labels outputs per token into start and end logits: transformers fails unless
#: there are 2 (ValueError: not enough values to unpack; DistilBERT's constructor: "config.num_labels should be 2")
NEEDS_TWO_LABELS = {
    "BertForQuestionAnswering",
    "RobertaForQuestionAnswering",
    "XLMRobertaForQuestionAnswering",
    "XLMRobertaXLForQuestionAnswering",
    "ElectraForQuestionAnswering",
    "AlbertForQuestionAnswering",
    "DistilBertForQuestionAnswering",
    "DebertaV2ForQuestionAnswering",
    "T5ForQuestionAnswering",
}


def _head_classes(host: Any, model_type: str) -> list[str]:
    """The classes of the reader's table a label count can reach: every one but the base models and the language
    model heads; a model type with none (Cohere, Granite) is checked through its language model."""
    classes = list(table_of(host, model_type).classes)
    heads = [name for name in classes if not name.endswith(_NO_CLASSIFIER)]
    return heads or [name for name in classes if name.endswith("ForCausalLM")]


def _file_figures(T: Any, path: Path, model_class: str, seq_len: int, reference: Reference) -> tuple[int, int]:
    """Parameters and FlopCounterMode FLOPs of transformers' ``model_class`` built by AutoConfig from the file, as
    from_pretrained reads it (on the CPU with seeded weights: BART's and T5's classifiers index the end-of-sequence
    tokens), one forward pass of batch 1 of what ``reference`` takes (its ``inputs``: token ids, both sides'
    ids, 30 s of mel frames, an image), its sizes read off the built model."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model(getattr(T, model_class), T.AutoConfig.from_pretrained(str(path)), device="cpu")
    model.requires_grad_(False)
    args, kwargs = reference_inputs(reference.model_copy(update={"device": "cpu"}), seq_len, model)
    with torch.no_grad(), FlopCounterMode(display=False) as flops:
        model(*args, **kwargs)
    return n_params(model), flops.get_total_flops()


def _assert_counted_or_refused_as_transformers(T: Any, host: Any, path: Path, model_type: str, label: Any) -> None:
    """Each head class of the file is counted as transformers builds and runs it (parameters and FLOPs), or, for a
    class that runs only with 2 labels, refused on one line naming num_labels, where transformers fails too."""
    loaded = T.AutoConfig.from_pretrained(str(path))
    table = table_of(host, model_type)
    for model_class in _head_classes(host, model_type):
        if model_class in NEEDS_TWO_LABELS and loaded.num_labels != 2:
            kind = "encoder_decoder_token_ids" if loaded.is_encoder_decoder else "token_ids"
            ids = Reference(library="transformers", target=model_class, inputs=kind)
            with pytest.raises(ValueError, match=r"not enough values to unpack|config\.num_labels should be 2"):
                _file_figures(T, path, model_class, 5, ids)
            with pytest.raises(HFConfigError, match=r"^\S+: (num_labels|id2label).*: .*2") as info:
                load_hf_config(path, host, hf_class=model_class)
            assert "\n" not in str(info.value)
            continue
        reading = load_hf_config(path, host, hf_class=model_class)
        target = table.read.get("num_labels")
        counted = getattr(reading.config, target) if target else None
        if target:  # the label count transformers makes of the file, as an integer
            assert (type(counted), counted) == (int, loaded.num_labels), (label, model_class)
        arch, config = reading.architecture, reading.config
        seq_len = None if arch.seq_len_fixed else 5
        report = make_report(arch, config, seq_len)
        reference = arch.reference(config)
        assert reference is not None
        # ViT's plugin names ViTModel (DeiTModel) without its pooler for an image classifier of no classes: the same
        # modules but the classifier, an identity
        named = reference.target.rpartition(".")[2]
        assert named.endswith(model_class) or (arch.name, counted, named) == ("vit", 0, table.base_class)
        assert (report.params, report.flops) == _file_figures(T, path, model_class, report.seq_len, reference), (
            label,
            model_class,
        )


@pytest.mark.reference
@pytest.mark.sweep
@pytest.mark.parametrize("num_labels", [0, -1, True], ids=["zero", "negative", "true"])
@pytest.mark.parametrize("model_type", list(FAMILY_FILES))
def test_every_familys_label_count_transformers_builds_is_counted(T, host, tmp_path, model_type, num_labels):
    """PreTrainedConfig makes id2label of range(num_labels): -1 gives no labels (a classifier Linear(d, 0), or an
    identity for the image classifiers), true one; every head class is counted as transformers builds and runs it
    from the file, or refused as transformers fails (question answering with other than 2 labels)."""
    path = write_json(tmp_path, {"model_type": model_type, **FAMILY_FILES[model_type], "num_labels": num_labels})
    _assert_counted_or_refused_as_transformers(T, host, path, model_type, num_labels)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", ["bert", "t5", "whisper", "deberta-v2", "llama", "vit"])
def test_an_empty_id2label_is_no_labels(T, host, tmp_path, model_type):
    """Without num_labels, transformers counts the labels of id2label: an empty one is 0 labels, and builds."""
    path = write_json(tmp_path, {"model_type": model_type, **FAMILY_FILES[model_type], "id2label": {}})
    assert T.AutoConfig.from_pretrained(str(path)).num_labels == 0
    _assert_counted_or_refused_as_transformers(T, host, path, model_type, "id2label {}")


#: a small configuration of each architecture of these families, as archzoo keys, and its heads that read num_labels
KEYED: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "opt": (dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40), ("sequence_classification",)),
    "bloom": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4),
        ("sequence_classification", "token_classification"),
    ),
    "falcon": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4),
        ("sequence_classification", "token_classification"),
    ),
    "starcoder2": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "stablelm": (
        dict(vocab_size=97, d_model=64, n_layers=2, n_heads=4, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "bart": (
        dict(vocab_size=97, d_model=48, n_encoder_layers=2, n_decoder_layers=1, n_encoder_heads=4, n_decoder_heads=4),
        ("sequence_classification",),
    ),
    "bert": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "deberta": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40, position_buckets=8),
        ("sequence_classification", "token_classification"),
    ),
    "t5": (dict(vocab_size=97, d_model=24, d_kv=6, n_heads=4, d_ff=40, n_layers=2), ("sequence_classification",)),
    "whisper": (
        dict(
            vocab_size=97,
            num_mel_bins=8,
            d_model=16,
            n_encoder_layers=2,
            n_decoder_layers=1,
            n_encoder_heads=2,
            n_decoder_heads=2,
            d_ff_encoder=24,
            d_ff_decoder=20,
            max_source_positions=10,
            max_target_positions=12,
            classifier_proj_size=6,
        ),
        ("audio_classification",),
    ),
    "gpt": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4),
        ("sequence_classification", "token_classification"),
    ),
    "deepseek": (
        dict(
            vocab_size=97,
            d_model=48,
            n_layers=2,
            n_heads=4,
            q_lora_rank=None,
            kv_lora_rank=8,
            qk_nope_head_dim=8,
            qk_rope_head_dim=4,
            v_head_dim=8,
            d_ff=40,
            n_dense_layers=1,
            n_experts=4,
            top_k=2,
            d_ff_expert=16,
        ),
        ("sequence_classification", "token_classification"),
    ),
    "llama": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "moe": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, n_experts=4, top_k=2, d_ff_expert=16),
        ("sequence_classification", "token_classification"),
    ),
    "qwen3": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_head=12, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "olmo2": (dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40), ("sequence_classification",)),
    "granite": (
        dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=40),
        ("sequence_classification", "token_classification"),
    ),
    "clip": (
        dict(
            vocab_size=97,
            max_positions=16,
            d_model=48,
            n_layers=2,
            n_heads=4,
            d_ff=40,
            image_size=32,
            patch_size=8,
            vision_d_model=48,
            vision_n_layers=2,
            vision_n_heads=4,
            vision_d_ff=40,
            projection_dim=16,
        ),
        ("image_classification",),
    ),
}
KEYED["t5-encoder"] = (dict(KEYED["t5"][0], decoder=False), ("token_classification",))


@pytest.mark.reference
@pytest.mark.sweep
@pytest.mark.parametrize(
    "architecture, config",
    [
        pytest.param(name.partition("-")[0], dict(config, head=head), id=f"{name}-{head}")
        for name, (config, heads) in KEYED.items()
        for head in heads
    ],
)
def test_no_labels_given_as_a_key_is_counted_in_every_family(host, architecture, config):
    """num_labels 0 counted as the reference class built with it holds and computes (the kit's check against the
    transformers class, block by block and in total)."""
    assert_matches_reference(host.architecture(architecture), dict(config, num_labels=0), seq_lens=(1, 5))


#: the heads of 0 labels whose activation memory archzoo states, each with the device its reference runs on (a
#: mixture of experts routes by the router's values: the CPU)
ACTIVATION_HEADS = [
    ("llama", "sequence_classification", "meta"),
    ("llama", "token_classification", "meta"),
    ("qwen3", "token_classification", "meta"),
    ("olmo2", "sequence_classification", "meta"),
    ("deberta", "sequence_classification", "meta"),
    ("deberta", "token_classification", "meta"),
    ("whisper", "audio_classification", "meta"),
    ("t5-encoder", "token_classification", "meta"),
    ("clip", "image_classification", "meta"),
    ("moe", "sequence_classification", "cpu"),
    ("deepseek", "token_classification", "cpu"),
]


@pytest.mark.reference
@pytest.mark.sweep
@pytest.mark.parametrize("name, head, device", ACTIVATION_HEADS, ids=[f"{n}-{h}" for n, h, _ in ACTIVATION_HEADS])
def test_no_labels_saves_what_autograd_saves(host, name, head, device):
    """A classifier of 0 outputs saves what autograd saves for it in one training step (the kit's check of the
    activation formula, in total and block by block)."""
    config = dict(KEYED[name][0], head=head, num_labels=0)
    assert_activation_memory_matches(host.architecture(name.partition("-")[0]), config, 5, device=device)


@pytest.mark.reference
def test_explain_says_how_transformers_reads_a_negative_count(T, host, tmp_path):
    """--explain (the reading's keys) names the count as given and the labels transformers makes of it."""
    path = write_json(tmp_path, {"model_type": "t5", **FAMILY_FILES["t5"], "num_labels": -3})
    assert T.AutoConfig.from_pretrained(str(path)).num_labels == 0
    reading = load_hf_config(path, host, hf_class="T5ForSequenceClassification")
    (key,) = [k for k in reading.keys if k.key == "num_labels"]
    assert (key.value, key.disposition, reading.config.num_labels) == (-3, "read", 0)
    assert key.detail.endswith("makes id2label of range(-3), so 0 labels")


def _label_key(arch: Any) -> str | None:
    return next((key for key in ("num_labels", "num_classes") if key in arch.config_model.model_fields), None)


#: every architecture whose configuration has a label count, as the host lists them
LABELLED_ARCHITECTURES = sorted(name for name, arch in get_host().architectures.items() if _label_key(arch))


@pytest.mark.parametrize("architecture", LABELLED_ARCHITECTURES)
def test_a_label_count_starts_at_zero_everywhere(host, architecture, capsys):
    """The one type of the label count (`archzoo.plugin_parts.NumLabels`) in every family: 0 is counted, -1 given as
    a key is refused on one line (transformers would build no labels of it: another value than the one given), and
    the site's what-if calculator offers the count from 0."""
    arch = host.architecture(architecture)
    key = _label_key(arch)
    field = arch.config_model.model_fields[key]
    assert (field.annotation, field.metadata) == (int, list(NumLabels.__metadata__))
    code, out, err = run(capsys, "count", architecture, "--set", f"{key}=-1")
    assert (code, out) == (1, "") and err.startswith(f"archzoo: error: --set: {key}: ") and err.count("\n") == 1
    from archzoo.site.explore import whatif

    fields = {field["key"]: field for field in whatif(arch, parse_config(arch, {}))["fields"]}
    assert fields[key]["min"] == 0


# ---- 2. ModernBERT: a layer pattern beyond archzoo's limit for a size -------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("every", [2**31, 2**40])
def test_a_modernbert_pattern_beyond_the_size_limit_is_read_as_transformers_reads_it(T, host, tmp_path, every):
    """ModernBertConfig makes layer i global when i % global_attn_every_n_layers is 0: only the first, here."""
    path = write_json(
        tmp_path, {"model_type": "modernbert", **FILES["modernbert"], "global_attn_every_n_layers": every}
    )
    loaded = T.AutoConfig.from_pretrained(str(path))
    assert load_hf_config(path, host).config.kinds() == loaded.layer_types
    assert_config_json_matches(T, host, path, ["ModernBertModel"], seq_len=9)


# ---- 3. GPT-NeoX: the generic rotary keys its own conversion does not take ------------------------------------


@pytest.mark.reference
def test_a_top_level_rope_theta_is_not_gpt_neoxs(T, host, tmp_path):
    """GPTNeoXConfig takes the base from rotary_emb_base; a rope_theta key stays a plain attribute set after the
    rotary settings are built: transformers loads the file with its default base, and archzoo ignores the key."""
    data = {"model_type": "gpt_neox", **FILES["gpt_neox"], "rope_theta": 500.0, "partial_rotary_factor": 1.0}
    path = write_json(tmp_path, data)
    loaded = T.AutoConfig.from_pretrained(str(path))
    assert loaded.rope_parameters["rope_theta"] != 500.0 and loaded.rope_parameters["partial_rotary_factor"] == 0.25
    reading = load_hf_config(path, host)
    assert reading.config.rotary_fraction == loaded.rope_parameters["partial_rotary_factor"]
    ignored = {k.key: k.disposition for k in reading.keys if k.key in ("rope_theta", "partial_rotary_factor")}
    assert ignored == {"rope_theta": "ignored", "partial_rotary_factor": "ignored"}
    assert_config_json_matches(T, host, path, ["GPTNeoXForCausalLM"], seq_len=5)


# ---- 4. floats: an integer is no float ------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ["neox", "phi", "gemma2", "gemma3"])
def test_an_integer_for_a_float_key_is_refused_naming_it(architecture, host, capsys):
    """Counted, it would be another value than the one given (1.0 for 1): refused on one line, for every float key
    of the architecture (asked from its configuration model, not listed here)."""
    keys = sorted(float_keys(host.architecture(architecture).config_model))
    assert keys  # each of these architectures has one
    for key in keys:
        code, out, err = run(capsys, "count", architecture, "--set", f"{key}=1")
        assert (code, out) == (1, ""), key
        assert (
            err == f"archzoo: error: --set: {key}: expected a float such as 1.0, got the integer 1; write it with "
            "a decimal point\n"
        )


@pytest.mark.reference
@pytest.mark.parametrize(
    "model_type, extra, model_class",
    [
        ("gpt_neox", {"rotary_pct": 1}, "GPTNeoXForCausalLM"),
        ("gpt_neox", {"rope_parameters": {"rope_type": "default", "partial_rotary_factor": 1}}, "GPTNeoXModel"),
        ("phi", {"partial_rotary_factor": 1}, "PhiForCausalLM"),
    ],
)
def test_an_integer_fraction_transformers_takes_is_read_as_its_float(T, host, tmp_path, model_type, extra, model_class):
    """These keys have no strict field in transformers (a legacy key, an entry of rope_parameters): it takes 1, and
    computes with it what it computes with 1.0."""
    path = write_json(tmp_path, {"model_type": model_type, **FILES["gpt_neox"], **extra})
    loaded = T.AutoConfig.from_pretrained(str(path))
    assert loaded.rope_parameters["partial_rotary_factor"] == 1
    fraction = load_hf_config(path, host, hf_class=model_class).config.rotary_fraction
    assert (type(fraction), fraction) == (float, 1.0)
    assert_config_json_matches(T, host, path, [model_class], seq_len=5)


# ---- 5. NaN and infinity: valid JSON on every --json path -------------------------------------------------------


def test_json_number_writes_what_json_has_no_number_for():
    assert json_number({"a": [math.nan, 1.5, -math.inf], "b": math.inf, "c": "NaN"}) == {
        "a": ["NaN", 1.5, "-Infinity"],
        "b": "Infinity",
        "c": "NaN",
    }


def test_count_with_set_writes_non_finite_caps_as_strict_json(capsys):
    """The what-if path (a configuration changed with --set): the caps change no count, and print as text."""
    code, out, _ = run(
        capsys, "count", "gemma2", "--set", "attn_softcap=.nan", "--set", "final_softcap=-.inf", "--json"
    )
    assert code == 0
    data = strict_json(out)
    assert (data["config"]["attn_softcap"], data["config"]["final_softcap"]) == ("NaN", "-Infinity")
    finite = counter("gemma2")()
    assert (data["params"]["total"], data["flops"]["forward"]) == (finite.params, finite.flops)


def test_count_with_a_config_file_writes_strict_json(tmp_path, capsys):
    path = tmp_path / "caps.yaml"
    path.write_text("attn_softcap: .inf\nfinal_softcap: .nan\n")
    code, out, _ = run(capsys, "count", "gemma2", "--config", str(path), "--json")
    assert code == 0
    assert strict_json(out)["config"]["attn_softcap"] == "Infinity"


@pytest.mark.reference
def test_a_config_json_with_nan_counts_as_transformers_builds_it_and_prints_strict_json(T, host, tmp_path, capsys):
    """Python's json module, and so transformers, reads NaN and Infinity in a config.json: the soft-cap read, the
    norms' epsilon ignored; both shown in the hf_config section as text."""
    path = tmp_path / "config.json"
    data = {"model_type": "gemma2", **FILES["gemma2"], "attn_logit_softcapping": math.nan, "rms_norm_eps": math.inf}
    path.write_text(json.dumps(data))  # Python writes NaN and Infinity, as a file holding them has them
    assert_config_json_matches(T, host, path, ["Gemma2ForCausalLM"], seq_len=5)
    code, out, _ = run(capsys, "count", "--hf-config", str(path), "--set", "final_softcap=.inf", "--json")
    assert code == 0
    report = strict_json(out)
    assert report["config"]["attn_softcap"] == "NaN"
    values = {k["key"]: k["value"] for k in report["hf_config"]["keys"]}
    assert (values["attn_logit_softcapping"], values["rms_norm_eps"]) == ("NaN", "Infinity")
    assert report["hf_config"]["overrides"] == {"final_softcap": "Infinity"}


def _registry_with_nan(folder: Path) -> Path:
    """A registry folder of two Gemma 2 entries, one of them with non-finite caps."""
    source = Path(__file__).parents[1] / "registry" / "gemma2"
    entries = folder / "gemma2"
    entries.mkdir(parents=True)
    text = (source / "gemma-2-2b.yaml").read_text()
    assert "\nconfig: {}\n" in text
    (entries / "nan-caps.yaml").write_text(
        text.replace("\nconfig: {}\n", "\nconfig: {attn_softcap: .nan, final_softcap: -.inf}\n")
    )
    (entries / "gemma-2-9b.yaml").write_text((source / "gemma-2-9b.yaml").read_text())
    return folder


def test_show_and_compare_write_strict_json(tmp_path, capsys):
    registry = str(_registry_with_nan(tmp_path / "registry"))
    code, out, err = run(capsys, "show", "nan-caps", "--registry", registry, "--json")
    assert code == 0, err
    config = strict_json(out)["report"]["config"]
    assert (config["attn_softcap"], config["final_softcap"]) == ("NaN", "-Infinity")
    code, out, err = run(capsys, "compare", "nan-caps", "gemma-2-9b", "--registry", registry, "--json")
    assert code == 0, err
    assert strict_json(out)["models"] == ["nan-caps", "gemma-2-9b"]


def test_the_sites_what_if_data_is_strict_json(host):
    """The what-if calculator's export (archzoo.site.explore), which a browser's JSON.parse reads."""
    from archzoo.architecture import parse_config
    from archzoo.site.explore import to_json, whatif

    arch = host.architecture("gemma2")
    small = dict(vocab_size=97, d_model=48, n_layers=2, d_ff=40, d_head=16)
    config = parse_config(arch, dict(small, attn_softcap=math.nan, final_softcap=math.inf))
    data = strict_json(to_json(whatif(arch, config)))
    assert (data["config"]["attn_softcap"], data["config"]["final_softcap"]) == ("NaN", "Infinity")


def test_a_references_code_of_a_nan_cap_is_python(host):
    arch = host.architecture("gemma2")
    report = counter("gemma2")(attn_softcap=math.nan, final_softcap=math.inf)
    code = arch.reference(report.config).code()
    assert "attn_logit_softcapping=float('nan')" in code and "final_logit_softcapping=float('inf')" in code
    compile(code, "reference", "exec")


# ---- 6. a model type no plugin reads, around one that one reads ------------------------------------------------


@pytest.mark.reference
def test_a_multimodal_gemma3_file_is_refused_saying_what_to_count(T, tmp_path, capsys):
    """Gemma3ForConditionalGeneration's file, as transformers saves it: its text_config names gemma3_text, which
    archzoo counts, and the refusal says to count that object alone (test_gemma checks that the recipe counts the
    text model inside exactly)."""
    path = write_json(tmp_path, T.Gemma3Config().to_dict())
    code, out, err = run(capsys, "count", "--hf-config", str(path))
    assert (code, out) == (1, "")
    assert err == (
        f"archzoo: error: {path}: model_type: 'gemma3' is not supported (no plugin reads it), but its text_config is "
        "a 'gemma3_text' configuration, which archzoo counts: save that object as a config.json of its own and count "
        "it (archzoo count --hf-config text_config.json) for the gemma3_text model inside, without what the file's "
        "other parts add; a plugin can add 'gemma3' with the register_hf_readers hook\n"
    )
