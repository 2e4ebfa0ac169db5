"""Where each generated page lives in the docs folder, and the relative links from one page to another.

Links between generated pages are relative: ``.md`` links in markdown, which MkDocs rewrites and checks
in a strict build, and URLs as MkDocs publishes the pages (`page_href`) inside raw HTML, which it does not
rewrite.
"""

from __future__ import annotations

__all__ = [
    "ARCHITECTURES_DIR",
    "MODELS_DIR",
    "architecture_path",
    "model_path",
    "page_href",
    "page_url",
    "relative_path",
]

MODELS_DIR = "models"
ARCHITECTURES_DIR = "architectures"


def model_path(model_id: str) -> str:
    """The generated page of a model, relative to the docs folder."""
    return f"{MODELS_DIR}/{model_id}.md"


def architecture_path(name: str) -> str:
    """The generated page of an architecture, relative to the docs folder."""
    return f"{ARCHITECTURES_DIR}/{name}/index.md"


def relative_path(from_path: str, to_path: str) -> str:
    """A relative link between two docs-folder paths (``models/a.md`` -> ``architectures/b/index.md``)."""
    src = from_path.split("/")[:-1]
    dst = to_path.split("/")
    common = 0
    while common < min(len(src), len(dst) - 1) and src[common] == dst[common]:
        common += 1
    return "/".join([".."] * (len(src) - common) + dst[common:])


def page_url(path: str, directory_urls: bool) -> str:
    """Where MkDocs publishes a docs-folder page: ``models/a.md`` -> ``models/a/`` (or ``models/a.html``)."""
    if not path.endswith(".md"):
        return path
    stem = path[:-3]
    if stem == "index" or stem.endswith("/index"):
        return stem[:-5] if directory_urls else stem + ".html"
    return stem + "/" if directory_urls else stem + ".html"


def page_href(from_path: str, to_path: str, directory_urls: bool = True) -> str:
    """The relative URL from one generated page to another, as MkDocs would write it (for links inside
    raw HTML, which MkDocs does not rewrite)."""
    src = page_url(from_path, directory_urls)
    dst = page_url(to_path, directory_urls)
    base = src.split("/")[:-1]
    target = dst.split("/")
    common = 0
    while common < min(len(base), len(target) - 1) and base[common] == target[common]:
        common += 1
    return "/".join([".."] * (len(base) - common) + target[common:]) or "./"
