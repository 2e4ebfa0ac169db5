"""The model-zoo site: model and architecture pages generated from the registry and the plugins.

The site is one MkDocs plugin, `plugin.ArchzooPlugin` (``archzoo`` in a zoo's ``mkdocs.yml``), which
``mkdocs build`` and `build_site` (``archzoo build``) both run. `generate` reads the registry into views
(`views`); `pages` renders them as markdown with `markup`'s escapers and blocks, linking by `paths`;
`plots` draws the zoo's pictures (with `svg`) and `diagram` the mermaid block diagrams; `records` and
`exports` make ``models.json`` and ``models.csv``; `navigation` makes MkDocs' ``nav``; `explore` exports
what the what-if calculators and the compare page read; `build` runs MkDocs atomically into the output
folder and serves the site.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .build import SiteOptions, build_site, find_config, serve_site

__all__ = ["SiteOptions", "build_site", "find_config", "serve_site"]


def __getattr__(name: str) -> Any:
    # `build` (MkDocs' runner, with logging and tempfile) is imported when first asked for, not with the
    # package: `archzoo list` imports `archzoo.site.records` and stays a light, fast command
    if name in __all__:
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
