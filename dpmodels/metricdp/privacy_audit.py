"""The exact privacy audit of metric-DP perturbation matrices, and the repair that makes any matrix
exactly eps-mDP (spec 9.1).

A perturbation matrix ``Z`` (N x K, non-negative rows) is a mechanism: record ``r_i`` is
reported as output ``o_k`` with probability ``Z[i, k] / sum_k Z[i, k]``
(:func:`~dpmodels.metricdp.mechanism.sample_outputs` draws exactly that).  It is eps-mDP iff
``Pr[o_k | r_i] <= exp(eps d_ij) Pr[o_k | r_j]`` for every neighbouring pair and output.  This is
a *ratio*: ``Pr[o_k | r_j] = 0 < Pr[o_k | r_i]`` is an infinite privacy loss however small
``Pr[o_k | r_i]`` is.  LP solvers meet the rows ``z_ik - exp(eps d_ij) z_jk <= 0`` only to an
additive tolerance (HiGHS: 1e-7), so their raw matrices are not private; every matrix this
library returns or samples from is repaired (:func:`repair`) and passes :func:`is_exactly_mdp`,
which proves each ratio in floating point with no tolerance.  :func:`mdp_closure` (the least
matrix above ``z`` that meets every mDP row) is the primal recoveries' tool; the losses and
violations are reports.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpmodels.core.errors import DataValidationError

from .data import MDPInstance

__all__ = [
    "as_matrix",
    "expected_loss",
    "row_sum_error",
    "mdp_ratio_failures",
    "max_privacy_loss",
    "max_mdp_violation",
    "is_exactly_mdp",
    "require_exact_mdp",
    "max_additive_mdp_gap",
    "max_path_violation",
    "audit",
    "repair",
    "mdp_closure",
]

#: Relative allowance for the error of ``np.exp`` (a few ulps) in the lower bound on exp(eps d).
EXP_ALLOWANCE = 2.0**-46
#: Doublings of the repair's safety margin tried before falling back to the uniform mechanism.
MARGIN_ROUNDS = 8


def expected_loss(instance: MDPInstance, z: np.ndarray) -> float:
    """``sum_i p_i sum_k c_ik Z[i, k]``: the LP objective of any mechanism.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        A perturbation matrix (N x K).
    """
    return float((instance.weighted_cost * np.asarray(z)).sum())


def row_sum_error(z: np.ndarray) -> float:
    """Largest ``|sum_k Z[i, k] - 1|`` and negativity: how far Z is from stochastic."""
    z = np.asarray(z)
    return float(max(np.abs(z.sum(axis=1) - 1).max(), max(0.0, -z.min())))


# ---------------------------------------------------------------------- the exact ratio audit
def as_matrix(instance: MDPInstance, z, field: str = "z") -> np.ndarray:
    """``z`` as a float64 N x K array, else an error naming ``field``.

    Parameters
    ----------
    instance : MDPInstance
        The instance whose shape ``z`` must have.
    z : array_like
        A perturbation matrix.
    field : str
        The name the error gives ``z``.
    """
    z = np.asarray(z, dtype=np.float64)
    if z.shape != (instance.N, instance.K):
        raise DataValidationError(field, f"must be N x K = {instance.N} x {instance.K}, got shape {z.shape}")
    return z


def _coef_lower(instance: MDPInstance) -> np.ndarray:
    """Per pair a float ``<= exp(eps d_ij)`` in real arithmetic: ``eps d`` rounded down, ``exp``
    allowed ``EXP_ALLOWANCE`` relative error, the product rounded down; exactly 1 when eps d = 0."""
    x = instance.epsilon * instance.graph.dist
    with np.errstate(over="ignore"):
        c = np.nextafter(np.exp(np.nextafter(x, 0.0)) * (1.0 - EXP_ALLOWANCE), 0.0)
    return np.where(x == 0, 1.0, c)


def _row_sums(z: np.ndarray) -> np.ndarray:
    """Correctly rounded row sums (``math.fsum``): the true sum is within half an ulp."""
    return np.array([math.fsum(row) for row in z.tolist()], dtype=np.float64)


def mdp_ratio_failures(instance: MDPInstance, z) -> np.ndarray:
    """``(pairs x K)`` mask of the ratios this check cannot *prove*:
    ``Z[i, k] / S_i <= exp(eps d_ij) Z[j, k] / S_j`` in real arithmetic (``S`` = row sums, the
    normalisation the sampler applies).  Every float operation on the right-hand side is
    rounded towards 0, so a pass is a proof; there is no tolerance, and ``Z[j, k] = 0 < Z[i, k]``
    always fails.  Rows that are bitwise identical are the same distribution and pass."""
    g = instance.graph
    z = as_matrix(instance, z)
    if g.n_pairs == 0:
        return np.zeros((0, instance.K), dtype=bool)
    s = _row_sums(z)
    lo, hi = np.nextafter(s, -np.inf), np.nextafter(s, np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.nextafter(lo[g.src] / hi[g.dst], 0.0)  # <= S_i / S_j
        scale = np.nextafter(_coef_lower(instance) * ratio, 0.0)
        rhs = np.nextafter(scale[:, None] * z[g.dst], 0.0)
    rhs = np.where(z[g.dst] > 0, rhs, 0.0)  # inf * 0 is nan: the bound there is 0
    same = (z[g.src] == z[g.dst]).all(axis=1)
    return ~(z[g.src] <= rhs) & ~same[:, None]


def _pair_losses(instance: MDPInstance, z: np.ndarray) -> np.ndarray:
    """``(pairs x K)`` privacy losses ``log(Pr[o_k | r_i] / Pr[o_k | r_j]) / d_ij`` (float
    estimates; ``inf`` where ``Z[j, k] = 0 < Z[i, k]``, ``-inf`` where ``Z[i, k] = 0``)."""
    g = instance.graph
    s = _row_sums(z)
    zi, zj = z[g.src], z[g.dst]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(zi) - np.log(zj) + (np.log(s[g.dst]) - np.log(s[g.src]))[:, None]
        log_ratio = np.where(zi > 0, log_ratio, -np.inf)
        same = (zi == zj).all(axis=1)
        log_ratio = np.where(same[:, None] & (zi > 0), 0.0, log_ratio)
        dist = g.dist[:, None]
        loss = np.where(dist > 0, log_ratio / dist, np.where(log_ratio > 0, np.inf, np.minimum(log_ratio, 0.0)))
    return loss


def max_privacy_loss(instance: MDPInstance, z) -> float:
    """``max log(Pr[o_k | r_i] / Pr[o_k | r_j]) / d_ij`` over neighbouring pairs and outputs, in
    the units of eps (eps-mDP iff it is <= eps); ``inf`` when the supports of neighbours differ.
    A float estimate for reports; :func:`mdp_ratio_failures` is the proof.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        A perturbation matrix (N x K).
    """
    z = as_matrix(instance, z)
    if instance.graph.n_pairs == 0:
        return 0.0
    return float(max(0.0, _pair_losses(instance, z).max()))


def max_mdp_violation(instance: MDPInstance, z) -> float:
    """Excess privacy loss relative to eps, ``max privacy loss / eps - 1`` over the ratios that
    fail :func:`mdp_ratio_failures`: exactly 0.0 iff every ratio is proven, ``inf`` when the
    supports differ, and at least 2**-52 (the float resolution) for any unproven ratio."""
    z = as_matrix(instance, z)
    fail = mdp_ratio_failures(instance, z)
    if not fail.any():
        return 0.0
    worst = _pair_losses(instance, z)[fail].max() / instance.epsilon - 1.0
    return float(max(worst, np.finfo(np.float64).eps))


def is_exactly_mdp(instance: MDPInstance, z) -> bool:
    """``Z`` is a mechanism (finite, non-negative, no empty row) and every ratio is proven.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        A perturbation matrix (N x K).
    """
    z = as_matrix(instance, z)
    if not np.isfinite(z).all() or (z < 0).any() or (z.sum(axis=1) <= 0).any():
        return False
    return not mdp_ratio_failures(instance, z).any()


def require_exact_mdp(instance: MDPInstance, z, field: str = "z") -> np.ndarray:
    """``Z`` as a float array if :func:`is_exactly_mdp`, else a ``DataValidationError`` naming
    ``field``: a matrix that is not private is refused, not used.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        A perturbation matrix (N x K).
    field : str
        The name the error gives ``z``.
    """
    arr = as_matrix(instance, z, field)
    if is_exactly_mdp(instance, arr):
        return arr
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr.sum(axis=1) <= 0).any():
        raise DataValidationError(field, "is not a mechanism (NaN, infinite or negative entries, or an empty row)")
    fails = int(mdp_ratio_failures(instance, arr).sum())
    loss = max_privacy_loss(instance, arr)
    raise DataValidationError(
        field,
        f"is not exactly eps-mDP: {fails} neighbour ratios exceed exp(eps d) (max privacy loss "
        f"{loss:.6g} = {loss / instance.epsilon:.6g} x eps); make it private with privacy_audit.repair",
    )


def max_additive_mdp_gap(instance: MDPInstance, z, relative: bool = True) -> float:
    """Diagnostic only, *not* a privacy check: the largest additive row residual
    ``Z[i, k] - exp(eps d_ij) Z[j, k]`` (divided by ``exp(eps d_ij)`` with ``relative``), i.e.
    how well a solver met its LP rows.  ``1.5e-8 - e^18 * 0`` is tiny here and infinite loss."""
    g = instance.graph
    z = np.asarray(z)
    if g.n_pairs == 0:
        return 0.0
    gap = z[g.src] - g.coef[:, None] * z[g.dst]
    if relative:
        gap = gap / g.coef[:, None]
    return float(max(0.0, gap.max()))


def max_path_violation(instance: MDPInstance, z: np.ndarray) -> float:
    """Property 3.2 diagnostic (additive, relative): largest ``Z[i, k] - exp(eps D_ij) Z[j, k]``
    over connected pairs, divided by ``exp(eps D_ij)``."""
    dist = instance.graph.shortest_paths()
    z = np.asarray(z)
    worst = 0.0
    for i in range(instance.N):
        finite = np.isfinite(dist[i])
        finite[i] = False
        if not finite.any():
            continue
        coef = np.exp(instance.epsilon * dist[i, finite])
        gap = (z[i][None, :] - coef[:, None] * z[finite]) / coef[:, None]
        worst = max(worst, float(gap.max()))
    return worst


def audit(instance: MDPInstance, z: np.ndarray) -> dict:
    """Loss, stochasticity and the exact privacy audit of a perturbation matrix (spec 9.1).

    ``exactly mDP`` is the proof of :func:`is_exactly_mdp`; ``max privacy loss / eps`` is
    <= 1 for a private matrix and ``inf`` when neighbours' supports differ; ``max mDP violation
    (relative)`` is :func:`max_mdp_violation` (0.0 iff exactly mDP); ``mDP ratio failures``
    counts the unproven ratios.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        A perturbation matrix (N x K).

    Returns
    -------
    dict
        ``expected loss``, ``row-sum error``, ``exactly mDP``, ``max privacy loss / eps``,
        ``max mDP violation (relative)`` and ``mDP ratio failures``.
    """
    return {
        "expected loss": expected_loss(instance, z),
        "row-sum error": row_sum_error(z),
        "exactly mDP": is_exactly_mdp(instance, z),
        "max privacy loss / eps": max_privacy_loss(instance, z) / instance.epsilon,
        "max mDP violation (relative)": max_mdp_violation(instance, z),
        "mDP ratio failures": int(mdp_ratio_failures(instance, z).sum()),
    }


# ---------------------------------------------------------------------- repair
def _stochastic(instance: MDPInstance, z) -> np.ndarray:
    """``z`` clipped at 0, empty rows made uniform, rows normalised unless already within 1e-12."""
    z = as_matrix(instance, z)
    if not np.isfinite(z).all():
        raise DataValidationError("z", "has NaN or infinite entries; there is no mechanism to repair")
    z = np.maximum(z, 0.0)
    sums = z.sum(axis=1, keepdims=True)
    if (sums <= 0).any():
        z = np.where(sums > 0, z, 1.0 / instance.K)
        sums = z.sum(axis=1, keepdims=True)
    return z / sums if np.abs(sums - 1.0).max() > 1e-12 else z


def _mixing_weight(instance: MDPInstance, z: np.ndarray, margin: float) -> float:
    """Least ``t`` with ``(1 - t) z + t / K`` meeting every row with ``exp(eps d) (1 - margin)``:
    the uniform mechanism has slack ``(exp(eps d)(1 - margin) - 1) / K`` in every such row, so
    ``t`` is proportional to the largest violation (1 where that slack is 0: distance 0)."""
    g = instance.graph
    coef = g.coef * (1.0 - margin)
    excess = z[g.src] - coef[:, None] * z[g.dst]
    pair, _ = np.nonzero(excess > 0)
    if len(pair) == 0:
        return 0.0
    over = excess[excess > 0]
    slack = (np.maximum(coef[pair], 1.0) - 1.0) / instance.K
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(slack > 0, over / (over + slack), 1.0).max()
    return float(min(1.0, need * (1 + 1e-6) + 1e-15))


def repair(instance: MDPInstance, z: np.ndarray) -> tuple[np.ndarray, float]:
    """An exactly eps-mDP mechanism near ``z`` and the weight ``t`` of the uniform mechanism in it.

    ``z`` is clipped at 0 and made row-stochastic; if it then passes :func:`is_exactly_mdp` it
    is returned with ``t = 0``.  Otherwise ``(1 - t) z + t / K`` with the least ``t`` that meets
    every mDP row with a safety margin, ``exp(eps d)(1 - margin)``, so that the ratios still
    hold after the rounding of the mix and of the row normalisation the sampler applies; the
    result is re-checked by the exact audit and the margin grown until it passes (the uniform
    mechanism, ``t = 1``, always does).  Mixing keeps the loss within ``t`` of the input's.

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    z : array_like
        Any N x K matrix with finite entries (e.g. an LP solver's point).

    Returns
    -------
    tuple of (numpy.ndarray, float)
        The exactly eps-mDP matrix and ``t``.
    """
    z = _stochastic(instance, z)
    if instance.graph.n_pairs == 0 or is_exactly_mdp(instance, z):
        return z, 0.0
    margin = (instance.K + 16) * 2.0**-48
    for _ in range(MARGIN_ROUNDS):
        t = _mixing_weight(instance, z, margin)
        if t >= 1.0:
            break
        mixed = (1.0 - t) * z + t / instance.K
        if is_exactly_mdp(instance, mixed):
            return mixed, t
        margin *= 64.0
    return np.full((instance.N, instance.K), 1.0 / instance.K), 1.0


# ---------------------------------------------------------------------- closure
#: Sweeps of the closure before it is called stuck (it measured 7 on 1 km grids of N = 1,000).
MAX_SWEEPS = 10_000


@njit(cache=True)
def _closure_sweeps(z, src, dst, shrink, max_sweeps):
    """Raise ``z[dst, k]`` to ``z[src, k] * shrink`` pair by pair, forwards then backwards, until a
    sweep changes nothing; returns the sweeps taken (-1 if ``max_sweeps`` did not reach the fixed
    point)."""
    K = z.shape[1]
    P = len(src)
    for sweep in range(max_sweeps):
        changed = False
        for step in range(2 * P):
            p = step if step < P else 2 * P - 1 - step
            i, j, f = src[p], dst[p], shrink[p]
            for k in range(K):
                v = z[i, k] * f
                if v > z[j, k]:
                    z[j, k] = v
                    changed = True
        if not changed:
            return sweep + 1
    return -1


def mdp_closure(instance: MDPInstance, z: np.ndarray) -> np.ndarray:
    """The least ``Z' >= z`` (N x K) that meets every mDP row ``Z'_ik <= exp(eps d_ij) Z'_jk`` of
    ``instance.graph``: per output, ``Z'_jk = max_i z_ik exp(-eps D_ij)`` over graph paths.

    The factors ``exp(-eps d)`` are rounded up, so rounding can only make ``Z'`` larger (the
    repair's audit has the last word either way)."""
    g = instance.graph
    out = np.array(z, dtype=np.float64, order="C", copy=True)
    if g.n_pairs == 0:
        return out
    shrink = np.nextafter(np.exp(-instance.epsilon * g.dist) * (1 + 2.0**-50), np.inf)
    sweeps = _closure_sweeps(out, g.src.astype(np.int64), g.dst.astype(np.int64), shrink, MAX_SWEEPS)
    if sweeps < 0:
        raise ArithmeticError("the mDP closure did not reach its fixed point")
    return out
