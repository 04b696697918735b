"""Exact marks of Algorithm 2 (:mod:`dpmodels.facility.marks`): the law, the stream, the bounds, the spend.

The float Laplace draw was replaced by an exact draw of each mark, ``mark_u = [V_u < p_u]`` with
``V_u`` uniform from raw words and ``p_u = P[N_u + Lap(b_ℓ) >= f/λ^ℓ]`` bracketed by rigorous
integer bounds.  These tests check that ``run_tree`` marks every node with that probability
(binomial and chi-square against the spec's formula), that a seed reproduces the marks, that the
stream is read one word per node whatever the counts, and that the bounds enclose ``e^{-γ}``.
"""

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from dpmodels import instances
from dpmodels.core.randomness import SECURE_SOURCE, SEEDED_SOURCE
from dpmodels.core.selection import laplace_exceeds
from dpmodels.facility.data import HST, HSTInstance
from dpmodels.facility.frt import frt_embedding
from dpmodels.facility.general_metric import dp_ufl_general
from dpmodels.facility.hst import subtree_counts
from dpmodels.facility.marks import (
    WORD,
    draw_marks,
    exact_spend,
    exp_neg_bounds,
    float_above,
    level_thresholds,
    tail_bounds,
)
from dpmodels.facility.mechanism import algorithm1, epsilon_used, noise_scales, run_tree
from dpmodels.facility.privacy_audit import log_tails
from dpmodels.facility.results import NO_RANDOMNESS


def exact_probabilities(run, instance):
    """``p_u`` of every noisy node of ``run`` from the spec formula (the oracle's ``log_tails``)."""
    noisy = np.flatnonzero(run.tree.level < run.lprime)
    lvl = run.tree.level[noisy]
    x = instance.f / instance.tree.lam ** lvl.astype(float) - subtree_counts(run.tree, instance.N)[noisy]
    log_p, _ = log_tails(x, run.scales[lvl])
    return noisy, np.exp(log_p)


@pytest.mark.parametrize("algorithm", ["dp", "dp_uniform_noise"])
def test_run_tree_marks_follow_the_laplace_tail_at_every_node(algorithm):
    """Example A at ε = 4 (f = 3, L' = 7, padded): 18 noisy nodes, counts below, at and above their
    thresholds, marking probabilities from 0.09 to 0.98."""
    inst = instances.load("facility/example-a")
    rng = np.random.default_rng(2024)
    runs = 4000
    first = run_tree(inst, 4.0, algorithm, rng=rng)
    noisy, p = exact_probabilities(first, inst)
    assert noisy.size == 18 and p.min() < 0.3 and p.max() > 0.9 and np.any(p == 0.5)  # every branch
    hits = first.marked[noisy].astype(int)
    for _ in range(runs - 1):
        hits += run_tree(inst, 4.0, algorithm, rng=rng).marked[noisy]
    pvalues = [stats.binomtest(int(k), runs, float(q)).pvalue for k, q in zip(hits, p, strict=True)]
    assert min(pvalues) > 1e-4, dict(zip(noisy.tolist(), pvalues, strict=True))
    chi2 = float((((hits - runs * p) ** 2) / (runs * p * (1 - p))).sum())
    assert stats.chi2.sf(chi2, noisy.size) > 1e-4


def test_draw_marks_matches_laplace_exceeds_on_one_node():
    """The vectorised draw and the core scalar sampler have the same law (x > 0, x = 0, x < 0)."""
    n, threshold, scale = 6000, Fraction(3), 1.5
    for count in (0, 3, 5):
        p = float(np.exp(log_tails(np.array([3.0 - count]), np.array([scale]))[0][0]))
        ours = draw_marks(np.full(n, count), np.zeros(n, int), [scale], [threshold], np.random.default_rng(count))
        core = np.random.default_rng(count + 10)
        theirs = sum(laplace_exceeds(count, scale, threshold, core) for _ in range(n))
        assert stats.binomtest(int(ours.sum()), n, p).pvalue > 1e-4
        assert stats.binomtest(int(theirs), n, p).pvalue > 1e-4


def test_extreme_tails_are_never_or_always_marked():
    """γ = 200: p = ½e^{-200} (never seen) or 1 - ½e^{-200} (always seen)."""
    thresholds = [Fraction(200)]
    low = draw_marks(np.zeros(5000, int), np.zeros(5000, int), [1.0], thresholds, np.random.default_rng(0))
    high = draw_marks(np.full(5000, 400), np.zeros(5000, int), [1.0], thresholds, np.random.default_rng(0))
    assert not low.any() and high.all()


def test_same_seed_same_marks_and_one_word_per_node():
    inst = instances.generate("facility/random-hst", seed=3, depth=5, f=40.0, max_count=6)
    a = run_tree(inst, 1.0, rng=np.random.default_rng(11))
    b = run_tree(inst, 1.0, rng=np.random.default_rng(11))
    c = run_tree(inst, 1.0, rng=np.random.default_rng(12))
    assert a.draws > 20 and np.array_equal(a.marked, b.marked) and a.release == b.release
    assert not np.array_equal(a.marked, c.marked)
    # the stream is read one word per noisy node, whatever the counts (no data-dependent reads)
    for counts in (inst.N, np.zeros_like(inst.N), inst.N * 50):
        rng, twin = np.random.default_rng(5), np.random.default_rng(5)
        run = run_tree(inst.with_counts(counts), 1.0, rng=rng)
        twin.bit_generator.random_raw(run.draws)
        assert rng.bit_generator.random_raw() == twin.bit_generator.random_raw()


class _Words:
    """A stand-in generator whose raw words are given (to steer the rare undecided branch)."""

    def __init__(self, words):
        self._words = list(words)
        self.bit_generator = SimpleNamespace(random_raw=self._take)

    def _take(self, size=None):
        n = 1 if size is None else size
        out, self._words = self._words[:n], self._words[n:]
        return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("count, second", [(0, 0), (0, 2**64 - 1), (9, 0), (9, 2**64 - 1)])
def test_a_first_word_inside_the_bounds_is_settled_by_the_next_word(count, second):
    """``V`` starts with the lower bound of ``p 2^64`` (undecided); the second word decides exactly."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 600
    gamma = abs(Fraction(5) - count) / Fraction(3, 2)
    lo, hi = tail_bounds(gamma, count < 5, WORD)
    assert hi > lo  # e^{-γ} is irrational: the first word at lo is undecided
    marked = draw_marks(np.array([count]), np.array([0]), [1.5], [Fraction(5)], _Words([lo, second]))
    e = mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator)
    p = e / 2 if count < 5 else 1 - e / 2
    v = mpmath.mpf(lo * 2**WORD + second) / mpmath.mpf(2) ** (2 * WORD)
    assert bool(marked[0]) == bool(v < p)


def test_exp_bounds_enclose_the_true_value():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 700
    rng = np.random.default_rng(0)
    gammas = [Fraction(0), Fraction(1), Fraction(63, 1), Fraction(64), Fraction(10**6, 3)]
    gammas += [Fraction(int(rng.integers(0, 2**62)), int(rng.integers(1, 2**58))) for _ in range(300)]
    for gamma in gammas:
        for bits in (64, 128, 320):
            lo, hi = exp_neg_bounds(gamma, bits)
            exact = mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator) * mpmath.mpf(2) ** bits
            assert lo <= exact <= hi and hi - lo <= 2, (gamma, bits)


def test_eps_used_is_the_exact_spend_rounded_up():
    for f, lam, eps in [(3.0, 1.5, 1.0), (1.5**9 * 1.0001, 1.5, 1.0), (123.456, 1.2, 0.37), (7.0, 1.9, 2.5)]:
        tree = instances.load("facility/example-a").tree
        run = run_tree(HSTInstance(HST(tree.parent, tree.level, lam), f, [3, 0, 1, 0, 0, 0, 0, 1]), eps)
        exact = exact_spend(noise_scales(f, lam, run.lprime))
        assert exact == sum(1 / Fraction(float(b)) for b in run.scales)
        assert Fraction(run.eps_used) >= exact and run.eps_used == float_above(exact) == epsilon_used(
            f, lam, run.lprime
        )
        assert math.nextafter(run.eps_used, 0) < exact and exact <= Fraction(eps)


def test_thresholds_are_the_exact_ratios_of_the_floats():
    taus = level_thresholds(3.0, 1.5, 4)
    assert taus == [Fraction(3), Fraction(2), Fraction(4, 3), Fraction(8, 9)]  # 1.5^l is exact in binary
    assert level_thresholds(0.1, 1.3, 2)[1] == Fraction(0.1) / Fraction(1.3)


def test_randomness_is_recorded_and_secure_by_default():
    inst = instances.load("facility/example-a")
    assert run_tree(inst, 1.0).release.randomness == SECURE_SOURCE
    assert run_tree(inst, 1.0, rng=0).release.randomness == SEEDED_SOURCE
    assert algorithm1(inst, 1.0).release.randomness == NO_RANDOMNESS
    plane = instances.generate("facility/plane", seed=2, n=25)
    report = dp_ufl_general(plane, 1.0)
    assert report.release.randomness == SECURE_SOURCE and report.summary()["randomness"] == SECURE_SOURCE


def test_the_embedding_draws_from_the_given_generator():
    """The pipeline's tree comes from the caller's generator (then the marks, from the same stream)."""
    plane = instances.generate("facility/plane", seed=4, n=40)
    report = dp_ufl_general(plane, 1.0, rng=np.random.default_rng(9))
    alone = frt_embedding(plane.d, rng=np.random.default_rng(9))
    assert np.array_equal(report.embedding.tree.parent, alone.tree.parent)
    again = dp_ufl_general(plane, 1.0, rng=np.random.default_rng(9))
    assert again.release == report.release
