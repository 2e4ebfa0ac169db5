"""Formulas: integer polynomials over named symbols, evaluated and rendered from one object.

A count in archzoo is never a number typed beside a formula: every block builds a `Poly`, and the
number, the plain-text formula, the LaTeX formula and the formula with values substituted are all read
off that one polynomial. Symbols carry their value from the configuration (``d = 768``), except the
sequence length ``N``, which stays free until a report evaluates it.

The algebra needed here is tiny (sums and products of monomials with integer coefficients), so it is
written out rather than taken from sympy, whose import alone costs more than a whole `archzoo show`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["N", "Poly", "S", "Symbol", "const", "sym"]


@dataclass(frozen=True)
class Symbol:
    """A named quantity: ``d`` (d_model = 768), or the free sequence length ``N``."""

    name: str
    value: int | None = None
    latex: str = ""
    meaning: str = ""
    definition: str = ""  # for derived symbols, e.g. "d / h"
    order: int = 50  # position among factors when a monomial is printed

    def poly(self) -> Poly:
        return Poly({((self.name, 1),): 1}, {self.name: self})

    def tex(self) -> str:
        return self.latex or self.name


Monomial = tuple[tuple[str, int], ...]

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Poly:
    """A polynomial with integer coefficients; immutable, combined with ``+`` and ``*``."""

    terms: Mapping[Monomial, int] = field(default_factory=dict)
    symbols: Mapping[str, Symbol] = field(default_factory=dict)

    # ---- algebra -------------------------------------------------------------------------------
    # Building one model's block tree takes a few thousand of these operations, and indexing a zoo builds
    # thousands of trees, so each is written as a single pass over plain dicts. Every result is the one the
    # textbook definition gives term by term, in the same order: a term whose coefficient cancels to zero
    # is dropped, and one that appears again later goes to the end, as it would after a second addition.
    @staticmethod
    def _lift(other: Poly | Symbol | int) -> Poly:
        if isinstance(other, Poly):
            return other
        if isinstance(other, Symbol):
            return other.poly()
        if isinstance(other, int):
            return const(other)
        raise TypeError(f"cannot combine a formula with {type(other).__name__}")

    def _merged_symbols(self, other: Poly) -> dict[str, Symbol]:
        return _merged(self.symbols, other.symbols)

    def __add__(self, other: Poly | Symbol | int) -> Poly:
        other = other if type(other) is Poly else self._lift(other)
        terms = dict(self.terms)
        for mono, coef in other.terms.items():
            coef += terms.get(mono, 0)
            if coef:
                terms[mono] = coef
            elif mono in terms:
                del terms[mono]
        if 0 in terms.values():  # a zero written into a formula by hand: sums drop it
            terms = {m: c for m, c in terms.items() if c != 0}
        return _poly(terms, _merged(self.symbols, other.symbols))

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()}, self.symbols)

    def __sub__(self, other: Poly | Symbol | int) -> Poly:
        return self + (-self._lift(other))

    def __mul__(self, other: Poly | Symbol | int) -> Poly:
        terms: dict[Monomial, int] = {}
        if type(other) is int:  # a number (2 * flops): each coefficient scaled, the symbols kept
            for m, c in self.terms.items():
                if len(m) > 1 and m not in _SORTED:
                    m = _in_order(m)
                terms[m] = terms.get(m, 0) + c * other
            if 0 in terms.values():
                terms = {m: c for m, c in terms.items() if c != 0}
            return _poly(terms, self.symbols if type(self.symbols) is dict else dict(self.symbols))
        other = other if type(other) is Poly else self._lift(other)
        right = other.terms.items()
        for m1, c1 in self.terms.items():
            for m2, c2 in right:
                # the product's monomial, its factors sorted by name: a number (the empty monomial) times a
                # monomial already in that order is that monomial, and two single factors are put in order
                if not m2 and (len(m1) < 2 or m1 in _SORTED):
                    mono = m1
                elif not m1 and (len(m2) < 2 or m2 in _SORTED):
                    mono = m2
                elif len(m1) == 1 and len(m2) == 1:
                    first, second = m1[0], m2[0]
                    if first[0] < second[0]:
                        mono = (first, second)
                    elif second[0] < first[0]:
                        mono = (second, first)
                    else:
                        mono = ((first[0], first[1] + second[1]),)
                else:
                    powers = dict(m1)
                    for name, power in m2:
                        powers[name] = powers.get(name, 0) + power
                    mono = _in_order(powers)
                terms[mono] = terms.get(mono, 0) + c1 * c2
        if 0 in terms.values():  # cancelled terms, dropped once all products are in (their place is kept)
            terms = {m: c for m, c in terms.items() if c != 0}
        return _poly(terms, _merged(self.symbols, other.symbols))

    __rmul__ = __mul__

    def substitute(self, name: str, value: Poly | int) -> Poly:
        """This polynomial with symbol ``name`` replaced by ``value`` (a number or another polynomial)."""
        if type(value) is int:  # a number (N = 1 for one token): each term scaled by value ** power
            terms: dict[Monomial, int] = {}
            for mono, coef in self.terms.items():
                power = 0
                for n, p in mono:
                    if n == name:
                        power = p
                if power:
                    coef *= value**power
                    if not coef:
                        continue
                    mono = tuple(factor for factor in mono if factor[0] != name)
                elif not coef:
                    continue
                coef += terms.get(mono, 0)
                if coef:
                    terms[mono] = coef
                elif mono in terms:
                    del terms[mono]
            symbols = {n: s for n, s in self.symbols.items() if n != name} if self.terms else {}
            return _poly(terms, symbols)
        replacement = self._lift(value)
        result = const(0)
        for mono, coef in self.terms.items():
            term = Poly({tuple((n, p) for n, p in mono if n != name): coef}, self.symbols)
            power = dict(mono).get(name, 0)
            result = result + term * replacement**power
        symbols = {n: s for n, s in result.symbols.items() if n != name or replacement._uses(name)}
        return Poly(result.terms, symbols)

    def __pow__(self, exponent: int) -> Poly:
        result = const(1)
        for _ in range(exponent):
            result = result * self
        return result

    # ---- inspection ----------------------------------------------------------------------------
    def is_zero(self) -> bool:
        return not self.terms

    def degree_in(self, name: str) -> int:
        return max((dict(m).get(name, 0) for m in self.terms), default=0)

    def part(self, name: str, power: int) -> Poly:
        """The terms in which symbol ``name`` appears exactly to ``power``."""
        return Poly({m: c for m, c in self.terms.items() if dict(m).get(name, 0) == power}, self.symbols)

    def free_symbols(self) -> set[str]:
        return {name for name, s in self.symbols.items() if s.value is None and self._uses(name)}

    def _uses(self, name: str) -> bool:
        return any(name == n for m in self.terms for n, _ in m)

    def used_symbols(self) -> list[Symbol]:
        names = {n for m in self.terms for n, _ in m}
        return sorted((self.symbols[n] for n in names), key=lambda s: (s.order, s.name))

    # ---- evaluation ----------------------------------------------------------------------------
    def evaluate(self, **free: int) -> int:
        """The integer value; free symbols (``N``) must be given by name."""
        total = 0
        symbols = self.symbols
        for mono, coef in self.terms.items():
            value = coef
            for name, power in mono:
                v = free.get(name, symbols[name].value)
                if v is None:
                    raise ValueError(f"formula needs a value for {name!r}")
                value *= v if power == 1 else v**power
            total += value
        return total

    # ---- rendering -----------------------------------------------------------------------------
    def _ordered(self) -> list[tuple[Monomial, int]]:
        def key(item: tuple[Monomial, int]) -> tuple:
            mono, _ = item
            degree = sum(p for _, p in mono)
            n_power = dict(mono).get("N", 0)
            names = [(self.symbols[n].order, n, -p) for n, p in mono]
            return (-n_power, -degree, names)

        return sorted(self.terms.items(), key=key)

    def _factors(self, mono: Monomial) -> list[tuple[Symbol, int]]:
        return sorted(((self.symbols[n], p) for n, p in mono), key=lambda sp: (sp[0].order, sp[0].name))

    def _render(self, factor, joiner: str) -> str:
        """Terms in reading order; ``factor(symbol, power)`` renders one factor, ``joiner`` joins them."""
        if not self.terms:
            return "0"
        out = []
        for i, (mono, coef) in enumerate(self._ordered()):
            parts = [factor(symbol, power) for symbol, power in self._factors(mono)]
            if abs(coef) != 1 or not parts:
                parts.insert(0, str(abs(coef)))
            body = joiner.join(parts)
            if i == 0:
                out.append(("-" if coef < 0 else "") + body)
            else:
                out.append((" - " if coef < 0 else " + ") + body)
        return "".join(out)

    def text(self, substitute: bool = False) -> str:
        """Plain text: ``4·d² + 4·d``; with ``substitute``, ``4·768² + 4·768``."""
        if not substitute and len(self.terms) == 1:  # one symbol (a block's width in its description): its name
            ((mono, coef),) = self.terms.items()
            if coef == 1 and len(mono) == 1:
                ((name, power),) = mono
                base = self.symbols[name].name
                return base + (str(power).translate(_SUPERSCRIPT) if power > 1 else "")

        def factor(symbol: Symbol, power: int) -> str:
            base = symbol.name
            if substitute and symbol.value is not None:
                base = f"{symbol.value:,}".replace(",", "\u2009") if symbol.value >= 10000 else str(symbol.value)
            return base + (str(power).translate(_SUPERSCRIPT) if power > 1 else "")

        return self._render(factor, "·")

    def latex(self, substitute: bool = False) -> str:
        """LaTeX: ``4 d^{2} + 4 d``; with ``substitute``, ``4 \\cdot 768^{2} + 4 \\cdot 768``."""

        def factor(symbol: Symbol, power: int) -> str:
            if substitute and symbol.value is not None:
                base = f"{symbol.value:,}".replace(",", "{,}")
            else:
                base = symbol.tex()
            return base + (f"^{{{power}}}" if power > 1 else "")

        return self._render(factor, " \\cdot " if substitute else " \\, ")

    def dominant_terms(self) -> Poly:
        """The monomials no other monomial dominates (divides), with coefficient 1: the big-O body."""
        monos = [dict(m) for m in self.terms if m]
        kept: list[dict[str, int]] = []
        for i, m in enumerate(monos):
            dominated = any(
                j != i and o != m and all(o.get(n, 0) >= p for n, p in m.items()) for j, o in enumerate(monos)
            )
            if not dominated and m not in kept:
                kept.append(m)
        return Poly({tuple(sorted(m.items())): 1 for m in kept}, self.symbols)

    def complexity(self) -> str:
        """Big-O of the polynomial: its monomials without coefficients, dropping any that divides another."""
        body = self.dominant_terms()
        return f"O({body.text().replace('·', ' ')})" if not body.is_zero() else "O(1)"

    def __str__(self) -> str:
        return self.text()


def sym(
    name: str, value: int | None, *, latex: str = "", meaning: str = "", definition: str = "", order: int = 50
) -> Poly:
    """A polynomial made of one symbol."""
    return Symbol(name, value, latex, meaning, definition, order).poly()


def const(value: int) -> Poly:
    return _poly({(): value} if value else {}, {})


def _poly(terms: dict[Monomial, int], symbols: dict[str, Symbol]) -> Poly:
    """A `Poly` of dicts just built, made without the dataclass's ``__init__`` (half the cost of the
    operation that builds it; the object is the same)."""
    poly = _new_object(Poly)
    fields = poly.__dict__
    fields["terms"] = terms
    fields["symbols"] = symbols
    return poly


_new_object = object.__new__

#: Monomials known to have their factors in order (sorted by name, each name once), as products make them.
_SORTED: set[Monomial] = set()
_SORTED_MOST = 100_000  # names are few; this only bounds a plugin that makes new ones without end


def _in_order(factors: Iterable[tuple[str, int]] | dict[str, int]) -> Monomial:
    """A monomial's factors (or a dict of powers by name) as a monomial: sorted by name, each name once."""
    powers = factors if type(factors) is dict else dict(factors)
    mono = tuple(sorted(powers.items()))
    if len(_SORTED) < _SORTED_MOST:
        _SORTED.add(mono)
    return mono


def _merged(first: Mapping[str, Symbol], second: Mapping[str, Symbol]) -> dict[str, Symbol]:
    """The symbols of two formulas combined: those of ``second`` replace those of ``first`` of the same
    name, in place; a name bound to two values is an error.

    A formula's symbols are never changed once it is made, so when one side adds nothing to the other (the
    usual case: the formulas of one model share their symbols) that side's dict is the result, shared."""
    if type(first) is dict and second.items() <= first.items():
        return first
    if not first and type(second) is dict:
        return second
    merged = dict(first)
    for name, symbol in second.items():
        known = merged.get(name)
        if known is not None and known is not symbol and known.value != symbol.value:
            raise ValueError(f"symbol {name!r} has two values in one formula: {known.value} and {symbol.value}")
        merged[name] = symbol
    return merged


def total(polys: Iterable[Poly]) -> Poly:
    """The sum of ``polys``: the same polynomial as adding them one by one, built in one pass."""
    terms: dict[Monomial, int] = {}
    symbols: dict[str, Symbol] = {}
    shared = True  # `symbols` is still a dict of one of the formulas (not to be changed)
    for poly in polys:
        if type(poly) is not Poly:
            poly = Poly._lift(poly)
        for mono, coef in poly.terms.items():
            coef += terms.get(mono, 0)
            if coef:
                terms[mono] = coef
            elif mono in terms:
                del terms[mono]
        more = poly.symbols
        if more is symbols or more.items() <= symbols.items():
            continue
        if not symbols and type(more) is dict:
            symbols = more
            continue
        if shared:
            symbols, shared = dict(symbols), False
        for name, symbol in more.items():
            known = symbols.get(name)
            if known is not None and known is not symbol and known.value != symbol.value:
                raise ValueError(f"symbol {name!r} has two values in one formula: {known.value} and {symbol.value}")
            symbols[name] = symbol
    return _poly(terms, symbols)


N = sym("N", None, latex="N", meaning="sequence length (tokens, or patches plus special tokens)", order=3)
#: the source length an encoder-decoder's decode step attends to (its cross-attention keys); only the
#: decode formulas use it, as a second free length beside the decoder's context ``N``
S = sym("S", None, latex="S", meaning="source length an encoder-decoder's decoder attends to", order=4)
