"""archzoo.testing, the plugin authors' kit: its assertions against a reference module, check_plugin, and its
pytest fixtures as the pytest11 entry point registers them.

The plugins here are written in this file: a small token model (an embedding, a stack of pre-norm MLP layers,
an untied head) whose reference is a torch module also defined here. Every expected figure is read off that
module (``numel()`` of its tensors) or derived from torch.nn.Linear's definition (a ``Linear(i, o)`` holds
``i o + o`` parameters and costs ``2 N i o`` FLOPs on ``N`` rows, as FlopCounterMode counts a matmul), never
from archzoo's own output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import types
from typing import Any, Literal

import pytest
from pydantic import Field, PositiveInt

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.blocks import composite, embedding, feed_forward, layer_norm, linear, repeat, with_modules
from archzoo.hf_config import HFTable, hf_reader
from archzoo.symbols import symbol
from archzoo.testing import KIT_INSTALL_HINT, assert_blocks_match_modules, assert_matches_reference, check_plugin

pytest_plugins = ["pytester"]

MODULE = "archzoo_kit_fixture"  # the in-process module the reference class is imported from


class TinyConfig(ArchConfig):
    vocab_size: PositiveInt = Field(50, description="vocabulary size")
    d_model: PositiveInt = Field(16, description="model width")
    d_ff: PositiveInt = Field(24, description="feed-forward width")
    n_layers: PositiveInt = Field(2, description="layers")
    #: a deliberate mistake, for the tests of the failure messages
    mistake: Literal["none", "head_bias", "ff_flops"] = Field("none", description="which count to get wrong")


def _build(cfg: TinyConfig):
    d, V, d_ff = symbol("d", cfg.d_model), symbol("V", cfg.vocab_size), symbol("d_ff", cfg.d_ff)
    ff = feed_forward("mlp", d, d_ff, activation="gelu")
    if cfg.mistake == "ff_flops":  # counts the down-projection as if it ran over every token twice
        ff = composite("mlp", "feed_forward", [linear("fc_in", d, d_ff), linear("fc_out", d_ff, d, tokens=2 * d)])
    layer = composite("layer", "layer", [layer_norm("norm", d), ff])
    root = composite(
        "tiny",
        "model",
        [
            embedding("token", V, d, role="token"),
            repeat(layer, symbol("L", cfg.n_layers), name="layers"),
            layer_norm("final_norm", d),
            linear("head", d, V, bias=cfg.mistake == "head_bias"),
        ],
    )
    return with_modules(
        root,
        {
            "tiny": ("",),
            "tiny.token": ("token",),
            "tiny.layers.layer": ("layers",),
            "tiny.layers.layer.norm": ("norm",),
            "tiny.layers.layer.mlp": ("fc_in", "fc_out"),
            "tiny.final_norm": ("final_norm",),
            "tiny.head": ("head",),
        },
    )


def _reference(cfg: TinyConfig) -> Reference:
    kwargs = dict(vocab_size=cfg.vocab_size, d_model=cfg.d_model, d_ff=cfg.d_ff, n_layers=cfg.n_layers)
    return Reference(library="archzoo", target=f"{MODULE}.TinyNet", kwargs=kwargs)


ARCHITECTURE = Architecture(
    name="kittiny",
    title="Tiny",
    summary="A test model.",
    citation="none",
    config_model=TinyConfig,
    build=_build,
    seq_len=lambda cfg: 8,
    reference=_reference,
)


def _tiny_net() -> type:
    torch = pytest.importorskip("torch")
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, d_model: int, d_ff: int):
            super().__init__()
            self.norm = nn.LayerNorm(d_model)
            self.fc_in = nn.Linear(d_model, d_ff)
            self.fc_out = nn.Linear(d_ff, d_model)

        def forward(self, x: Any) -> Any:
            return x + self.fc_out(torch.nn.functional.gelu(self.fc_in(self.norm(x))))

    class TinyNet(nn.Module):
        def __init__(self, vocab_size: int, d_model: int, d_ff: int, n_layers: int):
            super().__init__()
            self.token = nn.Embedding(vocab_size, d_model)
            self.layers = nn.ModuleList(Layer(d_model, d_ff) for _ in range(n_layers))
            self.final_norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab_size, bias=False)

        def forward(self, input_ids: Any) -> Any:
            x = self.token(input_ids)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.final_norm(x))

    return TinyNet


@pytest.fixture
def tiny_module(monkeypatch):
    """The plugin module, importable by name so that its reference's dotted target resolves."""
    module = types.ModuleType(MODULE)
    module.TinyNet = _tiny_net()

    @hookimpl
    def register_architectures(register):
        register(ARCHITECTURE)

    module.register_architectures = register_architectures
    monkeypatch.setitem(sys.modules, MODULE, module)
    return module


def _table(message: str) -> dict[str, list[str]]:
    """The per-block table of a failure message: block -> [reference module, reference, archzoo, difference,
    formula] (the columns are separated by two spaces or more)."""
    rows = {}
    for line in message.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 6 and cells[0].startswith("tiny"):
            rows[cells[0]] = cells[1:]
    return rows


def _torch_model(cfg: TinyConfig):
    import torch

    with torch.device("meta"):
        return _tiny_net()(cfg.vocab_size, cfg.d_model, cfg.d_ff, cfg.n_layers)


# ---- the assertions ---------------------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("cfg", [TinyConfig(), TinyConfig(vocab_size=97, d_model=12, d_ff=40, n_layers=3)])
def test_a_correct_plugin_passes_both_assertions(tiny_module, cfg):
    assert_blocks_match_modules(ARCHITECTURE, cfg)
    assert_matches_reference(ARCHITECTURE, cfg, seq_lens=(3, 8))


@pytest.mark.reference
def test_a_miscounted_block_fails_with_the_per_block_diff(tiny_module):
    cfg = TinyConfig(mistake="head_bias")
    model = _torch_model(cfg)
    head = model.head.weight.numel()  # Linear(d, V, bias=False): d·V, no bias
    total = sum(p.numel() for p in model.parameters())
    with pytest.raises(AssertionError) as caught:
        assert_blocks_match_modules(ARCHITECTURE, cfg)
    message = str(caught.value)
    assert message.splitlines()[0] == (
        f"architecture 'kittiny': blocks differ from the submodules of {MODULE}.TinyNet they name: tiny, tiny.head"
    )
    # the head's row: the reference's count, archzoo's (one bias per vocabulary entry too many), the formula
    rows = _table(message)
    assert rows["tiny.head"] == ["head", f"{head:,}", f"{head + 50:,}", "+50", "V·d + V"]
    assert rows["tiny.layers.layer (each of 2)"][0] == "layers.<i>"
    assert rows["tiny.layers.layer (each of 2)"][3] == "match"
    with pytest.raises(AssertionError) as caught:
        assert_matches_reference(ARCHITECTURE, cfg, seq_lens=(4,))
    message = str(caught.value)
    assert f"parameters: {MODULE}.TinyNet holds {total:,}, archzoo counts {total + 50:,} (+50)" in message
    assert "forward FLOPs" not in message  # a bias costs no matmul FLOPs: only the parameters differ
    assert _table(message)["tiny.head"][:4] == ["head", f"{head:,}", f"{head + 50:,}", "+50"]


@pytest.mark.reference
def test_miscounted_flops_fail_with_the_per_block_flop_diff(tiny_module):
    cfg = TinyConfig(mistake="ff_flops")
    n, d, d_ff, V, L = 4, cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.n_layers
    # FlopCounterMode on nn.Linear(i, o) over n rows: 2·n·i·o
    mlp = L * (2 * n * d * d_ff + 2 * n * d_ff * d)
    total = mlp + 2 * n * d * V
    wrong_mlp = L * (2 * n * d * d_ff + 2 * (2 * d) * d_ff * d)  # the plugin's mistake: 2·d rows, not N
    assert_blocks_match_modules(ARCHITECTURE, cfg)  # the parameters are right
    with pytest.raises(AssertionError) as caught:
        assert_matches_reference(ARCHITECTURE, cfg, seq_lens=(n,))
    message = str(caught.value)
    assert (
        f"forward FLOPs at N={n}: FlopCounterMode counts {total:,} for {MODULE}.TinyNet, archzoo "
        f"{total - mlp + wrong_mlp:,} ({wrong_mlp - mlp:+,})" in message
    )
    assert "parameters:" not in message
    rows = _table(message)  # FLOPs of all the copies, against all the reference's copies together
    assert rows["tiny.layers.layer (all 2)"][:4] == [
        "layers.<i>",
        f"{mlp:,}",
        f"{wrong_mlp:,}",
        f"{wrong_mlp - mlp:+,}",
    ]
    assert rows["tiny.layers.layer.mlp (all 2)"][:4] == [
        "layers.<i>.{fc_in, fc_out}",
        f"{mlp:,}",
        f"{wrong_mlp:,}",
        f"{wrong_mlp - mlp:+,}",
    ]
    assert rows["tiny.head"][:4] == ["head", f"{2 * n * d * V:,}", f"{2 * n * d * V:,}", "match"]


@pytest.mark.reference
def test_the_assertions_take_an_architecture_name_and_a_mapping(fresh_host):
    arch = fresh_host.architecture("gpt")
    small = dict(vocab_size=61, d_model=24, n_heads=3, n_layers=2, max_positions=16)
    assert_blocks_match_modules("gpt", small)
    assert_matches_reference(arch, small, seq_lens=(5,))
    with pytest.raises(TypeError, match=r"^config is a TinyConfig, not the GptConfig of architecture 'gpt'"):
        assert_matches_reference(arch, TinyConfig())


def test_a_configuration_without_a_reference_fails_saying_so():
    arch = ARCHITECTURE.model_copy(update={"reference": lambda cfg: None})
    with pytest.raises(AssertionError, match=r"^architecture 'kittiny' gives no reference implementation"):
        assert_matches_reference(arch)


def test_without_torch_the_assertions_say_what_to_install():
    """Outside pytest (nothing to skip) the assertion fails with the install line; torch is hidden."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # import torch now raises ImportError
        from archzoo.host import get_host
        from archzoo.testing import assert_matches_reference
        try:
            assert_matches_reference(get_host().architecture("gpt"))
        except AssertionError as exc:
            print(exc)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # not inside a test there
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "checking 'gpt' against transformers.GPT2LMHeadModel needs torch, which is not installed; " + KIT_INSTALL_HINT
    )
    assert 'pip install "archzoo[verify]"' in KIT_INSTALL_HINT and "download.pytorch.org/whl/cpu" in KIT_INSTALL_HINT


def test_importing_the_kit_imports_no_reference_library():
    code = (
        "import sys, archzoo.testing\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ---- check_plugin -----------------------------------------------------------------------------------


def test_every_installed_plugin_passes_its_self_checks(fresh_host):
    for name in fresh_host.plugins:
        assert check_plugin(name) == [], name


@pytest.mark.reference
def test_check_plugin_in_process_finds_the_miscounted_block(tiny_module):
    assert check_plugin(tiny_module) == []
    wrong = ARCHITECTURE.model_copy(
        update={"build": lambda cfg: _build(cfg.model_copy(update={"mistake": "head_bias"}))}
    )
    module = types.ModuleType("archzoo_wrongtiny")

    @hookimpl
    def register_architectures(register):
        register(wrong)

    module.register_architectures = register_architectures
    model = _torch_model(TinyConfig())
    total = sum(p.numel() for p in model.parameters())
    assert check_plugin(module) == [
        f"architecture 'kittiny': the default configuration counts {total + 50:,} parameters, its reference "
        f"{MODULE}.TinyNet holds {total:,} (+50)",
        f"architecture 'kittiny': block 'tiny' counts {total + 50:,} parameters, (model) of {MODULE}.TinyNet holds {total:,}",
        f"architecture 'kittiny': block 'tiny.head' counts {model.head.weight.numel() + 50:,} parameters, head of "
        f"{MODULE}.TinyNet holds {model.head.weight.numel():,}",
    ]


def _plugin(**attributes: Any) -> types.ModuleType:
    module = types.ModuleType("archzoo_broken")
    for name, value in attributes.items():
        setattr(module, name, value)
    return module


class Undocumented(ArchConfig):
    width: int = 4
    depth: PositiveInt


def test_check_plugin_names_each_malformed_part():
    @hookimpl
    def register_architecture(register):  # misspelt: the hook is register_architectures
        pass

    assert check_plugin(_plugin(register_architecture=register_architecture)) == [
        "cannot be registered: implements hook 'register_architecture', which archzoo does not define; did you "
        "mean 'register_architectures'? archzoo's hooks: register_activation_memory, register_architectures, "
        "register_hf_readers, register_registry_dirs"
    ]

    def register_architectures(register):  # no @hookimpl
        register(ARCHITECTURE)

    assert check_plugin(_plugin(register_architectures=register_architectures)) == [
        "register_architectures is defined without @archzoo.hookimpl, so archzoo never calls it; decorate it"
    ]

    @hookimpl
    def register_undocumented(register):
        register(ARCHITECTURE.model_copy(update={"name": "undocumented", "config_model": Undocumented}))

    problems = check_plugin(_plugin(register_architectures=register_undocumented))
    assert problems == [
        "architecture 'undocumented': config key 'width' has no description; give Field(..., description=...) "
        "(`archzoo plugins` and the site show it)",
        "architecture 'undocumented': config key 'depth' has no default; give it one (`archzoo count "
        "undocumented` uses them)",
        "architecture 'undocumented': config key 'depth' has no description; give Field(..., description=...) "
        "(`archzoo plugins` and the site show it)",
    ]


def test_check_plugin_of_an_unknown_name_says_what_is_installed(fresh_host):
    [problem] = check_plugin("nosuchplugin")
    assert problem.startswith("no installed plugin is named 'nosuchplugin' (installed: ")
    assert all(name in problem for name in fresh_host.plugins)


def test_check_plugin_of_a_plugin_that_registers_nothing():
    assert check_plugin(_plugin()) == [
        "registers nothing: implement register_architectures, register_hf_readers or register_registry_dirs "
        "(with @archzoo.hookimpl)"
    ]


def test_check_plugin_reads_the_registry_folders_a_plugin_ships(tmp_path):
    folder = tmp_path / "registry"
    folder.mkdir()
    (folder / "broken.yaml").write_text("architecture: gpt\ntitle: x\nsummary: y\nyear: 2020\nconfig: {n_layers: 0}\n")

    @hookimpl
    def register_registry_dirs(register):
        register(folder)

    [problem] = check_plugin(_plugin(register_registry_dirs=register_registry_dirs))
    assert problem.startswith(f"registry entry {folder / 'broken.yaml'}:5: config.n_layers: ")


TABLE = HFTable(
    model_type="kittiny",
    config_class="KitTinyConfig",
    defaults={"hidden": 8, "vocab": 50},
    aliases={},
    read={"hidden": "width", "vocab": "vocab_size"},  # width: no key of TinyConfig (d_model is)
    ignored={},
    refused={},
    base_class="KitTinyModel",
    classes={"KitTinyModel": {}, "KitTinyForLM": {"head_kind": "lm"}},  # nor is head_kind
)


@hf_reader(TABLE)
def _read_kittiny(hf: dict[str, Any], model_class: str = "KitTinyModel") -> dict[str, Any]:
    return {"width": hf["hidden"], "vocab_size": hf["vocab"]}


def test_check_plugin_checks_a_readers_table_against_the_configuration_and_transformers():
    transformers = pytest.importorskip("transformers")

    @hookimpl
    def register_architectures(register):
        register(ARCHITECTURE.model_copy(update={"reference": None}))

    @hookimpl
    def register_hf_readers(register):
        register("kittiny", _read_kittiny)

    plugin = _plugin(register_architectures=register_architectures, register_hf_readers=register_hf_readers)
    valid = "valid keys: vocab_size, d_model, d_ff, n_layers, mistake"
    assert check_plugin(plugin) == [
        "Hugging Face reader 'kittiny': its table reads 'hidden' as 'width', which is no key of architecture 'kittiny'",
        "Hugging Face reader 'kittiny': class KitTinyForLM sets head_kind, no key of architecture 'kittiny'",
        "Hugging Face reader 'kittiny': its table names config class KitTinyConfig, which transformers "
        f"{transformers.__version__} lacks",
        "Hugging Face reader 'kittiny': class KitTinyModel: a config.json of the table's defaults (as kittiny "
        f"KitTinyModel): width: unknown key; {valid}",
        "Hugging Face reader 'kittiny': class KitTinyForLM: a config.json of the table's defaults (as kittiny "
        f"KitTinyForLM): width: unknown key; {valid}; a config.json of the table's defaults (as kittiny "
        f"KitTinyForLM): head_kind: unknown key; {valid}",
    ]


def test_check_plugin_reports_a_deprecated_way_of_registering():
    @hookimpl
    def register_architectures(register):
        register(ARCHITECTURE.model_copy(update={"reference": None, "hf_model_types": {"kitold": lambda hf: {}}}))

    assert check_plugin(_plugin(register_architectures=register_architectures)) == [
        "Architecture.hf_model_types is deprecated; register Hugging Face readers with the register_hf_readers hook"
    ]


def test_check_plugin_imports_an_installed_plugin_the_manifest_describes(tmp_path, monkeypatch):
    """check_plugin runs the plugin's hooks even when a manifest would let a host skip importing it: a deprecated
    registration warns only while the hooks run."""
    package = tmp_path / "archzoo_kitold"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from archzoo import hookimpl
            from archzoo_gpt import ARCHITECTURE

            @hookimpl
            def register_architectures(register):
                register(ARCHITECTURE.model_copy(
                    update={"name": "kitold", "reference": None, "hf_model_types": {"kitold": lambda hf: {}}}
                ))
            """
        )
    )
    dist = tmp_path / "archzoo_kitold-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: archzoo-kitold\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[archzoo]\nkitold = archzoo_kitold\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    from importlib import metadata

    from archzoo.host import PluginHost

    selection = {ep.name for ep in metadata.entry_points(group="archzoo")}  # the built-ins and kitold, as checked
    assert "kitold" in selection
    with pytest.warns(DeprecationWarning):
        PluginHost(only=selection).load()  # a full load: writes the manifest of this selection
    assert "kitold" in PluginHost(only=selection).load()._pending, "a host now routes from the manifest"
    try:
        assert check_plugin("kitold", references=False) == [
            "Architecture.hf_model_types is deprecated; register Hugging Face readers with the register_hf_readers hook"
        ]
    finally:
        sys.modules.pop("archzoo_kitold", None)


# ---- the pytest plugin ------------------------------------------------------------------------------


def test_the_fixtures_come_from_the_pytest11_entry_point(pytester):
    """A test suite that imports nothing from archzoo gets the fixtures: pytest loaded archzoo.testing itself."""
    pytester.makepyfile(
        """
        from archzoo import Architecture, ArchConfig

        def test_host(archzoo_host):
            assert "gpt" in archzoo_host.architectures

        def test_architecture(archzoo_architecture):
            arch = archzoo_architecture("gpt")
            assert isinstance(arch, Architecture) and arch.name == "gpt"

        def test_config(archzoo_config):
            config = archzoo_config("gpt", n_layers=2)
            assert isinstance(config, ArchConfig) and config.n_layers == 2
        """
    )
    # one run both runs the tests and lists the plugins pytest loaded (each pytest process takes seconds)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trace-config")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*archzoo.testing*"])
    listed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--fixtures")
    listed.stdout.fnmatch_lines(["*archzoo_host*", "*archzoo_architecture*", "*archzoo_config*"])


def test_an_unknown_architecture_in_the_factory_names_the_closest(pytester):
    pytester.makepyfile(
        """
        import pytest
        from archzoo.errors import UnknownArchitectureError

        def test_unknown(archzoo_architecture):
            with pytest.raises(UnknownArchitectureError, match="did you mean 'gpt'"):
                archzoo_architecture("gtp")
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_without_torch_a_test_of_the_kit_is_skipped_saying_what_to_install(pytester):
    pytester.makepyfile(
        """
        import sys
        sys.modules["torch"] = None  # import torch now raises ImportError

        from archzoo.testing import assert_blocks_match_modules

        def test_blocks():
            assert_blocks_match_modules("gpt")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *needs torch, which is not installed; install PyTorch's CPU build first*"])
    assert KIT_INSTALL_HINT in result.stdout.str()


def test_check_plugin_names_activation_memory_for_an_architecture_it_does_not_register():
    from archzoo.formula import const
    from archzoo.saved_tensors import ActivationSaves

    saves = ActivationSaves(
        architecture="bert", classes=("transformers.BertModel",), activations={},
        layer=lambda terms: {}, outside=lambda terms: {}, gap=lambda terms: [], stack=lambda terms: const(0),
    )  # fmt: skip

    @hookimpl
    def register_architectures(register):
        register(ARCHITECTURE)

    @hookimpl
    def register_activation_memory(register):
        register(saves)

    plugin = _plugin(
        register_architectures=register_architectures, register_activation_memory=register_activation_memory
    )
    assert check_plugin(plugin, references=False) == [
        "register_activation_memory: architecture 'bert' is not one this plugin registers (kittiny); a plugin "
        "states what its own architectures save"
    ]


# ---- the one builder: build_model ---------------------------------------------------------------------------


@pytest.mark.reference
def test_build_model_builds_a_transformers_class_on_the_meta_device_with_eager_attention():
    """BertModel(BertConfig()) is BERT-base with its pooler: 109,482,240 parameters (transformers 5.23; Devlin et al.
    2019 print 110M), built on the meta device, in eval mode, with the eager attention FlopCounterMode counts."""
    transformers = pytest.importorskip("transformers")
    from archzoo.testing import build_model

    model = build_model("BertModel", transformers.BertConfig())
    assert type(model) is transformers.BertModel
    assert sum(p.numel() for p in model.parameters()) == 109_482_240
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert not model.training
    assert model.config._attn_implementation == "eager"


@pytest.mark.reference
def test_build_model_builds_a_reference_as_archzoo_does(tiny_module):
    """A `Reference` is built as archzoo.reference builds it: here the tiny torch module, whose parameters are
    its tensors' numel() (embedding V d, per layer a LayerNorm 2 d and two Linears, a final LayerNorm, the head)."""
    from archzoo.testing import build_model

    cfg = TinyConfig()
    model = build_model(ARCHITECTURE.reference(cfg))
    d, V, d_ff, L = cfg.d_model, cfg.vocab_size, cfg.d_ff, cfg.n_layers
    assert (
        sum(p.numel() for p in model.parameters())
        == V * d + L * (2 * d + d * d_ff + d_ff + d_ff * d + d) + 2 * d + d * V
    )
    assert {p.device.type for p in model.parameters()} == {"meta"}


@pytest.mark.reference
def test_build_model_on_the_cpu_draws_the_same_weights_and_keeps_the_callers_random_state():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archzoo.testing import build_model

    config = dict(vocab_size=40, n_embd=16, n_layer=1, n_head=2, n_positions=8)
    state = torch.random.get_rng_state()
    first = build_model("GPT2Model", transformers.GPT2Config(**config), device="cpu")
    assert torch.equal(torch.random.get_rng_state(), state)
    second = build_model(transformers.GPT2Model, transformers.GPT2Config(**config), device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters(), strict=True))
    assert {p.device.type for p in first.parameters()} == {"cpu"}


def test_build_model_says_what_it_needs():
    from archzoo.testing import build_model

    with pytest.raises(
        TypeError, match=r"^build_model\('BertModel'\) needs the configuration object to build it from$"
    ):
        build_model("BertModel")
    with pytest.raises(TypeError, match=r"^a Reference carries its own configuration: pass no config with it$"):
        build_model(
            Reference(library="torch", target="torch.nn.Linear", kwargs={"in_features": 2, "out_features": 3}), {}
        )
