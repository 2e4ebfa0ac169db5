"""Verify a registry entry against its real implementation: the total and every mapped block, to the parameter.

The reference module (the entry's own ``reference:``, else the architecture's reference for its
configuration) is built on the meta device, so no memory and no weights. Each parameter is counted once,
under the first name ``model.named_parameters()`` gives it (a tied weight belongs where PyTorch reports
it, as in ``sum(p.numel() for p in model.parameters())``). A block's expected count is the sum over the
submodules its `Block.modules` names; blocks without a mapping are listed as such, never taken as a match.
A timm reference whose count is pinned in the entry (``measured:``) is compared by its total only, since
timm cannot be installed where archzoo is tested.

Needs the ``verify`` extra (torch, and transformers for its models); torch is imported inside functions
only, so nothing on archzoo's lookup path pays for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .architecture import Reference
from .block_match import BlockCheck, BlockComparison, compare_blocks, compare_blocks_to_tensors
from .errors import ArchzooError, RegistryError
from .host import PluginHost, call_plugin
from .reference import build_reference
from .registry import Entry, EntryReference, find_model, load_registry
from .verification import Verification, block_table

__all__ = [
    "INSTALL_HINT",
    "BlockCheck",
    "BlockComparison",
    "Verification",
    "block_table",
    "compare_blocks",
    "compare_blocks_to_tensors",
    "verify",
    "verify_target",
]

#: How to get what `verify` needs; torch first, so that pip does not pull a multi-GB CUDA build.
INSTALL_HINT = (
    "install the verify extra: `pip install torch==2.13.0` (the CPU build), then `pip install 'archzoo[verify]'`"
)


# ---- verifying ----------------------------------------------------------------------------------


def verify_target(
    target: str,
    registry_paths: Iterable[Path | str] | None = None,
    host: PluginHost | None = None,
    *,
    plugin_registries: Iterable[str] = (),
) -> Verification:
    """Verify a model id (looked up in ``registry_paths`` and the folders of the plugins named in
    ``plugin_registries``, as `find_model` does) or a YAML file (a path ending in .yaml/.yml, or any
    existing file)."""
    path = Path(target)
    if target.endswith((".yaml", ".yml")) or path.is_file():
        return verify(_load_file(path, host))
    return verify(find_model(target, registry_paths, host, plugin_registries=plugin_registries))


def _load_file(path: Path, host: PluginHost | None) -> Entry:
    registry = load_registry([path], host)
    registry.raise_for_problems()
    entries = list(registry)
    if len(entries) != 1:  # a folder given as a file cannot get here; an empty result means problems
        raise RegistryError(f"{path}: no registry entry could be read from this file")
    return entries[0]


def verify(entry: Entry) -> Verification:
    """Build ``entry``'s reference on the meta device and compare it with archzoo's count, block by block."""
    arch = entry.architecture
    plugin_ref = (
        call_plugin(arch.plugin or arch.name, "reference", arch.reference, entry.config)
        if arch.reference is not None
        else None
    )
    own = entry.spec.reference
    if own is not None and own.library == "timm":
        return _verify_timm(entry, own)
    if own is not None:
        ref = own.to_reference()
        source = "entry"
    elif plugin_ref is not None:
        ref = plugin_ref
        source = "plugin"
    else:
        raise ArchzooError(
            f"{entry.path}: no reference implementation to verify {entry.id!r} against: the entry has no "
            f"'reference:' and the {arch.name} plugin gives none for this configuration; if a torch or "
            "transformers class builds it, name that class in 'reference:' (`archzoo schema` shows the keys), "
            f"otherwise check the count against its formula in `archzoo show {entry.id}`"
        )
    _require_libraries(ref)
    model = _build(entry, ref)
    root = entry.report.root
    comparison = compare_blocks(root, model, arch.plugin or arch.name)
    notes: list[str] = []
    rows, unmapped = list(comparison.blocks), list(comparison.unmapped)
    mapped_for = plugin_ref.target if plugin_ref is not None else None
    if mapped_for != ref.target:
        # The blocks are mapped to the plugin's class; another class may name its submodules the same way
        # (RobertaModel and BertModel do), and is compared block by block only if every name is found.
        mapping = (
            f"the {arch.name} plugin maps its blocks to the submodules of {mapped_for}"
            if mapped_for
            else f"the {arch.name} plugin names no reference class for this configuration, and maps its blocks "
            "as for the classes it names for others"
        )
        if any(row.missing for row in rows):
            notes.append(f"{mapping}; {ref.target} lacks some of them, so only the total is compared")
            rows, unmapped = [], [(path, "") for path, _, _ in root.walk()]
        else:
            notes.append(f"{mapping}; {ref.target} has every one of them")
    return Verification(
        model_id=entry.id,
        path=str(entry.path),
        target=ref.target,
        how=f"{_call_text(ref)} built on the meta device, "
        + (
            "as the entry's 'reference:' gives it"
            if source == "entry"
            else f"as the {arch.name} plugin gives it for this configuration"
        ),
        expected_total=comparison.expected_total,
        got_total=entry.params,
        blocks=tuple(rows),
        unmapped=tuple(unmapped),
        notes=tuple(notes),
        reference=_reference_json(ref, source),
    )


def _reference_json(ref: Reference, source: str) -> dict[str, Any]:
    """The reference as JSON; ``source`` is ``entry`` (its 'reference:') or ``plugin``."""
    return {
        "library": ref.library,
        "config_class": ref.config_class,
        "kwargs": ref.kwargs,
        "model_kwargs": ref.model_kwargs,
        "source": source,
        "code": ref.code(),
    }


def _call_text(ref: Reference) -> str:
    """``transformers.BertModel(BertConfig(vocab_size=28996))``: the call that builds the reference."""
    args = ", ".join(f"{k}={v!r}" for k, v in ref.kwargs.items())
    extra = "".join(f", {k}={v!r}" for k, v in ref.model_kwargs.items())
    if ref.config_class:
        return f"{ref.target}({ref.config_class.rpartition('.')[2]}({args}){extra})"
    return f"{ref.target}({args})"


def _verify_timm(entry: Entry, own: EntryReference) -> Verification:
    if own.measured is None:
        raise ArchzooError(
            f"{entry.path}:{entry.line_of('reference')}: reference: {own.target} is a timm model, and timm (which "
            "needs torchvision) is not something archzoo verify builds; measure the count once with timm and pin "
            "it as 'measured:' with 'measured_with:' naming the timm version"
        )
    ref = Reference(library="timm", target=own.target, kwargs=own.kwargs)
    with_what = own.measured_with or "an unnamed timm version"
    return Verification(
        model_id=entry.id,
        path=str(entry.path),
        target=own.target,
        how=f"timm is not installable here (it needs torchvision), so the count pinned in the entry, "
        f"{own.measured:,}, measured with {with_what}, stands in for building {own.target}",
        expected_total=own.measured,
        got_total=entry.params,
        pinned=True,
        unmapped=tuple((path, "") for path, _, _ in entry.report.root.walk()),
        notes=("blocks are not compared: a pinned figure is a total only",),
        reference={**_reference_json(ref, "entry"), "measured": own.measured, "measured_with": own.measured_with},
    )


def _require_libraries(ref: Reference) -> None:
    """Raise the install message when torch, or transformers for a transformers reference, cannot be imported."""
    needed = [("torch", "PyTorch")] + (
        [("transformers", "Hugging Face transformers")] if ref.library == "transformers" else []
    )
    for module, name in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            raise ArchzooError(
                f"archzoo verify builds {ref.target} with {name}, which is not installed; {INSTALL_HINT}"
            ) from None


def _build(entry: Entry, ref: Reference):
    import warnings

    try:
        with warnings.catch_warnings():  # construction notes (torch's nested-tensor fast path) are not findings
            warnings.simplefilter("ignore")
            return build_reference(ref)
    except (ImportError, AttributeError) as exc:
        raise ArchzooError(
            f"{entry.path}: reference: cannot import {ref.target} ({exc}); check the name, or "
            f"upgrade the library that should provide it"
        ) from None
    except Exception as exc:  # a reference's arguments are the user's (or a plugin's) to fix
        raise ArchzooError(
            f"{entry.path}: reference: building {_call_text(ref)} failed: "
            f"{type(exc).__name__}: {exc}; correct the reference's kwargs"
        ) from None
