"""Text and markup in each context of a generated page: escapers, markdown and raw-HTML blocks, code,
math, figures and front matter, with no knowledge of what a page shows.

Text is text. Every string from a registry entry, a configuration or a plugin (titles, summaries, tags,
citations, notes, block names and descriptions, configuration descriptions and defaults) is plain text,
never markdown or HTML: ``[x](javascript:...)`` or ``<script>`` in a title is shown as those characters.
Each context has its escaper: `text_html` for HTML text and attributes, `text_md` for the few markdown
places (table cells next to links MkDocs checks, headings), `archzoo.site.navigation.nav_title` for the
navigation, `front_matter` (a YAML dumper) for page metadata, ``diagram`` for mermaid labels,
`archzoo.site.exports.csv_cell` for spreadsheet cells. Characters that cannot be shown (C0 and C1
controls but tab and newline, DEL, lone surrogates) become U+FFFD everywhere (`displayable`). Links the
site makes from registry data (a source's ``url``) are made only to ``http``, ``https`` or relative
targets (`safe_url`).

Math is written as ``pymdownx.arithmatex``'s own output and plots as inline SVG that search does not
index; raw HTML goes between the markers `archzoo.site.mdext` passes through unparsed (`raw`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from html import escape
from typing import Any
from urllib.parse import quote

import yaml

from .mdext import END, START

__all__ = [
    "SAFE_SCHEMES",
    "Doc",
    "code_block",
    "compact",
    "displayable",
    "equation",
    "figure",
    "front_matter",
    "html_table",
    "inline_math",
    "md_link",
    "md_table",
    "one_line",
    "paragraph",
    "plain_code_block",
    "raw",
    "safe_url",
    "source_link",
    "text_html",
    "text_md",
    "unraw",
    "yaml_block",
]


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


def one_line(text: Any) -> str:
    """`displayable` with every line break and tab as a space: for table cells, metadata, labels."""
    return displayable(text).replace("\n", " ").replace("\t", " ")


def text_html(text: Any) -> str:
    """Plain text as HTML, safe in element content and in quoted attribute values alike."""
    return escape(displayable(text), quote=True)


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
    return "".join(c if c in _MD_INERT or ord(c) > 127 else f"&#{ord(c)};" for c in one_line(text))


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


def source_link(label: str, url: Any) -> str:
    """A link the site makes from registry data, or its label and target as text when the target's
    scheme is not one the site links to."""
    target = safe_url(url)
    if target is None:
        return f"{text_html(label)} <code>{text_html(url)}</code>"
    return f'<a href="{text_html(target)}">{text_html(label)}</a>'


# ---- markdown helpers -------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Markup the site wrote (links, spans) safe inside a markdown table cell; text goes through `text_md`."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A markdown table; ``align`` holds one of ``l``, ``r`` or ``c`` per column."""
    align = align or "l" * len(headers)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def inline_math(tex: str) -> str:
    """Inline math inside a raw HTML block: arithmatex's own output, which the site's script renders
    (KaTeX, with no trusted commands: a plugin's LaTeX cannot make links or raw HTML)."""
    return f'<span class="arithmatex">\\({escape(displayable(tex), quote=False)}\\)</span>' if tex else "—"


def raw(html: str) -> str:
    """A block of raw HTML between the markers `archzoo.site.mdext` passes through unparsed."""
    return f"{START}\n{html}\n{END}"


def html_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str = "", css: str = "") -> str:
    """A table as raw HTML; cells are HTML already (escape text before passing it)."""
    align = align or "l" * len(headers)
    names = {"l": "left", "r": "right", "c": "center"}
    head = "".join(f'<th align="{names[a]}">{h}</th>' for h, a in zip(headers, align, strict=False))
    body = "".join(
        "<tr>" + "".join(f'<td align="{names[a]}">{c}</td>' for c, a in zip(row, align, strict=False)) + "</tr>"
        for row in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"  # no class: Material styles it
    return raw(f'<div class="{css}">{table}</div>' if css else table)


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


def code_block(code: str, language: str) -> str:
    """A highlighted code block as raw HTML, the same markup pymdownx.highlight writes for a fence
    (Material's copy button and colours apply). Lines that lex on their own are highlighted one by one
    and cached: the reference snippets of a zoo share all their lines but one."""
    code = displayable(code)
    if _self_contained_lines(code):
        body = "".join(_highlight(line + "\n", language) for line in code.rstrip("\n").split("\n"))
    else:
        body = _highlight(code, language)
    return raw(
        f'<div class="language-{language} highlight az-wrap"><pre><span></span><code>{body.rstrip()}</code></pre></div>'
    )


_FLAT_YAML = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): (\S.*)$")


def yaml_block(text: str) -> str:
    """A configuration's YAML as a code block: flat ``key: value`` lines get pygments' own markup
    without running pygments (every model page has one); anything else goes through pygments."""
    text = displayable(text)
    lines = text.rstrip("\n").split("\n")
    found = [_FLAT_YAML.match(line) for line in lines]
    matches = [m for m in found if m is not None]
    if len(matches) < len(found) or any(
        m.group(2).startswith(("'", '"', "[", "{", "&", "*", "!", "|", ">")) for m in matches
    ):
        return code_block(text, "yaml")
    body = "\n".join(
        f'<span class="nt">{m.group(1)}</span><span class="p">:</span><span class="w"> </span>'
        f'<span class="l l-Scalar l-Scalar-Plain">{escape(m.group(2), quote=False)}</span>'
        for m in matches
    )
    return raw(f'<div class="language-yaml highlight az-wrap"><pre><span></span><code>{body}</code></pre></div>')


def plain_code_block(text: str, language: str) -> str:
    """A code block without highlighting (a one-line shell command)."""
    return raw(
        f'<div class="language-{language} highlight az-wrap"><pre><span></span><code>{text_html(text)}</code></pre></div>'
    )


def figure(svg: str, caption: str) -> str:
    """Inline SVG; ``data-search-exclude`` keeps tick labels out of the search index."""
    if not svg:
        return ""
    return raw(
        f'<figure class="az-figure" data-search-exclude>{svg}<figcaption>{text_html(caption)}</figcaption></figure>'
    )


def equation(tex: str) -> str:
    """A formula of its own paragraph, as inline math so that KaTeX may break it after a + or an =
    (display math never breaks, and a long polynomial would scroll sideways on a phone)."""
    return f'<p class="az-eq">{inline_math(tex)}</p>'


def md_link(text: str, target: str) -> str:
    """A markdown link to another page of the site: MkDocs rewrites and checks it in a strict build."""
    return f"[{text_md(text)}]({quote(target, safe='/.#-_~')})"


def compact(table: str, css: str = "") -> str:
    """A markdown table in a block the stylesheet sets tighter (no column's minimum width, less padding),
    so that the home page's and an architecture page's tables fit a phone's screen."""
    return f'<div class="az-compact{(" " + css) if css else ""}" markdown="1">\n\n{table}\n\n</div>'


def paragraph(text: str) -> str:
    """Plain text as one raw HTML paragraph, its lines kept apart."""
    lines = [text_html(line) for line in displayable(text).split("\n") if line.strip()]
    return f'<p class="az-lead">{"<br>".join(lines)}</p>' if lines else ""


# ---- page metadata and assembly ---------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Metadata for the site's own hooks: strings made `displayable` on one line, containers walked."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def front_matter(title: str | None, description: str, **values: Any) -> str:
    """A page's YAML front matter, written by a YAML dumper so that no character of a title can end it
    or make it unreadable (MkDocs would then print it as page text and drop the page's metadata).

    ``title`` and ``description`` are plain text, escaped here: the theme writes them into ``<title>``,
    the header and ``<meta name="description" content="...">`` as they are; a page with no ``title`` (the
    home page) gets the site's name alone as its browser title. The other values are for the site's own
    hooks, which escape what they show.
    """
    data = {} if title is None else {"title": text_html(one_line(title))}
    data["description"] = text_html(one_line(description))
    data.update((key, _plain(value)) for key, value in values.items())
    # one line per value (no folding), non-printable characters escaped by the dumper itself
    return "---\n" + yaml.dump(data, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True, width=1 << 30) + "---"


#: libyaml's dumper when PyYAML has it (six times faster: one front matter per model page)
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Doc:
    """A page assembled from markdown parts and raw HTML parts; adjacent HTML parts share one block."""

    def __init__(self) -> None:
        self.parts: list[tuple[bool, str]] = []

    def md(self, text: str) -> Doc:
        if text:
            self.parts.append((False, text))
        return self

    def html(self, text: str) -> Doc:
        if text:
            if self.parts and self.parts[-1][0]:
                self.parts[-1] = (True, self.parts[-1][1] + "\n" + text)
            else:
                self.parts.append((True, text))
        return self

    def p(self, text: str) -> Doc:
        return self.html(f"<p>{text}</p>")

    def text(self) -> str:
        return "\n\n".join(raw(t) if is_html else t for is_html, t in self.parts) + "\n"


def unraw(block: str) -> str:
    """The HTML inside a `raw` block (the helpers return wrapped blocks; `Doc` wraps once)."""
    return block.removeprefix(START + "\n").removesuffix("\n" + END)
