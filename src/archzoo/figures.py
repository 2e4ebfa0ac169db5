"""How a figure is written: counts and bytes for people (``109.5M``, ``437.9 MB``), FLOPs in FLOPs or MACs."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from .errors import ConfigError
from .formula import Poly

__all__ = ["UNITS", "check_units", "count_in_units", "human_bytes", "human_count", "in_units"]

#: What FLOP figures are given in: FLOPs (the default), or multiply-accumulates (every figure halved).
UNITS = ("flops", "macs")


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


def human_bytes(n: int | float) -> str:
    """Decimal units, as disk and download sizes are quoted: ``437.9 MB``."""
    value = Decimal(n)
    for unit, exponent in (("TB", 12), ("GB", 9), ("MB", 6), ("kB", 3)):
        if value >= Decimal(10) ** exponent:
            return f"{value.scaleb(-exponent).quantize(Decimal('0.1'), ROUND_HALF_UP):,} {unit}"
    return f"{value:.0f} B"


def check_units(units: str) -> str:
    """``units`` checked: ``flops`` or ``macs``."""
    if units not in UNITS:
        raise ConfigError(f"units {units!r}: expected one of {', '.join(UNITS)} (macs halves every FLOP figure)")
    return units


def in_units(flops: Poly, units: str) -> Poly:
    """A FLOP formula in ``units``: as it is, or halved into multiply-accumulates. archzoo's FLOPs are all
    matmul-class (``2 x`` the multiply-accumulates), so every coefficient is even and the halving exact."""
    if check_units(units) == "flops":
        return flops
    odd = [c for c in flops.terms.values() if c % 2]
    if odd:  # not a count of multiply-accumulates: a formula that counts other work
        raise ValueError(f"{flops.text()}: an odd coefficient ({odd[0]}) cannot be halved into MACs")
    return Poly({m: c // 2 for m, c in flops.terms.items()}, flops.symbols)


def count_in_units(flops: int | float, units: str) -> int | float:
    """A FLOP figure in ``units`` (an approximation's odd figure halves to a float)."""
    if check_units(units) == "flops":
        return flops
    return flops // 2 if isinstance(flops, int) and flops % 2 == 0 else flops / 2
