"""A report as JSON (the ``archzoo.report/1`` schema): its figures, formulas, memory and block tree, exported.

`archzoo.report` computes; this module only writes down what a `Report` computed, so that the memory figures
(`archzoo.memory`) and the report's computation do not import each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .blocks import BlockVisit
from .figures import check_units, in_units
from .formula import Poly
from .memory import memory_dict

if TYPE_CHECKING:
    from .report import Report

__all__ = ["SCHEMA", "blocks_dict", "flops_dict", "report_dict", "visit_dict"]

SCHEMA = "archzoo.report/1"


def _formula(poly: Poly) -> dict[str, str]:
    return {"text": poly.text(), "latex": poly.latex(), "substituted": poly.text(substitute=True)}


def visit_dict(report: Report, visit: BlockVisit, units: str = "flops") -> dict[str, Any]:
    """One block of the tree as JSON, without its children: ``params`` for all its stored copies and
    ``params_each`` for one, ``flops`` (and ``training_flops``) for all its executed copies (`BlockVisit`),
    in ``units``."""
    block = visit.block
    n = report.seq_len
    out: dict[str, Any] = {
        "name": block.name,
        "path": visit.path,
        "kind": block.kind,
        "description": block.description,
        "stored": visit.stored.evaluate(),
        "executed": visit.executed.evaluate(),
        "params": visit.params.evaluate(),
        "params_each": block.params.evaluate(),
        "approx": visit.approx.evaluate(),
        "flops": in_units(visit.flops, units).evaluate(N=n),
        "training_flops": in_units(visit.training_flops, units).evaluate(N=n),
        "formula": _formula(visit.params),
        "formula_each": _formula(block.params),
        "flops_formula": _formula(in_units(visit.flops, units)),
    }
    if report.generative:
        out["prefill_flops"] = in_units(visit.prefill_flops, units).evaluate(N=n)
        out["decode_flops"] = in_units(report.decode_of(visit, n), units).evaluate(N=n, S=n)
    if block.repeat is not None:
        out["repeat"] = block.repeat.evaluate()
        out["shared"] = block.shared
        if block.copies is not None:
            out["copies"] = block.copies.evaluate()
    if block.tied_to:
        out["tied_to"] = block.tied_to
    return out


def blocks_dict(report: Report, units: str = "flops") -> dict[str, Any]:
    """The block tree as nested JSON objects, each with its ``children``, read off `Block.visits`."""
    open_: list[dict[str, Any]] = []  # the blocks above the current one, by depth
    for visit in report.root.visits():
        out = {**visit_dict(report, visit, units), "children": []}
        del open_[visit.depth :]
        if open_:
            open_[-1]["children"].append(out)
        open_.append(out)
    return open_[0]


def flops_dict(report: Report, units: str = "flops") -> dict[str, Any]:
    """The ``flops`` section of `to_dict`, in ``units`` (``flops`` or ``macs``: every figure and formula
    halved; ``units`` says which)."""
    n = report.seq_len
    rest = report.root.flops - report.root.attention_flops

    def figure(poly: Poly, **free: int) -> int:
        return in_units(poly, units).evaluate(N=n, **free)

    prefill = report.root.prefill_flops if report.generative else None
    decode = report.decode_formula(n) if report.generative else None
    return {
        "units": units,
        "seq_len": n,
        "forward": figure(report.root.flops),
        "attention": figure(report.root.attention_flops),
        "other": figure(rest),
        "formula": _formula(in_units(report.root.flops, units)),
        "attention_formula": _formula(in_units(report.root.attention_flops, units)),
        "other_formula": _formula(in_units(rest, units)),
        "complexity": report.root.flops.complexity(),
        "attention_overtakes_at": report.attention_overtakes_at,
        "backward": figure(report.root.backward_flops),
        "training": figure(report.training_formula),
        "training_formula": _formula(in_units(report.training_formula, units)),
        "training_approximations": [a.to_dict(units) for a in report.approximations()],
        "prefill": None if prefill is None else figure(prefill),
        "prefill_formula": None if prefill is None else _formula(in_units(prefill, units)),
        "decode": None if decode is None else figure(decode, S=n),
        "decode_formula": None if decode is None else _formula(in_units(decode, units)),
        # the sliding windows the decode step is past (its layers there read W keys, not N); empty within them
        "decode_windows": report.decode_windows(n) if decode is not None else [],
        "generation_note": report.generation_note,
    }


def report_dict(report: Report, units: str = "flops") -> dict[str, Any]:
    """The report as JSON (``archzoo.report/1``); FLOP figures in ``units`` (``flops`` or ``macs``)."""
    check_units(units)
    kv = report.kv_cache_elements_per_token
    cross_kv = report.cross_kv_cache_elements_per_source_token
    return {
        "schema": SCHEMA,
        "units": units,
        "architecture": report.architecture.name,
        "config": report.config.model_dump(mode="json"),
        "params": {
            "total": report.params,
            "approx": report.approx,
            "non_embedding": report.non_embedding,
            "embedding": report.embedding_params,
            "active": report.active_params,
            "formula": _formula(report.root.params),
            "active_formula": _formula(report.active_formula),
            "approx_formula": _formula(report.root.approx),
        },
        "flops": flops_dict(report, units),
        "memory": {
            "weights_bytes": report.weight_bytes(),
            "kv_cache_bytes_per_token": ({"fp32": 4 * kv, "fp16": 2 * kv} if kv else None),
            "kv_cache_formula": _formula(report.root.kv_cache) if kv else None,
            "kv_cache": {
                "elements_per_token": kv,
                "cross_elements_per_source_token": cross_kv,
                "cross_formula": _formula(report.root.cross_kv_cache) if cross_kv else None,
            },
            "training_bytes_adam": report.training_bytes_adam(),
            "step": memory_dict(report),  # activations (eager, fused, recomputed), Korthikanti, both peaks
        },
        "symbols": report.symbols(),
        "blocks": blocks_dict(report, units),
    }
