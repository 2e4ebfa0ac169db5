"""The built site in a real browser: Chromium (Debian's /usr/bin/chromium) driven by Playwright for
Python, against the site served on localhost by an http.server thread, with no network access.

Screenshots are saved under ``test-results/browser/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archzoo.site import build_site
from browsing import OPEN_SHADOW_ROOTS, browser, require_browser, screenshot, served, watched_tab  # noqa: F401

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
#: transformers 5.23 BertModel(BertConfig()): sum(p.numel() for p in model.parameters())
BERT_BASE_PARAMS = "109,482,240"


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    require_browser()
    out = build_site(tmp_path_factory.mktemp("browser") / "site", registry=[REPO / "registry"])
    with served(out) as url:
        yield url


@pytest.fixture
def page(browser, site_url):  # noqa: F811 (the fixture imported from browsing)
    """A tab with no network at view time: any request that leaves localhost is refused, and no page may
    need one, nor raise an error."""
    with watched_tab(browser, site_url, OPEN_SHADOW_ROOTS) as (tab, watched):
        tab.outside_requests = watched.outside
        yield tab
    assert not watched.errors, watched.errors
    assert watched.outside == [], f"requests left localhost: {watched.outside}"


def test_search_then_model_page(page, site_url):
    page.goto(site_url)
    assert "archzoo model zoo" in page.title()
    assert page.locator("h2", has_text="Largest models").is_visible()
    screenshot(page, "home")

    page.locator("label.md-search__icon, .md-search__input").first.click()
    page.locator("input.md-search__input").press_sequentially(
        "bert-base-uncased", delay=20
    )  # Material reads key events
    result = page.locator(".md-search-result__item a[href*='models/bert-base-uncased/']").first
    result.wait_for(timeout=15_000)
    screenshot(page, "search")
    result.click()
    page.wait_for_url(re.compile(r".*/models/bert-base-uncased/.*"))

    content = page.locator("article.md-content__inner")
    content.locator(".katex").first.wait_for(timeout=15_000)
    text = content.inner_text()
    assert BERT_BASE_PARAMS in text
    assert "$$" not in text and "\\(" not in text and "\\[" not in text  # every formula rendered
    assert content.locator(".arithmatex .katex").count() >= 20
    assert content.locator(".katex-error").count() == 0

    flops = content.locator("figure svg.az-flops")
    assert flops.is_visible() and flops.bounding_box()["height"] > 150
    assert flops.locator("polyline").count() == 3  # total, attention, the rest

    diagram = content.locator("div.mermaid svg").first  # rendered by the vendored mermaid, inside its shadow root
    diagram.wait_for(timeout=15_000)
    assert diagram.bounding_box()["height"] > 100
    assert content.locator("pre.mermaid").count() == 0  # no diagram left as source
    assert "layers × 12" in diagram.text_content()
    screenshot(page, "bert-base-uncased")
    assert not [u for u in page.outside_requests if "unpkg" in u or "jsdelivr" in u or "mathjax" in u]


def _params_column(page) -> list[int]:
    cells = page.locator(".az-sortable table tbody tr:not([hidden]) td:nth-child(4)").all_inner_texts()
    return [int(c.replace(",", "")) for c in cells]


def test_all_models_table_sorts_and_filters(page, site_url):
    page.goto(site_url + "models/")
    table = page.locator(".az-sortable table")
    table.wait_for()
    header = table.locator("th", has_text="Parameters")
    header.click()
    ascending = _params_column(page)
    assert len(ascending) >= 2 and ascending == sorted(ascending)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = _params_column(page)
    assert descending == sorted(ascending, reverse=True)
    screenshot(page, "all-models-sorted")

    page.locator("#az-filter").fill("bert-base-uncased")  # the filter listens to input events
    visible = page.locator(".az-sortable table tbody tr:not([hidden])")
    ids = [row.split("\t")[0] for row in visible.all_inner_texts()]
    assert "bert-base-uncased" in ids and all("bert-base-uncased" in i for i in ids)
    assert len(ids) < len(ascending)
    assert page.locator("#az-filter-count").inner_text() == f"{len(ids)} of {len(ascending)} models"
    screenshot(page, "all-models-filtered")


def test_architecture_page_lists_its_models(page, site_url):
    page.goto(site_url + "architectures/gpt/")
    content = page.locator("article.md-content__inner")
    content.locator(".katex").first.wait_for(timeout=15_000)
    assert content.locator("a[href*='models/gpt2/']").count() >= 1
    assert "$$" not in content.inner_text()
    screenshot(page, "architecture-gpt")
