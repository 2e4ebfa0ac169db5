"""The model-zoo site: model and architecture pages generated from the registry and the plugins.

`build_site` and `serve_site` run MkDocs on the project's ``mkdocs.yml``; `pages` renders markdown
from plain views (`views`), `svg` draws the plots and `diagram` the mermaid block diagrams.
The MkDocs glue is `generate` (run by mkdocs-gen-files through ``gen_pages.py``) and ``mkdocs_hooks.py``.
"""

from .build import build_site, find_config, serve_site

__all__ = ["build_site", "serve_site", "find_config"]
