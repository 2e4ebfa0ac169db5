"""Matching a block tree to named tensors: a module's parameters, a checkpoint's tensors, autograd's saved tensors.

`verify` (a reference module), `checkpoint` (a safetensors file's tensors) and `memory` (the tensors autograd
saves, per module) all ask one question of a block tree: which named tensors does each block's `Block.modules`
hold, summed once, copy by copy. This module answers it, and nothing else; each caller says what the figures are.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Container, Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Protocol

from .blocks import Block
from .errors import PluginError
from .formula import Poly

__all__ = [
    "BlockCheck",
    "BlockComparison",
    "blocks_found",
    "compare_blocks",
    "compare_blocks_to_tensors",
    "find_block",
    "outermost",
    "unmapped_tensors",
]


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
    ``i`` is ``name.i``; a shared repeat's one layer is ``name``; copy ``i`` of a run of a `layer_runs` stack
    is ``name.p`` for ``p`` its ``positions[i]``, the runs sharing one list); the block directly under `experts`
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
                            # a run of a layer_runs stack: copy i is the stack's layer positions[i]
                            position = repeat_of.positions[i] if repeat_of.positions else i
                            index = (str(position), "<i>") if not repeat_of.shared else ("", "")
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


def blocks_found(comparison: BlockComparison) -> int:
    """How many blocks find every submodule they name among the tensors."""
    return sum(1 for row in comparison.blocks if not row.missing)


def unmapped_tensors(names: list[str], comparison: BlockComparison) -> list[str]:
    """The tensor names no block's submodule holds: each submodule covers a range of the sorted names (itself,
    and the names under it), found by binary search, so the time is n log n in the tensors, not their number
    times the blocks'."""
    order = sorted(set(names))
    edges = [0] * (len(order) + 1)  # +1 where a covered range starts, -1 where it ends

    def cover(low: str, high: str | None) -> None:
        start, stop = bisect_left(order, low), len(order) if high is None else bisect_left(order, high)
        if start < stop:
            edges[start] += 1
            edges[stop] -= 1

    for row in comparison.blocks:
        for module in row.modules:
            if "<i>" in module:  # every copy: the names that start with the text before the index
                prefix = module.split("<i>")[0]
                cover(prefix, _after(prefix))
            elif module:
                cover(module, module + "\0")  # the submodule's own tensor, then the ones under it
                cover(module + ".", module + "/")  # '/' follows '.': the names that start with 'module.'
    covered, inside = set(), 0
    for name, edge in zip(order, edges, strict=False):
        inside += edge
        if inside:
            covered.add(name)
    return [name for name in names if name not in covered]


def _after(prefix: str) -> str | None:
    """The first text after every text that starts with ``prefix`` (None: no bound, for "" or a last
    character that cannot be raised)."""
    if not prefix or prefix[-1] == chr(sys.maxunicode):
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def find_block(root: Block, path: str) -> Block | None:
    """The block at ``path`` (``bert.layers.layer``) in ``root``'s one walk, or None."""
    return next((visit.block for visit in root.visits() if visit.path == path), None)
