"""The stablelm plugin against transformers: defaults (StableLM-3B-4E1T), random small configurations over every
option, config.json files key by key, every head class, the KV cache.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the StableLm class transformers 5.23 builds
(on the meta device, or on the CPU where values are needed), what ``torch.utils.flop_counter.FlopCounterMode``
reports for one eager forward pass of batch 1, or the elements transformers' cache holds. The checks every decoder
family makes are `family_checks.RotaryDecoderChecks'`; this module gives StableLM's facts and its own checks.
"""

from __future__ import annotations

import random

import pytest

from archzoo.hf_config import load_hf_config
from family_checks import DecoderFamily, RotaryDecoderChecks, changed_settings, counter, write_json

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "StableLmForCausalLM",
    "none": "StableLmModel",
    "sequence_classification": "StableLmForSequenceClassification",
    "token_classification": "StableLmForTokenClassification",
}


count = counter("stablelm")

BASE = dict(vocab_size=97, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
BASE |= dict(intermediate_size=40)


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4])
    return dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 8 * rng.randint(1, 3),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        n_kv_heads=rng.choice([k for k in (1, 2, n_heads) if n_heads % k == 0]),
        d_ff=rng.randint(1, 80),
        activation=rng.choice(["silu", "gelu", "relu"]),
        qkv_bias=rng.random() < 0.5,
        qk_norm=rng.random() < 0.5,
        parallel_residual=rng.random() < 0.5,
        rotary_fraction=rng.choice([0.25, 0.5, 1.0]),
        tie_embeddings=rng.random() < 0.4,
        head=rng.choice(list(CLASSES)),
        num_labels=rng.randint(1, 5),
    )


#: one value per key the table reads, each changed alone (tests/test_hf_sweep.py reads it too)
SWEEP = dict(
    vocab_size=101,
    intermediate_size=33,
    hidden_size=96,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    hidden_act="relu",
    max_position_embeddings=64,
    tie_word_embeddings=True,
    use_qkv_bias=True,
    qk_layernorm=True,
    use_parallel_residual=True,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0, "partial_rotary_factor": 0.5},
    pad_token_id=3,
    num_labels=5,
)


class TestStableLm(RotaryDecoderChecks):
    FAMILY = DecoderFamily(
        architecture="stablelm",
        classes=CLASSES,
        config_class="StableLmConfig",
        modeling="transformers.models.stablelm.modeling_stablelm",
        configs=[_random_config(random.Random(seed)) for seed in range(12)],
        kv_cache=[dict(vocab_size=50, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=16, qk_norm=True)],
        refused=[
            (dict(n_heads=8, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3"),
            (
                dict(d_model=48, n_heads=4, rotary_fraction=0.25),
                r"rotary_fraction: 0.25 of a 12-wide head \(d_model 48 / n_heads 4\) is 3 channels",
            ),
            (dict(d_model=100, n_heads=16), r"n_heads: d_model 100 is not divisible by n_heads 16"),
            (dict(activation="prelu"), r"activation: "),
        ],
        base=BASE,
        sweep=SWEEP,
        ignored=dict(
            hidden_dropout=0.1,
            classifier_dropout=0.2,
            attention_dropout=0.3,
            **changed_settings(),
        ),
    )


def test_the_model_cards_exact_count():
    """The StableLM-3B-4E1T model card's 'Model Architecture' table (stabilityai/stablelm-3b-4e1t) prints
    Parameters 2,795,443,200 for Hidden Size 2560, Layers 32, Heads 32, Sequence Length 4096."""
    assert count().params == 2_795_443_200


def test_qk_norm_weights_have_a_row_per_head(host):
    """qk_layernorm's LayerNorms, one per head, hold d_h weights each: h d_h for queries, h_kv d_h for keys."""
    base = count(vocab_size=50, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=16)
    normed = count(vocab_size=50, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=16, qk_norm=True)
    assert normed.params - base.params == 4 * 8 + 2 * 8


@pytest.mark.reference
def test_a_top_level_partial_rotary_factor_is_read(T, host, tmp_path):
    """The released files write the rotary fraction at the top level (partial_rotary_factor: 0.25); loading folds it
    into rope_parameters."""
    path = write_json(tmp_path, {"model_type": "stablelm", **BASE, "partial_rotary_factor": 0.5})
    expected = T.AutoConfig.from_pretrained(str(path)).rope_parameters["partial_rotary_factor"]
    assert load_hf_config(path, host).config.rotary_fraction == expected
