"""XLM-RoBERTa and XLM-RoBERTa XL in the bert plugin against transformers: the modeling module is RoBERTa's, the
defaults, the published shapes, every head class, random small configurations, config.json files, what is refused;
then XL's pre-LN layers.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the XLMRoberta class transformers 5.23
builds on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of
batch 1, or a figure Conneau et al. printed (named beside it). The key-by-key config.json sweep of ``xlm-roberta``
and ``xlm-roberta-xl`` are tests/test_hf_sweep.py's (BASES and SWEEPS).
"""

from __future__ import annotations

import random

import pytest

from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model
from family_checks import (
    assert_config_json_matches,
    assert_head_class_matches,
    assert_random_config_matches,
    counter,
    write_json,
)
from transformers_models import forward_flops, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "none": "XLMRobertaModel",
    "mlm": "XLMRobertaForMaskedLM",
    "causal_lm": "XLMRobertaForCausalLM",
    "sequence_classification": "XLMRobertaForSequenceClassification",
    "token_classification": "XLMRobertaForTokenClassification",
    "question_answering": "XLMRobertaForQuestionAnswering",
}
#: XLM-RoBERTa's positions start after the padding index 1, as in its published files
XLMR = dict(family="xlm-roberta", position_offset=2, type_vocab_size=1)


count = counter("bert")


@pytest.mark.reference
@pytest.mark.parametrize("head", ["mlm", "sequence_classification", "causal_lm"])
def test_the_modeling_module_builds_roberta_s_modules(T, head):
    """transformers' XLM-RoBERTa classes hold RoBERTa's parameters, name for name and shape for shape, which is why
    the plugin counts them with RoBERTa's blocks (modeling_xlm_roberta.py is generated from RoBERTa's)."""
    kwargs = dict(vocab_size=91, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40)
    kwargs |= dict(max_position_embeddings=24, is_decoder=head == "causal_lm")
    xlmr = build_model(CLASSES[head], T.XLMRobertaConfig(**kwargs))
    roberta = build_model(CLASSES[head].replace("XLMRoberta", "Roberta"), T.RobertaConfig(**kwargs))
    shapes = {name: tuple(p.shape) for name, p in xlmr.named_parameters(remove_duplicate=False)}
    assert shapes == {name: tuple(p.shape) for name, p in roberta.named_parameters(remove_duplicate=False)}
    assert forward_flops(xlmr, 9) == forward_flops(roberta, 9)


@pytest.mark.reference
def test_a_file_of_the_defaults_is_xlm_roberta_model(T, host, tmp_path):
    """A config.json naming only the model type reads as XLMRobertaConfig()'s model, counted exactly."""
    path = write_json(tmp_path, {"model_type": "xlm-roberta"})
    reading = load_hf_config(path, host)
    assert reading.model_class == "XLMRobertaModel"
    model = build_model("XLMRobertaModel", T.XLMRobertaConfig())
    report = make_report(reading.architecture, reading.config, 64)
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 64))
    default_n = make_report(reading.architecture, reading.config).seq_len
    assert default_n == T.XLMRobertaConfig().max_position_embeddings - 2  # positions start at pad + 1 = 2


#: Conneau et al. 2020 (arXiv:1911.02116), Appendix B, Table 7, #params: XLM-R Base 270M, XLM-R (Large) 550M. The
#: widths are those of the released FacebookAI/xlm-roberta-base and -large files (250,002 tokens, 514 positions, one
#: token type). The table's millions are XLMRobertaModel's exact counts cut to whole tens of millions (278.0M and
#: 559.9M), not rounded.
PUBLISHED = {
    "xlm-roberta-base": (dict(XLMR, vocab_size=250002, max_positions=514), 270e6),
    "xlm-roberta-large": (
        dict(XLMR, vocab_size=250002, max_positions=514, d_model=1024, n_layers=24, n_heads=16, d_ff=4096),
        550e6,
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_shapes(T, host, model_id):
    shape, printed = PUBLISHED[model_id]
    assert_head_class_matches(T, host, "bert", "XLMRobertaModel", shape, (16,))
    assert count(**shape).params // 10_000_000 * 10_000_000 == printed


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(XLMR, vocab_size=301, d_model=64, n_layers=3, n_heads=4, d_ff=96, max_positions=40, head=head)
    config |= dict(num_labels=2 if head == "question_answering" else 3, causal=head == "causal_lm")
    assert_head_class_matches(T, host, "bert", CLASSES[head], config, (3, 32))


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    head = rng.choice(list(CLASSES))
    pad = rng.randint(0, 3)
    return dict(
        family="xlm-roberta",
        vocab_size=rng.randint(8, 300),
        d_model=n_heads * rng.randint(1, 12),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.randint(1, 80),
        max_positions=pad + 1 + rng.randint(16, 40),
        position_offset=pad + 1,
        type_vocab_size=rng.randint(1, 3),
        activation=rng.choice(["gelu", "relu", "silu", "gelu_new"]),
        tie_embeddings=rng.random() < 0.6,
        causal=head == "causal_lm" or (head != "causal_lm" and rng.random() < 0.2),
        head=head,
        num_labels=2 if head == "question_answering" else rng.randint(1, 5),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(10)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "bert", config)


@pytest.mark.reference
def test_the_longest_input_is_the_positions_after_the_padding_index(T, host):
    """A 40-row position table with padding index 1 takes 38 tokens: archzoo's limit, and transformers' too."""
    torch = pytest.importorskip("torch")
    report = count(**XLMR, vocab_size=50, d_model=16, n_layers=1, n_heads=2, d_ff=8, max_positions=40)
    assert report.seq_len == 38
    ref = host.architecture("bert").reference(report.config)
    model = build_model("XLMRobertaModel", T.XLMRobertaConfig(**ref.kwargs), device="cpu")
    with torch.no_grad():
        model(input_ids=torch.full((1, 38), 5))
        with pytest.raises((IndexError, RuntimeError)):  # the position (and token type) lookup past the table
            model(input_ids=torch.full((1, 39), 5))
    with pytest.raises(ConfigError):
        count(39, **XLMR, vocab_size=50, d_model=16, n_layers=1, n_heads=2, d_ff=8, max_positions=40)


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(family="xlm-roberta"), r"family: 'xlm-roberta' counts positions from the padding index plus one"),
        (dict(XLMR, head="pretraining"), r"family: 'xlm-roberta' has no class for head 'pretraining'"),
        (dict(XLMR, type_vocab_size=0), r"family: 'xlm-roberta' does not build this configuration"),
        (dict(XLMR, head="discriminator"), r"family: 'xlm-roberta' has no class for head 'discriminator'"),
        (dict(head="discriminator"), r"head: 'discriminator' is ELECTRA's replaced-token detection head"),
        (dict(XLMR, head="question_answering", num_labels=3), r"num_labels: head 'question_answering'"),
    ],
)
def test_what_no_xlm_roberta_class_builds_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(**config)


# ---- Hugging Face config.json ------------------------------------------------------------------------------


def test_multiple_choice_is_refused_saying_why(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "xlm-roberta", "pad_token_id": 1})
    with pytest.raises(HFConfigError, match=r"one sequence per answer choice"):
        load_hf_config(path, host, hf_class="XLMRobertaForMultipleChoice")


@pytest.mark.reference
@pytest.mark.parametrize("model_class", CLASSES.values())
def test_a_released_file_as_every_class(T, host, tmp_path, model_class):
    """The keys and values of FacebookAI/xlm-roberta-base's config.json (legacy output_past and
    position_embedding_type included), shrunk to a small vocabulary, as every class archzoo counts."""
    data = {
        "architectures": ["XLMRobertaForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 48,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 34,
        "model_type": "xlm-roberta",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "output_past": True,
        "pad_token_id": 1,
        "position_embedding_type": "absolute",
        "type_vocab_size": 1,
        "vocab_size": 250,
    }
    assert_config_json_matches(T, host, write_json(tmp_path, data), [model_class], 32)


# ---- XLM-RoBERTa XL and XXL: pre-LN layers ------------------------------------------------------------------

XL_CLASSES = {head: name.replace("XLMRoberta", "XLMRobertaXL") for head, name in CLASSES.items()}
XL = dict(XLMR, family="xlm-roberta-xl")


def test_xl_layers_are_pre_ln(host):
    """A LayerNorm before attention and before the feed-forward, one after the stack, none on the embeddings; as
    many LayerNorms as XLM-RoBERTa's, so the same parameters in another place."""
    config = dict(vocab_size=50, d_model=16, n_layers=2, n_heads=2, d_ff=8, max_positions=20)
    xl, base = count(**XL, **config), count(**XLMR, **config)
    paths = [path for path, _, _ in xl.root.walk()]
    assert "bert.embeddings.norm" not in paths and "bert.final_norm" in paths
    layer = [
        path.rsplit(".", 1)[-1] for path in paths if path.startswith("bert.layers.layer.") and path.count(".") == 3
    ]
    assert layer == ["attention_norm", "attention", "feed_forward_norm", "feed_forward"]
    assert xl.params == base.params


@pytest.mark.reference
def test_a_file_of_the_xl_defaults_is_xlm_roberta_xl_model(T, host, tmp_path):
    """XLMRobertaXLConfig()'s defaults are XLM-R XL's: a file naming only the model type, counted exactly."""
    reading = load_hf_config(write_json(tmp_path, {"model_type": "xlm-roberta-xl"}), host)
    assert reading.model_class == "XLMRobertaXLModel"
    model = build_model("XLMRobertaXLModel", T.XLMRobertaXLConfig())
    report = make_report(reading.architecture, reading.config, 16)
    assert (report.params, report.flops) == (n_params(model), forward_flops(model, 16))


#: Goyal et al. 2021, "Larger-Scale Transformers for Multilingual Masked Language Modeling" (arXiv:2105.00572),
#: abstract and Section 1: XLM-R XL and XXL have 3.5B and 10.7B parameters; XL: 36 layers 2,560 wide, 32 heads,
#: feed-forward 10,240 (XLMRobertaXLConfig's defaults); XXL: 48 layers 4,096 wide, 32 heads, feed-forward 16,384;
#: both a 250,880-row vocabulary and 514 positions. XLMRobertaXLModel's counts round to the printed figures.
XL_PUBLISHED = {
    "xlm-roberta-xl": (dict(XL, vocab_size=250880, max_positions=514, d_model=2560, n_layers=36, n_heads=32), 3.5e9),
    "xlm-roberta-xxl": (dict(XL, vocab_size=250880, max_positions=514, d_model=4096, n_layers=48, n_heads=32), 10.7e9),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", XL_PUBLISHED)
def test_xl_published_shapes(T, host, model_id):
    shape, printed = XL_PUBLISHED[model_id]
    shape = dict(shape, d_ff=4 * shape["d_model"])
    assert_head_class_matches(T, host, "bert", "XLMRobertaXLModel", shape, (8,))
    assert round(count(**shape).params / 1e8) * 1e8 == printed


@pytest.mark.reference
@pytest.mark.parametrize("head", XL_CLASSES)
def test_xl_every_head_class(T, host, head):
    config = dict(XL, vocab_size=301, d_model=64, n_layers=3, n_heads=4, d_ff=96, max_positions=40, head=head)
    config |= dict(num_labels=2 if head == "question_answering" else 3, causal=head == "causal_lm")
    assert_head_class_matches(T, host, "bert", XL_CLASSES[head], config, (3, 32))


XL_CONFIGS = [dict(_random_config(random.Random(100 + seed)), family="xlm-roberta-xl") for seed in range(6)]


@pytest.mark.reference
@pytest.mark.parametrize("config", XL_CONFIGS, ids=[f"seed{100 + i}" for i in range(len(XL_CONFIGS))])
def test_xl_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "bert", config)


def test_xl_multiple_choice_is_refused_saying_why(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "xlm-roberta-xl", "hidden_size": 64, "num_attention_heads": 4})
    with pytest.raises(HFConfigError, match=r"one sequence per answer choice"):
        load_hf_config(path, host, hf_class="XLMRobertaXLForMultipleChoice")
