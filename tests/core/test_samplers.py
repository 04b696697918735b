"""Exact samplers and secure randomness: laws (chi-square against exact pmfs), exactness, refusals."""

import math
from fractions import Fraction

import numpy as np
import pytest
import randomgen
from hypothesis import given, settings
from hypothesis import strategies as st
from laws import chacha, chisquare_pvalue
from scipy import stats

from dpmodels.core import selection
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.randomness import (
    SECURE_SOURCE,
    SEEDED_SOURCE,
    describe,
    is_secure,
    make_rng,
    release_rng,
    secure_generator,
)
from dpmodels.core.samplers import (
    EXACT_LIMIT,
    bernoulli_exp,
    bernoulli_exp_scalar,
    discrete_gaussian,
    discrete_laplace,
    exact_fraction,
    uniform_below,
    uniform_below_int,
)
from dpmodels.core.selection import exact_integer_weights, exponential_mechanism, laplace_exceeds, sample_proportional


# ----------------------------------------------------------------------------- randomness
def test_chacha20_keystream_is_the_rfc_7539_vector():
    """Known answer: all-zero key and nonce, block 0 (RFC 7539 appendix A.1, test vector 1)."""
    bg = randomgen.ChaCha(key=0, counter=0, rounds=20)
    words = [int(bg.random_raw()) for _ in range(4)]
    stream = b"".join(w.to_bytes(8, "little") for w in words)
    assert stream.hex() == "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"


def test_secure_generator_is_chacha20_with_a_fresh_key():
    a, b = secure_generator(), secure_generator()
    assert is_secure(a) and describe(a) == SECURE_SOURCE
    assert a.bit_generator.state["state"]["rounds"] == 20
    assert a.bit_generator.random_raw() != b.bit_generator.random_raw()  # fresh 256-bit keys


def test_make_rng_draws_securely_without_a_seed_and_labels_seeds():
    assert is_secure(make_rng())
    seeded = make_rng(7)
    assert not is_secure(seeded) and describe(seeded) == SEEDED_SOURCE
    with pytest.raises(PrivacyParameterError, match="RandomState"):
        make_rng(np.random.RandomState(0))
    with pytest.raises(PrivacyParameterError, match="seed"):
        make_rng(1.5)


def test_release_rng_refuses_a_seed_unless_declared_not_private():
    assert is_secure(release_rng())
    with pytest.raises(PrivacyParameterError, match="not private"):
        release_rng(3)
    assert describe(release_rng(3, not_private=True)) == SEEDED_SOURCE


# ----------------------------------------------------------------------------- exactness
def test_same_stream_gives_the_same_integers_on_any_platform():
    """Only integer arithmetic on ChaCha20 words: these values are fixed by the key alone."""
    assert discrete_laplace(Fraction(7, 2), 12, chacha(1)).tolist() == PINNED_LAPLACE
    assert discrete_gaussian(Fraction(10), 12, chacha(2)).tolist() == PINNED_GAUSSIAN


PINNED_LAPLACE = [6, 0, 1, -6, 0, -5, -1, 1, -1, -3, -1, -1]
PINNED_GAUSSIAN = [1, 2, -1, 3, 3, -3, 3, 5, 7, 3, 5, 4]


@given(st.integers(1, 2**62), st.integers(1, 400))
@settings(max_examples=60, deadline=None)
def test_uniform_below_stays_in_range(high, n):
    draws = uniform_below(high, chacha(high % 1000), size=n)
    assert draws.dtype == np.int64 and draws.min() >= 0 and draws.max() < high


@given(st.fractions(min_value=Fraction(1, 50), max_value=Fraction(500)).filter(lambda f: f.denominator < 1000))
@settings(max_examples=40, deadline=None)
def test_discrete_laplace_is_deterministic_given_the_stream(scale):
    a = discrete_laplace(scale, 50, chacha(5))
    assert np.array_equal(a, discrete_laplace(scale, 50, chacha(5)))
    assert a.dtype == np.int64


def test_scales_beyond_exact_integers_are_refused():
    with pytest.raises(PrivacyParameterError, match="scale"):
        discrete_laplace(Fraction(2 * 10**25), 3, chacha(0))
    with pytest.raises(PrivacyParameterError, match="scale"):
        discrete_laplace(Fraction(1, EXACT_LIMIT), 3, chacha(0))
    with pytest.raises(PrivacyParameterError, match="scale"):
        exact_fraction(math.inf, "scale")
    with pytest.raises(PrivacyParameterError, match="sigma2"):  # floor(sigma) + 1 >= 2^55: beyond int64 draws
        discrete_gaussian(Fraction(2**110), 3, chacha(0))


# ----------------------------------------------------------------------------- laws
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7)])
def test_bernoulli_exp_has_probability_exp_minus_gamma(gamma):
    n = 200_000
    hits = bernoulli_exp(np.full(n, gamma.numerator), gamma.denominator, chacha(11)).sum()
    assert stats.binomtest(int(hits), n, math.exp(-gamma)).pvalue > 1e-4


def test_bernoulli_exp_scalar_agrees_with_the_law_for_huge_rationals():
    gamma = Fraction(3 * 2**80 + 1, 2**81)  # 1.5 + 2^-81: denominator far beyond int64
    hits = sum(bernoulli_exp_scalar(gamma, chacha(i)) for i in range(4000))
    assert stats.binomtest(hits, 4000, math.exp(-1.5)).pvalue > 1e-4


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(216)])
def test_discrete_laplace_matches_the_exact_pmf(scale):
    draws = discrete_laplace(scale, 200_000, chacha(3))
    a = math.exp(-1 / scale)
    support = np.arange(-int(5 * scale) - 3, int(5 * scale) + 4)
    pmf = (1 - a) / (1 + a) * a ** np.abs(support)
    assert chisquare_pvalue(draws, support, pmf) > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(3), Fraction(100)])
def test_discrete_gaussian_matches_the_exact_pmf(sigma2):
    draws = discrete_gaussian(sigma2, 200_000, chacha(4))
    wide = np.arange(-60 * int(sigma2 + 1), 60 * int(sigma2 + 1) + 1)
    weights = np.exp(-(wide.astype(float) ** 2) / (2 * float(sigma2)))
    pmf = weights / weights.sum()
    inner = np.abs(wide) <= 4 * math.sqrt(sigma2) + 2
    assert chisquare_pvalue(draws, wide[inner], pmf[inner]) > 1e-4


@pytest.mark.parametrize(
    "scores, inv_temp",
    [
        ([1e16, 1e16, 1e16, 1e16], 0.5),  # a 4-way tie at 1e16: uniform, exactly
        ([1e16, 1e16 + 2, 1e16 - 2, 1e16 + 4], 0.5),
        ([0.1, 0.25, 0.3, 2.0 / 3.0], 3.7),  # float scores: dyadic rationals, fallback path
        ([3, 1, 4, 1, 5, 9, 2, 6], Fraction(1, 4)),
    ],
)
def test_exponential_mechanism_matches_exact_probabilities(scores, inv_temp):
    rng = chacha(9)
    draws = np.array([exponential_mechanism(scores, inv_temp, rng) for _ in range(6000)])
    centred = np.array([float(Fraction(s) - Fraction(max(scores))) for s in scores])
    p = np.exp(float(inv_temp) * centred)
    p /= p.sum()
    assert chisquare_pvalue(draws, np.arange(len(scores)), p) > 1e-4


def test_sample_proportional_matches_weights_and_never_draws_zero_weight():
    w = np.array([0.5, 0.0, 0.25, 2**-3, 0.125])
    rng = chacha(12)
    draws = np.array([sample_proportional(w, rng) for _ in range(20_000)])
    assert not (draws == 1).any()
    assert chisquare_pvalue(draws, np.arange(5), w / w.sum()) > 1e-4


def test_laplace_exceeds_has_the_laplace_tail_probability():
    rng = chacha(13)
    for value, threshold in [(3.0, 5.0), (5.0, 3.0), (4.0, 4.0)]:
        hits = sum(laplace_exceeds(value, 2.0, threshold, rng) for _ in range(8000))
        x = threshold - value
        p = 0.5 * math.exp(-x / 2.0) if x > 0 else 1 - 0.5 * math.exp(x / 2.0)
        assert stats.binomtest(hits, 8000, p).pvalue > 1e-4


# ----------------------------------------------------------------------------- proportional draws: exactness
def exact_probabilities(weights) -> list[Fraction]:
    ints, _ = exact_integer_weights(weights)
    return [Fraction(n, sum(ints)) for n in ints]


def test_integer_conversion_is_exact():
    ints, e = exact_integer_weights([2.0**-1000, 1.0])
    assert ints == [1, 2**1000] and e == -1000
    assert exact_probabilities([2.0**-1000, 1.0])[0] == Fraction(1, 2**1000 + 1)
    w = np.random.default_rng(3).random(50) * 2.0 ** np.arange(-600, 400, 20)
    ints, e = exact_integer_weights(w)
    assert all(Fraction(float(x)) == n * Fraction(2) ** e for x, n in zip(w, ints, strict=True))
    assert exact_integer_weights([5e-324, 0.0]) == ([1, 0], -1074)


def test_tiny_weight_is_located_exactly(monkeypatch):
    """A mocked uniform integer: 0 is the tiny weight's only value, 1 .. 2**1000 the other's."""
    seen = []

    def fake(n, rng):
        seen.append(n)
        return fake.value

    monkeypatch.setattr(selection, "uniform_below_int", fake)
    rng = chacha(0)
    for value, index in ((0, 0), (1, 1), (2**1000, 1)):
        fake.value = value
        assert sample_proportional([2.0**-1000, 1.0], rng) == index
    for value, index in ((0, 0), (2**999 - 1, 0), (2**999, 2), (2**1000 - 1, 2), (2**1000, 3)):
        fake.value = value
        assert sample_proportional([0.5, 0.0, 0.5, 2.0**-1000], rng) == index
    assert seen[0] == 2**1000 + 1 and seen[-1] == 2**1000 + 1


PINNED_PROPORTIONAL = [[0, 3, 5, 0, 5, 2, 3, 5, 2, 0, 2, 3], [0, 2, 2, 0, 0, 0, 0, 2, 4, 2, 2, 2]]


def test_proportional_draws_are_fixed_by_the_stream():
    """Raw words only (no ``Generator.integers``): pinned by the key; ``size=1`` is one draw."""
    small, huge = [0.1, 0.0, 0.25, 1 / 3, 1e-3, 0.3166, 0.0], [0.25, 0.0, 0.5, 2.0**-1000, 0.25]
    for w, pinned in zip((small, huge), PINNED_PROPORTIONAL, strict=True):
        one, batch = chacha(3), chacha(3)
        assert [sample_proportional(w, one) for _ in range(12)] == pinned
        assert [int(sample_proportional(w, batch, size=1)[0]) for _ in range(12)] == pinned
        assert sample_proportional(w, chacha(3), size=(2, 3)).shape == (2, 3)


# ----------------------------------------------------------------------------- proportional draws: laws
def test_small_totals_follow_the_exact_law():
    w = [0.1, 0.0, 0.25, 1 / 3, 1e-3, 0.3166, 0.0]
    draws = sample_proportional(w, chacha(20240607), size=400_000)
    counts = np.bincount(draws, minlength=len(w))
    assert counts[1] == 0 and counts[6] == 0  # a zero weight is never drawn
    p = np.array([float(x) for x in exact_probabilities(w)])
    live = p > 0
    assert stats.chisquare(counts[live], p[live] * len(draws)).pvalue > 1e-3


def test_huge_totals_follow_the_exact_law():
    w = [0.25, 0.0, 0.5, 2.0**-1000, 0.25]  # total 2**1000 + 1: many words per trial, rejection
    draws = sample_proportional(w, chacha(7), size=40_000)
    counts = np.bincount(draws, minlength=len(w))
    assert counts[1] == 0 and counts[3] == 0  # probability 0 and 2**-1000
    assert stats.chisquare(counts[[0, 2, 4]], np.array([0.25, 0.5, 0.25]) * len(draws)).pvalue > 1e-3


def test_uniform_below_int_is_uniform_beyond_int64():
    n = 3 * 2**70
    rng = chacha(11)
    x = [uniform_below_int(n, rng) for _ in range(30_000)]
    assert all(0 <= v < n for v in x)
    thirds = np.bincount([v >> 70 for v in x], minlength=3)
    assert len(thirds) == 3 and stats.chisquare(thirds).pvalue > 1e-3
    assert uniform_below_int(1, rng) == 0


@pytest.mark.parametrize("weights", [[], [1.0, -0.5], [np.nan, 1.0], [0.0, 0.0], [np.inf, 1.0], [[1.0, 2.0]]])
def test_sample_proportional_refuses_bad_weights(weights):
    with pytest.raises(DataValidationError, match="weights"):
        sample_proportional(weights, chacha(0))


def test_sample_proportional_needs_a_generator():
    with pytest.raises(DataValidationError, match="rng"):
        sample_proportional([1.0, 1.0], np.random.RandomState(0))


def test_bench_noise_runs_both_tables_at_a_tiny_size(tmp_path):
    """``dpmodels bench noise``: the samplers' table and the exponential mechanism's timing by score shape."""
    import json

    from dpmodels import cli

    out = tmp_path / "noise.json"
    argv = ["bench", "noise", "--cells", "2000", "--runs", "1", "--opendp-cells", "200"]
    assert cli.main([*argv, "--em-candidates", "50", "--em-draws", "3", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [row["scores"] for row in doc["exponential mechanism"]][0] == "all tied"
    assert doc["exponential mechanism"][0]["x tied"] == 1 and len(doc["noise"]) >= 5


# ----------------------------------------------------------------------------- chunked draws
@pytest.fixture
def small_chunks(monkeypatch):
    """Draw in chunks of 1,000 so that a test-sized request crosses many chunk boundaries."""
    import dpmodels.core.samplers as samplers

    monkeypatch.setattr(samplers, "DRAW_CHUNK", 1000)


def test_a_request_within_one_chunk_reads_the_generator_as_one_pass(small_chunks):
    """Up to DRAW_CHUNK draws nothing changes: a chunked request of 1,000 equals the same stream's
    first pass, which the rejection loop reads as before."""
    from dpmodels.core.samplers import _discrete_laplace

    np.testing.assert_array_equal(
        discrete_laplace(Fraction(7, 2), 1000, chacha(8)), _discrete_laplace(7, 2, 1000, chacha(8))
    )


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(7, 2)])
def test_chunked_discrete_laplace_matches_the_exact_pmf(small_chunks, scale):
    draws = discrete_laplace(scale, (200, 1000), chacha(13))  # 200 chunks
    assert draws.shape == (200, 1000)
    a = math.exp(-1 / scale)
    support = np.arange(-int(5 * scale) - 3, int(5 * scale) + 4)
    pmf = (1 - a) / (1 + a) * a ** np.abs(support)
    assert chisquare_pvalue(draws.ravel(), support, pmf) > 1e-4


def test_chunked_discrete_gaussian_matches_the_exact_pmf(small_chunks):
    sigma2 = Fraction(3)
    draws = discrete_gaussian(sigma2, 200_000, chacha(14))
    wide = np.arange(-60 * 4, 60 * 4 + 1)
    weights = np.exp(-(wide.astype(float) ** 2) / (2 * float(sigma2)))
    pmf = weights / weights.sum()
    inner = np.abs(wide) <= 4 * math.sqrt(sigma2) + 2
    assert chisquare_pvalue(draws, wide[inner], pmf[inner]) > 1e-4
