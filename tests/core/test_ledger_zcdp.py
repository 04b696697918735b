"""zCDP rows in the privacy ledger: exact rhos that add, parallel groups, conversions rounded up, strict JSON."""

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.accounting import Measurement, PrivacyLedger
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.noise import float_up
from dpmodels.core.session import ledger_spend
from dpmodels.core.zcdp import bun_steinke_epsilon, epsilon_of_rho

rhos = st.fractions(min_value=Fraction(1, 10**6), max_value=10, max_denominator=10**6)


@settings(max_examples=50)
@given(st.lists(st.tuples(rhos, st.integers(1, 4)), min_size=1, max_size=5), st.lists(rhos, max_size=3))
def test_zcdp_rows_add_across_groups_and_take_the_largest_within_one(groups, pure):
    """Sequential groups add their rhos, parallel rows of a group cost the largest; a pure eps step costs eps^2/2."""
    ledger = PrivacyLedger()
    for g, (rho, parallel) in enumerate(groups):
        for k in range(parallel):
            sigma2 = ledger.record_gaussian(f"q{g}.{k}", f"g{g}", 2, rho / (k + 1), "discrete Gaussian")
            assert sigma2 == 2 / (2 * rho / (k + 1))
    for k, eps in enumerate(pure):
        ledger.record(f"pure {k}", f"p{k}", 1, eps, "double geometric")
    expected = sum((rho for rho, _ in groups), Fraction(0)) + sum((e * e / 2 for e in pure), Fraction(0))
    assert ledger.total_rho == expected and ledger.is_zcdp
    assert ledger.total_epsilon == math.inf  # no pure-DP bound
    assert ledger_spend(ledger, "rho")[0] == expected and ledger_spend(ledger)[0] == math.inf


def test_conversions_of_a_zcdp_ledger_are_the_rounded_up_bounds():
    ledger = PrivacyLedger()
    ledger.record_gaussian("a", "level 1", 2, Fraction(1, 4), "discrete Gaussian")
    ledger.record_gaussian("b", "level 2", 2, Fraction(1, 4), "discrete Gaussian")
    d = Fraction(1, 10**6)
    assert ledger.cks(d) == (epsilon_of_rho(Fraction(1, 2), d), d)
    assert ledger.zcdp(d) == (bun_steinke_epsilon(Fraction(1, 2), d), d)
    assert ledger.drv(d)[0] == math.inf and ledger.basic_exact()[0] == math.inf
    # CKS is the tightest; the floats are rounded up (1e-6 as a float is below 1/10^6)
    assert ledger.total(d) == (float_up(epsilon_of_rho(Fraction(1, 2), d)), float_up(d))
    assert Fraction(ledger.total(d)[1]) >= d > Fraction(float(d))
    summary = ledger.summary(d)
    assert summary["rho"] == 0.5 and summary["epsilon"] == float(epsilon_of_rho(Fraction(1, 2), d))


def test_pure_ledgers_keep_their_totals():
    """A ledger without zCDP rows: the same bounds as before the rho rows existed (no CKS among them)."""
    ledger = PrivacyLedger()
    for k in range(3):
        ledger.record(f"q{k}", f"g{k}", 2, Fraction(1, 3), "double geometric")
    assert not ledger.is_zcdp and ledger.total_rho == 3 * Fraction(1, 9) / 2
    assert ledger.total() == (1.0, 0.0) and "rho" not in ledger.summary()
    assert ledger.zcdp("1e-6")[0] == bun_steinke_epsilon(Fraction(1, 6), "1e-6")


def test_records_of_zcdp_rows_are_strict_json_and_say_what_they_hold():
    ledger = PrivacyLedger()
    ledger.record_gaussian("counts level 1", "level 1", 2, Fraction(1, 6), "discrete Gaussian", count=8)
    (row,) = ledger.to_records()
    json.dumps(row, allow_nan=False)
    assert row["rho_exact"] == "1/6" and row["scale_exact"] == "6" and row["sensitivity_exact"] == "2"
    assert row["epsilon"] is None and row["sensitivity_norm"] == "squared L2" and row["cells"] == 8


def test_inconsistent_or_out_of_range_zcdp_rows_are_refused():
    with pytest.raises(PrivacyParameterError, match="sensitivity/\\(2 rho\\)"):
        Measurement("q", "g", Fraction(2), math.inf, Fraction(5), "n", 1, Fraction(0), Fraction(1, 6))
    with pytest.raises(PrivacyParameterError):
        Measurement("q", "g", Fraction(2), Fraction(1), Fraction(6), "n", 1, Fraction(0), Fraction(1, 6))
    ledger = PrivacyLedger()
    with pytest.raises(PrivacyParameterError) as err:
        ledger.record_gaussian("q", "g", 2, Fraction(1, 10**60), "n")
    assert err.value.field == "rho" and ledger.entries == []
    for bad in (0, -1):
        with pytest.raises(PrivacyParameterError):
            ledger.record_gaussian("q", "g", bad, 1, "n")
