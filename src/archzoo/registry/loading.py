"""Loading a registry: every entry of some folders, validated in one pass, and one entry found by its id."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import Path

from ..errors import RegistryError, UnknownModelError
from ..host import PluginHost, get_host
from ..registry_files import RegistryProblem, registry_folders, split_plugin_problems, yaml_files
from .checks import load_entry
from .counts import SharedReports
from .entry import Entry

__all__ = ["Registry", "find_model", "load_registry"]


class Registry:
    """Every entry found in some folders, and every problem found on the way."""

    def __init__(
        self,
        entries: list[Entry],
        problems: list[RegistryProblem],
        warnings: list[RegistryProblem],
        plugin_problems: list[RegistryProblem] | None = None,
    ):
        self.entries = {e.id: e for e in entries}
        self.problems = problems
        self.warnings = warnings
        self.plugin_problems = plugin_problems or []

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries.values())

    def list_models(self, pattern: str = "*", architecture: str | None = None) -> list[Entry]:
        """Entries whose id matches a glob pattern, optionally of one architecture."""
        return [
            e
            for e in self.entries.values()
            if fnmatch.fnmatchcase(e.id, pattern) and (architecture is None or e.spec.architecture == architecture)
        ]

    def get_model(self, model_id: str) -> Entry:
        """The entry with this id; an invalid file of that name, or the closest ids, in the error."""
        try:
            return self.entries[model_id]
        except KeyError:
            broken = [p for p in self.problems + self.plugin_problems if p.path.stem == model_id]
            if broken:
                raise RegistryError(
                    f"registry entry {model_id!r} is invalid: {broken[0]} "
                    f"(`archzoo validate {broken[0].path}` lists every problem)"
                ) from None
            raise UnknownModelError(model_id, self.entries) from None

    def is_model(self, model_id: str) -> bool:
        return model_id in self.entries

    def raise_for_problems(self) -> None:
        if self.problems:
            raise RegistryError("\n".join(str(p) for p in self.problems))


def _files(paths: Iterable[Path], problems: list[RegistryProblem], *, stem: str | None = None) -> list[Path]:
    """The YAML files under ``paths``, as `yaml_files` finds them."""
    return [Path(name) for name in yaml_files(paths, problems, stem=stem)]


def load_registry(
    paths: Iterable[Path | str] | None = None, host: PluginHost | None = None, *, plugin_registries: Iterable[str] = ()
) -> Registry:
    """Load and validate every entry under ``paths`` (default: `default_registry_dirs`) and the folders
    of the plugins named in ``plugin_registries`` (see `registry_folders`).

    Every problem of every file is collected in one pass (``Registry.problems``); files with problems are
    left out and the others load. A problem in a folder a plugin ships is the plugin's, not the user's:
    it goes to ``Registry.plugin_problems``, naming the plugin, and never fails a build of other folders.
    """
    host = host or get_host()
    dirs, owners = registry_folders(paths, host, plugin_registries)
    problems: list[RegistryProblem] = []
    warnings: list[RegistryProblem] = []
    entries: list[Entry] = []
    first: dict[str, Path] = {}
    reports = SharedReports()
    for path in _files(dirs, problems):
        duplicate_of = first.setdefault(path.stem, path)
        entry = load_entry(
            path, host, problems, warnings, duplicate_of if duplicate_of != path else None, reports=reports
        )
        if entry is not None:
            entries.append(entry)
    entries.sort(key=lambda e: e.id)
    problems, plugin_problems = split_plugin_problems(problems, owners)
    return Registry(entries, problems, warnings, plugin_problems)


def find_model(
    model_id: str,
    paths: Iterable[Path | str] | None = None,
    host: PluginHost | None = None,
    *,
    plugin_registries: Iterable[str] = (),
) -> Entry:
    """The entry with this id, loading that one file only (the folders are listed, nothing else is read).

    The same answers as ``load_registry(...).get_model(model_id)``: the entry; an error naming its first
    problem when its file is invalid (or its id is defined twice); else the closest ids.
    """
    host = host or get_host()
    dirs, owners = registry_folders(paths, host, plugin_registries)
    listing: list[RegistryProblem] = []
    named = _files(dirs, listing, stem=model_id)
    if not named:
        raise UnknownModelError(model_id, {f.stem for f in _files(dirs, listing)})
    problems: list[RegistryProblem] = []
    warnings: list[RegistryProblem] = []
    reports = SharedReports()
    entry = load_entry(named[0], host, problems, warnings, None, reports=reports)
    for other in named[1:]:
        load_entry(other, host, problems, warnings, named[0], reports=reports)
    if entry is None or problems:
        first = problems[0]
        owner = split_plugin_problems([first], owners)[1]
        shown = owner[0] if owner else first
        raise RegistryError(
            f"registry entry {model_id!r} is invalid: {shown} (`archzoo validate {first.path}` lists every problem)"
        )
    return entry
