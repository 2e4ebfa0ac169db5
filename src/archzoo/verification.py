"""What comparing a block tree with a reference found (`Verification`), and how it reads as text.

`archzoo verify` (a reference module) and `archzoo checkpoint` (a checkpoint's tensors) both give one: the
totals, one `BlockCheck` per mapped block (`archzoo.block_match`), the blocks left unmapped, and notes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .block_match import BlockCheck

__all__ = ["Verification", "block_table"]


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
