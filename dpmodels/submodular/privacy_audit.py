"""The privacy audit of spec 8.2.2: the exact output distributions of Algorithms 1-3 on tiny
instances, and the privacy loss between two of them.

:func:`alg1_distribution`, :func:`alg2_distribution` (given Alg. 2's data-independent cover
sub-samples) and :func:`alg3_distribution` enumerate every path of the mechanisms with exact
gradients and the exponential mechanism's exact probabilities; :func:`privacy_loss` compares the
laws on neighbouring datasets against the ``eps`` the accountant charges.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import PrivacyParameterError

from .accounting import check_epsilon
from .algorithms import check_pair, k_extensions
from .data import KSubmodularFunction, SetFunction
from .matroids import Matroid
from .mechanism.contract import check_finite_scale, check_run
from .mechanism.covers import cover_points
from .mechanism.exponential import em_probabilities, inverse_temperature
from .mechanism.greedy import greedy_setup
from .objectives import gradient

__all__ = ["alg1_distribution", "alg2_distribution", "alg3_distribution", "privacy_loss"]


def alg1_distribution(
    F: SetFunction, M: Matroid, epsilon, T: int | None = None, cover: str = "bases", q: int | None = None
) -> dict[tuple, float]:
    """The exact distribution of ``x_T`` of Alg. 1 with exact gradients (tiny instances).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The paper's per-mechanism epsilon.
    T : int, optional
        The number of steps (default the rank).
    cover : {"bases", "grid"}, default "bases"
        The cover.
    q : int, optional
        The grid resolution.

    Returns
    -------
    dict
        Output ``x_T`` (a tuple) -> probability.
    """
    eps, T = check_run(F, M, epsilon, T)
    pts = cover_points(M, cover, q, None)
    cands = np.array(M.bases(), dtype=float) if pts is None else pts
    beta = inverse_temperature(eps, F.sensitivity)
    return _continuous_distribution(F.n, T, lambda t, x: (cands, em_probabilities(cands @ gradient(F, x), beta)))


def alg2_distribution(
    F: SetFunction, M: Matroid, epsilon, subsamples, width: float | None = None
) -> dict[tuple, float]:
    """The exact distribution of ``x_T`` of Alg. 2 conditional on its (data-independent) per-step
    sub-samples ``subsamples[t]`` (arrays of cover points), with exact gradients; ``T = len(subsamples)``.
    ``width`` is ``ln(1 + mu)`` (default ``eps``, i.e. ``mu = e^eps - 1``).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The paper's per-mechanism epsilon.
    subsamples : sequence of array_like
        The cover points of every step.
    width : float, optional
        The quantisation width (default ``eps``).

    Returns
    -------
    dict
        Output ``x_T`` (a tuple) -> probability.
    """
    check_pair(F, M)
    eps = check_epsilon(epsilon)
    if not 0 < eps < math.inf:
        raise PrivacyParameterError("epsilon", f"Algorithm 2 needs a finite positive epsilon, got {epsilon!r}")
    check_finite_scale(F, M, eps)
    w = eps if width is None else float(width)
    T = len(subsamples)
    beta = inverse_temperature(eps, F.sensitivity)

    def step(t, x):
        pts = np.asarray(subsamples[t], dtype=np.float64)
        return pts, em_probabilities(w * np.floor(pts @ gradient(F, x) / w), beta)

    return _continuous_distribution(F.n, T, step)


def _continuous_distribution(n: int, T: int, step) -> dict[tuple, float]:
    """Enumerate every path of a continuous-greedy sampler: ``step(t, x_t)`` gives the candidate
    points and their probabilities; ``x_t = total / T`` as in the samplers."""
    out: dict[tuple, float] = {}

    def walk(total, t, p):
        x = total / T
        if t == T:
            key = tuple(np.round(x, 12))
            out[key] = out.get(key, 0.0) + p
            return
        pts, probs = step(t, x)
        for y, py in zip(pts, probs, strict=True):
            if py > 0:
                walk(total + y, t + 1, p * py)

    walk(np.zeros(n), 0, 1.0)
    return out


def alg3_distribution(F: KSubmodularFunction, M: Matroid, epsilon) -> dict[tuple, float]:
    """The exact distribution of the output ``x`` of Alg. 3 (tiny instances).

    Parameters
    ----------
    F : KSubmodularFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The epsilon of each step.

    Returns
    -------
    dict
        Output ``x`` (a tuple) -> probability.
    """
    _, _, beta = greedy_setup(F, M, epsilon, None, diagnostic=True)  # an audit oracle, no release
    out: dict[tuple, float] = {}

    def walk(s, t, p):
        if t == M.r:
            key = tuple(int(v) for v in s)
            out[key] = out.get(key, 0.0) + p
            return
        base = F(s)
        pairs, gains = [], []
        for e in k_extensions(M, s):
            for i in range(1, F.k + 1):
                s2 = s.copy()
                s2[e] = i
                pairs.append(s2)
                gains.append(F(s2) - base)
        for s2, ps in zip(pairs, em_probabilities(gains, beta), strict=True):
            if ps > 0:
                walk(s2, t + 1, p * ps)

    walk(np.zeros(F.n, dtype=np.int64), 0, 1.0)
    return out


def privacy_loss(P: dict, Q: dict) -> float:
    """``max_o |ln P(o)/Q(o)|`` over the union of supports (``inf`` if the supports differ).

    Parameters
    ----------
    P, Q : dict
        Output -> probability, on two neighbouring datasets.
    """
    worst = 0.0
    for o in set(P) | set(Q):
        p, q = P.get(o, 0.0), Q.get(o, 0.0)
        if p == 0.0 and q == 0.0:
            continue
        if p == 0.0 or q == 0.0:
            return math.inf
        worst = max(worst, abs(math.log(p / q)))
    return worst
