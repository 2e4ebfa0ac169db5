"""The starcoder2 plugin against transformers: defaults, random small configurations over every option,
config.json files key by key, every head class, the KV cache.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Starcoder2 class transformers 5.23
builds (on the meta device, or on the CPU where values are needed), what
``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass of batch 1, or the elements
transformers' cache holds. The checks every decoder family makes are `family_checks.RotaryDecoderChecks'`, through
archzoo's kit for plugin authors (`archzoo.testing`); this module gives StarCoder2's facts and its own checks.
"""

from __future__ import annotations

import random

import pytest

from family_checks import DecoderFamily, RotaryDecoderChecks, assert_head_class_matches, changed_settings

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "Starcoder2ForCausalLM",
    "none": "Starcoder2Model",
    "sequence_classification": "Starcoder2ForSequenceClassification",
    "token_classification": "Starcoder2ForTokenClassification",
}


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4, 6])
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in (1, 2, 3, n_heads) if n_heads % k == 0]),
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["gelu_pytorch_tanh", "relu", "silu", "gelu_new"]),
        bias=rng.random() < 0.6,
        tie_embeddings=rng.random() < 0.6,
        head=rng.choice(list(CLASSES)),
        num_labels=rng.randint(1, 5),
    )
    if rng.random() < 0.3:
        config["d_head"] = 2 * rng.randint(1, 8)
    return config


#: one value per key the table reads, each changed alone (tests/test_hf_sweep.py reads it too)
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=1,
    num_attention_heads=8,
    num_key_value_heads=1,
    head_dim=10,
    hidden_act="relu",
    max_position_embeddings=64,
    sliding_window=3,
    use_bias=False,
    tie_word_embeddings=False,
    pad_token_id=3,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
    num_labels=5,
)


class TestStarcoder2(RotaryDecoderChecks):
    FAMILY = DecoderFamily(
        architecture="starcoder2",
        classes=CLASSES,
        config_class="Starcoder2Config",
        modeling="transformers.models.starcoder2.modeling_starcoder2",
        configs=[_random_config(random.Random(seed)) for seed in range(12)],
        # no sliding window: the cache holds every token
        kv_cache=[dict(vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=16)],
        refused=[
            (dict(n_heads=8, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3"),
            (dict(d_model=48, n_heads=16, n_kv_heads=2), r"n_heads: rotary positions turn pairs of channels"),
            # the width comes from d_model too: the error names both keys (a --set of d_model must see its key)
            (dict(d_model=24, n_heads=24, n_kv_heads=2), r"got 1 \(d_model 24 / n_heads 24\)"),
            (dict(d_model=4, n_heads=8, n_kv_heads=2), r"n_heads: d_model 4 leaves each of 8 heads 0 wide"),
            (dict(activation="prelu"), r"activation: "),
        ],
        base=dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        | dict(intermediate_size=40),
        sweep=SWEEP,
        ignored=dict(
            attention_dropout=0.3,
            residual_dropout=0.2,
            embedding_dropout=0.1,
            classifier_dropout=0.4,
            **changed_settings("norm_epsilon"),
        ),
    )


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(T, host, head):
    config = dict(vocab_size=301, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_ff=96, head=head, num_labels=3)
    assert_head_class_matches(T, host, "starcoder2", CLASSES[head], config)
