"""The plugin host: entry-point discovery, registration checks, fault isolation, strict mode, env vars."""

import json
import sys
import textwrap
import types
from importlib import metadata

import pytest

from archzoo import Architecture, PluginError, hookimpl, hookspecs
from archzoo.errors import UnknownArchitectureError
from archzoo.host import PluginHost

#: The built-in plugins: the entry points of the archzoo distribution itself, read from its metadata rather
#: than listed here, so that a new built-in changes no test. Each registers the architecture of its name.
BUILTINS = {ep.name for ep in metadata.distribution("archzoo").entry_points if ep.group == "archzoo"}
assert {"bert", "gpt", "transformer", "vit"} <= BUILTINS
#: What the built-in plugins register, from the host itself (a plugin's architectures need not carry its name).
BUILTIN_ARCHITECTURES = {a for info in PluginHost(manifest=False).load().plugins.values() for a in info.architectures}


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
    for name in BUILTINS:  # a built-in registers at least one architecture, not necessarily one of its own name
        assert host.plugins[name].source.startswith(f"entry point archzoo:{name} in archzoo ")
        assert host.plugins[name].architectures
        for arch in host.plugins[name].architectures:
            assert host.architectures[arch].plugin == name
    assert host.problems == []


def test_plugin_raising_in_hook_is_reported_and_others_keep_working():
    def register_architectures(register):
        raise RuntimeError("boom")

    host = PluginHost(extra_plugins={"broken": _module("broken", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == ["plugin 'broken': register_architectures raised RuntimeError: boom"]
    assert set(host.architectures) >= BUILTIN_ARCHITECTURES


def test_strict_mode_turns_a_problem_into_an_error():
    def register_architectures(register):
        raise RuntimeError("boom")

    host = PluginHost(
        strict=True, extra_plugins={"broken": _module("broken", register_architectures=register_architectures)}
    )
    with pytest.raises(
        PluginError,
        match=r"^plugin 'broken': register_architectures raised RuntimeError: boom \(strict mode: unset ARCHZOO_STRICT or drop --strict to skip it\)$",
    ):
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

    host = PluginHost(
        extra_plugins={
            "first": _module("first", register_architectures=register_architectures),
            "second": _module("second", register_architectures=register_architectures),
        }
    ).load()
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
    hooks = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("register_")))  # every hook archzoo defines
    assert "register_architectures, register_hf_readers" in hooks
    assert [str(p) for p in host.problems] == [
        "plugin 'typo': cannot be registered: implements hook 'register_architecture', which archzoo does not "
        f"define; did you mean 'register_architectures'? archzoo's hooks: {hooks}"
    ]


def test_env_var_restricts_plugins(monkeypatch):
    monkeypatch.setenv("ARCHZOO_PLUGINS", "gpt,vit")
    host = PluginHost().load()
    assert set(host.plugins) == {"gpt", "vit"}
    with pytest.raises(UnknownArchitectureError, match=r"unknown architecture 'bert'.*loaded: gpt, vit"):
        host.architecture("bert")


def test_unknown_architecture_suggests_the_closest():
    with pytest.raises(UnknownArchitectureError, match=r"^unknown architecture 'brt'; did you mean 'bert'[ ?]"):
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
    assert set(host.architectures) >= BUILTIN_ARCHITECTURES


def test_every_hook_has_a_test():
    """A new hook spec must come with a test in this module that calls it through a plugin."""
    from pathlib import Path

    from archzoo import hookspecs

    source = Path(__file__).read_text()
    hooks = [name for name in dir(hookspecs) if name.startswith("register_")]
    assert hooks, "no hooks found"
    for name in hooks:
        assert f"def {name}(" in source, f"hook {name} has no plugin implementing it in tests/test_host.py"


def test_one_plugins_activation_memory_hook_is_called_alone():
    calls = []

    def register_activation_memory(register):
        calls.append("mine")

    def other_activation_memory(register):
        calls.append("other")

    host = PluginHost(
        extra_plugins={
            "mine": _module("mine", register_activation_memory=register_activation_memory),
            "other": _module("other", register_activation_memory=other_activation_memory),
        },
        entry_points=False,
    ).load()
    hook = host.plugin_hook("mine", "register_activation_memory")
    assert hook is not None
    call_plugin("mine", "register_activation_memory", hook, register=lambda saves: None)
    assert calls == ["mine"]
    assert host.plugin_hook("mine", "register_hf_readers") is None  # a hook it does not implement


def test_misspelt_plugin_name_in_env_var_is_reported(monkeypatch):
    monkeypatch.setenv("ARCHZOO_PLUGINS", "gpt,gtp")
    host = PluginHost().load()
    assert [str(p) for p in host.problems] == [
        "plugin 'gtp': named in ARCHZOO_PLUGINS, but no installed plugin has that name; did you mean 'gpt'? "
        f"installed: {', '.join(sorted({ep.name for ep in metadata.entry_points(group='archzoo')}))}"
    ]
    assert set(host.plugins) == {"gpt"}


# ---- the environment variables: every value is one archzoo can use, or an error naming the variable ----------

_INSTALLED = ", ".join(sorted({ep.name for ep in metadata.entry_points(group="archzoo")}))
_NOT_A_FLAG = "expected 1 (on) or 0 (off), or true/false, yes/no, on/off; set {name}=1 or unset it"
_NAMES = "give names separated by commas, such as ARCHZOO_PLUGINS=gpt,bert (`archzoo plugins` lists the installed ones)"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ARCHZOO_STRICT", "maybe", "ARCHZOO_STRICT='maybe': " + _NOT_A_FLAG.format(name="ARCHZOO_STRICT")),
        ("ARCHZOO_STRICT", "2", "ARCHZOO_STRICT='2': " + _NOT_A_FLAG.format(name="ARCHZOO_STRICT")),
        (
            "ARCHZOO_TRACE_PLUGINS",
            "\x1b[31mred",
            "ARCHZOO_TRACE_PLUGINS='\\x1b[31mred': " + _NOT_A_FLAG.format(name="ARCHZOO_TRACE_PLUGINS"),
        ),
        (
            "ARCHZOO_PLUGINS",
            " , ,",
            "ARCHZOO_PLUGINS=' , ,': names no plugin; give entry-point names separated by commas, such as "
            "ARCHZOO_PLUGINS=gpt,bert (`archzoo plugins` lists the installed ones), or unset it to load every plugin",
        ),
        (
            "ARCHZOO_PLUGINS",
            "gpt;bert",
            "ARCHZOO_PLUGINS: 'gpt;bert' is not a plugin name (entry-point names are letters, digits, '_', '-' and "
            "'.', at most 100); " + _NAMES,
        ),
        (
            "ARCHZOO_PLUGINS",
            "gpt bert",
            "ARCHZOO_PLUGINS: 'gpt bert' is not a plugin name (entry-point names are letters, digits, '_', '-' and "
            "'.', at most 100); " + _NAMES,
        ),
        (
            "ARCHZOO_PLUGINS",
            "gpt,../../etc",
            "ARCHZOO_PLUGINS: '../../etc' is not a plugin name (entry-point names are letters, digits, '_', '-' "
            "and '.', at most 100); " + _NAMES,
        ),
        (
            "ARCHZOO_PLUGINS",
            "x" * 200,
            "ARCHZOO_PLUGINS: '" + "x" * 59 + "…' is not a plugin name (entry-point names are letters, digits, "
            "'_', '-' and '.', at most 100); " + _NAMES,
        ),
        (
            "ARCHZOO_PLUGINS",
            "gtp",
            "ARCHZOO_PLUGINS='gtp': no installed plugin has that name (did you mean 'gpt'?); installed: "
            f"{_INSTALLED}. Name installed plugins, or unset ARCHZOO_PLUGINS to load every plugin",
        ),
        (
            "ARCHZOO_PLUGINS",
            "nothing,nowhere",
            "ARCHZOO_PLUGINS='nothing,nowhere': no installed plugin has these names; installed: "
            f"{_INSTALLED}. Name installed plugins, or unset ARCHZOO_PLUGINS to load every plugin",
        ),
    ],
)
def test_environment_variable_archzoo_cannot_use_is_an_error_naming_it(monkeypatch, name, value, message):
    # before: ARCHZOO_STRICT=maybe was silently off, ARCHZOO_PLUGINS=' , ,' silently loaded no plugin at all
    from archzoo.errors import EnvironmentVariableError

    monkeypatch.setenv(name, value)
    with pytest.raises(EnvironmentVariableError) as caught:
        PluginHost().load()
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("value", "strict"),
    [
        ("1", True),
        ("TRUE", True),
        (" yes ", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("No", False),
        ("off", False),
        ("", False),
    ],
)
def test_every_spelling_of_a_flag_is_read(monkeypatch, value, strict):
    monkeypatch.setenv("ARCHZOO_STRICT", value)
    assert PluginHost().strict is strict


def test_a_bad_flag_is_refused_even_when_an_argument_overrides_it(monkeypatch):
    from archzoo.errors import EnvironmentVariableError

    monkeypatch.setenv("ARCHZOO_STRICT", "sometimes")
    with pytest.raises(EnvironmentVariableError, match=r"^ARCHZOO_STRICT='sometimes': "):
        PluginHost(strict=True)


def test_plugin_selection_tolerates_spaces_and_repeats(monkeypatch):
    monkeypatch.setenv("ARCHZOO_PLUGINS", " gpt , vit,gpt, ")
    host = PluginHost().load()
    assert set(host.plugins) == {"gpt", "vit"}
    assert host.problems == []


# ---- a plugin that half-works, or lies ------------------------------------------------------------------


def test_plugin_that_registers_then_raises_is_skipped_with_what_it_registered():
    partial = _copy_of("gpt", "halfway")

    def register_architectures(register):
        register(partial)
        raise RuntimeError("second architecture failed")

    host = PluginHost(
        extra_plugins={"halfway": _module("halfway", register_architectures=register_architectures)}
    ).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'halfway': register_architectures raised RuntimeError: second architecture failed"
    ]
    assert "halfway" not in host.architectures
    assert "halfway" not in host.plugins
    assert set(host.architectures) >= BUILTIN_ARCHITECTURES


def test_register_called_after_the_hook_returned_is_refused():
    kept = []

    def register_architectures(register):
        kept.append(register)

    host = PluginHost(extra_plugins={"late": _module("late", register_architectures=register_architectures)}).load()
    with pytest.raises(
        PluginError,
        match=r"^plugin 'late': called register after register_architectures returned; "
        r"register only while register_architectures runs$",
    ):
        kept[0](_copy_of("gpt", "late-gpt"))
    assert "late-gpt" not in host.architectures


def test_plugin_raising_plugin_error_is_named_as_itself():
    def register_architectures(register):
        raise PluginError("plugin 'bert': is broken")

    host = PluginHost(extra_plugins={"liar": _module("liar", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'liar': register_architectures raised PluginError: plugin 'bert': is broken"
    ]
    assert host.architecture("bert").plugin == "bert"


def test_builtin_name_stays_reserved_when_the_builtin_is_not_loaded():
    intruder = _copy_of("gpt", "bert")

    def register_architectures(register):
        register(intruder)

    host = PluginHost(
        only=["intruder"],
        extra_plugins={"intruder": _module("intruder", register_architectures=register_architectures)},
    )
    host.load()
    assert [str(p) for p in host.problems] == [
        "plugin 'intruder': registers architecture 'bert', which archzoo's built-in plugin 'bert' provides; "
        "a plugin cannot replace a built-in architecture: register yours under another name"
    ]
    assert host.architectures == {}


def test_in_process_plugin_cannot_take_a_builtin_plugin_name():
    def register_architectures(register):
        raise AssertionError("never called")

    host = PluginHost(extra_plugins={"gpt": _module("impostor", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'gpt': registered in process, but a loaded plugin already has this name; rename it"
    ]
    assert host.plugins["gpt"].builtin is True


def test_strict_mode_fails_on_an_invalid_registration_after_the_hook():
    def register_architectures(register):
        register("not an architecture")

    host = PluginHost(
        strict=True, extra_plugins={"sloppy": _module("sloppy", register_architectures=register_architectures)}
    )
    with pytest.raises(
        PluginError,
        match=r"^plugin 'sloppy': registered an invalid architecture: expected an "
        r"archzoo.Architecture, got str \(strict mode: unset ARCHZOO_STRICT or drop "
        r"--strict to skip it\)$",
    ):
        host.load()


def test_hook_output_goes_to_stderr(capsys):
    def register_architectures(register):
        print("hello from a plugin")

    PluginHost(extra_plugins={"chatty": _module("chatty", register_architectures=register_architectures)}).load()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "hello from a plugin\n"


def test_builtins_are_marked_and_load_first():
    host = PluginHost().load()
    builtins = [name for name, info in host.plugins.items() if info.builtin]
    assert set(builtins) == BUILTINS
    assert list(host.plugins)[: len(builtins)] == builtins


# ---- Hugging Face readers -------------------------------------------------------------------------------


def _reads(name: str, *model_types: str, arch: str | None = None, **hooks) -> types.ModuleType:
    """A plugin registering one copy of GPT named ``arch`` (default: ``name``-gpt) and a reader per model type."""
    arch_name = arch or f"{name}-gpt"
    copy = _copy_of("gpt", arch_name)

    def register_architectures(register):
        register(copy)

    def register_hf_readers(register):
        for model_type in model_types:
            register(model_type, _reader)

    return _module(
        name, **{"register_architectures": register_architectures, "register_hf_readers": register_hf_readers, **hooks}
    )


def _reader(hf):
    return {"d_model": hf["width"]}


def test_hf_readers_registered_through_the_hook():
    host = PluginHost(extra_plugins={"tiny": _reads("tiny", "tiny-type", "tiny-type-2")}).load()
    assert host.problems == []
    readers = host.hf_readers()
    assert {t: (r.architecture, r.plugin, r.reader) for t, r in readers.items() if r.plugin == "tiny"} == {
        "tiny-type": ("tiny-gpt", "tiny", _reader),
        "tiny-type-2": ("tiny-gpt", "tiny", _reader),
    }
    # the architecture lists what is read into it, as `archzoo plugins` shows it
    assert host.architecture("tiny-gpt").hf_model_types == {"tiny-type": _reader, "tiny-type-2": _reader}
    assert host.hf_model_types()["tiny-type"] is host.architecture("tiny-gpt")
    # the built-ins read their own types the same way
    assert {"bert", "roberta", "gpt2", "vit"} <= set(readers)
    assert readers["roberta"].plugin == "bert" and readers["roberta"].architecture == "bert"


def test_a_model_type_read_twice_is_refused_naming_both_plugins():
    host = PluginHost(
        extra_plugins={"first": _reads("first", "shared-type"), "second": _reads("second", "shared-type", "own-type")}
    ).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'second': registers a Hugging Face reader for model type 'shared-type', already read by plugin "
        "'first' (architecture 'first-gpt'); a model type has one reader: drop one, or restrict plugins with "
        "ARCHZOO_PLUGINS"
    ]
    assert host.hf_readers()["shared-type"].plugin == "first"
    assert host.hf_readers()["own-type"].plugin == "second"  # the rest of the plugin keeps working
    assert host.architecture("second-gpt").hf_model_types == {"own-type": _reader}


def test_a_builtin_model_type_cannot_be_read_by_another_plugin():
    host = PluginHost(extra_plugins={"other": _reads("other", "bert")}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'other': registers a Hugging Face reader for model type 'bert', already read by plugin 'bert' "
        "(architecture 'bert'); a model type has one reader: drop one, or restrict plugins with ARCHZOO_PLUGINS"
    ]
    assert host.hf_readers()["bert"].plugin == "bert"


def test_a_model_type_read_twice_is_an_error_in_strict_mode():
    host = PluginHost(strict=True, extra_plugins={"again": _reads("again", "twice", "twice")})
    with pytest.raises(
        PluginError,
        match=r"^plugin 'again': registers a Hugging Face reader for model type 'twice', "
        r"already registered by this plugin \(architecture 'again-gpt'\); a model type "
        r"has one reader: drop one, or restrict plugins with ARCHZOO_PLUGINS "
        r"\(strict mode: ",
    ):
        host.load()


def test_a_reader_names_its_architecture_when_the_plugin_has_several():
    one, two = _copy_of("gpt", "one"), _copy_of("gpt", "two")

    def register_architectures(register):
        register(one)
        register(two)

    def register_hf_readers(register):
        register("unclear", _reader)
        register("into-two", _reader, architecture="two")
        register("into-other", _reader, architecture="bert")

    host = PluginHost(
        extra_plugins={
            "pair": _module(
                "pair", register_architectures=register_architectures, register_hf_readers=register_hf_readers
            )
        }
    ).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'pair': registers a Hugging Face reader for model type 'unclear' without saying which of its "
        "architectures (one, two) it reads into; pass architecture=NAME",
        "plugin 'pair': registers a Hugging Face reader for model type 'into-other' into architecture 'bert', which "
        "it does not register (its architectures: one, two); a plugin reads configurations into its own architectures",
    ]
    assert host.hf_readers()["into-two"].architecture == "two"
    assert host.architecture("two").hf_model_types == {"into-two": _reader}
    assert host.architecture("one").hf_model_types == {}


@pytest.mark.parametrize(
    "args, reason",
    [
        (
            (3, _reader),
            "registered a Hugging Face reader for model type 3 (int), expected the model_type text of a "
            "config.json, such as 'bert'",
        ),
        (
            ("two words", _reader),
            "registered a Hugging Face reader for model type 'two words' (str), expected the "
            "model_type text of a config.json, such as 'bert'",
        ),
        (
            ("", _reader),
            "registered a Hugging Face reader for model type '' (str), expected the model_type text of a "
            "config.json, such as 'bert'",
        ),
        (
            ("fine", {"d_model": 8}),
            "registers a Hugging Face reader for model type 'fine' that is dict, expected a "
            "function of the config.json's values",
        ),
    ],
    ids=["int-type", "spaced-type", "empty-type", "reader-not-callable"],
)
def test_an_invalid_reader_is_refused_naming_the_plugin(args, reason):
    copy = _copy_of("gpt", "sloppy-gpt")

    def register_architectures(register):
        register(copy)

    def register_hf_readers(register):
        register(*args)

    host = PluginHost(
        extra_plugins={
            "sloppy": _module(
                "sloppy", register_architectures=register_architectures, register_hf_readers=register_hf_readers
            )
        }
    ).load()
    assert [str(p) for p in host.problems] == [f"plugin 'sloppy': {reason}"]
    assert host.architecture("sloppy-gpt").hf_model_types == {}


def test_a_reader_without_an_architecture_is_refused():
    def register_hf_readers(register):
        register("orphan", _reader)

    host = PluginHost(extra_plugins={"orphan": _module("orphan", register_hf_readers=register_hf_readers)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'orphan': registers a Hugging Face reader for model type 'orphan' but registers no architecture for "
        "it to read into; register one with register_architectures"
    ]
    assert "orphan" not in host.hf_readers()


def test_a_reader_whose_table_describes_another_type_is_refused():
    gpt2 = PluginHost(only=["gpt"]).load().hf_readers()["gpt2"].reader  # declares the gpt2 table

    def register_hf_readers(register):
        register("not-gpt2", gpt2)

    host = PluginHost(extra_plugins={"mixup": _reads("mixup", register_hf_readers=register_hf_readers)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'mixup': registers a Hugging Face reader for model type 'not-gpt2', but the reader's HFTable "
        "describes model type 'gpt2'; register it under that type"
    ]


def test_a_plugin_failing_after_registering_readers_is_skipped_with_them():
    def register_registry_dirs(register):
        raise RuntimeError("no folder")

    host = PluginHost(
        extra_plugins={"fails": _reads("fails", "fails-type", register_registry_dirs=register_registry_dirs)}
    ).load()
    assert [str(p) for p in host.problems] == ["plugin 'fails': register_registry_dirs raised RuntimeError: no folder"]
    assert "fails-type" not in host.hf_readers() and "fails-gpt" not in host.architectures


def test_a_plugin_raising_in_register_hf_readers_is_skipped_with_its_architectures():
    def register_hf_readers(register):
        register("early-type", _reader)
        raise RuntimeError("second reader failed")

    host = PluginHost(extra_plugins={"raises": _reads("raises", register_hf_readers=register_hf_readers)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'raises': register_hf_readers raised RuntimeError: second reader failed"
    ]
    assert "early-type" not in host.hf_readers() and "raises-gpt" not in host.architectures
    assert set(host.architectures) >= BUILTIN_ARCHITECTURES


def test_readers_declared_on_the_architecture_still_work_and_are_checked_the_same_way():
    """The deprecated path, Architecture.hf_model_types set by the plugin: a warning, the same duplicate check."""
    old = _copy_of("gpt", "old-gpt").model_copy(update={"hf_model_types": {"old-type": _reader, "gpt2": _reader}})

    def register_architectures(register):
        register(old)

    with pytest.warns(DeprecationWarning, match=r"^plugin 'old': Architecture.hf_model_types is deprecated"):
        host = PluginHost(extra_plugins={"old": _module("old", register_architectures=register_architectures)}).load()
    assert [str(p) for p in host.problems] == [
        "plugin 'old': registers a Hugging Face reader for model type 'gpt2', already read by plugin 'gpt' "
        "(architecture 'gpt'); a model type has one reader: drop one, or restrict plugins with ARCHZOO_PLUGINS"
    ]
    assert host.hf_readers()["old-type"].plugin == "old"
    assert host.architecture("old-gpt").hf_model_types == {"old-type": _reader}


def test_archzoo_plugins_lists_the_types_each_architecture_reads(monkeypatch):
    import json

    from click.testing import CliRunner

    from archzoo import host as host_module
    from archzoo.cli import cli

    host = PluginHost(extra_plugins={"tiny": _reads("tiny", "tiny-type")}).load()
    monkeypatch.setattr(host_module, "_HOST", host)
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    archs = {a["name"]: a["hf_model_types"] for p in json.loads(result.output)["plugins"] for a in p["architectures"]}
    assert archs["tiny-gpt"] == ["tiny-type"]
    # every type the host reads as bert, sorted (asked of the host: the bert plugin's types grow with its families)
    assert archs["bert"] == sorted(t for t, r in host.hf_readers().items() if r.architecture == "bert")
    assert {"albert", "bert", "distilbert", "roberta"} <= set(archs["bert"])
    text = CliRunner().invoke(cli, ["plugins"]).output
    assert "  architecture tiny-gpt: GPT  reads HF model types: tiny-type\n" in text


# ---- call_plugin --------------------------------------------------------------------------------------

from archzoo.host import build_blocks, call_plugin  # noqa: E402


class Bail(BaseException):
    """Not an Exception: what a careless plugin might raise to stop everything."""


def _raiser(exc: BaseException):
    def fn():
        raise exc

    return fn


@pytest.mark.parametrize(
    "exc, message",
    [
        (SystemExit(3), "plugin 'p': hook raised SystemExit: 3"),
        (SystemExit(), "plugin 'p': hook raised SystemExit"),
        (SystemExit("bye now"), "plugin 'p': hook raised SystemExit: bye now"),
        (GeneratorExit(), "plugin 'p': hook raised GeneratorExit"),
        (Bail("stop"), "plugin 'p': hook raised Bail: stop"),
        (ValueError("line one\n  line two"), "plugin 'p': hook raised ValueError: line one line two"),
        (PluginError("plugin 'bert': broken"), "plugin 'p': hook raised PluginError: plugin 'bert': broken"),
    ],
    ids=["exit-3", "exit-none", "exit-text", "generator-exit", "base-exception", "multi-line", "plugin-error"],
)
def test_call_plugin_turns_any_exception_into_a_plugin_error(exc, message):
    with pytest.raises(PluginError) as info:
        call_plugin("p", "hook", _raiser(exc))
    assert str(info.value) == message
    assert info.value.__cause__ is exc


def test_call_plugin_bounds_a_long_message():
    with pytest.raises(PluginError) as info:
        call_plugin("p", "hook", _raiser(ValueError("x" * 10_000)))
    assert str(info.value) == "plugin 'p': hook raised ValueError: " + "x" * 299 + "…"


def test_call_plugin_survives_an_exception_that_cannot_be_printed():
    class Unprintable(Exception):
        def __str__(self):
            raise SystemExit(9)

    with pytest.raises(
        PluginError,
        match=r"^plugin 'p': hook raised Unprintable: \(message not shown: str\(\) "
        r"raised SystemExit\)$",
    ):
        call_plugin("p", "hook", _raiser(Unprintable()))


def test_call_plugin_lets_keyboard_interrupt_through():
    with pytest.raises(KeyboardInterrupt):
        call_plugin("p", "hook", _raiser(KeyboardInterrupt()))


def test_call_plugin_lets_expected_exceptions_through_unchanged():
    exc = ValueError("n_heads: bad")
    with pytest.raises(ValueError) as info:
        call_plugin("p", "validator", _raiser(exc), expected=(ValueError,))
    assert info.value is exc


def test_call_plugin_passes_arguments_and_returns_the_result():
    assert call_plugin("p", "seq_len", lambda a, /, b, *, c: (a, b, c), 1, 2, c=3) == (1, 2, 3)


def test_call_plugin_sends_stdout_to_stderr_and_restores_streams(capsys):
    out, err = sys.stdout, sys.stderr

    def inner():
        print("inner")
        raise SystemExit(1)

    def outer():
        print("outer")
        sys.stdout = sys.stderr = None  # a plugin that breaks both streams
        with pytest.raises(PluginError):
            call_plugin("inner", "hook", inner)
        raise Bail()

    with pytest.raises(PluginError, match=r"^plugin 'outer': hook raised Bail$"):
        call_plugin("outer", "hook", outer)
    assert sys.stdout is out and sys.stderr is err
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "outer\n"  # inner's print went nowhere: outer had set both streams to None


# ---- build_blocks -------------------------------------------------------------------------------------


from archzoo import Block  # noqa: E402
from archzoo.blocks import composite, layer_norm, linear  # noqa: E402
from archzoo.formula import N, Poly, const, sym  # noqa: E402

D = sym("d", 8)


def _building(build, plugin: str = "badbuild") -> Architecture:
    """The GPT architecture with another build function, as a plugin named ``plugin`` registers it."""
    return _copy_of("gpt", "badbuild").model_copy(update={"build": build, "plugin": plugin})


def _config():
    arch = _copy_of("gpt", "gpt")
    return arch.config_model()


def _cyclic() -> Block:
    block = composite("loop", "model", [layer_norm("norm", D)])
    object.__setattr__(block, "children", (block,))
    return block


def _deep(levels: int) -> Block:
    block = layer_norm("norm", D)
    for i in range(levels):
        block = composite(f"level{i}", "model", [block])
    return block


def _exploding(levels: int) -> Block:
    block = layer_norm("norm", D)
    for i in range(levels):
        block = composite(f"level{i}", "model", [block, block])  # shared children: 2**levels paths
    return block


def test_build_blocks_accepts_every_builtin_default():
    host = PluginHost().load()
    for name in BUILTIN_ARCHITECTURES:
        arch = host.architecture(name)
        config = arch.config_model()
        root = build_blocks(arch, config)
        assert isinstance(root, Block)
        assert root.params.evaluate() == arch.build(config).params.evaluate()


@pytest.mark.parametrize(
    "result, message",
    [
        ([], "build returned list, expected an archzoo.Block"),
        (None, "build returned None, expected an archzoo.Block"),
        ({"params": 1}, "build returned dict, expected an archzoo.Block"),
        (
            Block("m", "model", params="12"),
            "build returned a bad block 'm': params is str, expected an archzoo.Poly formula",
        ),
        (
            Block("m", "model", flops=12),
            "build returned a bad block 'm': flops is int, expected an archzoo.Poly formula",
        ),
        (Block(3, "model"), "build returned a bad block '?': name is int, expected a str"),
        (Block("m", None), "build returned a bad block 'm': kind is None, expected a str"),
        (
            Block("m", "model", children=[layer_norm("norm", D)]),
            "build returned a bad block 'm': children is list, expected a tuple of archzoo.Block",
        ),
        (
            Block("m", "model", children=(layer_norm("norm", D), "fc")),
            "build returned a bad block 'm': children[1] is str, expected an archzoo.Block",
        ),
        (
            Block("m", "model", children=(Block("inner", "linear", approx=[1]),)),
            "build returned a bad block 'm.inner': approx is list, expected an archzoo.Poly formula",
        ),
        (
            Block("m", "model", repeat=12),
            "build returned a bad block 'm': repeat is int, expected an archzoo.Poly formula",
        ),
        (
            Block("m", "model", params=N * D),
            "build returned a bad block 'm': params uses 'N', which has no value; it must depend on the configuration only",
        ),
        (
            Block("m", "model", flops=N * sym("B", None)),
            "build returned a bad block 'm': flops uses 'B', which has no value; only N may be left open",
        ),
        (
            Block("m", "model", params=sym("d", 7.5)),
            "build returned a bad block 'm': params gives symbol 'd' the value 7.5 (float), expected an int",
        ),
        (
            Block("m", "model", params=Poly({(): "3"}, {})),
            "build returned a bad block 'm': params has a coefficient of type str, expected int",
        ),
        (
            Block("m", "model", kv_cache=Poly({(("x", 1),): 2}, {})),
            "build returned a bad block 'm': kv_cache uses symbol 'x' without defining it",
        ),
        (
            Block("m", "model", params=const(-5)),
            "build returned a bad block 'm': params evaluates to -5, expected a count of at least 0",
        ),
        (Block("m", "model", shared="yes"), "build returned a bad block 'm': shared is str, expected a bool"),
        (
            Block("m", "model", modules="encoder.layer"),
            "build returned a bad block 'm': modules is str, expected a tuple of str (the reference's submodule names)",
        ),
        (
            Block("m", "model", modules=("encoder", 0)),
            "build returned a bad block 'm': modules is tuple, expected a tuple of str (the reference's submodule names)",
        ),
        (
            Block("m", "model", copies=const(8)),
            "build returned a bad block 'm': copies is set without repeat or with shared; experts store copies and "
            "run repeat of them",
        ),
        (
            Block("m", "model", repeat=const(9), copies=const(8)),
            "build returned a bad block 'm': copies evaluates to 8 with repeat 9, expected at least as many stored "
            "copies as run ones",
        ),
        (
            Block("m", "model", repeat=const(2), copies=8),
            "build returned a bad block 'm': copies is int, expected an archzoo.Poly formula",
        ),
        (
            Block("m", "model", cross_kv_cache=3),
            "build returned a bad block 'm': cross_kv_cache is int, expected an archzoo.Poly formula",
        ),
        (_cyclic(), "build returned a block tree with a cycle: 'loop' contains one of its own ancestors"),
        (_deep(70), "build returned a block tree more than 64 levels deep ('level4' is at level 65)"),
        (
            _exploding(20),
            "build returned a block tree of more than 100,000 blocks; share a layer with archzoo.blocks.repeat",
        ),
    ],
    ids=[
        "list",
        "none",
        "dict",
        "str-params",
        "int-flops",
        "int-name",
        "none-kind",
        "list-children",
        "str-child",
        "nested-bad-approx",
        "int-repeat",
        "params-uses-n",
        "flops-free-symbol",
        "float-symbol",
        "str-coefficient",
        "undefined-symbol",
        "negative-params",
        "bad-shared",
        "str-modules",
        "int-module",
        "copies-alone",
        "copies-below-repeat",
        "int-copies",
        "int-cross-kv",
        "cycle",
        "too-deep",
        "too-many",
    ],
)
def test_build_blocks_names_the_plugin_and_the_problem(result, message):
    with pytest.raises(PluginError) as info:
        build_blocks(_building(lambda config: result), _config())
    assert str(info.value) == f"plugin 'badbuild': {message}"


def test_build_blocks_reports_a_build_that_exits():
    def build(config):
        sys.exit(5)

    with pytest.raises(PluginError, match=r"^plugin 'badbuild': build raised SystemExit: 5$"):
        build_blocks(_building(build), _config())


def test_build_blocks_names_the_architecture_when_no_plugin_registered_it():
    with pytest.raises(PluginError, match=r"^plugin 'badbuild': build returned list, expected an archzoo.Block$"):
        build_blocks(_building(lambda config: [], plugin=""), _config())


def test_build_blocks_reports_a_block_whose_attributes_misbehave():
    class Treacherous(Block):
        def __getattribute__(self, name):
            if name == "children":
                raise SystemExit(4)
            return super().__getattribute__(name)

        def __repr__(self):
            return "Treacherous()"

    with pytest.raises(
        PluginError,
        match=r"^plugin 'badbuild': build returned a block tree archzoo cannot read: "
        r"SystemExit: 4$",
    ):
        build_blocks(_building(lambda config: Treacherous("m", "model")), _config())


def test_build_blocks_keeps_stdout_clean(capsys):
    def build(config):
        print("building")
        return linear("fc", D, D)

    root = build_blocks(_building(build), _config())
    assert root.params.evaluate() == 8 * 8 + 8  # nn.Linear(8, 8): weight 8x8 plus bias 8
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "building\n")


# ---- the manifest: a lookup imports only the plugin it asks for, and never answers from a stale record -------


def _run_python(code: str, cache: str) -> str:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHZOO_")} | {"ARCHZOO_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_lookup_imports_only_the_plugin_it_needs(tmp_path):
    probe = textwrap.dedent(
        """
        import sys
        from archzoo.host import get_host
        host = get_host()
        before = sorted(
            m for m in sys.modules if (m.startswith("archzoo_") and "." not in m) or m in ("pydantic", "importlib.metadata")
        )
        arch = host.hf_model_types()["gpt2"]
        after = sorted(m for m in sys.modules if m.startswith("archzoo_") and "." not in m)
        print(before, after, arch.name, arch.plugin, sorted(host.architectures) == sorted(host.plugins and host.architectures))
        """
    )
    first = _run_python(probe, str(tmp_path))  # a full load, which writes the manifest
    assert first.startswith(f"{sorted('archzoo_' + n for n in BUILTINS) + ['importlib.metadata', 'pydantic']} ")
    assert list(tmp_path.glob("plugins-*.json")), "a clean full load writes a manifest"
    second = _run_python(probe, str(tmp_path))
    assert second == "[] ['archzoo_gpt'] gpt gpt True"


def _lazy_and_full(monkeypatch, tmp_path) -> tuple[PluginHost, PluginHost]:
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path))
    full = PluginHost(manifest=False).load()
    PluginHost().load()  # writes the manifest
    lazy = PluginHost().load()
    assert lazy._pending, "the second host reads the manifest"
    return lazy, full


def test_a_host_routed_by_the_manifest_answers_as_a_full_load(monkeypatch, tmp_path):
    lazy, full = _lazy_and_full(monkeypatch, tmp_path)
    assert lazy.registry_dirs() == full.registry_dirs()
    assert {t: r.architecture for t, r in lazy.hf_readers().items()} == {
        t: r.architecture for t, r in full.hf_readers().items()
    }
    assert list(lazy.architectures) == list(full.architectures)
    for name, arch in full.architectures.items():
        mine = lazy.architecture(name)
        assert (mine.plugin, sorted(mine.hf_model_types)) == (arch.plugin, sorted(arch.hf_model_types))
        assert mine.config_fields() == arch.config_fields()
    assert [
        (i.name, i.version, i.source, i.module, i.architectures, i.registry_dirs, i.builtin, i.source_signature)
        for i in lazy.plugins.values()
    ] == [
        (i.name, i.version, i.source, i.module, i.architectures, i.registry_dirs, i.builtin, i.source_signature)
        for i in full.plugins.values()
    ]
    assert lazy.problems == [] and not lazy._pending
    assert all(len(i.source_signature) == 64 for i in full.plugins.values())


def test_a_manifest_that_disagrees_with_the_plugin_is_dropped_for_a_full_load(monkeypatch, tmp_path):
    _lazy_and_full(monkeypatch, tmp_path)
    (path,) = tmp_path.glob("plugins-*.json")
    data = json.loads(path.read_text())
    records = {r["name"]: r for r in data["plugins"]}
    records["gpt"]["architectures"].remove("gpt")  # a forged record: gpt's architecture routed to bert
    records["bert"]["architectures"].append("gpt")
    records["bert"]["hf_readers"] |= records["gpt"].pop("hf_readers")
    records["gpt"]["hf_readers"] = {}
    path.write_text(json.dumps(data))
    host = PluginHost().load()
    assert host._pending
    assert host.architecture("gpt").plugin == "gpt"  # bert, imported, did not register it: a full load
    assert host.problems == [] and not host._pending
    assert (
        "gpt"
        in json.loads(path.read_text())["plugins"][[r["name"] for r in data["plugins"]].index("gpt")]["architectures"]
    )


#: Ways a manifest can be foreign, broken or forged: each a change to the real one's JSON value (or its text).
_FORGED = {
    "empty": lambda data: "",
    "truncated": lambda data: json.dumps(data)[:-7],
    "null": lambda data: None,
    "nested 100,000 deep": lambda data: "[" * 100_000,
    "an unknown key": lambda data: data | {"extra": 1},
    "a record's name a number": lambda data: data | {"plugins": [{**data["plugins"][0], "name": 3}]},
    "a record a list": lambda data: data | {"plugins": [[]]},
    "a reader into no architecture of its plugin": lambda data: (
        data | {"plugins": [{**data["plugins"][0], "hf_readers": {"x": "not-one-of-its-architectures"}}]}
    ),
    "an entry point of three fields": lambda data: data | {"entry_points": [e[:3] for e in data["entry_points"]]},
    "the same plugin twice": lambda data: data | {"plugins": data["plugins"] + data["plugins"][:1]},
    "another key": lambda data: data | {"key": "0" * 64},
    "a plugin left out": lambda data: data | {"plugins": data["plugins"][1:]},
    "no environment": lambda data: data | {"environments": []},
    "environments as one text": lambda data: data | {"environments": data["environments"][0]},
    "an environment a number": lambda data: data | {"environments": [7]},
    "more environments than a manifest keeps": lambda data: data | {"environments": [f"{i:064x}" for i in range(9)]},
}


def test_the_manifest_keeps_the_newest_environments(monkeypatch, tmp_path):
    from archzoo.plugin_manifest import MAX_ENVIRONMENTS, Manifest, read_manifest, write_manifest

    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path))
    many = tuple(f"{i:064x}" for i in range(MAX_ENVIRONMENTS + 3))
    write_manifest(Manifest("k" * 64, many, [("gpt", "archzoo_gpt", "archzoo", "0.1.0")], []), None)
    manifest = read_manifest(None)
    assert manifest is not None and manifest.environments == many[:MAX_ENVIRONMENTS]


@pytest.mark.parametrize("forgery", list(_FORGED))
def test_a_foreign_or_forged_manifest_is_ignored(monkeypatch, tmp_path, forgery):
    _lazy_and_full(monkeypatch, tmp_path)
    (path,) = tmp_path.glob("plugins-*.json")
    forged = _FORGED[forgery](json.loads(path.read_text()))
    path.write_text(forged if isinstance(forged, str) else json.dumps(forged))
    host = PluginHost().load()
    assert not host._pending, "the manifest is not used"
    assert host.problems == []
    assert host.architecture("gpt").plugin == "gpt"


def test_a_changed_plugin_file_invalidates_the_manifest(installed_plugin, monkeypatch, tmp_path):
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    source = """
        from archzoo import hookimpl
        from archzoo_gpt import ARCHITECTURE

        @hookimpl
        def register_architectures(register):
            register(ARCHITECTURE.model_copy(update={"name": "NAME"}))
        """
    installed_plugin(source.replace("NAME", "tiny-one"))
    PluginHost().load()
    routed = PluginHost().load()
    assert "tiny-one" in routed.architectures and "tiny" in routed._pending  # read from the manifest
    signature = routed.plugin_infos["tiny"].source_signature
    assert len(signature) == 64
    (tmp_path / "archzoo_tiny" / "__init__.py").write_text(textwrap.dedent(source.replace("NAME", "tiny-two-longer")))
    del sys.modules["archzoo_tiny"]
    host = PluginHost().load()
    assert "tiny-one" not in host.architectures
    assert host.architecture("tiny-two-longer").plugin == "tiny"
    assert host.plugin_infos["tiny"].source_signature not in ("", signature)


def test_a_plugin_with_a_problem_is_loaded_every_time(installed_plugin, monkeypatch, tmp_path):
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    installed_plugin("import a_module_that_does_not_exist\n")
    for _ in range(2):
        host = PluginHost().load()
        assert [p.plugin for p in host.problems] == ["tiny"]
    assert not list((tmp_path / "cache").glob("plugins-*.json")), "no manifest is written after a problem"
