"""The site's navigation, as MkDocs' ``nav`` setting: the home and all-models pages, each architecture's
section with its models in a balanced tree of small sections, and archzoo's own pages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .markup import one_line, text_html
from .paths import architecture_path, model_path
from .views import ArchitectureView, ModelView

__all__ = ["NAV_BRANCHING", "NAV_FLAT_UP_TO", "nav_config", "nav_title", "nav_tree"]


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
    return text_html(one_line(text))


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
