"""The deberta plugin against transformers: DeBERTa-v3's published shapes, random small configurations over every
option (relative terms, shared or own position projections, buckets, embedding width, heads), config.json files key
by key, every head class.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the DebertaV2 class transformers 5.23
builds on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one forward pass of batch
1, or a figure the DeBERTa authors printed (named beside it). The plugin's own checks go through archzoo's kit for
plugin authors (`archzoo.testing`).
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
    assert_random_config_matches,
    counter,
    table_of,
    write_json,
)
from transformers_models import forward_flops, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "masked_lm": "DebertaV2ForMaskedLM",
    "none": "DebertaV2Model",
    "sequence_classification": "DebertaV2ForSequenceClassification",
    "token_classification": "DebertaV2ForTokenClassification",
    "question_answering": "DebertaV2ForQuestionAnswering",
}


count = counter("deberta")


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    assert check_plugin("deberta") == []


#: DeBERTa-v3's config.json keys (microsoft/deberta-v3-*), the same for every size but the shape below; the
#: shapes are the microsoft/DeBERTa README's 'Pre-trained Models' table (layers, hidden size) with the released
#: files' heads and feed-forward widths (d / 64 heads, 4 d). The README prints each size's backbone: the parameters
#: without the token table, in millions: 22, 44, 86 and 304.
_V3_KEYS = dict(
    model_type="deberta-v2",
    attention_probs_dropout_prob=0.1,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    initializer_range=0.02,
    layer_norm_eps=1e-7,
    max_position_embeddings=512,
    max_relative_positions=-1,
    norm_rel_ebd="layer_norm",
    pooler_dropout=0,
    pooler_hidden_act="gelu",
    pooler_hidden_size=None,
    pos_att_type=["p2c", "c2p"],
    position_biased_input=False,
    position_buckets=256,
    relative_attention=True,
    share_att_key=True,
    type_vocab_size=0,
    vocab_size=128100,
)
PUBLISHED = {
    "deberta-v3-xsmall": (
        dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536),
        22,
    ),
    "deberta-v3-small": (
        dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072),
        44,
    ),
    "deberta-v3-base": (
        dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
        86,
    ),
    "deberta-v3-large": (
        dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
        304,
    ),
}


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_shapes_equal_transformers(T, host, tmp_path, model_id):
    shape, backbone = PUBLISHED[model_id]
    data = {**_V3_KEYS, **shape}
    del data["pooler_hidden_size"]
    path = write_json(tmp_path, data)
    config = T.AutoConfig.from_pretrained(str(path))
    model = build_model("DebertaV2Model", config)
    reading = load_hf_config(path, host, hf_class="DebertaV2Model")
    report = make_report(reading.architecture, reading.config, 16)
    assert report.params == n_params(model)
    # the relative-position bucketing reads values, so FLOPs are counted on the CPU, with a small token table
    # (the encoder's FLOPs do not depend on it: looking a token up is no matmul)
    config.vocab_size = 1000
    small = build_model("DebertaV2Model", config, device="cpu")
    assert report.flops == forward_flops(small, 16)
    # the backbone within 2M of the README's figure (small's 44M is 1.1M above the count: see its registry entry)
    assert abs(report.non_embedding - backbone * 1_000_000) < 2_000_000


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(vocab_size=301, d_model=64, n_layers=2, n_heads=4, d_ff=96, position_buckets=8, head=head)
    config["num_labels"] = 2 if head == "question_answering" else 3
    report = count(**config)
    ref = host.architecture("deberta").reference(report.config)
    assert ref.target == f"transformers.{CLASSES[head]}"
    # on the CPU: the relative-position bucketing reads values
    model = build_model(CLASSES[head], T.DebertaV2Config(**ref.kwargs), device="cpu")
    assert report.params == n_params(model)
    for n in (3, 32):
        assert count(n, **config).flops == forward_flops(model, n), n


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    head = rng.choice(list(CLASSES))
    d = n_heads * 2 * rng.randint(1, 6)
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=d,
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu", "relu", "tanh"]),
        max_positions=rng.choice([16, 32, 64]),
        position_biased_input=rng.random() < 0.4,
        type_vocab_size=rng.choice([0, 0, 2]),
        relative_attention=rng.random() < 0.8,
        position_buckets=rng.choice([-1, 4, 8]),
        max_relative_positions=rng.choice([-1, 5, 12]),
        pos_att_type=rng.choice([(), ("c2p",), ("p2c",), ("p2c", "c2p")]),
        share_att_key=rng.random() < 0.5,
        norm_rel_embeddings=rng.random() < 0.6,
        legacy=rng.random() < 0.7,
        tie_embeddings=rng.random() < 0.7,
        head=head,
        num_labels=2 if head == "question_answering" else rng.randint(1, 5),
    )
    if rng.random() < 0.3 and config["legacy"]:
        config["embedding_size"] = rng.randint(1, 40)
    return config


CONFIGS = [_random_config(random.Random(seed)) for seed in range(16)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "deberta", config)


def test_the_position_projections_cost_the_same_at_every_length(host):
    """Projecting the 2k position rows costs 2 · 2k · d · d per projection and layer whatever N is (here k = 8,
    d = 64, two shared projections, one layer); the c2p and p2c products grow with N."""
    config = dict(vocab_size=50, d_model=64, n_layers=1, n_heads=4, d_ff=8, position_buckets=8, head="none")
    with_terms = {n: count(n, **config).flops for n in (4, 8)}
    without = {n: count(n, **config, pos_att_type=()).flops for n in (4, 8)}
    shared_projections = 2 * (2 * 2 * 8 * 64 * 64)
    for n in (4, 8):
        assert with_terms[n] - without[n] == 2 * (2 * n * 2 * 8 * 64)  # c2p and p2c products
    no_relative = count(4, **config, relative_attention=False).flops
    assert without[4] - no_relative == shared_projections


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(d_model=100, n_heads=16), r"n_heads: d_model 100 is not divisible by n_heads 16"),
        (dict(pooler_hidden_size=100), r"pooler_hidden_size: the pooler reads"),
        (dict(legacy=False, embedding_size=64), r"embedding_size: the non-legacy masked-LM head"),
        (dict(head="question_answering", num_labels=3), r"num_labels: DebertaV2ForQuestionAnswering splits"),
    ],
)
def test_what_transformers_cannot_run_is_refused(host, config, message):
    with pytest.raises(ConfigError, match=message):
        count(**config)


# ---- Hugging Face config.json: every key accounted for --------------------------------------------------


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, AutoModel's class, every model class counted or refused with a reason."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, "deberta-v2")
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(T.DebertaV2Config) if f.name not in common}
    assert dict(table.defaults) == fields
    assert table.base_class == MODEL_MAPPING_NAMES["deberta-v2"]
    module = importlib.import_module("transformers.models.deberta_v2.modeling_deberta_v2")
    classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) | set(table.unsupported_classes) == classes
    full = T.DebertaV2Config().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) - known == set()


BASE = dict(
    model_type="deberta-v2",
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=40,
    relative_attention=True,
    position_buckets=8,
    pos_att_type="p2c|c2p",
    share_att_key=True,
    norm_rel_ebd="layer_norm",
    position_biased_input=False,
)
#: one value per key the table reads, each changed alone
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    num_hidden_layers=1,
    num_attention_heads=8,
    intermediate_size=33,
    hidden_act="relu",
    max_position_embeddings=64,
    type_vocab_size=2,
    relative_attention=False,
    max_relative_positions=5,
    position_biased_input=True,
    pos_att_type=["c2p"],
    pooler_hidden_act="tanh",
    legacy=False,
    tie_word_embeddings=False,
    embedding_size=24,
    position_buckets=-1,
    share_att_key=False,
    norm_rel_ebd="none",
    pooler_hidden_size=48,
    attention_head_size=12,
    pad_token_id=3,
    num_labels=5,
)


@pytest.mark.reference
def test_the_sweep_covers_every_key(host):
    assert set(SWEEP) == set(table_of(host, "deberta-v2").read)


@pytest.mark.reference
@pytest.mark.parametrize("change", [{}, *({k: v} for k, v in SWEEP.items())], ids=["(base)", *SWEEP])
def test_each_key_against_transformers(T, host, tmp_path, change):
    path = write_json(tmp_path, {**BASE, **change})
    classes = ["DebertaV2Model", "DebertaV2ForMaskedLM"]
    if "num_labels" in change or "pooler" in next(iter(change), ""):
        classes = ["DebertaV2ForSequenceClassification", "DebertaV2ForTokenClassification"]
    assert_config_json_matches(T, host, path, classes, label=change)


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key archzoo ignores, changed at once: transformers' figures still equal archzoo's, for every class."""
    changed = dict(
        hidden_dropout_prob=0.2,
        attention_probs_dropout_prob=0.3,
        pooler_dropout=0.1,
        cls_dropout=0.4,
        initializer_range=0.5,
        layer_norm_eps=1e-3,
        bos_token_id=5,
        eos_token_id=6,
        conv_groups=2,
        conv_act="gelu",
    )
    assert set(changed) == set(table_of(host, "deberta-v2").ignored)
    path = write_json(tmp_path, {**BASE, **changed})
    assert_config_json_matches(T, host, path, CLASSES.values())


@pytest.mark.parametrize(
    "change, message",
    [
        ({"conv_kernel_size": 3}, r"conv_kernel_size"),
        ({"attention_head_size": 8}, r"attention_head_size: 4 heads of 8 make 32 channels"),
    ],
)
def test_what_archzoo_cannot_count_is_refused_saying_why(host, tmp_path, change, message):
    path = write_json(tmp_path, {**BASE, **change})
    with pytest.raises(HFConfigError, match=message):
        load_hf_config(path, host)
