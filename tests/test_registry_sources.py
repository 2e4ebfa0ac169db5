"""Registry entries whose count the per-entry reference build cannot check, checked here against transformers.

Two kinds. A T5-family checkpoint with an LM head of its own (T5 v1.1, Flan-T5, mT5, mT0, ByT5) has no
``reference:`` in its entry, because transformers 5.23 ties that head whenever the class is built from a
configuration; here the class is built from the entry's shape and the head is untied as ``from_pretrained``
leaves it when the checkpoint holds ``lm_head.weight``. And a model released as a finetune or a retraining of
another entry's shape (Flan-T5 of T5 v1.1, BLOOMZ of BLOOM, Pythia-deduped of Pythia ...) must count what
that entry counts, so that a typo in one of the two configurations cannot pass unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archzoo.testing import build_model
from shipped import shipped_registry

pytestmark = pytest.mark.sweep

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = shipped_registry()

#: T5-family entries with an untied LM head and no reference class the per-entry test can build
UNTIED_T5_IDS = [
    e.id
    for e in REGISTRY
    if e.spec.architecture == "t5" and e.spec.reference is None and e.spec.config.get("tie_embeddings") is False
]

#: (derived model, the entry whose shape its authors say it keeps)
SAME_SHAPE = [
    *[(f"flan-t5-{s}", f"t5-v1.1-{s}") for s in ("small", "base", "large", "xl", "xxl")],
    *[(f"mt0-{s}", f"mt5-{s}") for s in ("small", "base", "large", "xl", "xxl")],
    *[(f"bloomz-{s}", f"bloom-{s}") for s in ("560m", "1b1", "1b7", "3b", "7b1", "176b")],
    *[(f"pythia-{s}-deduped", f"pythia-{s}") for s in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")],
    *[(f"qwen2.5-coder-{s}", f"qwen2.5-{s}") for s in ("0.5b", "1.5b", "3b", "7b", "14b", "32b")],
    *[(f"smollm-{s}", f"smollm2-{s}") for s in ("135m", "360m", "1.7b")],
    ("bloomz-7b1-mt", "bloom-7b1"),
    ("bloomz-176b-mt", "bloom-176b"),
    ("mt0-xxl-mt", "mt5-xxl"),
    ("bloomz-7b1-p3", "bloom-7b1"),
    ("bloomz-176b-p3", "bloom-176b"),
    ("mt0-xxl-p3", "mt5-xxl"),
    ("opt-iml-30b", "opt-30b"),
    ("opt-iml-max-30b", "opt-30b"),
    ("opt-iml-175b", "opt-175b"),
    ("llama-3.3-70b", "llama-3.1-70b"),
    ("phi-3.5-mini", "phi-3-mini"),
    ("phi-3-mini-128k", "phi-3-mini"),
    ("phi-3-medium-128k", "phi-3-medium"),
    ("mathstral-7b", "mistral-7b-v0.3"),
    ("codestral-22b", "mistral-small-22b"),
    ("deit-base-patch16-384", "vit-base-patch16-384"),
    ("codebert-base", "roberta-base"),
    *[(t0, "t5-v1.1-xxl") for t0 in ("t0", "t0p", "t0pp", "t0-single-prompt", "t0-original-task-only")],
    ("t0-3b", "t5-v1.1-xl"),
    ("open-llama-7b", "llama-7b"),
    ("open-llama-13b", "llama-13b"),
    ("open-llama-3b-v2", "open-llama-3b"),
    ("open-llama-7b-v2", "open-llama-7b"),
]


def test_the_lists_name_entries_that_exist():
    missing = sorted({i for pair in SAME_SHAPE for i in pair} - {e.id for e in REGISTRY})
    assert not missing, f"no registry entry for {missing}"
    assert len(UNTIED_T5_IDS) >= 20, UNTIED_T5_IDS  # T5 v1.1, Flan-T5, mT5, mT0 and ByT5, five sizes each


@pytest.mark.parametrize(("derived", "base"), SAME_SHAPE, ids=[d for d, _ in SAME_SHAPE])
def test_a_derived_model_counts_what_its_base_counts(derived, base):
    derived_entry, base_entry = REGISTRY.get_model(derived), REGISTRY.get_model(base)
    assert derived_entry.spec.architecture == base_entry.spec.architecture
    assert derived_entry.params == base_entry.params, (
        f"{derived} counts {derived_entry.params:,}, {base} {base_entry.params:,}: the summaries say one shape"
    )


def _untied_t5_count(config: dict) -> int:
    """transformers' count of the checkpoint: T5ForConditionalGeneration built on the meta device from the
    entry's shape, with the LM head given a weight of its own (5.23 ties it to the shared embedding)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    activation = config.get("activation", "relu")
    kwargs = dict(
        vocab_size=config.get("vocab_size", 32128),
        d_model=config.get("d_model", 512),
        d_kv=config.get("d_kv", 64),
        d_ff=config.get("d_ff", 2048),
        num_layers=config.get("n_layers", 6),
        num_decoder_layers=config.get("n_decoder_layers") or config.get("n_layers", 6),
        num_heads=config.get("n_heads", 8),
        feed_forward_proj=("gated-gelu" if activation == "gelu_new" else f"gated-{activation}")
        if config.get("gated")
        else activation,
        tie_word_embeddings=False,
    )
    model = build_model(transformers.T5ForConditionalGeneration, transformers.T5Config(**kwargs))
    if model.lm_head.weight is model.shared.weight:  # empty_like of a meta tensor stays on the meta device
        model.lm_head.weight = torch.nn.Parameter(torch.empty_like(model.shared.weight))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.reference
@pytest.mark.parametrize("model_id", UNTIED_T5_IDS)
def test_an_untied_t5_checkpoint_counts_what_transformers_loads(model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.params == _untied_t5_count(entry.spec.config)
