"""Build and serve the site: MkDocs run in-process on the zoo's ``mkdocs.yml`` and its archzoo plugin.

The configuration is the zoo's ``mkdocs.yml`` (``--config-file``, else ``./mkdocs.yml``), or, where there
is none, a default one (`DEFAULT_CONFIG`) written into the build's temporary folder. What the command
line overrides (`SiteOptions`: title, description, URLs, registry folders, pages ...) is applied to the
loaded configuration and its archzoo plugin before MkDocs builds, so ``mkdocs build`` and ``archzoo
build`` run the same plugin on the same settings.

`build_site` is atomic: it builds into a staging folder beside ``out_dir`` and swaps it in only when
the strict build succeeded, so a failed build leaves the previous site untouched.

A site is what archzoo made. Every build writes a marker, ``.archzoo-site``, at the root of the site:
a format line, the archzoo version and the list of every file the build wrote.
``out_dir`` is replaced only when it is missing, empty, or carries a well-formed marker and holds
nothing that marker does not list, so a user's folder, or a site a user has since added files to, is
refused rather than destroyed. The marker stays in the published site: it holds nothing private (no
date, no path of the build machine, only the site's own public file names), every folder of
the site has an ``index.html`` so web servers serve a page rather than a listing, and a deployed copy
that travels with its marker can be rebuilt in place.

The staging folder ``.<out>.building-XXXXXXXX`` holds the MkDocs ``site_dir`` (``site/``), every
temporary folder of the build (``tmp/``: ``tempfile`` and ``TMPDIR`` point there while MkDocs runs, so
any temporary folder of a MkDocs plugin lands there too; not inside ``site/``, which MkDocs empties),
the previous site while the swap runs (``previous/``) and an ``owner`` file that the build keeps
``flock``-ed for its whole life. A build killed outright (SIGKILL, power loss) leaves that folder behind;
the next build beside it removes every staging folder whose lock is free, and never one whose build is
still running. The staging, the swap and that clean-up are archzoo's one atomic folder writer's
(`archzoo.folders`); what may be replaced (the marker) is this module's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ArchzooError
from ..folders import remove_dead_staging, start_staging, swap_into_place

__all__ = ["DEFAULT_CONFIG", "SITE_MARKER", "SiteOptions", "build_site", "find_config", "serve_site"]

#: Quiet the banners some MkDocs plugins print about MkDocs 2 on every build.
_QUIET = {"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}

#: The file at the root of every site archzoo builds; see the module docstring.
SITE_MARKER = ".archzoo-site"
_MARKER_FORMAT = "archzoo-site 1"
_MARKER_NOTE = (
    "# Written by `archzoo build`: it replaces this folder only while the folder holds nothing "
    "but the files listed here."
)
#: Far above any real marker (a 10,000-page site lists about 0.5 MB); a larger file is not one.
_MARKER_MAX_BYTES = 64 * 1024 * 1024

#: The configuration of a zoo that has no ``mkdocs.yml`` (`archzoo build --registry DIR` anywhere).
DEFAULT_CONFIG = """\
site_name: archzoo model zoo
theme:
  name: material
plugins:
  - search
  - archzoo
"""


@dataclasses.dataclass(frozen=True)
class SiteOptions:
    """What the command line overrides in a site's configuration; None (or empty) leaves it as configured.

    ``title``, ``description``, ``site_url`` and ``repo_url`` are MkDocs' ``site_name``,
    ``site_description``, ``site_url`` and ``repo_url``; the others are the archzoo plugin's options
    (``registry`` folders are resolved against the current folder, the plugin's own against mkdocs.yml's).
    """

    title: str | None = None
    description: str | None = None
    site_url: str | None = None
    repo_url: str | None = None
    edit_pattern: str | None = None
    pages: tuple[str, ...] | None = None
    registry: tuple[Path, ...] | None = None
    plugin_registries: tuple[str, ...] | None = None
    workers: int | None = None
    flat_nav: bool | None = None

    def mkdocs(self) -> dict[str, str]:
        values = {
            "site_name": self.title,
            "site_description": self.description,
            "site_url": self.site_url,
            "repo_url": self.repo_url,
        }
        return {k: v for k, v in values.items() if v is not None}

    def plugin(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "edit_pattern": self.edit_pattern,
            "pages": list(self.pages) if self.pages is not None else None,
            "registry": [str(Path(d).resolve()) for d in self.registry] if self.registry else None,
            "plugin_registries": list(self.plugin_registries) if self.plugin_registries else None,
            "workers": self.workers,
            "flat_nav": self.flat_nav,
        }
        return {k: v for k, v in values.items() if v is not None}


def find_config(config_file: Path | str | None = None) -> Path | None:
    """The ``mkdocs.yml`` to build: the one given, else ``./mkdocs.yml``, else None (`DEFAULT_CONFIG`)."""
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ArchzooError(
                f"--config-file {path}: no such file; give the zoo's mkdocs.yml (`archzoo init DIR` makes one)"
            )
        return path.resolve()
    here = Path("mkdocs.yml")
    return here.resolve() if here.is_file() else None


def _write_default_config(folder: Path) -> Path:
    """`DEFAULT_CONFIG` in ``folder``, with the empty ``docs/`` it names."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    path = folder / "mkdocs.yml"
    path.write_text(DEFAULT_CONFIG, encoding="utf-8")
    return path


def _default_registry(options: SiteOptions, config_file: Path | None) -> SiteOptions:
    """Without a mkdocs.yml, the registry is ``--registry``, else ``$ARCHZOO_REGISTRY`` or ./registry."""
    if config_file is not None or options.registry:
        return options
    from ..registry import default_registry_dirs

    dirs = default_registry_dirs()
    if not dirs:
        raise ArchzooError(
            "no mkdocs.yml here and no registry folder found: give --registry DIR, run where "
            "./registry or mkdocs.yml is, or make a zoo with `archzoo init DIR`"
        )
    return dataclasses.replace(options, registry=tuple(dirs))


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


def load_site_config(config_file: Path, options: SiteOptions, **mkdocs: Any):
    """MkDocs' configuration of the site, with ``options`` applied to it and to its archzoo plugin."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import ConfigurationError

    try:
        config = load_config(config_file=str(config_file), **options.mkdocs(), **mkdocs)
    except ConfigurationError as exc:
        raise ArchzooError(f"{config_file}: {str(exc).strip() or 'invalid MkDocs configuration'}") from None
    plugin = config.plugins.get("archzoo")
    if plugin is None:
        raise ArchzooError(
            f"{config_file}: plugins: the archzoo plugin is not configured; add `- archzoo` "
            "under `plugins:` (with `- search` before it)"
        )
    for key, value in options.plugin().items():
        plugin.config[key] = value
    return config


def _mkdocs_build(config_file: Path, site_dir: Path, options: SiteOptions, *, strict: bool) -> None:
    from mkdocs.commands.build import build

    config = load_site_config(config_file, options, site_dir=str(site_dir), strict=strict)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()


def build_site(
    out_dir: Path | str = "site",
    *,
    registry: Sequence[Path | str] | None = None,
    config_file: Path | str | None = None,
    options: SiteOptions = SiteOptions(),
    progress: Callable[[str], None] | None = None,
    strict: bool = True,
) -> Path:
    """Build the zoo's site into ``out_dir``, from ``config_file`` (else ./mkdocs.yml, else `DEFAULT_CONFIG`
    with the registry of ``options``, ``$ARCHZOO_REGISTRY`` or ./registry) with ``options`` applied;
    ``registry`` is a shorthand for ``options.registry``.

    The build is strict (any MkDocs warning fails it) and atomic: on failure the previous ``out_dir`` is
    left as it was and an `ArchzooError` says why. ``out_dir`` must be missing, empty, or a site archzoo
    built (see the module docstring); a symbolic link is followed, and its target must be one of those.
    Staging folders of killed builds beside ``out_dir`` are removed first. ``progress`` receives a line
    every few hundred pages. Returns ``out_dir`` (resolved).
    """
    if registry is not None:
        options = dataclasses.replace(options, registry=tuple(Path(d) for d in registry))
    config = find_config(config_file)
    options = _default_registry(options, config)
    for folder in options.registry or ():
        if not Path(folder).exists():
            raise ArchzooError(f"--registry {folder}: no such folder; give a folder of registry YAML files")
    out_dir, label = _resolve_out(out_dir)
    project = config.parent if config else None
    _check_out_dir(out_dir, project, options.registry, label=label)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_staging(out_dir.parent)
        staging, owner = start_staging(out_dir, ("site", "tmp"))
    except OSError as exc:
        raise ArchzooError(
            f"--out {label}: cannot write there ({exc.strerror or exc}); choose another folder"
        ) from None
    try:
        site, temp = staging / "site", staging / "tmp"
        default = config is None
        if config is None:
            config = _write_default_config(temp / "zoo")
        env: dict[str, str | None] = {**_QUIET, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
        try:
            _run_mkdocs(
                config,
                site,
                temp,
                env,
                progress,
                options,
                strict=strict,
                kept=f"; the previous site in {out_dir} is untouched" if out_dir.exists() else "",
            )
        except ArchzooError as exc:
            if not default:
                raise
            # the default configuration is a file of this build's, gone when the message is read
            raise ArchzooError(
                str(exc).replace(str(config), "the default site (no mkdocs.yml here; the command-line options set it)")
            ) from None
        try:
            _write_marker(site)
        except OSError as exc:
            raise ArchzooError(
                f"--out {label}: cannot write the site ({exc.strerror or exc}); "
                "choose another folder; the previous site, if any, is untouched"
            ) from None
        # Checked again: files may have landed in out_dir while MkDocs ran.
        _check_out_dir(out_dir, project, options.registry, label=label)
        try:
            swap_into_place(staging, "site", out_dir)
        except OSError as exc:
            raise ArchzooError(
                f"--out {label}: cannot replace it ({exc.strerror or exc}); the previous site, if any, is untouched"
            ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(owner)  # only now: the lock tells other builds this folder is in use
    return out_dir


def _run_mkdocs(
    config: Path,
    site: Path,
    temp: Path,
    env: dict[str, str | None],
    progress: Callable[[str], None] | None,
    options: SiteOptions,
    *,
    strict: bool,
    kept: str,
) -> None:
    """Run MkDocs into ``site`` with every temporary folder in ``temp``; a failure becomes an ArchzooError."""
    collect = _Collect(progress)
    mkdocs_log = logging.getLogger("mkdocs")
    mkdocs_log.addHandler(collect)
    previous_level = mkdocs_log.level
    if mkdocs_log.level == logging.NOTSET or mkdocs_log.level > logging.INFO:
        mkdocs_log.setLevel(logging.INFO)
    try:
        with _environment(env), _temp_folder(temp):
            _mkdocs_build(config, site, options, strict=strict)
    except (KeyboardInterrupt, ArchzooError):
        raise
    except BaseException as exc:  # MkDocs' Abort is a SystemExit
        detail = str(exc).strip() or type(exc).__name__
        if collect.errors and detail.startswith("Aborted with"):  # MkDocs logged the cause, then aborted
            detail = "\n".join(collect.errors)
        if collect.warnings:
            detail += "\n" + "\n".join(f"  warning: {w}" for w in collect.warnings[:20])
        raise ArchzooError(f"site build failed: {detail}{kept}") from exc
    finally:
        mkdocs_log.removeHandler(collect)
        mkdocs_log.setLevel(previous_level)


@contextlib.contextmanager
def _temp_folder(folder: Path) -> Iterator[None]:
    """Point `tempfile` at ``folder`` (process-wide) while the build runs, then restore it."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved


# ---- where the site goes ------------------------------------------------------------------------


def _resolve_out(out_dir: Path | str) -> tuple[Path, str]:
    """``out_dir`` resolved, and how messages name it (a symbolic link is named with its target)."""
    given = Path(out_dir).absolute()
    try:
        resolved = given.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop (Python 3.11)
        raise ArchzooError(
            f"--out {given}: a symbolic link that never reaches a folder (a loop); give a folder for the site"
        ) from None
    label = f"{given} (a link to {resolved})" if given.is_symlink() else str(resolved)
    return resolved, label


def _check_out_dir(
    out_dir: Path, project: Path | None, registry_dirs: Sequence[Path | str] | None, *, label: str | None = None
) -> None:
    """Refuse an output place whose replacement would destroy something archzoo did not build."""
    label = label or str(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ArchzooError(f"--out {label}: is a file; give a folder for the site")
    project = (project or Path.cwd()).resolve()
    docs = (project / "docs").resolve()
    registries = [Path(d).resolve() for d in (registry_dirs or [])]
    if registry_dirs is None and (project / "registry").is_dir():
        registries.append((project / "registry").resolve())
    home = os.path.expanduser("~")  # Path.home() raises with no HOME and no passwd entry (a container's env -i)
    protected = [Path.cwd().resolve(), *([Path(home).resolve()] if os.path.isabs(home) else []), project, docs]
    protected += registries
    for place in protected:
        if out_dir == place or place.is_relative_to(out_dir):
            raise ArchzooError(
                f"--out {label}: would replace {place}, which is not a built site; "
                "give a separate folder such as ./site"
            )
    for registry in registries:
        if out_dir.is_relative_to(registry):
            raise ArchzooError(
                f"--out {label}: is inside the registry folder {registry}, where the site would "
                "mix with the registry's entries; give a folder outside it such as ./site"
            )
    if out_dir.is_relative_to(docs):
        raise ArchzooError(
            f"--out {label}: is inside the documentation folder {docs}, which MkDocs would "
            "publish as pages of the next build; give a folder outside it such as ./site"
        )
    if not out_dir.is_dir():
        return
    try:
        empty = not any(out_dir.iterdir())
        if empty:
            return
        marker = out_dir / SITE_MARKER
        if not os.path.lexists(marker):
            raise ArchzooError(
                f"--out {label}: a folder that holds something other than a built site (no {SITE_MARKER} "
                "marker: archzoo did not build it); give an empty or new folder such as ./site, or remove "
                "this one first if it is a site you no longer need"
            )
        files, folders = _read_marker(marker, label)
        foreign = _foreign_entries(out_dir, files, folders)
    except OSError as exc:
        raise ArchzooError(f"--out {label}: cannot read it ({exc.strerror or exc}); choose another folder") from None
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3:,} more" if len(foreign) > 3 else "")
        what = "an entry" if len(foreign) == 1 else f"{len(foreign):,} entries"
        raise ArchzooError(
            f"--out {label}: holds {what} that archzoo did not write there ({shown}), which "
            "replacing the site would delete; move them out, or give another folder for the site"
        )


# ---- the marker ----------------------------------------------------------------------------------


def _write_marker(site: Path) -> None:
    """Write ``SITE_MARKER`` at the root of ``site``: who built it, and every entry it holds."""
    from .. import __version__

    entries = []
    for folder, dirs, files in os.walk(site):
        rel = Path(folder).relative_to(site)
        entries += [(rel / name).as_posix() for name in files]
        entries += [(rel / name).as_posix() for name in dirs if os.path.islink(os.path.join(folder, name))]
        if not dirs and not files and folder != str(site):
            entries.append(rel.as_posix() + "/")  # an empty folder is listed too, so it is not foreign
    entries.sort()
    lines = [_MARKER_FORMAT, _MARKER_NOTE, f"built-by: archzoo {__version__}", f"files: {len(entries)}", *entries]
    (site / SITE_MARKER).write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")


def _read_marker(marker: Path, label: str) -> tuple[set[str], set[str]]:
    """The files and folders a marker lists; an ArchzooError unless it is exactly what archzoo writes."""

    def refuse(line: int, problem: str) -> ArchzooError:
        return ArchzooError(
            f"--out {label}: {marker}:{line}: {problem}; archzoo did not write this marker, so "
            "the folder is not taken for a site: give an empty or new folder such as ./site, "
            "or remove this one first if it is a site you no longer need"
        )

    def kind(mode: int) -> str:
        return "symbolic link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "special file"

    info = os.lstat(marker)
    if not stat.S_ISREG(info.st_mode):  # never open a link, a FIFO or a device
        raise refuse(1, f"expected a regular file, got a {kind(info.st_mode)}")
    # O_NOFOLLOW and O_NONBLOCK: swapped for a link or a FIFO since, it still neither follows nor blocks
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with open(os.open(marker, flags), "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise refuse(1, f"expected a regular file, got a {kind(info.st_mode)}")
        if info.st_size > _MARKER_MAX_BYTES:
            raise refuse(1, f"expected at most {_MARKER_MAX_BYTES:,} bytes, got {info.st_size:,}")
        text = handle.read(_MARKER_MAX_BYTES + 1).decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    if lines[0] != _MARKER_FORMAT:
        raise refuse(1, f"expected the format line {_MARKER_FORMAT!r}, got {_clip(lines[0])}")
    if not text.endswith("\n"):
        raise refuse(len(lines), "expected the file to end with a newline (it was cut short)")
    lines.pop()  # the empty string after the final newline
    number = 1
    count = None
    while number < len(lines):
        line = lines[number]
        number += 1
        if line.startswith("#"):
            continue
        key, sep, value = line.partition(": ")
        if not sep or not re.fullmatch(r"[a-z][a-z-]*", key):
            raise refuse(number, f"expected 'key: value' or 'files: COUNT', got {_clip(line)}")
        if key == "files":
            if not value.isascii() or not value.isdigit():
                raise refuse(number, f"expected a count of files, got {_clip(value)}")
            count = int(value)
            break
    if count is None:
        raise refuse(number, "expected a 'files: COUNT' line, got the end of the file")
    names = lines[number:]
    if len(names) != count:
        raise refuse(number, f"expected {count:,} file names after 'files: {count}', got {len(names):,}")
    files, folders = set(), set()
    for name in names:
        if name.endswith("/"):
            folders.add(name.rstrip("/"))
        else:
            files.add(name)
        folders.update(p.as_posix() for p in Path(name).parents)  # the folders the listed files sit in
    return files, folders


def _clip(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _foreign_entries(out_dir: Path, files: set[str], folders: set[str]) -> list[str]:
    """Every entry of ``out_dir`` that the marker does not list (a foreign folder is named, not its content)."""
    foreign: list[str] = []
    pending = [(str(out_dir), "")]
    while pending:  # no recursion: the depth is the folder's, not bounded by Python's stack
        folder, prefix = pending.pop()
        with os.scandir(folder) as scan:
            for entry in scan:
                rel = prefix + entry.name
                if rel == SITE_MARKER:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if rel in folders:
                        pending.append((entry.path, rel + "/"))
                    else:
                        foreign.append(rel + "/")
                elif rel not in files:
                    foreign.append(rel)
    return sorted(foreign)


def serve_site(
    *,
    config_file: Path | str | None = None,
    options: SiteOptions = SiteOptions(),
    host: str = "127.0.0.1",
    port: int = 8000,
    open_in_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the site on ``host:port`` with live reload until interrupted.

    ``say`` receives the URL and a line per build with its progress and time. A change to the
    registry folders, the docs folder or mkdocs.yml rebuilds the site: the pages whose markdown, the
    navigation and the configuration are unchanged are left as the last build wrote them
    (`archzoo.site.rebuild`), so saving one entry re-renders that model's page and the pages that show it. A rebuild that fails does not
    leave the browser waiting: a registry that cannot be read becomes a page showing the problems
    (the archzoo plugin's), and any other failure a plain page with the error, until the next save.
    """
    from urllib.parse import urlsplit

    from mkdocs.livereload import LiveReloadServer, _serve_url

    config_path = find_config(config_file)
    options = _default_registry(options, config_path)
    with tempfile.TemporaryDirectory(prefix="archzoo-serve-") as temp:
        if config_path is None:
            config_path = _write_default_config(Path(temp) / "zoo")
        site_dir = Path(temp) / "site"
        forward = _Forward(say)
        mkdocs_log = logging.getLogger("mkdocs")
        mkdocs_log.addHandler(forward)
        if mkdocs_log.level == logging.NOTSET or mkdocs_log.level > logging.INFO:
            mkdocs_log.setLevel(logging.INFO)

        def get_config():
            return load_site_config(config_path, options, site_dir=str(site_dir), dev_addr=f"{host}:{port}")

        with _environment(dict(_QUIET)):
            config = get_config()
            config.plugins.on_startup(command="serve", dirty=False)
            serve_url = _serve_url(host, port, urlsplit(config.site_url or "/").path)

            def builder(config=None) -> None:
                started = time.perf_counter()
                forward.last_error = None
                say("archzoo: building the site ...")
                try:
                    serve_build(config or get_config(), serve_url)
                except SystemExit as exc:  # MkDocs' Abort, after logging the cause (Ctrl+C passes through)
                    _write_error_site(site_dir, forward.last_error or str(exc))
                    say(f"archzoo: the build failed; {serve_url} shows why until the next save")
                    return
                except Exception as exc:  # the server keeps running; the page says what went wrong
                    _write_error_site(site_dir, f"{type(exc).__name__}: {exc}")
                    say(
                        f"archzoo: the build failed ({type(exc).__name__}: {exc}); {serve_url} shows it until the "
                        "next save"
                    )
                    return
                if forward.last_error:  # the plugin served the problem as the site
                    say(f"archzoo: {serve_url} shows the problem until the next save")
                else:
                    say(f"archzoo: site ready in {time.perf_counter() - started:.1f} s: {serve_url}")

            server = LiveReloadServer(
                builder=builder, host=host, port=port, root=str(site_dir), mount_path=urlsplit(serve_url).path
            )

            def error_handler(code: int) -> bytes | None:
                page = site_dir / f"{code}.html"
                return page.read_bytes() if code in (404, 500) and page.is_file() else None

            server.error_handler = error_handler
            try:
                builder(config)
                server.watch(config.docs_dir)
                server.watch(str(config_path))
                server = config.plugins.on_serve(server, config=config, builder=builder)
                for item in config.watch:
                    server.watch(item)
                say(
                    f"archzoo: serving {serve_url} (rebuilds when a registry file, docs/ or mkdocs.yml "
                    "changes; Ctrl+C stops)"
                )
                try:
                    server.serve(open_in_browser=open_in_browser)
                except KeyboardInterrupt:
                    say("archzoo: stopped")
                finally:
                    server.shutdown()
            except OSError as exc:
                raise ArchzooError(
                    f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port"
                ) from exc
            finally:
                config.plugins.on_shutdown()
                mkdocs_log.removeHandler(forward)


def serve_build(config, serve_url: str) -> None:
    """One build while serving: MkDocs' dirty build, which leaves the site folder as it is; the archzoo
    plugin (the same instance every build: it keeps what the last one wrote) re-renders the pages that
    changed, or empties the folder and renders everything (`archzoo.site.rebuild`)."""
    from mkdocs.commands.build import build

    config.site_url = serve_url
    plugin = config.plugins.get("archzoo")
    if plugin is not None:
        plugin.rebuilds.enabled = True
    build(config, serve_url=serve_url, dirty=True)


#: While serving a failed build: the server injects its live-reload script only into the files it serves,
#: not into what its error handler returns, so the error page asks again itself until the site is back.
RELOAD_SCRIPT = "setTimeout(function () { location.reload(); }, 2000);"


#: MkDocs' warning on a dirty build, which `serve_site` runs on purpose (see `archzoo.site.rebuild`).
_DIRTY_WARNING = "A 'dirty' build is being performed"


class _Forward(logging.Handler):
    """While serving: archzoo's progress lines and MkDocs' warnings and errors, to ``say``."""

    def __init__(self, say: Callable[[str], None]):
        super().__init__(logging.INFO)
        self.say = say
        self.last_error: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "mkdocs.livereload" and record.levelno < logging.ERROR:
            return  # the server's request log ("GET / ... code 404"): not news about the site
        if record.getMessage().startswith(_DIRTY_WARNING):
            return  # every rebuild is one; the archzoo plugin keeps the navigation and links right
        message = record.getMessage().removeprefix("archzoo: ")
        if record.levelno >= logging.ERROR:
            self.last_error = message
        if record.name == "mkdocs.plugins.archzoo" or record.levelno >= logging.WARNING:
            level = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
            self.say(f"archzoo: {level}{message}")


def _write_error_site(site_dir: Path, message: str) -> None:
    """A page, served for every URL, saying why the build failed (the live-reload script reloads it)."""
    from html import escape

    shutil.rmtree(site_dir, ignore_errors=True)  # every URL then answers with the 404 page: this one
    site_dir.mkdir(parents=True, exist_ok=True)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The site cannot be built'
        '</title></head><body style="font-family: sans-serif; margin: 2em"><h1>The site cannot be built</h1>'
        "<p>It rebuilds as soon as a file is saved again; this page then reloads by itself.</p>"
        f"<script>{RELOAD_SCRIPT}</script>"
        f'<pre style="white-space: pre-wrap">{escape(message)}</pre></body></html>'
    )
    for name in ("index.html", "404.html"):
        (site_dir / name).write_text(page, encoding="utf-8")
