"""`archzoo new-plugin NAME`: scaffold a plugin package, ready to install, test against its reference and publish.

The package is distribution ``archzoo-NAME``, module ``archzoo_NAME``, entry point ``NAME`` (the naming
of datasette's plugin template): a ``pyproject.toml`` declaring the entry point, the module (a configuration
model, a block tree mapped to its reference's submodules, a small torch reference module made on first
access, a registry folder registered through ``register_registry_dirs``), one example registry entry, a
conformance test written with `archzoo.testing`, and a README of the next steps. The files are rendered from
the templates in ``archzoo/templates/plugin/``.

As ``archzoo init`` does, nothing is ever overwritten: the folder must be missing or empty, everything is
written to a staging folder first and moved into place in one step, and a failure leaves nothing behind.
"""

from __future__ import annotations

import datetime
import json
import keyword
import re
import string
from importlib import resources
from pathlib import Path

import yaml

from . import __version__
from .errors import ArchzooError
from .folders import check_new_folder, write_new_folder
from .host import PluginHost

__all__ = ["PLUGIN_NAME", "new_plugin", "plugin_files"]

#: A plugin name: lowercase words joined by single underscores, so that ``archzoo_NAME`` is a module name
#: and ``NAME`` an architecture name and an entry-point name.
PLUGIN_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
MAX_NAME = 40


class _PluginTemplate(string.Template):
    """``@@{name}`` placeholders: ``$`` and ``{}`` belong to the Python and TOML the templates hold."""

    delimiter = "@@"


def _render(template: str, **fields: str) -> str:
    text = (resources.files("archzoo") / "templates" / "plugin" / template).read_text(encoding="utf-8")
    return _PluginTemplate(text).substitute(fields)  # a missing field is a KeyError: templates and code agree


def _yaml_scalar(text: str) -> str:
    """``text`` as a YAML value that reads back as this text: plain when it does, else double-quoted (YAML
    reads a plain ``null``, ``true``, ``false``, ``yes`` or ``on`` as something else than the name)."""
    return text if yaml.safe_load(text) == text else json.dumps(text)


def _names(name: str) -> dict[str, str]:
    camel = "".join(part.capitalize() for part in name.split("_"))
    return {
        "name": name,
        "name_yaml": _yaml_scalar(name),
        "module": f"archzoo_{name}",
        "dist": f"archzoo-{name.replace('_', '-')}",
        "camel": camel,
        "title": camel,
        "model_id": f"{name.replace('_', '-')}-example",
        "archzoo_version": __version__,
        "year": str(datetime.date.today().year),
    }


def plugin_files(name: str) -> dict[str, str]:
    """The scaffold of plugin ``name``: each file's path in the package folder, and its text."""
    fields = _names(name)
    module, model_id = fields["module"], fields["model_id"]
    return {
        "pyproject.toml": _render("pyproject.toml.tmpl", **fields),
        "README.md": _render("README.md.tmpl", **fields),
        ".gitignore": _render("gitignore.tmpl", **fields),
        f"src/{module}/__init__.py": _render("plugin.py.tmpl", **fields),
        f"src/{module}/registry/{name}/{model_id}.yaml": _render("entry.yaml.tmpl", **fields),
        f"tests/test_{name}.py": _render("test_plugin.py.tmpl", **fields),
    }


def check_name(name: str, host: PluginHost | None = None) -> None:
    """Raise an `ArchzooError` saying what is wrong with ``name`` as a plugin name, and what would do."""
    if not PLUGIN_NAME.fullmatch(name) or len(name) > MAX_NAME:
        why = (
            f"longer than {MAX_NAME} characters"
            if PLUGIN_NAME.fullmatch(name)
            else "expected lowercase letters and digits, words joined by single underscores, starting with a letter"
        )
        suggestion = re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", name.lower())).strip("_")
        suggestion = suggestion if PLUGIN_NAME.fullmatch(suggestion) else ""
        hint = f" (such as {suggestion!r})" if suggestion and suggestion != name else " (such as 'my_model')"
        raise ArchzooError(
            f"plugin name {name!r}: {why}; it becomes the entry point NAME, the module archzoo_NAME and the "
            f"architecture NAME, so give a name like that{hint}"
        )
    if keyword.iskeyword(name):
        raise ArchzooError(f"plugin name {name!r}: a Python keyword; choose another name")
    if host is not None:
        taken = {n for n, info in host.plugins.items() if info.builtin} | {
            a.name for a in host.architectures.values() if host.plugins.get(a.plugin) and host.plugins[a.plugin].builtin
        }
        if name in taken:
            raise ArchzooError(
                f"plugin name {name!r}: a built-in plugin or architecture of archzoo has this name, and a plugin "
                f"cannot replace a built-in; choose another name, such as '{name}_variant'"
            )


def new_plugin(
    name: str, directory: Path | str | None = None, host: PluginHost | None = None
) -> tuple[Path, list[Path]]:
    """Scaffold plugin ``name`` in ``directory`` (missing or empty; default ``./archzoo-NAME``): returns the
    folder and the files written, relative to it. ``host``, when given, is asked for the built-in plugins'
    and architectures' names, which ``name`` must not take."""
    check_name(name, host)
    fields = _names(name)
    target = Path(directory) if directory is not None else Path(fields["dist"])
    exists = check_new_folder(target, command="archzoo new-plugin", hint=" with --dir")
    files = plugin_files(name)

    def write(staging: Path) -> None:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="utf-8", newline="\n") as file:
                file.write(text)

    write_new_folder(target, exists, write, what="plugin")
    return target, [Path(relative) for relative in files]
