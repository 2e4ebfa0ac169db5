"""Registry entries' published active parameters (a mixture of experts): read, reconciled like the total, shown.

The exact figures are transformers 5.23's: ``MixtralForCausalLM(MixtralConfig())`` on the meta device holds
46,702,792,704 parameters, of which 12,879,925,248 are active (the total less 6 of its 8 experts, each
3 x 4,096 x 14,336, in each of 32 layers; tests/test_moe.py rebuilds both from transformers). The published
figures are Jiang et al. 2024 (arXiv:2401.04088), abstract: 47B in all, 13B active.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archzoo.registry import entry_json_schema, load_registry
from archzoo.terminal import published_lines

MIXTRAL_TOTAL = 46_702_792_704
MIXTRAL_ACTIVE = 12_879_925_248

ENTRY = """\
architecture: moe
title: Mixtral 8x7B
summary: The default configuration of the moe architecture.
year: 2024
published:
  params: 47B
  active_params: {active}
  source:
    title: Mixtral of Experts
    authors: [Albert Q. Jiang, et al.]
    year: 2024
    venue: arXiv preprint
    arxiv: "2401.04088"
    locator: Abstract
{reconciliation}"""

RECONCILED = """\
reconciliation:
  reason: rounded
  note: The announcement rounds both figures loosely.
"""


def _load(tmp_path: Path, active: str, reconciliation: str = ""):
    path = tmp_path / "mixtral-test.yaml"
    path.write_text(ENTRY.format(active=active, reconciliation=reconciliation), encoding="utf-8")
    return path, load_registry([path])


def test_active_within_rounding(tmp_path):
    _, registry = _load(tmp_path, "13B")
    entry = registry.get_model("mixtral-test")
    assert not registry.problems and not registry.warnings
    assert entry.active_params == MIXTRAL_ACTIVE
    assert entry.spec.published.active_value == 13 * 10**9 and entry.spec.published.active_rounding == 5 * 10**8
    assert entry.active_gap == pytest.approx((MIXTRAL_ACTIVE - 13 * 10**9) / (13 * 10**9))
    assert (entry.status, entry.active_status) == ("within-rounding", "within-rounding")


def test_active_far_off_needs_a_reconciliation(tmp_path):
    path, registry = _load(tmp_path, "20B")
    assert [str(p) for p in registry.problems] == [
        f"{path}:7: published.active_params: computed active parameters 12,879,925,248 differ from published 20B "
        "by -35.6% (over 5%); add 'reconciliation:' with a reason (rounded, excludes-embeddings, includes-pooler, "
        "excludes-pooler, head-differs, tied-weights, vocab-differs, retracted-by-authors, typo-in-source, "
        "tool-omits-parameters) and a note, or correct the config"
    ]


def test_active_reconciled(tmp_path):
    _, registry = _load(tmp_path, "20B", RECONCILED)
    entry = registry.get_model("mixtral-test")
    assert not registry.problems
    assert entry.active_status == "reconciled"


def test_active_beyond_rounding_but_close_warns(tmp_path):
    path, registry = _load(tmp_path, "12.80B")  # 12.795B to 12.805B; computed 12.88B, +0.62%
    assert not registry.problems
    assert [str(w) for w in registry.warnings] == [
        f"{path}:7: published.active_params: computed active parameters 12,879,925,248 differ from published "
        "12.80B by +0.62%, more than its rounding; consider a 'reconciliation:' reason"
    ]
    assert registry.get_model("mixtral-test").active_status == "unexplained"


def test_active_is_read_like_the_total(tmp_path):
    path, registry = _load(tmp_path, "13 GB")
    assert len(registry.problems) == 1
    problem = str(registry.problems[0])
    assert problem.startswith(f"{path}:7: published.active_params: ") and "reads as a size in bytes" in problem


def test_dense_entries_have_no_active_figure():
    root = Path(__file__).resolve().parents[1]
    entry = load_registry([root / "registry" / "bert" / "bert-base-uncased.yaml"]).get_model("bert-base-uncased")
    figures = entry.figures()
    # transformers 5.23 BertModel(BertConfig()): 109,482,240, all of them used by every token
    assert figures["params"] == figures["active_params"] == 109_482_240
    assert (figures["published_active_value"], figures["active_gap"], figures["active_status"]) == (
        None,
        None,
        "unpublished",
    )
    assert not any(line.startswith("published active") for line in published_lines(entry))


def test_published_lines_show_total_and_active(tmp_path):
    _, registry = _load(tmp_path, "13B")
    lines = published_lines(registry.get_model("mixtral-test"))
    assert lines[:2] == [
        f"published: 47B (47,000,000,000); computed {MIXTRAL_TOTAL:,}, difference -297,207,296 (-0.63%): "
        "within-rounding",
        f"published active: 13B (13,000,000,000); computed {MIXTRAL_ACTIVE:,}, difference -120,074,752 (-0.92%): "
        "within-rounding",
    ]
    assert lines[2].startswith("  source: Albert Q. Jiang, et al., Mixtral of Experts, arXiv preprint arXiv:2401.04088")


def test_schema_describes_active_params():
    published = entry_json_schema()["$defs"]["Published"]["properties"]
    assert "active_params" in published and "params" in published
