"""Writing a folder in one step, all or nothing: a new one (`archzoo init`, `archzoo new-plugin`), or one
that replaces the previous version of itself (`archzoo build`'s site).

A new folder never goes over anything. Its files are written into a staging folder first, and the staging
folder is renamed into place, so it appears whole or not at all. An existing empty folder is kept (it may
be the current directory, a mount point or have permissions of its own): the staging folder goes inside it
and its contents are moved up, one rename each, undone if one fails (`write_new_folder`).

A folder that replaces its previous version is written into a staging folder beside it,
``.<name>.building-XXXXXXXX`` (`start_staging`), and swapped in with two renames (`swap_into_place`), the
previous version kept in the staging folder's ``previous/`` until the staging folder is removed. The
staging folder holds an ``owner`` file that its writer keeps ``flock``-ed for its whole life, so a writer
killed outright (SIGKILL, power loss) leaves a staging folder the next writer beside it recognises as dead
and removes, putting back a previous version a killed swap had taken away (`remove_dead_staging`); a
folder whose owner file archzoo did not write, or whose lock is held, is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from .errors import ArchzooError

try:
    import fcntl
except ImportError:  # Windows: no flock, so another writer's staging folder is never taken for dead
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "OWNER",
    "OWNER_FORMAT",
    "STAGING",
    "STAGING_NAME",
    "UNCLAIMED_GRACE_S",
    "check_new_folder",
    "remove_dead_staging",
    "start_staging",
    "swap_into_place",
    "write_new_folder",
]

#: What follows ``.<name>`` in the name of a staging folder beside the folder ``name`` it will replace.
STAGING = ".building-"
STAGING_NAME = re.compile(r"^\.(?P<out>.+)\.building-[a-z0-9_]{8}$")
#: The file in a staging folder that its writer keeps locked, and the first line archzoo writes in it.
OWNER = "owner"
OWNER_FORMAT = "archzoo-build 1"
#: A staging folder with no owner recorded yet is taken for dead only after this long: the owner is
#: recorded microseconds after the folder is made, so only a writer killed in between gets that old.
UNCLAIMED_GRACE_S = 60.0

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


# ---- replacing a folder: staging folders and their owners -------------------------------------------


def start_staging(target: Path, folders: Iterable[str] = ()) -> tuple[Path, int]:
    """A fresh staging folder beside ``target``, holding the named ``folders`` (made as mkdir would, not with
    mkdtemp's 0700: a web server running as another user must read a site), and the descriptor of its
    ``owner`` file, locked; close it only after removing the staging folder."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}{STAGING}", dir=target.parent))
    owner = None
    try:
        owner = os.open(staging / OWNER, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        if fcntl is not None:
            fcntl.flock(owner, fcntl.LOCK_EX)  # blocks only while another writer looks at it
        os.write(owner, f"{OWNER_FORMAT}\n{json.dumps({'pid': os.getpid()})}\n".encode())
        for name in folders:
            (staging / name).mkdir()
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if owner is not None:
            os.close(owner)
        raise
    return staging, owner


def remove_dead_staging(parent: Path) -> None:
    """Remove the staging folders in ``parent`` whose writer is dead; put back a folder a killed swap took away."""
    if fcntl is None:
        return
    try:
        candidates = [p for p in parent.iterdir() if STAGING_NAME.match(p.name)]
    except OSError:
        return
    for staging in candidates:
        try:
            _remove_if_dead(staging)
        except OSError:
            continue  # another user's, or gone meanwhile: leave it


def _remove_if_dead(staging: Path) -> None:
    assert fcntl is not None, "remove_dead_staging returns first without flock"
    if staging.is_symlink() or not staging.is_dir():
        return
    try:
        owner = os.open(staging / OWNER, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        # made, but killed before recording its owner (or an older archzoo's): only an old empty one goes
        if time.time() - staging.stat().st_mtime > UNCLAIMED_GRACE_S:
            with contextlib.suppress(OSError):
                staging.rmdir()
        return
    try:
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its writer is running
        recorded = os.read(owner, 4096)
        if not recorded.startswith(OWNER_FORMAT.encode() + b"\n") and (
            recorded or time.time() - os.fstat(owner).st_mtime <= UNCLAIMED_GRACE_S
        ):
            return  # not archzoo's, or a writer between creating its owner file and recording itself
        named = STAGING_NAME.match(staging.name)
        if named is None:
            return  # not a staging folder of archzoo's
        target = staging.parent / named.group("out")
        previous = staging / "previous"
        if previous.is_dir() and not previous.is_symlink() and not os.path.lexists(target):
            os.replace(previous, target)  # killed between the two renames of the swap: the old folder goes back
        shutil.rmtree(staging, ignore_errors=True)
    finally:
        os.close(owner)


def swap_into_place(staging: Path, new: str, target: Path) -> None:
    """Put ``staging/new`` in place of ``target``: two renames; the previous ``target`` is left in
    ``staging/previous`` (removed with the staging folder, or put back by `remove_dead_staging`)."""
    made = staging / new
    if not os.path.lexists(target):
        os.replace(made, target)
        return
    previous = staging / "previous"
    os.replace(target, previous)
    try:
        os.replace(made, target)
    except OSError:
        os.replace(previous, target)
        raise
