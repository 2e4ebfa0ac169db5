"""The plugin host: finds plugins through the ``archzoo`` entry-point group and collects what they register.

Loading is lazy and happens once. Every piece of plugin code (importing it, its hooks, its ``build``)
runs through `call_plugin` (`archzoo.plugin_guard`, re-exported here): its standard output goes to standard error, so machine-readable output
stays clean, and anything it raises short of ``KeyboardInterrupt`` (``SystemExit`` included) becomes a
`PluginError` naming it. A plugin that fails to import or raises in a hook is skipped with everything it
registered; one that registers something invalid has that registration refused. Each is recorded as a
`PluginProblem` naming it, and every other plugin keeps working; strict mode (``--strict`` or
``ARCHZOO_STRICT=1``) turns the first problem into a `PluginError`.

The built-in plugins are the entry points of the ``archzoo`` distribution itself. They load first,
whatever their names, and no other plugin can take their names or their architectures' names.

A lookup imports only the plugin it needs: after a full load without problems the host writes a manifest of
what each plugin registered (`archzoo.plugin_manifest`), and a later host routes each architecture or Hugging
Face model type to its plugin from it, checking every plugin it imports against its record.

Environment (each value is checked: anything else is an `EnvironmentVariableError` naming the variable):
    ARCHZOO_PLUGINS        comma-separated entry-point names: load only these plugins.
    ARCHZOO_STRICT         1 to make any plugin problem an error (0, or unset, to skip a broken plugin).
    ARCHZOO_TRACE_PLUGINS  1 to print every hook call to stderr.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

import archzoo.hookspecs as hookspecs  # the module itself: its specs are registered with pluggy

from .errors import EnvironmentVariableError, PluginError, PluginProblem, UnknownArchitectureError, closest
from .hf_vocabulary import hf_table
from .plugin_guard import call_plugin, type_name
from .plugin_manifest import (
    Manifest,
    PluginRecord,
    discard_manifest,
    environment_key,
    manifest_key,
    read_manifest,
    source_signature,
    write_manifest,
)

if TYPE_CHECKING:
    from .architecture import Architecture
    from .build_check import MAX_BLOCK_DEPTH as MAX_BLOCK_DEPTH
    from .build_check import MAX_BLOCKS as MAX_BLOCKS
    from .build_check import build_blocks as build_blocks

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_PLUGINS",
    "ENV_STRICT",
    "ENV_TRACE",
    "HFReader",
    "PluginHost",
    "PluginInfo",
    "PluginProblem",
    "build_blocks",
    "call_plugin",
    "env_flag",
    "env_plugin_selection",
    "get_host",
    "reset_host",
]

ENTRY_POINT_GROUP = "archzoo"
ENV_PLUGINS = "ARCHZOO_PLUGINS"
ENV_STRICT = "ARCHZOO_STRICT"
ENV_TRACE = "ARCHZOO_TRACE_PLUGINS"

#: The distribution whose entry points are the built-in plugins.
BUILTIN_DISTRIBUTION = "archzoo"


@dataclass
class PluginInfo:
    """A loaded plugin: where it came from and what it registered."""

    name: str
    version: str
    source: str
    module: str
    architectures: list[str] = field(default_factory=list)
    registry_dirs: list[Path] = field(default_factory=list)
    builtin: bool = False  # an entry point of the archzoo distribution itself
    #: a digest of the size and modification time of every source file of the plugin's package, found without
    #: importing it (`archzoo.plugin_manifest.source_signature`); empty for a plugin registered in process. A cache
    #: of anything a plugin computes (the registry index) can key on it without importing the plugin.
    source_signature: str = ""


@dataclass(frozen=True)
class HFReader:
    """A Hugging Face ``model_type`` a plugin reads: the function that reads its ``config.json``, and the
    architecture whose configuration keys it returns."""

    model_type: str
    architecture: str
    reader: Callable[..., dict[str, Any]]
    plugin: str


# ---- the environment ----------------------------------------------------------------------------------

_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")

#: An entry-point name as the packaging specification recommends ([\w.-]+), starting with a letter, digit or _.
_PLUGIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def _shown(text: str) -> str:
    """An environment variable's value for a message: quoted, control characters escaped, at most 60 characters."""
    return repr(text if len(text) <= 60 else text[:59] + "…")


def env_flag(name: str) -> bool:
    """Whether the on/off environment variable ``name`` is on (unset or empty: off); any other value than
    1/0, true/false, yes/no or on/off is an `EnvironmentVariableError` naming it."""
    raw = os.environ.get(name)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise EnvironmentVariableError(
        f"{name}={_shown(raw)}: expected 1 (on) or 0 (off), or true/false, yes/no, on/off; set {name}=1 or unset it"
    )


def env_plugin_selection() -> list[str] | None:
    """The entry-point names ``ARCHZOO_PLUGINS`` selects (None when it is unset or empty: every plugin); a
    value that names no plugin or holds something that is not a name is an `EnvironmentVariableError`."""
    raw = os.environ.get(ENV_PLUGINS)
    if raw is None or not raw.strip():
        return None
    names = [n.strip() for n in raw.split(",")]
    example = f"such as {ENV_PLUGINS}=gpt,bert (`archzoo plugins` lists the installed ones)"
    if not any(names):
        raise EnvironmentVariableError(
            f"{ENV_PLUGINS}={_shown(raw)}: names no plugin; give entry-point names separated by commas, "
            f"{example}, or unset it to load every plugin"
        )
    for name in names:
        if name and not _PLUGIN_NAME.fullmatch(name):
            raise EnvironmentVariableError(
                f"{ENV_PLUGINS}: {_shown(name)} is not a plugin name (entry-point names are letters, digits, '_', "
                f"'-' and '.', at most 100); give names separated by commas, {example}"
            )
    return list(dict.fromkeys(n for n in names if n))


# ---- the host -----------------------------------------------------------------------------------------


def _canonical(name: str | None) -> str:
    return re.sub(r"[-_.]+", "-", name or "").lower()


@dataclass(frozen=True)
class _Candidate:
    """An entry point found in the ``archzoo`` group, with the distribution that declares it."""

    name: str
    value: str  # module, or module:attribute
    dist_name: str
    version: str

    @property
    def builtin(self) -> bool:
        return _canonical(self.dist_name) == BUILTIN_DISTRIBUTION

    @property
    def source(self) -> str:
        return f"entry point {ENTRY_POINT_GROUP}:{self.name} in {self.dist_name} {self.version}"

    def load(self) -> Any:
        """What the entry point names, as ``importlib.metadata.EntryPoint.load`` finds it (``module:attr.attr``,
        extras ignored), without importing importlib.metadata: a lookup routed by the manifest never reads
        package metadata."""
        module, _, attrs = self.value.partition(":")
        target = import_module(module.strip())
        for attr in attrs.partition("[")[0].strip().split("."):
            if attr:
                target = getattr(target, attr)
        return target


class _HookError(Exception):
    """A plugin implements a hook archzoo does not define."""


V = TypeVar("V")


class _OnDemand(Mapping[str, V]):
    """A mapping whose keys are known without importing any plugin (from the manifest) and whose values are
    looked up, importing the plugin that provides them, only when asked for."""

    def __init__(self, keys: Iterable[str], get: Callable[[str], V]):
        self._keys = dict.fromkeys(sorted(keys))
        self._get = get

    def __getitem__(self, key: str) -> V:
        if key not in self._keys:
            raise KeyError(key)
        return self._get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._keys)})"


class PluginHost:
    """Loads plugins once and holds the architectures and registry folders they contribute.

    When the plugin manifest (`archzoo.plugin_manifest`) matches the installed plugins, loading imports none of
    them: a plugin is imported when one of its architectures or Hugging Face model types is asked for, or when
    `plugins` (every plugin, imported, with its hooks) is. `plugin_infos` names them all without importing.
    """

    def __init__(
        self,
        *,
        strict: bool | None = None,
        only: Iterable[str] | None = None,
        extra_plugins: dict[str, ModuleType | object] | None = None,
        entry_points: bool = True,
        manifest: bool = True,
    ):
        # every variable is read (and so checked) whatever the arguments say
        strict_env, self._trace = env_flag(ENV_STRICT), env_flag(ENV_TRACE)
        only_env = env_plugin_selection()
        self.strict = strict_env if strict is None else strict
        if only is None:
            only = only_env
        self.only = set(only) if only is not None else None
        self._extra = dict(extra_plugins or {})
        self._use_entry_points = entry_points
        # plugins registered in process are objects, not installed files: no manifest can describe them; and a
        # trace is asked for to see every plugin's hooks run
        self._use_manifest = manifest and entry_points and not self._extra and not self._trace
        self._reset()

    def _reset(self) -> None:
        self.pm = pluggy.PluginManager("archzoo")
        self.pm.add_hookspecs(hookspecs)
        self._plugins: dict[str, PluginInfo] = {}
        self.problems: list[PluginProblem] = []
        self._architectures: dict[str, Architecture] = {}
        self._reserved: dict[str, str] = {}  # architecture name -> the built-in plugin that owns it
        self._hf_readers: dict[str, HFReader] = {}  # Hugging Face model_type -> its one reader
        self._pending: dict[str, _Candidate] = {}  # plugins the manifest describes, not imported yet
        self._records: dict[str, PluginRecord] = {}  # what the manifest says each of them registers
        self._signatures: dict[str, str] = {}  # entry-point target -> source_signature, computed once
        self._loaded = False
        if self._trace:
            self.pm.trace.root.setwriter(lambda text: sys.stderr.write(text))
            self.pm.enable_tracing()

    # ---- problems ------------------------------------------------------------------------------
    def _note(self, plugin: str, reason: str) -> None:
        """Record a problem; strict mode raises at the next checkpoint (`_raise_if_strict`)."""
        self.problems.append(PluginProblem(plugin, reason))

    def _raise_if_strict(self, since: int) -> None:
        if self.strict and len(self.problems) > since:
            raise PluginError(f"{self.problems[since]} (strict mode: unset {ENV_STRICT} or drop --strict to skip it)")

    def _problem(self, plugin: str, reason: str) -> None:
        self._note(plugin, reason)
        self._raise_if_strict(len(self.problems) - 1)

    # ---- finding plugins -----------------------------------------------------------------------
    def _candidates(self) -> list[_Candidate]:
        """Every entry point of the group, built-ins first, each name once: a later plugin of the same name
        is refused, naming its distribution, and never imported.

        As in ``importlib.metadata.entry_points``, the first distribution of a name on ``sys.path`` wins.
        """
        found: list[_Candidate] = []
        seen_dists: set[str] = set()
        section = re.compile(rf"^\s*\[\s*{ENTRY_POINT_GROUP}\s*\]\s*$", re.M)
        from importlib import metadata  # ~10 ms of imports (email, zipfile...): only when the manifest cannot say

        for dist in metadata.distributions():
            try:
                text = dist.read_text("entry_points.txt")
                if not text or not section.search(text):
                    continue  # most distributions: no archzoo plugin, nothing more to read
                dist_name = dist.metadata["Name"] or "?"
                version = str(dist.version)
            except Exception:  # unreadable metadata: nothing archzoo could name or load
                continue
            if _canonical(dist_name) in seen_dists:
                continue  # another copy further down sys.path, hidden as importlib.metadata hides it
            seen_dists.add(_canonical(dist_name))
            found.extend(
                _Candidate(ep.name, ep.value, dist_name, version)
                for ep in dist.entry_points
                if ep.group == ENTRY_POINT_GROUP
            )
        found.sort(key=lambda c: (not c.builtin, c.name, _canonical(c.dist_name)))
        unique: dict[str, _Candidate] = {}
        for candidate in found:
            name = candidate.name
            first = unique.get(name)
            if first is None:
                unique[name] = candidate
                continue
            if self.only is None or name in self.only:
                owner = "archzoo's built-in plugin" if first.builtin else f"the {first.source}"
                self._problem(
                    name,
                    f"the {candidate.source} was not loaded: {owner} already has this name; rename that entry point",
                )
        return list(unique.values())

    # ---- loading -------------------------------------------------------------------------------
    def _register_hooks(self, name: str, plugin: Any) -> None:
        self.pm.register(plugin, name=name)
        unknown = [
            hook.name
            for hook in vars(self.pm.hook).values()
            if isinstance(hook, pluggy.HookCaller)
            and not hook.has_spec()
            and any(impl.plugin is plugin and not impl.optionalhook for impl in hook.get_hookimpls())
        ]
        if unknown:
            hooks = sorted(n for n in dir(hookspecs) if n.startswith("register_"))
            near = closest(unknown[0], hooks)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise _HookError(
                f"implements hook {unknown[0]!r}, which archzoo does not define; {hint}"
                f"archzoo's hooks: {', '.join(hooks)}"
            )

    def _register_module(self, name: str, plugin: Any, info: PluginInfo) -> None:
        try:
            call_plugin(
                name,
                "registering its hooks",
                self._register_hooks,
                name,
                plugin,
                expected=(_HookError, pluggy.PluginValidationError),
            )
        except (_HookError, pluggy.PluginValidationError, PluginError) as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            if isinstance(exc, PluginError):  # the plugin's own code failed while pluggy inspected it
                self._problem(name, exc.reason)
            else:  # a misspelt hook, or a hook whose arguments the spec does not have
                self._problem(name, f"cannot be registered: {' '.join(str(exc).split())}")
            return
        self._plugins[name] = info
        if info.builtin:
            self._reserved.setdefault(name, name)

    def _import_candidate(self, candidate: _Candidate) -> None:
        """Import one entry point's module and register its hooks (a problem, not an exception, when it fails)."""
        name = candidate.name
        try:
            module = call_plugin(name, f"importing {candidate.value!r}", candidate.load)
        except PluginError as exc:
            self._problem(name, exc.reason)
            return
        info = PluginInfo(
            name,
            candidate.version,
            candidate.source,
            candidate.value,
            builtin=candidate.builtin,
            source_signature=self._signature(candidate),
        )
        self._register_module(name, module, info)

    def load(self) -> PluginHost:
        """Find every plugin and what it registers; does nothing the second time.

        With a manifest matching the installed plugins this imports none of them (see `plugin_infos`);
        otherwise it imports and registers every one, collects their registrations and, when no plugin had a
        problem, writes the manifest for the next process.
        """
        if self._loaded:
            return self
        self._loaded = True
        manifest = read_manifest(self.only) if self._use_manifest else None
        environment = environment_key() if self._use_manifest else ""
        if manifest is not None and environment in manifest.environments:
            # nothing installed or removed since the manifest was written: its entry points are those metadata
            # would list (and each plugin it routes to is still checked when imported)
            candidates = [_Candidate(*fields) for fields in manifest.entry_points]
            key = self._manifest_key(candidates)
            if key == manifest.key and self._from_manifest(manifest, candidates):
                return self
        candidates = self._candidates() if self._use_entry_points else []
        self._check_selection(candidates)
        key = self._manifest_key(candidates) if self._use_manifest and not self.problems else None
        if manifest is not None and key == manifest.key and self._from_manifest(manifest, candidates):
            # the same entry points in this environment too: the next process started this way reads no metadata
            others = tuple(e for e in manifest.environments if e != environment)
            write_manifest(replace(manifest, environments=(environment, *others)), self.only)
            return self
        self._load_all(candidates, key, environment)
        return self

    def _check_selection(self, candidates: list[_Candidate]) -> None:
        """A selection (ARCHZOO_PLUGINS) of which no name is installed would leave archzoo with no plugin at all."""
        if not self.only:
            return
        available = set(self._extra) | {c.name for c in candidates}
        if self.only & available:
            return  # a name that is not installed is a problem of its own (`_load_all`), the others load
        missing = sorted(self.only)
        near = closest(missing[0], available)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise EnvironmentVariableError(
            f"{ENV_PLUGINS}={_shown(','.join(missing))}: no installed plugin has {'that name' if len(missing) == 1 else 'these names'}"
            f"{hint}; installed: {', '.join(sorted(available)) or 'none'}. Name installed plugins, or unset "
            f"{ENV_PLUGINS} to load every plugin"
        )

    def _load_all(self, candidates: list[_Candidate], key: str | None, environment: str = "") -> None:
        """Import and register every selected plugin, collect their registrations and, with a ``key`` and no
        problem, write the manifest."""
        available = set(self._extra) | {c.name for c in candidates}
        # a built-in's name stays reserved when ARCHZOO_PLUGINS leaves it out
        self._reserved.update({c.name: c.name for c in candidates if c.builtin})
        for candidate in candidates:
            if self.only is None or candidate.name in self.only:
                self._import_candidate(candidate)
        for name, plugin in self._extra.items():
            if self.only is not None and name not in self.only:
                continue
            if name in self._plugins:
                self._problem(name, "registered in process, but a loaded plugin already has this name; rename it")
                continue
            module_name = getattr(plugin, "__name__", type(plugin).__name__)
            version = str(getattr(plugin, "__version__", "?"))
            self._register_module(name, plugin, PluginInfo(name, version, "registered in process", module_name))
        for name in sorted((self.only or set()) - available):
            near = closest(name, available)
            hint = f"did you mean {near[0]!r}? " if near else ""
            self._problem(
                name,
                f"named in {ENV_PLUGINS}, but no installed plugin has that name; {hint}"
                f"installed: {', '.join(sorted(available)) or 'none'}",
            )
        self._collect()
        if key is not None and not self.problems:
            self._write_manifest(key, environment, candidates)

    # ---- the manifest --------------------------------------------------------------------------
    def _signature(self, candidate: _Candidate) -> str:
        if candidate.value not in self._signatures:
            self._signatures[candidate.value] = source_signature(candidate.value) or ""
        return self._signatures[candidate.value]

    def _manifest_key(self, candidates: list[_Candidate]) -> str | None:
        fields = [
            (
                c.name,
                c.value,
                c.dist_name,
                c.version,
                ("builtin" if c.builtin else "third-party"),
                self._signature(c),
            )
            for c in candidates
        ]
        return manifest_key(fields, self.only)

    def _from_manifest(self, manifest: Manifest, candidates: list[_Candidate]) -> bool:
        """Take every plugin's registrations from the manifest, importing none; False (nothing taken) when it
        does not describe exactly the selected plugins."""
        records = manifest.records
        selected = {c.name: c for c in candidates if self.only is None or c.name in self.only}
        if [r.name for r in records] != list(selected):  # a clean full load registers every one, in this order
            return False
        if any(not Path(d).is_dir() for r in records for d in r.registry_dirs):
            return False  # a folder gone since: the full load names the plugin and says so
        self._reserved.update({c.name: c.name for c in candidates if c.builtin})
        for record in records:
            candidate = selected[record.name]
            self._plugins[record.name] = PluginInfo(
                record.name,
                candidate.version,
                candidate.source,
                candidate.value,
                architectures=list(record.architectures),
                registry_dirs=[Path(d) for d in record.registry_dirs],
                builtin=candidate.builtin,
                source_signature=self._signature(candidate),
            )
            self._pending[record.name] = candidate
            self._records[record.name] = record
            if candidate.builtin:
                self._reserved.update(dict.fromkeys(record.architectures, record.name))
        return True

    def _record(self, name: str) -> PluginRecord:
        info = self._plugins[name]
        readers = sorted((t, r.architecture) for t, r in self._hf_readers.items() if r.plugin == name)
        return PluginRecord(name, tuple(info.architectures), tuple(str(d) for d in info.registry_dirs), tuple(readers))

    def _write_manifest(self, key: str, environment: str, candidates: list[_Candidate]) -> None:
        records = [self._record(name) for name in self._plugins]
        if all(Path(d).is_absolute() for r in records for d in r.registry_dirs):  # a relative one depends on the cwd
            entry_points = [(c.name, c.value, c.dist_name, c.version) for c in candidates]
            write_manifest(Manifest(key, (environment,), entry_points, records), self.only)

    def _ensure(self, names: Iterable[str]) -> None:
        """Import the named plugins the manifest describes, if not yet imported, and check that each registers
        exactly what its record says. Any difference (or problem) discards the manifest and loads every plugin
        afresh, so that the answer is what a full load gives."""
        wanted = [n for n in dict.fromkeys(names) if n in self._pending]
        if not wanted:
            return
        strict, self.strict = self.strict, False  # the full load below is the one strict mode judges
        before = len(self.problems)
        try:
            for name in wanted:
                self._import_candidate(self._pending.pop(name))
                if self.pm.get_plugin(name) is None:  # it failed: its manifest record describes nothing loaded
                    del self._plugins[name]
            self._collect(wanted)
        finally:
            self.strict = strict
        if len(self.problems) == before and all(
            n in self._plugins and self._record(n) == self._records[n] for n in wanted
        ):
            return
        discard_manifest(self.only)
        self._reset()
        self._loaded = True
        environment = environment_key()
        candidates = self._candidates() if self._use_entry_points else []
        # a fresh manifest for the next process (each plugin it routes to is checked again when imported)
        self._load_all(candidates, self._manifest_key(candidates) if self._use_manifest else None, environment)

    def _drop(self, name: str) -> None:
        """Skip a plugin that failed: forget it and everything it registered."""
        info = self._plugins.pop(name)
        for arch in info.architectures:
            self._architectures.pop(arch, None)
        for model_type in [t for t, r in self._hf_readers.items() if r.plugin == name]:
            del self._hf_readers[model_type]
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)

    def _call_each(
        self,
        hook_name: str,
        make_register: Callable[[str], Callable[..., None]],
        names: Iterable[str] | None = None,
    ) -> None:
        """Call one hook plugin by plugin (every imported plugin, or those in ``names``), so that one plugin's
        failure cannot stop the others.

        A plugin whose hook raises is skipped with everything it registered. ``register`` works only
        while the hook runs, so a plugin cannot add to the zoo later, from other code.
        """
        for name in list(self._plugins if names is None else names):
            plugin = self.pm.get_plugin(name)
            if plugin is None or name not in self._plugins:  # not imported yet, or dropped
                continue
            others = [p for n, p in self.pm.list_name_plugin() if n != name]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            if not any(impl.plugin is plugin for impl in caller.get_hookimpls()):
                continue
            before = len(self.problems)
            open_ = [True]
            register = self._guarded(name, hook_name, make_register(name), open_)
            try:
                call_plugin(name, hook_name, caller, register=register)
            except PluginError as exc:
                self._drop(name)
                self._note(name, exc.reason)
            finally:
                open_[0] = False
            self._raise_if_strict(before)

    @staticmethod
    def _guarded(name: str, hook_name: str, accept: Callable[..., None], open_: list[bool]) -> Callable[..., None]:
        """``accept``, refusing to run once the hook has returned (``open_[0]`` is then False)."""

        def register(*args: Any, **kwargs: Any) -> None:
            if not open_[0]:
                raise PluginError(
                    f"plugin {name!r}: called register after {hook_name} returned; register only while {hook_name} runs"
                )
            accept(*args, **kwargs)

        return register

    def _accept_hf_reader(self, plugin: str, model_type: Any, reader: Any, architecture: Any = None) -> None:
        """Record one model type's reader, or note why it is refused; ``architecture`` None means the plugin's only one."""
        what = f"registers a Hugging Face reader for model type {model_type!r}"
        if type(model_type) is not str or not model_type or not model_type.isprintable() or " " in model_type:
            self._note(
                plugin,
                f"registered a Hugging Face reader for model type {model_type!r} ({type_name(model_type)}), "
                "expected the model_type text of a config.json, such as 'bert'",
            )
            return
        if not callable(reader):
            self._note(plugin, f"{what} that is {type_name(reader)}, expected a function of the config.json's values")
            return
        own = self._plugins[plugin].architectures
        if architecture is None:
            if len(own) != 1:
                which = (
                    f"without saying which of its architectures ({', '.join(own)}) it reads into; pass "
                    "architecture=NAME"
                    if own
                    else "but registers no architecture for it to read into; register one with register_architectures"
                )
                self._note(plugin, f"{what} {which}")
                return
            architecture = own[0]
        if architecture not in own:
            self._note(
                plugin,
                f"{what} into architecture {architecture!r}, which it does not register (its "
                f"architectures: {', '.join(own) or 'none'}); a plugin reads configurations into its "
                "own architectures",
            )
            return
        table = hf_table(reader)
        if table is not None and table.model_type != model_type:
            self._note(
                plugin,
                f"{what}, but the reader's HFTable describes model type {table.model_type!r}; "
                "register it under that type",
            )
            return
        owner = self._hf_readers.get(model_type)
        if owner is not None:
            already = (
                "already registered by this plugin"
                if owner.plugin == plugin
                else f"already read by plugin {owner.plugin!r}"
            )
            self._note(
                plugin,
                f"{what}, {already} (architecture {owner.architecture!r}); a model type has one "
                f"reader: drop one, or restrict plugins with {ENV_PLUGINS}",
            )
            return
        self._hf_readers[model_type] = HFReader(model_type, architecture, reader, plugin)

    def _accept_declared_hf_readers(self, names: Iterable[str] | None = None) -> None:
        """The deprecated path: readers a plugin declared in `Architecture.hf_model_types` instead of registering
        them with the register_hf_readers hook, accepted after every hook's readers and checked the same way."""
        for name in list(self._plugins if names is None else names):
            info = self._plugins.get(name)
            if info is None or self.pm.get_plugin(name) is None:  # dropped, or not imported yet
                continue
            # a copy of an architecture the host returned carries the readers filled in for the original: the
            # very reader already registered for that type is a copy, not a second claim
            declared = [
                (t, reader, arch)
                for arch in info.architectures
                for t, reader in self._architectures[arch].hf_model_types.items()
                if t not in self._hf_readers or self._hf_readers[t].reader is not reader
            ]
            if not declared:
                continue
            warnings.warn(
                f"plugin {name!r}: Architecture.hf_model_types is deprecated; register Hugging Face "
                "readers with the register_hf_readers hook",
                DeprecationWarning,
                stacklevel=2,
            )
            before = len(self.problems)
            for model_type, reader, arch in declared:
                self._accept_hf_reader(name, model_type, reader, arch)
            self._raise_if_strict(before)

    def _attach_hf_readers(self, names: Iterable[str] | None = None) -> None:
        """Each architecture's ``hf_model_types`` (of the plugins in ``names``, or of every one): the model types
        read into it, whoever declared them how. A plugin reads only into its own architectures."""
        plugins = set(self._plugins if names is None else names)
        for name, arch in self._architectures.items():
            if arch.plugin in plugins:
                readers = {t: r.reader for t, r in self._hf_readers.items() if r.architecture == name}
                self._architectures[name] = arch.model_copy(update={"hf_model_types": readers})

    def _collect(self, names: list[str] | None = None) -> None:
        """Call the registration hooks of every imported plugin, or of those in ``names``."""
        # pydantic (tens of milliseconds) is imported with the first plugin, never to read the manifest
        from pydantic import ValidationError

        from .architecture import Architecture

        def architecture_register(plugin: str):
            def register(arch: Architecture | dict) -> None:
                try:
                    if isinstance(arch, dict):
                        arch = Architecture.model_validate(arch)
                    if not isinstance(arch, Architecture):
                        raise TypeError(f"expected an archzoo.Architecture, got {type_name(arch)}")
                except (ValidationError, TypeError) as exc:
                    detail = str(exc).splitlines()
                    self._note(plugin, f"registered an invalid architecture: {' '.join(detail[:3])}")
                    return
                info = self._plugins[plugin]
                owner = self._architectures.get(arch.name)
                builtin_owner = self._reserved.get(arch.name)
                if (owner is not None and self._plugins[owner.plugin].builtin) or (
                    owner is None and builtin_owner is not None and not info.builtin
                ):
                    self._note(
                        plugin,
                        f"registers architecture {arch.name!r}, which archzoo's built-in plugin "
                        f"{owner.plugin if owner is not None else builtin_owner!r} provides; a plugin cannot "
                        "replace a built-in architecture: register yours under another name",
                    )
                    return
                if owner is not None:
                    self._note(
                        plugin,
                        f"registers architecture {arch.name!r}, already registered by plugin {owner.plugin!r}; "
                        f"rename it or restrict plugins with {ENV_PLUGINS}",
                    )
                    return
                arch = arch.model_copy(update={"plugin": plugin})
                self._architectures[arch.name] = arch
                info.architectures.append(arch.name)
                if info.builtin:
                    self._reserved[arch.name] = plugin

            return register

        def registry_register(plugin: str):
            def register(folder: Path | str) -> None:
                try:
                    path = Path(folder)
                except TypeError:
                    self._note(plugin, f"registered a registry folder of type {type_name(folder)}, expected a path")
                    return
                if not path.is_dir():
                    self._note(plugin, f"registered registry folder {str(path)!r}, which is not a folder")
                    return
                self._plugins[plugin].registry_dirs.append(path)

            return register

        def hf_reader_register(plugin: str):
            def register(
                model_type: str, reader: Callable[..., dict[str, Any]], architecture: str | None = None
            ) -> None:
                self._accept_hf_reader(plugin, model_type, reader, architecture)

            return register

        self._call_each("register_architectures", architecture_register, names)
        self._call_each("register_hf_readers", hf_reader_register, names)
        self._accept_declared_hf_readers(names)
        self._call_each("register_registry_dirs", registry_register, names)
        self._attach_hf_readers(names)

    # ---- queries -------------------------------------------------------------------------------
    @property
    def plugins(self) -> dict[str, PluginInfo]:
        """Every loaded plugin by name, each imported and its hooks registered in ``pm`` (this imports the ones
        not imported yet; `plugin_infos` gives the same records without importing)."""
        self.load()
        self._ensure(list(self._pending))
        return self._plugins

    @property
    def plugin_infos(self) -> dict[str, PluginInfo]:
        """Every loaded plugin by name, with the architectures and registry folders it registers, importing none
        that is not imported yet."""
        self.load()
        return self._plugins

    def _provider(self, names: Callable[[str], Iterable[str]], wanted: str) -> str | None:
        """The plugin not imported yet whose manifest record lists ``wanted`` among ``names(plugin)``."""
        return next((p for p in self._pending if wanted in names(p)), None)

    def _architecture_names(self) -> set[str]:
        return set(self._architectures) | {a for p in self._pending for a in self._records[p].architectures}

    @property
    def architectures(self) -> Mapping[str, Architecture]:
        """Every architecture by name, sorted; a plugin is imported when one of its architectures is read."""
        self.load()
        return _OnDemand(self._architecture_names(), self.architecture)

    def architecture(self, name: str) -> Architecture:
        """The architecture registered under ``name``, or an error naming the closest ones."""
        self.load()
        if name not in self._architectures:
            provider = self._provider(lambda p: self._records[p].architectures, name)
            if provider is not None:
                self._ensure([provider])
        try:
            return self._architectures[name]
        except KeyError:
            raise UnknownArchitectureError(name, sorted(self._architecture_names())) from None

    def plugin_hook(self, plugin: str, hook_name: str) -> Callable[..., Any] | None:
        """The hook ``hook_name`` of the one plugin ``plugin`` (importing that plugin only, if it is not imported
        yet), to call through `call_plugin`; None when the plugin is not loaded or does not implement the hook.

        What a family knows about its own architectures (``Architecture.plugin`` names the plugin) is asked of
        that family alone, so that a lookup imports only the plugin it needs; `plugins` imports every one.
        """
        self.load()
        self._ensure([plugin])
        module = self.pm.get_plugin(plugin)
        if module is None or plugin not in self._plugins or getattr(self.pm.hook, hook_name, None) is None:
            return None
        others = [p for n, p in self.pm.list_name_plugin() if n != plugin]
        caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
        if not any(impl.plugin is module for impl in caller.get_hookimpls()):
            return None
        return caller

    def registry_dirs(self) -> list[Path]:
        self.load()
        return [d for info in self._plugins.values() for d in info.registry_dirs]

    def _model_types(self) -> set[str]:
        return set(self._hf_readers) | {t for p in self._pending for t, _ in self._records[p].hf_readers}

    def _hf_reader(self, model_type: str) -> HFReader:
        if model_type not in self._hf_readers:
            provider = self._provider(lambda p: [t for t, _ in self._records[p].hf_readers], model_type)
            if provider is not None:
                self._ensure([provider])
        return self._hf_readers[model_type]

    def hf_readers(self) -> Mapping[str, HFReader]:
        """Every Hugging Face ``model_type`` a plugin reads, by name, with its reader; the plugin that reads a
        type is imported when that type is looked up."""
        self.load()
        return _OnDemand(self._model_types(), self._hf_reader)

    def hf_model_types(self) -> Mapping[str, Architecture]:
        """Every Hugging Face ``model_type`` some architecture can read, mapped to that architecture."""
        self.load()
        return _OnDemand(self._model_types(), lambda t: self.architecture(self._hf_reader(t).architecture))


#: Names of `archzoo.build_check` that callers import from here, where they lived before it: imported on first use
#: (PEP 562), since loading plugins needs no block model and a warm listing should not import it.
_BUILD_CHECK = frozenset({"MAX_BLOCK_DEPTH", "MAX_BLOCKS", "build_blocks"})


def __getattr__(name: str) -> Any:
    if name not in _BUILD_CHECK:
        raise AttributeError(f"module 'archzoo.host' has no attribute {name!r}")
    value = getattr(import_module(".build_check", __package__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


_HOST: PluginHost | None = None


def get_host(*, strict: bool | None = None) -> PluginHost:
    """The process-wide host, loaded on first use."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost(strict=strict)
    return _HOST.load()


def reset_host(host: PluginHost | None = None) -> None:
    """Forget the process-wide host (tests use this to load a different set of plugins)."""
    global _HOST
    _HOST = host
