"""What each model family's test module checks against transformers, written once: a family's module names its
classes, configurations and keys, and these functions make the comparisons.

Every expected figure is transformers' own: ``sum(p.numel() for p in model.parameters())`` of the class built by
`archzoo.testing.build_model`, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager forward pass
of batch 1 (`transformers_models.forward_flops`, `transformers_models.config_json_figures`), the elements its cache
holds after a forward pass, or the fields and classes its configuration and modeling modules declare.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from archzoo.architecture import parse_config
from archzoo.errors import ConfigError, HFConfigError
from archzoo.hf_config import COMMON_KEYS, hf_table, load_hf_config
from archzoo.host import PluginHost, get_host
from archzoo.report import Report, make_report
from archzoo.testing import (
    assert_activation_memory_matches,
    assert_blocks_match_modules,
    assert_matches_reference,
    build_model,
    check_plugin,
)
from transformers_models import config_json_figures, forward_flops, n_params

#: the sequence lengths a random configuration's FLOPs are checked at: one token, an odd length, a longer one
RANDOM_SEQ_LENS = (1, 7, 16)

#: the ways an activation formula is checked against autograd (`archzoo.testing.assert_activation_memory_matches`):
#: (dtype, attention, recompute, device); fused attention (SDPA) and 16-bit kernels only run on the CPU
ACTIVATION_CASES = [
    ("fp32", "eager", False, "meta"),
    ("bf16", "eager", False, "meta"),
    ("bf16", "eager", False, "cpu"),
    ("bf16", "fused", False, "cpu"),
    ("bf16", "eager", True, "meta"),
]


def activation_cases(seeds: Iterable[int] = (1, 2, 3, 4)) -> list[Any]:
    """Each of `ACTIVATION_CASES` for each random configuration's seed: ``(seed, dtype, attention, recompute,
    device)``, for `assert_activation_case`."""
    return [
        pytest.param((seed, *case), id="-".join(map(str, (seed, *case)))) for seed in seeds for case in ACTIVATION_CASES
    ]


def counter(architecture: str) -> Callable[..., Report]:
    """``count(seq_len=None, **config)``: the report of ``architecture`` with those configuration keys (validated as
    ``--set`` validates them), at sequence length ``seq_len`` (None: the configuration's own)."""

    def count(seq_len: int | None = None, **config: Any) -> Report:
        arch = get_host().architecture(architecture)
        return make_report(arch, parse_config(arch, config), seq_len)

    return count


def write_json(folder: Path, data: Mapping[str, Any], name: str = "config.json") -> Path:
    """``data`` written as ``folder/name`` (a config.json, unless named otherwise)."""
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def saved_config(folder: Path, config: Any, name: str = "config.json") -> tuple[Path, Any]:
    """``config`` (a transformers configuration object) written as ``folder/name`` the way its ``to_dict`` writes it
    (as a saved checkpoint's config.json holds it): the file, and the configuration."""
    return write_json(folder, config.to_dict(), name), config


def table_of(host: PluginHost, model_type: str) -> Any:
    """The `archzoo.hf_config.HFTable` the reader of ``model_type`` declares."""
    return hf_table(host.hf_readers()[model_type].reader)


def assert_defaults_are_transformers_defaults(
    T: Any, count: Callable[..., Report], model_class: str, config_class: str, seq_lens: Iterable[int] = (1, 8)
) -> None:
    """The configuration's defaults count what ``model_class`` built from ``config_class()`` holds, and its FLOPs."""
    model = build_model(model_class, getattr(T, config_class)())
    assert count().params == n_params(model)
    for n in seq_lens:
        assert count(n).flops == forward_flops(model, n), n


def assert_head_class_matches(
    T: Any,
    host: PluginHost,
    architecture: str,
    model_class: str,
    config: Mapping[str, Any],
    seq_lens: Iterable[int] = (3, 32),
    *,
    config_class: str | None = None,
    device: str = "meta",
) -> None:
    """``config`` (with its ``head``) names ``transformers.<model_class>`` as its reference, and counts what that
    class, built from the reference's keyword arguments, holds and computes at each of ``seq_lens``."""
    count = counter(architecture)
    report = count(**config)
    ref = host.architecture(architecture).reference(report.config)
    assert ref.target == f"transformers.{model_class}"
    config_class = config_class or (ref.config_class or "").rpartition(".")[2]
    model = build_model(model_class, getattr(T, config_class)(**ref.kwargs), device=device)  # type: ignore[arg-type]
    assert report.params == n_params(model)
    for n in seq_lens:
        assert count(n, **config).flops == forward_flops(model, n), n


def assert_random_config_matches(
    host: PluginHost, architecture: str, config: Mapping[str, Any], seq_lens: Iterable[int] = RANDOM_SEQ_LENS
) -> None:
    """The kit's two checks of a configuration: block by block against the reference's submodules, and in total
    (parameters, and FLOPs at each of ``seq_lens``)."""
    arch = host.architecture(architecture)
    assert_blocks_match_modules(arch, config)
    assert_matches_reference(arch, config, seq_lens=seq_lens)


def assert_kv_cache_matches(
    T: Any, host: PluginHost, architecture: str, model_class: str, config: Mapping[str, Any], tokens: int = 5
) -> None:
    """The KV cache per token times ``tokens`` is the elements transformers' DynamicCache holds after one forward
    pass of that many tokens on the CPU."""
    import torch

    report = counter(architecture)(**config)
    ref = host.architecture(architecture).reference(report.config)
    config_class = getattr(T, (ref.config_class or "").rpartition(".")[2])
    model = build_model(model_class, config_class(**ref.kwargs), device="cpu")
    with torch.no_grad():
        cache = model(input_ids=torch.ones(1, tokens, dtype=torch.long), use_cache=True).past_key_values
    held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
    assert report.kv_cache_elements_per_token * tokens == held


def assert_table_is_the_configuration_class(
    T: Any, host: PluginHost, model_type: str, config_class: str, modeling_module: str, *, every_class: bool = True
) -> Any:
    """The reader's table has the configuration class's fields and defaults, AutoModel's class as its base, every
    model class of ``modeling_module`` (``every_class``: none refused), and knows every key of a saved
    configuration. Returns the table, for a family's further checks."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = table_of(host, model_type)
    common = {f.name for f in dataclasses.fields(T.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(getattr(T, config_class)) if f.name not in common}
    assert dict(table.defaults) == fields
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    if every_class:
        module = importlib.import_module(modeling_module)
        classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
        assert set(table.classes) == classes  # every head class is counted: none refused
    full = getattr(T, config_class)().to_dict()
    known = set(table.read) | set(table.ignored) | set(table.refused) | set(table.aliases) | set(COMMON_KEYS)
    assert set(full) - known == set()
    return table


def assert_config_json_matches(
    T: Any, host: PluginHost, path: Path, classes: Iterable[str], seq_len: int = 9, *, label: Any = None
) -> None:
    """The config.json at ``path``, read as each of ``classes``, counts the parameters and FLOPs (at ``seq_len``)
    transformers' class built from it by AutoConfig holds, and names that class as its reference."""
    for model_class in classes:
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, seq_len)
        figures = config_json_figures(T, path, model_class, seq_len)
        assert (report.params, report.flops) == figures, (label, model_class)
        assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"


def assert_unknown_rotary_type_refused(
    host: PluginHost, folder: Path, model_type: str, base: Mapping[str, Any], config_class: str
) -> None:
    """A config.json whose rope_parameters name a type transformers does not build is refused, naming it."""
    path = write_json(folder, {"model_type": model_type, **base, "rope_parameters": {"rope_type": "spiral"}})
    with pytest.raises(HFConfigError, match=rf"rope_type \"spiral\" is not one transformers' {config_class} accepts"):
        load_hf_config(path, host)


def assert_activation_case(
    architecture: str,
    config: Mapping[str, Any],
    case: tuple[Any, ...],
    *,
    base: str = "model.",
    layers: str = "layers",
    seq_len: int | None = None,
) -> None:
    """The activation formula of ``config`` against autograd in one of `activation_cases`, at ``seq_len`` (None: a
    length that changes with the seed, 5 + 4·seed); recomputed, every layer is (the module list ``layers``, under
    ``base`` in the LM class)."""
    seed, dtype, attention, recompute, device = case
    stack = (f"{base}{layers}",) if config["head"] == "lm" else (layers,)
    assert_activation_memory_matches(
        architecture,
        config,
        5 + 4 * seed if seq_len is None else seq_len,
        dtype=dtype,
        attention=attention,
        recompute=stack if recompute else (),
        device=device,
    )


def changed_settings(norm_epsilon: str = "layer_norm_eps") -> dict[str, Any]:
    """A changed value for each key `archzoo.decoder_parts.settings_ignored` names (the norm epsilon under the
    family's key ``norm_epsilon``): what a family's ignored-keys check changes besides its own."""
    return {"initializer_range": 0.5, norm_epsilon: 1e-3, "use_cache": False, "bos_token_id": 5, "eos_token_id": 6}


@dataclasses.dataclass(frozen=True)
class DecoderFamily:
    """What a decoder family's test module states for `DecoderChecks`: its architecture and config.json
    ``model_type`` (the architecture's name unless given), its head classes (archzoo's head -> transformers'
    class), configuration class and modeling module, random small configurations, a small config.json (``base``)
    with one changed value per key the table reads (``sweep``, and ``more_changes`` by id) and a value for each key
    it ignores (``ignored``); for `RotaryDecoderChecks`, configurations whose KV cache is compared (``kv_cache``) and
    configurations refused with their messages (``refused``)."""

    architecture: str
    classes: Mapping[str, str]
    config_class: str
    modeling: str
    configs: list[dict[str, Any]]
    base: Mapping[str, Any]
    sweep: Mapping[str, Any]
    ignored: Mapping[str, Any]
    model_type: str = ""
    more_changes: Mapping[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    kv_cache: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    refused: list[tuple[dict[str, Any], str]] = dataclasses.field(default_factory=list)

    @property
    def hf_type(self) -> str:
        return self.model_type or self.architecture


class DecoderChecks:
    """The checks a decoder family's test module makes against transformers, as the methods of a class the module
    derives with its `DecoderFamily` (``class TestCohere(RotaryDecoderChecks): FAMILY = DecoderFamily(...)``). Not
    named ``Test...``: pytest collects the checks only through a module's class."""

    FAMILY: ClassVar[DecoderFamily]

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Each method's cases, from the family's facts."""
        family = self.FAMILY
        if "config" in metafunc.fixturenames:
            metafunc.parametrize("config", family.configs, ids=[f"seed{i}" for i in range(len(family.configs))])
        if "change" in metafunc.fixturenames:
            changes = [{}, *({k: v} for k, v in family.sweep.items()), *family.more_changes.values()]
            metafunc.parametrize("change", changes, ids=["(base)", *family.sweep, *family.more_changes])
        if "cached" in metafunc.fixturenames:
            metafunc.parametrize("cached", family.kv_cache, ids=[f"cache{i}" for i in range(len(family.kv_cache))])
        if "refused" in metafunc.fixturenames:
            metafunc.parametrize("refused", family.refused, ids=[f"refused{i}" for i in range(len(family.refused))])

    @pytest.mark.reference
    def test_plugin_passes_check_plugin(self, host: PluginHost) -> None:
        """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF
        table."""
        assert check_plugin(self.FAMILY.architecture) == []

    @pytest.mark.reference
    def test_defaults_are_transformers_defaults(self, T: Any, host: PluginHost) -> None:
        """The configuration's defaults are the transformers configuration class's: the same parameters and
        FLOPs."""
        family = self.FAMILY
        count = counter(family.architecture)
        assert_defaults_are_transformers_defaults(T, count, family.classes["lm"], family.config_class)

    @pytest.mark.reference
    def test_random_configs_equal_transformers(self, host: PluginHost, config: dict[str, Any]) -> None:
        assert_random_config_matches(host, self.FAMILY.architecture, config)

    @pytest.mark.reference
    def test_table_equals_the_transformers_configuration_class(self, T: Any, host: PluginHost) -> None:
        """Fields and defaults, AutoModel's class, every model class; every key of a saved config known."""
        family = self.FAMILY
        assert_table_is_the_configuration_class(T, host, family.hf_type, family.config_class, family.modeling)

    @pytest.mark.reference
    def test_the_sweep_covers_every_key(self, host: PluginHost) -> None:
        assert set(self.FAMILY.sweep) == set(table_of(host, self.FAMILY.hf_type).read)

    @pytest.mark.reference
    def test_each_key_against_transformers(self, T: Any, host: PluginHost, tmp_path: Path, change: dict) -> None:
        """Each key changed alone, read as the base model and the LM class (num_labels: as each head class)."""
        family = self.FAMILY
        path = write_json(tmp_path, {"model_type": family.hf_type, **family.base, **change})
        classes = [family.classes["none"], family.classes["lm"]]
        if "num_labels" in change:
            classes = [name for head, name in family.classes.items() if head not in ("lm", "none")]
        assert_config_json_matches(T, host, path, classes, label=change)

    @pytest.mark.reference
    def test_ignored_keys_change_no_figure(self, T: Any, host: PluginHost, tmp_path: Path) -> None:
        """Every key archzoo ignores, changed at once: transformers' figures still equal archzoo's."""
        family = self.FAMILY
        assert set(family.ignored) == set(table_of(host, family.hf_type).ignored)
        path = write_json(tmp_path, {"model_type": family.hf_type, **family.base, **family.ignored})
        assert_config_json_matches(T, host, path, family.classes.values())


class RotaryDecoderChecks(DecoderChecks):
    """`DecoderChecks` and those of a decoder with rotary positions and a cache: the KV cache of each of the
    family's ``kv_cache`` configurations, its ``refused`` configurations refused with their messages, and a rotary
    type transformers does not build refused."""

    @pytest.mark.reference
    def test_kv_cache_equals_what_transformers_caches(self, T: Any, host: PluginHost, cached: dict) -> None:
        """The elements transformers' DynamicCache holds after one forward pass on the CPU."""
        family = self.FAMILY
        assert_kv_cache_matches(T, host, family.architecture, family.classes["lm"], cached)

    def test_what_transformers_cannot_run_is_refused(self, host: PluginHost, refused: tuple[dict, str]) -> None:
        config, message = refused
        with pytest.raises(ConfigError, match=message):
            counter(self.FAMILY.architecture)(**config)

    def test_a_rotary_type_transformers_does_not_build_is_refused(self, host: PluginHost, tmp_path: Path) -> None:
        family = self.FAMILY
        assert_unknown_rotary_type_refused(host, tmp_path, family.hf_type, family.base, family.config_class)


def assert_config_json_refused(host: PluginHost, folder: Path, data: Mapping[str, Any], hf_class: Any, message: str):
    """The config.json of ``data``, read as ``hf_class`` (None: its base class), is refused with ``message`` exactly
    (``{path}`` standing for the file's path)."""
    path = write_json(folder, data)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(path, host, hf_class=hf_class)
    assert str(info.value) == message.format(path=path)


def assert_verify_maps_every_block(
    host: PluginHost, folder: Path, architecture: str, config: Mapping[str, Any], model_class: str
) -> Any:
    """An entry of ``config`` written as a registry file and verified (`archzoo verify`) against transformers'
    ``model_class`` passes, and every leaf block but the attention products (which hold no parameters) is compared on
    its own. Returns the verification, for a family's further checks."""
    import yaml

    from archzoo.verify import verify_target

    path = folder / "small.yaml"
    entry = dict(architecture=architecture, title="A test entry", year=2022, summary="Written by the test suite.")
    path.write_text(yaml.safe_dump({**entry, "config": dict(config)}, sort_keys=False))
    verification = verify_target(str(path), host=host)
    assert verification.target == f"transformers.{model_class}"
    assert verification.ok, verification.render()
    mapped = {row.path for row in verification.blocks}
    leaves = {p for p, _, block in counter(architecture)(**config).root.walk() if not block.children}
    cores = {p for p, _, block in counter(architecture)(**config).root.walk() if block.kind == "attention_core"}
    assert leaves - cores <= mapped, leaves - cores - mapped
    return verification
