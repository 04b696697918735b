"""TopDown node solves compiled straight to matrices, for scale.

The Pyomo models of :mod:`dpmodels.topdown.models` are the reference formulations; building
them costs far more than solving them for the thousands of small solves of a state
(profiled: about 80% of the time went to Pyomo construction and compilation).  This module
writes the *same* problems as sparse matrices directly from a :class:`NodeProblem` and hands
them to Clarabel (L2) and HiGHS (L1 LP/MIP).  Two exact eliminations keep them small: the
type totals ``GQ`` are substituted into the flow-out rows and the combination populations
``CB`` into the flow-in rows.  Tests check both paths reach the same optima.

Variables: the histogram block (``H`` for L2, ``y`` for L1; children x active cells, row
major), then one flow variable per (child, type, combination) arc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .child_rows import linear_rows
from .node_data import NodeProblem, split_floor
from .node_solvers import diagonal, solve_l1_highs, solve_l2_clarabel, stack_rows
from .query_rounder import cell_costs, penalty_rows
from .query_sums import query_terms

__all__ = [
    "LinearSystem",
    "l2_system",
    "l1_system",
    "solve_l2_clarabel",
    "solve_l1_highs",
    "stack_rows",
    "diagonal",
]


@dataclass
class LinearSystem:
    """``min 1/2 x'Px + c'x + c0`` s.t. ``A_eq x = b_eq``, ``A_ub x <= b_ub``, ``lb <= x <= ub``."""

    P: sp.csc_matrix | None
    c: np.ndarray
    c0: float
    a_eq: sp.csr_matrix
    b_eq: np.ndarray
    a_ub: sp.csr_matrix
    b_ub: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    n_hist: int
    n_continuous: int = 0  # trailing columns that stay continuous in the MIP (the query rounder's penalties)

    @property
    def n(self) -> int:
        return len(self.c)


class _Rows:
    """Accumulates sparse rows in blocks: ``block`` adds many rows at once (row lengths, their columns
    and values concatenated, one right-hand side each), ``add`` one row."""

    def __init__(self):
        self.lengths, self.cols, self.vals, self.rhs = [], [], [], []

    def block(self, lengths, cols, vals, rhs) -> None:
        self.lengths.append(np.asarray(lengths, dtype=np.int64))
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=np.float64))
        self.rhs.append(np.asarray(rhs, dtype=np.float64))

    def add(self, cols, vals, rhs: float) -> None:
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.asarray(vals, dtype=np.float64)
        self.block([len(cols)], cols, vals if vals.ndim else np.full(len(cols), vals), [float(rhs)])

    def matrix(self, n: int) -> tuple[sp.csr_matrix, np.ndarray]:
        if not self.cols:
            return sp.csr_matrix((0, n)), np.zeros(0)
        lengths = np.concatenate(self.lengths)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        a = sp.csr_matrix((np.concatenate(self.vals), np.concatenate(self.cols), indptr), shape=(len(lengths), n))
        return a, np.concatenate(self.rhs)


def _flow_rows(problem: NodeProblem, base: np.ndarray, types: np.ndarray, first_col: int) -> dict:
    """Every child's flow rows, for all children at once: ``{child: (type rows, population rows, arc
    lower bounds)}``, the rows each a ``(lengths, cols, vals, rhs)`` block (population rows None where no
    population is fixed).

    A child's type rows are, per GQ type, its cells of that type minus its out-arcs of that type (=
    minus the floors' type mass, exact in integers); its population rows, per combination with a fixed
    population, its in-arcs (= the population).  The arcs of the children with flows take consecutive
    columns from ``first_col``, child by child, each child's in ``np.nonzero(combos)`` order.
    """
    kids = [t for t, child in enumerate(problem.children) if child.flows is not None]
    if not kids:
        return {}
    n, n_types = problem.n, problem.children[kids[0]].flows.n_types
    arcs = [np.nonzero(problem.children[t].flows.combos) for t in kids]  # (combination, type) per arc
    n_arcs = np.array([len(combo) for combo, _ in arcs])
    arc_kid = np.repeat(np.arange(len(kids)), n_arcs)
    arc_type = np.concatenate([arc_t for _, arc_t in arcs])
    by_type = np.argsort(types, kind="stable")  # cells grouped by type, in cell order
    cell_kid = np.repeat(np.arange(len(kids)), len(by_type))
    cell_type = np.tile(types[by_type], len(kids))
    cols = np.concatenate([(np.asarray(kids)[:, None] * n + by_type).ravel(), first_col + np.arange(len(arc_type))])
    vals = np.concatenate([np.ones(len(cell_kid)), -np.ones(len(arc_type))])
    row = np.concatenate([cell_kid * n_types + cell_type, arc_kid * n_types + arc_type])
    order = np.argsort(2 * row + (np.arange(len(row)) >= len(cell_kid)), kind="stable")  # per row: cells, then arcs
    lengths = np.bincount(row, minlength=len(kids) * n_types)
    onehot = np.zeros((n, n_types))
    onehot[np.arange(n), types] = 1.0
    rhs = -(base[kids] @ onehot)  # the floors' mass of every type (integers: exact)
    ends = np.cumsum(lengths.reshape(len(kids), n_types).sum(axis=1))
    out, start, arc_start = {}, 0, first_col
    for k, t in enumerate(kids):
        part = order[start : ends[k]]
        type_rows = (lengths[k * n_types : (k + 1) * n_types], cols[part], vals[part], rhs[k])
        flows = problem.children[t].flows
        lower = flows.lower[arcs[k]].astype(np.float64)  # the arcs' lower bounds, in their column order
        out[t] = (type_rows, _population_rows(flows, arcs[k][0], arc_start), lower)
        start, arc_start = ends[k], arc_start + n_arcs[k]
    return out


def _population_rows(flows, arc_combo: np.ndarray, first_arc: int):
    """Per combination with a fixed population, its in-arcs (= the population); None without one."""
    fixed = np.flatnonzero(flows.population >= 0)
    if not len(fixed):
        return None
    ins = np.bincount(arc_combo, minlength=len(flows.combos))[fixed]
    keep = np.isin(arc_combo, fixed)
    return ins, first_arc + np.flatnonzero(keep), np.ones(int(keep.sum())), flows.population[fixed]


def _structure(problem: NodeProblem, base: np.ndarray, edits: bool, eq: _Rows, ub: _Rows):
    """Rows shared by L2 and L1 on histogram ``base + x`` (``base`` = 0 for L2, floors for L1).

    Returns the flow arcs' lower bounds (one per flow variable, after the histogram block).  The rows
    come in blocks of numpy arrays (the order and values of the row-by-row assembly of
    :mod:`.previous`, tested equal).
    """
    m, n = problem.m, problem.n
    col = np.arange(m * n).reshape(m, n)
    if problem.parent is None:
        eq.add(col[0], 1.0, problem.root_total - base.sum())
    else:
        eq.block(np.full(n, m), col.T.ravel(), np.ones(m * n), problem.parent - base.sum(axis=0))
    flows = _flow_rows(problem, base, problem.types(), m * n) if problem.cell_type is not None else {}
    flow_lower = []
    for t, child in enumerate(problem.children):
        if child.flows is None or not child.flows.fixed:
            if child.total is not None and problem.parent is not None:
                eq.add(col[t], 1.0, child.total - base[t].sum())
        if child.flows is None:
            continue
        type_rows, population_rows, lower = flows[t]
        eq.block(*type_rows)
        if population_rows is not None:
            eq.block(*population_rows)
        flow_lower.append(lower)
    for e in problem.edits if edits else ():
        coef = e.coef[problem.cells]
        nz = np.flatnonzero(coef)
        shift = np.array([float(coef[nz] @ base[t, nz]) for t in range(m)])
        sign, rows, rhs = {"<=": (1.0, ub, -shift), ">=": (-1.0, ub, shift), "==": (1.0, eq, -shift)}[e.op]
        rows.block(np.full(m, len(nz)), col[:, nz].ravel(), np.tile(sign * coef[nz], m), rhs)
    for op, cols, vals, rhs in linear_rows(problem, base):  # production rows (child_rows.py)
        (eq if op == "==" else ub).add(cols, vals, rhs)
    return np.concatenate(flow_lower) if flow_lower else np.array([])


def _residual_rows(mat: sp.csr_matrix, offset: int, first: int, values: np.ndarray, eq: _Rows, cache: dict) -> None:
    """Rows ``r_k - (Q h_t)_k = -m_k``: one residual variable (columns ``first``, ``first + 1``, ...)
    before each row's histogram columns (``offset`` + the query's columns).  The layout of a matrix
    is kept in ``cache`` (children share their sliced query matrices)."""
    if id(mat) not in cache:
        starts = mat.indptr[:-1]
        cols = np.insert(mat.indices.astype(np.int64), starts, 0)
        vals = np.insert(-mat.data.astype(np.float64), starts, 1.0)
        is_r = np.insert(np.zeros(mat.nnz, dtype=bool), starts, True)
        cache[id(mat)] = (mat, cols, vals, is_r, np.diff(mat.indptr) + 1)
    _, template, vals, is_r, lengths = cache[id(mat)]
    cols = template + offset
    cols[is_r] = first + np.arange(mat.shape[0])
    eq.block(lengths, cols, vals, -np.asarray(values, dtype=np.float64))


def l2_system(
    problem: NodeProblem, weights: str = "inverse_variance", edits: bool = True, form: str = "sums"
) -> LinearSystem:
    """The L2 solve (:func:`~dpmodels.topdown.models.build_l2`) as a QP in matrix form.

    Identity queries enter the diagonal directly.  Every other query row needs a variable (forming
    ``Q'Q`` instead makes dense blocks, a marginal summing 252 cells gives a 252 x 252 block per
    child, which slowed Clarabel's factorisation tenfold); ``form`` says which:

    * ``"sums"`` (default): a variable ``s = Q_r h`` per row, written over the rows of a finer query
      where the marginals nest, and none for a row that is one cell or one finer row
      (:mod:`.query_sums`): the same optimum, from about half the variables at the block level;
    * ``"residual"``: ``r = Q_r h - m`` over the row's cells (spec 3.0), the matrix of the row-by-row
      :func:`dpmodels.topdown.previous.previous_l2_system`, tested bit for bit.

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    weights : {"inverse_variance", "paper"}, default "inverse_variance"
        The query weights.
    edits : bool, default True
        Keep the linear edits.
    form : {"sums", "residual"}, default "sums"
        How the non-identity query rows enter.
    """
    if form not in ("sums", "residual"):
        raise ValueError(f"form must be 'sums' or 'residual', got {form!r}")
    m, n = problem.m, problem.n
    eq, ub = _Rows(), _Rows()
    flow_lower = _structure(problem, np.zeros((m, n)), edits, eq, ub)
    first = m * n + len(flow_lower)
    if form == "sums":
        terms = query_terms(problem, weights, first)
        eq.block(terms.lengths, terms.cols, terms.vals, np.zeros(len(terms.lengths)))
        diag = np.concatenate([terms.hist_diag, np.zeros(len(flow_lower)), terms.sum_diag])
        c = np.concatenate([terms.hist_lin, np.zeros(len(flow_lower)), terms.sum_lin])
        const = terms.const
    else:
        diag, c, const = _residual_terms(problem, weights, first, eq)
    total = len(c)
    a_eq, b_eq = eq.matrix(total)
    a_ub, b_ub = ub.matrix(total)
    lb = np.concatenate([np.zeros(m * n), flow_lower, np.full(total - first, -np.inf)])
    return LinearSystem(diagonal(diag), c, const, a_eq, b_eq, a_ub, b_ub, lb, np.full(total, np.inf), m * n)


def _residual_terms(problem: NodeProblem, weights: str, first: int, eq: _Rows):
    """The residual form's diagonal, linear term and constant; its rows go into ``eq``."""
    m, n = problem.m, problem.n
    hist_diag, lin, const = np.zeros(m * n), np.zeros(m * n), 0.0
    resid = []  # (child, query matrix, values, weight)
    for t, child in enumerate(problem.children):
        for q in child.queries:
            w = q.weight if weights == "inverse_variance" else 1.0
            const += w * float(q.values @ q.values)
            if q.identity:
                hist_diag[t * n : (t + 1) * n] += 2 * w
                lin[t * n : (t + 1) * n] -= 2 * w * q.values
            else:
                resid.append((t, q.matrix.tocsr(), q.values, w))
    r_diag, r_col, layouts = [], first, {}
    for t, mat, values, w in resid:
        _residual_rows(mat, t * n, r_col, values, eq, layouts)
        r_col += mat.shape[0]
        r_diag.append(np.full(mat.shape[0], 2 * w))
    diag = np.concatenate([hist_diag, np.zeros(first - m * n)] + r_diag)
    c = np.concatenate([lin, np.zeros(r_col - m * n)])
    # w (Qh - m)^2 = w r^2 with r = Qh - m: the constant w m'm was counted above, so remove it
    const -= sum(w * float(v @ v) for _, _, v, w in resid)
    return diag, c, const


def l1_system(problem: NodeProblem, hstar: np.ndarray, objective: str = "l1", edits: bool = True):
    """The rounding (:func:`~dpmodels.topdown.models.build_l1`) as an LP/MIP in matrix form;
    also returns the floors, so that ``H = floor + y``.  ``objective="queries"`` adds the query
    rounder's penalties (:mod:`.query_rounder`) as continuous columns after the flows."""
    low, phi = split_floor(np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n))
    eq, ub = _Rows(), _Rows()
    flow_lower = _structure(problem, low.astype(np.float64), edits, eq, ub)
    total = problem.m * problem.n + len(flow_lower)
    n_pen = 0
    if objective == "queries":
        cost = cell_costs(problem, phi).ravel()
        n_pen = penalty_rows(problem, phi, total, ub)
    else:
        cost = ((1 - 2 * phi) if objective == "l1" else -phi).ravel()
    upper = np.ones(problem.m * problem.n)
    if problem.parent is not None:
        upper = np.broadcast_to((problem.parent - low.sum(axis=0) > 0).astype(float), low.shape).ravel().copy()
    a_eq, b_eq = eq.matrix(total + n_pen)
    a_ub, b_ub = ub.matrix(total + n_pen)
    system = LinearSystem(
        None,
        np.concatenate([cost, np.zeros(len(flow_lower)), np.ones(n_pen)]),
        0.0,
        a_eq,
        b_eq,
        a_ub,
        b_ub,
        np.concatenate([np.zeros(problem.m * problem.n), flow_lower, np.zeros(n_pen)]),
        np.concatenate([upper, np.full(len(flow_lower) + n_pen, np.inf)]),
        problem.m * problem.n,
        n_pen,
    )
    return system, low
