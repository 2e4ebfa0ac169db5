"""MkDocs hooks (named in mkdocs.yml): progress lines for long builds, and reproducible output.

* A line is logged every `PROGRESS_EVERY` pages rendered, with the elapsed time.
* The generated ``SUMMARY.md`` (the navigation literate-nav reads) is not published as a page.
* Model pages are indexed for search by id, title, tags and summary (see `on_page_context`); the
  theme shows search entries as HTML, so every registry string in them is escaped here, and so is
  the edit link, which the theme writes into an attribute as it is.
* Every page's ``update_date`` is fixed (``SOURCE_DATE_EPOCH`` when set, else 1980-01-01), so the
  gzip header of ``sitemap.xml.gz`` does not carry the build date; the theme's sitemap has no
  ``<lastmod>`` for the same reason.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from datetime import datetime, timezone

log = logging.getLogger("mkdocs.plugins.archzoo")

PROGRESS_EVERY = 250
_FIXED_DATE = "1980-01-01"

_state = {"total": 0, "done": 0, "started": 0.0}


def _stable_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), timezone.utc).strftime("%Y-%m-%d")
    return _FIXED_DATE


def on_config(config, **kwargs):
    if config.repo_url and not config.edit_uri:
        config.edit_uri = "edit/main/docs/"
    return config


def on_files(files, config, **kwargs):
    # literate-nav has read the generated navigation by now (hooks run after plugins); don't publish it
    from mkdocs.structure.files import InclusionLevel

    summary = files.get_file_from_path("SUMMARY.md")
    if summary is not None:
        summary.inclusion = InclusionLevel.EXCLUDED
    return files


def on_env(env, config, files, **kwargs):
    # the theme's templates do not change during a build: don't stat every partial for every page
    env.auto_reload = False
    return env


def on_pre_build(config, **kwargs):
    _state.update(total=0, done=0, started=time.perf_counter())


def on_nav(nav, config, files, **kwargs):
    _state["total"] = sum(1 for f in files.documentation_pages())
    log.info("archzoo: rendering %s pages", f"{_state['total']:,}")
    _state["started"] = time.perf_counter()
    return nav


def on_pre_page(page, config, files, **kwargs):
    page.update_date = _stable_date()
    return page


def _local_edit_url(page, config) -> str | None:
    """Without a repository URL, the edit link opens the page's source file on this machine."""
    from archzoo.site.generate import EDIT_SOURCES

    edit = EDIT_SOURCES.get(page.file.src_uri) or getattr(page.file, "edit_uri", None)
    if not edit:
        return None
    if edit.startswith("file://"):
        return edit
    return (Path(config.docs_dir) / edit).resolve().as_uri()


def on_page_context(context, page, config, nav, **kwargs):
    if not config.repo_url:
        page.edit_url = _local_edit_url(page, config)
    if page.edit_url:
        # the theme writes it into href="..." as it is; a registry folder's name is anybody's text
        from urllib.parse import quote

        page.edit_url = quote(page.edit_url, safe=":/?#[]@!$()*+,;=%~")
    return _index_for_search(context, page, config)


def _index_for_search(context, page, config):
    """A model page is indexed for search by what people look it up by (id, title, tags, architecture,
    summary) instead of its full text: its tables of formulas are noise in search results, and parsing
    them is most of the search plugin's cost."""
    meta = page.meta.get("archzoo_search")
    search = config.plugins.get("material/search") or config.plugins.get("search")
    index = getattr(search, "search_index", None)
    if not isinstance(meta, dict) or index is None:
        return context
    from archzoo.site.pages import text_html

    # Material's search shows an entry's title, text and tags as HTML: every value is escaped here
    # (the page's title is, from its front matter, already)
    tags = [text_html(t) for t in meta.get("tags", [])]
    params = meta.get("params", 0)
    count = f"{params:,}" if isinstance(params, int) else text_html(params)
    text = (f"<p>{text_html(meta.get('title', ''))}. {text_html(meta.get('summary', ''))}</p>"
            f"<p>Architecture {text_html(meta.get('architecture', ''))}; {count} parameters"
            + (f"; tags: {', '.join(tags)}" if tags else "") + ".</p>")
    entry = {"location": page.url, "title": str(page.meta.get("title") or page.title), "text": text}
    if tags:
        entry["tags"] = tags
    index.entries.append(entry)
    return context


def on_post_page(output, page, config, **kwargs):
    _state["done"] += 1
    done, total = _state["done"], _state["total"]
    if done % PROGRESS_EVERY == 0 or (done == total and total >= PROGRESS_EVERY):
        log.info("archzoo: rendered %s/%s pages (%.1f s)", f"{done:,}", f"{total:,}",
                 time.perf_counter() - _state["started"])
    return output
