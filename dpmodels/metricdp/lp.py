"""The mDP LPs in matrix form, solved with HiGHS directly (spec 2.2, 6.2-6.6).

The Pyomo models of :mod:`dpmodels.metricdp.models` are the reference formulations; at the
paper's scale (556k mDP rows) building them takes longer than solving them, so Benders and
the full-LP baseline build the same rows with numpy and hand them to ``highspy``.  Tests
check the two paths reach the same optima.

Variable layout: record-major, ``z[i, k]`` at column ``i * K + k`` (within the block's own
records for masters and subproblems).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpmodels.core.highs import new_highs

from .data import MDPGraph, MDPInstance

__all__ = [
    "full_lp",
    "Highs",
    "mdp_rows",
    "unit_rows",
    "with_width",
    "safe_lower_bound",
    "assignment_bound",
    "Simplices",
    "record_simplices",
]

INF = float("inf")


def mdp_rows(src, dst, coef, index: np.ndarray, K: int) -> sp.csr_matrix:
    """Rows ``z[src, k] - coef z[dst, k] <= 0`` for every pair and output, columns via ``index``."""
    n_pairs = len(src)
    rows = np.repeat(np.arange(n_pairs * K), 2)
    ks = np.tile(np.arange(K), n_pairs)
    a = index[np.repeat(src, K)] * K + ks
    b = index[np.repeat(dst, K)] * K + ks
    cols = np.column_stack([a, b]).ravel()
    vals = np.column_stack([np.ones(n_pairs * K), -np.repeat(coef, K)]).ravel()
    width = (index.max() + 1) * K if len(index) else 0
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_pairs * K, width))


def unit_rows(n: int, K: int) -> sp.csr_matrix:
    """Rows ``sum_k z[i, k]`` for i = 0..n-1."""
    return sp.csr_matrix((np.ones(n * K), (np.repeat(np.arange(n), K), np.arange(n * K))), shape=(n, n * K))


def with_width(a: sp.spmatrix, n: int) -> sp.csr_matrix:
    """``a`` as a CSR matrix of ``n`` columns: rows built over fewer columns, padded on the right.

    Parameters
    ----------
    a : sparse matrix
        Rows over the first ``a.shape[1] <= n`` columns.
    n : int
        The width of the result.
    """
    a = sp.csr_matrix(a)
    return sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], n))


@dataclass
class LPResult:
    status: str
    objective: float | None
    x: np.ndarray | None
    row_dual: np.ndarray | None
    seconds: float


class Highs:
    """A thin persistent HiGHS model: rows can be added and bounds changed between solves."""

    def __init__(
        self,
        cost,
        lower,
        upper,
        a: sp.spmatrix,
        row_lower,
        row_upper,
        *,
        method: str = "simplex",
        time_limit: float | None = None,
        threads: int | None = None,
        presolve: bool = True,
        tolerance: float | None = None,
        iteration_limit: int | None = None,
    ):
        import highspy

        self.highspy = highspy
        self.simplices: Simplices | None = None  # row sums its builder declares, for safe_lower_bound
        self.h = new_highs()  # output off, and HiGHS's banner kept off our stdout
        if method != "simplex":
            self.h.setOptionValue("solver", method)
        if time_limit is not None:
            self.h.setOptionValue("time_limit", float(time_limit))
        if threads is not None:
            self.h.setOptionValue("threads", int(threads))
        if not presolve:
            self.h.setOptionValue("presolve", "off")
        if iteration_limit is not None:  # per run; a run that hits it is retried cold by solve()
            self.h.setOptionValue("simplex_iteration_limit", int(iteration_limit))
        if tolerance is not None:  # HiGHS's primal and dual feasibility tolerances (default 1e-7)
            self.h.setOptionValue("primal_feasibility_tolerance", float(tolerance))
            self.h.setOptionValue("dual_feasibility_tolerance", float(tolerance))
        inf = highspy.kHighsInf
        self.h.addVars(len(cost), _finite(lower, inf), _finite(upper, inf))
        self.h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), np.asarray(cost, dtype=np.float64))
        self.add_rows(a, row_lower, row_upper)

    def add_rows(self, a: sp.spmatrix, lower, upper) -> None:
        a = sp.csr_matrix(a)
        if a.shape[0] == 0:
            return
        inf = self.highspy.kHighsInf
        self.h.addRows(
            a.shape[0],
            _finite(lower, inf),
            _finite(upper, inf),
            a.nnz,
            a.indptr.astype(np.int32),
            a.indices.astype(np.int32),
            a.data.astype(np.float64),
        )

    def set_costs(self, cost) -> None:
        cost = np.asarray(cost, dtype=np.float64)
        self.h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), cost)

    def set_time_limit(self, seconds: float) -> None:
        """Let the next solve run for ``seconds`` from now.  HiGHS's ``time_limit`` is checked
        against the run time accumulated over *all* of this object's solves (measured: a
        persistent model given 0.5 s after 1.2 s of earlier solves stopped at once), so the
        limit is the run time so far plus ``seconds``."""
        self.h.setOptionValue("time_limit", float(self.h.getRunTime() + max(seconds, 1e-3)))

    def set_row_bounds(self, rows: np.ndarray, lower, upper) -> None:
        inf = self.highspy.kHighsInf
        self.h.changeRowsBounds(len(rows), np.asarray(rows, dtype=np.int32), _finite(lower, inf), _finite(upper, inf))

    def solve(self, retry: bool = True) -> LPResult:
        """Run HiGHS; on a numerical failure ("Unknown"/solve error) or the simplex iteration limit
        (a cycling warm start) retry once from scratch (cleared basis), then with the
        interior-point method, before giving up."""
        import time

        tick = time.perf_counter()
        self.h.run()
        status = self.h.getModelStatus()
        ok = (
            self.highspy.HighsModelStatus.kOptimal,
            self.highspy.HighsModelStatus.kInfeasible,
            self.highspy.HighsModelStatus.kUnbounded,
            self.highspy.HighsModelStatus.kTimeLimit,  # not a numerical failure: no retry
        )
        if retry and status not in ok:
            self.h.clearSolver()
            self.h.run()
            status = self.h.getModelStatus()
        if retry and status not in ok:
            self.h.clearSolver()
            self.h.setOptionValue("solver", "ipm")
            self.h.run()
            self.h.setOptionValue("solver", "simplex")
            status = self.h.getModelStatus()
        name = self.h.modelStatusToString(status)
        if status != self.highspy.HighsModelStatus.kOptimal:
            return LPResult(name, None, None, None, time.perf_counter() - tick)
        sol = self.h.getSolution()
        return LPResult(
            name,
            float(self.h.getInfo().objective_function_value),
            np.asarray(sol.col_value),
            np.asarray(sol.row_dual),
            time.perf_counter() - tick,
        )


def safe_lower_bound(model: Highs, col_lower, col_upper, row_dual=None, simplices: Simplices | None = None) -> float:
    """A lower bound on the optimum of ``model``'s last solved LP that holds however inexact
    HiGHS's duals are (the Neumaier-Shcherbina bound): for row multipliers ``pi`` with the
    right signs, ``min_{lo <= x <= up} (c - A'pi)'x + pi'(row bound)`` is below the optimum by
    weak duality, exactly, for *any* ``pi``.  ``col_lower``/``col_upper`` must be finite boxes
    that contain an optimal solution; ``row_dual`` defaults to HiGHS's duals.

    With ``simplices`` (rows ``sum_{j in group} x_j = 1`` of the model and their column groups,
    ``x >= 0``), those rows are kept as constraints instead of being priced: each group
    contributes the least reduced cost over its columns, not the box's sum of negative parts.
    Still a weak-duality bound for any ``pi`` (a Lagrangian relaxation of the other rows), and
    never weaker: with K = 100 outputs per record an inexact dual's small negative reduced
    costs are paid once per record instead of up to K times (measured below).

    Why: HiGHS meets dual feasibility only to its tolerance in scaled space; with mDP
    coefficients ``e^(eps d)`` ~ 5e8 the Benders master's reported optimum exceeded a value a
    feasible point attains (measured: 0.3428712 against a certified 0.3428697 on a 1 km grid at
    eps = 10/km), so its objective is no bound there.
    """
    lp = model.h.getLp()
    m, n = lp.num_row_, lp.num_col_
    mat = lp.a_matrix_
    arrays = (np.asarray(mat.value_), np.asarray(mat.index_), np.asarray(mat.start_))
    rowwise = mat.format_ == model.highspy.MatrixFormat.kRowwise
    a = sp.csr_matrix(arrays, shape=(m, n)) if rowwise else sp.csc_matrix(arrays, shape=(m, n))
    pi = np.asarray(model.h.getSolution().row_dual if row_dual is None else row_dual, dtype=np.float64)
    lo, up = np.asarray(lp.row_lower_), np.asarray(lp.row_upper_)
    inf = model.highspy.kHighsInf
    pi = np.where(((pi > 0) & (lo <= -inf)) | ((pi < 0) & (up >= inf)), 0.0, pi)
    if simplices is not None:
        pi[simplices.rows] = 0.0
    row_part = float((pi * np.where(pi > 0, lo, 0.0)).sum() + (pi * np.where(pi < 0, up, 0.0)).sum())
    reduced = np.asarray(lp.col_cost_) - a.T @ pi
    col_lower, col_upper = np.asarray(col_lower, dtype=np.float64), np.asarray(col_upper, dtype=np.float64)
    boxed = np.ones(n, dtype=bool)
    simplex_part = 0.0
    if simplices is not None:
        boxed[simplices.groups.ravel()] = False
        simplex_part = float(reduced[simplices.groups].min(axis=1).sum())
    r, lo_c, up_c = reduced[boxed], col_lower[boxed], col_upper[boxed]
    return row_part + simplex_part + float(np.where(r >= 0, r * lo_c, r * up_c).sum())


def assignment_bound(instance: MDPInstance) -> float:
    """``sum_i min_k C_hat[i, k]``: the perturbation LP's optimum without its mDP rows.

    A lower bound on the full LP's optimum that needs no solve (every record's row of a
    feasible ``Z`` is a probability vector), and at least 0 since losses and prior are; the
    iterative methods start from it, so a run stopped before its first certificate still
    reports a bound, never ``-inf`` or a negative one.

    Parameters
    ----------
    instance : MDPInstance
        The instance whose ``weighted_cost`` (prior times loss, N x K) is bounded.

    Returns
    -------
    float
        The bound.
    """
    return float(instance.weighted_cost.min(axis=1).sum())


@dataclass(frozen=True)
class Simplices:
    """Rows ``sum_{j in groups[i]} x_j = 1`` of a model (``rows[i]``), for :func:`safe_lower_bound`."""

    rows: np.ndarray
    groups: np.ndarray  # (len(rows), K) column indices


def record_simplices(first_row: int, records: int, K: int) -> Simplices:
    """The row sums of ``records`` perturbation vectors laid out record-major (column ``i K + k``),
    stored as consecutive rows from ``first_row`` (as :func:`unit_rows` builds them)."""
    return Simplices(first_row + np.arange(records), np.arange(records * K).reshape(records, K))


def _finite(values, inf) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return np.where(np.isposinf(v), inf, np.where(np.isneginf(v), -inf, v))


def full_lp(
    instance: MDPInstance,
    graph: MDPGraph | None = None,
    *,
    method: str = "simplex",
    time_limit: float | None = None,
    include_ub: bool = False,
) -> Highs:
    """The full perturbation LP (Eqs. 4-7) as a HiGHS model: the mDP rows, then the row sums
    (declared as the model's ``simplices``).

    Parameters
    ----------
    instance : MDPInstance
        The instance (records, outputs, metric, prior, ``eps`` per km, ``eta``).
    graph : MDPGraph, optional
        The mDP rows' pairs (default: the instance's graph).
    method : str
        HiGHS's method: ``"simplex"``, ``"ipm"`` or ``"pdlp"``.
    time_limit : float, optional
        Seconds for the solve.
    include_ub : bool
        Also bound every ``z <= 1``.
    """
    g = graph or instance.graph
    n, k = instance.N, instance.K
    index = np.arange(n)
    a = sp.vstack([mdp_rows(g.src, g.dst, g.coef, index, k), unit_rows(n, k)], format="csr")
    lower = np.concatenate([np.full(g.n_pairs * k, -INF), np.ones(n)])
    upper = np.concatenate([np.zeros(g.n_pairs * k), np.ones(n)])
    model = Highs(
        instance.weighted_cost.ravel(),
        np.zeros(n * k),
        np.ones(n * k) if include_ub else np.full(n * k, INF),
        a,
        lower,
        upper,
        method=method,
        time_limit=time_limit,
    )
    model.simplices = record_simplices(g.n_pairs * k, n, k)
    return model
