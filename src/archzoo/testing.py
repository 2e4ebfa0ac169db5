"""The plugin authors' kit: assertions that a plugin counts what its reference module holds, and its self-checks.

A plugin's conformance test is a few lines with it::

    from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, check_plugin

    def test_the_plugin_is_well_formed():
        assert check_plugin("tiny") == []

    def test_counts_equal_the_reference(archzoo_architecture):
        arch = archzoo_architecture("tiny")
        config = arch.config_model(d_model=32, n_heads=4, n_layers=2)
        assert_blocks_match_modules(arch, config)
        assert_matches_reference(arch, config, seq_lens=(8, 16))

This module is also a pytest plugin (the ``pytest11`` entry point ``archzoo``), so the fixtures
``archzoo_host``, ``archzoo_architecture`` and ``archzoo_config`` are there in every test of an environment
where archzoo is installed. Importing it never imports torch, and needs no pytest (it imports pytest only
to define the fixtures, when pytest is installed): ``archzoo plugins --check`` runs `check_plugin` without
either. The assertions that build a reference need torch (and transformers for its
models); without them they skip the test (or, outside pytest, fail) saying what to install.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from . import hookspecs
from .architecture import ArchConfig, Architecture, Reference, describe_validation_error, parse_config
from .block_match import BlockCheck, compare_blocks, outermost
from .errors import ArchzooError, PluginError
from .host import BUILTIN_DISTRIBUTION, ENTRY_POINT_GROUP, PluginHost, build_blocks, call_plugin, get_host
from .memory import activation_formula, measure_activations, plugin_activation_saves
from .reference import build_reference, reference_flops
from .report import make_report
from .verification import block_table

if TYPE_CHECKING:
    from .blocks import Block

__all__ = [
    "DEFAULT_SEQ_LENS",
    "KIT_INSTALL_HINT",
    "assert_activation_memory_matches",
    "assert_blocks_match_modules",
    "assert_matches_reference",
    "build_model",
    "check_plugin",
    "check_plugins",
]

#: What the assertions that build a reference need; torch first, so that pip does not pull a CUDA build.
KIT_INSTALL_HINT = (
    "install PyTorch's CPU build first (pip install torch --index-url https://download.pytorch.org/whl/cpu), "
    'then pip install "archzoo[verify]"'
)

#: Sequence lengths `assert_matches_reference` counts FLOPs at unless told otherwise: small, and two of
#: them, so that a formula wrong in its N² term cannot agree with the reference at both.
DEFAULT_SEQ_LENS = (8, 13)

ArchitectureLike = Architecture | str
ConfigLike = ArchConfig | Mapping[str, Any] | None


# ---- what the assertions are about ------------------------------------------------------------------


def _architecture(architecture: ArchitectureLike) -> Architecture:
    if isinstance(architecture, Architecture):
        return architecture
    if isinstance(architecture, str):
        return get_host().architecture(architecture)
    raise TypeError(f"expected an archzoo.Architecture or an architecture's name, got {type(architecture).__name__}")


def _config(arch: Architecture, config: ConfigLike) -> ArchConfig:
    """``config`` as the architecture's configuration: None is its defaults, a mapping is validated."""
    if config is None:
        return parse_config(arch, {}, source=f"{arch.name} defaults")
    if isinstance(config, ArchConfig):
        if not isinstance(config, arch.config_model):
            raise TypeError(
                f"config is a {type(config).__name__}, not the {arch.config_model.__name__} of architecture "
                f"{arch.name!r}; build it with arch.config_model(...)"
            )
        return config
    return parse_config(arch, dict(config), source="config")


def _skip_or_fail(message: str) -> None:
    """Skip the running test (under pytest), else fail: a check that cannot run says what it needs."""
    if not os.environ.get("PYTEST_CURRENT_TEST"):  # outside a running test nothing can be skipped
        raise AssertionError(message)
    import pytest

    pytest.skip(message)


def _reference(arch: Architecture, config: ArchConfig) -> Reference:
    """The architecture's reference for ``config``, with the libraries that build it importable."""
    ref = call_plugin(arch.plugin or arch.name, "reference", arch.reference, config) if arch.reference else None
    if ref is None:
        raise AssertionError(
            f"architecture {arch.name!r} gives no reference implementation for this configuration "
            f"({'its reference() returned None' if arch.reference else 'it has no reference'}); a count "
            "can only be checked against a module that builds it"
        )
    if ref.library == "timm":
        _skip_or_fail(f"{ref.target} is a timm model; archzoo.testing builds torch and transformers references only")
    needed = ["torch"] + (["transformers"] if ref.library == "transformers" else [])
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            _skip_or_fail(
                f"checking {arch.name!r} against {ref.target} needs {module}, which is not installed; {KIT_INSTALL_HINT}"
            )
    return ref


def build_model(model: Reference | str | type, config: Any = None, *, device: Literal["meta", "cpu"] = "meta") -> Any:
    """A reference module built the way archzoo's checks build one, in eval mode: a `Reference` (as
    `archzoo.reference.build_reference` builds it), or a transformers model class (or its name in
    ``transformers``, ``"BertModel"``) from ``config``, a configuration object. A transformers model gets
    eager attention (FlopCounterMode counts the attention products) and eager experts (each expert's
    matmuls on the tokens routed to it; the grouped kernel is an op FlopCounterMode does not count). It is
    built on the meta device (no memory, no weights), or with ``device="cpu"`` on the CPU with weights from
    a fixed seed, for a forward pass that reads values (routing, a cache); the caller's random state is
    kept. Construction notes (torch's nested-tensor fast path, a special token beyond a tiny vocabulary) are
    silenced: they are not findings."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(model, Reference):
            if config is not None:
                raise TypeError("a Reference carries its own configuration: pass no config with it")
            return build_reference(model, device)
        if config is None:
            raise TypeError(f"build_model({model!r}) needs the configuration object to build it from")
        model_class = getattr(importlib.import_module("transformers"), model) if isinstance(model, str) else model
        config._attn_implementation = "eager"
        config._experts_implementation = "eager"
        with torch.random.fork_rng(devices=[]), torch.device(device):
            torch.manual_seed(0)
            return model_class(config).eval()


# ---- the assertions ---------------------------------------------------------------------------------


def assert_blocks_match_modules(architecture: ArchitectureLike, config: ConfigLike = None) -> None:
    """Every block that names its reference submodules (`archzoo.Block.modules`, set with
    `archzoo.blocks.with_modules`) holds as many parameters as those submodules of the reference module,
    built on the meta device, do; on failure the AssertionError holds the per-block table (block,
    reference module, reference, archzoo, difference, formula). A tree that maps no block fails too.
    """

    arch = _architecture(architecture)
    cfg = _config(arch, config)
    root = build_blocks(arch, cfg)
    ref = _reference(arch, cfg)
    comparison = compare_blocks(root, build_model(ref), arch.plugin or arch.name)
    if not comparison.blocks:
        raise AssertionError(
            f"architecture {arch.name!r}: no block names the submodules of {ref.target} that hold it, so no "
            "block can be compared; end build() with archzoo.blocks.with_modules(root, {block path: (submodule, ...)})"
        )
    if not comparison.ok:
        failed = ", ".join(row.path for row in comparison.blocks if not row.ok)
        raise AssertionError(
            f"architecture {arch.name!r}: blocks differ from the submodules of {ref.target} they name: {failed}\n"
            + "\n".join([*block_table(comparison.blocks), *_row_details(comparison.blocks)])
        )


def assert_matches_reference(
    architecture: ArchitectureLike, config: ConfigLike = None, seq_lens: Iterable[int] = DEFAULT_SEQ_LENS
) -> None:
    """The configuration's parameters equal ``sum(p.numel() for p in model.parameters())`` of its reference
    module, and its forward FLOPs at each of ``seq_lens`` what ``torch.utils.flop_counter.FlopCounterMode``
    counts for one eager forward pass of batch 1 (an architecture whose N the configuration fixes, as a
    ViT's image tokens, is checked at that N only).

    On failure the AssertionError holds, for each figure that differs, a per-block table (block, reference
    module, reference, archzoo, difference, formula) over the blocks that name their submodules.
    """

    arch = _architecture(architecture)
    cfg = _config(arch, config)
    ref = _reference(arch, cfg)
    model = build_model(ref)
    report = make_report(arch, cfg)
    plugin = arch.plugin or arch.name
    comparison = compare_blocks(report.root, model, plugin)
    failures: list[str] = []
    if comparison.expected_total != report.params:
        failures.append(
            f"parameters: {ref.target} holds {comparison.expected_total:,}, archzoo counts {report.params:,} "
            f"({report.params - comparison.expected_total:+,})\n" + _diff_text(comparison.blocks, report.root)
        )
    lengths = [report.seq_len] if arch.seq_len_fixed else list(dict.fromkeys(seq_lens))
    if not lengths:
        raise ValueError("seq_lens: give at least one sequence length to count FLOPs at")
    for n in lengths:
        at_n = make_report(arch, cfg, n)
        expected, counts = _flop_counts(ref, n)
        root_name = type(model).__name__
        if expected != at_n.flops:
            rows = [_flop_row(row, at_n.root, counts, root_name, n) for row in comparison.blocks]
            failures.append(
                f"forward FLOPs at N={n}: FlopCounterMode counts {expected:,} for {ref.target}, archzoo "
                f"{at_n.flops:,} ({at_n.flops - expected:+,})\n" + _diff_text(tuple(rows), at_n.root)
            )
    if failures:
        raise AssertionError(f"architecture {arch.name!r} differs from {ref.target}:\n\n" + "\n\n".join(failures))


def _diff_text(rows: tuple[BlockCheck, ...], root: Block) -> str:

    if not rows:
        return (
            f"  (no per-block table: no block of {root.name!r} names its reference submodules; map them with "
            "archzoo.blocks.with_modules to see which block differs)"
        )
    return "\n".join("  " + line for line in [*block_table(rows), *_row_details(rows)])


def _row_details(rows: Iterable[BlockCheck]) -> list[str]:
    lines = []
    for row in rows:
        if row.missing:
            lines.append(f"{row.path}: the reference has no submodule {', '.join(row.missing)}")
        for module, count in row.mismatched_copies:
            lines.append(f"{row.path}: copy {module} holds {count:,}, not {row.expected:,} like the first")
    return lines


def _flop_counts(ref: Reference, seq_len: int) -> tuple[int, dict[str, int]]:
    """FLOPs of one forward pass at ``seq_len`` as `archzoo.reference.reference_flops` counts them, and by
    module as FlopCounterMode names them (``Global``, the model's class name, ``ClassName.dotted.submodule``),
    each including its submodules': an outer counter sees every operation the inner one counts."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with warnings.catch_warnings(), torch.no_grad(), FlopCounterMode(display=False) as counter:
        warnings.simplefilter("ignore")
        total = reference_flops(ref, seq_len)
    return total, {name: sum(by_op.values()) for name, by_op in counter.get_flop_counts().items()}


def _flop_row(row: BlockCheck, root: Block, counts: dict[str, int], root_name: str, seq_len: int) -> BlockCheck:
    """A block's FLOPs (all its executed copies) against those FlopCounterMode counts in the submodules it names."""

    visit = next(v for v in root.visits() if v.path == row.path)
    got = visit.flops.evaluate(N=seq_len)

    expected = sum(_module_flops(counts, root_name, module) for module in outermost(row.modules))
    return BlockCheck(
        path=row.path + (f" (all {row.copies})" if row.copies > 1 else ""),
        modules=row.modules,
        expected=None if row.missing else expected,
        got=got,
        formula=visit.block.flops.text() + (" each" if row.copies > 1 else ""),
        missing=row.missing,
    )


def _module_flops(counts: dict[str, int], root_name: str, module: str) -> int:
    """The FLOPs under ``module`` (``layers.<i>.mlp``: every copy): a module that never ran itself (an
    nn.ModuleList) counts the modules under it that did, each once."""
    if module == "":
        return counts.get(root_name, 0)
    pattern = re.compile(re.escape(f"{root_name}.{module}").replace(re.escape("<i>"), r"\d+") + r"(\..+)?$")
    found = [name for name in counts if pattern.match(name)]
    return sum(counts[n] for n in found if not any(o != n and n.startswith(o + ".") for o in found))


def assert_activation_memory_matches(
    architecture: ArchitectureLike,
    config: ConfigLike = None,
    seq_len: int | None = None,
    *,
    dtype: Literal["fp32", "bf16"] = "fp32",
    attention: Literal["eager", "fused"] = "eager",
    recompute: tuple[str, ...] = (),
    device: Literal["meta", "cpu"] = "meta",
) -> None:
    """`archzoo.memory.activation_formula` of the configuration equals, in total and for every mapped block,
    the bytes autograd saves in one training step of its reference (`archzoo.memory.measure_activations`, batch
    1, ``seq_len`` tokens, dropout 0): the check for a plugin's ``register_activation_memory``. ``recompute``
    names the reference's ``nn.ModuleList``\\ s of layers (full recomputation, checked against the formula's
    ``recompute=True``); fused attention is measured on the CPU (``device="cpu"``)."""
    arch = _architecture(architecture)
    cfg = _config(arch, config)
    ref = _reference(arch, cfg)
    report = make_report(arch, cfg, seq_len)
    n = report.seq_len
    with warnings.catch_warnings():  # construction notes, as in `build_model`, are not findings
        warnings.simplefilter("ignore")
        measured = measure_activations(ref, n, dtype=dtype, attention=attention, recompute=recompute, device=device)
    formula = activation_formula(report, dtype=dtype, attention=attention, recompute=bool(recompute), device=device)
    by_block = measured.by_block(report.root)
    wrong = [
        f"  {path}: autograd saves {got:,} bytes, the formula gives {expected.evaluate(N=n):,} = {expected.text()}"
        for path, got in by_block.items()
        if (expected := formula.per_copy.get(path, formula.blocks.get(path))) is not None
        and expected.evaluate(N=n) != got
    ]
    if formula.bytes_at(n) != measured.total_bytes or wrong:
        saved = "\n".join(f"  {s.module or '(model)'}: {s.shape} {s.dtype}, {s.nbytes:,} B" for s in measured.saved)
        raise AssertionError(
            f"{ref.target} at N = {n} ({dtype}, {attention} attention, recompute {bool(recompute)}, {device}): "
            f"autograd saves {measured.total_bytes:,} bytes, the formula gives {formula.bytes_at(n):,}\n"
            + "\n".join(wrong)
            + f"\nsaved tensors:\n{saved}"
        )


# ---- a plugin's self-checks ---------------------------------------------------------------------------


def _builtin_names() -> set[str]:
    """The entry-point names of archzoo's own plugins."""
    try:
        dist = metadata.distribution(BUILTIN_DISTRIBUTION)
    except metadata.PackageNotFoundError:  # archzoo run from a source tree without metadata
        return set()
    return {ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP}


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


@dataclass
class _Loaded:
    """A plugin loaded for its checks: its name, a host holding archzoo's built-ins and it, the deprecation
    warnings loading raised, or why it could not be found (``host`` None)."""

    name: str
    host: PluginHost | None
    deprecations: list[str] = field(default_factory=list)
    missing: str = ""


def _load(name: str, host: PluginHost) -> _Loaded:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        host.load()
    return _Loaded(name, host, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)])


def _plugin_host(plugin: str | ModuleType | object) -> _Loaded:
    installed = _entry_points()
    builtins = _builtin_names()
    if not isinstance(plugin, str):
        module_name = getattr(plugin, "__name__", type(plugin).__name__)
        same = [name for name, ep in installed.items() if ep.value == module_name]
        if same and importlib.import_module(module_name) is plugin:
            plugin = same[0]  # an installed plugin's own module: check it as installed
        else:
            name = module_name.rpartition(".")[2].removeprefix("archzoo_") or module_name
            return _load(name, PluginHost(strict=False, only=builtins | {name}, extra_plugins={name: plugin}))
    if plugin in installed:
        # no manifest: the plugin is imported and its hooks run, with the warnings they give, as it is the one checked
        return _load(plugin, PluginHost(strict=False, only=builtins | {plugin}, manifest=False))
    try:
        module = importlib.import_module(plugin)
    except ImportError as exc:
        return _Loaded(
            plugin,
            None,
            missing=f"no installed plugin is named {plugin!r} (installed: {', '.join(sorted(installed)) or 'none'}), "
            f"and no module of that name imports ({exc}); install the plugin (pip install -e .) or pass its module",
        )
    return _plugin_host(module)


def check_plugin(plugin: str | ModuleType | object, *, references: bool = True) -> list[str]:
    """Everything wrong with one plugin, one sentence a problem (an empty list: it is well formed).

    ``plugin`` is an installed plugin's entry-point name (``"bert"``), a module name, or the plugin module
    (or object) itself, checked in process beside archzoo's built-in plugins. Checked: it loads and registers
    through its hooks (the host's own problems: an import error, an unknown or misspelt hook, an invalid or
    clashing registration; and a deprecated way of registering), no ``register_*`` function lacks
    ``@hookimpl``, it registers something; for each architecture, that every configuration key has a default
    and a description, that the defaults validate, build a well-formed block tree and report, and that the
    reference (if any) is a `Reference` and, with ``references`` and torch installed, builds on the meta
    device with every submodule the blocks name and the same parameters, in total and block by block; for
    each Hugging Face reader with a table, that the keys it reads and its classes set are configuration
    keys, that a config.json of the table's defaults reads for every class, and (transformers installed)
    that its configuration class and model classes exist there; and that its registry entries validate.
    """
    loaded = _plugin_host(plugin)
    name, host = loaded.name, loaded.host
    if host is None:
        return [loaded.missing]
    problems = [p.reason for p in host.problems if p.plugin == name]
    own = f"plugin {name!r}: "
    problems += [w.removeprefix(own) for w in loaded.deprecations if w.startswith(own)]
    info = host.plugins.get(name)
    if info is None:
        return problems or [f"plugin {name!r} was not loaded"]
    problems += _hook_problems(host.pm.get_plugin(name))
    readers = {t: r for t, r in host.hf_readers().items() if r.plugin == name}
    if not (info.architectures or info.registry_dirs or readers) and not problems:
        problems.append(
            "registers nothing: implement register_architectures, register_hf_readers or "
            "register_registry_dirs (with @archzoo.hookimpl)"
        )
    for arch_name in info.architectures:
        problems += [
            f"architecture {arch_name!r}: {p}" for p in _architecture_problems(host.architecture(arch_name), references)
        ]
    for model_type, reader in readers.items():
        problems += [f"Hugging Face reader {model_type!r}: {p}" for p in _reader_problems(host, model_type, reader)]
    problems += _registry_problems(host, info.registry_dirs)
    problems += _activation_problems(host, name, info.architectures)
    return problems


def _activation_problems(host: PluginHost, name: str, architectures: list[str]) -> list[str]:
    """What is wrong with what the plugin registers with ``register_activation_memory``: an architecture it does
    not register, or no class the formula holds for."""
    try:
        registered = plugin_activation_saves(host, name)
    except PluginError as exc:
        return [exc.reason]
    problems = []
    for saves in registered:
        if saves.architecture not in architectures:
            problems.append(
                f"register_activation_memory: architecture {saves.architecture!r} is not one this plugin registers "
                f"({', '.join(architectures) or 'none'}); a plugin states what its own architectures save"
            )
        if not saves.classes or not all(isinstance(c, str) and "." in c for c in saves.classes):
            problems.append(
                f"register_activation_memory: architecture {saves.architecture!r}: classes must name the dotted "
                f"classes the formula holds for (transformers.BertModel), got {saves.classes!r}"
            )
    return problems


def check_plugins(host: PluginHost | None = None, *, references: bool = True) -> dict[str, list[str]]:
    """`check_plugin` for every plugin ``host`` (default: archzoo's) loads or failed to load, by name."""
    host = host or get_host()
    results: dict[str, list[str]] = {}
    installed = _entry_points()
    for name in host.plugins:
        target = name if name in installed else host.pm.get_plugin(name)
        results[name] = check_plugin(target, references=references)
    for problem in host.problems:
        if problem.plugin not in results:
            results[problem.plugin] = [problem.reason]
    return results


def _hook_problems(module: object) -> list[str]:
    specs = {n for n in dir(hookspecs) if n.startswith("register_")}
    problems = []
    for attr in sorted(specs):
        fn = getattr(module, attr, None)
        if callable(fn) and not hasattr(fn, "archzoo_impl"):
            problems.append(f"{attr} is defined without @archzoo.hookimpl, so archzoo never calls it; decorate it")
    return problems


def _architecture_problems(arch: Architecture, references: bool) -> list[str]:
    from pydantic import ValidationError

    problems = []
    for key, info in arch.config_model.model_fields.items():
        if info.is_required():
            problems.append(f"config key {key!r} has no default; give it one (`archzoo count {arch.name}` uses them)")
        if not (info.description or "").strip():
            problems.append(
                f"config key {key!r} has no description; give Field(..., description=...) (`archzoo plugins` "
                "and the site show it)"
            )
    if problems and any(info.is_required() for info in arch.config_model.model_fields.values()):
        return problems  # no default configuration to go on with
    try:
        config = arch.config_model()
    except ValidationError as exc:
        lines = describe_validation_error(exc, "defaults", arch.config_model)
        return [*problems, "the default configuration does not validate: " + "; ".join(lines)]
    except Exception as exc:
        return [*problems, f"the default configuration raised {type(exc).__name__}: {exc}"]
    try:
        report = make_report(arch, config)
    except ArchzooError as exc:
        return [*problems, f"the default configuration does not build: {exc}"]
    if arch.reference is None:
        return problems
    try:
        ref = call_plugin(arch.plugin, "reference", arch.reference, config)
    except ArchzooError as exc:
        return [*problems, str(exc)]
    if ref is None:
        return problems
    if not isinstance(ref, Reference):
        return [*problems, f"reference() returned {type(ref).__name__}, expected an archzoo.Reference or None"]
    if references and ref.library in ("torch", "transformers", "archzoo"):
        problems += _reference_problems(arch, ref, report.root)
    return problems


def _reference_problems(arch: Architecture, ref: Reference, root: Block) -> list[str]:

    needed = ["torch"] + (["transformers"] if ref.library == "transformers" else [])
    if not all(importlib.util.find_spec(m) is not None for m in needed):
        return []  # nothing to build it with here: `archzoo verify` and the conformance test say what to install
    try:
        model = build_model(ref)
    except Exception as exc:
        return [
            f"the reference of the default configuration, {ref.target}, does not build: {type(exc).__name__}: {exc}"
        ]
    try:
        comparison = compare_blocks(root, model, arch.plugin or arch.name)
    except ArchzooError as exc:
        return [str(exc)]
    problems = []
    params = root.params.evaluate()
    if comparison.expected_total != params:
        problems.append(
            f"the default configuration counts {params:,} parameters, its reference {ref.target} holds "
            f"{comparison.expected_total:,} ({params - comparison.expected_total:+,})"
        )
    for row in comparison.blocks:
        if row.missing:
            problems.append(f"block {row.path!r} names submodules {ref.target} lacks: {', '.join(row.missing)}")
        elif not row.ok:
            problems.append(
                f"block {row.path!r} counts {row.got:,} parameters, {' + '.join(m or '(model)' for m in row.modules)} "
                f"of {ref.target} "
                f"holds {row.expected:,}"
            )
    return problems


def _reader_problems(host: PluginHost, model_type: str, reader: Any) -> list[str]:
    from .errors import HFConfigError
    from .hf_config import hf_table, load_hf_config

    table = hf_table(reader.reader)
    if table is None:
        return []  # a reader without a table reads what it likes; only its results are checked, when used
    arch = host.architecture(reader.architecture)
    fields = set(arch.config_model.model_fields)
    problems = []
    for hf_key, key in table.read.items():
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) and key not in fields:
            problems.append(f"its table reads {hf_key!r} as {key!r}, which is no key of architecture {arch.name!r}")
    for model_class, values in table.classes.items():
        if unknown := sorted(set(values) - fields):
            problems.append(f"class {model_class} sets {', '.join(unknown)}, no key of architecture {arch.name!r}")
    problems += _transformers_problems(table)
    if table.defaults_unrunnable:
        return problems  # the table says why its class's defaults cannot be run; its plugin's tests prove it
    with tempfile.TemporaryDirectory(prefix="archzoo-check-") as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
        for model_class in table.classes:
            try:
                load_hf_config(path, host, hf_class=model_class)
            except (HFConfigError, ArchzooError) as exc:
                text = "; ".join(str(exc).replace(str(path), "a config.json of the table's defaults").splitlines())
                problems.append(f"class {model_class}: {text}")
    return problems


def _transformers_problems(table: Any) -> list[str]:
    """With transformers installed: the table's configuration class exists and has its model type, and every
    model class the table counts exists (the table's figures are checked by the plugin's own tests)."""
    if importlib.util.find_spec("transformers") is None:
        return []
    import transformers

    config_class = getattr(transformers, table.config_class, None)
    if config_class is None:
        return [
            f"its table names config class {table.config_class}, which transformers {transformers.__version__} lacks"
        ]
    problems = []
    if getattr(config_class, "model_type", None) != table.model_type:
        problems.append(
            f"its table names config class {table.config_class}, whose model_type is "
            f"{getattr(config_class, 'model_type', None)!r}, not {table.model_type!r}"
        )
    missing = sorted(c for c in table.classes if getattr(transformers, c, None) is None)
    if missing:
        problems.append(
            f"its table counts model classes transformers {transformers.__version__} lacks: {', '.join(missing)}"
        )
    return problems


def _registry_problems(host: PluginHost, folders: list[Path]) -> list[str]:
    if not folders:
        return []
    from .registry import load_registry

    registry = load_registry(folders, host)
    return [f"registry entry {problem}" for problem in [*registry.problems, *registry.plugin_problems]]


# ---- pytest fixtures (this module is the pytest11 plugin ``archzoo``) ----------------------------------


@contextlib.contextmanager
def _process_host(host: PluginHost) -> Iterator[PluginHost]:
    """``host`` as archzoo's process-wide host while the block runs; the previous one afterwards."""
    from . import host as host_module

    previous = host_module._HOST
    host_module.reset_host(host)
    try:
        yield host
    finally:
        host_module.reset_host(previous)


try:
    import pytest as _pytest
except ImportError:  # pragma: no cover - the checks above work without pytest; the fixtures need it
    _pytest = None  # type: ignore[assignment]

if _pytest is not None:

    @_pytest.fixture
    def archzoo_host() -> Iterator[PluginHost]:
        """A plugin host freshly loaded from the installed entry points (honouring ARCHZOO_PLUGINS), made
        archzoo's process-wide host for the test."""
        with _process_host(PluginHost(strict=False).load()) as host:
            yield host

    @_pytest.fixture
    def archzoo_architecture(archzoo_host: PluginHost) -> Callable[[str], Architecture]:
        """A factory: ``archzoo_architecture("tiny")`` is the installed architecture of that name (an unknown
        name fails, naming the closest ones)."""
        return archzoo_host.architecture

    @_pytest.fixture
    def archzoo_config(archzoo_host: PluginHost) -> Callable[..., ArchConfig]:
        """A factory: ``archzoo_config("tiny", d_model=32)`` is that architecture's configuration with those
        keys (the others at their defaults), validated as ``archzoo count --set`` validates them."""

        def make(name: str, /, **values: Any) -> ArchConfig:
            return parse_config(archzoo_host.architecture(name), values, source="archzoo_config")

        return make
