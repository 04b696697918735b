"""A convex LP/QP Pyomo model compiled in bulk to conic standard form (for interior-point backends).

Why: solving relaxations at scale needs a conic backend (Clarabel), and writing the model
one constraint at a time through Pyomo's generic interfaces is too slow.  What: any convex
LP/QP model (continuous variables, linear constraints, linear or convex quadratic objective,
min or max) becomes::

    min 1/2 x'Px + q'x   s.t.  Ax + s = b,  s in K = Zero^m0 x Nonnegative^m1

Constraints go through Pyomo's ``LinearStandardFormCompiler`` (``mixed_form=True``), the
objective through Pyomo's ``QuadraticRepnVisitor``; variable bounds become rows built with
numpy.  Maximization is compiled as minimization of the negated objective.  What a convex
conic backend cannot solve (integer variables, a non-convex objective, several objectives) is
refused with :class:`~dpmodels.core.errors.ModelStructureError` naming the component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from pyomo.common.errors import InvalidConstraintError
from pyomo.core.base.objective import Objective, ObjectiveData
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
from pyomo.repn.quadratic import QuadraticRepnVisitor
from pyomo.repn.util import FileDeterminism, FileDeterminism_to_SortComponents, OrderedVarRecorder
from scipy.sparse.linalg import splu

from .errors import ModelStructureError

__all__ = ["ConicProblem", "compile_model", "active_objective"]


@dataclass
class ConicProblem:
    """Clarabel's data for one model, plus the maps back to the Pyomo components.

    Rows are the compiled constraint rows followed by the bound rows, then permuted so
    that the Zero-cone rows come first (``order[k]`` is the pre-permutation row of row k).
    ``row_sign`` is +1 when the row's ``b`` is the model's right-hand side and -1 when it
    is its negation (``>=`` sides); it is indexed by pre-permutation row.
    """

    P: sp.csc_array
    q: np.ndarray
    A: sp.csc_array
    b: np.ndarray
    n_zero: int
    order: np.ndarray
    row_sign: np.ndarray
    row_cons: list
    bound_cols: np.ndarray
    columns: list
    objective: ObjectiveData | None
    sense: float
    offset: float


def active_objective(model) -> ObjectiveData | None:
    """The single active objective of ``model`` (None if it has none).

    Raises ModelStructureError naming them when more than one is active.
    """
    objs = list(model.component_data_objects(Objective, active=True, descend_into=True))
    if len(objs) > 1:
        names = ", ".join(o.name for o in objs[:5])
        raise ModelStructureError(
            f"model {model.name!r} has {len(objs)} active objectives ({names}); "
            "clarabel needs exactly one: deactivate the others"
        )
    return objs[0] if objs else None


def compile_constraints(model, objective: ObjectiveData | None):
    """Linear standard form (mixed form) of the active constraints of ``model``.

    Uses Pyomo's ``LinearStandardFormCompiler``, which refuses nonlinear objectives, so
    the objective is deactivated for the duration of the call and restored afterwards.
    Nonlinear constraints are reported as ModelStructureError naming the constraint.
    """
    was_active = objective is not None and objective.active
    if was_active:
        objective.deactivate()
    try:
        return LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=None)
    except InvalidConstraintError as err:
        raise ModelStructureError(
            f"{err} clarabel accepts only linear constraints (quadratic or general "
            "nonlinear constraints are not supported)"
        ) from err
    finally:
        if was_active:
            objective.activate()


def walk_objective(objective: ObjectiveData | None):
    """The ``QuadraticRepn`` of the objective and the visitor's id -> var map.

    Fixed variables become constants (``OrderedVarRecorder`` only maps free variables).
    Raises ModelStructureError when the objective is not (at most) quadratic.
    """
    if objective is None:
        return None, {}
    sorter = FileDeterminism_to_SortComponents(FileDeterminism.ORDERED)
    visitor = QuadraticRepnVisitor({}, var_recorder=OrderedVarRecorder({}, {}, sorter))
    repn = visitor.walk_expression(objective.expr)
    if repn.nonlinear is not None:
        raise ModelStructureError(
            f"objective {objective.name!r} is neither linear nor quadratic "
            f"(nonlinear part: {repn.nonlinear}); clarabel solves LPs and convex QPs only"
        )
    return repn, visitor.var_map


def merge_columns(columns: list, repn, var_map: dict) -> tuple[list, dict]:
    """Constraint columns followed by the variables that appear only in the objective.

    The standard-form compiler drops columns that appear in no constraint; a variable
    used only by the objective (e.g. only in its quadratic part) must still be a column.
    """
    columns = list(columns)
    index = {id(v): k for k, v in enumerate(columns)}
    if repn is not None:
        used = list(repn.linear)
        used += [vid for pair in (repn.quadratic or {}) for vid in pair]
        for vid in dict.fromkeys(used):
            if vid not in index:
                index[vid] = len(columns)
                columns.append(var_map[vid])
    return columns, index


def check_continuous(columns: list) -> None:
    """Refuse integer or binary columns: Clarabel solves continuous problems only."""
    discrete = [v.name for v in columns if not v.is_continuous()]
    if discrete:
        shown = ", ".join(discrete[:5]) + (", ..." if len(discrete) > 5 else "")
        raise ModelStructureError(
            f"{len(discrete)} integer/binary variable(s) ({shown}); clarabel solves "
            "continuous problems only: relax the model first, e.g. with "
            "dpmodels.core.relax.relax_integer_vars(model) (Pyomo's core.relax_integer_vars "
            "transformation) or by building it with relax=True"
        )


def objective_arrays(repn, index: dict, n: int, sense: float):
    """Symmetric P, q and constant offset of ``sense * objective`` over ``n`` columns.

    The model objective is ``offset + sense * (1/2 x'Px + q'x)``.  A term ``c x_i x_j``
    contributes ``c`` to P_ij and P_ji (``2c`` to P_ii), so that 1/2 x'Px reproduces it.
    """
    if repn is None:
        return sp.csc_array((n, n)), np.zeros(n), 0.0
    q = np.zeros(n)
    lin_idx = np.fromiter((index[v] for v in repn.linear), np.int64, len(repn.linear))
    np.add.at(q, lin_idx, np.fromiter(repn.linear.values(), float, len(repn.linear)))
    quad = repn.quadratic or {}
    rows = np.fromiter((index[a] for a, _ in quad), np.int64, len(quad))
    cols = np.fromiter((index[b] for _, b in quad), np.int64, len(quad))
    coef = np.fromiter(quad.values(), float, len(quad))
    both = (np.concatenate([rows, cols]), np.concatenate([cols, rows]))
    P = sp.coo_array((np.concatenate([coef, coef]), both), shape=(n, n)).tocsc()
    P.sum_duplicates()
    return sense * P, sense * q, float(repn.constant)


def check_convex(P: sp.csc_array, columns: list, objective, tol: float) -> None:
    """Refuse a minimization Hessian ``P`` (symmetric) that is not positive semidefinite.

    What is checked, cheapest first: (1) every diagonal entry >= 0, (2) Gershgorin:
    a nonnegative diagonally dominant P is PSD (covers separable/diagonal objectives in
    O(nnz)); otherwise (3) a sparse LDL' of ``P + delta*I`` restricted to the columns
    in quadratic terms (SuperLU with diagonal pivots only, ``delta = tol * max|P_ij|``):
    by Sylvester's law of inertia ``P + delta*I`` is positive definite iff every pivot
    is positive, so this is exact up to ``delta``.
    """
    if P.nnz == 0:
        return
    scale = float(abs(P.data).max())
    delta = tol * scale
    diag = P.diagonal()
    bad = np.flatnonzero(diag < -delta)
    if bad.size:
        _raise_nonconvex(objective, columns[bad[0]], "a negative squared-term coefficient")
    offdiag = np.asarray(abs(P).sum(axis=1)).ravel() - np.abs(diag)
    if np.all(offdiag <= diag + delta):
        return
    used = np.flatnonzero(np.diff(P.indptr))
    sub = P[used][:, used] + sp.diags_array(np.full(used.size, delta), format="csc")
    pivots, perm_ok, perm_c = _ldl_pivots(sp.csc_array(sub))
    if not perm_ok or np.any(pivots <= 0):
        k = int(np.argmin(pivots[perm_c])) if perm_ok else 0
        _raise_nonconvex(objective, columns[used[k]], "an indefinite Hessian")


def _ldl_pivots(M: sp.csc_array):
    """Diagonal pivots of a symmetric LU of ``M`` (no row interchanges) and its ordering.

    Returns (pivots, symmetric, perm_c); ``symmetric`` is False when SuperLU had to
    interchange rows, which only happens at a zero pivot, i.e. M is not definite.
    """
    try:
        lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    except RuntimeError:  # exactly singular: M = P + delta*I is not definite
        return np.zeros(M.shape[0]), False, None
    return lu.U.diagonal(), bool(np.array_equal(lu.perm_r, lu.perm_c)), lu.perm_c


def _raise_nonconvex(objective, var, what: str):
    """Raise the ModelStructureError for a non-convex objective."""
    sense = "minimized" if objective.sense > 0 else "maximized"
    raise ModelStructureError(
        f"objective {objective.name!r} is not convex when {sense}: its quadratic part has "
        f"{what} (involving variable {var.name!r}); clarabel solves convex QPs only"
    )


def bound_rows(columns: list):
    """Rows ``-x_j + s = -lb_j`` and ``x_j + s = ub_j`` for the finite variable bounds.

    A column with ``lb == ub`` gets a single equality row ``x_j = lb`` instead, since a
    pair of opposite inequalities has no interior.  Returns (B, b, sign, is_eq, cols),
    one entry per row.
    """
    lbub = np.array([[np.nan if x is None else x for x in v.bounds] for v in columns], dtype=float).reshape(-1, 2)
    lb, ub = lbub[:, 0], lbub[:, 1]
    eq = np.isfinite(lb) & (lb == ub)
    has_lb = np.isfinite(lb) & ~eq
    has_ub = np.isfinite(ub) & ~eq
    cols = np.concatenate([np.flatnonzero(eq), np.flatnonzero(has_lb), np.flatnonzero(has_ub)])
    sign = np.concatenate([np.ones(eq.sum()), -np.ones(has_lb.sum()), np.ones(has_ub.sum())])
    rhs = np.concatenate([lb[eq], lb[has_lb], ub[has_ub]]) * sign
    B = sp.csc_array((sign, (np.arange(cols.size), cols)), shape=(cols.size, len(columns)))
    is_eq = np.zeros(cols.size, dtype=bool)
    is_eq[: eq.sum()] = True
    return B, rhs, sign, is_eq, cols


def constraint_rows(info, n: int):
    """Clarabel rows of the compiled constraints, widened to ``n`` columns.

    In mixed form a row is ``a x (<=, ==, >=) rhs`` by its multiplier (+1, 0, -1); a
    ``>=`` row is negated so every inequality reads ``A x + s = b, s >= 0``.
    Returns (A, b, sign, is_eq, cons).
    """
    mult = np.fromiter((r.bound_type for r in info.rows), float, len(info.rows))
    sign = np.where(mult < 0, -1.0, 1.0)
    A = info.A
    A = sp.csc_array(
        (A.data, A.indices, np.r_[A.indptr, np.full(n - A.shape[1], A.indptr[-1])]),
        shape=(len(info.rows), n),
    )
    A = sp.csc_array(sp.diags_array(sign) @ A)
    rhs = sign * np.asarray(info.rhs, dtype=float).reshape(-1)
    return A, rhs, sign, mult == 0, [r.constraint for r in info.rows]


def compile_model(model, convexity_tol: float = 1e-8) -> ConicProblem:
    """Compile ``model`` to a ConicProblem, refusing what Clarabel cannot solve.

    Raises ModelStructureError (nonlinear constraint or objective, several objectives,
    integer variables, non-convex objective) and lets Pyomo's
    InfeasibleConstraintException through for constraints that are infeasible constants.
    """
    objective = active_objective(model)
    info = compile_constraints(model, objective)
    repn, var_map = walk_objective(objective)
    columns, index = merge_columns(info.columns, repn, var_map)
    check_continuous(columns)
    sense = 1.0 if objective is None or objective.sense > 0 else -1.0
    P, q, offset = objective_arrays(repn, index, len(columns), sense)
    check_convex(P, columns, objective, convexity_tol)
    Ac, bc, sc, eqc, cons = constraint_rows(info, len(columns))
    B, bb, sb, eqb, bcols = bound_rows(columns)
    is_eq = np.concatenate([eqc, eqb])
    order = np.argsort(~is_eq, kind="stable")
    A = sp.csc_array(sp.vstack([Ac, B], format="csr")[order])
    P = sp.csc_array(sp.triu(P, format="csc"))
    A.sort_indices()  # Clarabel expects canonical CSC
    P.sort_indices()
    return ConicProblem(
        P=P,
        q=q,
        A=A,
        b=np.concatenate([bc, bb])[order],
        n_zero=int(is_eq.sum()),
        order=order,
        row_sign=np.concatenate([sc, sb]),
        row_cons=cons,
        bound_cols=bcols,
        columns=columns,
        objective=objective,
        sense=sense,
        offset=offset,
    )
