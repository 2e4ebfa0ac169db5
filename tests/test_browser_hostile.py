"""The hostile registry and plugin of ``tests/hostile/site`` in a real browser: no script from their text
runs, nothing is fetched from outside localhost, and the text is shown as written.

The site is built from the corpus with the hostile plugin loaded, served on 127.0.0.1 by an http.server
thread and opened in Chromium (Debian's /usr/bin/chromium, driven by Playwright, no network). Every
payload of the corpus sets ``window.__pwned`` when it runs: a trap installed before any page script
records every write to it, every dialog (``alert``) and every console message that names it. Every request
that leaves localhost is refused and recorded. Screenshots go to ``test-results/browser/``.
"""

from __future__ import annotations

import pytest
import yaml

from archzoo.host import PluginHost, reset_host
from archzoo.site import build_site
from browsing import OPEN_SHADOW_ROOTS, browser, require_browser, screenshot, served, watched_tab  # noqa: F401
from site_corpus import CORPUS, hostile_plugin

pytestmark = [pytest.mark.browser, pytest.mark.hostile]


#: Installed before any script of the page: records what a payload would do if it ran.
TRAPS = (
    """
window.__pwnedLog = [];
Object.defineProperty(window, "__pwned", {
  configurable: false,
  get() { return undefined; },
  set(value) { window.__pwnedLog.push(String(value)); },
});
"""
    + OPEN_SHADOW_ROOTS
)


def squash(text: str) -> str:
    return " ".join(text.split())


def _entry(name: str) -> dict:
    return yaml.safe_load((CORPUS / "registry" / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    require_browser()
    reset_host(PluginHost(extra_plugins={"hostile-text": hostile_plugin.plugin()}).load())
    try:
        out = build_site(tmp_path_factory.mktemp("browser-hostile") / "site", registry=[CORPUS / "registry"])
    finally:
        reset_host(None)
    with served(out) as url:
        yield url


@pytest.fixture
def page(browser, site_url):  # noqa: F811 (the fixture imported from browsing)
    """A tab with the traps set; after the test, nothing may have run, popped up or left localhost."""
    with watched_tab(browser, site_url, TRAPS) as (tab, watched):
        yield tab
        ran = tab.evaluate("window.__pwnedLog")
    assert ran == [], f"a script from the registry or the plugin ran: {ran}"
    assert watched.dialogs == [], watched.dialogs
    assert watched.outside == [], f"requests left localhost: {watched.outside}"
    assert watched.errors == [], watched.errors
    assert not [m for m in watched.console if "pwned" in m], watched.console


def _diagram_text(svg) -> str:
    """A drawn diagram's text as it reads (without the word joiner that keeps mermaid from seeing ``$$``)."""
    return squash(svg.text_content().replace("\u2060", ""))


def _plugin_text(field: str) -> str:
    """A text of the hostile plugin as a page shows it: its C1 and DEL characters as U+FFFD."""
    return squash(hostile_plugin.DEFAULT_TEXTS[field].replace("\x80\x9f\x7f", "\ufffd" * 3))


def _open(page, url: str, *, math: bool = True, diagram: bool = False):
    """Go to ``url`` and wait until the site's scripts have run (KaTeX has typeset the formulas, mermaid
    drawn the diagram); returns the page's content."""
    page.goto(url)
    content = page.locator("article.md-content__inner")
    content.wait_for()
    if math:
        content.locator(".katex").first.wait_for(timeout=15_000)
    if diagram:
        content.locator("div.mermaid svg").first.wait_for(timeout=15_000)
    page.wait_for_load_state("networkidle")
    return content


def test_home_page(page, site_url):
    content = _open(page, site_url, math=False)
    text = squash(content.inner_text())
    assert squash(_entry("markup-everywhere")["title"]) in text  # the largest models
    assert _plugin_text("title") in text
    assert content.locator("img, script, iframe").count() == 0
    screenshot(page, "hostile-home")


def test_all_models_page_sorts_and_filters(page, site_url):
    content = _open(page, site_url + "models/", math=False)
    table = content.locator(".az-sortable table")
    table.locator("th", has_text="Title").click()  # sorting reads cell text: none of it may run
    page.locator("#az-filter").fill("HYPERLINK")
    rows = table.locator("tbody tr:not([hidden])")
    assert rows.count() == 1
    assert squash(_entry("spreadsheet-formulas")["title"]) in squash(rows.first.inner_text())
    page.locator("#az-filter").fill("")
    text = squash(content.inner_text())
    for name in ("markup-everywhere", "multiline-markdown", "spreadsheet-formulas"):
        assert squash(_entry(name)["title"]) in text, name
    for tag in _entry("markup-everywhere")["tags"]:
        assert squash(tag) in text, tag
    assert content.locator("img, script, iframe, svg[onload]").count() == 0
    screenshot(page, "hostile-all-models")


def test_hostile_model_page(page, site_url):
    content = _open(page, site_url + "models/markup-everywhere/", diagram=True)
    entry = _entry("markup-everywhere")
    assert page.title() == "markup-everywhere - archzoo model zoo"
    description = page.locator('meta[name="description"]').get_attribute("content")
    assert description.startswith(entry["title"] + ": ")
    text = squash(content.inner_text())
    source = entry["published"]["source"]
    for value in (
        entry["title"],
        entry["summary"],
        *entry["tags"],
        source["venue"],
        source["locator"],
        source["authors"][0].split()[-1],
    ):
        assert squash(value) in text, value
    # the https url is a link whose target keeps the quotes and tags as characters
    assert content.locator("a", has_text="source").get_attribute("href") == source["url"]
    assert content.locator("img, script, iframe, textarea").count() == 0
    assert content.locator(".katex-error").count() == 0
    screenshot(page, "hostile-markup-everywhere")


def test_multiline_markdown_page_keeps_its_front_matter(page, site_url):
    content = _open(page, site_url + "models/multiline-markdown/", diagram=True)
    assert page.title() == "multiline-markdown - archzoo model zoo"
    assert (
        page.locator('meta[name="description"]')
        .get_attribute("content")
        .startswith(_entry("multiline-markdown")["title"] + ": ")
    )
    text = squash(content.inner_text())
    assert squash(_entry("multiline-markdown")["summary"]) in text
    assert content.locator("h1").count() == 1 and content.locator("hr, blockquote").count() == 0


def test_plugin_architecture_page(page, site_url):
    content = _open(page, site_url + "architectures/hostile-text/", diagram=True)
    assert squash(page.title()) == _plugin_text("title") + " - archzoo model zoo"
    text = squash(content.inner_text())
    for field in ("title", "summary", "citation", "config_description", "block_name", "symbol_meaning"):
        assert _plugin_text(field) in text, field
    nav = page.locator("nav.md-nav--primary a.md-nav__link--active")
    assert _plugin_text("title") in squash(nav.first.inner_text())
    diagram = content.locator("div.mermaid svg").first
    assert _plugin_text("block_name") in _diagram_text(diagram)
    assert diagram.locator("img, script, a").count() == 0
    assert content.locator("img, script, iframe").count() == 0
    screenshot(page, "hostile-architecture")


def test_plugin_model_page(page, site_url):
    content = _open(page, site_url + "models/plugin-architecture/", diagram=True)
    name = _plugin_text("block_name")
    assert name in squash(content.locator(".az-blocks").inner_text())
    assert f"layers.{name}" in squash(content.locator("svg.az-bars").text_content())
    assert name in _diagram_text(content.locator("div.mermaid svg").first)
    assert content.locator("img, script, iframe").count() == 0


def test_search_results_show_the_text(page, site_url):
    page.goto(site_url)
    page.locator("label.md-search__icon, .md-search__input").first.click()
    page.locator("input.md-search__input").press_sequentially("markup", delay=20)
    result = page.locator(".md-search-result__item a[href*='models/markup-everywhere/']").first
    result.wait_for(timeout=15_000)
    shown = squash(result.inner_text())
    assert "window.__pwned='title'" in shown and "<script>" in shown  # the title, as text
    assert page.locator(".md-search-result img, .md-search-result script, .md-search-result svg[onload]").count() == 0
    screenshot(page, "hostile-search")
