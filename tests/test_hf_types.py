"""A config.json value of a type transformers' configuration class refuses is refused, read or ignored (issue 22).

transformers 5.23's configuration classes are strict dataclasses: ``AutoConfig.from_pretrained`` raises
``StrictDataclassFieldValidationError`` for a field whose value is not of its declared type (``rms_norm_eps: null``,
a string for a float, an int for a float, a bool for an int). archzoo knows the annotations from transformers'
source (`archzoo.hf_keys_read.FIELD_TYPES`) and refuses the same files, including for the keys it ignores. Each
check builds the file and asks both: transformers is the reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archzoo import hf_keys_read
from archzoo.errors import HFConfigError
from archzoo.hf_reading import load_hf_config
from archzoo.hf_vocabulary import hf_table
from archzoo.host import PluginHost

pytestmark = pytest.mark.sweep

#: values of every JSON kind, among them a wrong type for every annotation: null, a string, a whole number, a
#: float, a bool, a list, an object; and floats outside [0, 1] for a validated interval (LlamaConfig's
#: initializer_range)
PROBES: tuple[Any, ...] = (None, "abc", 3, 0.5, True, [3], {"a": 1}, 2.5, -0.5)
#: the words of archzoo's refusal for a field's type
TYPE_REFUSAL = "so transformers refuses to load the file"


#: what a type's defaults lack for archzoo to count them (DeepseekV2Config's give no experts per token, which
#: transformers cannot run either: its table's defaults_unrunnable)
FILLED: dict[str, dict[str, Any]] = {"deepseek_v2": {"num_experts_per_tok": 2}}


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


def _tabled_types() -> list[str]:
    readers = PluginHost().load().hf_readers()
    return sorted(t for t, found in readers.items() if hf_table(found.reader) is not None)


def _base(host: PluginHost, tmp_path: Path, model_type: str) -> dict[str, Any]:
    """A file both read: the class's defaults where archzoo counts them, else the smallest published file."""
    path = tmp_path / "base.json"
    candidates = [{"model_type": model_type, **FILLED.get(model_type, {})}]
    published = Path(__file__).parent / "data" / "hf_published"
    for file in sorted(published.glob("*.json"), key=lambda p: p.stat().st_size):
        data = json.loads(file.read_text(encoding="utf-8"))
        if data.get("model_type") == model_type:
            candidates.append(data)
    for data in candidates:
        path.write_text(json.dumps(data), encoding="utf-8")
        try:
            load_hf_config(path, host)
        except HFConfigError:
            continue
        return data
    pytest.fail(f"{model_type}: neither the defaults nor a published file is read by archzoo")


def _transformers_refusal(T, path: Path) -> Exception | None:
    """What AutoConfig raises loading the file: a validation error, or whatever its loading code fails with."""
    try:
        T.AutoConfig.from_pretrained(str(path))
    except Exception as exc:  # any failure to load is a refusal (AttributeError, IndexError, ...)
        return exc
    return None


def _archzoo_refusal(host: PluginHost, path: Path) -> str | None:
    try:
        load_hf_config(path, host)
    except HFConfigError as exc:
        return str(exc)
    return None


def _cases(model_type: str) -> list[tuple[str, str]]:
    """(where, field): the type's own fields, and for a class with sub-configurations each nested class's."""
    cases = [("", name) for name in hf_keys_read.FIELD_TYPES[model_type]]
    for key, sub in hf_table(PluginHost().load().hf_readers()[model_type].reader).nested.items():
        cases += [(key, name) for name in hf_keys_read.FIELD_TYPES[sub.model_type]]
    return cases


@pytest.mark.reference
@pytest.mark.parametrize("model_type", _tabled_types())
def test_a_field_of_the_wrong_type_is_refused_as_transformers_refuses_it(T, host, tmp_path, model_type):
    """Every field of the type's configuration class (and of its sub-configurations), given each probe: where
    transformers refuses the file for the field, archzoo refuses it; where archzoo refuses it for the field's type,
    transformers refuses it too; and a key archzoo ignores, whose value transformers accepts, is still counted."""
    from huggingface_hub.errors import StrictDataclassFieldValidationError

    table = hf_table(host.hf_readers()[model_type].reader)
    base = _base(host, tmp_path, model_type)
    path = tmp_path / "config.json"
    disagreements = []
    for where, name in _cases(model_type):
        sub_table = table.nested[where] if where else table
        ignored = name in sub_table.ignored
        for value in PROBES:
            data = json.loads(json.dumps(base))
            if where:
                data[where] = {**(data.get(where) or {}), name: value}
            else:
                data[name] = value
            path.write_text(json.dumps(data), encoding="utf-8")
            theirs = _transformers_refusal(T, path)
            ours = _archzoo_refusal(host, path)
            key = f"{where}.{name}" if where else name
            field_refused = isinstance(theirs, StrictDataclassFieldValidationError) and (
                f"field '{name}'" in str(theirs)
            )
            if theirs is not None and ours is None:
                disagreements.append(f"{key}={value!r}: counted, transformers refuses: {str(theirs).splitlines()[0]}")
            elif ours is not None and TYPE_REFUSAL in ours and not field_refused:
                disagreements.append(f"{key}={value!r}: refused for its type, transformers loads it ({theirs})")
            elif ignored and theirs is None and ours is not None:
                disagreements.append(f"{key}={value!r}: ignored key refused, transformers loads it: {ours}")
    assert not disagreements, f"{model_type}: " + "; ".join(disagreements[:12])


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, "null is not a float"),
        ("abc", '"abc" is not a float'),
        (1, "1 is not a float"),
    ],
)
def test_the_refusal_names_file_key_value_type_and_fix(host, tmp_path, value, expected):
    """The one-line message: the file, the key, the value, the type transformers declares, and how to fix it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "rms_norm_eps": value}), encoding="utf-8")
    fix = (
        "write it as a float, 1.0"
        if value == 1
        else "give a float, or remove the key to take LlamaConfig's default 1e-06"
    )
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value) == (
        f"{path}: rms_norm_eps: {expected}, which transformers 5.23's LlamaConfig declares for it (float), so "
        f"transformers refuses to load the file; {fix}"
    )


@pytest.mark.reference
@pytest.mark.parametrize("value", [-0.001, 0.0, 0.02, 1.0, 1.001])
def test_an_interval_is_refused_outside_as_transformers_refuses(T, host, tmp_path, value):
    """LlamaConfig's initializer_range is validated within [0, 1], bounds included: archzoo refuses outside, as
    AutoConfig does, though the key changes no count."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "initializer_range": value}), encoding="utf-8")
    theirs, ours = _transformers_refusal(T, path), _archzoo_refusal(host, path)
    assert (theirs is None) == (ours is None) == (0.0 <= value <= 1.0), (theirs, ours)
    if ours is not None:
        assert ours == (
            f"{path}: initializer_range: {value} is outside the interval transformers 5.23's LlamaConfig declares "
            "for it (interval(min=0.0, max=1.0)), so transformers refuses to load the file; give a value inside it, "
            "or remove the key to take its default 0.02"
        )


def test_a_nested_field_is_named_with_its_sub_configuration(host, tmp_path):
    """CLIP's vision_config.projection_dim is a CLIPVisionConfig field (int): null is refused under its full name."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "clip", "vision_config": {"projection_dim": None}}), encoding="utf-8")
    with pytest.raises(HFConfigError, match=r"^.*config\.json: vision_config\.projection_dim: null is not an integer"):
        load_hf_config(path, host)


def test_an_alias_is_not_checked_as_transformers_does_not(host, tmp_path):
    """GPT2Config's field is n_embd; hidden_size is an alias of attribute_map, which transformers' strict validation
    never sees (``GPT2Config(hidden_size="x")`` loads): its type is not what refuses it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "hidden_size": "x"}), encoding="utf-8")
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert TYPE_REFUSAL not in str(caught.value)


# ---- the keys of every configuration: what PreTrainedConfig converts while loading ---------------------

#: values for the keys every configuration may carry: the probes, and what those keys are written as
COMMON_PROBES: tuple[Any, ...] = (
    *PROBES,
    1e-05,
    {"0": "x"},
    ["LlamaModel"],
    ["AutoConfig"],
    "AutoModel",
    {"AutoConfig": 3},
    {"AutoConfig": "custom.Config"},
    "float16",
    "auto",
    "regression",
)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", ["llama", "bert", "clip"])
def test_a_common_key_transformers_cannot_load_is_refused(T, host, tmp_path, model_type):
    """Every key of `COMMON_KEYS` given each probe, on the class's defaults: a file AutoConfig fails on (``dtype:
    "auto"``, ``torch_dtype: 1e-05``, ``id2label: {"a": 1}``, ``auto_map: 3``) archzoo refuses; and a file archzoo
    refuses as transformers failing on it, transformers fails on. (archzoo refuses more of these keys for reasons
    of its own, a pruned or quantized checkpoint: those are not this test's.)"""
    from archzoo.hf_vocabulary import COMMON_KEYS

    path = tmp_path / "config.json"
    disagreements = []
    for key in COMMON_KEYS:
        if key == "model_type":
            continue
        for value in COMMON_PROBES:
            path.write_text(json.dumps({"model_type": model_type, key: value}), encoding="utf-8")
            theirs, ours = _transformers_refusal(T, path), _archzoo_refusal(host, path)
            if theirs is not None and ours is None:
                disagreements.append(f"{key}={value!r}: counted, transformers fails: {theirs!r}")
            elif ours is not None and "transformers 5.23" in ours and "load" in ours and theirs is None:
                disagreements.append(f"{key}={value!r}: refused as transformers failing, but it loads: {ours}")
    assert not disagreements, f"{model_type}: " + "; ".join(disagreements[:12])


@pytest.mark.reference
@pytest.mark.parametrize(
    "change",
    [
        {"output_attentions": True, "attn_implementation": "sdpa"},
        {"output_attentions": True, "_attn_implementation": "flash_attention_2"},
        {"output_attentions": True, "attn_implementation": "sdpa", "_attn_implementation": "eager"},
        {"output_attentions": True, "attn_implementation": "eager", "_attn_implementation": {"": "sdpa"}},
        {"output_attentions": 1, "attn_implementation": "eager"},
        {"output_attentions": "yes"},
        {"output_attentions": False, "attn_implementation": "sdpa"},
        {"problem_type": "single_label_classification", "num_labels": 1},
        {"problem_type": "single_label_classification", "num_labels": True},
        {"problem_type": "single_label_classification", "id2label": {"0": "a"}, "num_labels": 2},
        {"problem_type": "single_label_classification", "id2label": {"0": "a", "1": "b"}, "num_labels": 1},
        {"problem_type": "regression", "num_labels": 1},
    ],
)
def test_the_settings_transformers_checks_together_are_refused_together(T, host, tmp_path, change):
    """Keys archzoo ignores that transformers' loading checks against each other: attention weights returned by a
    kernel other than eager, a single-label classifier of one label. Both refuse, or both load."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "bert", "num_hidden_layers": 1, **change}), encoding="utf-8")
    theirs, ours = _transformers_refusal(T, path), _archzoo_refusal(host, path)
    assert (theirs is None) == (ours is None), (theirs, ours)


@pytest.mark.reference
def test_the_dtype_names_are_torchs():
    """The names a dtype's text is looked up as are exactly torch's dtypes."""
    torch = pytest.importorskip("torch")
    from archzoo.hf_reading import TORCH_DTYPES

    assert {n for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)} == TORCH_DTYPES


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"torch_dtype": "auto"},
            'torch_dtype: "auto" is no torch dtype, and transformers 5.23 looks it up as torch.auto when it loads the '
            'file; give one such as "bfloat16" or "float32", or remove the key (archzoo reports the memory at every '
            "precision)",
        ),
        (
            {"dtype": 1e-05, "torch_dtype": "float16"},
            "dtype: 1e-05 is no precision transformers 5.23 can print back (it fails on loading the file); give a "
            'torch dtype\'s name such as "bfloat16", or remove the key',
        ),
        (
            {"id2label": {"0": "no", "yes": "yes"}},
            'id2label: the label id "yes" is no integer, and transformers 5.23 makes each id an integer when it loads '
            'the file; number the labels 0, 1, ... ({"0": "NEGATIVE", "1": "POSITIVE"})',
        ),
        (
            {"problem_type": "single_label_classification", "id2label": {"0": "yes"}},
            'problem_type: "single_label_classification" with 1 label, which transformers 5.23 refuses when it loads '
            'the file; give 2 labels for a binary classifier, or "regression" for one output',
        ),
        (
            {"output_attentions": True, "attn_implementation": "sdpa"},
            'output_attentions: true with the attention kernel "sdpa", which transformers 5.23 refuses when it loads '
            "the file (only eager attention returns its weights); set output_attentions to false, or the kernel to "
            '"eager"',
        ),
        (
            {"auto_map": ["AutoConfig"]},
            'auto_map: expected an object mapping Auto classes to custom code, got ["AutoConfig"]; transformers '
            "5.23's Auto classes fail on it",
        ),
    ],
)
def test_a_common_key_refusal_names_file_key_value_and_fix(host, tmp_path, change, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "bert", **change}), encoding="utf-8")
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value) == f"{path}: {message}"


@pytest.mark.reference
@pytest.mark.parametrize("auto_map", ["modeling.MyBert", ["custom"], {"AutoConfig": "custom.Config"}])
def test_an_auto_map_transformers_loads_is_ignored(T, host, tmp_path, auto_map):
    """AutoConfig and AutoModel only ask whether their name is in auto_map: text or a list naming no Auto class
    loads and builds transformers' own class as an object does."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "bert", "num_hidden_layers": 1, "auto_map": auto_map}), encoding="utf-8")
    reading = load_hf_config(path, host)
    assert {k.key: k.disposition for k in reading.keys}["auto_map"] == "ignored"
    import torch

    with torch.device("meta"):
        model = T.AutoModel.from_config(T.AutoConfig.from_pretrained(str(path)))
    assert type(model).__name__ == "BertModel"


_YARN = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 1024}
_LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "original_max_position_embeddings": 1024,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "rope_theta": 500000.0,
}


@pytest.mark.reference
@pytest.mark.parametrize(
    "rope",
    [
        dict(_YARN),
        dict(_YARN, beta_fast="32"),
        dict(_YARN, beta_fast=32, beta_slow=[1]),
        dict(_YARN, original_max_position_embeddings=0),
        dict(_YARN, original_max_position_embeddings="1024"),
        dict(_LLAMA3),
        dict(_LLAMA3, high_freq_factor="4"),
        dict(_LLAMA3, original_max_position_embeddings=None),
        dict(_LLAMA3, low_freq_factor=None),
    ],
)
def test_rotary_settings_transformers_cannot_compare_are_refused(T, host, tmp_path, rope):
    """transformers' rotary validation warns about most wrong settings but compares some (yarn's beta_fast with
    beta_slow, llama3's frequency factors and pre-training length), failing on values of another type: both refuse,
    or both load."""
    path = tmp_path / "config.json"
    data = {"model_type": "llama", "num_hidden_layers": 1, "max_position_embeddings": 4096, "rope_parameters": rope}
    path.write_text(json.dumps(data), encoding="utf-8")
    theirs, ours = _transformers_refusal(T, path), _archzoo_refusal(host, path)
    assert (theirs is None) == (ours is None), (theirs, ours)
