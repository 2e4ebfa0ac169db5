"""Whether this pytest run is the fast subset (`make test-fast`), and how many examples a property test draws there."""

from __future__ import annotations

#: set by conftest's pytest_configure, before any test module is imported (and so before a `settings` is made)
in_fast_subset = False

#: a property test of the fast subset draws this share of its examples, at least `FAST_MIN_EXAMPLES` (never more
#: than all of them): its logic and its explicit `@example` cases still run every time, `make test` draws them all
FAST_SHARE = 10
FAST_MIN_EXAMPLES = 10


def leaves_out_slow(markexpr: str) -> bool:
    """Whether a ``-m`` expression leaves out the ``slow`` tests and keeps the others (the fast subset's
    ``not slow and not browser and not wheel``)."""
    from _pytest.mark.expression import Expression

    if not markexpr.strip():
        return False
    expression = Expression.compile(markexpr)
    # a test with no marker runs and the same test marked slow does not: slow is what the expression leaves out
    plain = expression.evaluate(lambda name, **kwargs: False)
    return plain and not expression.evaluate(lambda name, **kwargs: name == "slow")


def examples(full: int) -> int:
    """How many examples a property test that draws ``full`` in `make test` draws in this run."""
    return min(full, max(FAST_MIN_EXAMPLES, full // FAST_SHARE)) if in_fast_subset else full
