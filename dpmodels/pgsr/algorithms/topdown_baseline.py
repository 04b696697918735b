"""TopDown as the PGSR paper runs it: the baseline of Table 7 on ``M_H``'s noisy counts (spec 3.8).

The paper describes its TopDown baseline only loosely ("a weaker form of M_H^r ... a program
on two consecutive levels and an ad-hoc rounding, top to bottom"); spec 3.8 reads it as

1. the root: project its noisy counts onto ``{x >= 0, sum_s x_s = G}`` (L2), then round
   to integers summing to ``G`` by largest remainder (ties to the smaller size ``s``);
2. level by level, for every region ``r`` with its integer counts fixed: project its
   children's noisy counts, size by size, onto ``{x >= 0, sum_c x^c_s = n^r_s}``, then round
   each size's column by largest remainder (ties to the earlier child).

Every step is a Euclidean projection onto a scaled simplex, solved in closed form by
sorting (:func:`dpmodels.topdown.tree_l2.simplex_projection`, the census TopDown family's
own closed form), and a largest-remainder rounding, which is the L1-nearest integer vector
with the same sum.  So the release is integral, non-negative, consistent and sums to ``G``
at every level (#CV = 0) by construction.  It uses the same measurement as ``M_H`` (counts,
scale ``2L/eps`` per level) and sees only the noisy values and the public hierarchy and ``G``:
post-processing, so it is as private as the measurement.

Weighted values (``noisy.weights``, any weight per cell): every projection minimises the weighted
``sum w (x - noisy)^2`` (the same closed form takes weights) and every rounding is the nearest
integer vector in the same weighted distance: raising ``y_i`` above ``floor x_i`` costs
``w_i (1 - 2 frac x_i)``, so the ``d`` cheapest raises are taken (equal weights: the largest
remainders, exactly as unweighted).

This is *not* the Census Bureau's production TopDown (:mod:`dpmodels.topdown`, spec
``topdown.md``), which weights queries by their variance, keeps invariants and group-quarters
flows, and rounds by a min-cost flow; on one table of counts with identity queries, equal
weights and no invariants but the total, that algorithm's L2 and L1 steps reduce to these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpmodels.topdown.tree_l2 import simplex_projection

from ..data import NoisyGroupSizes

__all__ = ["TopDownBaseline", "project_simplex", "largest_remainder", "solve_topdown_baseline"]

#: Fractional parts closer than this are ties (the projection's float error is ~1e-8 at 1e8).
TIE_TOLERANCE = 1e-6


@dataclass
class TopDownBaseline:
    """The released counts (regions x sizes) and the Model 1 objective they reach."""

    counts: np.ndarray
    objective: float
    info: dict = field(default_factory=dict)


def project_simplex(values: np.ndarray, totals: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Column-wise ``argmin sum_i w_i (x_i - values[i, j])^2`` s.t. ``x >= 0``, ``sum x = totals[j]``.

    ``values`` is (entries x columns), ``totals`` one non-negative number per column, ``weights``
    positive, of ``values``' shape (None: all 1).
    """
    values = np.asarray(values, dtype=np.float64)
    w = np.ones((1, 1)) if weights is None else np.asarray(weights, dtype=np.float64)
    return simplex_projection(values, w, np.asarray(totals, dtype=np.float64))


def largest_remainder(x: np.ndarray, totals: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Column-wise integer ``y`` with ``y_i in {floor x_i, floor x_i + 1}`` and ``sum y = totals``
    that is nearest to ``x`` in L1: the columns' largest fractional parts get the ``+1``.

    Raising ``y_i`` costs ``1 - 2 frac(x_i)`` over flooring it, so the cheapest ``d`` raises
    are the ``d`` largest fractions.  Fractions within :data:`TIE_TOLERANCE` of each other
    are ties and go to the smaller index, so equal remainders (every active entry of one
    projected column has the same fraction when the noisy values are integers) are broken
    by position, not by float noise.

    With ``weights`` (positive, ``x``'s shape) the nearest in ``sum w |y - x|`` (equally in ``sum w
    (y - x)^2``: on ``{floor, floor + 1}`` both charge a raise ``w (1 - 2 frac)`` over the floor):
    the raises go to the largest ``w (frac - 1/2)`` (``w`` relative to the column's largest weight, so
    that :data:`TIE_TOLERANCE` keeps its meaning).  Equal weights in a column rank it exactly as
    unweighted.
    """
    x = np.asarray(x, dtype=np.float64)
    base = np.floor(x)
    short = np.asarray(totals, dtype=np.int64) - base.sum(axis=0).astype(np.int64)
    if (short < 0).any() or (short > x.shape[0]).any():
        raise ValueError("largest_remainder: the columns of x must sum to their totals (within < 1)")
    frac = x - base
    if weights is not None:
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), x.shape)
        uneven = (w != w[:1]).any(axis=0)  # columns whose weights differ: rank by the weighted gain
        relative = w / w.max(axis=0, keepdims=True)  # keys within [-1/2, 1/2], as fractions, for the tie tolerance
        frac = np.where(uneven[None, :], relative * (frac - 0.5), frac)
    rank = _tie_aware_rank(frac)
    return (base + (rank < short[None, :])).astype(np.int64)


def _tie_aware_rank(frac: np.ndarray) -> np.ndarray:
    """Each entry's position, per column, in the order: larger fraction first, ties by index."""
    k, cols = frac.shape
    order = np.argsort(-frac, axis=0, kind="stable")
    ordered = np.take_along_axis(frac, order, axis=0)
    steps = np.vstack([np.zeros((1, cols), dtype=bool), ordered[:-1] - ordered[1:] > TIE_TOLERANCE])
    group = np.empty_like(order)
    np.put_along_axis(group, order, np.cumsum(steps, axis=0), axis=0)  # tie group of each entry
    final = np.argsort(group * k + np.arange(k)[:, None], axis=0, kind="stable")
    rank = np.empty_like(final)
    np.put_along_axis(rank, final, np.broadcast_to(np.arange(k)[:, None], final.shape), axis=0)
    return rank


def project_and_round(values: np.ndarray, totals: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """One TopDown step on a batch of columns: (weighted) L2 projection, then (weighted) largest remainder."""
    return largest_remainder(project_simplex(values, totals, weights), totals, weights)


def solve_topdown_baseline(noisy: NoisyGroupSizes) -> TopDownBaseline:
    """The spec 3.8 baseline on noisy counts: the root, then every level's children (weighted by
    ``noisy.weights``, if any)."""
    noisy.require_kind("counts", "the TopDown baseline")
    h, values, weights = noisy.hierarchy, noisy.values, noisy.weights
    out = np.zeros(values.shape, dtype=np.int64)
    root_weights = None if weights is None else weights[0][:, None]
    out[0] = project_and_round(values[0][:, None], np.array([noisy.G]), root_weights)[:, 0]
    batches = 0
    for level in range(1, h.n_levels):
        parents = np.arange(*h.level_slice(level).indices(h.n_regions))
        batches += _split_level(values, weights, out, h.child_start[parents], h.child_count[parents], parents)
    objective = noisy.squared_error(out)
    return TopDownBaseline(out, objective, {"batches": batches})


def _split_level(values, weights, out, start, count, parents) -> int:
    """Children of one level's parents, batched by number of children: each batch is one
    (children x parents*sizes) projection and rounding; fills ``out`` in place."""
    N = values.shape[1]
    sizes = np.unique(count[count > 0])
    for k in sizes:
        which = np.flatnonzero(count == k)
        rows = start[which][None, :] + np.arange(k)[:, None]  # (k, P): the children of each parent
        block = values[rows].reshape(k, -1)  # (k, P*N)
        totals = out[parents[which]].reshape(-1)  # (P*N,), aligned with block's columns
        block_weights = None if weights is None else weights[rows].reshape(k, -1)
        out[rows] = project_and_round(block, totals, block_weights).reshape(k, len(which), N)
    return len(sizes)
