"""Fourier-Motzkin projection of a linear system onto chosen variables (TopDown spec 3.9(a)).

:func:`fme_project` derives the implied constraints of a small linear system on the variables it
keeps: Gaussian elimination with the equalities first (as in the paper's Appendix D), then
``pyomo.contrib.fme``'s Fourier-Motzkin transformation one variable at a time, with the
redundant rows pruned by LP (HiGHS through scipy) after each step so the system does not
explode.  A toolkit of its own: row arithmetic, pruning and reduced row-echelon form, used by no
other implied-constraint method.  The result is equivalent over the reals; integer extendability
needs its own argument (Lemma 1, Theorem 3 in :mod:`.two_level`).

Constraints are the triples of :mod:`.constraints`: ``(coefficients, op, rhs)``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from dpmodels.core.errors import DataValidationError

from .constraints import check_op

__all__ = ["Projection", "fme_project"]

_TOL = 1e-7


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
        check_op(op, f"constraints[{j}]")
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

    Parameters
    ----------
    constraints : sequence of tuple
        ``(coefficients, op, rhs)`` triples over n variables.
    keep : sequence of int
        The variables kept.
    names : sequence of str, optional
        Variable names for the result's printout.
    prune : bool, default True
        Drop redundant rows by LP after every step.

    Returns
    -------
    Projection
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
