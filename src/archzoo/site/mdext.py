"""A Markdown extension that passes the site's pre-rendered HTML blocks through untouched, unparsed.

The generated pages hold their tables and plots as raw HTML between ``<!-- archzoo:html -->`` and
``<!-- /archzoo:html -->`` lines. Without this extension Markdown treats them as ordinary raw HTML
blocks and renders the same output; with it, they go straight into Markdown's HTML stash instead of
through its HTML parser and inline patterns, which is most of the cost of a model page.
"""

from __future__ import annotations

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

__all__ = ["END", "START", "RawHtmlExtension", "makeExtension"]

START = "<!-- archzoo:html -->"
END = "<!-- /archzoo:html -->"


class RawHtmlBlocks(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        block: list[str] | None = None
        for line in lines:
            if block is None:
                if line.strip() == START:
                    block = []
                else:
                    out.append(line)
            elif line.strip() == END:
                out += ["", self.md.htmlStash.store("\n".join(block)), ""]
                block = None
            else:
                block.append(line)
        if block is not None:  # never closed: leave it to Markdown as it was
            out += [START, *block]
        return out


class RawHtmlExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        # after whitespace normalisation (30), before fenced code (25) and raw HTML blocks (20)
        md.preprocessors.register(RawHtmlBlocks(md), "archzoo_raw_html", 29)


def makeExtension(**kwargs) -> RawHtmlExtension:
    return RawHtmlExtension(**kwargs)
