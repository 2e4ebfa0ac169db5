"""The site's pages as plain functions: views and markdown computed from registry entries, no MkDocs.

Expected figures come from the reference implementations: BERT-base as ``transformers.BertModel``
(109,482,240 parameters, pooler included) and GPT-2 small as ``transformers.GPT2LMHeadModel``
(124,439,808 parameters, LM head tied to the token embedding).
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import markdown
import pytest

from archzoo.registry import load_registry
from archzoo.report import human_bytes
from archzoo.site import diagram, exports, navigation, pages, paths, plots, records, svg, views
from archzoo.site.mdext import END, START

REPO = Path(__file__).resolve().parents[1]

#: transformers 5.23 BertModel(BertConfig()): sum(p.numel() for p in model.parameters())
BERT_BASE_PARAMS = 109_482_240
#: transformers 5.23 GPT2LMHeadModel(GPT2Config()), tied LM head counted once
GPT2_PARAMS = 124_439_808
#: GPT2 past_key_values per token: 12 layers x (key, value) x 768
GPT2_KV_ELEMENTS = 12 * 2 * 768

GPT2_YAML = (Path(__file__).parent / "data" / "gpt2-small-test.yaml").read_text(encoding="utf-8")

ALBERT_YAML = """\
architecture: bert
title: ALBERT-base
summary: ALBERT with one shared layer.
tags: [encoder]
year: 2020
config: {vocab_size: 30000, embedding_size: 128, shared_layers: true, activation: gelu_new}
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    folder = tmp_path_factory.mktemp("registry")
    (folder / "gpt2.yaml").write_text(GPT2_YAML, encoding="utf-8")
    (folder / "albert-base-test.yaml").write_text(ALBERT_YAML, encoding="utf-8")
    files = [REPO / "registry" / "bert" / "bert-base-uncased.yaml", folder]
    reg = load_registry(files)
    assert not reg.problems, reg.problems
    return reg


@pytest.fixture(scope="module")
def bert(registry):
    return views.model_view(registry.get_model("bert-base-uncased"), source_path="registry/bert/bert-base-uncased.yaml")


@pytest.fixture(scope="module")
def gpt2(registry):
    return views.model_view(registry.get_model("gpt2"))


@pytest.fixture(scope="module")
def albert(registry):
    return views.model_view(registry.get_model("albert-base-test"))


# ---- views ----------------------------------------------------------------------------------------


def test_model_view_summary_figures(bert):
    assert bert.params == BERT_BASE_PARAMS
    assert bert.published == "110M" and bert.published_value == 110_000_000
    assert bert.difference == BERT_BASE_PARAMS - 110_000_000
    assert bert.reason == "rounded" and bert.status == "reconciled"
    assert (
        bert.weights["fp32"] == 4 * BERT_BASE_PARAMS and bert.weights["int4"] == BERT_BASE_PARAMS // 2
    )  # two 4-bit parameters a byte
    assert bert.training_bytes == {"fp32": 16 * BERT_BASE_PARAMS, "mixed_bf16": 16 * BERT_BASE_PARAMS}
    assert bert.kv_elements == 0  # an encoder caches nothing
    assert bert.seq_len == 512
    assert bert.embedding + bert.non_embedding == bert.params


def test_decoder_view_has_a_kv_cache(gpt2):
    assert gpt2.params == GPT2_PARAMS
    assert gpt2.kv_elements == GPT2_KV_ELEMENTS
    assert gpt2.kv_formula  # shown as a formula too
    assert gpt2.published is None and gpt2.status == "unpublished"


def test_block_rows_multiply_repeats_and_add_up(bert):
    rows = {r.path: r for r in bert.rows}
    assert rows["bert"].params == BERT_BASE_PARAMS and rows["bert"].share == 1.0
    layer = rows["bert.layers.layer"]
    assert layer.count == 12 and not layer.shared
    assert rows["bert.layers"].params == layer.params
    q = rows["bert.layers.layer.attention.q_proj"]
    assert q.params == 12 * (768 * 768 + 768)  # Linear(768, 768) in each of 12 layers
    assert q.formula == "d^{2} + d" and q.substituted == "768^{2} + 768"
    top = [r for r in bert.rows if r.depth == 1]
    assert sum(r.params for r in top) == BERT_BASE_PARAMS
    assert abs(sum(r.share for r in top) - 1) < 1e-12


def test_shared_layers_count_weights_once(albert):
    layer = next(r for r in albert.rows if r.path.endswith("layers.layer"))
    assert layer.count == 12 and layer.shared
    assert next(r for r in albert.rows if r.path.endswith("layers")).params == layer.params
    assert "12 (shared)" in pages.model_page(albert)


def test_tied_weight_is_marked(gpt2):
    head = next(r for r in gpt2.rows if r.name == "lm_head")
    assert head.params == 0 and head.tied_to == "token"
    assert "weight tied" in gpt2.mermaid


def test_flops_series_matches_the_report(registry):
    report = registry.get_model("gpt2").report
    ns, totals, attention = views.flops_series(report)
    assert ns == sorted(set(ns)) and ns[0] <= report.seq_len <= ns[-1]
    for n, total, att in zip(ns, totals, attention, strict=True):
        assert (total, att) == report.flops_at(n)


def test_complexity_latex_keeps_dominant_terms(bert):
    assert bert.time_complexity.startswith("O(")  # plain parentheses: KaTeX may break inside them
    assert "N^{2}" in bert.time_complexity
    assert "4" not in bert.time_complexity  # coefficients dropped


def test_count_command_round_trips_through_the_cli_syntax():
    assert views.count_command("bert", {}) == "archzoo count bert"
    cmd = views.count_command("bert", {"n_layers": 24, "pooler": False, "embedding_size": None, "activation": "gelu"})
    assert (
        cmd == "archzoo count bert --set n_layers=24 --set pooler=false --set embedding_size=null --set activation=gelu"
    )


def test_config_yaml_reads_back():
    import yaml

    for config in ({"a": 1, "b": "gelu", "c": None, "d": True}, {"x": "a: b", "y": "yes", "z": "1.0"}, {"n": [1, 2]}):
        assert yaml.safe_load(views.config_yaml(config)) == config


# ---- markdown -------------------------------------------------------------------------------------


def test_model_page_markdown(bert):
    text = pages.model_page(bert)
    assert text.startswith("---\n") and "\n# bert-base-uncased\n" in text
    for expected in (
        "109,482,240",
        "(109.5M)",
        "<strong>110M</strong>",
        "arXiv:1810.04805",
        "<code>rounded</code>",
        "-517,760",
        "fp32 437.9 MB",
        "N = 512",
        "## Complexity",
        "## Blocks",
        "## Reproduce this",
        "archzoo count bert",
        "transformers.BertModel",
        "```mermaid\nflowchart TB",
        "az-flops",
        "az-bars",
        "registry/bert/bert-base-uncased.yaml",
        "Attention overtakes the rest",
    ):
        assert expected in text, expected
    assert "KV cache per token" not in text  # encoders have none
    # formulas are arithmatex's output, symbolic and substituted
    assert '<span class="arithmatex">\\(d^{2} + d\\)</span>' in text
    assert "\\(= 768^{2} + 768\\)" in text
    assert '<p class="az-eq"><span class="arithmatex">\\(F(N) = ' in text  # inline: KaTeX may break it
    # links are where MkDocs publishes the pages
    assert 'href="../../architectures/bert/"' in text and 'href="../../methodology/#conventions"' in text
    # every raw block is closed
    assert text.count(START) == text.count(END) > 0


def test_model_page_of_a_decoder_shows_its_kv_cache(gpt2):
    text = pages.model_page(gpt2)
    assert "KV cache per token" in text and f"{GPT2_KV_ELEMENTS:,} elements" in text
    assert "none recorded" in text  # no published figure


def test_model_page_links_without_directory_urls(bert):
    text = pages.model_page(bert, directory_urls=False)
    assert 'href="../architectures/bert/index.html"' in text


def test_model_page_is_deterministic(registry):
    entry = registry.get_model("bert-base-uncased")
    assert pages.model_page(views.model_view(entry)) == pages.model_page(views.model_view(entry))


def test_raw_blocks_render_like_plain_markdown(bert):
    """The mdext fast path changes the cost, not the output."""
    text = pages.model_page(bert).split("---\n", 2)[2]
    body = text[text.index("## Details") : text.index("## Blocks")]
    fast = markdown.Markdown(extensions=["archzoo.site.mdext", "tables"]).convert(body)
    plain = markdown.Markdown(extensions=["tables"]).convert(body)
    strip = lambda html: re.sub(r"<!-- /?archzoo:html -->\s*", "", html).replace("\n", "")  # noqa: E731
    assert strip(fast) == strip(plain)
    assert "109,482,240" in fast


def test_architecture_page(registry, bert):
    from archzoo.host import get_host

    arch = get_host().architecture("bert")
    view = views.architecture_view(arch, plugin_version="0.1.0", models=(bert,))
    text = pages.architecture_page(view)
    assert text.count("\n# BERT\n") == 1
    assert "## Models (1)" in text and "[bert-base-uncased](../../models/bert-base-uncased.md)" in text
    for key, *_ in arch.config_fields():
        assert f"<code>{key}</code>" in text
    assert "## General formulas" in text and "\\text{params} = " in text
    assert "```mermaid" in text


def test_home_page_lists_largest_and_smallest(bert, gpt2, albert):
    text = pages.home_page([bert, gpt2, albert], [])
    largest = text[text.index("## Largest models") : text.index("## Smallest models")]
    smallest = text[text.index("## Smallest models") :]
    assert largest.index("gpt2") < largest.index("bert-base-uncased") < largest.index("albert-base-test")
    assert smallest.index("albert-base-test") < smallest.index("bert-base-uncased")
    assert "3 models" in text


def test_all_models_page_and_downloads_hold_the_same_data(bert, gpt2, albert):
    models = [albert, bert, gpt2]
    text = pages.models_page(models)
    assert 'id="az-filter"' in text and '<div class="az-sortable" markdown="1">' in text
    for m in models:
        assert f"[{m.id}]({m.id}.md)" in text and f"{m.params:,}" in text
    data = json.loads(exports.models_json(models))
    assert [r["id"] for r in data["models"]] == [m.id for m in models]
    assert data["models"][1]["params"] == BERT_BASE_PARAMS and data["models"][1]["published"] == "110M"
    rows = list(csv.DictReader(io.StringIO(exports.models_csv(models))))
    assert [r["id"] for r in rows] == [m.id for m in models]
    assert rows[1]["params"] == str(BERT_BASE_PARAMS) and rows[1]["tags"] == "encoder;english;masked-lm"
    assert list(rows[0]) == list(data["fields"])


def test_href_matches_mkdocs_urls():
    assert paths.page_href("models/a.md", "architectures/bert/index.md") == "../../architectures/bert/"
    assert paths.page_href("models/a.md", "index.md") == "../../"
    assert paths.page_href("models/a.md", "models/index.md") == "../"
    assert paths.page_href("index.md", "models/a.md") == "models/a/"


# ---- navigation -----------------------------------------------------------------------------------


class _Model:
    def __init__(self, i: int):
        self.id = f"m-{i:05d}"


def _leaves(tree):
    for node in tree:
        if isinstance(node, tuple):
            yield from _leaves(node[1])
        else:
            yield node


def _widest_path(tree) -> int:
    """Entries a pruned navigation shows for the worst page: its section and every ancestor's siblings."""
    sections = [node[1] for node in tree if isinstance(node, tuple)]
    return len(tree) + max((_widest_path(s) for s in sections), default=0)


@pytest.mark.parametrize("n", [1, 30, 31, 250, 1250, 5000])
def test_nav_tree_keeps_every_model_in_order_and_sections_small(n):
    models = [_Model(i) for i in range(n)]
    tree = navigation.nav_tree(models)
    assert [m.id for m in _leaves(tree)] == [m.id for m in models]

    def check(node_list):
        assert len(node_list) <= (
            navigation.NAV_FLAT_UP_TO if n <= navigation.NAV_FLAT_UP_TO else navigation.NAV_BRANCHING
        )
        for node in node_list:
            if isinstance(node, tuple):
                title, children = node
                first, last = next(_leaves(children)), list(_leaves(children))[-1]
                assert title == f"{first.id} … {last.id}"
                check(children)

    check(tree)
    assert _widest_path(tree) <= 60  # what a page renders stays nearly flat as the zoo grows


def test_nav_config_sections_and_flat_baseline(bert, gpt2):
    from archzoo.host import get_host

    host = get_host()
    archs = [
        views.architecture_view(host.architecture("bert"), models=(bert,)),
        views.architecture_view(host.architecture("gpt"), models=(gpt2,)),
    ]
    nav = navigation.nav_config(archs, static_pages=[("Methodology", "methodology.md")])
    assert nav == [
        {"Home": "index.md"},
        {"All models": "models/index.md"},
        {
            "Architectures": [
                {"BERT": ["architectures/bert/index.md", {"bert-base-uncased": "models/bert-base-uncased.md"}]},
                {"GPT": ["architectures/gpt/index.md", {"gpt2": "models/gpt2.md"}]},
            ]
        },
        {"Methodology": "methodology.md"},
    ]
    flat = navigation.nav_config(archs, flat=True)
    assert flat[2] == {
        "Architectures": [{"BERT": "architectures/bert/index.md"}, {"GPT": "architectures/gpt/index.md"}]
    }
    assert flat[3:] == [{"bert-base-uncased": "models/bert-base-uncased.md"}, {"gpt2": "models/gpt2.md"}]


# ---- plots and diagrams ---------------------------------------------------------------------------


def test_flops_plot_is_valid_deterministic_svg(registry):
    report = registry.get_model("bert-base-uncased").report
    ns, totals, attention = views.flops_series(report)
    one = svg.flops_plot(ns, totals, attention, seq_len=512, overtakes_at=report.attention_overtakes_at)
    assert one == svg.flops_plot(ns, totals, attention, seq_len=512, overtakes_at=report.attention_overtakes_at)
    root = ET.fromstring(one)
    assert root.tag.endswith("svg")
    classes = [el.get("class", "") for el in root.iter()]
    assert any("az-attention" in c for c in classes) and any("az-rest" in c for c in classes)
    assert "= 512" in one and f"from N = {report.attention_overtakes_at:,}" in one


def test_log_ticks_cover_the_range():
    assert svg.log_ticks(16, 8192) == [10.0, 100.0, 1000.0, 10000.0]


def test_bar_chart_labels_shares():
    chart = svg.bar_chart([("a", 75), ("b", 25)], total=100)
    ET.fromstring(chart)
    assert "75 (75.0%)" in chart and "25 (25.0%)" in chart


def test_mermaid_diagram_from_the_block_tree(registry):
    text = diagram.mermaid(registry.get_model("bert-base-uncased").report.root)
    lines = text.splitlines()
    assert lines[0] == "flowchart TB"
    assert any('["layers × 12"]' in line for line in lines)
    assert text.count("subgraph") == text.count("\n  end") + text.count("\n    end") + text.count("\n      end")
    assert "-->" in text


def test_encoder_output_feeds_cross_attention_not_the_decoder_input():
    import re

    import archzoo
    from archzoo.site.diagram import mermaid

    text = mermaid(archzoo.count("transformer", vocab_size=100).root)
    ids = {label: node for node, label in re.findall(r'(n\d+)\["([a-z_0-9]+)<br/>', text)}
    links = set(re.findall(r"(n\d+) -->(?:\|memory\|)? (n\d+)", text))
    embedding, cross = ids["embedding"], ids["cross_attention"]
    encoder_norm = re.findall(r'(n\d+)\["norm<br/>', text)[0]
    assert f"{encoder_norm} -->|memory| {cross}" in text
    decoder_head = re.findall(r'(n\d+)\["self_attention<br/>', text)[1]
    assert (embedding, decoder_head) in links
    assert (encoder_norm, decoder_head) not in links


# ---- a mixture of experts: total and active parameters -----------------------------------------------------

#: transformers 5.23 MixtralForCausalLM(MixtralConfig()) on the meta device, and the same less 6 of its 8 experts
#: (3 x 4,096 x 14,336 each) in each of its 32 layers; the published figures are Jiang et al. 2024's 47B and 13B
MIXTRAL_PARAMS = 46_702_792_704
MIXTRAL_ACTIVE = 12_879_925_248


@pytest.fixture(scope="module")
def mixtral():
    entry = load_registry([REPO / "registry" / "moe" / "mixtral-8x7b.yaml"]).get_model("mixtral-8x7b")
    return views.model_view(entry, source_path="registry/moe/mixtral-8x7b.yaml")


def test_mixture_of_experts_view_has_total_and_active(mixtral):
    assert (mixtral.params, mixtral.active_params) == (MIXTRAL_PARAMS, MIXTRAL_ACTIVE)
    assert (mixtral.published, mixtral.published_active) == ("47B", "13B")
    assert mixtral.active_difference == MIXTRAL_ACTIVE - 13_000_000_000
    assert (mixtral.status, mixtral.active_status) == ("within-rounding", "within-rounding")
    row = records.model_record(mixtral)
    assert (row["active_params"], row["published_active"], row["published_active_value"]) == (
        MIXTRAL_ACTIVE,
        "13B",
        13_000_000_000,
    )
    assert row["active_difference_relative"] == round((MIXTRAL_ACTIVE - 13_000_000_000) / 13_000_000_000, 6)


def test_mixture_of_experts_page_shows_active_parameters(mixtral, bert):
    text = pages.model_page(mixtral)
    assert f'<strong class="az-active">{MIXTRAL_ACTIVE:,}</strong>' in text
    assert "Published active parameters" in text and "<strong>13B</strong> (13,000,000,000)" in text
    assert f"{MIXTRAL_ACTIVE - 13_000_000_000:+,} (-0.92%), status <strong>within-rounding</strong>" in text
    assert "Active parameters" not in pages.model_page(bert)  # a dense model's are all of its parameters


def test_models_table_and_downloads_show_active(mixtral, bert):
    table = pages.models_page([bert, mixtral])
    assert "| Parameters | Active | Published | Difference |" in table
    assert f"| {MIXTRAL_PARAMS:,} | {MIXTRAL_ACTIVE:,} | 47B (13B active) | -0.63% (-0.92% active) |" in table
    assert f'| {BERT_BASE_PARAMS:,} | <span data-v="{BERT_BASE_PARAMS}">—</span> | 110M | -0.47% |' in table
    data = json.loads(exports.models_json([bert, mixtral]))
    assert [m["active_params"] for m in data["models"]] == [BERT_BASE_PARAMS, MIXTRAL_ACTIVE]
    assert [m["active_status"] for m in data["models"]] == ["unpublished", "within-rounding"]
    rows = list(csv.DictReader(io.StringIO(exports.models_csv([bert, mixtral]))))
    assert rows[1]["active_params"] == str(MIXTRAL_ACTIVE) and rows[1]["published_active"] == "13B"


# ---- configuration types as a person writes them ------------------------------------------------------


def test_configuration_types_read_as_a_person_writes_them():
    from typing import Annotated, Literal

    from pydantic import PositiveInt

    from archzoo.architecture import _type_name

    assert _type_name(Literal["lm", "none"]) == "'lm' | 'none'"
    assert _type_name(PositiveInt | None) == "integer or null"  # pydantic's Annotated[int, Gt(0)]
    assert _type_name(Annotated[int, "x"]) == "integer"
    assert _type_name(None | bool) == "boolean or null"  # null last, wherever it is written
    assert (_type_name(int), _type_name(float), _type_name(str)) == ("integer", "number", "string")
    assert _type_name(list[int]) == "list of integer"


def test_architecture_page_types_have_no_backslash_and_no_annotated():
    from archzoo.host import get_host

    for arch in get_host().architectures.values():
        text = pages.architecture_page(views.architecture_view(arch))
        table = text[text.index("## Configuration") :]
        table = table[: table.index("</table>")]
        assert "Annotated" not in table and "\\|" not in table, arch.name
    gpt = pages.architecture_page(views.architecture_view(get_host().architecture("gpt")))
    assert "<code>integer or null</code>" in gpt  # d_head: PositiveInt | None
    assert "<code>&#x27;lm&#x27; | &#x27;none&#x27;" in gpt  # head: Literal["lm", "none", ...]


# ---- a model page's first screen, its Blocks table, the what-if placeholder ------------------------------------


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start))]


def test_headline_figures_come_first(bert):
    text = pages.model_page(bert)
    headline = _between(text, '<div class="az-headline">', "## Details")
    assert text.index('<div class="az-headline">') < text.index("## Details") < text.index("## Blocks")
    for expected in (
        f'<span class="az-num">{BERT_BASE_PARAMS:,}</span>',  # exact parameters
        '<span class="az-num">110M</span>',  # BERT paper, Section 3
        f'<span class="az-num">{BERT_BASE_PARAMS - 110_000_000:+,}</span> (-0.47%)',
        "reason <code>rounded</code>",
        "Devlin et al. (2019)",
        "Forward FLOPs at N = 512",
        "Weights in fp16",
        f'<span class="az-num">{human_bytes(2 * BERT_BASE_PARAMS)}</span>',  # 2 bytes a parameter
        "KV cache",
    ):
        assert expected in headline, expected


def test_headline_of_a_decoder_shows_its_kv_cache_per_token(gpt2):
    headline = _between(pages.model_page(gpt2), '<div class="az-headline">', "## Details")
    assert "KV cache per token, fp16" in headline
    assert f'<span class="az-num">{human_bytes(2 * GPT2_KV_ELEMENTS)}</span>' in headline
    assert "no figure recorded" in headline


def test_whatif_placeholder_on_model_and_architecture_pages(bert):
    from archzoo.host import get_host

    text = pages.model_page(bert)
    placeholder = '<div class="archzoo-whatif" data-architecture="bert" data-model="bert-base-uncased"></div>'
    assert text.count(placeholder) == 1
    assert text.index('<div class="az-headline">') < text.index(placeholder) < text.index("## Details")
    arch = pages.architecture_page(views.architecture_view(get_host().architecture("bert"), models=(bert,)))
    empty = '<div class="archzoo-whatif" data-architecture="bert" data-model=""></div>'
    assert arch.count(empty) == 1
    assert arch.index("## Configuration") < arch.index(empty) < arch.index("## General formulas")
    assert pages.whatif('a"b', "<m>") == (
        '<div class="archzoo-whatif" data-architecture="a&quot;b" data-model="&lt;m&gt;"></div>'
    )


def test_blocks_table_puts_each_formula_on_a_row_of_its_own(bert):
    text = pages.model_page(bert)
    table = _between(text, '<div class="az-blocks">', "</table>")
    assert table.count('<tr class="az-row">') == table.count('<tr class="az-formula">') == len(bert.rows)
    header = _between(table, "<thead>", "</thead>")
    assert "Formula" not in header and header.count("<th ") == 5  # block, count, parameters, share, FLOPs
    q_proj = _between(table, ">q_proj<", '<tr class="az-row">')
    assert f">{12 * (768 * 768 + 768):,}<" in q_proj  # Linear(768, 768) in each of 12 layers
    formula_row = _between(q_proj, '<tr class="az-formula">', "</tr>")
    assert '<td colspan="5" style="--az-depth:4">' in formula_row
    assert "\\(d^{2} + d\\)" in formula_row and '<span class="az-values">' in formula_row
    assert text.index('class="az-values-toggle"') < text.index('<div class="az-blocks">')  # the switch precedes it


# ---- pictures of the zoo ------------------------------------------------------------------------------------


def _points(svg_text: str) -> list[tuple[str, float, float, str]]:
    """(href, cx, cy, class) of every linked point of a scatter plot."""
    root = ET.fromstring(svg_text)
    ns = "{http://www.w3.org/2000/svg}"
    out = []
    for a in root.iter(ns + "a"):
        circle = a.find(ns + "circle")
        out.append((a.get("href"), float(circle.get("cx")), float(circle.get("cy")), circle.get("class")))
    return out


def test_year_plot_has_a_linked_point_per_model_on_a_log_axis(bert, gpt2, albert, mixtral):
    import math

    models = [bert, gpt2, albert, mixtral]
    plot = plots.year_plot(models)
    points = _points(plot)
    assert len(points) == 4
    assert sorted(href for href, *_ in points) == sorted(f"models/{m.id}/" for m in models)
    ys = {href: cy for href, _, cy, _ in points}
    # log scale: a count sits between the ticks of its powers of ten at log10 of it, e.g. BERT-base's
    # 109,482,240 (transformers' BertModel) at 0.039 of the way from 100M to 1B, Mixtral's 46,702,792,704
    # (transformers' MixtralForCausalLM) at 0.669 of the way from 10B to 100B
    ticks = {
        t.text: float(t.get("y"))
        for t in ET.fromstring(plot).iter("{http://www.w3.org/2000/svg}text")
        if t.get("class") == "az-tick" and t.get("text-anchor") == "end"
    }
    for href, params, low, high in (
        ("models/bert-base-uncased/", BERT_BASE_PARAMS, "100M", "1B"),
        ("models/mixtral-8x7b/", MIXTRAL_PARAMS, "10B", "100B"),
    ):
        fraction = math.log10(params) - math.floor(math.log10(params))
        assert ys[href] == pytest.approx(
            ticks[low] + fraction * (ticks[high] - ticks[low]), abs=0.06
        )  # coordinates to 0.1
    # coloured by architecture, with a legend naming each
    assert {cls for *_, cls in points} >= {"az-point az-c0", "az-point az-c1"}
    assert ">BERT<" in plot and ">GPT<" in plot
    assert plots.year_plot(models, "index.md", directory_urls=False).count('href="models/gpt2.html"') == 1


def test_published_plot_places_the_gap_and_colours_by_reason(bert, gpt2, mixtral):
    plot = plots.published_plot([bert, gpt2, mixtral])
    points = {href: (cx, cy, cls) for href, cx, cy, cls in _points(plot)}
    assert set(points) == {"models/bert-base-uncased/", "models/mixtral-8x7b/"}  # GPT-2 has no published figure
    assert ">rounded<" in plot and f">{plots.WITHIN_ROUNDING}<" in plot
    assert points["models/bert-base-uncased/"][2] != points["models/mixtral-8x7b/"][2]  # two reasons, two colours
    zero = ET.fromstring(plot).find(".//{http://www.w3.org/2000/svg}line[@class='az-zero']")
    assert zero is not None
    # BERT-base's 109,482,240 is 0.47% under the paper's 110M, Mixtral's 46.7B 0.63% under 47B: both below 0
    assert all(cy > float(zero.get("y1")) for _, cy, _ in points.values())


def test_architecture_plot_links_every_model_of_the_architecture(registry, bert):
    from archzoo.host import get_host

    view = views.architecture_view(get_host().architecture("bert"), models=(bert,))
    plot = plots.architecture_plot(view)
    assert [href for href, *_ in _points(plot)] == ["../../models/bert-base-uncased/"]
    assert "forward FLOPs at N" in plot and "N = 512" in plot
    assert "az-scatter" in pages.architecture_page(view)


def test_scatter_plot_places_known_values_on_log_and_linear_axes():
    points = [
        svg.Point(x=2018, y=1e6, group="a", label="one", href="one/"),
        svg.Point(x=2020, y=1e9, group="b", label="two", href="two/"),
        svg.Point(x=2020, y=1e8, group="b", label="three"),  # no page: drawn, not linked
        svg.Point(x=2019, y=0, group="a", label="left out: log axis"),
    ]
    plot = svg.scatter_plot(points, x=svg.Axis("year", ticks="year"), y=svg.Axis("p", log=True), title="t")
    root = ET.fromstring(plot)
    ns = "{http://www.w3.org/2000/svg}"
    circles = [c for c in root.iter(ns + "circle") if c.find(ns + "title") is not None]
    assert [c.find(ns + "title").text for c in circles] == ["one", "two", "three"]
    assert len(list(root.iter(ns + "a"))) == 2
    ticks = {
        t.text: float(t.get("y"))
        for t in root.iter(ns + "text")
        if t.get("class") == "az-tick" and t.get("text-anchor") == "end"
    }
    cy = {c.find(ns + "title").text: float(c.get("cy")) for c in circles}
    # 10^6 and 10^9 sit exactly on their ticks; 10^8 two thirds of the way up from 10^6 to 10^9
    assert cy["one"] == pytest.approx(ticks["1M"], abs=0.01) and cy["two"] == pytest.approx(ticks["1B"], abs=0.01)
    assert (cy["one"] - cy["three"]) / (cy["one"] - cy["two"]) == pytest.approx(2 / 3, abs=1e-3)
    # two points of one year are spread side by side around it
    assert float(circles[1].get("cx")) != float(circles[2].get("cx"))
    assert svg.scatter_plot([], x=svg.Axis("x"), y=svg.Axis("y"), title="t") == ""


def test_linear_ticks_are_round_and_cover_the_range():
    assert svg.linear_ticks(-0.07, 0.62) == [-0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    assert svg.linear_ticks(2016.5, 2024.5, 14) == [float(y) for y in range(2016, 2026)]
