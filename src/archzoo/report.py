"""Reports: a model's block tree evaluated into counts, FLOPs and memory, with the formulas behind them.

`make_report` is the one place a configuration becomes numbers; the CLI, the registry and the site
all read `Report`. Its `to_dict` is the documented JSON schema (``archzoo.report/1``).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from dataclasses import dataclass
from typing import Any

from .architecture import ArchConfig, Architecture
from .blocks import Block
from .formula import Poly

__all__ = ["Report", "make_report", "DTYPE_BITS", "human_count", "human_bytes", "SCHEMA"]

SCHEMA = "archzoo.report/1"

#: Bits per parameter for the weight sizes a report lists.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "int8": 8, "int4": 4}


def human_count(n: int | float) -> str:
    """``109482240`` -> ``109.5M``; ``1557611200`` -> ``1.56B``; ``999999999`` -> ``1.00B``.

    Rounded once, half up, from the exact value: three significant digits below 10, else one decimal.
    """
    value = Decimal(n)
    if abs(value) >= 10**15:
        return f"{value:.3E}"
    units = (("T", 12), ("B", 9), ("M", 6), ("K", 3))
    for i, (unit, exponent) in enumerate(units):
        scaled = value.scaleb(-exponent)
        if abs(scaled) < 1:
            continue
        digits = Decimal("0.01") if abs(scaled) < 10 else Decimal("0.1")
        shown = scaled.quantize(digits, ROUND_HALF_UP)
        if abs(shown) >= 10 and digits == Decimal("0.01"):  # 9.996 -> 10.0, not 10.00
            shown = scaled.quantize(Decimal("0.1"), ROUND_HALF_UP)
        if abs(shown) >= 1000 and i:  # 999.96M -> 1.00B
            bigger, big_exponent = units[i - 1]
            return f"{value.scaleb(-big_exponent).quantize(Decimal('0.01'), ROUND_HALF_UP)}{bigger}"
        return f"{shown}{unit}"
    return f"{value:.0f}"


def human_bytes(n: float) -> str:
    """Decimal units, as disk and download sizes are quoted: ``437.9 MB``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _formula(poly: Poly) -> dict[str, str]:
    return {"text": poly.text(), "latex": poly.latex(), "substituted": poly.text(substitute=True)}


def attention_overtakes_at(attention: Poly, rest: Poly) -> int | None:
    """The smallest N at which the attention products cost more FLOPs than everything else."""
    if attention.is_zero():
        return None
    a = attention.evaluate(N=1)  # attention terms are a N^2 (self and cross attention)
    b = rest.part("N", 1).evaluate(N=1)
    c = rest.part("N", 0).evaluate(N=1)
    if attention.degree_in("N") != 2 or rest.degree_in("N") > 1 or a <= 0:
        return None
    n = max(1, math.floor((b + math.sqrt(b * b + 4 * a * c)) / (2 * a)))
    while attention.evaluate(N=n) <= rest.evaluate(N=n):
        n += 1
    while n > 1 and attention.evaluate(N=n - 1) > rest.evaluate(N=n - 1):
        n -= 1
    return n


@dataclass(frozen=True)
class Report:
    """A configuration of an architecture, evaluated."""

    architecture: Architecture
    config: ArchConfig
    root: Block
    seq_len: int

    # ---- parameters ----------------------------------------------------------------------------
    @property
    def params(self) -> int:
        return self.root.params.evaluate()

    @property
    def approx(self) -> int:
        return self.root.approx.evaluate()

    @property
    def embedding_params(self) -> int:
        return self.root.embedding_params.evaluate()

    @property
    def non_embedding(self) -> int:
        return self.params - self.embedding_params

    # ---- FLOPs ---------------------------------------------------------------------------------
    @property
    def flops(self) -> int:
        return self.root.flops.evaluate(N=self.seq_len)

    @property
    def attention_flops(self) -> int:
        return self.root.attention_flops.evaluate(N=self.seq_len)

    def flops_at(self, seq_len: int) -> tuple[int, int]:
        """``(total, attention)`` forward FLOPs at another sequence length."""
        return self.root.flops.evaluate(N=seq_len), self.root.attention_flops.evaluate(N=seq_len)

    @property
    def attention_overtakes_at(self) -> int | None:
        return attention_overtakes_at(self.root.attention_flops, self.root.flops - self.root.attention_flops)

    # ---- memory --------------------------------------------------------------------------------
    def weight_bytes(self) -> dict[str, int]:
        """Bytes of the weights alone in each dtype (int4 packs two parameters a byte, rounded up)."""
        return {dtype: -(-self.params * bits // 8) for dtype, bits in DTYPE_BITS.items()}

    @property
    def kv_cache_elements_per_token(self) -> int:
        return self.root.kv_cache.evaluate()

    def training_bytes_adam(self) -> dict[str, int]:
        """Weights, gradients and Adam's two moments, per parameter; activations are not included.

        fp32: 4 (weights) + 4 (gradients) + 8 (Adam m and v) = 16 bytes per parameter.
        mixed precision: 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master copy) + 8 (m and v) = 16.
        """
        return {"fp32": 16 * self.params, "mixed_bf16": 16 * self.params}

    # ---- output --------------------------------------------------------------------------------
    def symbols(self) -> list[dict[str, Any]]:
        seen: dict[str, Any] = {}
        for poly in (self.root.params, self.root.flops, self.root.kv_cache):
            for s in poly.used_symbols():
                seen.setdefault(s.name, s)
        return [
            {"name": s.name, "latex": s.tex(), "value": s.value if s.name != "N" else self.seq_len,
             "meaning": s.meaning, "definition": s.definition}
            for s in seen.values()
        ]

    def block_dict(self, block: Block, path: str = "") -> dict[str, Any]:
        path = f"{path}.{block.name}" if path else block.name
        out: dict[str, Any] = {
            "name": block.name,
            "path": path,
            "kind": block.kind,
            "description": block.description,
            "params": block.params.evaluate(),
            "approx": block.approx.evaluate(),
            "flops": block.flops.evaluate(N=self.seq_len),
            "formula": _formula(block.params),
            "flops_formula": _formula(block.flops),
        }
        if block.repeat is not None:
            out["repeat"] = block.repeat.evaluate()
            out["shared"] = block.shared
        if block.tied_to:
            out["tied_to"] = block.tied_to
        out["children"] = [self.block_dict(c, path) for c in block.children]
        return out

    def to_dict(self) -> dict[str, Any]:
        rest = self.root.flops - self.root.attention_flops
        kv = self.kv_cache_elements_per_token
        return {
            "schema": SCHEMA,
            "architecture": self.architecture.name,
            "config": self.config.model_dump(mode="json"),
            "params": {
                "total": self.params,
                "approx": self.approx,
                "non_embedding": self.non_embedding,
                "embedding": self.embedding_params,
                "formula": _formula(self.root.params),
                "approx_formula": _formula(self.root.approx),
            },
            "flops": {
                "seq_len": self.seq_len,
                "forward": self.flops,
                "attention": self.attention_flops,
                "other": self.flops - self.attention_flops,
                "formula": _formula(self.root.flops),
                "attention_formula": _formula(self.root.attention_flops),
                "other_formula": _formula(rest),
                "complexity": self.root.flops.complexity(),
                "attention_overtakes_at": self.attention_overtakes_at,
            },
            "memory": {
                "weights_bytes": self.weight_bytes(),
                "kv_cache_bytes_per_token": (
                    {"fp32": 4 * kv, "fp16": 2 * kv} if kv else None
                ),
                "kv_cache_formula": _formula(self.root.kv_cache) if kv else None,
                "training_bytes_adam": self.training_bytes_adam(),
            },
            "symbols": self.symbols(),
            "blocks": self.block_dict(self.root),
        }


def make_report(arch: Architecture, config: ArchConfig, seq_len: int | None = None) -> Report:
    """Build the architecture's block tree for ``config`` and evaluate it at ``seq_len``."""
    root = arch.build(config)
    return Report(arch, config, root, seq_len if seq_len is not None else arch.seq_len(config))
