"""Where archzoo keeps its caches (the registry index, the plugin manifest, generated pages): one rule for all.

``$ARCHZOO_CACHE_DIR``, else ``$XDG_CACHE_HOME/archzoo``, else ``~/.cache/archzoo``; None (no cache at all)
without a home folder, since a cache in a shared place could be forged by another user. Both variables must
name absolute paths that are not files (the XDG base directory specification calls a relative one invalid);
anything else is an `EnvironmentVariableError` naming the variable.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import EnvironmentVariableError

__all__ = ["cache_dir"]


def _environment_path(name: str, value: str) -> Path:
    """The folder an environment variable names, or an error naming the variable when it cannot be one."""
    path = Path(value)
    if not path.is_absolute():
        raise EnvironmentVariableError(
            f"{name}={value!r}: not an absolute path; set {name} to a folder's full path (e.g. /var/cache/archzoo), "
            "or unset it"
        )
    # os.path's tests answer False where a folder on the way cannot be searched (Path's raise PermissionError):
    # such a cache cannot be written, and what it would hold is then made each time
    if os.path.exists(path) and not os.path.isdir(path):
        raise EnvironmentVariableError(
            f"{name}={value!r}: is a file, not a folder; set {name} to a folder, or unset it"
        )
    return path


def cache_dir() -> Path | None:
    """The cache folder, or None without a home folder when no variable says where (no cache then)."""
    configured = os.environ.get("ARCHZOO_CACHE_DIR", "").strip()
    if configured:
        return _environment_path("ARCHZOO_CACHE_DIR", configured)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        return _environment_path("XDG_CACHE_HOME", xdg) / "archzoo"
    home = os.path.expanduser("~")  # $HOME, else the passwd entry; left as "~" when there is neither
    if not os.path.isabs(home) or home == os.sep:
        return None
    return Path(home) / ".cache" / "archzoo"
