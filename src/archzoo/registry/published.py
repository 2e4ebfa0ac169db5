"""A parameter count as its authors printed it ("110M", "1.3B", "85,802,501"): its value and its rounding."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = ["parse_published"]

_UNITS = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "B": 10**9,
    "G": 10**9,
    "T": 10**12,
    "thousand": 10**3,
    "million": 10**6,
    "millions": 10**6,
    "billion": 10**9,
    "billions": 10**9,
    "(x10^6)": 10**6,
    "x10^6": 10**6,
    "(x10^9)": 10**9,
    "x10^9": 10**9,
}
_PUBLISHED = re.compile(
    r"^\s*(?P<number>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*|\(?x10\^[69]\)?|\(millions\))\s*$"
)


def parse_published(text: str) -> tuple[int, int]:
    """``"110M"`` -> ``(110_000_000, 500_000)``: the value and the rounding of the printed figure.

    The rounding is half a unit of the last printed digit: "1.3B" can stand for 1.25B to 1.35B.
    """
    match = _PUBLISHED.match(str(text))
    if not match:
        raise ValueError(
            f"cannot read {text!r} as a parameter count; write it as printed, e.g. '110M', '1.3B', '1542M', "
            "'65 (x10^6)' or '85,802,501'"
        )
    number, unit = match["number"], match["unit"].strip("()") if match["unit"] == "(millions)" else match["unit"]
    if unit not in _UNITS:
        if unit[-1:] in ("B", "b") and unit[:-1] in _UNITS and unit[:-1]:  # MB, GB: bytes, not parameters
            raise ValueError(
                f"{text!r} reads as a size in bytes ({unit!r}); write the parameter count as printed "
                f"with K, M, B or T, e.g. '{number}{unit[:-1]}'"
            )
        raise ValueError(f"unknown unit {unit!r} in {text!r}; use K, M, B or T (e.g. '110M')")
    scale = _UNITS[unit]
    digits = Decimal(number.replace(",", ""))
    decimals = max(0, -digits.as_tuple().exponent)  # type: ignore[operator]
    value = int((digits * scale).to_integral_value(ROUND_HALF_EVEN))
    return value, scale // 10**decimals // 2 if scale >= 10**decimals else 0
