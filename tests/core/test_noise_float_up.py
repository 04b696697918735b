"""A privacy loss shown as a float never reads below the exact one (core.noise.float_up)."""

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.accounting import PrivacyLedger
from dpmodels.core.noise import float_up


@settings(max_examples=200, deadline=None)
@given(st.fractions(min_value=Fraction(1, 10**9), max_value=Fraction(10**9)))
def test_float_up_is_the_smallest_float_at_or_above(value):
    up = float_up(value)
    assert Fraction(up) >= value
    assert Fraction(math.nextafter(up, -math.inf)) < value  # one ulp lower is below: the smallest


def test_two_thirds_rounds_up_where_float_rounds_down():
    assert Fraction(float(Fraction(2, 3))) < Fraction(2, 3)  # the bug: to-nearest is below here
    assert Fraction(float_up(Fraction(2, 3))) > Fraction(2, 3)
    assert float_up(Fraction(1, 10)) == 0.1 and float_up(3) == 3.0 and float_up(math.inf) == math.inf


def test_ledger_totals_as_floats_are_not_below_the_exact_totals():
    ledger = PrivacyLedger()
    for _ in range(3):
        ledger.record("q", f"g{_}", 1, Fraction(2, 9), "laplace")
    eps, _ = ledger.basic()
    assert Fraction(eps) >= ledger.basic_exact()[0] == Fraction(2, 3)
