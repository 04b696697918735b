"""The exact discrete Gaussian at census variances and its law: draws against the exact pmf and cdf
(chi-square), both acceptance paths against each other, two-sample against OpenDP, the pmf, cdf and
variance helpers against high-precision sums and each other, refusals."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from laws import chacha, chisquare_pvalue
from scipy import stats

import dpmodels.core
from dpmodels.core import gaussian, samplers
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.gaussian import (
    discrete_gaussian,
    discrete_gaussian_cdf,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
)

FINE = Fraction(1000000007, 1000000)  # 1000.000007: 2 p q t^2 ~ 2.1e18, beyond the int64 path's 2^55


def binned_pvalue(draws: np.ndarray, sigma2, bins: int = 60) -> float:
    """Chi-square of draws in about ``bins`` equal-probability bins, probabilities from the cdf."""
    sigma = math.sqrt(float(sigma2))
    inner = np.unique(np.round(sigma * stats.norm.ppf(np.arange(1, bins) / bins)))  # upper edges, inclusive
    cells = np.searchsorted(inner, draws, side="left")  # cell i: inner[i-1] < z <= inner[i]
    observed = np.bincount(cells, minlength=inner.size + 1)
    cdf = discrete_gaussian_cdf(inner, sigma2)
    expected = np.diff(np.r_[0.0, cdf, 1.0]) * draws.size
    assert expected.min() > draws.size / (2 * bins)  # roughly equal bins: every one has power
    return stats.chisquare(observed, expected).pvalue


# ----------------------------------------------------------------------------- the law of the draws
def test_the_int64_path_is_unchanged_where_it_applies():
    """The pinned values of the original sampler (also pinned in test_samplers.py)."""
    assert discrete_gaussian(Fraction(10), 12, chacha(2)).tolist() == [1, 2, -1, 3, 3, -3, 3, 5, 7, 3, 5, 4]


def test_census_variances_are_fixed_by_the_stream():
    """Integer arithmetic on ChaCha20 words only: the limb path's values are fixed by the key."""
    assert discrete_gaussian(10**10, 8, chacha(2)).tolist() == PINNED_1E10
    assert discrete_gaussian(FINE, 8, chacha(2)).tolist() == PINNED_FINE
    big = discrete_gaussian(10**12, (3, 4), chacha(5))
    assert big.shape == (3, 4) and big.dtype == np.int64
    assert np.array_equal(big, discrete_gaussian(10**12, (3, 4), chacha(5)))


PINNED_1E10 = [1275, 250158, -71927, -76231, 62647, 22458, -133243, -114557]
PINNED_FINE = [10, -32, 5, 30, 16, 10, -15, 75]


@pytest.mark.parametrize("sigma2", [Fraction(1), FINE], ids=["1", "1000000007/1000000"])
def test_draws_match_the_exact_pmf_point_by_point(sigma2):
    draws = discrete_gaussian(sigma2, 200_000, chacha(21))
    half = int(5 * math.sqrt(sigma2)) + 2
    support = np.arange(-half, half + 1)
    assert chisquare_pvalue(draws, support, discrete_gaussian_pmf(support, sigma2)) > 1e-4


@pytest.mark.parametrize("sigma2", [10**4, 10**10, 10**12])
def test_draws_match_the_exact_cdf_in_equal_probability_bins(sigma2):
    draws = discrete_gaussian(sigma2, 200_000, chacha(22))
    assert binned_pvalue(draws, sigma2) > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(3), Fraction(100)])
@pytest.mark.parametrize("squares", ["int64 halves", "python ints"])
def test_the_limb_path_has_the_exact_law_where_int64_could_also_run(monkeypatch, sigma2, squares):
    """Small variances are where a chi-square is most sensitive: force the limb path there."""
    monkeypatch.setattr(gaussian, "EXACT_LIMIT", 0)
    if squares == "python ints":
        monkeypatch.setattr(gaussian, "_SQUARE_LIMIT", 0)
    draws = discrete_gaussian(sigma2, 150_000, chacha(23))
    half = int(6 * math.sqrt(sigma2)) + 3
    support = np.arange(-half, half + 1)
    assert chisquare_pvalue(draws, support, discrete_gaussian_pmf(support, sigma2)) > 1e-4


def test_a_float_variance_is_its_dyadic_rational():
    """``0.1`` is 3602879701896397 / 2^55: denominator 2^55, refused before, sampled on Python-int limbs."""
    draws = discrete_gaussian(0.1, 100_000, chacha(24))
    support = np.arange(-3, 4)
    assert chisquare_pvalue(draws, support, discrete_gaussian_pmf(support, 0.1)) > 1e-4
    assert (draws != 0).sum() > 0  # P(Z != 0) ~ 1.4e-2


# ----------------------------------------------------------------------------- against OpenDP
def opendp_gaussian(scale: float, n: int) -> np.ndarray:
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=scale)
    return np.array(meas([0] * n), dtype=np.int64)


@pytest.mark.parametrize("scale", [2.0, 1e5], ids=["sigma2=4", "sigma2=1e10"])
def test_two_samples_against_opendps_discrete_gaussian(scale):
    """OpenDP's ``make_gaussian`` on ints draws the discrete Gaussian of variance parameter scale^2."""
    n = 20_000
    theirs = opendp_gaussian(scale, n)
    ours = discrete_gaussian(Fraction(scale) ** 2, n, chacha(25))
    edges = np.unique(np.round(scale * stats.norm.ppf(np.linspace(0.05, 0.95, 19))))
    table = np.array([np.bincount(np.searchsorted(edges, x), minlength=edges.size + 1) for x in (ours, theirs)])
    assert stats.chi2_contingency(table).pvalue > 1e-4
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-4


# ----------------------------------------------------------------------------- the helpers
def mp_sums(sigma2, ks) -> tuple:
    """``sum_k w_k``, ``sum_k k^2 w_k`` and the partial sums ``sum_{k <= z} w_k`` for ``z`` in ``ks``,
    ``w_k = exp(-k^2 / (2 sigma2))``, at 50 digits, over every ``|k| <= 40 sigma + 3``."""
    with mpmath.workdps(50):
        s2 = mpmath.mpf(Fraction(sigma2).numerator) / Fraction(sigma2).denominator
        half = int(40 * math.sqrt(float(sigma2))) + 3
        w = {k: mpmath.exp(-mpmath.mpf(k * k) / (2 * s2)) for k in range(-half, half + 1)}
        total = mpmath.fsum(w.values())
        second = mpmath.fsum(k * k * v for k, v in w.items())
        partial = [mpmath.fsum(v for k, v in w.items() if k <= z) / total for z in ks]
        return total, second / total, partial


@pytest.mark.parametrize("sigma2", [Fraction(1, 100), Fraction(1, 3), 1, Fraction(15, 2), 400, 401, 5000, 10**4])
def test_helpers_agree_with_50_digit_sums(sigma2):
    sigma = math.sqrt(sigma2)
    ks = sorted({0, -1, 1, -2, int(-sigma), int(-3 * sigma), int(2 * sigma), int(-7 * sigma) - 1})
    total, variance, partial = mp_sums(sigma2, ks)
    assert discrete_gaussian_variance(sigma2) == pytest.approx(float(variance), rel=1e-12)
    assert discrete_gaussian_pmf(0, sigma2) == pytest.approx(float(1 / total), rel=1e-12)
    assert discrete_gaussian_cdf(ks, sigma2) == pytest.approx([float(c) for c in partial], rel=1e-10, abs=1e-15)


def test_tiny_and_census_variances():
    """``sigma2 = 1e-2``: ``E[Z^2] = 2 e^-50 / (1 + 2 e^-50)``; from 1e4 on the variance is sigma2 to 1e-12."""
    assert discrete_gaussian_variance(Fraction(1, 100)) == pytest.approx(2 * math.exp(-50), rel=1e-12)
    assert discrete_gaussian_pmf(1, 0.01) == pytest.approx(math.exp(-50), rel=1e-12)
    assert discrete_gaussian_variance(1) == pytest.approx(1 - 2.1e-7, abs=1e-8)  # just below sigma2
    for sigma2 in (10**4, 10**6, 10**10, 10**12, FINE):
        assert discrete_gaussian_variance(sigma2) == pytest.approx(float(sigma2), rel=1e-12)
        assert discrete_gaussian_pmf(0, sigma2) == pytest.approx(1 / math.sqrt(2 * math.pi * sigma2), rel=1e-12)


@pytest.mark.parametrize("sigma2", [1.0, 7.5, 60.0, 150.0, 400.0])
def test_the_dual_forms_equal_the_direct_sums_where_both_are_cheap(sigma2):
    assert gaussian._normalizer_dual(sigma2) == pytest.approx(gaussian._normalizer_direct(sigma2), rel=1e-13)
    assert gaussian._variance_dual(sigma2) == pytest.approx(gaussian._variance_direct(sigma2), rel=1e-12)
    if sigma2 >= 60:  # the expansion's first omitted term ~ 1e-7 sigma^-8
        z = np.arange(-int(8 * math.sqrt(sigma2)), 0)
        direct, expansion = gaussian._lower_tail_direct(z, sigma2), gaussian._lower_tail_expansion(z, sigma2)
        assert np.allclose(expansion, direct, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("sigma2", [0.01, 1.0, 1e3, 1e6])
def test_pmf_sums_to_one_and_cdf_sums_the_pmf(sigma2):
    half = int(40 * math.sqrt(sigma2)) + 3
    z = np.arange(-half, half + 1)
    pmf = discrete_gaussian_pmf(z, sigma2)
    assert math.fsum(pmf) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(discrete_gaussian_cdf(z, sigma2), np.cumsum(pmf), rtol=1e-9, atol=1e-12)


log_sigma2 = st.floats(min_value=-2.0, max_value=12.0)


@given(log_sigma2, st.lists(st.floats(-8, 8), min_size=2, max_size=20))
@settings(max_examples=80, deadline=None)
def test_pmf_is_symmetric_and_cdf_increases_by_the_pmf(exponent, multiples):
    sigma2 = 10.0**exponent
    z = np.unique(np.round(np.array(multiples) * math.sqrt(sigma2)))
    pmf = discrete_gaussian_pmf(z, sigma2)
    assert np.array_equal(pmf, discrete_gaussian_pmf(-z, sigma2))
    cdf = discrete_gaussian_cdf(z, sigma2)
    assert np.all(np.diff(cdf) >= 0) and cdf.min() >= 0 and cdf.max() <= 1
    steps = discrete_gaussian_cdf(z, sigma2) - discrete_gaussian_cdf(z - 1, sigma2)
    assert np.allclose(steps, pmf, rtol=1e-6, atol=1e-15)
    # P(Z <= -1) = (1 - P(Z = 0)) / 2: the expansion's tail against the dual normalizer
    assert discrete_gaussian_cdf(-1, sigma2) == pytest.approx((1 - discrete_gaussian_pmf(0, sigma2)) / 2, rel=1e-12)


def test_non_integers():
    assert discrete_gaussian_pmf([0.5, 1.0], 4).tolist() == [0.0, discrete_gaussian_pmf(1, 4)]
    assert discrete_gaussian_cdf(0.7, 10**10) == discrete_gaussian_cdf(0, 10**10)


# ----------------------------------------------------------------------------- exports and refusals
def test_exported_from_the_core_and_the_samplers():
    for name in ("discrete_gaussian", "discrete_gaussian_pmf", "discrete_gaussian_cdf", "discrete_gaussian_variance"):
        assert name in dpmodels.core.__all__ and name in samplers.__all__ and name in gaussian.__all__
        assert getattr(dpmodels.core, name) is getattr(samplers, name) is getattr(gaussian, name)


@pytest.mark.parametrize("bad", [0, -1, Fraction(-1, 3), math.nan, math.inf, True, "many", None])
def test_bad_variances_are_refused_naming_sigma2(bad):
    with pytest.raises(PrivacyParameterError, match="sigma2"):
        discrete_gaussian(bad, 3, chacha(0))
    for helper in (discrete_gaussian_variance, lambda s: discrete_gaussian_pmf(0, s)):
        with pytest.raises(PrivacyParameterError, match="sigma2"):
            helper(bad)


def test_the_one_cap_is_stated():
    """``floor(sigma) + 1 < 2^55``: every draw (``|Z| < 256 t``) fits int64."""
    below = (2**55 - 1) ** 2 - 1
    assert discrete_gaussian(below, 4, chacha(1)).dtype == np.int64
    with pytest.raises(PrivacyParameterError, match=r"sigma2: .*2\^55"):
        discrete_gaussian((2**55 - 1) ** 2, 4, chacha(1))
    with pytest.raises(PrivacyParameterError, match="sigma2"):
        discrete_gaussian_cdf(0, Fraction(10**400))
