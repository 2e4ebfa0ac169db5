"""The neox plugin against transformers: defaults, published configurations, random small ones, config.json files,
every head class, verify.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the GPTNeoX class transformers 5.23 builds
on the meta device, or what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of
batch 1, or a figure the Pythia authors printed (named beside it). The plugin's own checks go through archzoo's kit
for plugin authors (`archzoo.testing`), as a third-party plugin's would.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
import re
from pathlib import Path

import pytest

from archzoo.architecture import parse_config
from archzoo.cli import main
from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import COMMON_KEYS, hf_table, load_hf_config
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, build_model
from family_checks import (
    DecoderChecks,
    DecoderFamily,
    assert_config_json_matches,
    assert_config_json_refused,
    assert_head_class_matches,
    assert_table_is_the_configuration_class,
    assert_verify_maps_every_block,
    changed_settings,
    counter,
    table_of,
    write_json,
)
from transformers_models import forward_flops, host_with, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

HEADS = ("lm", "none", "sequence_classification", "token_classification", "question_answering")
CLASSES = {
    "lm": "GPTNeoXForCausalLM",
    "none": "GPTNeoXModel",
    "sequence_classification": "GPTNeoXForSequenceClassification",
    "token_classification": "GPTNeoXForTokenClassification",
    "question_answering": "GPTNeoXForQuestionAnswering",
}


count = counter("neox")


# ---- published configurations ----------------------------------------------------------------------------

#: config.json files as EleutherAI published them. The Pythia shapes (layers, model dim, heads) are those of
#: Table 1 of Biderman et al., "Pythia: A Suite for Analyzing Large Language Models Across Training and Scaling"
#: (ICML 2023, arXiv:2304.01373), with the keys of the Hub's EleutherAI/pythia-* config.json files (feed-forward
#: 4 d, the vocabulary padded to 50,304 rows, 50,432 for 6.9B and 50,688 for 12B, rotary_pct 0.25); GPT-NeoX-20B's
#: is the Hub's EleutherAI/gpt-neox-20b config.json (as copied, with num_hidden_layers 44, in a third-party loader
#: of that checkpoint), whose shape its model card's hyperparameter table prints.
_PYTHIA_KEYS = {
    "architectures": ["GPTNeoXForCausalLM"],
    "bos_token_id": 0,
    "eos_token_id": 0,
    "hidden_act": "gelu",
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 2048,
    "model_type": "gpt_neox",
    "rotary_emb_base": 10000,
    "rotary_pct": 0.25,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "transformers_version": "4.24.0",
    "use_cache": True,
    "use_parallel_residual": True,
}


def _pythia(layers: int, d: int, heads: int, vocab: int = 50304) -> dict:
    return dict(
        _PYTHIA_KEYS,
        num_hidden_layers=layers,
        hidden_size=d,
        num_attention_heads=heads,
        intermediate_size=4 * d,
        vocab_size=vocab,
    )


PUBLISHED = {
    "pythia-70m": _pythia(6, 512, 8),
    "pythia-160m": _pythia(12, 768, 12),
    "pythia-410m": _pythia(24, 1024, 16),
    "pythia-1b": _pythia(16, 2048, 8),
    "pythia-1.4b": _pythia(24, 2048, 16),
    "pythia-2.8b": _pythia(32, 2560, 32),
    "pythia-6.9b": _pythia(32, 4096, 32, vocab=50432),
    "pythia-12b": _pythia(36, 5120, 40, vocab=50688),
    "gpt-neox-20b": {
        "architectures": ["GPTNeoXForCausalLM"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "hidden_act": "gelu_fast",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 6144,
        "initializer_range": 0.02,
        "intermediate_size": 24576,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "gpt_neox",
        "num_attention_heads": 64,
        "num_hidden_layers": 44,
        "rotary_emb_base": 10000,
        "rotary_pct": 0.25,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "transformers_version": "4.19.0.dev0",
        "use_cache": True,
        "vocab_size": 50432,
    },
}

#: Table 1 of Biderman et al. 2023 ("Non-Embedding Params"): the parameters less embed_in and embed_out (V·d each)
PYTHIA_NON_EMBEDDING = {
    "pythia-70m": 18_915_328,
    "pythia-160m": 85_056_000,
    "pythia-410m": 302_311_424,
    "pythia-1b": 805_736_448,
    "pythia-1.4b": 1_208_602_624,
    "pythia-2.8b": 2_517_652_480,
    "pythia-6.9b": 6_444_163_072,
    "pythia-12b": 11_327_027_200,
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_files_equal_transformers(T, host, tmp_path, model_id, capsys):
    """Each published file, read by `archzoo count --hf-config` as written, against the class transformers builds
    from the same file (AutoConfig), on the meta device: parameters, and FLOPs at two lengths."""
    path = write_json(tmp_path, PUBLISHED[model_id])
    model = build_model("GPTNeoXForCausalLM", T.AutoConfig.from_pretrained(str(path)))
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["total"] == n_params(model)
    reading = load_hf_config(path, host, hf_class="GPTNeoXForCausalLM")
    for n in (1, 16):
        assert make_report(reading.architecture, reading.config, n).flops == forward_flops(model, n), n


@pytest.mark.parametrize("model_id", PYTHIA_NON_EMBEDDING)
def test_pythia_non_embedding_counts_are_table_1s(host, tmp_path, model_id):
    """Pythia's Table 1 prints each model's parameters less its two embedding matrices, to the parameter."""
    reading = load_hf_config(write_json(tmp_path, PUBLISHED[model_id]), host, hf_class="GPTNeoXForCausalLM")
    config = reading.config
    embeddings = 2 * config.vocab_size * config.d_model  # embed_in and the untied embed_out
    assert make_report(reading.architecture, config).params - embeddings == PYTHIA_NON_EMBEDDING[model_id]


@pytest.mark.reference
@pytest.mark.parametrize("head", HEADS)
def test_every_head_class_of_a_published_shape(T, host, head):
    """Pythia-160M's shape (Table 1) under every head class transformers has for gpt_neox: parameters and FLOPs."""
    config = dict(vocab_size=50304, d_model=768, n_layers=12, n_heads=12, d_ff=3072, head=head, num_labels=3)
    assert_head_class_matches(T, host, "neox", CLASSES[head], config, (3, 32))


# ---- random small configurations: parameters and FLOPs, block by block ----------------------------------


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 3, 4, 6])
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu", "gelu_fast", "relu", "silu", "gelu_new"]),
        attention_bias=rng.random() < 0.6,
        parallel_residual=rng.random() < 0.5,
        rotary_fraction=rng.choice([0.25, 0.5, 1.0]),
        tie_embeddings=rng.random() < 0.3,
        head=rng.choice(HEADS),
        num_labels=rng.randint(1, 5),
    )


BASE = dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40)
#: one value per key the table reads, each changed alone
SWEEP = dict(
    vocab_size=101,
    hidden_size=60,
    num_hidden_layers=1,
    num_attention_heads=6,
    intermediate_size=33,
    hidden_act="relu",
    max_position_embeddings=64,
    tie_word_embeddings=True,
    use_parallel_residual=False,
    attention_bias=False,
    pad_token_id=7,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0, "partial_rotary_factor": 0.5},
    num_labels=5,
)


class TestNeoX(DecoderChecks):
    FAMILY = DecoderFamily(
        architecture="neox",
        model_type="gpt_neox",
        classes=CLASSES,
        config_class="GPTNeoXConfig",
        modeling="transformers.models.gpt_neox.modeling_gpt_neox",
        configs=[_random_config(random.Random(seed)) for seed in range(16)],
        base=BASE,
        sweep=SWEEP,
        more_changes={"(all keys)": SWEEP},
        ignored=dict(
            attention_dropout=0.3,
            hidden_dropout=0.2,
            classifier_dropout=0.4,
            **changed_settings(),
            is_decoder=True,
            attention_probs_dropout_prob=0.1,
            hidden_dropout_prob=0.1,
        ),
    )

    @pytest.mark.reference
    def test_table_equals_the_transformers_configuration_class(self, T, host):
        """The shared check (fields and defaults, AutoModel's class, every model class, every key of a saved config
        known), and the aliases are GPTNeoXConfig's attribute_map, no class refused."""
        family = self.FAMILY
        table = assert_table_is_the_configuration_class(T, host, "gpt_neox", family.config_class, family.modeling)
        assert dict(table.aliases) == dict(T.GPTNeoXConfig.attribute_map)
        assert not table.unsupported_classes

    @pytest.mark.reference
    def test_ignored_keys_change_no_figure(self, T, host, tmp_path):
        """Every key GPTNeoXConfig has that archzoo ignores, changed at once, and the legacy keys EleutherAI's files
        carry, with the rotary ones (converted into rope_parameters): transformers' figures still equal archzoo's."""
        changed = self.FAMILY.ignored
        assert set(changed) == set(table_of(host, "gpt_neox").ignored)
        path = write_json(
            tmp_path, {"model_type": "gpt_neox", **BASE, **changed, "rotary_emb_base": 500, "rotary_pct": 0.5}
        )
        assert_config_json_matches(T, host, path, CLASSES.values())


def test_options_that_change_no_count():
    """Parallel or sequential residual and the rotary fraction change no module and no matmul (the random
    configurations above check both settings against transformers)."""
    base = count(64, vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40)
    for change in (dict(parallel_residual=False), dict(rotary_fraction=1.0)):
        other = count(64, vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40, **change)
        assert (other.params, other.flops) == (base.params, base.flops), change


def test_heads_must_divide_the_width(host):
    with pytest.raises(ConfigError, match=r"n_heads: d_model 100 is not divisible by n_heads 16"):
        count(d_model=100, n_heads=16)


def test_an_activation_with_parameters_is_refused(host):
    with pytest.raises(ConfigError, match=r"activation: prelu is a module with learned parameters"):
        count(activation="prelu")


def test_rotary_positions_have_no_parameters(host):
    embeddings = [path for path, _, block in count().root.walk() if block.kind == "embedding"]
    assert embeddings == ["neox.token"]


# ---- Hugging Face config.json: every key accounted for --------------------------------------------------


@pytest.mark.reference
def test_the_files_extra_keys_are_read_by_no_module(T, host):
    """The keys beyond GPTNeoXConfig's fields that the table ignores (legacy dropouts) appear nowhere in
    transformers' gpt_neox modeling or configuration code."""
    import inspect

    for module in ("modeling_gpt_neox", "configuration_gpt_neox"):
        source = inspect.getsource(importlib.import_module(f"transformers.models.gpt_neox.{module}"))
        extra = set(table_of(host, "gpt_neox").ignored) - set(table_of(host, "gpt_neox").defaults)
        assert extra == {"attention_probs_dropout_prob", "hidden_dropout_prob"}
        for key in extra:
            assert key not in source, (module, key)


@pytest.mark.reference
def test_rotary_fraction_is_read_as_transformers_resolves_it(T, host, tmp_path):
    """rope_parameters' partial_rotary_factor, else rotary_pct, else 0.25: what GPTNeoXConfig holds once loaded."""
    files = [
        {},
        {"rotary_pct": 0.5},
        {"rotary_pct": 0.5, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 1.0}},
        {"rotary_pct": 1.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    ]
    for i, extra in enumerate(files):
        path = write_json(tmp_path, {"model_type": "gpt_neox", **BASE, **extra}, f"config{i}.json")
        expected = T.AutoConfig.from_pretrained(str(path)).rope_parameters["partial_rotary_factor"]
        assert load_hf_config(path, host).config.rotary_fraction == expected, extra


@pytest.mark.reference
def test_a_top_level_partial_rotary_factor_is_not_gpt_neoxs(T, host, tmp_path):
    """GPTNeoXConfig's conversion takes rotary_pct, so the key is a plain attribute set once the rotary settings
    are built: transformers loads the file with 0.25, and archzoo reads it so (no longer refused)."""
    path = write_json(tmp_path, {"model_type": "gpt_neox", **BASE, "partial_rotary_factor": 0.75})
    expected = T.AutoConfig.from_pretrained(str(path)).rope_parameters["partial_rotary_factor"]
    assert load_hf_config(path, host).config.rotary_fraction == expected


@pytest.mark.parametrize(
    "data, hf_class, message",
    [
        (
            {"model_type": "gpt_neox"},
            "GPTNeoXForMultipleChoice",
            "--hf-class: 'GPTNeoXForMultipleChoice' is not a gpt_neox model class archzoo counts; did you mean "
            "'GPTNeoXForQuestionAnswering'? supported: GPTNeoXModel, GPTNeoXForCausalLM, "
            "GPTNeoXForSequenceClassification, GPTNeoXForTokenClassification, GPTNeoXForQuestionAnswering",
        ),
        (
            {"model_type": "gpt_neox", "hidden_size": 100, "num_attention_heads": 16},
            None,
            "{path}: num_attention_heads, read as n_heads: d_model 100 is not divisible by n_heads 16; choose a "
            "divisor of d_model",
        ),
        (
            {"model_type": "gpt_neox", "rope_parameters": {"rope_type": "zzz"}},
            None,
            '{path}: rope_parameters: rope_type "zzz" is not one transformers\' '
            "GPTNeoXConfig accepts; expected one of default, linear, dynamic, yarn, longrope, llama3, proportional",
        ),
    ],
)
def test_refusals_name_the_key(host, tmp_path, data, hf_class, message):
    assert_config_json_refused(host, tmp_path, data, hf_class, message)


# ---- archzoo verify: the block mapping -------------------------------------------------------------------

VERIFY_CASES = {
    "causal-lm": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40),
    "causal-lm-tied-sequential": dict(
        vocab_size=97, d_model=48, n_layers=1, n_heads=4, d_ff=40, tie_embeddings=True, parallel_residual=False
    ),
    "base-no-bias": dict(vocab_size=97, d_model=48, n_layers=2, n_heads=6, d_ff=40, head="none", attention_bias=False),
    "token-classification": dict(
        vocab_size=97, d_model=48, n_layers=1, n_heads=4, d_ff=40, head="token_classification"
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_maps_every_block(T, host, tmp_path, case):
    config = VERIFY_CASES[case]
    assert_verify_maps_every_block(host, tmp_path, "neox", config, CLASSES[config.get("head", "lm")])


# ---- GPT-J and Phi: the plugin's other two architectures -------------------------------------------------

GPTJ_CLASSES = {
    "lm": "GPTJForCausalLM",
    "none": "GPTJModel",
    "sequence_classification": "GPTJForSequenceClassification",
    "question_answering": "GPTJForQuestionAnswering",
}
PHI_CLASSES = {
    "lm": "PhiForCausalLM",
    "none": "PhiModel",
    "sequence_classification": "PhiForSequenceClassification",
    "token_classification": "PhiForTokenClassification",
}
FAMILIES = {
    # architecture: (model type, configuration class, archzoo head -> class)
    "gptj": ("gptj", "GPTJConfig", GPTJ_CLASSES),
    "phi": ("phi", "PhiConfig", PHI_CLASSES),
}

#: config.json files as published on the Hugging Face Hub: EleutherAI/gpt-j-6b (every key, as copied in a
#: third-party model-config collection), microsoft/phi-2 (every key, as copied in several third-party test
#: suites), and microsoft/phi-1_5 and microsoft/phi-1, whose shape (24 layers, width 2,048, 32 heads, feed-forward
#: 8,192, half of each head rotary) the Phi-1.5 technical report (Li et al. 2023, arXiv:2309.05463, Sec. 2.3)
#: gives for both, written here with Phi-2's keys.
PUBLISHED_OTHERS = {
    "gpt-j-6b": {
        "activation_function": "gelu_new",
        "architectures": ["GPTJForCausalLM"],
        "attn_pdrop": 0.0,
        "bos_token_id": 50256,
        "embd_pdrop": 0.0,
        "eos_token_id": 50256,
        "gradient_checkpointing": False,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gptj",
        "n_embd": 4096,
        "n_head": 16,
        "n_inner": None,
        "n_layer": 28,
        "n_positions": 2048,
        "resid_pdrop": 0.0,
        "rotary": True,
        "rotary_dim": 64,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50, "temperature": 1.0}},
        "tie_word_embeddings": False,
        "tokenizer_class": "GPT2Tokenizer",
        "transformers_version": "4.18.0.dev0",
        "use_cache": True,
        "vocab_size": 50400,
    },
    "phi-2": {
        "_name_or_path": "microsoft/phi-2",
        "architectures": ["PhiForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 50256,
        "embd_pdrop": 0.0,
        "eos_token_id": 50256,
        "hidden_act": "gelu_new",
        "hidden_size": 2560,
        "initializer_range": 0.02,
        "intermediate_size": 10240,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "phi",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "partial_rotary_factor": 0.4,
        "qk_layernorm": False,
        "resid_pdrop": 0.1,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.37.0",
        "use_cache": True,
        "vocab_size": 51200,
    },
}
for _name in ("phi-1_5", "phi-1"):
    PUBLISHED_OTHERS[_name] = dict(
        PUBLISHED_OTHERS["phi-2"],
        _name_or_path=f"microsoft/{_name}",
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=24,
        num_key_value_heads=32,
        partial_rotary_factor=0.5,
        resid_pdrop=0.0,
    )


@pytest.mark.reference
@pytest.mark.parametrize("name", FAMILIES)
def test_other_defaults_are_transformers_defaults(T, host, name):
    """GPT-J's defaults are GPTJConfig's (GPT-J-6B); Phi's are Phi-2's, set on PhiConfig (whose own are Phi-1's)."""
    _model_type, config_class, classes = FAMILIES[name]
    arch = host.architecture(name)
    config = parse_config(arch, {})
    kwargs = arch.reference(config).kwargs if name == "phi" else {}
    model = build_model(classes["lm"], getattr(T, config_class)(**kwargs))
    assert make_report(arch, config).params == n_params(model)
    for n in (1, 8):
        assert make_report(arch, config, n).flops == forward_flops(model, n), n


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED_OTHERS)
def test_other_published_files_equal_transformers(T, host, tmp_path, model_id, capsys):
    data = PUBLISHED_OTHERS[model_id]
    path = write_json(tmp_path, data)
    model_class = data["architectures"][0]
    model = build_model(model_class, T.AutoConfig.from_pretrained(str(path)))
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == n_params(model)
    reading = load_hf_config(path, host, hf_class=model_class)
    for n in (1, 16):
        assert make_report(reading.architecture, reading.config, n).flops == forward_flops(model, n), n


def _random_gptj(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    d_head = 2 * rng.randint(1, 6)
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * d_head,
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        rotary_dim=2 * rng.randint(1, d_head // 2),
        d_ff=rng.choice([None, rng.randint(1, 80)]),
        max_positions=rng.choice([16, 64]),
        activation=rng.choice(["gelu_new", "gelu", "relu"]),
        tie_embeddings=rng.random() < 0.3,
        head=rng.choice(list(GPTJ_CLASSES)),
        num_labels=2,
    )


def _random_phi(rng: random.Random) -> dict:
    n_kv = rng.choice([1, 2, 3])
    n_heads = n_kv * rng.choice([1, 2])
    d_model = n_heads * rng.randint(2, 8) + rng.choice([0, 0, 1])  # also widths the heads do not divide
    d_head = d_model // n_heads
    # transformers' Phi runs only when the rotary channels are even in number (see the refusal test)
    fractions = [f for f in (0.25, 0.4, 0.5, 1.0) if int(d_head * f) % 2 == 0] or [0.0]
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=d_model,
        rotary_fraction=rng.choice(fractions),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([None, n_kv]),
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu_new", "gelu", "silu"]),
        qk_norm=rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.3,
        head=rng.choice(list(PHI_CLASSES)),
        num_labels=rng.randint(1, 5),
    )


OTHER_CONFIGS = [("gptj", _random_gptj(random.Random(seed))) for seed in range(10)] + [
    ("phi", _random_phi(random.Random(seed))) for seed in range(10)
]


@pytest.mark.reference
@pytest.mark.parametrize(
    "name, config", OTHER_CONFIGS, ids=[f"{n}-seed{i % 10}" for i, (n, _) in enumerate(OTHER_CONFIGS)]
)
def test_other_random_configs_equal_transformers(host, name, config):
    arch = host.architecture(name)
    assert_blocks_match_modules(arch, config)
    assert_matches_reference(arch, config, seq_lens=(1, 7, 16))


@pytest.mark.reference
@pytest.mark.parametrize("name, head", [(n, h) for n, (_, _, classes) in FAMILIES.items() for h in classes])
def test_every_other_head_class(host, name, head):
    config = dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, head=head, num_labels=2)
    config.update(rotary_dim=6) if name == "gptj" else config.update(rotary_fraction=0.5)
    assert host.architecture(name).reference(parse_config(host.architecture(name), config)).target == (
        f"transformers.{FAMILIES[name][2][head]}"
    )
    assert_matches_reference(host.architecture(name), config, seq_lens=(5,))


@pytest.mark.reference
@pytest.mark.parametrize("name", FAMILIES)
def test_other_tables_equal_the_transformers_configuration_classes(T, host, name):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    model_type, config_class, classes = FAMILIES[name]
    table = hf_table(host.hf_readers()[model_type].reader)
    cls = getattr(T, config_class)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    assert dict(table.defaults) == {f.name: f.default for f in dataclasses.fields(cls) if f.name not in common}
    assert dict(table.aliases) == dict(cls.attribute_map)
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    names = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) == names == set(classes.values())
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(cls().to_dict()) - known == set()
    extra = set(table.ignored) - set(table.defaults)
    source = inspect_source(module)
    for key in extra:  # the legacy keys ignored as never read: the type's code reads no attribute of that name
        assert not re.search(rf"\.{key}\b|getattr\([^)]*['\"]{key}['\"]", source), key


def inspect_source(module) -> str:
    import inspect

    return inspect.getsource(module)


#: one value per key each table reads, changed alone
OTHER_BASE = {
    "gptj": dict(vocab_size=97, n_embd=48, n_layer=2, n_head=4, rotary_dim=6, n_positions=32),
    "phi": dict(
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=40,
        partial_rotary_factor=0.5,
    ),
}
OTHER_SWEEP = {
    "gptj": dict(
        vocab_size=101,
        n_embd=64,
        n_layer=1,
        n_head=2,
        n_inner=33,
        n_positions=20,
        rotary_dim=12,
        activation_function="relu",
        tie_word_embeddings=True,
        pad_token_id=7,
        num_labels=2,
    ),
    "phi": dict(
        vocab_size=101,
        hidden_size=50,
        intermediate_size=33,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        hidden_act="relu",
        max_position_embeddings=64,
        tie_word_embeddings=True,
        qk_layernorm=True,
        pad_token_id=3,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0, "partial_rotary_factor": 1.0},
        num_labels=5,
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("name", FAMILIES)
def test_other_sweeps_cover_every_key(host, name):
    model_type = FAMILIES[name][0]
    assert set(OTHER_SWEEP[name]) == set(hf_table(host.hf_readers()[model_type].reader).read)


@pytest.mark.reference
@pytest.mark.parametrize(
    "name, change",
    [(n, {}) for n in FAMILIES] + [(n, {k: v}) for n in FAMILIES for k, v in OTHER_SWEEP[n].items()],
    ids=[f"{n}-(base)" for n in FAMILIES] + [f"{n}-{k}" for n in FAMILIES for k in OTHER_SWEEP[n]],
)
def test_other_keys_against_transformers(T, host, tmp_path, name, change):
    model_type, _, classes = FAMILIES[name]
    path = write_json(tmp_path, {"model_type": model_type, **OTHER_BASE[name], **change})
    assert_config_json_matches(T, host, path, classes.values(), label=change)


@pytest.mark.reference
@pytest.mark.parametrize("name", FAMILIES)
def test_other_ignored_keys_change_no_figure(T, host, tmp_path, name):
    changed = {
        "gptj": dict(
            resid_pdrop=0.1,
            embd_pdrop=0.2,
            attn_pdrop=0.3,
            layer_norm_epsilon=1e-3,
            initializer_range=0.5,
            use_cache=False,
            bos_token_id=5,
            eos_token_id=6,
            rotary=False,
            scale_attn_weights=False,
            summary_activation="tanh",
            summary_first_dropout=0.5,
            summary_proj_to_labels=False,
            summary_type="last",
            summary_use_proj=False,
        ),
        "phi": dict(
            resid_pdrop=0.1,
            embd_pdrop=0.2,
            attention_dropout=0.3,
            **changed_settings(),
        ),
    }[name]
    model_type, _, classes = FAMILIES[name]
    assert set(changed) == set(hf_table(host.hf_readers()[model_type].reader).ignored)
    path = write_json(tmp_path, {"model_type": model_type, **OTHER_BASE[name], **changed})
    assert_config_json_matches(T, host, path, classes.values())


@pytest.mark.reference
def test_gptj_refuses_what_its_forward_pass_cannot_run(T):
    """A rotary_dim that is odd or wider than a head, and more tokens than n_positions, fail in transformers'
    forward pass; archzoo refuses them, naming the key."""
    import torch

    for rotary_dim in (7, 14):
        model = build_model(
            "GPTJModel",
            T.GPTJConfig(vocab_size=50, n_embd=48, n_head=4, n_layer=1, rotary_dim=rotary_dim),
            device="cpu",
        )
        with pytest.raises(RuntimeError):
            model(input_ids=torch.zeros(1, 5, dtype=torch.long))
        with pytest.raises(
            ConfigError,
            match=rf"rotary_dim: GPT-J turns channel pairs of each 12-wide head, and its forward pass fails for {rotary_dim}; choose an even number from 2 to 12",
        ):
            parse_config(host_with("gptj").architecture("gptj"), dict(d_model=48, n_heads=4, rotary_dim=rotary_dim))
    model = build_model(
        "GPTJModel",
        T.GPTJConfig(vocab_size=50, n_embd=48, n_head=4, n_layer=1, rotary_dim=6, n_positions=16),
        device="cpu",
    )
    with pytest.raises((RuntimeError, IndexError)):  # 5.23 a shape mismatch, 5.24 an index past the table
        model(input_ids=torch.zeros(1, 17, dtype=torch.long))
    arch = host_with("gptj").architecture("gptj")
    config = parse_config(arch, dict(d_model=48, n_heads=4, rotary_dim=6, max_positions=16))
    with pytest.raises(ConfigError, match=r"seq_len 17: longer than the 16 positions"):
        make_report(arch, config, 17)


@pytest.mark.reference
def test_gptj_question_answering_runs_with_two_labels_only(T):
    import torch

    model = build_model(
        "GPTJForQuestionAnswering",
        T.GPTJConfig(vocab_size=50, n_embd=48, n_head=4, n_layer=1, rotary_dim=6, num_labels=3),
        device="cpu",
    )
    with pytest.raises(ValueError):
        model(input_ids=torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ConfigError, match=r"num_labels: GPTJForQuestionAnswering splits its 3 outputs per token"):
        parse_config(host_with("gptj").architecture("gptj"), dict(head="question_answering", num_labels=3))


@pytest.mark.reference
def test_odd_rotary_channels_are_refused_where_transformers_fails(T, host):
    """An odd number of rotary channels: the rotary embedding turns one more, and Phi's forward pass fails (for one
    channel it silently widens the query and key heads, another model); GPT-NeoX's only when that is wider than the
    head. archzoo refuses exactly those."""
    import torch

    ids = torch.zeros(1, 5, dtype=torch.long)
    phi = dict(vocab_size=50, hidden_size=48, num_hidden_layers=1, num_attention_heads=4, pad_token_id=None)
    model = build_model(
        "PhiModel",
        T.PhiConfig(**phi, rope_parameters={"rope_type": "default", "partial_rotary_factor": 0.25}),
        device="cpu",
    )
    with pytest.raises(RuntimeError):
        model(input_ids=ids)  # 3 rotary channels of 12
    with pytest.raises(
        ConfigError, match=r"rotary_fraction: 0.25 of a 12-wide head \(d_model / n_heads\) is 3 channels, an odd number"
    ):
        parse_config(host.architecture("phi"), dict(d_model=48, n_heads=4, rotary_fraction=0.25))
    neox = dict(vocab_size=50, hidden_size=12, num_hidden_layers=1, num_attention_heads=4, intermediate_size=8)
    model = build_model("GPTNeoXModel", T.GPTNeoXConfig(**neox, rotary_pct=1.0), device="cpu")
    with pytest.raises(RuntimeError):
        model(input_ids=ids)  # 3 rotary channels of 3
    with pytest.raises(
        ConfigError, match=r"rotary_fraction: 1.0 of a 3-wide head \(d_model / n_heads\) is 3 channels, an odd number"
    ):
        parse_config(host.architecture("neox"), dict(d_model=12, n_heads=4, rotary_fraction=1.0))
    model = build_model("GPTNeoXModel", T.GPTNeoXConfig(**neox, rotary_pct=0.34), device="cpu")
    model(input_ids=ids)  # 1 rotary channel of 3 turns 2: it runs, and archzoo counts it (random configs above)
    assert parse_config(host.architecture("neox"), dict(d_model=12, n_heads=4, rotary_fraction=0.34))


# ---- generation: prefill and decode against FlopCounterMode on real cached calls --------------------------

GENERATION_CASES = [
    ("neox", dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, d_ff=40), CLASSES),
    ("gptj", dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, rotary_dim=6, max_positions=24), GPTJ_CLASSES),
    ("phi", dict(vocab_size=97, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, qk_norm=True), PHI_CLASSES),
]


@pytest.mark.reference
@pytest.mark.parametrize(
    "name, config, head",
    [(name, config, head) for name, config, classes in GENERATION_CASES for head in classes],
    ids=[f"{name}-{head}" for name, _, classes in GENERATION_CASES for head in classes],
)
def test_prefill_and_decode_equal_flop_counter_mode(host, name, config, head):
    """Prefill (the last position's logits only) and cached decode steps, as archzoo's methodology defines them."""
    from archzoo.reference import reference_decode_flops, reference_prefill_flops

    arch = host.architecture(name)
    cfg = parse_config(arch, dict(config, head=head))
    report = make_report(arch, cfg, 8)
    ref = arch.reference(cfg)
    if (name, head) == ("gptj", "question_answering"):
        import inspect

        # the class takes no past_key_values, so no step of it reads a cache: archzoo gives no prefill or decode
        model_class = getattr(importlib.import_module("transformers"), ref.target.rpartition(".")[2])
        assert "past_key_values" not in inspect.signature(model_class.forward).parameters
        assert (report.generative, report.prefill_flops, report.decode_flops) == (False, None, None)
        return
    assert report.generative
    assert report.prefill_flops == reference_prefill_flops(ref, 8)
    assert report.decode_flops == reference_decode_flops(ref, 8)
    assert report.decode_at(3) == reference_decode_flops(ref, 3)


@pytest.mark.reference
@pytest.mark.parametrize(
    "name, config, head",
    [(name, config, head) for name, config, classes in GENERATION_CASES for head in classes],
    ids=[f"{name}-{head}" for name, _, classes in GENERATION_CASES for head in classes],
)
def test_training_flops_equal_flop_counter_mode(host, name, config, head):
    """One training step (forward and the backward of the summed main output), as archzoo's methodology defines it."""
    from archzoo.reference import reference_training_flops

    arch = host.architecture(name)
    cfg = parse_config(arch, dict(config, head=head))
    for n in (1, 8):
        assert make_report(arch, cfg, n).training_flops == reference_training_flops(arch.reference(cfg), n), n


# ---- the registry entries: each one's reference agrees with archzoo, in total and block by block ----------

REGISTRY = sorted((Path(__file__).resolve().parents[1] / "registry" / "neox").glob("*.yaml"))


@pytest.mark.reference
@pytest.mark.parametrize("path", REGISTRY, ids=[p.stem for p in REGISTRY])
def test_registry_entries_verify(T, host, path):
    from archzoo.verify import verify_target

    verification = verify_target(str(path), host=host)
    assert verification.ok, verification.render()


def test_phis_refusal_names_its_own_class(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "phi", "rope_parameters": {"rope_type": "zzz"}})
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host)
    assert str(info.value) == (
        f'{path}: rope_parameters: rope_type "zzz" is not one transformers\' PhiConfig accepts; expected one of '
        "default, linear, dynamic, yarn, longrope, llama3, proportional"
    )
