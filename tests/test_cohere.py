"""The cohere plugin against transformers: defaults (Command R), random small configurations over every option,
config.json files key by key, both classes, the KV cache.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Cohere class transformers 5.23 builds
(on the meta device, or on the CPU where values are needed), what ``torch.utils.flop_counter.FlopCounterMode``
reports for one eager forward pass of batch 1, or the elements transformers' cache holds. The checks every decoder
family makes are `family_checks.RotaryDecoderChecks`'; this module gives Cohere's facts and its own checks.
"""

from __future__ import annotations

import random

import pytest

from family_checks import DecoderFamily, RotaryDecoderChecks, changed_settings, counter

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {"lm": "CohereForCausalLM", "none": "CohereModel"}

count = counter("cohere")


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4, 6])
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in (1, 2, 3, n_heads) if n_heads % k == 0]),
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["silu", "gelu", "relu"]),
        attention_bias=rng.random() < 0.4,
        qk_norm=rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.6,
        head=rng.choice(list(CLASSES)),
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
    attention_bias=True,
    use_qk_norm=True,
    tie_word_embeddings=False,
    pad_token_id=3,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
)


class TestCohere(RotaryDecoderChecks):
    FAMILY = DecoderFamily(
        architecture="cohere",
        classes=CLASSES,
        config_class="CohereConfig",
        modeling="transformers.models.cohere.modeling_cohere",
        configs=[_random_config(random.Random(seed)) for seed in range(12)],
        kv_cache=[dict(vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=16, qk_norm=True)],
        refused=[
            (dict(n_heads=8, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3"),
            (dict(d_model=48, n_heads=16), r"n_heads: rotary positions turn pairs of channels"),
            # the width comes from d_model too: the error names both keys (a --set of d_model must see its key)
            (dict(d_model=24, n_heads=24, n_kv_heads=2), r"got 1 \(d_model 24 / n_heads 24\)"),
            (dict(activation="prelu"), r"activation: "),
        ],
        base=dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        | dict(intermediate_size=40, pad_token_id=0, bos_token_id=1, eos_token_id=2),
        sweep=SWEEP,
        ignored=dict(
            logit_scale=0.5,
            attention_dropout=0.3,
            **changed_settings(),
        ),
    )


def test_qk_norm_weights_have_a_row_per_head(host):
    """use_qk_norm's LayerNorms hold a weight row per head: h d_h for queries, h_kv d_h for keys, no biases."""
    base = count(vocab_size=50, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=16)
    normed = count(vocab_size=50, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=16, qk_norm=True)
    assert normed.params - base.params == 4 * 8 + 2 * 8
