"""Rounding a point of the matroid polytope to a base (spec 3.3, 6.3): public post-processing.

None of these queries ``F``; each takes its own generator, so applied to a private output it
stays private.

* :func:`swap_rounding` -- Chekuri-Vondrak-Zenklusen swap rounding of a convex combination of bases.
* :func:`pipage_rounding` -- randomized pipage rounding (uniform and partition matroids).
* :func:`decompose` / :func:`lift_to_bases` -- a convex combination of bases dominating the mean of
  the mechanisms' directions: 0/1 bases as they are, other points lifted by the spec 6.3 LP
  (column generation).
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .matroids import Matroid, PartitionMatroid, UniformMatroid

__all__ = ["swap_rounding", "pipage_rounding", "decompose", "lift_to_bases"]


def swap_rounding(M: Matroid, bases, coefficients, rng) -> np.ndarray:
    """Chekuri-Vondrak-Zenklusen swap rounding of ``sum_i beta_i 1_{B_i}`` (spec 3.3).

    Preserves marginals, returns a base, never queries ``F`` (private post-processing).

    Parameters
    ----------
    M : Matroid
        The constraint, on the same ground set.
    bases : sequence of array_like
        The bases ``B_i`` (0/1 masks).
    coefficients : array_like
        ``beta_i >= 0``, summing to 1.
    rng : numpy.random.Generator or int
        The rounding's stream.

    Returns
    -------
    numpy.ndarray
        A base (boolean mask).
    """
    rng = make_rng(rng)
    beta = np.asarray(coefficients, dtype=np.float64)
    if len(bases) != beta.size or beta.size == 0 or beta.min() < 0 or abs(beta.sum() - 1) > 1e-9:
        raise DataValidationError("coefficients", "need one non-negative coefficient per base, summing to 1")
    current = np.asarray(bases[0], bool).copy()
    gamma = beta[0]
    for k in range(1, len(bases)):
        current = _merge(M, gamma, current, beta[k], np.asarray(bases[k], bool).copy(), rng)
        gamma += beta[k]
    return current


def _merge(M: Matroid, b1: float, B1: np.ndarray, b2: float, B2: np.ndarray, rng) -> np.ndarray:
    while not np.array_equal(B1, B2):
        i = int(np.flatnonzero(B1 & ~B2)[0])
        j = M.strong_exchange(B1, B2, i)
        if b1 + b2 <= 0 or rng.random() < b1 / (b1 + b2):
            B2[j], B2[i] = False, True
        else:
            B1[i], B1[j] = False, True
    return B1


def pipage_rounding(M: Matroid, x, rng) -> np.ndarray:
    """Randomized pipage (dependent) rounding for uniform and partition matroids (spec 3.3).

    Oblivious to ``F``, preserves marginals; a lone fractional coordinate of a block is rounded
    independently (keeps the block's cap since the block sum is at most the cap).

    Parameters
    ----------
    M : UniformMatroid or PartitionMatroid
        The constraint.
    x : array_like
        A point of ``P(M)``.
    rng : numpy.random.Generator or int
        The rounding's stream.

    Returns
    -------
    numpy.ndarray
        An independent set (boolean mask).
    """
    rng = make_rng(rng)
    x = np.asarray(x, dtype=np.float64).copy()
    if isinstance(M, UniformMatroid):
        blocks = [np.arange(M.n)]
    elif isinstance(M, PartitionMatroid):
        blocks = M.blocks
    else:
        raise DataValidationError("matroid", f"randomized pipage is for uniform/partition matroids, got {M.kind}")
    if not M.contains(x):
        raise DataValidationError("x", "must lie in the matroid polytope")
    tol = 1e-12
    for members in blocks:
        while True:
            frac = [int(e) for e in members if tol < x[e] < 1 - tol]
            if len(frac) < 2:
                break
            a, b = frac[0], frac[1]
            d1, d2 = min(1 - x[a], x[b]), min(x[a], 1 - x[b])
            if rng.random() < d2 / (d1 + d2):
                x[a], x[b] = x[a] + d1, x[b] - d1
            else:
                x[a], x[b] = x[a] - d2, x[b] + d2
        for e in members:
            if tol < x[e] < 1 - tol:
                x[e] = 1.0 if rng.random() < x[e] else 0.0
    return x > 0.5


def decompose(M: Matroid, directions) -> tuple[list, np.ndarray]:
    """Bases and coefficients with ``sum beta_B 1_B >= (1/T) sum_t y_t`` (public post-processing).

    0/1 base directions are used as they are; other points are lifted by the spec 6.3 LP, solved by
    column generation (:func:`lift_to_bases`), which is feasible for points of ``P(M)``."""
    T = len(directions)
    bases, coef = [], []
    for y in directions:
        if np.all((y == 0) | (y == 1)) and M.is_independent(y > 0.5) and int(y.sum()) == M.r:
            bases.append(y > 0.5)
            coef.append(1.0 / T)
            continue
        for B, lam in lift_to_bases(M, y):
            bases.append(B)
            coef.append(lam / T)
    coef = np.asarray(coef)
    return bases, coef / coef.sum()


def lift_to_bases(M: Matroid, y, max_iter: int = 500, tol: float = 1e-9):
    """Column generation on the lift LP (spec 6.3): restricted master over the bases found so far
    (HiGHS via Pyomo), pricing by the greedy max-weight base under the duals of the ``dominate``
    rows; stops when no base has positive reduced cost.  Public post-processing: ``y`` is an output.

    Parameters
    ----------
    M : Matroid
        The constraint, on the same ground set.
    y : array_like
        A point of ``P(M)``.
    max_iter : int, default 500
        Column-generation rounds.
    tol : float, default 1e-9
        Reduced-cost tolerance.

    Returns
    -------
    list of tuple
        ``(base, weight)`` pairs, weights summing to 1.
    """
    import pyomo.environ as pyo

    from dpmodels.core.facade import solve

    from .models import build_lift_lp

    y = np.asarray(y, dtype=np.float64)
    if not M.contains(y):
        raise DataValidationError("y", "must lie in the matroid polytope")
    columns = [M.max_weight_base(y)]
    for _ in range(max_iter):
        model = build_lift_lp(M, y, columns, check=False)
        res = solve(model, "highs", raise_on_nonoptimal=True)
        duals = res.solution_loader.get_duals()
        pi = np.array([max(0.0, float(duals[model.dominate[e]])) for e in range(M.n)])
        mu = float(duals[model.convex])
        B = M.max_weight_base(pi)
        if pi[B].sum() + mu <= tol or any(np.array_equal(B, c) for c in columns):
            break
        columns.append(B)
    if res.incumbent_objective > 1e-7:
        raise DataValidationError(
            "y", f"could not be dominated by a convex combination of bases (shortfall {res.incumbent_objective})"
        )
    lam = np.clip([pyo.value(model.lam[b]) for b in range(len(columns))], 0.0, None)
    lam = lam / lam.sum()
    return [(columns[b], float(lam[b])) for b in np.flatnonzero(lam > 1e-12)]
