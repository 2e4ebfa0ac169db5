"""Inputs transformers 5.23 accepts that archzoo refused or printed as invalid JSON (issue 22): each is counted as
transformers builds it, or refused for the reason transformers itself fails; and every ``--json`` output is strict
JSON (RFC 8259: no bare NaN or Infinity), whatever float the configuration holds.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the class transformers builds from the
file (AutoConfig, as from_pretrained reads it), or what ``torch.utils.flop_counter.FlopCounterMode`` reports for one
eager forward pass of batch 1 (`transformers_models.config_json_figures`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from archzoo.architecture import float_keys, json_number
from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from family_checks import assert_config_json_matches, assert_head_class_matches, counter, write_json

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
