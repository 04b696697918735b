"""Noise and budgets: exact distributions, exact privacy loss, exact arithmetic."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpmodels.core.accounting import PrivacyLedger, split_budget
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.noise import (
    as_epsilon,
    double_geometric,
    double_geometric_pmf,
    double_geometric_variance,
    exact,
    laplace,
    laplace_pdf,
    noise_scale,
)


@pytest.mark.parametrize("scale", [0.5, 2, 6, 60])
def test_double_geometric_pmf_is_a_distribution(scale):
    support = np.arange(-200 * math.ceil(scale), 200 * math.ceil(scale) + 1)
    pmf = double_geometric_pmf(support, scale)
    assert pmf.sum() == pytest.approx(1, abs=1e-12)
    var = (support**2 * pmf).sum()
    assert var == pytest.approx(double_geometric_variance(scale), rel=1e-9)
    if scale >= 2:
        assert var == pytest.approx(2 * scale**2 - 1 / 6, rel=1e-3)


@pytest.mark.parametrize("scale", [1, 3, 12])
def test_double_geometric_samples_match_pmf(scale):
    draws = double_geometric(scale, 200_000, np.random.default_rng(42))
    assert draws.dtype == np.int64
    assert abs(draws.mean()) < 5 * math.sqrt(double_geometric_variance(scale) / draws.size)
    assert draws.var() == pytest.approx(double_geometric_variance(scale), rel=0.03)
    edge = int(4 * scale)
    values = np.clip(draws, -edge, edge)
    observed = np.bincount(values + edge, minlength=2 * edge + 1)
    support = np.arange(-edge, edge + 1)
    expected = double_geometric_pmf(support, scale)
    tail = (1 - expected.sum()) / 2
    expected[0] += tail
    expected[-1] += tail
    assert stats.chisquare(observed, expected * draws.size).pvalue > 1e-4


@given(st.integers(1, 5), st.sampled_from(["0.1", "0.5", "1", "2.5"]))
def test_privacy_loss_is_exactly_epsilon(sensitivity, epsilon):
    """For neighbours whose query differs by the sensitivity, max log pmf ratio = epsilon."""
    scale = noise_scale(sensitivity, epsilon)
    v = np.arange(-50, 51)
    loss = np.log(double_geometric_pmf(v, scale) / double_geometric_pmf(v + sensitivity, scale))
    assert loss.max() == pytest.approx(float(Fraction(epsilon)), rel=1e-9)
    assert np.abs(loss).max() <= float(Fraction(epsilon)) * (1 + 1e-9)
    x = np.linspace(-30, 30, 601)
    lap = np.log(laplace_pdf(x, scale) / laplace_pdf(x + sensitivity, scale))
    assert lap.max() == pytest.approx(float(Fraction(epsilon)), rel=1e-9)


def test_laplace_samples():
    draws = laplace(3, 100_000, 1)
    assert stats.kstest(draws, stats.laplace(scale=3).cdf).pvalue > 1e-4


def test_exact_arithmetic_and_validation():
    assert exact(0.1, "e") == Fraction(1, 10)
    assert noise_scale(2 * 3, 0.1) == 60
    for bad in (0, -1, float("nan"), float("inf"), True, "x", None):
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            as_epsilon(bad)
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        noise_scale(0, 1)
    with pytest.raises(PrivacyParameterError, match="scale"):
        double_geometric(-1, 3)
    with pytest.raises(PrivacyParameterError, match="RandomState"):
        double_geometric(1, 3, np.random.RandomState(0))


def test_seeded_generator_reproducible():
    a = double_geometric(4, 10, 7)
    b = double_geometric(4, 10, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)


def test_split_budget_and_ledger():
    shares = split_budget(0.3, 3)
    assert sum(shares) == Fraction(3, 10) and len(set(shares)) == 1
    weighted = split_budget(1, [1, 2, 1])
    assert weighted == [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)]
    with pytest.raises(PrivacyParameterError):
        split_budget(1, [1, 0])
    ledger = PrivacyLedger()
    for level, eps in enumerate(shares, 1):
        for region in range(3):  # parallel within a level
            ledger.record(f"r{region}", f"level {level}", 2, eps, "double geometric")
    assert ledger.total_epsilon == Fraction(3, 10)
    assert np.allclose(ledger.to_frame()["scale"], 20)
