"""Implied constraints of TopDown: derive them, check them, and build the integer witnesses.

A node histogram is only worth publishing if it can be *extended* to integer leaf histograms
that satisfy every leaf's public facts (spec 1.3, Problem 2).  Deciding that is NP-complete in
general (Theorems 1-2), so this module offers the special structures for which it is easy,
each with the constructive witness its proof gives, plus exact oracles for tests:

* :func:`maxflow_extension` / :func:`hall_constraints` -- Theorem 3 (buckets -> regions with
  totals and lower bounds): the max-flow check of spec 3.9(b) and its complete Hall set.
* :func:`lemma1_bounds` / :func:`allocate` -- Lemma 1 (2x2 tables with leaf margins) and its
  Allocate procedure (spec 4.3, with the erratum fix that advances the leaf index).
* :func:`fme_project` -- Fourier-Motzkin projection (``pyomo.contrib.fme``) with LP pruning,
  for deriving implied constraints of small linear systems (spec 3.9(a)).
* :func:`extension_milp` -- the exact (exponential) decision oracle of Problem 2 (spec 3.9(c)).
* :func:`sat_reduction` -- Theorem 1's 3-SAT construction, which shows that real-valued
  implied constraints are not enough.
* :func:`extend_to_leaves` / :func:`type_total_ranges` -- the network-flow (GQ) setting of
  Theorems 4-7: the ExtendToLeaves witness (spec 4.4) and the LP projection onto type totals.

Constraints are triples ``(coefficients, op, rhs)`` with ``op`` one of ``"<="``, ``">="``,
``"=="``, meaning ``coefficients . x  op  rhs`` (spec 1.3).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.optimize import linprog

from dpmodels.core.errors import DataValidationError

from .data import FlowData, GQKnowledge

__all__ = [
    "MaxFlowCheck",
    "maxflow_extension",
    "hall_constraints",
    "satisfies",
    "Lemma1Set",
    "lemma1_bounds",
    "allocate",
    "Projection",
    "fme_project",
    "ExtensionResult",
    "extension_milp",
    "SatReduction",
    "sat_reduction",
    "extend_to_leaves",
    "type_total_ranges",
]

_OPS = ("<=", ">=", "==")
_TOL = 1e-7
HALL_MAX_BUCKETS = 16


# ---------------------------------------------------------------------- validation helpers
def _int_array(value, field: str, shape=None, nonneg: bool = True) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.number):
        raise DataValidationError(field, f"must be numeric, got dtype {arr.dtype}")
    if shape is not None and arr.shape != tuple(shape):
        raise DataValidationError(field, f"must have shape {tuple(shape)}, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
        raise DataValidationError(field, "must contain integers")
    arr = np.round(arr).astype(np.int64)
    if nonneg and (arr < 0).any():
        raise DataValidationError(field, f"must be non-negative, found {arr.min()}")
    return arr


def _bool_array(value, field: str, shape) -> np.ndarray:
    arr = np.asarray(value)
    if arr.shape != tuple(shape):
        raise DataValidationError(field, f"must have shape {tuple(shape)}, got {arr.shape}")
    if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
        raise DataValidationError(field, "must be boolean (0/1)")
    return arr.astype(bool)


def _check_op(op: str, field: str) -> None:
    if op not in _OPS:
        raise DataValidationError(field, f"op must be one of {_OPS}, got {op!r}")


def satisfies(constraints: Sequence[tuple], x, tol: float = 1e-9) -> bool:
    """Whether the vector ``x`` satisfies every ``(coefficients, op, rhs)`` constraint."""
    x = np.asarray(x, dtype=float).ravel()
    for j, (coef, op, rhs) in enumerate(constraints):
        _check_op(op, f"constraints[{j}]")
        lhs = float(np.asarray(coef, dtype=float).ravel() @ x)
        if (
            (op == "<=" and lhs > rhs + tol)
            or (op == ">=" and lhs < rhs - tol)
            or (op == "==" and abs(lhs - rhs) > tol)
        ):
            return False
    return True


# ---------------------------------------------------------------------- Theorem 3: max flow and Hall
@dataclass(frozen=True)
class MaxFlowCheck:
    """Outcome of the max-flow extendability check (spec 3.9(b)).

    ``flow_value`` is the max flow of the network with the lower bounds already placed
    (``sum(lower)`` plus the max flow of the residual network); ``required`` is ``sum(totals)``.
    ``extension`` is the integer ``k x m`` table ``x_{j,i}`` when ``extendable``, else None.
    """

    extendable: bool
    flow_value: int
    required: int
    extension: np.ndarray | None


def _theorem3_data(totals, allowed, lower, equal, k: int | None = None):
    n = _int_array(totals, "totals")
    if n.ndim != 1:
        raise DataValidationError("totals", f"must be a vector (one total per region), got shape {n.shape}")
    allowed = np.asarray(allowed)
    if allowed.ndim != 2 or allowed.shape[1] != len(n) or (k is not None and allowed.shape[0] != k):
        want = f"({k if k is not None else 'k'}, {len(n)})"
        raise DataValidationError("allowed", f"must be buckets x regions = {want}, got {allowed.shape}")
    allowed = _bool_array(allowed, "allowed", allowed.shape)
    shape = allowed.shape
    c = np.zeros(shape, np.int64) if lower is None else _int_array(lower, "lower", shape)
    eq = np.zeros(shape, bool) if equal is None else _bool_array(equal, "equal", shape)
    if (c[~allowed] != 0).any():
        j, i = np.argwhere(~allowed & (c != 0))[0]
        raise DataValidationError(
            "lower", f"cell ({j}, {i}) is forced to 0 (not allowed) but has lower bound {c[j, i]}"
        )
    n_res = n - c.sum(axis=0)
    if (n_res < 0).any():
        i = int(np.flatnonzero(n_res < 0)[0])
        raise DataValidationError(
            "totals", f"region {i} total {n[i]} is below the sum of its lower bounds {c[:, i].sum()}"
        )
    free = allowed & ~eq  # cells with op ">=": they get an arc
    return n, c, free, n_res


def maxflow_extension(x, totals, allowed, lower=None, equal=None) -> MaxFlowCheck:
    """Can the base histogram ``x`` (k buckets) be split over m regions with the given totals?

    Theorem 3 / spec 3.9(b): cell ``(j, i)`` may be positive only where ``allowed[j, i]``;
    ``lower[j, i]`` is an integer lower bound ``c_{j,i}`` (default 0) and ``equal[j, i]`` fixes
    the cell to it.  The lower bounds are placed first (``x'_j = x_j - sum_i c_{j,i}``,
    ``n'_i = n_i - sum_j c_{j,i}``), then the rest is a max flow s -> bucket -> region -> t
    with capacities ``x'_j``, infinity on the free cells and ``n'_i``.  Integer capacities give
    an integral max flow, so the answer is exact and the flow is the integer extension.
    """
    xv = _int_array(x, "x", nonneg=False)
    if xv.ndim != 1:
        raise DataValidationError("x", f"must be a vector (one count per bucket), got shape {xv.shape}")
    n, c, free, n_res = _theorem3_data(totals, allowed, lower, equal, k=len(xv))
    x_res = xv - c.sum(axis=1)
    graph = nx.DiGraph()
    graph.add_nodes_from(["s", "t"])
    for j, cap in enumerate(x_res):
        graph.add_edge("s", ("x", j), capacity=max(int(cap), 0))
    for i, cap in enumerate(n_res):
        graph.add_edge(("y", i), "t", capacity=int(cap))
    for j, i in np.argwhere(free):
        graph.add_edge(("x", int(j)), ("y", int(i)))  # no capacity attribute = infinite
    value, flow = nx.maximum_flow(graph, "s", "t")
    required = int(n.sum())
    extendable = bool((x_res >= 0).all() and xv.sum() == required and value == n_res.sum())
    extension = None
    if extendable:
        extension = c.copy()
        for j, i in np.argwhere(free):
            extension[j, i] += int(flow[("x", int(j))][("y", int(i))])
    return MaxFlowCheck(extendable, int(value) + int(c.sum()), required, extension)


def hall_constraints(totals, allowed, lower=None, equal=None) -> list[tuple[np.ndarray, str, int]]:
    """Theorem 3's complete implied set on the bucket counts ``x`` (the Gale/Hall condition).

    ``sum_j x_j = sum_i n_i``; ``x_j >= sum_i c_{j,i}`` for every bucket; and for every nonempty
    set ``A`` of buckets, ``sum_{j in A} x_j <= sum_{i in neigh(A)} (n_i - sum_j c_{j,i}) +
    sum_{j in A} sum_i c_{j,i}``, where ``neigh(A)`` are the regions reachable from ``A``
    through a free (``>=``) cell.  There are ``2^k - 1`` subset rows, so k is limited to 16:
    use :func:`maxflow_extension` (the compact certificate) for anything bigger.
    """
    allowed_arr = np.asarray(allowed)
    k = allowed_arr.shape[0] if allowed_arr.ndim == 2 else -1
    if k > HALL_MAX_BUCKETS:
        raise DataValidationError(
            "allowed",
            f"{k} buckets would need 2^{k} - 1 Hall subset constraints; the limit is {HALL_MAX_BUCKETS} "
            "(use maxflow_extension, which checks the same condition in polynomial time)",
        )
    n, c, free, n_res = _theorem3_data(totals, allowed_arr, lower, equal)
    k = free.shape[0]
    masks = np.arange(1, 2**k)
    subsets = ((masks[:, None] >> np.arange(k)) & 1).astype(np.int64)  # (2^k - 1) x k
    neigh = (subsets @ free.astype(np.int64)) > 0
    rhs = neigh.astype(np.int64) @ n_res + subsets @ c.sum(axis=1)
    out: list[tuple[np.ndarray, str, int]] = [(np.ones(k, np.int64), "==", int(n.sum()))]
    out += [(np.eye(k, dtype=np.int64)[j], ">=", int(c[j].sum())) for j in range(k)]
    out += [(subsets[s], "<=", int(rhs[s])) for s in range(len(masks))]
    return out


# ---------------------------------------------------------------------- Lemma 1 and Allocate
@dataclass(frozen=True)
class Lemma1Set:
    """Lemma 1's complete implied set for a 2x2 parent ``h`` of leaves with known margins.

    ``h[i,0] + h[i,1] = row_totals[i]``, ``h[0,j] + h[1,j] = col_totals[j]`` and
    ``lower <= h[1,1] <= upper``; the other cells' nonnegativity follows.
    """

    row_totals: np.ndarray
    col_totals: np.ndarray
    lower: int
    upper: int

    def constraints(self) -> list[tuple[np.ndarray, str, int]]:
        """The set as triples over ``h`` flattened in C order ``(h00, h01, h10, h11)``."""
        r, c = self.row_totals, self.col_totals
        e11 = np.array([0, 0, 0, 1])
        return [
            (np.array([1, 1, 0, 0]), "==", int(r[0])),
            (np.array([0, 0, 1, 1]), "==", int(r[1])),
            (np.array([1, 0, 1, 0]), "==", int(c[0])),
            (np.array([0, 1, 0, 1]), "==", int(c[1])),
            (e11, "<=", int(self.upper)),
            (e11, ">=", int(self.lower)),
        ]

    def table(self, h11: int) -> np.ndarray:
        """The unique 2x2 table with these margins and ``h[1,1] = h11`` (maybe negative)."""
        h01 = int(self.col_totals[1]) - h11
        h10 = int(self.row_totals[1]) - h11
        return np.array([[int(self.row_totals[0]) - h01, h01], [h10, h11]], dtype=np.int64)


def _margins(row_sums, col_sums) -> tuple[np.ndarray, np.ndarray]:
    r = _int_array(row_sums, "row_sums")
    c = _int_array(col_sums, "col_sums")
    if r.ndim != 2 or r.shape[1] != 2 or c.shape != r.shape:
        raise DataValidationError("row_sums/col_sums", f"must both be (leaves, 2), got {r.shape} and {c.shape}")
    bad = np.flatnonzero(r.sum(axis=1) != c.sum(axis=1))
    if len(bad):
        leaf = int(bad[0])
        raise DataValidationError(
            "col_sums", f"leaf {leaf}: row sums total {r[leaf].sum()} but column sums total {c[leaf].sum()}"
        )
    return r, c


def lemma1_bounds(row_sums, col_sums) -> Lemma1Set:
    """Lemma 1: the complete implied set of a 2x2 parent whose leaves have fixed margins.

    ``row_sums[l] = (r_l[0], r_l[1])`` and ``col_sums[l] = (c_l[0], c_l[1])``.  The bounds are
    the sums of the per-leaf Frechet bounds: ``h[1,1] <= sum_l min(r_l[1], c_l[1])`` and
    ``h[1,1] >= sum_l (c_l[1] - min(c_l[1], r_l[0]))``.
    """
    r, c = _margins(row_sums, col_sums)
    upper = int(np.minimum(r[:, 1], c[:, 1]).sum())
    lower = int((c[:, 1] - np.minimum(c[:, 1], r[:, 0])).sum())
    return Lemma1Set(r.sum(axis=0), c.sum(axis=0), lower, upper)


def allocate(h, row_sums, col_sums) -> np.ndarray:
    """Allocate (spec 4.3): split a 2x2 parent ``h`` into integer leaf tables with given margins.

    Every leaf starts at its least ``h_l[1,1]``; the leftover of ``h[1,1]`` is poured into the
    leaves in order up to their Frechet upper bound (advancing the leaf index, the erratum fix of
    spec 8 item 14), and the margins fix the other three cells.  Returns a ``(leaves, 2, 2)``
    array summing to ``h``.  Raises :class:`DataValidationError` when ``h`` violates Lemma 1's
    complete set, i.e. when no such split exists.
    """
    r, c = _margins(row_sums, col_sums)
    h = _int_array(h, "h", shape=(2, 2), nonneg=False)
    lemma = lemma1_bounds(r, c)
    if not satisfies(lemma.constraints(), h.ravel()):
        raise DataValidationError(
            "h",
            f"{h.tolist()} is not extendable: Lemma 1 needs row sums {lemma.row_totals.tolist()}, column sums "
            f"{lemma.col_totals.tolist()} and {lemma.lower} <= h[1,1] <= {lemma.upper}",
        )
    m = len(r)
    h11 = c[:, 1] - np.minimum(r[:, 0], c[:, 1])
    leftover = int(h[1, 1] - h11.sum())
    leaf = 0
    while leftover > 0:
        step = min(int(min(r[leaf, 1], c[leaf, 1]) - h11[leaf]), leftover)
        h11[leaf] += step
        leftover -= step
        leaf += 1  # the erratum fix: without it the loop never ends
    out = np.empty((m, 2, 2), dtype=np.int64)
    out[:, 1, 1] = h11
    out[:, 0, 1] = c[:, 1] - h11
    out[:, 1, 0] = r[:, 1] - h11
    out[:, 0, 0] = c[:, 0] - out[:, 1, 0]
    return out


# ---------------------------------------------------------------------- Fourier-Motzkin
@dataclass(frozen=True)
class Projection:
    """A linear system on the kept variables, equivalent to the projection of the input system.

    ``constraints`` are triples over the kept variables in ``keep`` order: the equalities
    first (in reduced row-echelon form), then the irredundant inequalities.
    """

    keep: tuple[int, ...]
    names: tuple[str, ...]
    constraints: list[tuple[np.ndarray, str, float]]


@contextmanager
def _quiet_fme():
    """pyomo.contrib.fme logs a warning per eliminated variable; silence it."""
    logger = logging.getLogger("pyomo.contrib.fme")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _clean(a: np.ndarray) -> np.ndarray:
    a = np.where(np.abs(a) < 1e-9, 0.0, a)
    near = np.abs(a - np.round(a)) < 1e-9
    return np.where(near, np.round(a), a)


def _to_rows(constraints, n: int):
    """Split triples into ``E x = e`` rows and ``G x >= g`` rows (float arrays)."""
    eq, ge = [], []
    for j, item in enumerate(constraints):
        if len(item) != 3:
            raise DataValidationError(f"constraints[{j}]", "must be a (coefficients, op, rhs) triple")
        coef, op, rhs = item
        _check_op(op, f"constraints[{j}]")
        a = np.asarray(coef, dtype=float).ravel()
        if a.shape != (n,):
            raise DataValidationError(f"constraints[{j}]", f"needs {n} coefficients, got {a.shape}")
        if op == "==":
            eq.append((a, float(rhs)))
        elif op == ">=":
            ge.append((a, float(rhs)))
        else:
            ge.append((-a, -float(rhs)))
    return eq, ge


def _lp_min(c: np.ndarray, eq, ge) -> tuple[str, float]:
    """Minimize ``c . x`` over ``eq`` (a.x = b) and ``ge`` (a.x >= b) rows with HiGHS."""
    kw = {}
    if ge:
        kw["A_ub"] = -np.array([a for a, _ in ge])
        kw["b_ub"] = -np.array([b for _, b in ge])
    if eq:
        kw["A_eq"] = np.array([a for a, _ in eq])
        kw["b_eq"] = np.array([b for _, b in eq])
    res = linprog(c, bounds=(None, None), method="highs", **kw)
    if res.status == 0:
        return "optimal", float(res.fun)
    if res.status == 2:
        raise DataValidationError("constraints", "the linear system is infeasible")
    if res.status == 3:
        return "unbounded", -np.inf
    raise RuntimeError(f"HiGHS LP failed while pruning: {res.message}")


def _prune(eq, ge) -> list:
    """Drop every ``>=`` row implied by the others: a row is redundant if minimizing its LHS
    subject to the remaining rows (LP, HiGHS) cannot go below its RHS."""
    kept = list(ge)
    i = 0
    while i < len(kept):
        a, b = kept[i]
        others = kept[:i] + kept[i + 1 :]
        status, low = _lp_min(a, eq, others)
        if status == "optimal" and low >= b - _TOL * max(1.0, abs(b)):
            kept.pop(i)
        else:
            i += 1
    return kept


def _gauss_eliminate(eq, ge, var: int):
    """Substitute ``var`` out using an equality row that contains it; True if one existed."""
    cands = [(abs(a[var]), r) for r, (a, _) in enumerate(eq) if abs(a[var]) > 1e-9]
    if not cands:
        return eq, ge, False
    _, r = max(cands, key=lambda t: t[0])
    pa, pb = eq[r][0] / eq[r][0][var], eq[r][1] / eq[r][0][var]

    def sub(rows):
        return [(_clean(a - a[var] * pa), b - a[var] * pb) if a[var] != 0 else (a, b) for a, b in rows]

    return sub(eq[:r] + eq[r + 1 :]), sub(ge), True


def _fme_step(ge, var: int, n: int):
    """Eliminate ``var`` (which appears only in ``>=`` rows) with pyomo.contrib.fme."""
    import pyomo.environ as pyo
    from pyomo.repn.standard_repn import generate_standard_repn

    touching = [(a, b) for a, b in ge if abs(a[var]) > 1e-12]
    rest = [(a, b) for a, b in ge if abs(a[var]) <= 1e-12]
    model = pyo.ConcreteModel()
    model.x = pyo.Var(range(n))
    model.rows = pyo.ConstraintList()
    for a, b in touching:
        model.rows.add(sum(float(a[j]) * model.x[j] for j in np.flatnonzero(a)) >= b)
    with _quiet_fme():
        try:
            pyo.TransformationFactory("contrib.fourier_motzkin_elimination").apply_to(
                model,
                vars_to_eliminate=[model.x[var]],
                constraint_filtering_callback=None,
                projected_constraints_name="projected",
            )
        except RuntimeError as err:
            if "infeasible" in str(err):
                raise DataValidationError("constraints", "the linear system is infeasible") from err
            raise
    out = list(rest)
    for con in model.projected.values():
        repn = generate_standard_repn(con.body)
        a = np.zeros(n)
        for v, coef in zip(repn.linear_vars, repn.linear_coefs, strict=True):
            a[v.index()] += pyo.value(coef)
        const = pyo.value(repn.constant)
        a = _clean(a)
        if con.lower is not None:
            out.append((a, pyo.value(con.lower) - const))
        if con.upper is not None:
            out.append((-a, const - pyo.value(con.upper)))
    return out


def _normalize(a: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    """Scale a row by a positive factor so its coefficients are small integers when possible."""
    nz = np.abs(a[a != 0])
    if not len(nz):
        return a, b
    s = 1.0 / nz.min()
    for q in range(1, 13):
        if np.all(np.abs(a * s * q - np.round(a * s * q)) < 1e-9):
            s *= q
            break
    return _clean(a * s), float(_clean(np.array([b * s]))[0])


def _rref(eq, n: int):
    """Reduced row-echelon form of the equality rows (pivot columns, rows)."""
    if not eq:
        return [], []
    m = np.array([np.append(a, b) for a, b in eq], dtype=float)
    pivots, row = [], 0
    for col in range(n):
        if row == len(m):
            break
        p = row + int(np.argmax(np.abs(m[row:, col])))
        if abs(m[p, col]) < 1e-9:
            continue
        m[[row, p]] = m[[p, row]]
        m[row] /= m[row, col]
        for r in range(len(m)):
            if r != row and m[r, col] != 0:
                m[r] -= m[r, col] * m[row]
        m = _clean(m)
        pivots.append(col)
        row += 1
    if (np.abs(m[row:, -1]) > 1e-7).any():
        raise DataValidationError("constraints", "the equalities are inconsistent (the system is infeasible)")
    return pivots, [(m[r, :n], float(m[r, n])) for r in range(row)]


def fme_project(constraints, keep, *, names: Sequence[str] | None = None, prune: bool = True) -> Projection:
    """Project a linear system onto the variables ``keep`` (spec 3.9(a)).

    ``constraints`` are ``(coefficients, op, rhs)`` triples over n variables (no implicit
    bounds: write ``x >= 0`` as a row).  Equalities are first used to substitute eliminated
    variables out (Gaussian elimination, as in the paper's Appendix D); the remaining ones are
    projected out one at a time by ``pyomo.contrib.fme``'s Fourier-Motzkin transformation,
    pruning redundant rows by LP after each step so the system does not explode.  Finally
    implicit equalities are detected, the equalities put in reduced row-echelon form and
    substituted into the inequalities, and redundant inequalities dropped.  The result is
    equivalent over the reals; integer extendability needs its own argument (Lemma 1, Thm 3).
    """
    items = list(constraints)
    if not items:
        raise DataValidationError("constraints", "needs at least one constraint")
    n = len(np.asarray(items[0][0]).ravel())
    if names is not None and len(names) != n:
        raise DataValidationError("names", f"needs {n} names, got {len(names)}")
    keep_idx = tuple(int(j) for j in keep)
    if len(set(keep_idx)) != len(keep_idx) or any(not 0 <= j < n for j in keep_idx):
        raise DataValidationError("keep", f"must be distinct variable indices in 0..{n - 1}, got {keep_idx}")
    eq, ge = _to_rows(items, n)
    eliminate = [j for j in range(n) if j not in keep_idx]
    pending = []
    for var in eliminate:
        eq, ge, done = _gauss_eliminate(eq, ge, var)
        if not done:
            pending.append(var)
    eq, ge = _drop_constant_rows(eq, ge)
    while pending:
        var = min(pending, key=lambda v, rows=ge: _fme_cost(rows, v))  # fewest new rows first
        pending.remove(var)
        ge = _fme_step(ge, var, n)
        eq, ge = _drop_constant_rows(eq, ge)
        if prune:
            ge = _prune(eq, _dedupe(ge))
    cols = list(keep_idx)
    eq = [(a[cols], b) for a, b in eq]
    ge = [(a[cols], b) for a, b in ge]
    return Projection(keep_idx, tuple(names[j] for j in cols) if names else (), _tidy(eq, ge, len(cols), prune))


def _fme_cost(ge, var: int) -> int:
    """Net number of rows created by eliminating ``var`` (positive x negative minus both)."""
    pos = sum(a[var] > 1e-12 for a, _ in ge)
    neg = sum(a[var] < -1e-12 for a, _ in ge)
    return pos * neg - pos - neg


def _drop_constant_rows(eq, ge):
    out_eq, out_ge = [], []
    for a, b in eq:
        if np.abs(a).max(initial=0) > 1e-9:
            out_eq.append((a, b))
        elif abs(b) > 1e-7:
            raise DataValidationError("constraints", f"the system is infeasible (derived 0 == {b:g})")
    for a, b in ge:
        if np.abs(a).max(initial=0) > 1e-9:
            out_ge.append((a, b))
        elif b > 1e-7:
            raise DataValidationError("constraints", f"the system is infeasible (derived 0 >= {b:g})")
    return out_eq, out_ge


def _dedupe(ge):
    seen, out = set(), []
    for a, b in ge:
        a, b = _normalize(a, b)
        key = (tuple(np.round(a, 9)), round(b, 9))
        if key not in seen:
            seen.add(key)
            out.append((a, b))
    return out


def _tidy(eq, ge, n: int, prune: bool):
    """Implicit equalities, RREF, substitution, pruning; then readable triples."""
    if prune:
        still = []
        for a, b in ge:
            status, low = _lp_min(-a, eq, ge)  # max a.x = -low
            if status == "optimal" and -low <= b + _TOL * max(1.0, abs(b)):
                eq.append((a, b))
            else:
                still.append((a, b))
        ge = still
    pivots, eq = _rref(eq, n)
    subbed = []
    for a, b in ge:
        for col, (pa, pb) in zip(pivots, eq, strict=True):
            if a[col] != 0:
                a, b = a - a[col] * pa, b - a[col] * pb
        subbed.append((_clean(a), b))
    eq, ge = _drop_constant_rows(eq, subbed)
    ge = _dedupe(ge)
    if prune:
        ge = _prune(eq, ge)
    out: list[tuple[np.ndarray, str, float]] = [(a, "==", b) for a, b in eq]
    for a, b in ge:
        if (a <= 0).all():
            out.append((_clean(-a), "<=", -b + 0.0))
        else:
            out.append((a, ">=", b))
    return out


# ---------------------------------------------------------------------- exact MILP oracle
@dataclass(frozen=True)
class ExtensionResult:
    """Answer of :func:`extension_milp`.  ``table`` has shape ``parent.shape + (n_leaves,)``
    (the new attribute, e.g. location, is the last axis, spec 1.1) when ``extendable``."""

    extendable: bool
    table: np.ndarray | None
    status: str


def _coef_vector(coef, size: int, shape: tuple, field: str) -> np.ndarray:
    a = np.asarray(coef, dtype=float)
    if a.shape != shape and a.shape != (size,):
        raise DataValidationError(field, f"coefficients must have shape {shape} or ({size},), got {a.shape}")
    return a.ravel()


def extension_milp(
    parent,
    leaf_constraints: Sequence[Sequence[tuple]] | None = None,
    *,
    n_leaves: int | None = None,
    joint_constraints: Sequence[tuple] = (),
    relax: bool = False,
    time_limit: float | None = None,
) -> ExtensionResult:
    """Exact decision of Problem 2 (spec 3.9(c)): does ``parent`` extend to a table satisfying the
    constraints?  A zero-objective MILP (HiGHS through Pyomo) over the extended table ``H`` of
    shape ``parent.shape + (m,)``, integer and >= 0, with ``H.sum(axis=-1) == parent``.

    * ``leaf_constraints[l]`` lists triples on leaf ``l``'s table ``H[..., l]`` (coefficients of
      ``parent``'s shape, or flat); ``m = len(leaf_constraints)``.
    * ``joint_constraints`` are triples on the whole ``H`` (shape ``parent.shape + (m,)``), for
      constraints that span leaves, e.g. Theorem 1's clauses; give ``n_leaves`` when there are no
      per-leaf constraints.
    * ``relax=True`` solves the LP relaxation instead (real-valued extension).

    Exponential in the worst case (Problem 2 is NP-complete): for tests on tiny instances.
    A parent with a negative entry is reported as not extendable.
    """
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import TerminationCondition

    base = np.asarray(parent, dtype=float)
    if not relax:
        base = _int_array(base, "parent", nonneg=False).astype(float)
    if leaf_constraints is not None:
        m = len(leaf_constraints)
        if n_leaves is not None and n_leaves != m:
            raise DataValidationError("n_leaves", f"is {n_leaves} but leaf_constraints has {m} leaves")
    elif n_leaves is not None:
        m = int(n_leaves)
    else:
        raise DataValidationError("n_leaves", "give leaf_constraints or n_leaves")
    if m < 1:
        raise DataValidationError("n_leaves", f"must be >= 1, got {m}")
    shape, size = base.shape, base.size
    if (base < 0).any():
        return ExtensionResult(False, None, "negative parent")
    rows = []  # (flat coefficient vector over H, op, rhs)
    for leaf, cons in enumerate(leaf_constraints or []):
        for j, (coef, op, rhs) in enumerate(cons):
            _check_op(op, f"leaf_constraints[{leaf}][{j}]")
            a = np.zeros((size, m))
            a[:, leaf] = _coef_vector(coef, size, shape, f"leaf_constraints[{leaf}][{j}]")
            rows.append((a.ravel(), op, float(rhs)))
    for j, (coef, op, rhs) in enumerate(joint_constraints):
        _check_op(op, f"joint_constraints[{j}]")
        rows.append((_coef_vector(coef, size * m, shape + (m,), f"joint_constraints[{j}]"), op, float(rhs)))

    model = pyo.ConcreteModel()
    cells = range(size * m)
    upper = np.repeat(base.ravel(), m)
    model.h = pyo.Var(cells, domain=pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers)
    for e in cells:
        model.h[e].setub(float(upper[e]))
    model.marginal = pyo.Constraint(
        range(size), rule=lambda mdl, x: sum(mdl.h[x * m + leaf] for leaf in range(m)) == float(base.ravel()[x])
    )
    model.extra = pyo.ConstraintList()
    for a, op, rhs in rows:
        nz = np.flatnonzero(a)
        lhs = sum(float(a[e]) * model.h[int(e)] for e in nz) if len(nz) else 0.0
        if not len(nz):
            if not satisfies([(np.zeros(1), op, rhs)], [0.0]):
                return ExtensionResult(False, None, "constant constraint violated")
            continue
        model.extra.add({"<=": lhs <= rhs, ">=": lhs >= rhs, "==": lhs == rhs}[op])
    model.obj = pyo.Objective(expr=0)
    kwargs = {"raise_exception_on_nonoptimal_result": False, "load_solutions": False}
    if time_limit is not None:
        kwargs["time_limit"] = time_limit
    results = SolverFactory("highs").solve(model, **kwargs)
    term = results.termination_condition
    if term == TerminationCondition.convergenceCriteriaSatisfied:
        results.solution_loader.load_vars()
        values = np.array([pyo.value(model.h[e]) for e in cells]).reshape(shape + (m,))
        table = values if relax else np.round(values).astype(np.int64)
        return ExtensionResult(True, table, "feasible")
    if term in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        # every variable is bounded by the parent, so "infeasible or unbounded" means infeasible
        return ExtensionResult(False, None, "infeasible")
    raise RuntimeError(f"extension MILP undecided: HiGHS stopped with {term.name}")


# ---------------------------------------------------------------------- Theorem 1 (3-SAT)
@dataclass(frozen=True)
class SatReduction:
    """Theorem 1's instance: ``H^0 = ones(w)`` over ``R_1``, extended by ``R_2 in {0, 1}``.

    ``constraints`` are the clause rows on ``H[i, a]`` (shape ``(w, 2)``); solve with
    ``extension_milp(red.parent, n_leaves=2, joint_constraints=red.constraints)``.
    """

    parent: np.ndarray
    constraints: list[tuple[np.ndarray, str, int]]

    def decode(self, table) -> np.ndarray:
        """Truth assignment of an extension: ``v_i`` is true iff ``H[i, 0] = 1``."""
        return np.asarray(table)[:, 0] == 1


def sat_reduction(clauses: Sequence[Sequence[int]], n_vars: int) -> SatReduction:
    """Theorem 1's reduction from SAT to the implied-constraints decision problem (spec 3.10).

    Clauses use DIMACS literals: ``+i`` is ``v_i``, ``-i`` its negation (1-based).  A clause on
    ``v_i, v_j, v_l`` becomes ``H[i,a] + H[j,b] + H[l,c] >= 1`` with ``a = 1`` iff ``v_i`` is
    negated; since ``H[i,0] + H[i,1] = 1`` with integer entries, an extension is exactly a
    satisfying assignment.  (Any clause length works; the theorem uses 3.)
    """
    if int(n_vars) < 1:
        raise DataValidationError("n_vars", f"must be >= 1, got {n_vars}")
    w = int(n_vars)
    rows = []
    for k, clause in enumerate(clauses):
        lits = [int(v) for v in clause]
        if not lits or any(v == 0 or abs(v) > w for v in lits):
            raise DataValidationError(f"clauses[{k}]", f"literals must be nonzero with |literal| <= {w}, got {lits}")
        coef = np.zeros((w, 2), dtype=np.int64)
        for v in lits:
            coef[abs(v) - 1, int(v < 0)] += 1
        rows.append((coef, ">=", 1))
    return SatReduction(np.ones(w, dtype=np.int64), rows)


# ---------------------------------------------------------------------- Theorems 4-7: ExtendToLeaves
def _northwest(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Northwest-corner rule: a non-negative integer matrix with the given (equal-sum) margins."""
    out = np.zeros((len(rows), len(cols)), dtype=np.int64)
    r_left, c_left = rows.astype(np.int64).copy(), cols.astype(np.int64).copy()
    i = j = 0
    while i < len(rows) and j < len(cols):
        step = min(r_left[i], c_left[j])
        out[i, j] = step
        r_left[i] -= step
        c_left[j] -= step
        if r_left[i] == 0:
            i += 1
        else:
            j += 1
    return out


def extend_to_leaves(node_histogram, flow_data: FlowData, gq: GQKnowledge, leaf_totals, leaf_positions, *, flows=None):
    """ExtendToLeaves (spec 4.4): integer leaf histograms that add up to a node histogram.

    ``node_histogram`` is the node's integer histogram over ``gq``'s cells; ``leaf_positions``
    the rows of ``gq.present``/``gq.lower`` of the leaves below the node; ``leaf_totals`` their
    populations ``N_l``, enforced exactly when given (None when they are not invariant: then
    only the supports and lower bounds bind at the leaves).  ``flow_data`` must be the
    leaf-level combination network of the node: ``PublicKnowledge.flow_data`` when the leaves
    are the total-invariant units, or when the node lies below the invariant level; a network
    over larger units (e.g. states, spec 8 item 8) is refused, because the unit totals are not
    arguments here.  ``flows`` optionally gives ``F`` (types x combos); otherwise it is derived
    by a max flow (:func:`maxflow_extension` on types -> combinations).

    Steps (the proof of Theorems 4-7): reserve ``a_{g,l}`` persons of type g in each leaf, route
    the excess ``F_{g,c} - f_{g,c}`` of each combination over its leaves (northwest corner,
    filling each leaf to ``N_l``), then split each leaf's type-g count over the cells of type g
    (northwest corner again).  Returns a ``(leaves, cells)`` int64 array in ``leaf_positions``
    order, or **None when the histogram is not extendable** (it violates the node's flow
    constraints).  Malformed input raises :class:`DataValidationError`.
    """
    n_types, n_cells = gq.n_types, len(gq.cell_type)
    hist = _int_array(node_histogram, "node_histogram", shape=(n_cells,))
    pos = _int_array(leaf_positions, "leaf_positions")
    if pos.ndim != 1 or not len(pos) or pos.max() >= gq.present.shape[0] or len(np.unique(pos)) != len(pos):
        raise DataValidationError(
            "leaf_positions", f"must be a nonempty vector of distinct leaf rows < {gq.present.shape[0]}"
        )
    present, a = gq.present[pos], gq.lower[pos].astype(np.int64)
    totals = None if leaf_totals is None else _int_array(leaf_totals, "leaf_totals", shape=(len(pos),))
    if totals is not None and (totals < a.sum(axis=1)).any():
        k = int(np.flatnonzero(totals < a.sum(axis=1))[0])
        raise DataValidationError("leaf_totals", f"leaf row {pos[k]} total {totals[k]} is below its lower bounds")
    if totals is not None and (totals[~present.any(axis=1)] != 0).any():
        raise DataValidationError("leaf_totals", "a leaf with no type present must have total 0")
    combos = np.asarray(flow_data.combos, dtype=bool)
    if combos.shape[1] != n_types:
        raise DataValidationError("flow_data", f"has {combos.shape[1]} types, gq has {n_types}")
    match = (present[:, None, :] == combos[None, :, :]).all(axis=2)  # leaves x combos
    if not match.any(axis=1).all() or not match.any(axis=0).all():
        raise DataValidationError(
            "flow_data",
            "its combinations are not the supports of these leaves; build it at the leaf level "
            "(leaves as the total-invariant units, or a node below the invariant level)",
        )
    combo_of = match.argmax(axis=1)
    f = np.zeros((len(combos), n_types), dtype=np.int64)
    np.add.at(f, combo_of, a)
    if not np.array_equal(f, flow_data.lower):
        raise DataValidationError("flow_data", "its flow lower bounds are not the sums of these leaves' lower bounds")
    population = None
    if totals is not None:
        population = np.zeros(len(combos), dtype=np.int64)
        np.add.at(population, combo_of, totals)
        if flow_data.fixed and not np.array_equal(population, flow_data.population):
            raise DataValidationError("flow_data", "its combination populations are not the sums of the leaf totals")
    elif flow_data.fixed:
        population = np.asarray(flow_data.population, dtype=np.int64)

    type_count = np.bincount(gq.cell_type, weights=hist, minlength=n_types).astype(np.int64)
    flow = _node_flows(type_count, combos, f, population, flows)
    if flow is None:
        return None

    # steps 1-2: per leaf and type, reserve the lower bounds and route each combination's excess
    leaf_type = a.copy()
    for c in range(len(combos)):
        leaves = np.flatnonzero(combo_of == c)
        excess = flow[:, c] - f[c]
        if totals is not None:
            room = totals[leaves] - a[leaves].sum(axis=1)
            leaf_type[leaves] += _northwest(room, excess)
        else:
            leaf_type[leaves[0]] += excess
    # step 3: split each leaf's type-g count over the cells of type g
    out = np.zeros((len(pos), n_cells), dtype=np.int64)
    for g in range(n_types):
        cells = np.flatnonzero(gq.cell_type == g)
        if len(cells):
            out[:, cells] = _northwest(leaf_type[:, g], hist[cells])
    return out


def _node_flows(type_count, combos, f, population, flows):
    """The flow ``F`` (types x combos) of the node's network, or None if there is none."""
    allowed = combos.T
    if flows is not None:
        F = _int_array(flows, "flows", shape=allowed.shape)
        ok = (
            (F[~allowed] == 0).all()
            and (F >= f.T).all()
            and np.array_equal(F.sum(axis=1), type_count)
            and (population is None or np.array_equal(F.sum(axis=0), population))
        )
        if not ok:
            raise DataValidationError("flows", "do not satisfy the node's flow constraints for this histogram")
        return F
    if population is not None:
        check = maxflow_extension(type_count, population, allowed, lower=f.T)
        return check.extension
    # populations free (node below the invariant level): any combination containing g takes g's excess
    excess = type_count - f.sum(axis=0)
    if (excess < 0).any():
        return None
    F = f.T.copy()
    for g in np.flatnonzero(excess):
        hosts = np.flatnonzero(allowed[g])
        if not len(hosts):
            return None
        F[g, hosts[0]] += excess[g]
    return F


def type_total_ranges(flow_data: FlowData) -> np.ndarray:
    """LP projection of a node's flow constraints ``NF`` onto the type totals ``GQ_g``.

    Returns a ``(types, 2)`` array of ``[min, max]`` of every ``GQ_g = sum_c F_{g,c}`` subject to
    ``F_{g,c} >= f_{g,c}`` on legal pairs and ``sum_g F_{g,c} = N_c`` (when fixed); ``inf`` when
    unbounded.  The flow matrix is a network matrix, so the bounds are integers and attained.
    """
    arcs = flow_data.arcs()
    n_types = flow_data.n_types
    out = np.zeros((n_types, 2))
    if not arcs:
        return out
    lb = [(float(flow_data.lower[c, g]), None) for g, c in arcs]
    fixed = [c for c in range(len(flow_data.combos)) if flow_data.population[c] >= 0]
    a_eq = np.array([[1.0 if arc[1] == c else 0.0 for arc in arcs] for c in fixed]) if fixed else None
    b_eq = np.array([float(flow_data.population[c]) for c in fixed]) if fixed else None
    for g in range(n_types):
        obj = np.array([1.0 if arc[0] == g else 0.0 for arc in arcs])
        if not obj.any():
            continue
        for col, sign in ((0, 1.0), (1, -1.0)):
            res = linprog(sign * obj, A_eq=a_eq, b_eq=b_eq, bounds=lb, method="highs")
            if res.status == 2:
                raise DataValidationError("flow_data", "the flow constraints are infeasible")
            out[g, col] = np.inf if res.status == 3 else sign * res.fun
    return out
