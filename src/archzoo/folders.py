"""Writing a new folder in one step (`archzoo init`, `archzoo new-plugin`): never over anything, all or nothing.

The files are written into a staging folder first. A new folder is the staging folder renamed into place,
so it appears whole or not at all. An existing empty folder is kept (it may be the current directory, a
mount point or have permissions of its own): the staging folder goes inside it and its contents are moved
up, one rename each, undone if one fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import ArchzooError

__all__ = ["check_new_folder", "write_new_folder"]

T = TypeVar("T")


def check_new_folder(directory: Path, *, command: str, hint: str = "") -> bool:
    """Whether ``directory`` exists (and is empty); an `ArchzooError` for anything ``command`` must not
    touch. ``hint`` follows "give a new or empty folder" (" with --dir")."""
    never = f"{command} never overwrites anything"
    if directory.is_symlink() and not directory.exists():
        raise ArchzooError(f"{directory}: is a broken symbolic link, not a folder; give a new folder name ({never})")
    if directory.exists() and not directory.is_dir():
        raise ArchzooError(f"{directory}: is a file, not a folder; give a new or empty folder's name{hint} ({never})")
    if not directory.exists():
        parent = directory.absolute().parent
        if not parent.is_dir():
            raise ArchzooError(f"{directory}: its parent folder {parent} does not exist; create it first")
        return False
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise ArchzooError(f"{directory}: cannot list this folder ({exc.strerror or exc})") from None
    if names:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise ArchzooError(
            f"{directory}: the folder is not empty (it holds {shown}); give a new or empty folder{hint} "
            f"({command} never overwrites or deletes anything)"
        )
    return True


def write_new_folder(directory: Path, exists: bool, write: Callable[[Path], T], *, what: str) -> T:
    """Call ``write(staging)`` to fill a staging folder, then put its contents at ``directory`` (checked with
    `check_new_folder`, which says whether it ``exists``) in one step; return what ``write`` returned. On any
    failure nothing is left behind, and an OSError becomes "cannot write the ``what``"."""
    base = directory if exists else directory.absolute().parent
    try:
        staging = Path(tempfile.mkdtemp(prefix=".archzoo-new-", dir=base))
    except OSError as exc:
        raise ArchzooError(f"{directory}: cannot write in {base} ({exc.strerror or exc})") from None
    if not exists:  # the staging folder becomes the folder: give it the permissions mkdir would
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
    moved: list[Path] = []
    try:
        result = write(staging)
        if not exists:
            staging.rename(directory)  # fails, rather than merging, if the folder appeared meanwhile
        else:
            for item in sorted(staging.iterdir()):
                target = directory / item.name
                if target.exists() or target.is_symlink():
                    raise ArchzooError(
                        f"{directory}: {item.name} appeared in the folder while the {what} was being written; "
                        "nothing was changed"
                    )
                item.rename(target)
                moved.append(target)
            staging.rmdir()
    except OSError as exc:
        _undo(staging, moved)
        raise ArchzooError(
            f"{directory}: cannot write the {what} ({exc.strerror or exc}); nothing was changed"
        ) from None
    except BaseException:
        _undo(staging, moved)
        raise
    return result


def _undo(staging: Path, moved: list[Path]) -> None:
    """Remove what was written: the staging folder, and anything already moved out of it."""
    for path in moved:
        with contextlib.suppress(OSError):
            path.rename(staging / path.name)
    shutil.rmtree(staging, ignore_errors=True)
