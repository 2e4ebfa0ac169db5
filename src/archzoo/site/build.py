"""Build and serve the site: MkDocs run in-process on the project's ``mkdocs.yml``.

`build_site` is atomic: it builds into a fresh folder beside ``out_dir`` and swaps it in only when the
strict build succeeded, so a failed build leaves the previous site untouched. The registry folders
reach the build (and its gen-files script) through ``ARCHZOO_REGISTRY``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..errors import ArchzooError

__all__ = ["build_site", "serve_site", "find_config", "ENV_REGISTRY"]

ENV_REGISTRY = "ARCHZOO_REGISTRY"

#: Quiet the banners some MkDocs plugins print about MkDocs 2 on every build.
_QUIET = {"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}


def find_config(config_file: Path | str | None = None) -> Path:
    """The ``mkdocs.yml`` to build: the one given, else the source checkout's."""
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ArchzooError(f"{path}: no such MkDocs configuration; pass the path of the project's mkdocs.yml")
        return path.resolve()
    checkout = Path(__file__).resolve().parents[3]
    path = checkout / "mkdocs.yml"
    if not path.is_file():
        raise ArchzooError(
            f"cannot find mkdocs.yml (looked in {checkout}); the site is built from an archzoo source checkout: "
            "clone it and run `pip install -e '.[site]'` there"
        )
    return path


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    def apply(mapping: dict[str, str | None]) -> None:
        for key, value in mapping.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    saved = {k: os.environ.get(k) for k in values}
    try:
        apply(values)
        yield
    finally:
        apply(saved)


class _Collect(logging.Handler):
    """Keeps the build's warnings (for the error message) and forwards archzoo's progress lines."""

    def __init__(self, progress: Callable[[str], None] | None):
        super().__init__(logging.INFO)
        self.progress = progress
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            self.errors.append(message)
        elif record.levelno >= logging.WARNING:
            self.warnings.append(message)
        elif self.progress is not None and record.name == "mkdocs.plugins.archzoo":
            self.progress(message)


def _registry_env(registry_dirs: Sequence[Path | str] | None) -> dict[str, str | None]:
    env: dict[str, str | None] = dict(_QUIET)
    if registry_dirs is not None:
        dirs = [Path(d).resolve() for d in registry_dirs]
        for d in dirs:
            if not d.is_dir():
                raise ArchzooError(f"{d}: registry folder not found; pass folders of registry YAML files")
        env[ENV_REGISTRY] = os.pathsep.join(str(d) for d in dirs)
    return env


def _mkdocs_build(config_file: Path, site_dir: Path, *, strict: bool, flat_nav: bool = False) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(config_file=str(config_file), site_dir=str(site_dir), strict=strict)
    if flat_nav:  # the benchmark's baseline: every page in one flat navigation, nothing pruned
        features = config.theme["features"]
        config.theme["features"] = [f for f in features if f != "navigation.prune"]
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()


def build_site(
    registry_dirs: Sequence[Path | str] | None,
    out_dir: Path | str,
    *,
    progress: Callable[[str], None] | None = None,
    config_file: Path | str | None = None,
    strict: bool = True,
    _flat_nav: bool = False,
) -> Path:
    """Build the site for ``registry_dirs`` (None: ``ARCHZOO_REGISTRY`` or ``./registry``) into ``out_dir``.

    Plugins' registry folders are always included. The build is strict (any MkDocs warning fails it)
    and atomic: on failure the previous ``out_dir`` is left as it was and an `ArchzooError` says why.
    ``progress`` receives a line every few hundred pages. Returns ``out_dir``.
    """
    config = find_config(config_file)
    out_dir = Path(out_dir).resolve()
    _check_out_dir(out_dir, config, registry_dirs)
    env = _registry_env(registry_dirs)
    if _flat_nav:
        env["ARCHZOO_SITE_FLAT_NAV"] = "1"
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.building-", dir=out_dir.parent))
    except OSError as exc:
        raise ArchzooError(f"--out {out_dir}: cannot write there ({exc.strerror or exc}); choose another folder") from None
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would hide the site from a web server's user
    collect = _Collect(progress)
    mkdocs_log = logging.getLogger("mkdocs")
    mkdocs_log.addHandler(collect)
    previous_level = mkdocs_log.level
    if mkdocs_log.level == logging.NOTSET or mkdocs_log.level > logging.INFO:
        mkdocs_log.setLevel(logging.INFO)
    try:
        with _environment(env):
            _mkdocs_build(config, staging, strict=strict, flat_nav=_flat_nav)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            raise
        detail = str(exc).strip() or type(exc).__name__
        if collect.errors and detail.startswith("Aborted with"):  # MkDocs logged the cause, then aborted
            detail = "\n".join(collect.errors)
        if collect.warnings:
            detail += "\n" + "\n".join(f"  warning: {w}" for w in collect.warnings[:20])
        kept = f"; the previous site in {out_dir} is untouched" if out_dir.exists() else ""
        raise ArchzooError(f"site build failed: {detail}{kept}") from exc
    finally:
        mkdocs_log.removeHandler(collect)
        mkdocs_log.setLevel(previous_level)
    try:
        _swap(staging, out_dir)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArchzooError(f"--out {out_dir}: cannot replace it ({exc.strerror or exc}); "
                           "the previous site, if any, is untouched") from None
    if progress:
        progress(f"archzoo: site written to {out_dir}")
    return out_dir


def _check_out_dir(out_dir: Path, config: Path, registry_dirs: Sequence[Path | str] | None) -> None:
    """Refuse an output place whose replacement would destroy something that is not a site."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ArchzooError(f"--out {out_dir}: is a file; give a folder for the site")
    protected = [Path.cwd().resolve(), config.parent.resolve(), (config.parent / "docs").resolve()]
    protected += [Path(d).resolve() for d in (registry_dirs or [])]
    for place in protected:
        if out_dir == place or place.is_relative_to(out_dir):
            raise ArchzooError(f"--out {out_dir}: would replace {place}, which is not a built site; "
                               "give a separate folder such as ./site")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / "index.html").is_file():
        raise ArchzooError(f"--out {out_dir}: a folder that holds something other than a built site "
                           "(no index.html); give an empty or new folder, or remove it first")


def _swap(staging: Path, out_dir: Path) -> None:
    """Put ``staging`` in place of ``out_dir``: two renames, the old site removed only afterwards."""
    if not out_dir.exists():
        os.replace(staging, out_dir)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    os.rmdir(retired)
    os.replace(out_dir, retired)
    try:
        os.replace(staging, out_dir)
    except OSError:
        os.replace(retired, out_dir)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def serve_site(
    registry_dirs: Sequence[Path | str] | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    config_file: Path | str | None = None,
    open_in_browser: bool = False,
) -> None:
    """``mkdocs serve`` with live reload, watching the registry folders and plugins' registry folders too."""
    from mkdocs.commands.serve import serve

    from ..host import get_host
    from ..registry import default_registry_dirs

    config = find_config(config_file)
    env = _registry_env(registry_dirs)
    dirs = [Path(d) for d in registry_dirs] if registry_dirs is not None else default_registry_dirs()
    watch = [str(Path(d).resolve()) for d in [*dirs, *get_host().registry_dirs()] if Path(d).is_dir()]
    # the environment stays set for the whole session: every rebuild re-reads the registry through it
    os.environ.update({k: v for k, v in env.items() if v is not None})
    os.environ.setdefault("ARCHZOO_SITE_WORKERS", "1")  # no forking from the server's threads
    try:
        serve(config_file=str(config), dev_addr=f"{host}:{port}", livereload=True, watch=watch,
              open_in_browser=open_in_browser)
    except OSError as exc:
        raise ArchzooError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port") from exc
