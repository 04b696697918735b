"""The 2020 production's query rounder: the rounding judged by the measured queries, not the cells.

The 2019 rounding ``H = floor(H*) + y`` minimises ``sum (1 - 2 phi) y``, the L1 distance of the
cells to the L2 solution ``H*`` (``phi`` its fractional part).  The rounder of the 2020 production
(its multipass rounder) scores each measured marginal query instead: for every child ``t``, query
``Q`` and row ``r``, a penalty ``d >= |Q_r y_t - round(Q_r phi_t)|`` (the row's rounded answer
should move by its own fraction, rounded), all penalties with weight 1; the cell term
``sum (1 - 2 phi) y`` stays when the detailed (identity) query is measured.  So a marginal's
released answer is its L2 answer rounded, wherever the constraints allow.

``NodeOptions(objective="queries")`` selects it, in both the matrix form (:func:`penalty_rows`, for
HiGHS) and the Pyomo model (:func:`add_query_penalties`, in :func:`~dpmodels.topdown.models.build_l1`),
so any MILP solver takes it.  It judges the solve's queries in one rounder pass (with interleaved
passes, :mod:`.interleaved`, a pass's solve carries that pass's queries only), or in the
production's rounder passes when declared (``NodeOptions(rounder_passes=...)``, :mod:`.inner_passes`).
Differences from the production, by design: only measured query sets are judged (its rounder also
takes unmeasured groupings); and a half rounds up (``floor(v + 1/2)``), not to even, which matters
only for an exact half.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

__all__ = ["penalised_rows", "penalty_rows", "cell_costs", "add_query_penalties", "round_half_up"]


def round_half_up(values: np.ndarray) -> np.ndarray:
    """``floor(v + 1/2)``: the nearest integer, a half rounded up."""
    return np.floor(np.asarray(values, dtype=np.float64) + 0.5)


def penalised_rows(problem, phi: np.ndarray) -> list[tuple[int, sp.csr_matrix, np.ndarray]]:
    """Every child's marginal (non-identity) queries with the targets ``round(Q phi_t)``:
    ``(child, matrix on the active cells, targets)``.

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    phi : numpy.ndarray
        The fractional part of the L2 solution (children x active cells).
    """
    out = []
    for t, child in enumerate(problem.children):
        for q in child.queries:
            if not q.identity:
                mat = q.matrix.tocsr()
                out.append((t, mat, round_half_up(mat @ phi[t])))
    return out


def cell_costs(problem, phi: np.ndarray) -> np.ndarray:
    """The cell term's costs: ``1 - 2 phi`` for a child whose detailed query is measured, else 0."""
    measured = np.array([any(q.identity for q in c.queries) for c in problem.children], dtype=bool)
    return np.where(measured[:, None], 1 - 2 * phi, 0.0)


def penalty_rows(problem, phi: np.ndarray, first: int, ub) -> int:
    """Add the rows ``+-(Q_r y_t) - d_r <= +-target`` to ``ub`` (a :class:`~.compiled._Rows`), the
    penalties numbered from column ``first``; returns how many penalties (cost 1 each).

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    phi : numpy.ndarray
        The fractional part of the L2 solution (children x active cells).
    first : int
        The column of the first penalty.
    ub : _Rows
        The ``<=`` rows of the matrix form.
    """
    n, col = problem.n, first
    for t, mat, target in penalised_rows(problem, phi):
        rows = mat.shape[0]
        counts = np.diff(mat.indptr)
        pen = col + np.arange(rows)
        cells = t * n + mat.indices.astype(np.int64)
        starts = mat.indptr[:-1]
        for sign in (1.0, -1.0):
            cols = np.insert(cells, starts, 0)
            vals = np.insert(sign * mat.data.astype(np.float64), starts, -1.0)
            cols[starts + np.arange(rows)] = pen  # each row: its penalty first, then its cells
            ub.block(counts + 1, cols, vals, sign * target)
        col += rows
    return col - first


def add_query_penalties(m, problem, phi: np.ndarray, hist, low: np.ndarray):
    """Add the penalties and their rows to the Pyomo rounding model ``m``; returns the penalty sum.

    ``hist(t, x)`` is the model's expression of ``H[t, x]`` (a floor plus ``y``, or the floor), so
    ``Q_r y_t = Q_r (H_t - floor_t)``.

    Parameters
    ----------
    m : pyomo.environ.ConcreteModel
        The rounding model of :func:`~dpmodels.topdown.models.build_l1`.
    problem : NodeProblem
        The solve.
    phi : numpy.ndarray
        The fractional part of the L2 solution (children x active cells).
    hist : callable
        ``(child, cell) -> expression`` of the model's histogram.
    low : numpy.ndarray
        The floors (children x active cells).
    """
    rows = []
    for t, mat, target in penalised_rows(problem, phi):
        cells = problem.cells
        for r in range(mat.shape[0]):
            lo, hi = mat.indptr[r], mat.indptr[r + 1]
            terms = [(float(mat.data[k]), int(mat.indices[k])) for k in range(lo, hi)]
            rows.append((t, terms, float(target[r])))
    m.query_rows = pyo.RangeSet(0, len(rows) - 1) if rows else pyo.Set(initialize=[])
    m.query_penalty = pyo.Var(m.query_rows, domain=pyo.NonNegativeReals, doc="|Q_r y - round(Q_r phi)|")

    def moved(i):
        t, terms, _ = rows[i]
        return pyo.quicksum(a * (hist(t, int(cells[j])) - int(low[t, j])) for a, j in terms)

    m.query_above = pyo.Constraint(m.query_rows, rule=lambda m, i: moved(i) - rows[i][2] <= m.query_penalty[i])
    m.query_below = pyo.Constraint(m.query_rows, rule=lambda m, i: rows[i][2] - moved(i) <= m.query_penalty[i])
    return pyo.quicksum(m.query_penalty[i] for i in m.query_rows)
