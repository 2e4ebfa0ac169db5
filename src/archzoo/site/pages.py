"""The site's generated pages as markdown: plain functions of views, with no MkDocs in sight.

Links between generated pages are relative ``.md`` links, so MkDocs checks every one of them in a
strict build. Math is written as ``pymdownx.arithmatex``'s own output, diagrams as ``mermaid`` fences for
``pymdownx.superfences``, and plots as inline SVG that search does not index.

Text is text. Every string from a registry entry, a configuration or a plugin (titles, summaries, tags,
citations, notes, block names and descriptions, configuration descriptions and defaults) is plain text,
never markdown or HTML: ``[x](javascript:...)`` or ``<script>`` in a title is shown as those characters.
Each context has its escaper: `text_html` for HTML text and attributes, `text_md` for the few markdown
places (table cells next to links MkDocs checks, headings), `nav_title` for the navigation,
`_front_matter` (a YAML dumper) for page metadata, ``diagram`` for mermaid labels, `models_csv` for
spreadsheet cells. Characters that cannot be shown (C0 and C1 controls but tab and newline, DEL, lone
surrogates) become U+FFFD everywhere (`displayable`). Links the site makes from registry data (a
source's ``url``) are made only to ``http``, ``https`` or relative targets (`safe_url`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from html import escape
from typing import Any
from urllib.parse import quote

import yaml

from ..report import human_bytes, human_count
from . import svg
from .mdext import END, START
from .views import ArchitectureView, BlockRow, ModelView, fmt_gap, weights_text

__all__ = [
    "NavSection",
    "architecture_page",
    "architecture_path",
    "csv_cell",
    "displayable",
    "home_page",
    "model_page",
    "model_path",
    "models_csv",
    "models_json",
    "models_page",
    "nav_config",
    "nav_title",
    "safe_url",
    "text_html",
    "text_md",
]

MODELS_DIR = "models"
ARCHITECTURES_DIR = "architectures"


def model_path(model_id: str) -> str:
    """The generated page of a model, relative to the docs folder."""
    return f"{MODELS_DIR}/{model_id}.md"


def architecture_path(name: str) -> str:
    return f"{ARCHITECTURES_DIR}/{name}/index.md"


# ---- text in each context ---------------------------------------------------------------------------

#: What no page can show: C0 controls but tab and newline, DEL, C1 controls, lone surrogates (which
#: cannot even be written as UTF-8).
_UNSHOWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_LINE_BREAKS = re.compile("\r\n?|[\x85\u2028\u2029]")


def displayable(text: Any) -> str:
    """``text`` as a page can show it: line breaks as ``\\n``, every character that cannot be shown
    (a control character, DEL, a lone surrogate) as U+FFFD, the replacement character."""
    text = _LINE_BREAKS.sub("\n", str(text))
    return _UNSHOWABLE.sub("\ufffd", text)


def _one_line(text: Any) -> str:
    """`displayable` with every line break and tab as a space: for table cells, metadata, labels."""
    return displayable(text).replace("\n", " ").replace("\t", " ")


def text_html(text: Any) -> str:
    """Plain text as HTML, safe in element content and in quoted attribute values alike."""
    return escape(displayable(text), quote=True)


_e = text_html

#: ASCII characters that stay as they are in `text_md`: none of them starts markdown syntax in the middle
#: of a line, with the site's extensions or the common others (smarty, tilde, caret, mark, critic, keys,
#: emoji, magiclink all use characters outside this set).
_MD_INERT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,-./;?%")


@lru_cache(maxsize=65536)
def text_md(text: str) -> str:
    """Plain text as inline markdown that renders as exactly this text, on one line: every ASCII
    character outside `_MD_INERT` becomes a numeric character reference, which markdown passes through
    untouched and the browser shows as the character. For places where markdown is kept because MkDocs
    checks the links beside the text (tables, headings); never at the start of a block."""
    return "".join(c if c in _MD_INERT or ord(c) > 127 else f"&#{ord(c)};" for c in _one_line(text))


#: Schemes the site makes links to; anything else (javascript:, data:, vbscript:, file:) is shown as text.
SAFE_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def safe_url(url: Any) -> str | None:
    """``url`` when a link to it is safe to make (``http``, ``https`` or relative), else None.

    The scheme is read as a browser reads it: after dropping leading and trailing spaces and controls
    and every tab and line break (``java\\tscript:`` is ``javascript:`` to a browser).
    """
    shown = displayable(url)
    seen = re.sub("[\t\n\r]", "", shown.strip("".join(map(chr, range(33)))))
    scheme = _SCHEME.match(seen)
    if scheme and scheme.group(1).lower() not in SAFE_SCHEMES:
        return None
    return shown


def _link(label: str, url: Any) -> str:
    """A link the site makes from registry data, or its label and target as text when the target's
    scheme is not one the site links to."""
    target = safe_url(url)
    if target is None:
        return f"{_e(label)} <code>{_e(url)}</code>"
    return f'<a href="{_e(target)}">{_e(label)}</a>'


# ---- markdown helpers -------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Markup the site wrote (links, spans) safe inside a markdown table cell; text goes through `text_md`."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A markdown table; ``align`` holds one of ``l``, ``r`` or ``c`` per column."""
    align = align or "l" * len(headers)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _m(tex: str) -> str:
    """Inline math inside a raw HTML block: arithmatex's own output, which the site's script renders
    (KaTeX, with no trusted commands: a plugin's LaTeX cannot make links or raw HTML)."""
    return f'<span class="arithmatex">\\({escape(displayable(tex), quote=False)}\\)</span>' if tex else "—"


def _raw(html: str) -> str:
    """A block of raw HTML between the markers `archzoo.site.mdext` passes through unparsed."""
    return f"{START}\n{html}\n{END}"


def _html_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str = "", css: str = "") -> str:
    """A table as raw HTML; cells are HTML already (escape text before passing it)."""
    align = align or "l" * len(headers)
    names = {"l": "left", "r": "right", "c": "center"}
    head = "".join(f'<th align="{names[a]}">{h}</th>' for h, a in zip(headers, align, strict=False))
    body = "".join(
        "<tr>" + "".join(f'<td align="{names[a]}">{c}</td>' for c, a in zip(row, align, strict=False)) + "</tr>"
        for row in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"  # no class: Material styles it
    return _raw(f'<div class="{css}">{table}</div>' if css else table)


@cache
def _lexer(language: str):
    from pygments.lexers import get_lexer_by_name

    return get_lexer_by_name(language)


@cache
def _formatter():
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True)


@lru_cache(maxsize=8192)
def _highlight(code: str, language: str) -> str:
    from pygments import highlight

    return highlight(code, _lexer(language), _formatter())


def _self_contained_lines(code: str) -> bool:
    """True when every line of ``code`` lexes on its own: no string or bracket spans two lines."""
    if '"""' in code or "'''" in code:
        return False
    for line in code.split("\n"):
        if line.rstrip().endswith("\\") or sum(line.count(c) for c in "([{") != sum(line.count(c) for c in ")]}"):
            return False
    return True


def _code(code: str, language: str) -> str:
    """A highlighted code block as raw HTML, the same markup pymdownx.highlight writes for a fence
    (Material's copy button and colours apply). Lines that lex on their own are highlighted one by one
    and cached: the reference snippets of a zoo share all their lines but one."""
    code = displayable(code)
    if _self_contained_lines(code):
        body = "".join(_highlight(line + "\n", language) for line in code.rstrip("\n").split("\n"))
    else:
        body = _highlight(code, language)
    return _raw(
        f'<div class="language-{language} highlight az-wrap"><pre><span></span><code>{body.rstrip()}</code></pre></div>'
    )


_FLAT_YAML = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): (\S.*)$")


def _yaml_code(text: str) -> str:
    """A configuration's YAML as a code block: flat ``key: value`` lines get pygments' own markup
    without running pygments (every model page has one); anything else goes through pygments."""
    text = displayable(text)
    lines = text.rstrip("\n").split("\n")
    found = [_FLAT_YAML.match(line) for line in lines]
    matches = [m for m in found if m is not None]
    if len(matches) < len(found) or any(
        m.group(2).startswith(("'", '"', "[", "{", "&", "*", "!", "|", ">")) for m in matches
    ):
        return _code(text, "yaml")
    body = "\n".join(
        f'<span class="nt">{m.group(1)}</span><span class="p">:</span><span class="w"> </span>'
        f'<span class="l l-Scalar l-Scalar-Plain">{escape(m.group(2), quote=False)}</span>'
        for m in matches
    )
    return _raw(f'<div class="language-yaml highlight az-wrap"><pre><span></span><code>{body}</code></pre></div>')


def _plain_code(text: str, language: str) -> str:
    """A code block without highlighting (a one-line shell command)."""
    return _raw(
        f'<div class="language-{language} highlight az-wrap"><pre><span></span><code>{_e(text)}</code></pre></div>'
    )


def _figure(svg: str, caption: str) -> str:
    """Inline SVG; ``data-search-exclude`` keeps tick labels out of the search index."""
    if not svg:
        return ""
    return _raw(f'<figure class="az-figure" data-search-exclude>{svg}<figcaption>{_e(caption)}</figcaption></figure>')


def _rel(from_path: str, to_path: str) -> str:
    """A relative link between two docs-folder paths (``models/a.md`` -> ``architectures/b/index.md``)."""
    src = from_path.split("/")[:-1]
    dst = to_path.split("/")
    common = 0
    while common < min(len(src), len(dst) - 1) and src[common] == dst[common]:
        common += 1
    return "/".join([".."] * (len(src) - common) + dst[common:])


def _url_of(path: str, directory_urls: bool) -> str:
    """Where MkDocs publishes a docs-folder page: ``models/a.md`` -> ``models/a/`` (or ``models/a.html``)."""
    if not path.endswith(".md"):
        return path
    stem = path[:-3]
    if stem == "index" or stem.endswith("/index"):
        return stem[:-5] if directory_urls else stem + ".html"
    return stem + "/" if directory_urls else stem + ".html"


def _href(from_path: str, to_path: str, directory_urls: bool = True) -> str:
    """The relative URL from one generated page to another, as MkDocs would write it (for links inside
    raw HTML, which MkDocs does not rewrite)."""
    src = _url_of(from_path, directory_urls)
    dst = _url_of(to_path, directory_urls)
    base = src.split("/")[:-1]
    target = dst.split("/")
    common = 0
    while common < min(len(base), len(target) - 1) and base[common] == target[common]:
        common += 1
    return "/".join([".."] * (len(base) - common) + target[common:]) or "./"


def _tree_name(row: BlockRow) -> str:
    mark = "└&nbsp;" if row.depth else ""
    return (
        f'<span class="az-tree" style="--az-depth:{row.depth}">{mark}<span class="az-block" '
        f'title="{_e(row.description)}">{_e(row.name)}</span></span>'
    )


def _count(row: BlockRow) -> str:
    """How many copies run, and how many are stored when that differs: ``12 (shared)``, ``64 of 256``."""
    if row.shared:
        return f"{row.count:,} (shared)" if row.count != 1 else "1"
    if row.stored != row.count:
        return f"{row.count:,} of {row.stored:,}"
    return f"{row.count:,}"


def _share(value: float) -> str:
    if value <= 0:
        return "—"
    return f"{value:.1%}" if value >= 0.001 else "&lt;0.1%"


def _plain(value: Any) -> Any:
    """Metadata for the site's own hooks: strings made `displayable` on one line, containers walked."""
    if isinstance(value, str):
        return _one_line(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _front_matter(title: str, description: str, **values: Any) -> str:
    """A page's YAML front matter, written by a YAML dumper so that no character of a title can end it
    or make it unreadable (MkDocs would then print it as page text and drop the page's metadata).

    ``title`` and ``description`` are plain text, escaped here: the theme writes them into ``<title>``,
    the header and ``<meta name="description" content="...">`` as they are. The other values are for the
    site's own hooks, which escape what they show.
    """
    data = {"title": text_html(_one_line(title)), "description": text_html(_one_line(description))}
    data.update((key, _plain(value)) for key, value in values.items())
    # one line per value (no folding), non-printable characters escaped by the dumper itself
    return "---\n" + yaml.dump(data, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True, width=1 << 30) + "---"


#: libyaml's dumper when PyYAML has it (six times faster: one front matter per model page)
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# ---- model page -------------------------------------------------------------------------------------


def _published_rows(view: ModelView) -> list[tuple[str, str]]:
    if view.published is None:
        return [("Published figure", "none recorded in the registry entry")]
    links = " · ".join(_link(label, url) for label, url in view.published_links)
    source = f"{_e(view.published_citation)}, {_e(view.published_locator)}" + (f" · {links}" if links else "")
    rows = [("Published figure", f"<strong>{_e(view.published)}</strong> ({view.published_value:,}) — {source}")]
    difference = f"{view.difference:+,} ({fmt_gap(view.gap)}), status <strong>{_e(view.status)}</strong>"
    if view.reason:
        difference += f" — reason <code>{_e(view.reason)}</code>: {_e(view.reason_text)}. {_e(view.reason_note)}"
    elif view.status in ("within-rounding", "exact"):
        difference += " — within the rounding of the printed figure"
    rows.append(("Difference (computed − published)", difference))
    if view.published_active is not None and view.published_active_value is not None:
        rows.append(
            (
                "Published active parameters",
                f"<strong>{_e(view.published_active)}</strong> ({view.published_active_value:,}) — the same source",
            )
        )
        active = (
            f"{view.active_difference or 0:+,} ({fmt_gap(view.active_gap)}), status "
            f"<strong>{_e(view.active_status)}</strong>"
        )
        if view.active_status == "within-rounding":
            active += " — within the rounding of the printed figure"
        elif view.reason:
            active += f" — reason <code>{_e(view.reason)}</code>, as above"
        rows.append(("Active difference (computed − published)", active))
    return rows


def _summary_table(view: ModelView) -> str:
    approx_gap = (view.approx - view.params) / view.params if view.params else 0.0
    rows: list[tuple[str, str]] = [
        ("Parameters (exact)", f'<strong class="az-params">{view.params:,}</strong> ({human_count(view.params)})'),
        (
            "Leading-order approximation",
            f"{view.approx:,} ({human_count(view.approx)}, {approx_gap:+.2%}) = {_m(view.approx_formula)}",
        ),
        (
            "Non-embedding parameters",
            f"{view.non_embedding:,} ({human_count(view.non_embedding)}); embedding tables (token and "
            f"position, where the model has them) hold {view.embedding:,}",
        ),
    ]
    if view.active_params != view.params:
        share = view.active_params / view.params if view.params else 0.0
        rows.insert(
            1,
            (
                "Active parameters (exact)",
                f'<strong class="az-active">{view.active_params:,}</strong> ({human_count(view.active_params)}, '
                f"{share:.1%} of the total): those one token uses, = {_m(view.active_formula)}",
            ),
        )
    rows += _published_rows(view)
    rows.append(("Weights", _e(weights_text(view.weights))))
    share = view.attention_flops / view.flops if view.flops else 0.0
    rows.append(
        (
            f"Forward FLOPs at N = {view.seq_len:,}",
            f"{view.flops:,} ({human_count(view.flops)}), of which attention products "
            f"{human_count(view.attention_flops)} ({share:.1%}); N is the {_e(view.seq_len_meaning)}",
        )
    )
    if view.kv_elements:
        rows.append(
            (
                "KV cache per token",
                f"{human_bytes(2 * view.kv_elements)} in fp16 ({human_bytes(4 * view.kv_elements)} in fp32): "
                f"{view.kv_elements:,} elements = {_m(view.kv_formula)}; "
                f"{human_bytes(2 * view.kv_elements * view.seq_len)} in fp16 for a full context of "
                f"{view.seq_len:,} tokens",
            )
        )
    training = view.training_bytes
    rows.append(
        (
            "Training memory, Adam",
            f"{human_bytes(training['fp32'])} in fp32, {human_bytes(training['mixed_bf16'])} in mixed "
            'precision (<a href="#training-memory">assumptions</a>)',
        )
    )
    return _html_table(("Quantity", "Value"), rows, css="az-summary")


def _blocks_table(rows: Sequence[BlockRow], *, substituted: bool = True, flops: bool = True) -> str:
    """The block tree as a table: a row of figures per block, and under it a row of its own with the
    parameter formula for one copy, so that a long formula never narrows the figures' columns. The
    formula with the configuration's values is in the same row, shown on demand (`_values_toggle`)."""
    headers = ["Block", "Count", "Parameters", "Share"] + (["FLOPs"] if flops else [])
    names = {"l": "left", "r": "right"}
    align = "lrrr" + ("r" if flops else "")
    # the share column gives way first on a narrow screen (the stylesheet hides it; the bar chart shows it)
    classes = ["", ' class="az-count"', "", ' class="az-share"', ""]

    def row_html(cells: Sequence[str], tag: str) -> str:
        return "".join(
            f'<{tag}{css} align="{names[a]}">{c}</{tag}>' for c, a, css in zip(cells, align, classes, strict=False)
        )

    head = row_html(headers, "th")
    body = []
    for row in rows:
        cells = [_tree_name(row), _count(row), f"{row.params:,}", _share(row.share)]
        if flops:
            cells.append(human_count(row.flops) if row.flops else "—")
        body.append(f'<tr class="az-row">{row_html(cells, "td")}</tr>')
        if row.formula == "0":
            formula = "0"
        else:
            formula = _m(row.formula)
            if substituted and row.substituted != row.formula:
                formula += f' <span class="az-values">{_m("= " + row.substituted)}</span>'
        if row.tied_to:
            formula += f" (weight tied to <code>{_e(row.tied_to)}</code>)"
        indent = f' style="--az-depth:{row.depth}"' if row.depth else ""
        body.append(f'<tr class="az-formula"><td colspan="{len(headers)}"{indent}>{formula}</td></tr>')
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return _raw(f'<div class="az-blocks">{table}</div>')


#: The switch that shows every formula of a Blocks table with the configuration's values (CSS only:
#: ``.az-values`` is hidden until the checkbox before the table is checked).
def _values_toggle(key: str) -> str:
    return (
        f'<input type="checkbox" class="az-values-toggle" id="az-values-{key}">'
        f'<label class="az-values-label" for="az-values-{key}">show the formulas with this configuration’s '
        "values</label>"
    )


def _equation(tex: str) -> str:
    """A formula of its own paragraph, as inline math so that KaTeX may break it after a + or an =
    (display math never breaks, and a long polynomial would scroll sideways on a phone)."""
    return f'<p class="az-eq">{_m(tex)}</p>'


def whatif(architecture: str, model_id: str = "") -> str:
    """Where the what-if calculator goes (its script fills the element): on every model page and every
    architecture page; ``model_id`` is "" on an architecture page."""
    return f'<div class="archzoo-whatif" data-architecture="{_e(architecture)}" data-model="{_e(model_id)}"></div>'


def _card(label: str, value: str, note: str = "", css: str = "") -> str:
    """One headline figure: a short label, the figure large, a line of context under it."""
    return (
        f'<div class="az-card{(" " + css) if css else ""}"><div class="az-card-label">{label}</div>'
        f'<div class="az-card-value">{value}</div>'
        + (f'<div class="az-card-note">{note}</div>' if note else "")
        + "</div>"
    )


def _short_citation(citation: str) -> str:
    """``Devlin et al. (2019). “BERT...”. NAACL`` -> ``Devlin et al. (2019)``."""
    head, found, _ = citation.partition("). ")
    return head + ")" if found else citation


def _headline(view: ModelView) -> str:
    """The first screen of a model page: exact parameters, the published figure and the difference with
    its reason, forward FLOPs at N, the weights in fp16 and the KV cache, each a figure that stands out."""
    cards = []
    params_note = human_count(view.params)
    if view.active_params != view.params:
        params_note += f" · {view.active_params:,} active ({human_count(view.active_params)})"
    cards.append(_card("Parameters (exact)", f'<span class="az-num">{view.params:,}</span>', params_note, "az-wide"))
    if view.published is None or view.published_value is None or view.difference is None:
        cards.append(_card("Published", "—", "no figure recorded in the registry entry"))
    else:
        reason = (
            f"reason <code>{_e(view.reason)}</code>: {_e(view.reason_text)}"
            if view.reason
            else "within the rounding of the printed figure"
            if view.status in ("within-rounding", "exact")
            else f"status {_e(view.status)}"
        )
        difference = f'<span class="az-num">{view.difference:+,}</span> ({fmt_gap(view.gap)})'
        cards.append(
            _card(
                "Published",
                f'<span class="az-num">{_e(view.published)}</span>',
                f"{_e(_short_citation(view.published_citation))}; difference {difference}; {reason}",
            )
        )
    cards.append(
        _card(
            f"Forward FLOPs at N = {view.seq_len:,}",
            f'<span class="az-num">{human_count(view.flops)}</span>',
            f'<span class="az-num">{view.flops:,}</span>',
        )
    )
    if "fp16" in view.weights:
        others = " · ".join(
            f'<span class="az-num">{k} {human_bytes(v)}</span>' for k, v in view.weights.items() if k != "fp16"
        )
        cards.append(
            _card("Weights in fp16", f'<span class="az-num">{human_bytes(view.weights["fp16"])}</span>', others)
        )
    if view.kv_elements:
        cards.append(
            _card(
                "KV cache per token, fp16",
                f'<span class="az-num">{human_bytes(2 * view.kv_elements)}</span>',
                f"{view.kv_elements:,} elements; {human_bytes(2 * view.kv_elements * view.seq_len)} for "
                f"{view.seq_len:,} tokens",
            )
        )
    else:
        cards.append(_card("KV cache", "none", "no cache: every token attends to the whole input at once"))
    return f'<div class="az-headline">{"".join(cards)}</div>'


def _symbols_table(symbols: Sequence[dict[str, Any]], seq_len_note: str = "") -> str:
    rows = []
    for s in symbols:
        value = s["value"]
        shown = f"{value:,}" if isinstance(value, int) else (seq_len_note or "free")
        meaning = s["meaning"] + (f" = {s['definition']}" if s.get("definition") else "")
        rows.append((_m(s["latex"]), _e(meaning), _e(shown)))
    return _html_table(("Symbol", "Meaning", "Value"), rows, "llr", css="az-config az-symbols")


class _Doc:
    """A page assembled from markdown parts and raw HTML parts; adjacent HTML parts share one block."""

    def __init__(self) -> None:
        self.parts: list[tuple[bool, str]] = []

    def md(self, text: str) -> _Doc:
        if text:
            self.parts.append((False, text))
        return self

    def html(self, text: str) -> _Doc:
        if text:
            if self.parts and self.parts[-1][0]:
                self.parts[-1] = (True, self.parts[-1][1] + "\n" + text)
            else:
                self.parts.append((True, text))
        return self

    def p(self, text: str) -> _Doc:
        return self.html(f"<p>{text}</p>")

    def text(self) -> str:
        return "\n\n".join(_raw(t) if is_html else t for is_html, t in self.parts) + "\n"


def _unraw(block: str) -> str:
    """The HTML inside a `_raw` block (the helpers return wrapped blocks; `_Doc` wraps once)."""
    return block.removeprefix(START + "\n").removesuffix("\n" + END)


def model_page(view: ModelView, *, page_path: str | None = None, directory_urls: bool = True) -> str:
    """The markdown of a model's page.

    Headings are markdown (the table of contents sees them); everything else is pre-rendered HTML
    (`archzoo.site.mdext` passes it through unparsed), with links written as MkDocs publishes pages.
    """
    page_path = page_path or model_path(view.id)

    def href(target: str) -> str:
        return escape(_href(page_path, target, directory_urls))

    tags = " ".join(f"<code>{_e(t)}</code>" for t in view.tags)
    doc = _Doc()
    doc.md(
        _front_matter(
            title=view.id,
            description=f"{view.title}: {view.params:,} parameters. {view.summary}",
            search={"exclude": True},
            archzoo_search={
                "title": view.title,
                "tags": list(view.tags),
                "architecture": view.architecture,
                "summary": view.summary,
                "params": view.params,
            },
        )
    )
    doc.md(f"# {text_md(view.id)}")
    doc.p(
        f'<strong>{_e(view.title)}</strong> · <a href="{href(architecture_path(view.architecture))}">'
        f"{_e(view.architecture_title)}</a> architecture · {_e(view.year)}" + (f" · tags: {tags}" if tags else "")
    )
    doc.p(_e(view.summary))
    doc.html(_headline(view))
    doc.html(whatif(view.architecture, view.id))
    doc.md("## Details").html(_unraw(_summary_table(view)))
    doc.md("## Blocks")
    doc.p(
        f"Every block of the model, with how many times it runs in one forward pass (for experts: per token, "
        f"and of how many stored), its parameters (all stored copies; a shared layer's weights count once), "
        f"its share of the {view.params:,} parameters and its forward FLOPs at N = {view.seq_len:,}; under "
        "each block, its parameter formula for one copy."
    )
    doc.html(_values_toggle("blocks"))
    doc.html(_unraw(_blocks_table(view.rows)))
    doc.md("### Symbols").html(_unraw(_symbols_table(view.symbols, f"{view.seq_len:,} here")))
    doc.html(_unraw(_figure(view.params_svg, f"Parameters of {view.id} by block (all copies).")))
    doc.md("## Complexity")
    doc.p(
        "Forward FLOPs for a batch of one sequence of N tokens, counting 2 FLOPs per multiply–accumulate "
        f'(<a href="{href("methodology.md")}#conventions">conventions</a>):'
    )
    doc.html(_equation(f"F(N) = {view.flops_formula}"))
    qk, av = _m("QK^{\\top}"), _m("AV")
    doc.p(f"split into the attention products {qk} and {av} and everything else:")
    doc.html(_equation(f"F_{{\\mathrm{{attn}}}}(N) = {view.attention_formula}"))
    doc.html(_equation(f"F_{{\\mathrm{{rest}}}}(N) = {view.other_formula}"))
    overtakes = (
        (
            f"from <strong>N = {view.overtakes_at:,}</strong> tokens"
            + (
                ""
                if view.overtakes_at <= view.seq_len
                else f", beyond this model's N = {view.seq_len:,}: at its own length the rest dominates"
            )
        )
        if view.overtakes_at
        else "never: no N² term"
    )
    doc.html(
        '<ul class="az-facts">'
        f"<li><strong>Time</strong>: {_m(view.time_complexity)} FLOPs per forward pass</li>"
        f"<li><strong>Memory</strong>: {_memory_text(view)}</li>"
        f"<li><strong>Attention overtakes the rest</strong> {overtakes}</li>"
        "</ul>"
    )
    doc.html(
        _unraw(
            _figure(
                view.flops_svg,
                f"Forward FLOPs of {view.id} against N, log–log: attention products, everything else, and their total.",
            )
        )
    )
    doc.md("## Block diagram")
    doc.md("```mermaid\n" + view.mermaid + "\n```")
    doc.md("## Configuration")
    doc.p("The full configuration, with the architecture's defaults for the keys the registry entry leaves out:")
    doc.html(_unraw(_yaml_code(view.config_yaml)))
    doc.md("## Reproduce this")
    doc.p("Count this configuration with archzoo:").html(_unraw(_plain_code(view.command, "bash")))
    if view.reference_code:
        doc.p(
            f"Build the reference implementation (<code>{_e(view.reference_target)}</code>) on the meta device "
            "and count its parameters with PyTorch:"
        )
        doc.html(_unraw(_code(view.reference_code, "python")))
    if view.reference_measured:
        doc.p(
            f"Measured on the reference: {view.reference_measured:,} parameters"
            + (f" ({_e(view.reference_measured_with)})." if view.reference_measured_with else ".")
        )
    doc.md("## Training memory")
    doc.p(
        "Weights, gradients and Adam's two moments, per parameter; activations, temporary buffers and "
        "framework overhead are not included. In fp32: 4 bytes of weights + 4 of gradients + 8 of Adam "
        "moments = 16 bytes per parameter. In mixed precision (bf16): 2 (bf16 weights) + 2 (bf16 "
        "gradients) + 4 (fp32 master weights) + 8 (fp32 moments) = 16 bytes per parameter."
    )
    doc.html(
        _unraw(
            _html_table(
                ("Recipe", "Bytes per parameter", "Total"),
                [
                    ("fp32", "16", human_bytes(view.training_bytes["fp32"])),
                    ("mixed precision, bf16", "16", human_bytes(view.training_bytes["mixed_bf16"])),
                ],
                "lrr",
            )
        )
    )
    doc.p(
        f'Registry entry: <code class="az-path">{_e(view.source_path)}</code> · <a href="{href("models/index.md")}">all models</a>'
        f' · <a href="{href("index.md")}">home</a>'
    )
    return doc.text()


def _memory_text(view: ModelView) -> str:
    parts = [f"weights {_m(view.params_complexity)}"]
    if view.kv_elements:
        per_context = "N \\cdot " + view.kv_complexity
        parts.append(f"KV cache {_m(view.kv_complexity)} per token, so {_m(per_context)} for N tokens")
    square, quadratic = _m("N \\times N"), _m("O(N^{2})")
    parts.append(
        f"eager attention materialises one {square} score matrix per head, {quadratic}; fused kernels avoid it"
    )
    return "; ".join(parts)


# ---- architecture page ------------------------------------------------------------------------------


def _md_link(text: str, target: str) -> str:
    """A markdown link to another page of the site: MkDocs rewrites and checks it in a strict build."""
    return f"[{text_md(text)}]({quote(target, safe='/.#-_~')})"


def _models_table(
    models: Sequence[ModelView], page_path: str, *, architecture: bool = False, tags: bool = False
) -> str:
    """Models as a markdown table (MkDocs checks its links); every text cell goes through `text_md`."""
    headers = (
        ["Model", "Title"]
        + (["Architecture"] if architecture else [])
        + ["Parameters", "Active", "Published", "Difference", "Forward FLOPs"]
    )
    align = "ll" + ("l" if architecture else "") + "rrrrr"
    rows = []
    for m in models:
        title = text_md(m.title) + (
            f' <span class="az-tags">{text_md(" ".join(m.tags))}</span>' if tags and m.tags else ""
        )
        row = [_md_link(m.id, _rel(page_path, model_path(m.id))), title]
        if architecture:
            row.append(_md_link(m.architecture, _rel(page_path, architecture_path(m.architecture))))
        published = text_md(m.published) if m.published else "—"
        if m.published_active:
            published += f" ({text_md(m.published_active)} active)"
        row += [
            f"{m.params:,}",
            # the parameters one token uses; a dense model's are all of them, sorted as such
            f"{m.active_params:,}" if m.active_params != m.params else f'<span data-v="{m.params}">—</span>',
            published,
            fmt_gap(m.gap) + (f" ({fmt_gap(m.active_gap)} active)" if m.active_gap is not None else ""),
            f'<span data-v="{int(m.flops)}">{human_count(m.flops)}</span> <span class="az-n">(N = {m.seq_len:,})</span>',
        ]
        rows.append(row)
    return _table(headers, rows, align)


def _default(value: Any) -> str:
    """A configuration default as JSON (what a registry entry writes), or its repr when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def architecture_page(view: ArchitectureView, *, directory_urls: bool = True) -> str:
    """The markdown of an architecture's page: its plugin, configuration keys, blocks, formulas, models.

    Everything the plugin wrote (title, summary, citation, configuration descriptions and defaults,
    block names) is plain text: headings go through `text_md`, the rest is pre-rendered HTML."""
    page_path = architecture_path(view.name)
    plugin = f"<code>{_e(view.plugin)}</code>" + (f" {_e(view.plugin_version)}" if view.plugin_version else "")
    doc = _Doc()
    doc.md(_front_matter(title=view.title, description=view.summary))
    doc.md(f"# {text_md(view.title)}")
    doc.p(_e(view.summary))
    doc.p(
        f"Architecture <code>{_e(view.name)}</code>, registered by the plugin {plugin}"
        + (f" ({_e(view.plugin_source)})" if view.plugin_source else "")
        + "."
    )
    doc.p(f"Reference: {_e(view.citation)}")
    if view.hf_model_types:
        doc.p(
            "Reads Hugging Face <code>config.json</code> files of model type "
            + ", ".join(f"<code>{_e(t)}</code>" for t in view.hf_model_types)
            + " (<code>archzoo count --hf-config</code>)."
        )
    doc.md(f"## Models ({len(view.models)})")
    if view.models:
        # on a phone the title and active columns give way (the stylesheet hides them: az-models)
        doc.md(_compact(_models_table(view.models, page_path), "az-models"))
        doc.html(
            _unraw(
                _figure(
                    architecture_plot(view, directory_urls),
                    f"Exact parameters and forward FLOPs of each {view.title} model at its own sequence length "
                    "N, log–log, coloured by N. Each point opens its model's page.",
                )
            )
        )
    else:
        doc.p("No registry entry uses this architecture yet.")
    doc.md("## Configuration")
    doc.html(
        _unraw(
            _html_table(
                ("Key", "Type", "Default", "Meaning"),
                css="az-config",
                rows=[
                    (f"<code>{_e(k)}</code>", f"<code>{_e(t)}</code>", f"<code>{_e(_default(d))}</code>", _e(desc))
                    for k, t, d, desc in view.config_fields
                ],
            )
        )
    )
    doc.html(whatif(view.name))
    if view.error:
        doc.p(f"The default configuration cannot be built ({_e(view.error)}), so no formulas are shown.")
        return doc.text()
    doc.md("## General formulas")
    doc.p(
        f"For the default configuration ({view.default_params:,} parameters); other configurations change "
        "which blocks exist (a pooler, a head, tied weights) and the values of the symbols."
    )
    doc.html(_equation(f"\\text{{params}} = {view.params_formula}"))
    doc.html(_equation(f"\\text{{leading order}} = {view.approx_formula}"))
    doc.html(_equation(f"F(N) = {view.flops_formula}"))
    doc.html(_equation(f"F_{{\\mathrm{{attn}}}}(N) = {view.attention_formula}"))
    doc.p(f"Time complexity: {_m(view.time_complexity)}.")
    if view.kv_formula:
        doc.p(f"KV cache per token: {_m(view.kv_formula)} elements.")
    doc.md("### Symbols").html(_unraw(_symbols_table(view.symbols)))
    doc.md("## Blocks")
    doc.p("The blocks of the default configuration, with their parameter formulas for one copy.")
    doc.html(_unraw(_blocks_table(view.rows, substituted=False, flops=False)))
    if view.mermaid:
        doc.md("```mermaid\n" + view.mermaid + "\n```")
    doc.md("## Default configuration")
    doc.html(_unraw(_code(view.default_config_yaml, "yaml")))
    return doc.text()


# ---- pictures of the zoo -------------------------------------------------------------------------------


def _model_link(page_path: str, model_id: str, directory_urls: bool) -> str:
    return _href(page_path, model_path(model_id), directory_urls)


def year_plot(models: Sequence[ModelView], page_path: str = "index.md", directory_urls: bool = True) -> str:
    """Every model's exact parameters against its year, log scale, coloured by architecture; each point
    links to the model's page."""
    points = [
        svg.Point(
            x=m.year,
            y=m.params,
            group=m.architecture_title,
            label=f"{m.id} ({m.year}): {m.params:,} parameters",
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(models, key=lambda m: (m.year, m.params, m.id))
    ]
    return svg.scatter_plot(
        points,
        x=svg.Axis("year", ticks="year"),
        y=svg.Axis("parameters (exact, log scale)", log=True),
        title="Parameters against year, every model of the zoo",
        groups=sorted({m.architecture_title for m in models}),
        css="az-years",
    )


#: The legend entry of a published figure within the rounding of the count (no reason needed).
WITHIN_ROUNDING = "within rounding"


def published_plot(models: Sequence[ModelView], page_path: str = "index.md", directory_urls: bool = True) -> str:
    """How far each paper's figure is from the exact count: (exact − published) / published against the
    exact count (log scale), coloured by the entry's reason; models with no published figure are left out."""
    points = [
        svg.Point(
            x=m.params,
            y=m.gap,
            group=m.reason or WITHIN_ROUNDING,
            label=f"{m.id}: {m.params:,} exact, {m.published} published, {fmt_gap(m.gap)}"
            + (f" ({m.reason})" if m.reason else ""),
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(models, key=lambda m: (m.params, m.id))
        if m.gap is not None
    ]
    return svg.scatter_plot(
        points,
        x=svg.Axis("parameters (exact, log scale)", log=True),
        y=svg.Axis("(exact − published) / published", ticks="percent"),
        title="Published figures against the exact counts",
        groups=[WITHIN_ROUNDING],
        zero_line=True,
        css="az-published",
    )


def architecture_plot(view: ArchitectureView, directory_urls: bool = True) -> str:
    """An architecture's models: exact parameters against forward FLOPs at each model's own N, log–log."""
    page_path = architecture_path(view.name)
    points = [
        svg.Point(
            x=m.params,
            y=m.flops,
            group=f"N = {m.seq_len:,}",
            label=f"{m.id}: {m.params:,} parameters, {human_count(m.flops)} FLOPs at N = {m.seq_len:,}",
            href=_model_link(page_path, m.id, directory_urls),
        )
        for m in sorted(view.models, key=lambda m: (m.params, m.id))
    ]
    return svg.scatter_plot(
        points,
        x=svg.Axis("parameters (exact, log scale)", log=True),
        y=svg.Axis("forward FLOPs at N (log scale)", log=True),
        title=f"Parameters and forward FLOPs of the {view.title} models",
        groups=[f"N = {n:,}" for n in sorted({m.seq_len for m in view.models})],
        css="az-architecture",
    )


# ---- home and all-models pages ----------------------------------------------------------------------


#: What the home page says of each of archzoo's own pages, when the site includes it.
PAGE_BLURBS = {
    "methodology.md": "what counts as a parameter, how FLOPs are counted, how every figure is verified, and "
    "why popular tools disagree.",
    "writing-entries.md": "add a model to the zoo: every field, the reason codes, the rounding and 5% rules.",
    "writing-plugins.md": "add an architecture, or a registry of models, as a plugin.",
    "performance.md": "how the site and the registry scale to thousands of models.",
    "peers.md": "what torchinfo, fvcore, thop, ptflops, calflops, DeepSpeed and accelerate report for the same "
    "models, and why each differs from the exact figure.",
}


def home_page(
    models: Sequence[ModelView],
    architectures: Sequence[ArchitectureView],
    *,
    top: int = 5,
    title: str = "archzoo model zoo",
    description: str = "",
    static_pages: Sequence[tuple[str, str]] = (),
    directory_urls: bool = True,
) -> str:
    """The landing page: the owner's title and description, the zoo in two pictures, the largest and
    smallest models, the architectures, and the site's other pages. Its front matter has no title, so the browser's title is
    the site's name once (the theme shows ``page - site`` for every other page)."""
    page_path = "index.md"
    by_size = sorted(models, key=lambda m: (m.params, m.id))
    front = (
        "---\n"
        + yaml.dump(
            {"description": text_html(_one_line(description))}, Dumper=_YAML_DUMPER, allow_unicode=True, width=1 << 30
        )
        + "---"
    )
    method = next((path for _, path in static_pages if path == "methodology.md"), None)
    archzoo = "[archzoo](methodology.md)" if method else "archzoo"
    parts = [p for p in (front, f"# {text_md(title)}", _paragraph(description)) if p]
    parts += [
        f"Every page of this site is computed by {archzoo} from the model's configuration and the building "
        "blocks of its architecture: the exact parameter count with the formula behind every block, forward "
        "FLOPs as a function of the sequence length, memory for inference and training, and the published "
        "figure it is reconciled with.",
        f"The zoo holds **{len(models):,} models** of **{len(architectures):,} architectures**. "
        "Search by id, title or tag with the search box at the top of the page (press <kbd>/</kbd>), "
        "or sort and filter them all on the [all models](models/index.md) page "
        "([models.json](models.json), [models.csv](models.csv)).",
    ]
    if models:
        parts += [
            "## The zoo in pictures",
            _figure(
                year_plot(models, page_path, directory_urls),
                "Exact parameters of every model against the year of its paper (log scale), coloured by "
                "architecture; models of one year are spread side by side. Each point opens its model's page.",
            ),
            _figure(
                published_plot(models, page_path, directory_urls),
                "How far each paper's printed figure is from the exact count, (exact − published) / published, "
                "coloured by the reason the registry entry gives; on the zero line the figures agree. "
                "Models without a published figure are left out. Each point opens its model's page.",
            ),
            "## Largest models",
            _compact(_home_models_table(list(reversed(by_size))[:top], page_path)),
            "## Smallest models",
            _compact(_home_models_table(by_size[:top], page_path)),
        ]
    parts += [
        "## Architectures",
        _compact(
            _table(
                ("Architecture", "Models", "Summary"),
                [
                    (
                        _md_link(a.title, architecture_path(a.name))
                        + f'<br><code class="az-plugin">{text_md(a.plugin)}</code>',
                        str(len(a.models)),
                        text_md(a.summary),
                    )
                    for a in architectures
                ],
                "lrl",
            )
        ),
    ]
    more = [
        f"- {_md_link(name, path)}" + (f": {PAGE_BLURBS[path]}" if path in PAGE_BLURBS else "")
        for name, path in static_pages
    ]
    if more:
        parts += ["## More", "\n".join(more)]
    return "\n\n".join(parts) + "\n"


def _compact(table: str, css: str = "") -> str:
    """A markdown table in a block the stylesheet sets tighter (no column's minimum width, less padding),
    so that the home page's and an architecture page's tables fit a phone's screen."""
    return f'<div class="az-compact{(" " + css) if css else ""}" markdown="1">\n\n{table}\n\n</div>'


def _home_models_table(models: Sequence[ModelView], page_path: str) -> str:
    """The home page's few models: what fits a phone (the all-models page has every column)."""
    rows = []
    for m in models:
        published = text_md(m.published) if m.published else "—"
        if m.published_active:
            published += f" ({text_md(m.published_active)} active)"
        rows.append(
            (
                _md_link(m.id, _rel(page_path, model_path(m.id)))
                + f'<br><span class="az-tags">{text_md(m.title)}, {m.year}</span>',
                f"{m.params:,}",
                published,
                fmt_gap(m.gap),
            )
        )
    return _table(("Model", "Parameters", "Published", "Difference"), rows, "lrrr")


def _paragraph(text: str) -> str:
    """Plain text as one raw HTML paragraph, its lines kept apart."""
    lines = [text_html(line) for line in displayable(text).split("\n") if line.strip()]
    return f'<p class="az-lead">{"<br>".join(lines)}</p>' if lines else ""


def models_page(models: Sequence[ModelView]) -> str:
    """Every model in one sortable, filterable table (the sorting and filtering are ``archzoo.js``)."""
    page_path = model_path("index")
    parts = [
        # not in the search index: every row is a model page, indexed on its own (and parsing a table of
        # thousands of rows would be the search plugin's single largest cost)
        _front_matter(
            title="All models",
            description="Every model of the zoo: exact parameters, published figures and forward FLOPs.",
            hide=["toc"],
            search={"exclude": True},
        ),
        "# All models",
        f"{len(models):,} models. Click a column heading to sort; type in the box to filter by id, title, "
        "architecture or tag. The same data: [models.json](../models.json) · [models.csv](../models.csv). "
        "Difference is (computed − published) / published; FLOPs are for one forward pass at the model's "
        "own sequence length N. In models.csv a text cell that would start with `=`, `+`, `-` or `@` starts "
        "with `'` instead, so that a spreadsheet keeps it as text and never runs it as a formula; numbers "
        "are written as numbers.",
        '<div class="az-filter" markdown="0"><input type="search" id="az-filter" placeholder="Filter models…" '
        'aria-label="Filter models"> <span id="az-filter-count"></span></div>',
        '<div class="az-sortable" markdown="1">',
        _models_table(models, page_path, architecture=True, tags=True),
        "</div>",
    ]
    return "\n\n".join(parts) + "\n"


MODEL_FIELDS = (
    "id",
    "title",
    "architecture",
    "year",
    "tags",
    "params",
    "params_human",
    "non_embedding_params",
    "published",
    "published_value",
    "difference",
    "difference_relative",
    "status",
    "reason",
    "active_params",
    "published_active",
    "published_active_value",
    "active_difference",
    "active_difference_relative",
    "active_status",
    "seq_len",
    "forward_flops",
    "attention_flops",
    "kv_cache_elements_per_token",
    "source",
    "url",
)


def _record(m: ModelView) -> dict[str, Any]:
    """`ModelView.row` with every string `displayable` (a lone surrogate cannot even be written)."""
    return {
        k: (displayable(v) if isinstance(v, str) else [displayable(t) for t in v] if isinstance(v, list) else v)
        for k, v in m.row().items()
    }


def models_json(models: Sequence[ModelView]) -> str:
    """``models.json``: the all-models table as a list of records, strings exactly as the pages show them."""
    return (
        json.dumps(
            {"schema": "archzoo.models/1", "fields": list(MODEL_FIELDS), "models": [_record(m) for m in models]},
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


#: A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """A value as a ``models.csv`` cell: text that a spreadsheet would run as a formula (``=HYPERLINK(...)``,
    ``+1``, ``-1``, ``@SUM(...)``) gets a leading ``'``, as OWASP recommends, so that it stays text.

    Numbers are never touched: the numeric columns (``params``, ``difference``, ``difference_relative``
    and the others) are written from ints and floats, so ``-517760`` and ``-0.004729`` stay numbers; only
    text columns (title, tags, published as printed, status, reason, source) can be quoted.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def models_csv(models: Sequence[ModelView]) -> str:
    """``models.csv``: the same records, tags joined with ``;``, text cells guarded by `csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(MODEL_FIELDS)
    for m in models:
        row = _record(m)
        writer.writerow(
            [csv_cell("" if row[f] is None else (";".join(row[f]) if f == "tags" else row[f])) for f in MODEL_FIELDS]
        )
    return buffer.getvalue()


# ---- navigation -------------------------------------------------------------------------------------


class NavSection:
    """A titled group of navigation links; ``index`` is the page its title opens."""

    def __init__(self, title: str, index: str | None = None, children: Sequence[Any] = ()):
        self.title = title
        self.index = index
        self.children = list(children)


def _chunks(items: Sequence[ModelView], size: int) -> list[Sequence[ModelView]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


#: At most this many links or sections under one navigation section...
NAV_BRANCHING = 12
#: ...except that an architecture with up to this many models lists them all in one section.
NAV_FLAT_UP_TO = 30


def nav_tree(items: Sequence[ModelView], *, branching: int = NAV_BRANCHING) -> list[Any]:
    """``items`` as a balanced tree of sections: a list of models, or of ``(title, subtree)`` pairs.

    With ``levels`` the fewest levels that keep every section to ``branching`` entries, each level splits
    into about ``len(items) ** (1 / levels)`` parts, so the entries a page shows (its section and its
    ancestors' siblings) stay few however large the zoo grows: 21 for 250 models, 33 for 1,250.
    """
    n = len(items)
    if n <= max(branching, NAV_FLAT_UP_TO):
        return list(items)
    levels = 1
    while branching**levels < n:
        levels += 1
    width = math.ceil(n ** (1 / levels) - 1e-9)
    while width**levels < n:
        width += 1

    def split(chunk: Sequence[ModelView], depth: int) -> list[Any]:
        if depth == 1:
            return list(chunk)
        size = width ** (depth - 1)
        return [(f"{part[0].id} … {part[-1].id}", split(part, depth - 1)) for part in _chunks(chunk, size)]

    return split(items, levels)


def nav_title(text: Any) -> str:
    """A navigation title: the theme writes navigation titles into pages as HTML, as they are."""
    return text_html(_one_line(text))


def _nav_items(tree: Sequence[Any]) -> list[Any]:
    items: list[Any] = []
    for node in tree:
        if isinstance(node, tuple):
            title, children = node
            items.append({nav_title(title): _nav_items(children)})
        else:
            items.append({nav_title(node.id): model_path(node.id)})
    return items


def nav_config(
    architectures: Sequence[ArchitectureView], *, static_pages: Sequence[tuple[str, str]] = (), flat: bool = False
) -> list[Any]:
    """The site's navigation, as MkDocs' ``nav`` setting.

    Models are listed under their architecture, in sections of at most `NAV_BRANCHING` entries
    (`nav_tree`); an architecture's section opens its page (its first child, ``navigation.indexes``).
    With ``navigation.prune`` a page renders only the top level, its architecture's sections and its own
    section's links, so the cost of the navigation per page stays nearly flat as the zoo grows. ``flat``
    lists every model at the top level instead (the benchmark's baseline).
    """
    nav: list[Any] = [{"Home": "index.md"}, {"All models": model_path("index")}]
    if flat:
        nav.append({"Architectures": [{nav_title(a.title): architecture_path(a.name)} for a in architectures]})
        models = sorted((m for a in architectures for m in a.models), key=lambda m: m.id)
        nav += [{nav_title(m.id): model_path(m.id)} for m in models]
    else:
        nav.append(
            {
                "Architectures": [
                    {nav_title(a.title): [architecture_path(a.name), *_nav_items(nav_tree(a.models))]}
                    for a in architectures
                ]
            }
        )
    nav += [{nav_title(title): path} for title, path in static_pages]
    return nav


def error_page(message: str) -> str:
    """What a site being served shows while its registry cannot be read: the problems, as ``archzoo
    validate`` prints them (``file:line: key: message``); the page reloads once the files are fixed."""
    return (
        "\n\n".join(
            [
                _front_matter(title="The registry cannot be read", description="The site is waiting for a fix."),
                "# The registry cannot be read",
                "The site rebuilds as soon as the files are saved again; this page then reloads by itself.",
                _raw(f'<pre class="az-error">{text_html(message)}</pre>'),
            ]
        )
        + "\n"
    )
