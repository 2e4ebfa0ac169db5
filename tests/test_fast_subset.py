"""The fast subset's rules (tests/fast_subset.py, tests/conftest.py): which runs are the fast subset, how many
examples a property test draws there, and that it is the fast subset's `-m` expression that leaves a test out."""

from __future__ import annotations

import pytest

import fast_subset


@pytest.mark.parametrize(
    ("markexpr", "fast"),
    [
        ("not slow and not browser and not wheel", True),  # `make test-fast`
        ("not slow", True),
        ("", False),  # `make test`: every test, every example
        ("slow", False),
        ("not browser", False),  # slow tests still run
        ("reference", False),  # a test with no marker is left out too: not the fast subset
        ("slow or not slow", False),
    ],
)
def test_the_fast_subset_is_a_run_that_leaves_out_slow_tests_alone(markexpr, fast):
    assert fast_subset.leaves_out_slow(markexpr) is fast


def test_a_property_test_draws_a_tenth_of_its_examples_there_and_at_least_ten_never_more_than_all(monkeypatch):
    monkeypatch.setattr(fast_subset, "in_fast_subset", True)
    assert [fast_subset.examples(n) for n in (300, 150, 40, 10, 5)] == [30, 15, 10, 10, 5]
    monkeypatch.setattr(fast_subset, "in_fast_subset", False)
    assert [fast_subset.examples(n) for n in (300, 150, 40, 10, 5)] == [300, 150, 40, 10, 5]


def test_this_run_knows_which_it_is(request):
    """conftest sets the flag from this run's own -m before any test module is imported."""
    markexpr = request.config.getoption("markexpr", "") or ""
    assert fast_subset.in_fast_subset is fast_subset.leaves_out_slow(markexpr)
