"""The plugin host: entry-point discovery, registration checks, fault isolation, strict mode, env vars."""

import sys
import textwrap
import types

import pytest

from archzoo import Architecture, PluginError, hookimpl
from archzoo.errors import UnknownArchitectureError
from archzoo.host import PluginHost

BUILTINS = {"bert", "gpt", "transformer", "vit"}


def _module(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def _copy_of(arch_name: str, new_name: str) -> Architecture:
    base = PluginHost(only=[arch_name]).load().architecture(arch_name)
    return base.model_copy(update={"name": new_name, "plugin": ""})


def test_builtins_load_through_entry_points():
    host = PluginHost().load()
    assert set(host.plugins) >= BUILTINS
    assert set(host.architectures) >= BUILTINS
    for name in BUILTINS:
        assert host.plugins[name].source.startswith(f"entry point archzoo:{name} in archzoo ")
        assert host.architectures[name].plugin == name
    assert host.problems == []


def test_plugin_raising_in_hook_is_reported_and_others_keep_working():
    def register_architectures(register):
        raise RuntimeError("boom")

    host = PluginHost(extra_plugins={"broken": _module("broken", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == ["plugin 'broken': register_architectures raised RuntimeError: boom"]
    assert set(host.architectures) >= BUILTINS


def test_strict_mode_turns_a_problem_into_an_error():
    def register_architectures(register):
        raise RuntimeError("boom")

    host = PluginHost(strict=True, extra_plugins={"broken": _module("broken", register_architectures=register_architectures)})
    with pytest.raises(PluginError, match=r"^plugin 'broken': register_architectures raised RuntimeError: boom \(strict mode: unset ARCHZOO_STRICT or drop --strict to skip it\)$"):
        host.load()


def test_strict_mode_from_environment(monkeypatch):
    monkeypatch.setenv("ARCHZOO_STRICT", "1")
    assert PluginHost().strict is True


def test_invalid_registration_names_the_plugin():
    def register_architectures(register):
        register({"name": "Not A Slug"})

    host = PluginHost(extra_plugins={"sloppy": _module("sloppy", register_architectures=register_architectures)}).load()
    assert len(host.problems) == 1
    assert host.problems[0].plugin == "sloppy"
    assert host.problems[0].reason.startswith("registered an invalid architecture:")


def test_duplicate_architecture_is_rejected_naming_both_plugins():
    twin = _copy_of("gpt", "twin-gpt")

    def register_architectures(register):
        register(twin)

    host = PluginHost(extra_plugins={
        "first": _module("first", register_architectures=register_architectures),
        "second": _module("second", register_architectures=register_architectures),
    }).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'second': registers architecture 'twin-gpt', already registered by plugin 'first'; "
        "rename it or restrict plugins with ARCHZOO_PLUGINS"
    ]
    assert host.architecture("twin-gpt").plugin == "first"


def test_builtin_architecture_cannot_be_taken_over():
    twin = _copy_of("bert", "bert")

    def register_architectures(register):
        register(twin)

    host = PluginHost(extra_plugins={"twin": _module("twin", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'twin': registers architecture 'bert', which archzoo's built-in plugin 'bert' provides; "
        "a plugin cannot replace a built-in architecture: register yours under another name"
    ]
    assert host.architecture("bert").plugin == "bert"


def test_misspelt_hook_is_a_problem():
    module = types.ModuleType("typo")
    module.register_architecture = hookimpl(lambda register: None)  # missing the final "s"
    host = PluginHost(extra_plugins={"typo": module}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'typo': cannot be registered: implements hook 'register_architecture', which archzoo does not "
        "define; did you mean 'register_architectures'? archzoo's hooks: register_architectures, register_registry_dirs"
    ]


def test_env_var_restricts_plugins(monkeypatch):
    monkeypatch.setenv("ARCHZOO_PLUGINS", "gpt,vit")
    host = PluginHost().load()
    assert set(host.plugins) == {"gpt", "vit"}
    with pytest.raises(UnknownArchitectureError, match=r"unknown architecture 'bert'.*loaded: gpt, vit"):
        host.architecture("bert")


def test_unknown_architecture_suggests_the_closest():
    with pytest.raises(UnknownArchitectureError, match=r"^unknown architecture 'brt'; did you mean 'bert'\?"):
        PluginHost().load().architecture("brt")


def test_trace_env_var_prints_hook_calls(monkeypatch, capsys):
    monkeypatch.setenv("ARCHZOO_TRACE_PLUGINS", "1")
    PluginHost(only=["gpt"]).load()
    assert "register_architectures" in capsys.readouterr().err


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A third-party distribution, archzoo-tiny, installed on sys.path with an `archzoo` entry point."""

    def install(source: str, module: str = "archzoo_tiny"):
        (tmp_path / module).mkdir()
        (tmp_path / module / "__init__.py").write_text(textwrap.dedent(source))
        dist = tmp_path / "archzoo_tiny-1.2.3.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: archzoo-tiny\nVersion: 1.2.3\n")
        (dist / "entry_points.txt").write_text(f"[archzoo]\ntiny = {module}\n")
        monkeypatch.syspath_prepend(str(tmp_path))

    yield install
    for name in [m for m in sys.modules if m.startswith("archzoo_tiny")]:
        del sys.modules[name]


def test_third_party_plugin_found_through_entry_point(installed_plugin, tmp_path):
    installed_plugin(
        """
        from pathlib import Path
        from archzoo import hookimpl
        from archzoo_gpt import ARCHITECTURE

        @hookimpl
        def register_architectures(register):
            register(ARCHITECTURE.model_copy(update={"name": "tiny-gpt"}))

        @hookimpl
        def register_registry_dirs(register):
            register(Path(__file__).parent)
        """
    )
    host = PluginHost().load()
    assert host.plugins["tiny"].source == "entry point archzoo:tiny in archzoo-tiny 1.2.3"
    assert host.architecture("tiny-gpt").plugin == "tiny"
    assert host.registry_dirs() == [tmp_path / "archzoo_tiny"]


def test_plugin_that_fails_to_import_is_reported(installed_plugin):
    installed_plugin("import a_module_that_does_not_exist\n")
    host = PluginHost().load()
    assert [p.plugin for p in host.problems] == ["tiny"]
    assert host.problems[0].reason == (
        "importing 'archzoo_tiny' raised ModuleNotFoundError: No module named 'a_module_that_does_not_exist'"
    )
    assert set(host.architectures) >= BUILTINS


def test_every_hook_has_a_test():
    """A new hook spec must come with a test in this module that calls it through a plugin."""
    from pathlib import Path

    from archzoo import hookspecs

    source = Path(__file__).read_text()
    hooks = [name for name in dir(hookspecs) if name.startswith("register_")]
    assert hooks, "no hooks found"
    for name in hooks:
        assert f"def {name}(" in source, f"hook {name} has no plugin implementing it in tests/test_host.py"


def test_misspelt_plugin_name_in_env_var_is_reported(monkeypatch):
    monkeypatch.setenv("ARCHZOO_PLUGINS", "gtp")
    host = PluginHost().load()
    assert [str(p) for p in host.problems] == [
        "plugin 'gtp': named in ARCHZOO_PLUGINS, but no installed plugin has that name; did you mean 'gpt'? "
        "installed: bert, gpt, transformer, vit"
    ]
