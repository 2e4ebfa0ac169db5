"""Formulas: the algebra, the numbers read off it, and its text and LaTeX renderings."""

import pytest

from archzoo.formula import N, Poly, const, sym


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
