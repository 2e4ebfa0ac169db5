"""The registry's files: which folders make the zoo, which YAML files in them are entries, and the problem
record every check of them reports (the index, `archzoo.registry_index`, and the entries, `archzoo.registry`,
both build on this; it imports neither)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RegistryError

if TYPE_CHECKING:
    from .host import PluginHost

__all__ = [
    "WINDOWS_RESERVED",
    "RegistryProblem",
    "default_registry_dirs",
    "registry_folders",
    "split_plugin_problems",
    "yaml_files",
]

#: Device names Windows reserves, with or without an extension, in any case: a file named so cannot exist there.
WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)


# ---- the registry's files ---------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryProblem:
    path: Path
    line: int
    key: str
    message: str
    plugin: str = ""  # the plugin that ships the file, when a plugin does

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        shipped = f" (in the registry folder of plugin {self.plugin!r})" if self.plugin else ""
        return f"{self.path}:{self.line}: {key}{self.message}{shipped}"


def default_registry_dirs() -> list[Path]:
    """``ARCHZOO_REGISTRY`` (folders separated by ``os.pathsep``), else ``./registry``, else the source checkout's.

    Each folder ``ARCHZOO_REGISTRY`` names must exist and be a folder: a file there would be a registry of
    one entry, which is not what the variable means (``archzoo validate FILE`` checks one file).
    """
    env = os.environ.get("ARCHZOO_REGISTRY", "").strip()
    if env:
        folders = [Path(p) for p in env.split(os.pathsep) if p.strip()]
        if not folders:
            raise RegistryError(
                f"ARCHZOO_REGISTRY={env!r}: names no folder; set it to registry folders separated by "
                f"{os.pathsep!r}, or unset it"
            )
        for folder in folders:
            if os.path.isdir(folder):  # False, not PermissionError, where a folder on the way cannot be searched
                continue
            what = "is a file, not a folder" if os.path.exists(folder) else "no such folder (or it cannot be reached)"
            raise RegistryError(
                f"ARCHZOO_REGISTRY: {str(folder)!r} {what}; set ARCHZOO_REGISTRY to registry folders separated "
                f"by {os.pathsep!r} (check a single entry with `archzoo validate FILE`)"
            )
        return folders
    here = Path("registry")
    if here.is_dir():
        return [here]
    checkout = Path(__file__).resolve().parents[2] / "registry"
    return [checkout] if checkout.is_dir() else []


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def yaml_files(paths: Iterable[Path], problems: list[RegistryProblem], *, stem: str | None = None) -> list[str]:
    """The YAML files under ``paths`` (folders searched recursively, sorted), each file once; with
    ``stem``, only the files of that name (the folders are still listed, nothing else is touched).

    A folder that cannot be listed, and a symbolic link that leads out of the folder it was found in,
    are added to ``problems`` (naming the link, never its target's content) instead of being skipped
    silently: either would make models vanish from the zoo without a word. Folders are read with
    ``os.scandir``, and a path is resolved once per folder, not once per file, so listing 20,000 entries
    costs a few tens of milliseconds.
    """
    files: list[str] = []
    seen: set[str] = set()

    def add(file: str, real: str) -> None:
        if real not in seen:  # the same file named twice (a folder and a file in it, or via '..') loads once
            seen.add(real)
            files.append(file)

    def wanted(name: str) -> bool:
        return name.endswith((".yaml", ".yml")) and (stem is None or name.rsplit(".", 1)[0] == stem)

    for path in paths:
        if not os.path.isdir(path):  # a file named itself: one entry, whose id is its name like any other's
            if stem is None or path.name.rsplit(".", 1)[0] == stem:
                add(str(path), os.path.realpath(path))
            continue
        root = path.resolve()
        found: list[tuple[str, str, str]] = []
        pending = [(str(path), "")]  # a folder and its path inside `path`, each name followed by NUL
        while pending:
            folder, parts = pending.pop()
            prefix = folder if folder.endswith(os.sep) else folder + os.sep  # joined by hand: 20,000 joins
            real_prefix = os.path.join(os.path.realpath(folder), "")
            try:
                with os.scandir(folder) as listing:
                    items = list(listing)
            except OSError as exc:
                problems.append(
                    RegistryProblem(
                        Path(exc.filename or folder),
                        1,
                        "",
                        f"cannot list this folder ({exc.strerror or exc}); its entries "
                        "would be missing from the zoo, so fix its permissions or remove it",
                    )
                )
                continue
            for item in items:
                child = prefix + item.name
                link = item.is_symlink()
                if link and not _inside(Path(child).resolve(), root):
                    kind = "folder" if os.path.isdir(child) else "file"
                    if kind == "folder" or wanted(item.name):
                        fix = (
                            "move the entries in, or give that folder with --registry"
                            if kind == "folder"
                            else "copy the entry in, or give its folder with --registry"
                        )
                        problems.append(
                            RegistryProblem(
                                Path(child),
                                1,
                                "",
                                f"a symbolic link to a {kind} outside the registry folder {path}; {fix}",
                            )
                        )
                    continue
                if item.is_dir(follow_symlinks=False):
                    pending.append((child, parts + item.name + "\0"))
                elif wanted(item.name) and not (link and os.path.isdir(child)):
                    # a link inside the registry is the file it points to; a plain file is itself
                    real = os.path.realpath(child) if link else real_prefix + item.name
                    found.append((parts + item.name, child, real))
        # By path components, as Path orders them: NUL sorts before any character of a name, so the joined
        # strings compare as the tuples of components would, and the sort compares strings in C.
        found.sort()
        for _, file, real in found:
            add(file, real)
    return files


def registry_folders(
    paths: Iterable[Path | str] | None, host: PluginHost, plugin_registries: Iterable[str] = ()
) -> tuple[list[Path], dict[Path, str]]:
    """The folders to load (``paths``, else `default_registry_dirs`, then the folders the plugins named in
    ``plugin_registries`` ship) and, for each plugin folder, the plugin that ships it.

    A plugin's entries are opt-in: nobody's zoo shows them unasked. ``"all"`` names every plugin that
    ships a folder; a name that ships none is an error listing those that do.
    """
    dirs = [Path(p) for p in paths] if paths is not None else default_registry_dirs()
    owners: dict[Path, str] = {}
    shipping = {name: info.registry_dirs for name, info in host.plugin_infos.items() if info.registry_dirs}
    wanted = list(dict.fromkeys(plugin_registries))
    if "all" in wanted:
        wanted = list(shipping)
    for name in wanted:
        if name not in shipping:
            have = ", ".join(sorted(shipping)) or "none of the installed plugins ships one"
            raise RegistryError(
                f"plugin registry {name!r}: no installed plugin of that name ships a registry "
                f"folder (those that do: {have}; `archzoo plugins` lists them)"
            )
        for folder in shipping[name]:
            owners[folder.resolve()] = name
            dirs.append(folder)
    return dirs, owners


def split_plugin_problems(
    problems: list[RegistryProblem], owners: dict[Path, str]
) -> tuple[list[RegistryProblem], list[RegistryProblem]]:
    """``(the user's problems, the plugins' problems)``: a problem in a folder a plugin ships names it."""
    mine: list[RegistryProblem] = []
    theirs: list[RegistryProblem] = []
    for problem in problems:
        owner = next((name for folder, name in owners.items() if _inside(problem.path.resolve(), folder)), None)
        if owner is None:
            mine.append(problem)
        else:
            theirs.append(dataclasses.replace(problem, plugin=owner))
    return mine, theirs
