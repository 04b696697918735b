"""The private algorithms draw exactly: the core exponential mechanism and exact base samplers.

Before, ``em_choice`` drew by Gumbel-max in floating point, Algorithm 1's base sampler by float
elementary symmetric polynomials (a base of probability below ``2^-53`` could never be drawn),
and the inverse temperature ``eps / (2 Delta)`` was a float.  These tests pin the exact laws of
the new samplers and that every private algorithm goes through them.
"""

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import randomgen
from scipy.special import expit
from scipy.stats import binomtest, chisquare
from submodular_cases import KINDS, make

from dpmodels import instances
from dpmodels.core import selection
from dpmodels.core.samplers import EXACT_LIMIT
from dpmodels.core.selection import exponential_mechanism
from dpmodels.submodular.exact import bases as exact_bases
from dpmodels.submodular.exact.bases import sample_base
from dpmodels.submodular.exact.coins import ExpCoins, logistic_bernoulli
from dpmodels.submodular.matroids import GraphicMatroid, LaminarMatroid, Matroid, PartitionMatroid, UniformMatroid
from dpmodels.submodular.mechanism import continuous as continuous_mechanisms
from dpmodels.submodular.mechanism import exponential
from dpmodels.submodular.mechanism import greedy as greedy_mechanisms
from dpmodels.submodular.mechanism.exponential import em_choice, em_probabilities, inverse_temperature


def chacha(key: int) -> np.random.Generator:
    return np.random.Generator(randomgen.ChaCha(key=key, counter=0, rounds=20))


def _law(scores, beta) -> np.ndarray:
    """``exp(beta (q_j - max q))`` normalised, the gaps taken exactly before the one float exp."""
    q = [Fraction(*float(s).as_integer_ratio()) for s in scores]
    w = np.array([math.exp(float(Fraction(beta) * (v - max(q)))) for v in q])
    return w / w.sum()


def _chisquare(counts: np.ndarray, p: np.ndarray) -> float:
    """p-value of ``counts`` against ``p``, cells with expected count below 5 pooled."""
    exp = p * counts.sum()
    big = exp >= 5
    obs, exp = np.append(counts[big], counts[~big].sum()), np.append(exp[big], exp[~big].sum())
    keep = exp > 0
    return chisquare(obs[keep], exp[keep]).pvalue


# ----------------------------------------------------------------------------- inverse temperature


def test_inverse_temperature_is_the_exact_rational():
    assert inverse_temperature(0.1, 1.0) == Fraction(1, 20)  # not the float 0.05's dyadic value
    assert inverse_temperature(0.5, 0.01) == 25 and inverse_temperature(Fraction(1, 3), 1) == Fraction(1, 6)
    assert inverse_temperature(math.inf, 1.0) == math.inf and inverse_temperature(0.0, 2.0) == 0


# ----------------------------------------------------------------------------- em_choice


def test_em_choice_index_is_the_core_samplers():
    """Same stream, same index: the index comes from the exact core sampler, the floats are reports."""
    q = [0.3, 1.7, 1.2, 2.9, 0.1, 1.9]
    a, b = chacha(1), chacha(1)
    for _ in range(200):
        index, probs = em_choice(q, Fraction(7, 10), a)
        assert index == exponential_mechanism(q, Fraction(7, 10), b)
    assert np.array_equal(probs, em_probabilities(q, 0.7))


@pytest.mark.parametrize("inv_temp", [Fraction(1, 2), 0.5, Fraction(7, 20)])
def test_em_choice_at_a_four_way_tie_at_1e16_is_uniform(inv_temp):
    rng, draws = chacha(2), 4000
    counts = np.bincount([em_choice([1e16] * 4, inv_temp, rng)[0] for _ in range(draws)], minlength=4)
    assert chisquare(counts).pvalue > 1e-3


# ----------------------------------------------------------------------------- core sampler, split path


def test_core_em_on_float_scores_and_a_decimal_inverse_temperature():
    """Float scores times 37/10 need a denominator far above 2^55: the split path, exact law."""
    q = np.random.default_rng(0).random(30) * 3
    beta = Fraction(37, 10)
    _, den = selection._integer_exponents(q, beta)
    assert den >= EXACT_LIMIT  # the path this test is about
    rng, draws = chacha(3), 6000
    counts = np.bincount([exponential_mechanism(q, beta, rng) for _ in range(draws)], minlength=q.size)
    assert _chisquare(counts, _law(q, beta)) > 1e-4


def test_core_em_with_capped_heads():
    """An exponent above 512 is split into a capped head and a large tail: never drawn, law intact."""
    q = [0.0, 3000.3, 3000.3, 2999.9]
    rng, draws = chacha(4), 4000
    picks = np.bincount([exponential_mechanism(q, Fraction(1, 3), rng) for _ in range(draws)], minlength=4)
    assert picks[0] == 0 and _chisquare(picks[1:], _law(q[1:], Fraction(1, 3))) > 1e-4


@pytest.mark.parametrize("den", [1000, 3 * 2**60])
def test_exp_coins_have_probability_exp_minus_gamma(den):
    gammas = [0, Fraction(1, 5), Fraction(13, 10), Fraction(31, 7)]
    nums = [int(g * den) for g in gammas]
    coins, rng, draws = ExpCoins(nums, den), chacha(5), 20000
    assert coins.direct == (den < EXACT_LIMIT)
    hits = coins.draw(np.repeat(np.arange(len(nums)), draws), rng).reshape(len(nums), draws).sum(axis=1)
    for n, h in zip(nums, hits, strict=True):
        assert binomtest(int(h), draws, math.exp(-n / den)).pvalue > 1e-4


def test_logistic_bernoulli_has_probability_sigma():
    z = [Fraction(-5, 2), Fraction(-1, 10), Fraction(0), Fraction(7, 10), Fraction(3)]
    den = 3 * 2**60
    coins = ExpCoins([int(abs(v) * den) for v in z], den)
    positive = np.array([v >= 0 for v in z])
    rng, draws = chacha(6), 8000
    hits = np.sum([logistic_bernoulli(coins, positive, rng) for _ in range(draws)], axis=0)
    for v, h in zip(z, hits, strict=True):
        assert binomtest(int(h), draws, float(expit(float(v)))).pvalue > 1e-4


# ----------------------------------------------------------------------------- exact base sampler


def _base_law(M, g, beta):
    bases = [tuple(np.flatnonzero(b)) for b in M.bases()]
    return bases, _law([sum(Fraction(*g[e].as_integer_ratio()) for e in b) for b in bases], beta)


def _check_base_sampler(M, g, beta, draws=3000, key=7):
    bases, p = _base_law(M, g, beta)
    rng = chacha(key)
    seen = Counter(tuple(np.flatnonzero(sample_base(M, g, beta, rng))) for _ in range(draws))
    assert set(seen) <= set(bases), "a non-base was drawn"
    assert _chisquare(np.array([seen[b] for b in bases]), p) > 1e-4


@pytest.mark.parametrize("kind", KINDS)
def test_exact_base_sampler_matches_the_product_weight_law(kind):
    M = make(kind)
    g = np.random.default_rng(3).normal(size=M.n) * 2.5
    _check_base_sampler(M, g, Fraction(7, 10))


class _Wrapped(Matroid):
    """A matroid class the samplers do not know: only its independence oracle."""

    def __init__(self, inner):
        self.inner, self.n = inner, inner.n

    def is_independent(self, S) -> bool:
        return self.inner.is_independent(S)


def test_conditional_poisson_with_a_base_check_matches_the_law(monkeypatch):
    """The path of other matroid classes beyond enumeration, forced on a small one."""
    monkeypatch.setattr(exact_bases, "ENUMERATE_MAX", 0)
    monkeypatch.setattr(exact_bases, "_enumerated", None)  # fail loudly if the enumeration still ran
    M = _Wrapped(make("laminar"))
    _check_base_sampler(M, np.random.default_rng(4).normal(size=M.n), Fraction(3, 2), draws=2000)


@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_sequential_laminar_sampler_matches_the_law(scale, monkeypatch):
    """Larger laminar matroids: exact sequential decisions on decimal bounds, forced on a small one."""
    monkeypatch.setattr(exact_bases, "ENUMERATE_MAX", 0)
    monkeypatch.setattr(exact_bases, "_enumerated", None)
    M = make("laminar")
    _check_base_sampler(M, np.random.default_rng(6).normal(size=M.n) * scale, Fraction(7, 10), draws=2000)


def test_sequential_laminar_sampler_with_a_heavy_set_over_capacity():
    """30 elements, the 10 heaviest in a set of capacity 2 (a base takes 2 of them and all 20 others):
    drawn in well under a second at every temperature (a conditional Poisson draw is almost never a
    base here), and the heavy set holds exactly 2."""
    M = LaminarMatroid(30, [list(range(10))], [2])
    g = np.r_[np.full(10, 10.0), np.zeros(20)]
    rng = chacha(11)
    for beta in (Fraction(1, 20), Fraction(1, 2), Fraction(5), Fraction(500)):
        B = sample_base(M, g, beta, rng)
        assert B[:10].sum() == 2 and B[10:].all()


@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_sequential_forest_sampler_matches_the_law(scale, monkeypatch):
    """Larger graphic matroids: exact sequential decisions (interval bounds), forced on small graphs,
    at an ordinary and at a wide weight range (e^60 between gradients 2 x 30 apart)."""
    monkeypatch.setattr(exact_bases, "ENUMERATE_MAX", 0)
    monkeypatch.setattr(exact_bases, "_enumerated", None)
    M = make("graphic")
    _check_base_sampler(M, np.random.default_rng(5).normal(size=M.n) * scale, Fraction(7, 10), draws=2000)


def test_sequential_forest_sampler_exact_fallback(monkeypatch):
    """With the float intervals made useless, every decision runs in exact rational arithmetic."""
    from dpmodels.submodular.exact import graphic as exact_graphic

    monkeypatch.setattr(exact_bases, "ENUMERATE_MAX", 0)
    monkeypatch.setattr(exact_graphic._Conductances, "between", lambda self, u, v: (0.0, math.inf))
    M = GraphicMatroid(4, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    _check_base_sampler(M, np.array([0.3, 1.1, 0.2, 2.5, 0.7]), Fraction(7, 10), draws=600)


def test_exp_bounds_bracket_the_exponential():
    from dpmodels.submodular.exact.coins import exp_bounds

    for x in (Fraction(0), Fraction(-1, 3), Fraction(-7000, 3), Fraction(5, 7)):
        lo, hi = exp_bounds(x, 30)
        assert 0 < lo <= hi and hi - lo <= hi * Fraction(1, 10**24)
        finer = exp_bounds(x, 60)
        assert lo <= finer[0] <= finer[1] <= hi  # nested: the true value is inside both
        if x > -700:
            assert float(lo) == pytest.approx(math.exp(x), rel=1e-15)


def test_partition_blocks_at_full_and_zero_capacity():
    M = PartitionMatroid([0, 0, 1, 1, 2, 2, 2], [2, 0, 1])
    g = np.array([0.1, 9.0, 5.0, 5.0, 0.3, 0.2, 0.1])
    _check_base_sampler(M, g, Fraction(1, 3))
    assert all(sample_base(M, g, Fraction(1, 3), chacha(8))[[0, 1]].all() for _ in range(5))


def test_base_sampler_at_huge_gaps_and_ties():
    """Gradients 1e16 apart at beta = 7/10: the top r are always drawn; a tie at 1e16 is uniform."""
    M = UniformMatroid(5, 2)
    far = np.array([1e16, 0.0, 1e16, 0.0, 0.0])
    assert all(np.flatnonzero(sample_base(M, far, Fraction(7, 10), chacha(9))).tolist() == [0, 2] for _ in range(20))
    _check_base_sampler(GraphicMatroid(3, [(0, 1), (1, 2), (0, 2)]), np.full(3, 1e16), Fraction(7, 10), draws=1200)


def test_base_sampler_at_the_limits():
    M = UniformMatroid(4, 2)
    g = np.array([1.0, 3.0, 2.0, 3.0])
    assert np.flatnonzero(sample_base(M, g, math.inf, None)).tolist() == [1, 3]  # greedy, lowest index on ties
    rng, draws = chacha(10), 3000
    seen = Counter(tuple(np.flatnonzero(sample_base(M, g, Fraction(0), rng))) for _ in range(draws))
    assert len(seen) == 6 and chisquare(list(seen.values())).pvalue > 1e-4  # beta = 0: uniform


# ----------------------------------------------------------------------------- the algorithms use them


def _spy(monkeypatch, module, name, calls):
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append((name, args))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


def test_every_private_algorithm_draws_with_the_exact_samplers(monkeypatch):
    """Each EM of Alg. 1 (bases and grid), Alg. 2, Mitrovic, Alg. 3 and Alg. 4 reaches the exact
    samplers with the inverse temperature eps / (2 Delta) = 0.3 / 2 as the Fraction 3/20."""
    calls: list = []
    _spy(monkeypatch, exponential, "exponential_mechanism", calls)
    _spy(monkeypatch, exact_bases, "conditional_poisson", calls)
    trap = instances.load("submodular/trap")
    ex2 = instances.load("submodular/k-coverage-example")
    set_fm, k_fm = (trap.function, trap.matroid), (ex2.function, ex2.matroid)
    runs = {
        "alg1 bases": (
            lambda: continuous_mechanisms.private_continuous_greedy(*set_fm, 0.3, T=3, seed=0),
            "conditional_poisson",
            6,
        ),
        "alg1 grid": (
            lambda: continuous_mechanisms.private_continuous_greedy(*set_fm, 0.3, T=3, cover="grid", q=1, seed=0),
            "exponential_mechanism",
            3,
        ),
        "alg2": (
            lambda: continuous_mechanisms.improved_private_continuous_greedy(*set_fm, 0.3, T=2, sample_size=5, seed=0),
            "exponential_mechanism",
            2,
        ),
        "mitrovic": (
            lambda: greedy_mechanisms.mitrovic_private_greedy(*set_fm, 0.3, seed=0),
            "exponential_mechanism",
            2,
        ),
        "alg3": (lambda: greedy_mechanisms.private_k_greedy(*k_fm, 0.3, seed=0), "exponential_mechanism", 2),
        "alg4": (lambda: greedy_mechanisms.private_k_greedy_sampled(*k_fm, 0.3, seed=0), "exponential_mechanism", 2),
    }
    for label, (run, sampler, count) in runs.items():
        calls.clear()
        run()
        mine = [args for name, args in calls if name == sampler]
        assert len(mine) == count, label  # trap: 2 blocks x T = 3 conditional Poisson draws for "alg1 bases"
        if sampler == "exponential_mechanism":
            assert all(args[1] == Fraction(3, 20) and isinstance(args[1], Fraction) for args in mine), label
