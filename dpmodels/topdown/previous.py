"""The previous (child by child) assembly of TopDown solves, kept as a reference (issue 25).

Before issue 25 the driver built every child's data separately (slicing the query matrices once per
child, its combination network with ``PublicKnowledge.flow_data``), the matrix form of a solve row by
row (:class:`_Rows`, one call per row) and verified the children one by one.
:mod:`.specs`, :mod:`.compiled` and :func:`dpmodels.topdown.solve.verify_children` now do it in
batches.  This module keeps the previous code, unchanged, for two uses only:

* ``NodeOptions(assembly="previous")`` runs it, so that ``dpmodels bench topdown`` times the previous
  and the batched assembly side by side in one run;
* the tests check that the batched assembly writes the same matrices, bit for bit.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .child_rows import linear_rows
from .compiled import LinearSystem
from .node_data import ChildSpec, NodeProblem, WeightedQuery, split_floor

__all__ = ["previous_child_spec", "previous_l2_system", "previous_l1_system", "previous_child_checks"]


def previous_child_spec(node, active, measurements, identity, mats, geography, knowledge) -> ChildSpec:
    """One child's spec, as the driver built it before issue 25 (its own slices of every query matrix).

    Parameters
    ----------
    node, active, measurements, identity, mats, geography, knowledge
        The child, the parent's active cells, the noisy answers, the identity flags and the matrices of
        the query sets, the geography and the public knowledge.
    """
    queries = []
    for meas in measurements.by_node[node]:
        sub = mats[meas.query][:, active]
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        queries.append(
            WeightedQuery(meas.query, sub[rows], meas.values[rows], 1.0 / meas.variance, identity[meas.query])
        )
    return ChildSpec(node, queries, knowledge.invariant_total(geography, node), knowledge.flow_data(geography, node))


class _Rows:
    """Accumulates sparse rows as (columns, values, rhs)."""

    def __init__(self):
        self.cols, self.vals, self.rhs = [], [], []

    def add(self, cols, vals, rhs: float) -> None:
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), (len(self.cols[-1]),)))
        self.rhs.append(float(rhs))

    def matrix(self, n: int) -> tuple[sp.csr_matrix, np.ndarray]:
        if not self.cols:
            return sp.csr_matrix((0, n)), np.zeros(0)
        indptr = np.concatenate([[0], np.cumsum([len(c) for c in self.cols])])
        a = sp.csr_matrix((np.concatenate(self.vals), np.concatenate(self.cols), indptr), shape=(len(self.cols), n))
        return a, np.array(self.rhs)


def _structure(problem: NodeProblem, base: np.ndarray, edits: bool, eq: _Rows, ub: _Rows):
    """Rows shared by L2 and L1 on histogram ``base + x`` (``base`` = 0 for L2, floors for L1).

    Returns the flow arcs' lower bounds (one per flow variable, after the histogram block).
    """
    m, n = problem.m, problem.n
    col = np.arange(m * n).reshape(m, n)
    if problem.parent is None:
        eq.add(col[0], 1.0, problem.root_total - base.sum())
    else:
        for j in range(n):
            eq.add(col[:, j], 1.0, problem.parent[j] - base[:, j].sum())
    types = problem.types() if problem.cell_type is not None else None
    flow_lower = []
    next_col = m * n
    for t, child in enumerate(problem.children):
        if child.flows is None or not child.flows.fixed:
            if child.total is not None and problem.parent is not None:
                eq.add(col[t], 1.0, child.total - base[t].sum())
        if child.flows is None:
            continue
        arcs = child.flows.arcs()
        arc_col = {a: next_col + k for k, a in enumerate(arcs)}
        next_col += len(arcs)
        flow_lower += [float(child.flows.lower[c, g]) for g, c in arcs]
        for g in range(child.flows.n_types):
            cells = np.flatnonzero(types == g)
            outs = [arc_col[(g, c)] for c in range(len(child.flows.combos)) if (g, c) in arc_col]
            eq.add(
                np.concatenate([col[t, cells], outs]),
                np.concatenate([np.ones(len(cells)), -np.ones(len(outs))]),
                -base[t, cells].sum(),
            )
        for c in range(len(child.flows.combos)):
            if child.flows.population[c] >= 0:
                ins = [arc_col[(g, c)] for g in range(child.flows.n_types) if (g, c) in arc_col]
                eq.add(ins, 1.0, float(child.flows.population[c]))
    for e in problem.edits if edits else ():
        coef = e.coef[problem.cells]
        nz = np.flatnonzero(coef)
        for t in range(m):
            shift = float(coef[nz] @ base[t, nz])
            if e.op == "<=":
                ub.add(col[t, nz], coef[nz], -shift)
            elif e.op == ">=":
                ub.add(col[t, nz], -coef[nz], shift)
            else:
                eq.add(col[t, nz], coef[nz], -shift)
    for op, cols, vals, rhs in linear_rows(problem, base):  # production rows (child_rows.py)
        (eq if op == "==" else ub).add(cols, vals, rhs)
    return np.array(flow_lower)


def previous_l2_system(problem: NodeProblem, weights: str = "inverse_variance", edits: bool = True) -> LinearSystem:
    """The L2 solve (:func:`~dpmodels.topdown.models.build_l2`) as a QP in matrix form.

    Identity queries enter the diagonal directly; every other query row gets a residual
    variable ``r = Q h - m`` (spec 3.0), which keeps the Hessian diagonal: forming ``Q'Q``
    instead makes dense blocks (a marginal summing 252 cells gives a 252 x 252 block per
    child) that slowed Clarabel's factorisation tenfold.
    """
    m, n = problem.m, problem.n
    eq, ub = _Rows(), _Rows()
    flow_lower = _structure(problem, np.zeros((m, n)), edits, eq, ub)
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
    first = m * n + len(flow_lower)
    r_diag, r_col = [], first
    for t, mat, values, w in resid:
        for k in range(mat.shape[0]):
            cols = t * n + mat.indices[mat.indptr[k] : mat.indptr[k + 1]]
            eq.add(
                np.concatenate([[r_col], cols]),
                np.concatenate([[1.0], -mat.data[mat.indptr[k] : mat.indptr[k + 1]]]),
                -float(values[k]),
            )
            r_col += 1
        r_diag.append(np.full(mat.shape[0], 2 * w))
    total = r_col
    diag = np.concatenate([hist_diag, np.zeros(len(flow_lower))] + r_diag)
    c = np.concatenate([lin, np.zeros(total - m * n)])
    # w (Qh - m)^2 = w r^2 with r = Qh - m: the constant w m'm was counted above, so remove it
    const -= sum(w * float(v @ v) for _, _, v, w in resid)
    a_eq, b_eq = eq.matrix(total)
    a_ub, b_ub = ub.matrix(total)
    lb = np.concatenate([np.zeros(m * n), flow_lower, np.full(total - first, -np.inf)])
    return LinearSystem(
        sp.diags(diag, format="csc"), c, const, a_eq, b_eq, a_ub, b_ub, lb, np.full(total, np.inf), m * n
    )


def previous_l1_system(problem: NodeProblem, hstar: np.ndarray, objective: str = "l1", edits: bool = True):
    """The rounding (:func:`~dpmodels.topdown.models.build_l1`) as an LP/MIP in matrix form;
    also returns the floors, so that ``H = floor + y``."""
    low, phi = split_floor(np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n))
    eq, ub = _Rows(), _Rows()
    flow_lower = _structure(problem, low.astype(np.float64), edits, eq, ub)
    total = problem.m * problem.n + len(flow_lower)
    cost = ((1 - 2 * phi) if objective == "l1" else -phi).ravel()
    upper = np.ones(problem.m * problem.n)
    if problem.parent is not None:
        upper = np.broadcast_to((problem.parent - low.sum(axis=0) > 0).astype(float), low.shape).ravel().copy()
    a_eq, b_eq = eq.matrix(total)
    a_ub, b_ub = ub.matrix(total)
    system = LinearSystem(
        None,
        np.concatenate([cost, np.zeros(len(flow_lower))]),
        0.0,
        a_eq,
        b_eq,
        a_ub,
        b_ub,
        np.concatenate([np.zeros(problem.m * problem.n), flow_lower]),
        np.concatenate([upper, np.full(len(flow_lower), np.inf)]),
        problem.m * problem.n,
    )
    return system, low


def previous_child_checks(problem: NodeProblem, v: np.ndarray, edits: bool, tol: float) -> list[str]:
    """The per-child part of :func:`~dpmodels.topdown.solve.verify_children` as it ran before issue 25:
    the invariant total, the group-quarters flows and the edits of one child at a time.

    Parameters
    ----------
    problem : NodeProblem
        The solve.
    v : numpy.ndarray
        Child histograms (children x active cells), float.
    edits : bool
        Check the edits.
    tol : float
        Absolute tolerance.
    """
    from .implied.group_quarters import flows_hold

    issues = []
    for t, child in enumerate(problem.children):
        if child.total is not None and abs(v[t].sum() - child.total) > tol:
            issues.append(f"child {t} total")
        if child.flows is not None and not flows_hold(child.flows, problem.types(), v[t], tol):
            issues.append(f"child {t} group quarters")
        for e in problem.edits if edits else ():
            scale = 1 + np.abs(e.coef[problem.cells] * v[t]).sum()
            if not e.holds(_full(problem, v[t], e.coef), tol=tol * scale).all():
                issues.append(f"child {t} edit {e.name}")
    return issues


def _full(problem: NodeProblem, row: np.ndarray, coef: np.ndarray) -> np.ndarray:
    full = np.zeros((1, len(coef)))
    full[0, problem.cells] = row
    return full
