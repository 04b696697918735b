"""Precision of the exponential mechanism at large scores (scores centred before scaling).

Each test failed before the fix: ``em_probabilities`` scaled the scores before centring, so a
4-way tie at 1e16 had probabilities summing to 0.54, the Gumbel-max favoured index 0, and the
base sampler of Algorithm 1 (``cover="bases"``) never drew half of the tied bases.
"""

import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from dpmodels.submodular.exact.bases import sample_base
from dpmodels.submodular.matroids import GraphicMatroid, UniformMatroid
from dpmodels.submodular.mechanism.exponential import em_choice, em_probabilities

BIG = 1e16  # float spacing 2 here: 1e16 + 2 and 1e16 + 4 are exact


def _exact(centred, inv_temp):
    """``exp(b c_j) / sum_k exp(b c_k)`` from the (exact) centred scores, in plain floats."""
    w = [math.exp(inv_temp * c) for c in centred]
    total = math.fsum(w)
    return np.array([x / total for x in w])


@pytest.mark.parametrize(
    ("scores", "centred", "inv_temp"),
    [
        ([BIG] * 4, [0, 0, 0, 0], 1.0),
        ([BIG] * 4, [0, 0, 0, 0], 0.5),
        ([BIG, BIG + 2, BIG + 4, BIG + 2], [-4, -2, 0, -2], 0.5),
        ([-BIG, -BIG + 2, -BIG, -BIG + 4], [-4, -2, -4, 0], 0.25),
    ],
)
def test_em_probabilities_at_huge_scores_are_the_centred_law(scores, centred, inv_temp):
    p = em_probabilities(scores, inv_temp)
    assert abs(p.sum() - 1.0) <= 1e-12
    assert np.allclose(p, _exact(centred, inv_temp), rtol=0, atol=1e-15)


def test_em_probabilities_are_shift_invariant():
    q = np.array([0.0, 2.0, 4.0, 2.0])
    assert np.allclose(em_probabilities(q + BIG, 0.5), em_probabilities(q, 0.5), rtol=0, atol=1e-15)
    assert np.allclose(em_probabilities([3.0, -1e308, 1e308], 0.0), 1 / 3)  # b = 0 stays uniform (no 0 * inf)


@pytest.mark.parametrize(
    ("scores", "centred", "inv_temp"),
    [([BIG] * 4, [0, 0, 0, 0], 1.0), ([BIG, BIG + 2, BIG + 4, BIG + 2], [-4, -2, 0, -2], 0.5)],
)
def test_em_choice_at_huge_scores_draws_the_centred_law(scores, centred, inv_temp):
    rng = np.random.default_rng(0)
    draws = 4000
    picks = [em_choice(scores, inv_temp, rng) for _ in range(draws)]
    counts = np.bincount([i for i, _ in picks], minlength=len(scores))
    assert chisquare(counts, _exact(centred, inv_temp) * draws).pvalue > 1e-3
    assert np.allclose(picks[0][1], _exact(centred, inv_temp), rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "matroid", [UniformMatroid(4, 2), GraphicMatroid(3, [(0, 1), (1, 2), (0, 2)])], ids=["uniform", "graphic"]
)
def test_base_sampler_at_huge_tied_gradients_is_uniform(matroid):
    """Alg. 1's EM over the bases: a tie in the gradient at 1e16 must give every base equal mass."""
    rng = np.random.default_rng(1)
    draws = 1200
    g = np.full(matroid.n, BIG)
    seen = Counter(tuple(np.flatnonzero(sample_base(matroid, g, 0.5, rng))) for _ in range(draws))
    bases = [tuple(np.flatnonzero(b)) for b in matroid.bases()]
    assert set(seen) == set(bases)
    assert chisquare([seen[b] for b in bases]).pvalue > 1e-3
