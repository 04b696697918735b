"""Metric-DP mechanisms and their audit: the exponential mechanism, the optimal LP mechanism,
and the checks every perturbation matrix must pass (spec 7, 9.1).

A perturbation matrix ``Z`` (N x K) is a mechanism: record ``r_i`` is reported as output
``o_k`` with probability ``Z[i, k]``.  It is eps-mDP (w.r.t. the neighbour threshold) iff
``Z[i, k] <= exp(eps d_ij) Z[j, k]`` for every neighbouring pair and output.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .data import MDPInstance

__all__ = [
    "exponential_mechanism",
    "expected_loss",
    "row_sum_error",
    "max_mdp_violation",
    "max_path_violation",
    "audit",
    "repair",
    "sample_outputs",
]


def exponential_mechanism(instance: MDPInstance) -> np.ndarray:
    """Eq. 66: ``Z[i, k] ~ exp(-eps d(r_i, o_k) / 2)``, normalised per record (stable softmax).

    eps-mDP for *all* pairs by the triangle inequality, hence feasible for the LP.
    """
    if instance.d_ro is None:
        raise DataValidationError("d_ro", "the exponential mechanism needs record-output distances")
    logits = -instance.epsilon * instance.d_ro / 2
    logits -= logits.max(axis=1, keepdims=True)
    z = np.exp(logits)
    return z / z.sum(axis=1, keepdims=True)


def expected_loss(instance: MDPInstance, z: np.ndarray) -> float:
    """``sum_i p_i sum_k c_ik Z[i, k]``: the LP objective of any mechanism."""
    return float((instance.weighted_cost * np.asarray(z)).sum())


def row_sum_error(z: np.ndarray) -> float:
    """Largest ``|sum_k Z[i, k] - 1|`` and negativity: how far Z is from stochastic."""
    z = np.asarray(z)
    return float(max(np.abs(z.sum(axis=1) - 1).max(), max(0.0, -z.min())))


def max_mdp_violation(instance: MDPInstance, z: np.ndarray, relative: bool = True) -> float:
    """Largest ``Z[i, k] - exp(eps d_ij) Z[j, k]`` over neighbouring pairs; ``relative`` divides by
    ``exp(eps d_ij)`` (the scale of the row, spec 9.1 item 2)."""
    g = instance.graph
    z = np.asarray(z)
    if g.n_pairs == 0:
        return 0.0
    gap = z[g.src] - g.coef[:, None] * z[g.dst]
    if relative:
        gap = gap / g.coef[:, None]
    return float(max(0.0, gap.max()))


def max_path_violation(instance: MDPInstance, z: np.ndarray) -> float:
    """Property 3.2 check: largest ``Z[i, k] - exp(eps D_ij) Z[j, k]`` over connected pairs, relative."""
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
    """Loss and the violations of spec 9.1 items 1-2 for a perturbation matrix."""
    return {
        "expected loss": expected_loss(instance, z),
        "row-sum error": row_sum_error(z),
        "max mDP violation (relative)": max_mdp_violation(instance, z),
    }


def repair(instance: MDPInstance, z: np.ndarray) -> tuple[np.ndarray, float]:
    """An exactly eps-mDP mechanism near ``z`` and the weight ``t`` of the uniform mechanism in it.

    ``z`` is clipped at 0 and made row-stochastic; then ``(1 - t) z + t / K`` with the least
    ``t`` for which every mDP row of the original graph holds: the uniform mechanism has slack
    ``(exp(eps d) - 1) / K`` in every row, so ``t`` is proportional to the largest violation.
    """
    g = instance.graph
    K = instance.K
    z = np.maximum(np.asarray(z, dtype=np.float64), 0.0)
    sums = z.sum(axis=1, keepdims=True)
    if (sums <= 0).any():
        z = np.where(sums > 0, z, 1.0 / K)
        sums = z.sum(axis=1, keepdims=True)
    z = z / sums
    if g.n_pairs == 0:
        return z, 0.0
    excess = z[g.src] - g.coef[:, None] * z[g.dst]  # > 0: violated
    pair, _ = np.nonzero(excess > 0)
    if len(pair) == 0:
        return z, 0.0
    over = excess[excess > 0]
    need = float((over / (over + (g.coef[pair] - 1.0) / K)).max())  # slack 0 (records at distance 0): t = 1
    t = min(1.0, need * (1 + 1e-6) + 1e-15)
    return (1 - t) * z + t / K, float(t)


def sample_outputs(z: np.ndarray, records, rng=None) -> np.ndarray:
    """Perturb ``records`` (indices) with mechanism ``Z``: one output index per record."""
    z = np.asarray(z)
    rng = make_rng(rng)
    records = np.atleast_1d(records)
    cum = np.cumsum(z[records], axis=1)
    u = rng.random(len(records))[:, None] * cum[:, -1:]
    return (cum < u).sum(axis=1)
