"""The hard side of TopDown's implied constraints: the exact decision of Problem 2 and Theorem 1.

Deciding whether a parent histogram extends to integer leaf histograms satisfying given
constraints is NP-complete in general (Theorems 1-2), so these are oracles for tests on tiny
instances, not tools for production-size nodes:

* :func:`extension_milp` -- the exact (exponential) decision of Problem 2 (spec 3.9(c)): a
  zero-objective MILP over the extended table, solved by HiGHS through Pyomo.
* :func:`sat_reduction` -- Theorem 1's 3-SAT construction (spec 3.10), which shows that
  real-valued implied constraints are not enough; decide it with :func:`extension_milp`.

Constraints are the triples of :mod:`.constraints`: ``(coefficients, op, rhs)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError

from .constraints import check_op, int_array, satisfies

__all__ = ["ExtensionResult", "extension_milp", "SatReduction", "sat_reduction"]


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

    Parameters
    ----------
    parent : array_like
        The parent histogram (any shape).
    leaf_constraints : sequence of sequence of tuple, optional
        Per leaf, triples on its table.
    n_leaves : int, optional
        The number of leaves, without per-leaf constraints.
    joint_constraints : sequence of tuple, optional
        Triples on the whole extended table.
    relax : bool, default False
        Solve the LP relaxation.
    time_limit : float, optional
        Seconds.

    Returns
    -------
    ExtensionResult
    """
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import TerminationCondition

    base = np.asarray(parent, dtype=float)
    if not relax:
        base = int_array(base, "parent", nonneg=False).astype(float)
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
            check_op(op, f"leaf_constraints[{leaf}][{j}]")
            a = np.zeros((size, m))
            a[:, leaf] = _coef_vector(coef, size, shape, f"leaf_constraints[{leaf}][{j}]")
            rows.append((a.ravel(), op, float(rhs)))
    for j, (coef, op, rhs) in enumerate(joint_constraints):
        check_op(op, f"joint_constraints[{j}]")
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

    Parameters
    ----------
    clauses : sequence of sequence of int
        DIMACS clauses.
    n_vars : int
        The number of variables.

    Returns
    -------
    SatReduction
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
