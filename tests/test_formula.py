"""Formulas: the algebra, the numbers read off it, and its text and LaTeX renderings."""

import pytest

from archzoo.formula import N, Poly, Symbol, const, sym, total


def test_products_expand_and_like_terms_collect():
    d = sym("d", 768)
    poly = 4 * (d * d + d)
    assert poly.text() == "4·d² + 4·d"
    assert poly.evaluate() == 4 * (768 * 768 + 768)


def test_substituted_rendering_shows_values():
    d = sym("d", 512)
    assert (4 * (d * d + d)).text(substitute=True) == "4·512² + 4·512"
    assert (4 * (d * d + d)).latex(substitute=True) == "4 \\cdot 512^{2} + 4 \\cdot 512"


def test_latex_uses_symbol_latex_names():
    d_ff = sym("d_ff", 3072, latex="d_{\\mathrm{ff}}")
    d = sym("d", 768)
    assert (2 * d * d_ff).latex() == "2 \\, d \\, d_{\\mathrm{ff}}"


def test_free_symbol_needs_a_value():
    d = sym("d", 8)
    flops = 2 * N * d * d
    with pytest.raises(ValueError, match="needs a value for 'N'"):
        flops.evaluate()
    assert flops.evaluate(N=3) == 2 * 3 * 64


def test_same_symbol_with_two_values_is_refused():
    with pytest.raises(ValueError, match="two values"):
        sym("d", 1) + sym("d", 2)


def test_terms_cancel_to_zero():
    d = sym("d", 5)
    assert (d - d).is_zero()
    assert (d - d).text() == "0"


def test_part_selects_powers_of_n():
    d = sym("d", 4)
    poly = 4 * N * N * d + 8 * N * d * d + 2 * d * d
    assert poly.part("N", 2).evaluate(N=1) == 16
    assert poly.part("N", 0).evaluate() == 32
    assert poly.degree_in("N") == 2


def test_complexity_drops_coefficients_and_dominated_terms():
    L, d, d_ff = sym("L", 12, order=1), sym("d", 768), sym("d_ff", 3072)
    flops = 4 * L * N * N * d + 8 * L * N * d * d + 4 * L * N * d * d_ff + 2 * d * d
    assert flops.complexity() == "O(L N² d + L N d² + L N d d_ff)"


def test_constants_and_powers():
    assert const(0).is_zero()
    assert (sym("p", 16) ** 2).evaluate() == 256
    assert isinstance(sym("x", 1) * 3, Poly)


# ---- the algebra against its textbook definition ------------------------------------------------------------
# Poly's operations are written as single passes over dicts (a block tree takes thousands of them). The
# definitions below are the plain ones: a sum adds the terms one at a time, a product multiplies every pair of
# terms, dropping each term whose coefficient cancels to zero; a substitution adds the terms with the symbol
# replaced. The fast ones must give the same polynomial: the same terms, in the same order, with the same
# symbols in the same order (the order shows wherever a formula is printed term by term).


def _textbook_symbols(first, second):
    merged = dict(first)
    for name, symbol in second.items():
        known = merged.get(name)
        if known is not None and known.value != symbol.value:
            raise ValueError(f"symbol {name!r} has two values in one formula: {known.value} and {symbol.value}")
        merged[name] = symbol
    return merged


def _textbook_add(a, b):
    b = b if isinstance(b, Poly) else const(b)
    terms = dict(a.terms)
    for mono, coef in b.terms.items():
        terms[mono] = terms.get(mono, 0) + coef
    return Poly({m: c for m, c in terms.items() if c != 0}, _textbook_symbols(a.symbols, b.symbols))


def _textbook_mul(a, b):
    b = b if isinstance(b, Poly) else const(b)
    terms = {}
    for m1, c1 in a.terms.items():
        for m2, c2 in b.terms.items():
            powers = dict(m1)
            for name, power in m2:
                powers[name] = powers.get(name, 0) + power
            mono = tuple(sorted(powers.items()))
            terms[mono] = terms.get(mono, 0) + c1 * c2
    return Poly({m: c for m, c in terms.items() if c != 0}, _textbook_symbols(a.symbols, b.symbols))


def _textbook_total(polys):
    result = const(0)
    for poly in polys:
        result = _textbook_add(result, poly)
    return result


def _textbook_substitute(poly, name, value):
    result = const(0)
    for mono, coef in poly.terms.items():
        term = Poly({tuple((n, p) for n, p in mono if n != name): coef}, poly.symbols)
        factor = const(1)
        for _ in range(dict(mono).get(name, 0)):
            factor = _textbook_mul(factor, const(value))
        result = _textbook_add(result, _textbook_mul(term, factor))
    return Poly(result.terms, {n: s for n, s in result.symbols.items() if n != name})


def _layout(poly):
    """Everything of a formula its readers can tell apart: its terms and its symbols, in order."""
    return list(poly.terms.items()), [(name, vars(symbol)) for name, symbol in poly.symbols.items()]


def _random_poly(rng, values, names, most_power):
    """A formula of up to four terms over ``names``, some coefficients cancelling, a symbol or two declared but
    unused, the symbols in a random order (as formulas of different blocks have them)."""
    terms = {}
    for _ in range(rng.randint(0, 4)):
        chosen = rng.sample(names, rng.randint(0, min(3, len(names))))
        mono = tuple(sorted({n: rng.randint(1, most_power) for n in chosen}.items()))
        terms[mono] = rng.choice([-2, -1, 1, 1, 2, 3])
    used = {n for mono in terms for n, _ in mono} | set(rng.sample(names, rng.randint(0, 2)))
    order = sorted(used, key=lambda _: rng.random())
    return Poly(terms, {n: Symbol(n, values[n], order=rng.randint(1, 30)) for n in order})


def test_the_algebra_gives_the_textbook_polynomial_term_for_term():
    import random

    rng = random.Random(20)
    checked = 0
    for case in range(400):
        values = {"L": 12, "d": 768, "h": rng.choice([12, 16]), "d_ff": 3072, "N": None, "V": 50257}
        # half the cases over two symbols to the first power, where products and sums cancel terms often
        names, most_power = (rng.sample(list(values), 2), 1) if case % 2 else (list(values), 3)
        a, b, c = (_random_poly(rng, values, names, most_power) for _ in range(3))
        k = rng.choice([0, 1, 2, -3])
        pairs = [
            (a + b, _textbook_add(a, b)),
            (a - b, _textbook_add(a, _textbook_mul(b, const(-1)))),
            (a * b, _textbook_mul(a, b)),
            (a * k, _textbook_mul(a, k)),
            (k * a, _textbook_mul(a, k)),
            (a + k, _textbook_add(a, k)),
            (total([a, b, c, k]), _textbook_total([a, b, c, k])),
            (a.substitute("N", 1), _textbook_substitute(a, "N", 1)),
            (a.substitute("d", 0), _textbook_substitute(a, "d", 0)),
            (a.substitute("h", 3), _textbook_substitute(a, "h", 3)),
        ]
        for fast, textbook in pairs:
            assert _layout(fast) == _layout(textbook), case
            assert fast.text() == textbook.text() and fast.latex(substitute=True) == textbook.latex(substitute=True)
            assert fast.evaluate(N=7) == textbook.evaluate(N=7)
            checked += 1
    assert checked == 4000


def test_a_symbol_bound_to_two_values_is_refused_by_every_operation():
    a, b = sym("d", 768) + 1, sym("d", 1024) * sym("L", 2)
    for operation in (lambda: a + b, lambda: a * b, lambda: total([a, b]), lambda: a - b):
        with pytest.raises(ValueError, match=r"^symbol 'd' has two values in one formula: 768 and 1024$"):
            operation()


def test_a_term_cancelled_midway_through_a_product_keeps_its_place():
    # (3y - 2x - 1 + 3xy)(2xy - y + 1): the xy terms come to 2xy, then 0, then 3xy; the textbook product
    # collects them in the place of the first and drops only what is zero at the end
    x, y = sym("x", 2), sym("y", 3)
    a, b = 3 * y - 2 * x - 1 + 3 * x * y, 2 * x * y - y + 1
    assert _layout(a * b) == _layout(_textbook_mul(a, b))
    assert (a * b).text() == _textbook_mul(a, b).text()
    assert list((a * b).terms)[4] == (("x", 1), ("y", 1))
