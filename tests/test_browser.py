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
    assert page.title() == "archzoo model zoo"  # the site's name once, not "archzoo model zoo - archzoo model zoo"
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
    assert page.title() == "bert-base-uncased - archzoo model zoo"

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


# ---- pages that fit a laptop and a phone ------------------------------------------------------------------

#: Widths every generated page must fit without sideways scrolling: a laptop and a phone (iPhone 12-15).
WIDTHS = (1280, 390)
#: The Blocks table's height per block, header included, at each width: a row of figures and a row for the
#: formula. BERT-base's 20 blocks measured 1,144 px at 1280 and 1,177 px at 390 (57 and 59 px a block);
#: with the formula as a narrow column they were 1,795 and 2,655 px (90 and 133 px a block).
BLOCKS_PX_PER_ROW = {1280: 64, 390: 72}

#: What a page may hold that overflows the text column, and why: Material's code blocks and table
#: wrappers bleed into the margin on a phone by design (they must stay on the screen); KaTeX's MathML copy
#: is visually hidden; the what-if calculator is filled by its own script and tested with it.
_OVERFLOW = """() => {
  const article = document.querySelector('article.md-content__inner');
  const box = article.getBoundingClientRect();
  const out = [];
  for (const el of article.querySelectorAll('*')) {
    if (el.closest('.katex-mathml, .archzoo-whatif')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const bleeds = el.matches('.md-typeset__scrollwrap, .md-typeset__table') || el.closest('.highlight');
    const [left, right] = bleeds ? [0, innerWidth] : [box.left, box.right];
    const what = el.tagName.toLowerCase() + '.' + (typeof el.className === 'string' ? el.className : '') + ' "'
      + (el.textContent || '').trim().slice(0, 40) + '"';
    if (r.left < left - 1 || r.right > right + 3)  // 3 px: an inline code's padding at a line's end
      out.push(`${what} spans ${Math.round(r.left)}-${Math.round(r.right)} in ${Math.round(left)}-${Math.round(right)}`);
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible')
      out.push(`${what} scrolls sideways: ${el.scrollWidth} px in ${el.clientWidth}`);
  }
  if (document.documentElement.scrollWidth > innerWidth)
    out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in ${innerWidth}`);
  return out;
}"""


def _open(page, url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if page.locator("article .arithmatex").count():
        page.locator("article .katex").first.wait_for(timeout=15_000)


@pytest.mark.parametrize("width", WIDTHS)
def test_model_page_answers_at_a_glance_and_fits(page, site_url, width):
    _open(page, site_url + "models/bert-base-uncased/", width)
    content = page.locator("article.md-content__inner")
    headline = content.locator(".az-headline")
    assert headline.locator(".az-card").count() == 5
    assert BERT_BASE_PARAMS in headline.inner_text() and "110M" in headline.inner_text()  # BERT paper, Section 3
    assert headline.bounding_box()["y"] + headline.bounding_box()["height"] < (1000 if width > 400 else 1400)
    assert content.locator('.archzoo-whatif[data-architecture="bert"][data-model="bert-base-uncased"]').count() == 1
    assert page.evaluate(_OVERFLOW) == []

    table = content.locator(".az-blocks table")
    blocks = table.locator("tr.az-row").count()
    assert blocks == 20
    height = table.bounding_box()["height"]
    assert height <= BLOCKS_PX_PER_ROW[width] * (blocks + 1), f"{height:.0f} px for {blocks} blocks"
    # formulas with the configuration's values appear on demand
    values = table.locator(".az-values").first
    assert not values.is_visible()
    content.locator("label.az-values-label").click()
    assert values.is_visible() and "768" in values.inner_text()
    assert page.evaluate(_OVERFLOW) == []
    content.locator("label.az-values-label").click()
    screenshot(page, f"bert-base-uncased-{width}")


@pytest.mark.parametrize("path", ["", "architectures/llama/", "architectures/bert/", "models/qwen2-57b-a14b/"])
@pytest.mark.parametrize("width", WIDTHS)
def test_other_pages_fit_too(page, site_url, path, width):
    """The home page, architecture pages and the longest block tree (a mixture of experts with shared
    experts) fit both widths as well."""
    _open(page, site_url + path, width)
    assert page.evaluate(_OVERFLOW) == []
    if path == "":
        screenshot(page, f"home-{width}")


def _plot_links(page, selector: str) -> list[str]:
    """Where the points of a plot link to, resolved against the page's address as a click would."""
    return page.locator(f"{selector} a").evaluate_all(
        "links => links.map(a => new URL(a.getAttribute('href'), location.href).href)"
    )


def test_home_page_pictures_link_every_model(page, site_url):
    _open(page, site_url, 1280)
    models = page.request.get(site_url + "models.json").json()["models"]
    years = _plot_links(page, "svg.az-years")
    assert len(years) == len(models)  # a point per model
    assert sorted(years) == sorted(site_url + m["url"] for m in models)
    published = _plot_links(page, "svg.az-published")
    assert len(published) == sum(1 for m in models if m["published"] is not None)
    for url in set(years) | set(published):
        assert page.request.get(url).status == 200, url
    legend = page.locator("svg.az-years text.az-legend").all_text_contents()
    assert "BERT" in legend and "GPT" in legend
    # the largest model's point is the plot's top one: nothing covers it
    top = max(models, key=lambda m: m["params"])
    page.locator(f'svg.az-years a[href="{top["url"]}"]').click()
    page.wait_for_url(re.compile(rf".*/{re.escape(top['url'])}$"))


def test_architecture_page_pictures_its_models(page, site_url):
    _open(page, site_url + "architectures/gpt/", 1280)
    links = _plot_links(page, "svg.az-architecture")
    listed = page.locator("article .md-typeset__table a[href*='models/']").count()
    assert len(links) == listed >= 2
    for url in links:
        assert page.request.get(url).status == 200, url
    assert page.locator('.archzoo-whatif[data-architecture="gpt"][data-model=""]').count() == 1
    types = page.locator("article .az-config").first.inner_text()  # the configuration table
    assert "Annotated" not in types and "\\|" not in types and "integer or null" in types
