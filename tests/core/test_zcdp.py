"""zCDP conversions: exact, rounded up, and equal to OpenDP's and to a 50-digit oracle."""

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.accounting import PrivacyLedger
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.zcdp import bun_steinke_epsilon, drv_epsilon, epsilon_of_rho, rho_of_epsilon

mpmath.mp.dps = 50

rhos = st.fractions(min_value=Fraction(1, 10**4), max_value=50)
deltas = st.sampled_from([Fraction(1, 10**k) for k in (3, 5, 6, 9, 10, 12)])


def _mp(value: Fraction):
    return mpmath.mpf(value.numerator) / value.denominator


def _cks(rho: Fraction, delta: Fraction, alpha):
    a = mpmath.mpf(alpha)
    return a * _mp(rho) + (mpmath.log(1 / _mp(delta)) + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)


def _ternary_minimum(f, lo, hi, steps=300):
    """The minimum of a unimodal ``f`` on ``[lo, hi]`` by ternary search in 50-digit arithmetic."""
    lo, hi = mpmath.mpf(lo), mpmath.mpf(hi)
    for _ in range(steps):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if f(a) < f(b) else (a, hi)
    return f((lo + hi) / 2)


def test_pure_epsilon_is_half_its_square_in_rho():
    assert rho_of_epsilon("0.1") == Fraction(1, 200)
    assert rho_of_epsilon(2) == 2


@settings(max_examples=60, deadline=None)
@given(rhos, deltas)
def test_cks_epsilon_is_an_upper_bound_within_1e_9_of_the_minimum(rho, delta):
    got = epsilon_of_rho(rho, delta)
    minimum = _ternary_minimum(lambda t: _cks(rho, delta, 1 + mpmath.exp(t)), -40, 40)
    assert _mp(got) >= minimum  # a bound never below the true one
    assert _mp(got) <= minimum * (1 + mpmath.mpf("1e-9"))


@pytest.mark.parametrize(("rho", "delta"), [("2.56", "1e-10"), ("0.5", "1e-6"), ("0.005", "1e-9"), ("20", "1e-5")])
def test_cks_epsilon_agrees_with_opendp(rho, delta):
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib", "honest-but-curious")
    measurement = dp.m.make_user_measurement(
        dp.atom_domain(T=float),
        dp.absolute_distance(T=float),
        dp.zero_concentrated_divergence(),
        lambda x: x,
        lambda d_in: float(rho),
    )
    theirs = dp.c.make_zCDP_to_approxDP(measurement).map(1.0).epsilon(float(delta))
    ours = float(epsilon_of_rho(rho, delta))
    assert ours == pytest.approx(theirs, rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(rhos, deltas)
def test_bun_steinke_bound_is_rounded_up(rho, delta):
    exact_value = _mp(rho) + 2 * mpmath.sqrt(_mp(rho) * mpmath.log(1 / _mp(delta)))
    got = bun_steinke_epsilon(rho, delta)
    assert exact_value <= _mp(got) <= exact_value * (1 + mpmath.mpf("1e-15"))


@settings(max_examples=80, deadline=None)
@given(st.fractions(min_value=Fraction(1, 1000), max_value=2), st.integers(1, 500), deltas)
def test_the_ledger_advanced_compositions_never_round_down(eps0, k, delta):
    """Regression: the ledger's zCDP and DRV epsilons were floats rounded to nearest, then read as
    the decimal they print as, so about half of them were below the bound they stand for."""
    ledger = PrivacyLedger()
    for step in range(k):
        ledger.charge(f"step {step}", eps0)
    rho = k * _mp(eps0) ** 2 / 2
    eps_z, _ = ledger.zcdp(delta)
    eps_d, _ = ledger.drv(delta)
    assert isinstance(eps_z, Fraction) and isinstance(eps_d, Fraction)
    assert _mp(eps_z) >= rho + 2 * mpmath.sqrt(rho * mpmath.log(1 / _mp(delta)))
    e = _mp(eps0)
    assert _mp(eps_d) >= e * mpmath.sqrt(2 * k * mpmath.log(1 / _mp(delta))) + k * e * mpmath.expm1(e)
    assert drv_epsilon(eps0, k, delta) == eps_d


@pytest.mark.parametrize("bad", [0, 1, "-1e-3", 2])
def test_delta_outside_0_1_is_refused(bad):
    with pytest.raises(PrivacyParameterError, match="delta"):
        epsilon_of_rho(1, bad)


def test_a_bound_below_zero_is_reported_as_zero():
    """At a tiny rho and a large delta the CKS bound is negative: (0, delta)-DP holds, and 0 is reported."""
    assert epsilon_of_rho(Fraction(1, 10**8), Fraction(1, 2)) == 0
    assert epsilon_of_rho(Fraction(1, 2), Fraction(1, 10**6)) > 5
