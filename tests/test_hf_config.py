"""Hugging Face config.json files: exact or refused, every key accounted for, any head class.

The counts below come from transformers 5.23 (``sum(p.numel() for p in model.parameters())`` of the class
named beside each figure, built on the meta device) and are rebuilt from transformers in the same test
when it is installed. The sweep of every key against transformers is tests/test_hf_sweep.py; this module
holds the cases the issue names, the refusals (each one hostile-input case, with its exact message), the
``--explain`` and ``--json`` reports, and the methodology page's generated section.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from archzoo import Architecture, hookimpl
from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import (
    DOC_END,
    DOC_START,
    HFTable,
    hf_table,
    load_hf_config,
    methodology_section,
    read_hf_config,
)
from archzoo.host import PluginHost
from archzoo.report import make_report
from transformers_models import build_model, forward_flops, n_params

REPO = Path(__file__).resolve().parents[1]

# Partial configs: keys left out must take transformers' defaults for that model type.
CASES = {
    "bert": {
        "model_type": "bert",
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 512,
    },
    "roberta": {
        "model_type": "roberta",
        "vocab_size": 1000,
        "max_position_embeddings": 130,
        "type_vocab_size": 1,
        "num_hidden_layers": 1,
    },
    "distilbert": {"model_type": "distilbert", "dim": 96, "n_heads": 3, "hidden_dim": 200, "n_layers": 2},
    "albert": {
        "model_type": "albert",
        "hidden_size": 256,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "embedding_size": 64,
        "num_hidden_layers": 3,
    },
    "gpt2": {"model_type": "gpt2", "n_embd": 96, "n_layer": 2, "n_head": 4},
    "openai-gpt": {"model_type": "openai-gpt", "n_layer": 1},
    "vit": {
        "model_type": "vit",
        "image_size": 32,
        "patch_size": 8,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
    },
    "deit": {
        "model_type": "deit",
        "image_size": 48,
        "patch_size": 16,
        "hidden_size": 60,
        "num_attention_heads": 3,
        "intermediate_size": 100,
        "num_hidden_layers": 1,
    },
    "bert-defaults": {"model_type": "bert"},
}


@pytest.fixture(scope="module")
def host():
    return PluginHost().load()


def _write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def _params(path, host, overrides=None, hf_class=None) -> int:
    reading = load_hf_config(path, host, overrides, hf_class)
    return make_report(reading.architecture, reading.config).params


def _transformers_params(model_class: str, config_class: str, **kwargs) -> int:
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    return n_params(build_model(transformers, model_class, getattr(transformers, config_class)(**kwargs)))


@pytest.mark.reference
@pytest.mark.parametrize("case", sorted(CASES))
def test_base_model_count_matches_automodel(tmp_path, host, case):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    data = CASES[case]
    arch, config = read_hf_config(_write(tmp_path, data), host)
    ours = make_report(arch, config).params
    hf_config = transformers.AutoConfig.for_model(**data)
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(hf_config)
    assert ours == sum(p.numel() for p in model.parameters())


# ---- the cases of the issue: each was a silent wrong count or an over-cautious refusal ------------------

ISSUE_CASES = [
    # GPT-2 written with the standard names transformers maps through attribute_map
    pytest.param(
        {"model_type": "gpt2", "vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4},
        None,
        None,
        197_632,
        ("GPT2Model", "GPT2Config", dict(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)),
        id="gpt2-aliases",
    ),
    # ViTModel's pooler is Linear(768, pooler_output_size)
    pytest.param(
        {"model_type": "vit", "pooler_output_size": 100},
        None,
        None,
        85_875_556,
        ("ViTModel", "ViTConfig", dict(pooler_output_size=100)),
        id="vit-pooler-output-size",
    ),
    # an untied LM head has its own 50,257 x 768 weight
    pytest.param(
        {"model_type": "gpt2", "tie_word_embeddings": False},
        "GPT2LMHeadModel",
        None,
        163_037_184,
        ("GPT2LMHeadModel", "GPT2Config", dict(tie_word_embeddings=False)),
        id="gpt2-untied-lm-head",
    ),
    # BertForMaskedLM has no pooler, whether asked by --set head=mlm or by --hf-class
    pytest.param(
        {"model_type": "bert"},
        None,
        {"head": "mlm"},
        109_514_298,
        ("BertForMaskedLM", "BertConfig", {}),
        id="bert-set-head-mlm",
    ),
    pytest.param(
        {"model_type": "bert"},
        "BertForMaskedLM",
        None,
        109_514_298,
        ("BertForMaskedLM", "BertConfig", {}),
        id="bert-class-mlm",
    ),
    # ViTForImageClassification has no pooler either
    pytest.param(
        {"model_type": "vit"},
        None,
        {"num_classes": 1000},
        86_567_656,
        ("ViTForImageClassification", "ViTConfig", dict(num_labels=1000)),
        id="vit-set-num-classes",
    ),
    pytest.param(
        {"model_type": "vit", "id2label": {str(i): str(i) for i in range(1000)}},
        "ViTForImageClassification",
        None,
        86_567_656,
        ("ViTForImageClassification", "ViTConfig", dict(num_labels=1000)),
        id="vit-class-id2label",
    ),
    # transformers 5.23 builds absolute positions whatever position_embedding_type says
    pytest.param(
        {"model_type": "bert", "position_embedding_type": "relative_key"},
        None,
        None,
        109_482_240,
        ("BertModel", "BertConfig", {}),
        id="bert-relative-key",
    ),
    pytest.param(
        {"model_type": "bert", "num_labels": 3},
        "BertForSequenceClassification",
        None,
        109_484_547,
        ("BertForSequenceClassification", "BertConfig", dict(num_labels=3)),
        id="bert-sequence-3-labels",
    ),
    pytest.param(
        {"model_type": "deit", "id2label": {str(i): str(i) for i in range(1000)}},
        "auto",
        None,
        87_338_192,
        ("DeiTForImageClassificationWithTeacher", "DeiTConfig", dict(num_labels=1000)),
        id="deit-with-teacher",
    ),
]


@pytest.mark.parametrize("data, hf_class, overrides, expected, reference", ISSUE_CASES)
def test_issue_cases_count_what_transformers_builds(tmp_path, host, data, hf_class, overrides, expected, reference):
    if hf_class == "auto":
        data = {**data, "architectures": [reference[0]]}
    assert _params(_write(tmp_path, data), host, overrides, hf_class) == expected


@pytest.mark.reference
@pytest.mark.parametrize("data, hf_class, overrides, expected, reference", ISSUE_CASES)
def test_issue_figures_are_transformers_own(data, hf_class, overrides, expected, reference):
    model_class, config_class, kwargs = reference
    assert _transformers_params(model_class, config_class, **kwargs) == expected


def test_set_composes_like_the_complete_file(tmp_path, host):
    """--set after a file counts what the file with that change counts; class-derived keys follow the class."""
    base = _write(tmp_path, {"model_type": "roberta", "num_labels": 4})
    for overrides, equivalent_class in [
        ({"head": "sequence_classification"}, "RobertaForSequenceClassification"),
        ({"head": "mlm"}, "RobertaForMaskedLM"),
        ({"head": "none"}, "RobertaModel"),
    ]:
        assert _params(base, host, overrides) == _params(base, host, hf_class=equivalent_class)
    # a class's own choice does not stick when --set picks another head: back to RobertaModel, with its pooler
    assert _params(base, host, {"head": "none"}, "RobertaForSequenceClassification") == _params(base, host)
    gpt = _write(tmp_path, {"model_type": "gpt2", "n_embd": 96, "n_head": 4, "n_layer": 2}, "gpt.json")
    wider = _write(tmp_path, {"model_type": "gpt2", "n_embd": 128, "n_head": 4, "n_layer": 2}, "wider.json")
    assert _params(gpt, host, {"d_model": 128}) == _params(wider, host)  # n_inner null follows the width


# ---- refusals: each a hostile input, refused in one line that names the key ----------------------------

REFUSALS = [
    (
        "read-by-the-model-code",
        {"model_type": "llama", "sliding_window": 4096},
        None,
        "{path}: sliding_window: not a field of transformers 5.23's LlamaConfig, but kept as an attribute that its "
        "cache_utils reads, which archzoo does not model, so it refuses rather than guess; remove the key only if "
        "this model does not use it",
    ),
    (
        "read-by-the-model-code-with-newline",
        {"model_type": "mistral", "layer_types": ["full_attention"], "a\nb": 1},
        None,
        "{path}: layer_types: not a field of transformers 5.23's MistralConfig, but kept as an attribute that its "
        "cache_utils reads, which archzoo does not model, so it refuses rather than guess; remove the key only if "
        "this model does not use it",
    ),
    (
        "gpt2-cross-attention",
        {"model_type": "gpt2", "add_cross_attention": True},
        None,
        "{path}: add_cross_attention: true is not supported: cross-attention layers for an encoder-decoder are not "
        "modelled by the gpt plugin; archzoo counts false only",
    ),
    (
        "albert-groups",
        {"model_type": "albert", "num_hidden_groups": 2},
        None,
        "{path}: num_hidden_groups: 2 is not supported: more than one group of shared layers is not modelled by the "
        "bert plugin (its ALBERT shares one set of weights across all layers); archzoo counts 1 only",
    ),
    (
        "albert-inner-groups",
        {"model_type": "albert", "inner_group_num": 3},
        None,
        "{path}: inner_group_num: 3 is not supported: several distinct layers inside a shared group are not "
        "modelled by the bert plugin (its ALBERT shares one layer); archzoo counts 1 only",
    ),
    (
        "decoder-flag-as-integer",
        {"model_type": "roberta", "is_decoder": 0},
        None,
        "{path}: is_decoder, read as causal: expected true or false, got the number 0; write true or false without "
        "quotes",
    ),
    (
        "pruned-heads",
        {"model_type": "bert", "pruned_heads": {"0": [1]}},
        None,
        '{path}: pruned_heads: {"0": [1]} is not supported: a pruned checkpoint holds fewer attention weights than '
        "the class transformers 5.23 builds from this file (it no longer prunes heads); archzoo counts null or {} only",
    ),
    (
        "per-layer-config",
        {"model_type": "gpt2", "per_layer_config": {"0": {"n_inner": 10}}},
        None,
        '{path}: per_layer_config: {"0": {"n_inner": 10}} is not supported: per-layer overrides make the layers '
        "differ, which archzoo's layer stacks do not model (and transformers' classes of these types cannot build); "
        "archzoo counts null or {} only",
    ),
    (
        "custom-code-not-an-object",
        {"model_type": "bert", "auto_map": "AutoModel.MyBert"},
        None,
        '{path}: auto_map: expected an object mapping Auto classes to custom code, got "AutoModel.MyBert"; '
        "transformers 5.23's Auto classes fail on it",
    ),
    (
        "custom-code-of-an-unknown-type",
        {"model_type": "phi3small", "auto_map": {"AutoConfig": "configuration_phi3_small.Phi3SmallConfig"}},
        None,
        "{path}: model_type: 'phi3small' is not supported (supported: {supported}); its auto_map names custom "
        "model code (trust_remote_code), which archzoo does not run; a plugin can add it with the "
        "register_hf_readers hook",
    ),
    (
        "rope-scaling-of-a-type-transformers-does-not-build",
        {"model_type": "llama", "rope_scaling": {"type": "su", "short_factor": [1.0], "long_factor": [1.0]}},
        None,
        '{path}: rope_scaling, converted into rope_parameters as transformers does: rope_type "su" is not one '
        "transformers' LlamaConfig accepts; expected one of default, linear, dynamic, yarn, longrope, llama3, "
        "proportional",
    ),
    (
        "rope-scaling-as-text",
        {"model_type": "qwen2", "rope_scaling": "linear"},
        None,
        '{path}: rope_scaling: expected an object such as {"rope_type": "linear", "factor": 2.0} or null, got '
        '"linear"; transformers cannot load it either (it converts the key into rope_parameters)',
    ),
    (
        "quantized",
        {"model_type": "gpt2", "quantization_config": {"bits": 4}},
        None,
        '{path}: quantization_config: {"bits": 4} is not supported: quantized weights are packed into other '
        "tensors; archzoo counts the unquantized model; remove the key to count it",
    ),
    (
        "vit-head-dim",
        {"model_type": "vit", "head_dim": 64},
        None,
        "{path}: head_dim: 64 is not supported: ViT's attention reads an explicit head_dim, but the vit plugin's heads "
        "are hidden_size / num_attention_heads wide; remove the key if it says the same",
    ),
    (
        "bert-no-segments",
        {"model_type": "bert", "type_vocab_size": 0},
        None,
        "{path}: type_vocab_size: 0 builds an empty segment table that the forward pass cannot index (transformers "
        "looks up segment 0); give at least 1",
    ),
    (
        "vit-not-square",
        {"model_type": "vit", "image_size": [224, 160]},
        None,
        "{path}: image_size: [224, 160] is not square; the vit plugin counts square images and patches, so give one "
        "side, e.g. image_size: 224",
    ),
    (
        "openai-gpt-activation",
        {"model_type": "openai-gpt", "afn": "gelu_new"},
        None,
        "{path}: afn: transformers' OpenAI GPT builds only relu, silu, gelu or swish, got 'gelu_new'; choose one of them",
    ),
    (
        "id2label-list",
        {"model_type": "bert", "id2label": ["a", "b"]},
        None,
        '{path}: id2label: expected an object mapping label ids to names, got ["a", "b"]',
    ),
    (
        "qa-three-labels",
        {"model_type": "bert", "num_labels": 3},
        "BertForQuestionAnswering",
        "{path}: num_labels, read as num_labels: head 'question_answering' gives an answer's start and end logits, so "
        "it needs 2 labels, got 3",
    ),
    (
        "zero-labels",  # transformers builds a 0-label classifier; its question answering needs 2 outputs
        {"model_type": "bert", "id2label": {}},
        "BertForQuestionAnswering",
        "{path}: id2label, read as num_labels: head 'question_answering' gives an answer's start and end logits, so "
        "it needs 2 labels, got 0",
    ),
    (
        "width-as-text",
        {"model_type": "bert", "hidden_size": "768"},
        None,
        "{path}: hidden_size, read as d_model: expected an integer, got the string '768'; write the number without quotes",
    ),
    (
        "heads-not-dividing",
        {"model_type": "gpt2", "n_embd": 96, "n_head": 5},
        None,
        "{path}: n_head, read as n_heads: d_model 96 is not divisible by n_heads 5; choose a divisor of d_model, or "
        "give d_head explicitly (GPT-3 XL: n_heads 24, d_head 128)",
    ),
    (
        "alias-heads-not-dividing",
        {"model_type": "distilbert", "hidden_size": 100, "num_attention_heads": 3},
        None,
        "{path}: num_attention_heads, read as n_heads: d_model 100 is not divisible by n_heads 3; choose a divisor of "
        "d_model",
    ),
    (
        "unknown-activation",
        {"model_type": "bert", "hidden_act": "swooshy"},
        None,
        "{path}: hidden_act, read as activation: unknown activation 'swooshy'; expected one of gelu, gelu_new, "
        "gelu_pytorch_tanh, relu, silu, swish, tanh, quick_gelu",
    ),
    (
        "zero-layers",
        {"model_type": "bert", "num_hidden_layers": 0},
        None,
        "{path}: num_hidden_layers, read as n_layers: must be greater than 0, got 0",
    ),
    (
        "layers-as-boolean",
        {"model_type": "gpt2", "n_layer": True},
        None,
        "{path}: n_layer, read as n_layers: expected an integer, got the boolean true",
    ),
    (
        "huge-width",
        {"model_type": "bert", "hidden_size": 2**40},
        None,
        "{path}: hidden_size, read as d_model: 1,099,511,627,776 is larger than archzoo's limit for a size, "
        "2,147,483,647 (2^31 - 1); no model comes near it, so correct the value",
    ),
    (
        "model-type-unknown",
        {"model_type": "no-such-type"},
        None,
        "{path}: model_type: 'no-such-type' is not supported (supported: {supported}); a plugin can add it with the "
        "register_hf_readers hook",
    ),
    (
        "model-type-missing",
        {"hidden_size": 8},
        None,
        "{path}: model_type: missing; a Hugging Face config.json names its model type (supported: {supported})",
    ),
    ("model-type-number", {"model_type": 7}, None, '{path}: model_type: expected text such as "bert", got 7'),
    ("not-an-object", [1, 2], None, "{path}: expected a JSON object with a 'model_type' key, got list"),
    (
        "class-multiple-choice",
        {"model_type": "bert"},
        "BertForMultipleChoice",
        "--hf-class: BertForMultipleChoice is not counted by archzoo: its input holds one sequence per answer choice, "
        "so its FLOPs depend on a number of choices that config.json does not give; supported bert classes: BertModel, "
        "BertForPreTraining, BertForMaskedLM, BertForNextSentencePrediction, BertForSequenceClassification, "
        "BertForTokenClassification, BertForQuestionAnswering, BertLMHeadModel",
    ),
    (
        "class-misspelt",
        {"model_type": "gpt2"},
        "GPT2LMHeadModell",
        "--hf-class: 'GPT2LMHeadModell' is not a gpt2 model class archzoo counts; did you mean 'GPT2LMHeadModel'? "
        "supported: GPT2Model, GPT2LMHeadModel, GPT2ForSequenceClassification, GPT2ForTokenClassification, "
        "GPT2ForQuestionAnswering",
    ),
    (
        "class-auto-without-architectures",
        {"model_type": "vit"},
        "auto",
        "{path}: architectures: --hf-class auto counts the first class of this list, but the file has none; name the "
        "class instead, for example --hf-class ViTModel",
    ),
    (
        "class-auto-architectures-text",
        {"model_type": "bert", "architectures": "BertModel"},
        "auto",
        '{path}: architectures: expected a list of class names, got "BertModel"',
    ),
    (
        "class-auto-other-type",
        {"model_type": "deit", "architectures": ["Wav2Vec2ForCTC"]},
        "auto",
        "{path}: architectures[0]: 'Wav2Vec2ForCTC' is not a deit model class archzoo counts; supported: "
        "{deit classes}",
    ),
]


@pytest.mark.hostile
@pytest.mark.parametrize("data, hf_class, message", [pytest.param(d, c, m, id=i) for i, d, c, m in REFUSALS])
def test_refused_in_one_line_naming_the_key(tmp_path, host, data, hf_class, message):
    path = _write(tmp_path, data)
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host, hf_class=hf_class)
    # the types every installed plugin reads, from the host, so that a new plugin changes no expectation here
    supported = ", ".join(sorted(host.hf_readers()))
    assert {"albert", "bert", "deit", "distilbert", "gpt2", "openai-gpt", "roberta", "vit"} <= set(host.hf_readers())
    # the classes the deit plugin counts, from its table, so that a class it adds changes no expectation here
    deit = ", ".join(hf_table(host.hf_readers()["deit"].reader).classes)
    expected = message.replace("{path}", str(path)).replace("{supported}", supported)
    assert str(caught.value) == expected.replace("{deit classes}", deit)


@pytest.mark.hostile
def test_set_problem_names_the_set_key(tmp_path, host):
    path = _write(tmp_path, {"model_type": "bert", "hidden_size": 96, "num_attention_heads": 4})
    with pytest.raises(
        HFConfigError,
        match=r"^--set n_heads: d_model 96 is not divisible by n_heads 5; choose a "
        r"divisor of d_model$",
    ):
        load_hf_config(path, host, {"n_heads": 5})


@pytest.mark.hostile
@pytest.mark.parametrize(
    "content, message",
    [
        pytest.param("{not json", r"^{path}:1: not valid JSON", id="not-json"),
        pytest.param(
            '{"model_type": "bert", "hidden_size": 64, "hidden_size": 128}',
            r"^{path}:1: hidden_size: ",
            id="duplicate-key",
        ),
    ],
)
def test_unreadable_files(tmp_path, host, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(HFConfigError, match=message.format(path=re.escape(str(path)))):
        load_hf_config(path, host)


@pytest.mark.hostile
def test_missing_file(tmp_path, host):
    with pytest.raises(HFConfigError, match=rf"^{re.escape(str(tmp_path / 'nope.json'))}: cannot read the file"):
        read_hf_config(tmp_path / "nope.json", host)


# ---- what every key became: --explain and --json ---------------------------------------------------------


def _run(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BERT_FILE = {
    "model_type": "bert",
    "architectures": ["BertForSequenceClassification"],
    "hidden_size": 96,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "hidden_dropout_prob": 0.1,
    "id2label": {"0": "neg", "1": "neutral", "2": "pos"},
    "gradient_checkpointing": False,
    "position_embedding_type": "absolute",
}


def test_json_lists_every_key_with_its_disposition(tmp_path, capsys):
    path = _write(tmp_path, BERT_FILE)
    code, out, err = _run(
        capsys, "count", "--hf-config", str(path), "--hf-class", "auto", "--json", "--set", "n_layers=3"
    )
    assert code == 0, err
    section = json.loads(out)["hf_config"]
    assert section["model_class"] == "BertForSequenceClassification" and section["class_source"] == "architectures"
    assert section["class_sets"] == {"head": "sequence_classification"}
    assert section["overrides"] == {"n_layers": 3}
    keys = {k["key"]: k for k in section["keys"]}
    assert set(BERT_FILE) <= set(keys)  # every key of the file is accounted for
    assert keys["hidden_size"] | {"detail": ""} == {
        "key": "hidden_size",
        "value": 96,
        "disposition": "read",
        "archzoo_key": "d_model",
        "detail": "",
    }
    assert keys["id2label"]["disposition"] == "read" and keys["id2label"]["archzoo_key"] == "num_labels"
    assert keys["hidden_dropout_prob"]["disposition"] == "ignored"
    assert keys["hidden_dropout_prob"]["detail"] == "dropout: no parameters, and FlopCounterMode counts no FLOPs for it"
    assert keys["intermediate_size"] == {
        "key": "intermediate_size",
        "value": 3072,
        "disposition": "defaulted",
        "archzoo_key": "d_ff",
        "detail": "BertConfig's default",
    }
    assert json.loads(out)["config"]["num_labels"] == 3 and json.loads(out)["config"]["n_layers"] == 3


def test_explain_prints_the_class_and_every_key(tmp_path, capsys):
    path = _write(tmp_path, BERT_FILE)
    code, out, err = _run(capsys, "count", "--hf-config", str(path), "--explain", "--depth", "0")
    assert code == 0, err
    assert (
        f"{path}: model type bert (BertConfig), counted as BertModel (the base model AutoModel builds; it sets "
        'head="none")'
    ) in out
    table = out[out.index("\nkey ") :].splitlines()[1:]  # the --explain table, piped: one key a line
    rows = {line.split()[0]: line for line in table if line.strip()}
    assert set(BERT_FILE) <= set(rows)
    assert "read as d_model" in rows["hidden_size"] and "defaulted as d_ff" in rows["intermediate_size"]
    assert "  ignored  " in rows["position_embedding_type"] and "  ignored  " in rows["gradient_checkpointing"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["count", "bert", "--hf-class", "BertModel"], "--hf-class goes with --hf-config"),
        (["count", "bert", "--explain"], "--explain goes with --hf-config"),
    ],
)
def test_hf_options_need_a_config_file(capsys, args, message):
    code, _, err = _run(capsys, *args)
    assert code == 2 and message in err


def test_cli_refusal_is_one_line(tmp_path, capsys):
    path = _write(tmp_path, {"model_type": "llama", "sliding_window": 64})
    code, out, err = _run(capsys, "count", "--hf-config", str(path))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"archzoo: error: {path}: sliding_window: not a field of transformers 5.23's LlamaConfig")


# ---- the tables' own invariants, and a reader without a table ------------------------------------------


def test_every_builtin_type_declares_a_table(host):
    builtin = {name for name, info in host.plugins.items() if info.builtin}
    readers = {t: r for t, r in host.hf_readers().items() if r.plugin in builtin}
    assert readers
    for model_type, found in readers.items():
        table = hf_table(found.reader)
        assert table is not None and table.model_type == model_type
        assert host.hf_model_types()[model_type].name == found.architecture


def test_a_table_with_a_field_left_unaccounted_is_rejected():
    with pytest.raises(ValueError, match=r"^HF table 'x': fields without a disposition: \['width'\]$"):
        HFTable(
            model_type="x",
            config_class="XConfig",
            defaults={"width": 8},
            aliases={},
            read={},
            ignored={},
            refused={},
            base_class="XModel",
            classes={"XModel": {}},
        )


def _nesting_host() -> PluginHost:
    """A third-party plugin whose model type ``nest`` holds two sub-configurations, as CLIP's does: ``inner`` (its
    ``size`` and ``width``, and a legacy override ``inner_dict``) and ``other``; both have a field ``tag``, and the
    outer configuration's own ``width`` sets the archzoo key inner's ``width`` would. Its reader refuses some values,
    naming the key bare or as ``inner.size``."""
    from pydantic import PositiveInt

    from archzoo import ArchConfig
    from archzoo.blocks import composite, linear
    from archzoo.hf_config import hf_reader
    from archzoo.symbols import symbol

    class NestConfig(ArchConfig):
        d_model: PositiveInt = 8
        size: PositiveInt = 4
        tag: int = 0

    def table(model_type: str, defaults: dict, read: dict, **nested) -> HFTable:
        ignored = {k: "changes no count" for k in defaults if k not in read and k not in nested.get("nested", {})}
        name = model_type.title()
        return HFTable(
            model_type, f"{name}Config", defaults, {}, read, ignored, {}, f"{name}Model", {f"{name}Model": {}}, **nested
        )

    inner = table("nest_inner", {"size": 4, "width": 8, "tag": 0}, {"size": "size", "width": "d_model", "tag": "tag"})
    other = table("nest_other", {"tag": 0}, {"tag": "tag"})
    outer = table(
        "nest",
        {"inner": None, "other": None, "width": 8},
        {"width": "d_model"},
        nested={"inner": inner, "other": other},
        nested_overrides={"inner_dict": "inner"},
    )

    @hf_reader(outer)
    def read(hf, model_class):
        size, tag = hf["inner"]["size"], hf["inner"]["tag"]
        if size == 7:
            raise ValueError("inner.size: 7 is refused")
        if size > 100:
            raise ValueError(f"size: {size} is refused")  # the field name alone: only inner's class has it
        if tag:
            raise ValueError(f"tag: {tag} is refused")  # inner's or other's: the kit cannot tell
        return {"d_model": hf["width"], "size": size}

    module = types.ModuleType("archzoo_nest")

    @hookimpl
    def register_architectures(register):
        register(
            Architecture(
                name="nest",
                title="Nest",
                summary="s",
                citation="c",
                config_model=NestConfig,
                build=lambda cfg: composite(
                    "nest", "model", [linear("w", symbol("d", cfg.d_model), symbol("s", cfg.size))]
                ),
                seq_len=lambda cfg: 1,
            )
        )

    @hookimpl
    def register_hf_readers(register):
        register("nest", read)

    module.register_architectures = register_architectures
    module.register_hf_readers = register_hf_readers
    return PluginHost(extra_plugins={"nest": module}, entry_points=False, strict=True).load()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"inner": {"size": 101}}, "inner.size: 101 is refused"),
        ({"inner": {"size": 7}}, "inner.size: 7 is refused"),
        ({"inner": {"size": 1}, "inner_dict": {"size": 7}}, "inner_dict.size: 7 is refused"),
        ({"inner": {"size": 1}, "inner_dict": {"size": 101}}, "inner_dict.size: 101 is refused"),
        ({"inner": {"tag": 1}}, "tag: 1 is refused"),
    ],
)
def test_a_readers_refusal_names_a_nested_key_as_the_file_gives_it(tmp_path, data, message):
    """A reader names a sub-configuration's key qualified, or by its field name where only one sub-configuration's
    class has the field: the message names it where the file wrote it, under the nested key or the legacy override
    that replaced it; a name two sub-configurations share is left as the reader gave it."""
    path = _write(tmp_path, {"model_type": "nest", **data})
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, _nesting_host())
    assert str(caught.value) == f"{path}: {message}"


def test_a_nested_key_the_class_itself_sets_is_told_as_not_read(tmp_path):
    """inner.width and the outer width name the same archzoo key: the class's own key sets it, and inner's is
    reported as not read (given or defaulted), naming the class built from inner alone."""
    host = _nesting_host()
    path = _write(tmp_path, {"model_type": "nest", "width": 16, "inner": {"width": 32, "size": 2}})
    reading = load_hf_config(path, host)
    assert (reading.config.d_model, reading.config.size) == (16, 2)
    keys = {k.key: k for k in reading.keys}
    assert (keys["width"].disposition, keys["width"].archzoo_key) == ("read", "d_model")
    assert (keys["inner.size"].disposition, keys["inner.size"].archzoo_key) == ("read", "size")
    assert (keys["inner.width"].disposition, keys["inner.width"].archzoo_key) == ("ignored", "")
    assert keys["inner.width"].detail == (
        "not read: NestConfig's classes take d_model from its own width, never from inner; no class archzoo counts is "
        "built from inner alone"
    )
    reading = load_hf_config(_write(tmp_path, {"model_type": "nest"}), host)
    keys = {k.key: k for k in reading.keys}
    assert (keys["width"].disposition, keys["width"].archzoo_key) == ("defaulted", "d_model")
    assert (keys["inner.width"].disposition, keys["inner.width"].archzoo_key) == ("defaulted", "")
    # a bad width is located at the class's own key, never at the sub-configuration's copy
    with pytest.raises(HFConfigError, match=r": width, read as d_model: "):
        load_hf_config(_write(tmp_path, {"model_type": "nest", "width": 0, "inner": {"width": 32}}), host)


def test_a_plugin_reader_without_a_table_still_counts_the_base_model(tmp_path):
    from pydantic import PositiveInt

    from archzoo import ArchConfig
    from archzoo.blocks import composite, linear
    from archzoo.symbols import symbol

    class TinyConfig(ArchConfig):
        d_model: PositiveInt = 4

    module = types.ModuleType("archzoo_tiny")

    @hookimpl
    def register_architectures(register):
        register(
            Architecture(
                name="tiny",
                title="Tiny",
                summary="s",
                citation="c",
                config_model=TinyConfig,
                build=lambda cfg: composite(
                    "tiny", "model", [linear("w", symbol("d", cfg.d_model), symbol("d", cfg.d_model))]
                ),
                seq_len=lambda cfg: 1,
            )
        )

    @hookimpl
    def register_hf_readers(register):
        register("tiny", lambda hf: {"d_model": hf["width"]})

    module.register_architectures = register_architectures
    module.register_hf_readers = register_hf_readers
    tiny_host = PluginHost(extra_plugins={"tiny": module}, entry_points=False, strict=True).load()
    path = _write(tmp_path, {"model_type": "tiny", "width": 3})
    reading = load_hf_config(path, tiny_host)
    assert reading.config.d_model == 3 and reading.keys[1].disposition == "read"
    with pytest.raises(
        HFConfigError,
        match=r"^--hf-class: the reader of model type 'tiny' \(plugin 'tiny'\) "
        r"declares no model classes; count the base model \(leave out --hf-class\)$",
    ):
        load_hf_config(path, tiny_host, hf_class="auto")


def test_a_reader_declared_the_deprecated_way_still_reads(tmp_path):
    """Architecture.hf_model_types, set by the plugin rather than filled in by the host, still registers a reader."""
    gpt = PluginHost(only=["gpt"]).load().architecture("gpt")
    old = gpt.model_copy(
        update={
            "name": "old-gpt",
            "plugin": "",
            "hf_model_types": {"old-gpt2": lambda hf: {"d_model": hf["width"], "n_heads": 1, "n_layers": 1}},
        }
    )
    module = types.ModuleType("archzoo_old")
    module.register_architectures = hookimpl(lambda register: register(old))
    with pytest.warns(
        DeprecationWarning,
        match=r"^plugin 'old': Architecture.hf_model_types is deprecated; register "
        r"Hugging Face readers with the register_hf_readers hook$",
    ):
        old_host = PluginHost(extra_plugins={"old": module}, entry_points=False, strict=True).load()
    reading = load_hf_config(_write(tmp_path, {"model_type": "old-gpt2", "width": 24}), old_host)
    assert reading.architecture.name == "old-gpt" and reading.config.d_model == 24


def test_lookup_imports_no_torch(tmp_path):
    path = _write(tmp_path, {"model_type": "gpt2", "n_layer": 2})
    code = (
        "import sys\n"
        "from archzoo.hf_config import load_hf_config\n"
        "from archzoo.host import get_host\n"
        f"load_hf_config({str(path)!r}, get_host(), hf_class='GPT2LMHeadModel').to_dict()\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ---- the methodology page ------------------------------------------------------------------------------


def test_methodology_section_is_generated_from_the_tables(host):
    page = (REPO / "src/archzoo/site/docs/methodology.md").read_text(encoding="utf-8")
    assert "## Hugging Face config.json" in page
    start, end = page.index(DOC_START), page.index(DOC_END) + len(DOC_END)
    assert page[start:end] == methodology_section(host), (
        "src/archzoo/site/docs/methodology.md's Hugging Face section is stale: run `python -m archzoo.hf_config src/archzoo/site/docs/methodology.md`"
    )
    for model_type in host.hf_model_types():
        assert f"### `{model_type}`" in page


# ---- keys transformers converts while loading, and plain attributes it never reads ------------------------

_DECODER = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=80,
    max_position_embeddings=64,
    pad_token_id=None,
)
# Meta-Llama-3.1-8B's published rope_scaling (its config.json, with rope_theta 500000.0)
_LLAMA3 = {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 32,
    "rope_type": "llama3",
}
_PHI3_FACTORS = {"short_factor": [1.0] * 6, "long_factor": [1.5] * 6}  # 48 / 4 = 12 rotary dims: 6 factors

# (model type, the legacy keys, the same model written the 5.x way)
CONVERSIONS = [
    pytest.param(
        "llama",
        {"rope_theta": 500000.0, "rope_scaling": _LLAMA3},
        {"rope_parameters": {**_LLAMA3, "rope_theta": 500000.0}},
        id="llama-llama3-scaling",
    ),
    pytest.param(
        "llama",
        {"rope_scaling": {"type": "linear", "factor": 2.0}},
        {"rope_parameters": {"rope_type": "linear", "factor": 2.0}},
        id="llama-old-type-key",
    ),
    pytest.param(
        "llama",
        {"partial_rotary_factor": 0.5, "rope_theta": 5000.0},
        {"rope_parameters": {"rope_type": "default", "rope_theta": 5000.0, "partial_rotary_factor": 0.5}},
        id="llama-partial-rotary-factor",
    ),
    pytest.param(
        "qwen2",
        {"rope_theta": 1000000.0, "rope_scaling": None},
        {"rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}},
        id="qwen2-null-scaling",
    ),
    pytest.param(
        "phi3",
        {"rope_theta": 10000.0, "rope_scaling": {"type": "longrope", **_PHI3_FACTORS}},
        {"rope_parameters": {"rope_type": "longrope", **_PHI3_FACTORS}},
        id="phi3-longrope",
    ),
    pytest.param(
        "phi3",
        {"rope_scaling": {"type": "yarn", **_PHI3_FACTORS}, "original_max_position_embeddings": 32},
        {"rope_parameters": {"rope_type": "longrope", **_PHI3_FACTORS}, "original_max_position_embeddings": 32},
        id="phi3-yarn-is-longrope",
    ),
    *[
        pytest.param(t, {"rope_theta": 1000000.0}, {"rope_parameters": {"rope_theta": 1000000.0}}, id=f"{t}-theta")
        for t in ("mistral", "gemma", "olmo")
    ],
    pytest.param(
        "mixtral",
        {"rope_theta": 1000000.0, "num_local_experts": 4, "intermediate_size": 40},
        {"rope_parameters": {"rope_theta": 1000000.0}, "num_local_experts": 4, "intermediate_size": 40},
        id="mixtral-theta",
    ),
]


def _rope(reading):
    return next(k.value for k in reading.keys if k.key == "rope_parameters")


@pytest.mark.parametrize("model_type, legacy, modern", CONVERSIONS)
def test_a_legacy_file_counts_as_its_5x_form(tmp_path, host, model_type, legacy, modern):
    base = {"model_type": model_type, **_DECODER}
    old = load_hf_config(_write(tmp_path, {**base, **legacy}, "legacy.json"), host, hf_class=None)
    new = load_hf_config(_write(tmp_path, {**base, **modern}, "modern.json"), host, hf_class=None)
    reports = [make_report(r.architecture, r.config, 16) for r in (old, new)]
    assert reports[0].to_dict() == reports[1].to_dict()
    for key in ("rope_theta", "rope_scaling", "partial_rotary_factor"):
        if legacy.get(key) is not None:
            seen = next(k for k in old.keys if k.key == key)
            assert seen.disposition == "converted" and seen.detail.startswith("converted into rope_parameters")
            assert "(as transformers does)" in seen.detail


@pytest.mark.reference
@pytest.mark.parametrize("model_type, legacy, modern", CONVERSIONS)
def test_converted_rope_parameters_are_transformers_own(tmp_path, host, model_type, legacy, modern):
    """The rope_parameters archzoo checks equal what transformers holds once it has loaded each file."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    for name, keys in (("legacy.json", legacy), ("modern.json", modern)):
        path = _write(tmp_path, {"model_type": model_type, **_DECODER, **keys}, name)
        assert _rope(load_hf_config(path, host)) == transformers.AutoConfig.from_pretrained(str(path)).rope_parameters


@pytest.mark.reference
@pytest.mark.parametrize("model_type, legacy, modern", CONVERSIONS)
def test_a_legacy_file_counts_what_transformers_builds_from_it(tmp_path, host, model_type, legacy, modern):
    """Parameters and FlopCounterMode FLOPs of the causal LM transformers builds from the legacy file."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    path = _write(tmp_path, {"model_type": model_type, **_DECODER, **legacy})
    causal = hf_table(host.hf_readers()[model_type].reader).base_class.replace("Model", "ForCausalLM")
    reading = load_hf_config(path, host, hf_class=causal)
    report = make_report(reading.architecture, reading.config, 16)
    moe = model_type == "mixtral"  # routing reads the router's scores: small weights on the CPU
    model = build_model(
        transformers, causal, transformers.AutoConfig.from_pretrained(str(path)), "cpu" if moe else "meta"
    )
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 16, random_ids=moe))


@pytest.mark.reference
@pytest.mark.parametrize(
    "extra, kept",
    [
        # rope_scaling takes the place of rope_parameters when both are given
        ({"rope_scaling": {"rope_type": "linear", "factor": 3.0}, "rope_parameters": {"rope_type": "dynamic"}}, None),
        # rope_theta only fills a rope_theta that rope_parameters lacks
        ({"rope_theta": 1.0, "rope_parameters": {"rope_type": "default", "rope_theta": 7.0}}, "rope_theta"),
        ({"rope_scaling": {}, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}, "rope_scaling"),
    ],
)
def test_conversion_order_is_transformers(tmp_path, host, extra, kept):
    transformers = pytest.importorskip("transformers")
    path = _write(tmp_path, {"model_type": "llama", **_DECODER, **extra})
    reading = load_hf_config(path, host)
    assert _rope(reading) == transformers.AutoConfig.from_pretrained(str(path)).rope_parameters
    if kept:
        assert next(k for k in reading.keys if k.key == kept).disposition == "ignored"


@pytest.mark.reference
def test_a_rotary_setting_transformers_cannot_load_is_refused_by_both(tmp_path, host):
    """Phi-3's old rope type su is renamed longrope after the pre-training length would have been filled in,
    so transformers 5.23 cannot load such a file: refused, naming the key, by both."""
    transformers = pytest.importorskip("transformers")
    data = {"model_type": "phi3", **_DECODER, "rope_scaling": {"type": "su", **_PHI3_FACTORS}}
    path = _write(tmp_path, data)
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value).startswith(
        f"{path}: rope_scaling: the rope type longrope needs original_max_position_embeddings, and transformers "
        "5.23's Phi3Config refuses to load the file without it"
    )
    with pytest.raises(KeyError, match="original_max_position_embeddings"):
        transformers.AutoConfig.from_pretrained(str(path))


@pytest.mark.reference
@pytest.mark.parametrize("model_type", ["qwen2", "qwen2_moe"])
def test_rotary_settings_per_layer_type_are_refused_as_transformers_cannot_build_them(tmp_path, host, model_type):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    rope = {"full_attention": {"rope_type": "default", "rope_theta": 1e6}}
    path = _write(tmp_path, {"model_type": model_type, **_DECODER, "rope_parameters": rope})
    with pytest.raises(HFConfigError, match=r"rope_parameters: rotary settings per layer type \(full_attention\)"):
        load_hf_config(path, host)
    config = transformers.AutoConfig.from_pretrained(str(path))
    with pytest.raises(KeyError, match="rope_type"), torch.device("meta"):
        transformers.AutoModel.from_config(config)


@pytest.mark.reference
@pytest.mark.parametrize(
    "rope, message",
    [
        (
            {"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 5, "long_factor": [1.0] * 6}},
            "rope_scaling: short_factor: 5 values, but transformers 5.23's Phi3Config requires 6",
        ),
        (
            {"rope_parameters": {"rope_type": "longrope", "short_factor": [1.0] * 6, "long_factor": "x"}},
            'rope_parameters: long_factor: expected a list of numbers, got "x"',
        ),
    ],
)
def test_longrope_factors_phi3_refuses_are_refused(tmp_path, host, rope, message):
    transformers = pytest.importorskip("transformers")
    path = _write(tmp_path, {"model_type": "phi3", **_DECODER, **rope})
    with pytest.raises(HFConfigError, match=re.escape(f"{path}: {message}")):
        load_hf_config(path, host)
    with pytest.raises(Exception, match="factor field must"):  # a strict-dataclass validation error
        transformers.AutoConfig.from_pretrained(str(path))


@pytest.mark.reference
def test_a_rotary_type_transformers_cannot_build_is_refused_by_both(tmp_path, host):
    """rope_scaling {"type": "su"} is Phi-3's; a Llama file with it loads in transformers but cannot be built."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = _write(tmp_path, {"model_type": "llama", **_DECODER, "rope_scaling": {"type": "su", **_PHI3_FACTORS}})
    with pytest.raises(HFConfigError, match=r"rope_scaling, converted into rope_parameters as transformers does"):
        load_hf_config(path, host)
    config = transformers.AutoConfig.from_pretrained(str(path))
    with pytest.raises(KeyError, match="su"), torch.device("meta"):
        transformers.LlamaModel(config)


PHI3_WITH_CUSTOM_CODE = {
    "model_type": "phi3",
    **_DECODER,
    # as Phi-3's published files name their own code
    "auto_map": {
        "AutoConfig": "configuration_phi3.Phi3Config",
        "AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM",
    },
}


def test_auto_map_of_a_native_type_counts_transformers_class(tmp_path, host, capsys):
    path = _write(tmp_path, PHI3_WITH_CUSTOM_CODE)
    plain = _write(tmp_path, {k: v for k, v in PHI3_WITH_CUSTOM_CODE.items() if k != "auto_map"}, "plain.json")
    assert _params(path, host, hf_class="Phi3ForCausalLM") == _params(plain, host, hf_class="Phi3ForCausalLM")
    code, out, err = _run(capsys, "count", "--hf-config", str(path), "--json")
    assert code == 0, err
    (seen,) = [k for k in json.loads(out)["hf_config"]["keys"] if k["key"] == "auto_map"]
    assert seen["disposition"] == "ignored"
    assert seen["detail"] == (
        "names custom code, which transformers 5.23 runs only with trust_remote_code; model type phi3 is one it "
        "builds natively, so without that flag it builds its own Phi3Config and classes, and archzoo counts those"
    )


@pytest.mark.reference
def test_transformers_builds_its_own_class_despite_auto_map(tmp_path):
    """Without trust_remote_code, transformers loads a native type's file with auto_map as its own classes."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = _write(tmp_path, PHI3_WITH_CUSTOM_CODE)
    config = transformers.AutoConfig.from_pretrained(str(path))
    assert type(config) is transformers.Phi3Config
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert type(model) is transformers.Phi3ForCausalLM


def test_a_key_transformers_never_reads_is_ignored_and_said_so(tmp_path, host, capsys):
    """A misspelt field is a plain attribute transformers never reads: counted as transformers builds the
    file (the default width), and --explain says which field it is not."""
    path = _write(tmp_path, {"model_type": "bert", "hidden_sise": 64, "language": "english"})
    assert _params(path, host) == _params(_write(tmp_path, {"model_type": "bert"}, "plain.json"), host)
    code, out, err = _run(capsys, "count", "--hf-config", str(path), "--explain", "--depth", "0")
    assert code == 0, err
    table = out[out.index("\nkey ") :].splitlines()[1:]
    rows = {line.split()[0]: " ".join(line.split()) for line in table if line.strip()}
    assert "ignored stored as a plain attribute, never read by transformers 5.23's modeling_bert" in rows["language"]
    reading = load_hf_config(path, host)
    (typo,) = [k for k in reading.keys if k.key == "hidden_sise"]
    assert typo.detail == (
        "stored as a plain attribute, never read by transformers 5.23's modeling_bert (nor the modules it imports "
        "from, nor BertConfig); not hidden_size, which transformers reads under that name only"
    )


def test_a_type_whose_code_was_never_derived_still_refuses_unknown_keys(tmp_path, host, monkeypatch):
    """Without derived reads (a third-party plugin's type), archzoo cannot tell, and refuses as before."""
    from archzoo import hf_keys_read

    monkeypatch.setattr(hf_keys_read, "MODEL_SCOPE", {k: v for k, v in hf_keys_read.MODEL_SCOPE.items() if k != "gpt2"})
    path = _write(tmp_path, {"model_type": "gpt2", "foo": 1, "bar": 2})
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value) == (
        f"{path}: foo: unknown key for model type 'gpt2'; transformers 5.23's GPT2Config has no such field and "
        "archzoo cannot tell whether it changes the model, so it refuses rather than guess; remove the key if it "
        "does not (also unknown: bar)"
    )


def test_json_says_which_keys_were_converted(tmp_path, capsys):
    path = _write(tmp_path, {"model_type": "llama", **_DECODER, "rope_theta": 500000.0, "rope_scaling": _LLAMA3})
    code, out, err = _run(capsys, "count", "--hf-config", str(path), "--json")
    assert code == 0, err
    keys = {k["key"]: k for k in json.loads(out)["hf_config"]["keys"]}
    assert keys["rope_scaling"]["disposition"] == "converted"
    assert keys["rope_scaling"]["detail"] == "converted into rope_parameters (as transformers does)"
    assert keys["rope_theta"]["detail"] == "converted into rope_parameters.rope_theta (as transformers does)"
    assert keys["rope_parameters"]["value"] == {**_LLAMA3, "rope_theta": 500000.0}


@pytest.mark.reference
@pytest.mark.parametrize(
    "extra", [{}, {"rope_scaling": {"type": "linear", "factor": 2.0}}], ids=["own-names", "scaling"]
)
def test_gpt_neox_fills_rope_parameters_from_its_own_names(tmp_path, extra):
    """GPTNeoXConfig converts rotary_emb_base and rotary_pct, its legacy names, where other classes take
    rope_theta and partial_rotary_factor: the rope_parameters archzoo checks are transformers' own."""
    neox = pytest.importorskip("archzoo_neox")
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    host = PluginHost().load()
    if "gpt_neox" not in host.hf_readers():  # the neox plugin is not installed as an entry point here
        host = PluginHost(extra_plugins={"neox": neox}).load()
    data = {
        "model_type": "gpt_neox",
        "hidden_size": 64,
        "intermediate_size": 256,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "vocab_size": 97,
        "max_position_embeddings": 64,
        "rotary_emb_base": 5000,  # the keys as Pythia's files carry them
        "rotary_pct": 0.5,
        "use_parallel_residual": True,
        **extra,
    }
    path = _write(tmp_path, data)
    reading = load_hf_config(path, host, hf_class="GPTNeoXForCausalLM")
    config = transformers.AutoConfig.from_pretrained(str(path))
    assert _rope(reading) == config.rope_parameters
    model = build_model(transformers, "GPTNeoXForCausalLM", config)
    assert make_report(reading.architecture, reading.config).params == n_params(model)
