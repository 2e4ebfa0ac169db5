"""Every registry entry, tested the moment it is added: it loads, its reference builds to the same count,
and a published figure it quotes is either matched to its rounding or reconciled with a reason.

The parameter lists are read from the registry itself at collection time (as timm parametrizes over
``list_models()``), so a new YAML file needs no change here. The expected counts come from the reference
implementations the entries name (torch, transformers), or, for timm, from the count pinned in the entry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archzoo.registry import GAP_LIMIT, REASONS
from archzoo.testing import build_model
from shipped import shipped_registry

pytestmark = pytest.mark.sweep

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = shipped_registry()
ENTRIES = list(REGISTRY)

ALL_IDS = [e.id for e in ENTRIES]
BUILDABLE_IDS = [
    e.id for e in ENTRIES if e.spec.reference is not None and e.spec.reference.library in ("torch", "transformers")
]
TIMM_IDS = [e.id for e in ENTRIES if e.spec.reference is not None and e.spec.reference.library == "timm"]
PUBLISHED_IDS = [e.id for e in ENTRIES if e.spec.published is not None]

MIN_ENTRIES = 40
BUILT_IN_ARCHITECTURES = {"transformer", "bert", "vit", "gpt", "llama", "moe", "t5", "bart", "opt", "bloom"}


def _count_on_meta(reference) -> int:
    """Build the named module on the meta device (no memory, no weights) and count what PyTorch reports."""
    pytest.importorskip("torch")
    if reference.library == "transformers":
        pytest.importorskip("transformers")
        assert reference.config_class, "a transformers reference needs config_class to build its configuration"
    else:
        assert not reference.model_kwargs, "model_kwargs only apply to transformers references; put them in kwargs"
    return sum(p.numel() for p in build_model(reference.to_reference()).parameters())


# ---- the registry as a whole ----------------------------------------------------------------------


def test_registry_loads_without_problems():
    assert not REGISTRY.problems, "\n".join(str(p) for p in REGISTRY.problems)


def test_registry_loads_without_warnings():
    assert not REGISTRY.warnings, "\n".join(str(w) for w in REGISTRY.warnings)


def test_registry_covers_every_built_in_architecture():
    assert len(REGISTRY) >= MIN_ENTRIES, f"{len(REGISTRY)} entries; the registry should hold at least {MIN_ENTRIES}"
    present = {e.spec.architecture for e in ENTRIES}
    assert present >= BUILT_IN_ARCHITECTURES, f"no entry for {sorted(BUILT_IN_ARCHITECTURES - present)}"


# ---- each entry -----------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", ALL_IDS)
def test_entry_is_valid(model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.path.parent.name == entry.spec.architecture, (
        f"{entry.path}: an entry lives in registry/<architecture>/, here registry/{entry.spec.architecture}/"
    )
    assert entry.params > 0
    fields = entry.architecture.config_model.model_fields
    restated = [
        k
        for k, v in entry.spec.config.items()
        if not fields[k].is_required() and fields[k].get_default(call_default_factory=True) == v
    ]
    assert not restated, f"{entry.path}: config restates defaults {restated}; list only the keys that differ"
    if entry.spec.reconciliation is not None:
        assert entry.spec.published is not None, f"{entry.path}: a reconciliation needs a published figure to explain"
        # one reconciliation explains both figures (`Entry.active_status`): the active one may be its reason
        active = f" and {entry.active_params:,} within {entry.spec.published.active_params}" * (
            entry.spec.published.active_params is not None
        )
        assert "reconciled" in (entry.status, entry.active_status), (
            f"{entry.path}: {entry.params:,} is within the rounding of {entry.spec.published.params}{active}; "
            "drop the reconciliation, there is no gap to explain"
        )


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
@pytest.mark.parametrize("model_id", BUILDABLE_IDS)
def test_reference_builds_to_the_computed_count(model_id):
    entry = REGISTRY.get_model(model_id)
    measured = _count_on_meta(entry.spec.reference)
    assert measured == entry.params, (
        f"{entry.spec.reference.target} counts {measured:,}, archzoo computes {entry.params:,} "
        f"({entry.params - measured:+,})"
    )


@pytest.mark.parametrize("model_id", TIMM_IDS)
def test_timm_reference_pins_the_computed_count(model_id):
    # timm is not installed where the tests run, so its count is pinned in the entry and checked here.
    reference = REGISTRY.get_model(model_id).spec.reference
    assert reference.measured is not None, "a timm reference must pin 'measured:' (timm cannot be built here)"
    assert reference.measured_with, "say which timm version measured the pinned count in 'measured_with:'"
    assert reference.measured == REGISTRY.get_model(model_id).params


@pytest.mark.parametrize("model_id", PUBLISHED_IDS)
def test_published_figure_is_matched_or_reconciled(model_id):
    entry = REGISTRY.get_model(model_id)
    assert entry.status in ("within-rounding", "reconciled"), (
        f"computed {entry.params:,} is outside the rounding of the published {entry.spec.published.params} "
        f"({entry.gap:+.2%}); add a reconciliation with one of: {', '.join(REASONS)}"
    )
    if abs(entry.gap) > GAP_LIMIT:
        assert entry.spec.reconciliation is not None and entry.spec.reconciliation.reason in REASONS
