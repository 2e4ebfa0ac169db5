"""Reading a file the user named on the command line, with a one-line error instead of a traceback."""

from __future__ import annotations

from pathlib import Path

from .errors import ArchzooError

__all__ = ["read_user_text"]


def read_user_text(path: Path, error: type[ArchzooError], expected: str) -> str:
    """The file's UTF-8 text, or ``error`` saying what went wrong and that ``expected`` was wanted."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read the file ({exc.strerror or exc}); check the path") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a UTF-8 text file; give {expected}") from None
