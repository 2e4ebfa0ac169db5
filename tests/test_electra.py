"""ELECTRA in the bert plugin against transformers: the defaults, the released discriminators' shapes, every head
class, the factorised embedding and its absence, random small configurations, config.json files, and what is refused.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Electra class transformers 5.23 builds
on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of batch 1,
or a figure Clark et al. printed (named beside it). The key-by-key config.json sweep of ``electra`` is
tests/test_hf_sweep.py's (BASES and SWEEPS).
"""

from __future__ import annotations

import random

import pytest

from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model, check_plugin
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
    "none": "ElectraModel",
    "discriminator": "ElectraForPreTraining",
    "mlm": "ElectraForMaskedLM",
    "causal_lm": "ElectraForCausalLM",
    "sequence_classification": "ElectraForSequenceClassification",
    "token_classification": "ElectraForTokenClassification",
    "question_answering": "ElectraForQuestionAnswering",
}
#: ElectraConfig's defaults, ELECTRA-Small's discriminator (google-research/electra: 12 layers, hidden 256,
#: embeddings 128, heads hidden / 64, feed-forward 4 x hidden), in archzoo's keys
SMALL = dict(family="electra", d_model=256, n_heads=4, d_ff=1024, embedding_size=128)


count = counter("bert")


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks of the bert plugin, with its two new model types' tables."""
    assert check_plugin("bert") == []


@pytest.mark.reference
@pytest.mark.parametrize("head", ["none", "discriminator"])
def test_defaults_are_electra_config_s(T, host, tmp_path, head):
    """ElectraConfig() (ELECTRA-Small) as a config.json naming only the model type, and as archzoo's keys."""
    model_class = CLASSES[head]
    path = write_json(tmp_path, {"model_type": "electra"})
    reading = load_hf_config(path, host, hf_class=model_class)
    model = build_model(model_class, T.ElectraConfig())
    for n in (1, 64):
        report = make_report(reading.architecture, reading.config, n)
        assert (report.params, report.flops) == (n_params(model), forward_flops(model, n)), n
    assert count(64, **SMALL, head=head).flops == forward_flops(model, 64)


#: google-research/electra README.md release table (Clark et al. 2020, arXiv:2003.10555), 'Params' column:
#: ELECTRA-Small 14M, ELECTRA-Base 110M, ELECTRA-Large 335M; the checkpoints are the discriminators, so counted as
#: ElectraForPreTraining. Small's 13,549,057 and Large's 335,142,913 round to the printed figures; Base's 109,483,009
#: is BERT-Base's printed 110M, which rounds BertModel's 109,482,240 up (registry/bert/electra-base.yaml).
PUBLISHED = {
    "electra-small": (SMALL, 14e6, 0.5e6),
    "electra-base": (dict(family="electra"), 110e6, 0.6e6),
    "electra-large": (dict(family="electra", d_model=1024, n_layers=24, n_heads=16, d_ff=4096), 335e6, 0.5e6),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_discriminators(T, host, model_id):
    shape, printed, within = PUBLISHED[model_id]
    assert_head_class_matches(T, host, "bert", "ElectraForPreTraining", dict(shape, head="discriminator"), (16,))
    assert abs(count(**shape, head="discriminator").params - printed) < within


@pytest.mark.reference
@pytest.mark.parametrize("embedding_size", [32, 64, None], ids=["factorised", "E-equals-H", "unset"])
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head, embedding_size):
    """Each class with embeddings narrower than the layers (embeddings_project), as wide, and left unset."""
    config = dict(family="electra", vocab_size=301, d_model=64, n_layers=3, n_heads=4, d_ff=96, max_positions=40)
    config |= dict(head=head, embedding_size=embedding_size, causal=head == "causal_lm")
    config["num_labels"] = 2 if head == "question_answering" else 3
    assert_head_class_matches(T, host, "bert", CLASSES[head], config, (3, 32))
    ref = host.architecture("bert").reference(count(**config).config)
    model = build_model(CLASSES[head], T.ElectraConfig(**ref.kwargs))
    assert hasattr(model, "electra") or head == "none"
    electra = model if head == "none" else model.electra
    assert hasattr(electra, "embeddings_project") == (embedding_size == 32)


def test_the_projection_is_a_block_only_when_embeddings_are_narrower(host):
    def blocks(**config):
        report = count(family="electra", d_model=64, n_heads=4, d_ff=96, **config)
        return {path for path, _, _ in report.root.walk()}

    assert "bert.embedding_projection" in blocks(embedding_size=32)
    assert "bert.embedding_projection" not in blocks(embedding_size=64)
    assert "bert.pooler" not in blocks(embedding_size=32) | blocks()


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    head = rng.choice(list(CLASSES))
    d_model = n_heads * rng.randint(1, 12)
    return dict(
        family="electra",
        vocab_size=rng.randint(8, 300),
        d_model=d_model,
        embedding_size=rng.choice([None, d_model, rng.randint(1, 40)]),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.randint(1, 80),
        max_positions=rng.randint(16, 40),
        type_vocab_size=rng.randint(1, 3),
        activation=rng.choice(["gelu", "relu", "silu", "gelu_new"]),
        tie_embeddings=rng.random() < 0.6,
        causal=head == "causal_lm" or rng.random() < 0.2,
        head=head,
        num_labels=2 if head == "question_answering" else rng.randint(1, 5),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(12)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "bert", config)


@pytest.mark.reference
def test_the_generator_is_tied_and_its_bias_is_its_own(T, host):
    """ElectraForMaskedLM ties generator_lm_head's weight to the word embeddings and keeps its bias; untied, the head
    has a weight of its own and no further bias (RoBERTa's and BERT's heads keep a separate one)."""
    config = dict(SMALL, vocab_size=97, n_layers=1, head="mlm")
    tied, untied = count(**config), count(**config, tie_embeddings=False)
    assert untied.params - tied.params == 97 * 128
    ref = host.architecture("bert").reference(untied.config)
    assert n_params(build_model("ElectraForMaskedLM", T.ElectraConfig(**ref.kwargs))) == untied.params


@pytest.mark.reference
def test_generation_reads_the_generator_head_on_the_last_position_only(T, host):
    """ElectraForCausalLM slices to logits_to_keep before its head: the prefill FLOPs are a forward pass whose
    generator head runs on one position, as transformers' generate computes it (logits_to_keep=1)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    config = dict(SMALL, vocab_size=97, n_layers=2, d_model=32, n_heads=2, d_ff=40, embedding_size=16)
    config |= dict(head="causal_lm", causal=True, max_positions=40)
    report = count(12, **config)
    ref = host.architecture("bert").reference(report.config)
    model = build_model("ElectraForCausalLM", T.ElectraConfig(**ref.kwargs))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=torch.zeros(1, 12, dtype=torch.long, device="meta"), logits_to_keep=1)
    assert report.prefill_flops == counter.get_total_flops()


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(SMALL, shared_layers=True), r"family: 'electra' shares no layers"),
        (dict(SMALL, type_vocab_size=0), r"family: 'electra' embeds token types"),
        (dict(SMALL, position_offset=2), r"family: 'electra' counts positions from 0"),
        (dict(SMALL, pooler=True), r"family: 'electra' has no pooler"),
        (dict(SMALL, head="pretraining"), r"family: 'electra' has no head 'pretraining'"),
        (dict(SMALL, head="sequence_classification", classifier_dense=False), r"dense layer of its own"),
        (dict(SMALL, d_model=250), r"n_heads: d_model 250 is not divisible by n_heads 4"),
        (dict(SMALL, head="question_answering", num_labels=3), r"num_labels: head 'question_answering'"),
    ],
)
def test_what_no_electra_class_builds_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(**config)


@pytest.mark.reference
def test_heads_that_do_not_divide_the_width_fail_in_transformers_too(T, host, tmp_path):
    """ElectraConfig always has embedding_size, which switches off the attention's divisibility check: the class
    builds, with 4 heads of 62 channels in a 250-wide layer, and its forward pass then fails; archzoo refuses."""
    torch = pytest.importorskip("torch")
    model = build_model("ElectraModel", T.ElectraConfig(hidden_size=250, num_hidden_layers=1), device="cpu")
    with torch.no_grad(), pytest.raises(RuntimeError):
        model(input_ids=torch.zeros(1, 4, dtype=torch.long))
    path = write_json(tmp_path, {"model_type": "electra", "hidden_size": 250, "num_hidden_layers": 1})
    with pytest.raises(HFConfigError, match=r"not divisible"):
        load_hf_config(path, host)


# ---- Hugging Face config.json ------------------------------------------------------------------------------


@pytest.mark.reference
def test_a_null_embedding_size_is_refused_as_transformers_refuses_it(T, host, tmp_path):
    """ALBERT's and BERT's null embedding_size means the hidden width; ElectraConfig's field is an int, and
    from_pretrained refuses the file, so archzoo must not count it."""
    path = write_json(tmp_path, {"model_type": "electra", "embedding_size": None})
    with pytest.raises(Exception, match="embedding_size"):
        T.AutoConfig.from_pretrained(str(path))
    with pytest.raises(HFConfigError, match=r"embedding_size: null"):
        load_hf_config(path, host)


def test_multiple_choice_is_refused_saying_why(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "electra"})
    with pytest.raises(HFConfigError, match=r"one sequence per answer choice"):
        load_hf_config(path, host, hf_class="ElectraForMultipleChoice")


@pytest.mark.reference
def test_the_sequence_summary_keys_change_no_counted_class(T, host, tmp_path):
    """summary_* feed ElectraForMultipleChoice's sequence summary only, the class archzoo refuses: set otherwise
    (the keys ElectraConfig lacks too), every other class counts as before, in transformers and in archzoo (each
    file's figures are transformers', and archzoo's are the same for both: so transformers' are too)."""
    summary = dict(summary_type="mean", summary_use_proj=False, summary_activation="tanh", summary_last_dropout=0.3)
    summary |= dict(summary_proj_to_labels=True, summary_first_dropout=0.2)
    small = dict(vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    small |= dict(intermediate_size=40, max_position_embeddings=24)
    plain = write_json(tmp_path, {"model_type": "electra", **small}, "plain.json")
    changed = write_json(tmp_path, {"model_type": "electra", **small, **summary}, "changed.json")
    assert_config_json_matches(T, host, plain, CLASSES.values())
    assert_config_json_matches(T, host, changed, CLASSES.values())
    for model_class in CLASSES.values():
        figures = []
        for path in (plain, changed):
            reading = load_hf_config(path, host, hf_class=model_class)
            report = make_report(reading.architecture, reading.config, 9)
            figures.append((report.params, report.flops))
        assert figures[0] == figures[1], model_class


@pytest.mark.reference
@pytest.mark.parametrize("model_class", CLASSES.values())
def test_a_released_file_as_every_class(T, host, tmp_path, model_class):
    """The keys and values of google/electra-small-discriminator's config.json, shrunk to a small vocabulary, as
    every class archzoo counts."""
    data = {
        "architectures": ["ElectraForPreTraining"],
        "attention_probs_dropout_prob": 0.1,
        "embedding_size": 32,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 96,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 40,
        "model_type": "electra",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "pad_token_id": 0,
        "type_vocab_size": 2,
        "vocab_size": 300,
    }
    assert_config_json_matches(T, host, write_json(tmp_path, data), [model_class], 32)
