"""The model-zoo site: model and architecture pages generated from the registry and the plugins.

The site is one MkDocs plugin, `plugin.ArchzooPlugin` (``archzoo`` in a zoo's ``mkdocs.yml``), which
``mkdocs build`` and `build_site` (``archzoo build``) both run. `generate` reads the registry into views
(`views`), `pages` renders them as markdown, `svg` draws the plots and `diagram` the mermaid block
diagrams; `build` runs MkDocs atomically into the output folder and serves the site.
"""

from .build import SiteOptions, build_site, find_config, serve_site

__all__ = ["SiteOptions", "build_site", "find_config", "serve_site"]
