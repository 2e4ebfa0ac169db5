"""The one record of a registry model (`archzoo.site.records`): the site's downloads and ``archzoo list``
say the same of every model, under the same names, and the CLI prints exactly the record.

Expected figures come from the reference implementations and the papers: BERT-base as
``transformers.BertModel`` (109,482,240 parameters, pooler included) against the 110M of Devlin et al.
2019, Section 3; GPT-2 small as ``transformers.GPT2LMHeadModel`` (124,439,808, LM head tied) against the
117M of Radford et al. 2019, Table 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from archzoo.cli import cli
from archzoo.registry import load_registry
from archzoo.registry_index import IndexRow
from archzoo.site import views
from archzoo.site.records import LIST_FIELDS, MODEL_FIELDS, list_record, model_record

REPO = Path(__file__).resolve().parents[1]

#: transformers 5.23 BertModel(BertConfig()) and GPT2LMHeadModel(GPT2Config()), sum(p.numel())
REFERENCE_PARAMS = {"bert-base-uncased": 109_482_240, "gpt2": 124_439_808}
#: as printed: Devlin et al. 2019 (BERT-base 110M), Radford et al. 2019 (GPT-2 117M)
PUBLISHED = {"bert-base-uncased": 110_000_000, "gpt2": 117_000_000}
#: one dense encoder, one decoder with a tied head, one mixture of experts (active parameters)
FILES = ("bert/bert-base-uncased.yaml", "gpt/gpt2.yaml", "moe/mixtral-8x7b.yaml")


@pytest.fixture(scope="module")
def entries():
    registry = load_registry([REPO / "registry" / name for name in FILES])
    assert not registry.problems, registry.problems
    return {model_id: registry.get_model(model_id) for model_id in ("bert-base-uncased", "gpt2", "mixtral-8x7b")}


@pytest.mark.parametrize("model_id", ["bert-base-uncased", "gpt2", "mixtral-8x7b"])
def test_the_cli_and_the_site_say_the_same_of_a_model_under_the_same_names(entries, model_id):
    entry = entries[model_id]
    listed = list_record(IndexRow.of(entry))
    shown = model_record(views.model_view(entry))
    assert tuple(listed) == LIST_FIELDS and tuple(shown) == MODEL_FIELDS
    shared = set(LIST_FIELDS) & set(MODEL_FIELDS)
    assert shared >= {"id", "params", "params_human", "published", "published_value", "difference", "status"}
    assert {k: listed[k] for k in shared} == {k: shown[k] for k in shared}
    # the gap, said as a percentage by the CLI and as a fraction on the site, is the one gap of the entry
    if listed["difference_pct"] is None:
        assert shown["difference_relative"] is None
    else:
        assert listed["difference_pct"] == pytest.approx(100 * shown["difference_relative"], abs=1e-3)


@pytest.mark.parametrize("model_id", sorted(REFERENCE_PARAMS))
def test_the_difference_is_the_reference_count_less_the_printed_figure(entries, model_id):
    record = list_record(IndexRow.of(entries[model_id]))
    exact, printed = REFERENCE_PARAMS[model_id], PUBLISHED[model_id]
    assert (record["params"], record["published_value"]) == (exact, printed)
    assert record["difference"] == exact - printed
    assert record["difference_pct"] == round(100 * (exact - printed) / printed, 3)
    shown = model_record(views.model_view(entries[model_id]))
    assert shown["difference_relative"] == round((exact - printed) / printed, 6)


def test_archzoo_list_prints_the_record(tmp_path):
    """``archzoo list --json`` is the record of every listed row, field for field and in order."""
    folder = tmp_path / "registry"
    folder.mkdir()
    for name in FILES:
        (folder / Path(name).name).write_bytes((REPO / "registry" / name).read_bytes())
    result = CliRunner().invoke(
        cli, ["list", "--json", "--registry", str(folder)], env={"ARCHZOO_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    registry = load_registry([folder])
    expected = [list_record(IndexRow.of(registry.get_model(r["id"]))) for r in printed]
    assert [r["id"] for r in printed] == sorted(REFERENCE_PARAMS) + ["mixtral-8x7b"]
    assert [list(r) for r in printed] == [list(LIST_FIELDS)] * len(printed)
    assert printed == expected
