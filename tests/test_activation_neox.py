"""The neox plugin's activation formulas (archzoo_neox.activation) against what autograd saves for backward in
transformers' GPT-NeoX, GPT-J and Phi classes (archzoo.memory.measure_activations), the gap to Korthikanti et al.'s
layer, and the configurations refused with their reason."""

from __future__ import annotations

import random

import pytest

from archzoo import memory
from archzoo.saved_tensors import UnsupportedActivationMemory
from archzoo.testing import assert_activation_memory_matches
from family_checks import activation_cases, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: the activations each random configuration draws from: what the formula knows (archzoo.decoder_saves)
ACTIVATIONS = ["gelu", "gelu_new", "relu", "silu", "gelu_pytorch_tanh", "tanh", "quick_gelu"]


def _neox(seed: int) -> dict:
    """A small random GPT-NeoX: sequential residual (the parallel one is refused), a quarter, half, all or none
    of each head rotary, biases or none, its feed-forward width and activation, and each head class but the
    sequence classifier (refused)."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        d_ff=rng.choice([24, 40]), parallel_residual=False, rotary_fraction=rng.choice([0.0, 0.25, 0.5, 1.0]),
        attention_bias=rng.random() < 0.5, activation=rng.choice(ACTIVATIONS),
        tie_embeddings=rng.random() < 0.3, head=rng.choice(["lm", "none", "token_classification", "question_answering"]),
    )  # fmt: skip


def _gptj(seed: int) -> dict:
    """A small random GPT-J: rotary on 2 channels up to the whole head, its feed-forward width (4 d by default)
    and activation, the LM head, the bare model or the question-answering head."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8, n_layers=rng.choice([1, 2, 3]), n_heads=heads,
        d_ff=rng.choice([None, 24]), rotary_dim=rng.choice([2, 4, 8]), max_positions=64,
        activation=rng.choice(ACTIVATIONS), head=rng.choice(["lm", "none", "question_answering"]),
    )  # fmt: skip


def _phi(seed: int) -> dict:
    """A small random Phi: grouped, multi-query or multi-head keys and values, per-head QK LayerNorms or none,
    a quarter, half or all of each head rotary, heads that do not divide the width, its activation, and the LM
    head, the bare model or the token classifier."""
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    return dict(
        vocab_size=rng.choice([64, 97]), d_model=heads * 8 + rng.choice([0, 1]), n_layers=rng.choice([1, 2, 3]),
        n_heads=heads, n_kv_heads=rng.choice([1, heads // 2, heads]), d_ff=rng.choice([24, 40]),
        qk_norm=rng.random() < 0.5, rotary_fraction=rng.choice([0.25, 0.5, 1.0]), activation=rng.choice(ACTIVATIONS),
        head=rng.choice(["lm", "none", "token_classification"]),
    )  # fmt: skip


def _check_case(architecture: str, config: dict, case: tuple, base: str, layers: str = "layers") -> None:
    """`family_checks.assert_activation_case` for a family whose every head class but the bare model holds the
    layers under ``base`` (family_checks' helper places them there for the LM head only)."""
    seed, dtype, attention, recompute, device = case
    stack = ((layers,) if config["head"] == "none" else (f"{base}{layers}",)) if recompute else ()
    assert_activation_memory_matches(
        architecture, config, 5 + 4 * seed, dtype=dtype, attention=attention, recompute=stack, device=device
    )


@pytest.mark.parametrize("case", activation_cases())
def test_neox_activation_formula_is_what_autograd_saves(case):
    """In total and block by block, at a length that changes with the case."""
    _check_case("neox", _neox(case[0]), case, "gpt_neox.")


@pytest.mark.parametrize("case", activation_cases())
def test_gptj_activation_formula_is_what_autograd_saves(case):
    _check_case("gptj", _gptj(case[0]), case, "transformer.", "h")


@pytest.mark.parametrize("case", activation_cases())
def test_phi_activation_formula_is_what_autograd_saves(case):
    _check_case("phi", _phi(case[0]), case, "model.")
