"""An exact presolve of the matrix-form node solves: the columns that every feasible point holds at 0.

A node solve carries many variables that its public facts force to zero: the cells of a group-quarters
type absent from a child (its type row ``sum of those cells = 0`` over non-negative cells), and, in the
rounding, the cells whose floors already meet their parent (``sum over children = 0``).  Clarabel and
HiGHS (whose presolve is off on the small rounding LPs, :func:`~dpmodels.topdown.compiled.solve_l1_highs`)
carry them through every factorisation (``dpmodels bench topdown --solver-settings`` prints the share
of histogram columns removed and times the solves with and without them).

Besides the columns whose bounds are ``[0, 0]``, two rules, applied until nothing changes, each exact:

* a **forcing row** ``sum_i a_i x_i = 0`` whose coefficients all have one sign and whose columns all have
  the lower bound 0: every ``x_i = 0``;
* a **singleton row** ``a x_k = 0`` (one column left): ``x_k = 0`` (when 0 is within its bounds).

The columns so fixed are removed; so are the rows left empty (``0 = 0``, ``0 <= b`` with ``b >= 0``).
The objective loses nothing (every removed column is 0), so the reduced problem has the same optimal
value and, mapped back by :func:`expanded`, the same optimal points.  If a removal would leave an empty
row with a non-zero right-hand side (an infeasible problem), nothing is removed and the solver reports
the infeasibility.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .node_solvers import diagonal

__all__ = ["forced_zero_columns", "without_forced_zeros", "expanded"]


def forced_zero_columns(system) -> np.ndarray:
    """The columns of ``system`` that every feasible point holds at 0 (boolean mask): those whose bounds are
    ``[0, 0]``, then the two rules of this module applied until nothing changes.

    Parameters
    ----------
    system : LinearSystem
        A node solve in matrix form (:mod:`dpmodels.topdown.compiled`).
    """
    a = system.a_eq.tocsr()
    zero = (system.lb == 0) & (system.ub == 0)
    n_rows = a.shape[0]
    rows = np.repeat(np.arange(n_rows), np.diff(a.indptr))
    pick = (system.b_eq[rows] == 0) & (a.data != 0)  # entries of the homogeneous rows (a stored 0 forces nothing)
    rows, cols, positive = rows[pick], a.indices[pick], a.data[pick] > 0
    may_be_negative = system.lb[cols] != 0  # lb < 0 (lb > 0 with a homogeneous one-sign row: infeasible, kept)
    zero_inside = (system.lb[cols] <= 0) & (system.ub[cols] >= 0)
    while True:
        live = ~zero[cols]
        pos = np.bincount(rows[live & positive], minlength=n_rows)
        neg = np.bincount(rows[live & ~positive], minlength=n_rows)
        loose = np.bincount(rows[live & may_be_negative], minlength=n_rows)
        forcing = (loose == 0) & ((pos == 0) | (neg == 0))
        single = pos + neg == 1
        hit = live & (forcing[rows] | (single[rows] & zero_inside))
        if not hit.any():
            return zero
        zero[cols[hit]] = True


def without_forced_zeros(system):
    """``system`` without its forced-zero columns (:func:`forced_zero_columns`) and the equality rows
    they leave empty; returns ``(reduced system, kept columns)``.  Nothing is removed (the system itself
    is returned) when no column is forced, when every one is (the solvers refuse an empty model), or when a
    removal would leave an infeasible empty row.

    Parameters
    ----------
    system : LinearSystem
        A node solve in matrix form.
    """
    zero = forced_zero_columns(system)
    keep = np.flatnonzero(~zero)
    if len(keep) in (0, system.n):  # every column 0: the solvers refuse an empty model, so give them all
        return system, np.arange(system.n)
    a_eq, nonempty = _kept_columns(system.a_eq, zero)
    if (system.b_eq[~nonempty] != 0).any():
        return system, np.arange(system.n)
    a_ub, used = _kept_columns(system.a_ub, zero)
    if (system.b_ub[~used] < 0).any():  # 0 <= b with b < 0: infeasible, let the solver say
        return system, np.arange(system.n)
    first_continuous = system.n - system.n_continuous
    return replace(
        system,
        P=None if system.P is None else _kept_square(system.P, keep),
        c=system.c[keep],
        a_eq=a_eq,
        b_eq=system.b_eq[nonempty],
        a_ub=a_ub,
        b_ub=system.b_ub[used],
        lb=system.lb[keep],
        ub=system.ub[keep],
        n_hist=int((keep < system.n_hist).sum()),
        n_continuous=int((keep >= first_continuous).sum()),
    ), keep


def _kept_columns(a, zero: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """``a`` without the columns ``zero`` and without the rows left empty (columns renumbered), and which
    rows are kept: straight on the CSR arrays (scipy's column slicing costs more than the solve saves)."""
    a = a.tocsr()
    on = ~zero[a.indices]
    per_row = np.bincount(np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))[on], minlength=a.shape[0])
    kept_rows = per_row > 0
    renumber = np.cumsum(~zero) - 1
    indptr = np.concatenate([[0], np.cumsum(per_row[kept_rows])])
    out = sp.csr_matrix((a.data[on], renumber[a.indices[on]], indptr), shape=(int(kept_rows.sum()), int((~zero).sum())))
    return out, kept_rows


def _kept_square(p, keep: np.ndarray) -> sp.csc_matrix:
    """The rows and columns ``keep`` of the QP's ``P`` (diagonal in the node solves: read off directly)."""
    p = p.tocsc()
    if np.array_equal(p.indices, np.repeat(np.arange(p.shape[1]), np.diff(p.indptr))):
        return diagonal(p.diagonal()[keep])
    return p[keep][:, keep].tocsc()


def expanded(x: np.ndarray | None, keep: np.ndarray, n: int) -> np.ndarray | None:
    """A solution of the reduced system back on all ``n`` columns (the removed ones at 0).

    Parameters
    ----------
    x : numpy.ndarray or None
        The reduced system's solution (None: no solution).
    keep : numpy.ndarray
        The kept columns (:func:`without_forced_zeros`).
    n : int
        The full system's number of columns.
    """
    if x is None or len(keep) == n:
        return x
    out = np.zeros(n)
    out[keep] = x
    return out
