"""The closed-form TopDown L2 solve where the structure allows (spec 4.5).

When every child is measured only by identity (detailed) queries and the only constraints
are the parent sums (or the root total) and non-negativity, the L2 problem separates by
cell: ``min sum_t w_t (h_t - m_t)^2`` s.t. ``sum_t h_t = parent``, ``h >= 0``.  Its
solution is the weighted projection onto a scaled simplex, ``h_t = max(0, m_t - lam /
(2 w_t))`` with one ``lam`` per cell found by sorting the breakpoints: exact, vectorised,
no QP solver.  (The root solve is the same projection with the cells as the "children".)
Models with flow constraints, invariant child totals, edits or marginal queries are refused.
The ``topdown_tree_l2`` plugin (:mod:`dpmodels.solvers.topdown_tree`) runs it on a Pyomo model.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import ModelStructureError

__all__ = ["simplex_projection", "check_tree_l2", "solve_tree_l2", "tree_objective"]


def simplex_projection(means: np.ndarray, weights: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Column-wise ``argmin sum_t w_t (h_t - m_t)^2`` s.t. ``sum_t h_t = target >= 0``, ``h >= 0``.

    ``means`` and ``weights`` are (children x columns); returns the same shape.
    """
    means = np.asarray(means, dtype=np.float64)
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), means.shape)
    if (weights <= 0).any():
        raise ModelStructureError("topdown_tree_l2 needs positive weights")
    inv = 1.0 / (2.0 * weights)
    breaks = means / inv  # h_t(lam) = inv_t (b_t - lam) while lam < b_t
    order = np.argsort(-breaks, axis=0)
    b_sorted = np.take_along_axis(breaks, order, axis=0)
    inv_sorted = np.take_along_axis(inv, order, axis=0)
    cum_bi = np.cumsum(b_sorted * inv_sorted, axis=0)
    cum_i = np.cumsum(inv_sorted, axis=0)
    lam_k = (cum_bi - targets[None, :]) / cum_i  # lam if the top-k children are active
    nxt = np.vstack([b_sorted[1:], np.full((1, means.shape[1]), -np.inf)])
    valid = lam_k >= nxt  # the k-th active set is consistent
    k = np.argmax(valid, axis=0)  # the first consistent k is the right one (sum is decreasing in lam)
    lam = lam_k[k, np.arange(means.shape[1])]
    return np.maximum(0.0, inv * (breaks - lam[None, :]))


def _combined_identity(child, weights: str) -> tuple[np.ndarray, float]:
    """Several identity queries as one: ``sum_q w_q (h - m_q)^2 = W (h - mean)^2 + const``."""
    w = [q.weight if weights == "inverse_variance" else 1.0 for q in child.queries]
    mean = sum(wq * q.values for wq, q in zip(w, child.queries, strict=True)) / sum(w)
    return mean, float(sum(w))


def check_tree_l2(problem, edits: bool = True) -> None:
    """Refuse (``ModelStructureError``) a problem the closed form does not solve exactly."""
    for child in problem.children:
        if not child.queries or not all(q.identity for q in child.queries):
            raise ModelStructureError("topdown_tree_l2 needs identity (detailed) measurements only for every child")
        if child.flows is not None:
            raise ModelStructureError(
                "topdown_tree_l2 does not handle the group-quarters flow constraints; use clarabel"
            )
        if child.total is not None and problem.parent is not None:
            raise ModelStructureError("topdown_tree_l2 does not handle invariant child totals; use clarabel")
    if problem.edits and edits:
        raise ModelStructureError("topdown_tree_l2 does not handle edit constraints; use clarabel")
    if getattr(problem, "rows", ()):
        raise ModelStructureError("topdown_tree_l2 does not handle production rows (child_rows.py); use clarabel")


def solve_tree_l2(problem, weights: str = "inverse_variance", edits: bool = True) -> np.ndarray:
    """The L2 solution of a structurally simple :class:`NodeProblem` (children x active cells).

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    weights : {"inverse_variance", "paper"}, default "inverse_variance"
        The query weights of the L2 objective (``"paper"``: 1).
    edits : bool, default True
        Keep the linear edits.
    """
    check_tree_l2(problem, edits)
    combined = [_combined_identity(c, weights) for c in problem.children]
    means = np.vstack([m for m, _ in combined])
    w = np.array([w for _, w in combined])
    if problem.parent is None:  # root: project the cells onto sum = total
        return simplex_projection(means.T, np.full((means.shape[1], 1), w[0]), np.array([problem.root_total])).T
    return simplex_projection(means, w[:, None], np.asarray(problem.parent, dtype=np.float64))


def tree_objective(problem, h: np.ndarray, weights: str) -> float:
    """The L2 objective of a solution (weighted squared residuals of the identity queries)."""
    total = 0.0
    for t, child in enumerate(problem.children):
        for q in child.queries:
            w = q.weight if weights == "inverse_variance" else 1.0
            total += float(w * ((h[t] - q.values) ** 2).sum())
    return total
