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
from bisect import bisect_left
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

from .architecture import Reference
from .blocks import Block
from .errors import ArchzooError, PluginError, RegistryError
from .formula import Poly
from .host import PluginHost, call_plugin
from .registry import Entry, EntryReference, find_model, load_registry

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


# ---- the result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockCheck:
    """One mapped block: what the reference's submodules hold against archzoo's count.

    For a block inside a repeated layer every copy is checked; ``expected`` is the first copy's count
    and ``mismatched_copies`` names each other copy that holds a different one (archzoo's copies are all
    alike). ``missing`` lists submodule names the reference model does not have (a wrong mapping).
    """

    path: str
    modules: tuple[str, ...]  # as resolved for the first copy, a repeated index written as <i>
    expected: int | None
    got: int
    formula: str
    copies: int = 1
    mismatched_copies: tuple[tuple[str, int], ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def difference(self) -> int | None:
        return None if self.expected is None else self.got - self.expected

    @property
    def ok(self) -> bool:
        return not self.missing and not self.mismatched_copies and self.expected == self.got

    def to_json(self) -> dict[str, Any]:
        return {
            "block": self.path,
            "modules": list(self.modules),
            "copies": self.copies,
            "expected": self.expected,
            "got": self.got,
            "difference": self.difference,
            "match": self.ok,
            "formula": self.formula,
            "mismatched_copies": [{"module": m, "expected": n} for m, n in self.mismatched_copies],
            "missing_modules": list(self.missing),
        }


@dataclass(frozen=True)
class Verification:
    """What `verify` found for one entry."""

    model_id: str
    path: str
    target: str
    how: str  # how the reference was obtained, in words
    expected_total: int
    got_total: int
    blocks: tuple[BlockCheck, ...] = ()
    unmapped: tuple[tuple[str, str], ...] = ()  # (block path, the mapped block whose row includes it, or "")
    notes: tuple[str, ...] = ()
    reference: dict[str, Any] = field(default_factory=dict)
    pinned: bool = False  # the expected total is a count pinned in the entry, not built here

    @property
    def total_ok(self) -> bool:
        return self.expected_total == self.got_total

    @property
    def ok(self) -> bool:
        return self.total_ok and all(row.ok for row in self.blocks)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.model_id,
            "path": self.path,
            "reference": {"target": self.target, "how": self.how, "pinned": self.pinned, **self.reference},
            "total": {
                "expected": self.expected_total,
                "got": self.got_total,
                "difference": self.got_total - self.expected_total,
                "match": self.total_ok,
            },
            "blocks": [row.to_json() for row in self.blocks],
            "unmapped": [{"block": path, "within": within or None} for path, within in self.unmapped],
            "notes": list(self.notes),
            "ok": self.ok,
        }

    def render(self) -> str:
        """Terminal text: the reference, the total, a table of the mapped blocks, what is unmapped, the verdict."""
        lines = [f"{self.model_id}: {self.path}", f"reference: {self.how}"]
        lines.append(
            f"total: reference {self.expected_total:,}, archzoo {self.got_total:,}: "
            + ("match" if self.total_ok else f"differs by {self.got_total - self.expected_total:+,}")
        )
        lines += [f"note: {note}" for note in self.notes]
        if self.blocks:
            lines += ["", *block_table(self.blocks)]
            for row in self.blocks:
                for module, count in row.mismatched_copies:
                    lines.append(
                        f"  {row.path}: copy {module} holds {count:,}, not {row.expected:,} like the "
                        f"first; archzoo counts {row.got:,} for each ({row.got - count:+,})"
                    )
                if row.missing:
                    shown = ", ".join(row.missing[:3]) + (
                        f" and {len(row.missing) - 3:,} more" if len(row.missing) > 3 else ""
                    )
                    lines.append(f"  {row.path}: the reference has no submodule {shown}")
        if self.unmapped and not self.blocks:
            lines.append(f"blocks: none compared ({len(self.unmapped)} blocks not mapped)")
        elif self.unmapped:
            lines += ["", "not mapped to a submodule (checked only inside the block named):"]
            groups: dict[str, list[str]] = {}
            for path, within in self.unmapped:
                groups.setdefault(within, []).append(path[len(within) + 1 :] if within else path)
            for within, names in groups.items():
                lines.append(f"  {within or 'not inside any mapped block'}: {', '.join(names)}")
        failed = [row for row in self.blocks if not row.ok]
        if self.ok:
            checked = f"the total and {len(self.blocks)} blocks agree" if self.blocks else "the total agrees"
            verdict = f"match: {checked} with {self.target}"
        else:
            verdict = f"DIFFERS from {self.target}: " + ", ".join(
                (["the total"] if not self.total_ok else []) + [row.path for row in failed]
            )
        lines += ["", verdict]
        return "\n".join(lines)


def _modules_text(modules: tuple[str, ...]) -> str:
    """``encoder.layer.<i>.{attention.self, attention.output.dense}``; the model root is ``(model)``."""
    if len(modules) == 1:
        return modules[0] or "(model)"
    split = [m.split(".") for m in modules]
    common = 0
    while all(len(parts) > common + 1 for parts in split) and len({parts[common] for parts in split}) == 1:
        common += 1
    if not common:
        return " + ".join(m or "(model)" for m in modules)
    prefix = ".".join(split[0][:common])
    return f"{prefix}.{{{', '.join('.'.join(parts[common:]) for parts in split)}}}"


def block_table(rows: Iterable[BlockCheck]) -> list[str]:
    """The rows as aligned text lines under a header: block, reference module, reference, archzoo,
    difference, formula."""
    header = ("block", "reference module", "reference", "archzoo", "difference", "formula")
    body = []
    for row in rows:
        label = row.path + (f" (each of {row.copies})" if row.copies > 1 else "")
        expected = "missing" if row.expected is None else f"{row.expected:,}"
        difference = "match" if row.ok else ("-" if row.difference is None else f"{row.difference:+,}")
        if row.ok is False and row.difference == 0:  # equal first copy, another copy or a module is off
            difference = "copies differ" if row.mismatched_copies else "missing module"
        body.append((label, _modules_text(row.modules), expected, f"{row.got:,}", difference, row.formula))
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(5)]
    right = (False, False, True, True, True)

    def line(cells: tuple[str, ...]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=False)]
        return "  ".join(parts + [cells[5]]).rstrip()

    return [line(header), *(line(r) for r in body)]


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

    from .reference import build_reference

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


@dataclass(frozen=True)
class BlockComparison:
    """A block tree against a reference module: the module's total, one `BlockCheck` per mapped block, and
    the blocks left unmapped, each with the mapped block whose row includes it (or "")."""

    expected_total: int
    blocks: tuple[BlockCheck, ...]
    unmapped: tuple[tuple[str, str], ...]

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.blocks)


def compare_blocks(root: Block, model: Any, plugin: str) -> BlockComparison:
    """Compare every block of ``root`` that names its submodules (`Block.modules`) with the parameters those
    submodules of ``model`` (a torch module, built on the meta device) hold, each tensor counted once where
    ``named_parameters()`` first reports it. A repeated block that maps to more than one submodule is the
    plugin's mistake: a `PluginError` naming ``plugin``."""
    counts, names = _parameter_counts(model)
    return _compare(root, counts, names, plugin)


def compare_blocks_to_tensors(root: Block, tensors: Iterable[tuple[str, int]], plugin: str) -> BlockComparison:
    """`compare_blocks` against named tensors (a checkpoint's ``(name, elements)``) instead of a module: a
    block's submodule holds the tensors whose names start with its name."""
    counts = _TensorCounts(tensors)
    return _compare(root, counts, counts, plugin)


class _Counts(Protocol):
    def get(self, key: str, default: int, /) -> int: ...


class _TensorCounts:
    """Elements under each dotted name of a set of named tensors, as `_prefix_counts` gives them, without
    writing out every prefix of every name: the names are sorted once, and the tensors under ``name`` (itself,
    and those whose names start with ``name.``) are found by binary search and summed from running totals.
    A checkpoint's names are anyone's text; a name of a million dots costs its length here, not its length
    squared. ``name in counts`` says whether any tensor is, or is under, ``name`` ("" is not a name)."""

    def __init__(self, tensors: Iterable[tuple[str, int]]) -> None:
        merged: dict[str, int] = {}
        for name, n in tensors:
            merged[name] = merged.get(name, 0) + n
        self._names = sorted(merged)
        self._totals = list(accumulate((merged[name] for name in self._names), initial=0))

    def _held(self, name: str) -> tuple[int, int]:
        """(tensors, elements) at and under ``name``."""
        own = bisect_left(self._names, name)
        exact = own < len(self._names) and self._names[own] == name
        start, stop = bisect_left(self._names, name + "."), bisect_left(self._names, name + "/")  # '/' follows '.'
        elements = self._totals[stop] - self._totals[start]
        if exact:
            elements += self._totals[own + 1] - self._totals[own]
        return int(exact) + stop - start, elements

    def get(self, name: str, default: int = 0, /) -> int:
        if name == "":
            return self._totals[-1]
        tensors, elements = self._held(name)
        return elements if tensors else default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name != "" and self._held(name)[0] > 0


def _compare(root: Block, counts: _Counts, names: Container[str], plugin: str) -> BlockComparison:
    rows: list[BlockCheck] = []
    unmapped: list[tuple[str, str]] = []
    _check_tree(root, counts, names, rows, unmapped, plugin)
    return BlockComparison(counts.get("", 0), tuple(rows), tuple(unmapped))


def _parameter_counts(model: Any) -> tuple[dict[str, int], set[str]]:
    """Parameters under every dotted prefix (``""`` is the whole model), each tensor counted once where
    ``named_parameters()`` first reports it; and every submodule and parameter name."""
    counts = _prefix_counts((name, p.numel()) for name, p in model.named_parameters())
    names = {name for name, _ in model.named_modules()} | (set(counts) - {""})
    return counts, names


def _prefix_counts(tensors: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Elements under every dotted prefix of the tensors' names (``""``: all of them)."""
    counts: dict[str, int] = {"": 0}
    for name, n in tensors:
        counts[""] += n
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            counts[prefix] = counts.get(prefix, 0) + n
    return counts


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _check_tree(
    root: Block,
    counts: _Counts,
    names: Container[str],
    rows: list[BlockCheck],
    unmapped: list[tuple[str, str]],
    plugin: str,
) -> None:
    """Check every block of ``root``, in the order of its one walk (`Block.visits`).

    Each block's names are relative to the copies of the blocks above it: ``bases``, each a (concrete
    prefix, prefix with repeated indices written ``<i>``), or None when an unmapped repeated block above
    makes them unknown. The block directly under a repeat names the ``nn.ModuleList`` of its copies (copy
    ``i`` is ``name.i``; a shared repeat's one layer is ``name``); the block directly under `experts`
    names the one module holding all its copies, which is compared with all of them, and the blocks
    inside an expert are not compared (transformers fuses the experts' projections into one tensor each).
    """
    # by depth, for the blocks above the current one: (block, bases for its children, nearest mapped path)
    above: list[tuple[Block, list[tuple[str, str]] | None, str]] = []
    for visit in root.visits():
        block, path = visit.block, visit.path
        del above[visit.depth :]
        if above:
            parent, bases, within = above[-1]
        else:
            parent, bases, within = None, [("", "")], ""
        repeat_of = parent if parent is not None and parent.repeat is not None else None
        modules = block.modules  # a tuple of str: the host checks every block a plugin builds
        child_bases = bases
        if modules and bases is not None:
            copies: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # (concrete names, display names) per copy
            got = block.params
            if repeat_of is not None:
                if len(modules) != 1:
                    raise PluginError(
                        f"plugin {plugin!r}: repeated block {path!r} maps to {len(modules)} "
                        "submodules; a repeated block names the one nn.ModuleList that holds its copies"
                    )
                stored = repeat_of.stored_factor()  # the sets of weights the ModuleList holds
                if repeat_of.copies is not None:  # experts: one module holds them all
                    got = stored * block.params
                    copies = [((_join(base, modules[0]),), (_join(shown, modules[0]),)) for base, shown in bases]
                    child_bases = None
                else:
                    for base, shown in bases:
                        for i in range(stored.evaluate()):
                            index = (str(i), "<i>") if not repeat_of.shared else ("", "")
                            concrete = _join(base, modules[0], index[0])
                            copies.append(((concrete,), (_join(shown, modules[0], index[1]),)))
                            if concrete not in names:
                                break  # the first copy the reference lacks is reported; the count comes from
                                # a configuration, so the copies after it are not enumerated one by one
                    child_bases = [(names_[0], shown_[0]) for names_, shown_ in copies]
            else:
                for base, shown in bases:
                    copies.append((tuple(_join(base, m) for m in modules), tuple(_join(shown, m) for m in modules)))
            rows.append(_check_block(block, got, path, copies, counts, names))
            within = path
        else:
            unmapped.append((path, within))
            if repeat_of is not None and not repeat_of.shared:
                child_bases = None  # the copies' names are unknown without the ModuleList's
        above.append((block, child_bases, within))


def _check_block(
    block: Block,
    params: Poly,
    path: str,
    copies: list[tuple[tuple[str, ...], tuple[str, ...]]],
    counts: _Counts,
    names: Container[str],
) -> BlockCheck:
    """``block``, whose ``params`` are what each of its ``copies`` of reference modules should hold."""
    got = params.evaluate()
    formula = (
        params.text() if not params.is_zero() else (f"0, weight tied to {block.tied_to}" if block.tied_to else "0")
    )
    missing = sorted({m for concrete, _ in copies for m in concrete if m and m not in names})
    found = [(concrete, sum(counts.get(m, 0) for m in outermost(concrete))) for concrete, _ in copies]
    expected = found[0][1] if found and not missing else None
    mismatched = tuple((concrete[0], n) for concrete, n in found[1:] if n != found[0][1]) if not missing else ()
    return BlockCheck(
        path=path,
        modules=copies[0][1] if copies else (),
        expected=expected,
        got=got,
        formula=formula,
        copies=len(copies),
        mismatched_copies=mismatched,
        missing=tuple(missing),
    )


def outermost(names: tuple[str, ...]) -> list[str]:
    """The names not inside another of them, so a parameter is summed once however the names overlap."""
    return [n for n in dict.fromkeys(names) if not any(o != n and (o == "" or n.startswith(o + ".")) for o in names)]
