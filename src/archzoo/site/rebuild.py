"""What a rebuild while serving leaves as the previous build wrote it: every generated file whose content is
unchanged, when the navigation and the configuration are unchanged too, and the search entries of its page.

Saving one entry of a large zoo changes that model's page, its architecture's page, the home and all-models
pages and the downloads; the other pages would come out byte for byte as before, since a page is a function
of its markdown, the navigation and the configuration. MkDocs' dirty build skips a file whose
``is_modified()`` is false; a `GeneratedFile` answers false when the previous build wrote the same content
under the same navigation and configuration (`Rebuilds.unchanged`). Anything else (the first build, a
changed configuration or navigation, a previous build that failed) rebuilds everything into an emptied site
folder, so no page of a removed model stays behind.

The search index is rebuilt from every page's entries: those of the pages rendered now, and those kept from
the previous build for the pages left as they were, in the order of a full build (`Rebuilds.search_entries`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from mkdocs.structure.files import File

__all__ = ["GeneratedFile", "Rebuilds", "digest"]


class GeneratedFile(File):
    """A file the archzoo plugin generates; ``unchanged`` when the previous build wrote it as it is now."""

    unchanged = False

    def is_modified(self) -> bool:
        return not self.unchanged and super().is_modified()


def digest(*parts: Any) -> str:
    """SHA-256 of ``parts`` (strings as UTF-8, anything else as its JSON)."""
    sha = hashlib.sha256()
    for part in parts:
        text = part if isinstance(part, str) else json.dumps(part, sort_keys=True, default=str)
        sha.update(text.encode("utf-8", "surrogateescape") + b"\0")
    return sha.hexdigest()


@dataclasses.dataclass
class _Build:
    settings: str  # the configuration and the navigation
    contents: dict[str, str]  # each generated file's content digest, by its path in docs/
    search: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # entries by page file


class Rebuilds:
    """What the plugin keeps across the builds of one server: the last successful build's settings, content
    digests and search entries. ``enabled`` only for builds that leave the site folder as it was (MkDocs'
    dirty builds, which ``archzoo serve`` runs)."""

    def __init__(self) -> None:
        self.enabled = False
        self.previous: _Build | None = None
        self.current: _Build | None = None
        self.kept: set[str] = set()

    def unchanged(self, settings: str, contents: Mapping[str, str]) -> set[str] | None:
        """Start a build: the generated files (paths in docs/) the previous build wrote as they are now, or
        None when everything is to be built again (the site folder must then be emptied first)."""
        digests = {uri: digest(text) for uri, text in contents.items()}
        previous, self.previous = self.previous, None  # trusted again only once this build succeeds
        self.current = _Build(settings, digests)
        if not self.enabled or previous is None or previous.settings != settings:
            self.kept = set()
            return None
        self.current.search = dict(previous.search)  # the kept pages' entries; rendered pages replace theirs
        self.kept = {uri for uri, value in digests.items() if previous.contents.get(uri) == value}
        return self.kept

    def page_indexed(self, uri: str, entries: list[dict[str, Any]]) -> None:
        """The search entries the page of ``uri`` (its file's path in docs/) got in this build."""
        if self.current is not None:
            self.current.search[uri] = entries

    def search_entries(self, page_uris: Iterable[str]) -> list[dict[str, Any]]:
        """Every page's search entries, in the order of ``page_uris`` (a full build's)."""
        assert self.current is not None
        return [entry for uri in page_uris for entry in self.current.search.get(uri, ())]

    def forget(self) -> None:
        """Nothing of the last build can be kept (this one failed, or shows an error page instead)."""
        self.previous = self.current = None
        self.kept = set()

    def finished(self) -> None:
        """The build succeeded: the next one may keep what this one wrote."""
        self.previous, self.current = self.current, None
        self.kept = set()
