"""``topdown_active_set_l2``: any TopDown L2 model (``build_l2``) by the exact active-set method.

The algorithm is :func:`dpmodels.topdown.active_set.solve_l2_active_set` (primal-dual active set on
the model's matrix form, after the exact presolve of :mod:`dpmodels.topdown.forced_zeros`); this
module adapts it to Pyomo.  A run is ``optimal`` only when the KKT residuals of its fixed point are
within ``tol``; a cycle, a singular system or ``max_iter`` ends it with no solution loaded (the
driver then runs Clarabel; through Pyomo the caller chooses).
"""

from __future__ import annotations

import numpy as np
from pyomo.common.config import PositiveFloat, PositiveInt
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.topdown.active_set import solve_l2_active_set
from dpmodels.topdown.compiled import l2_system
from dpmodels.topdown.forced_zeros import expanded, without_forced_zeros

from .base import Option, StructureSolution, StructureSolver, converged

__all__ = ["ActiveSetL2Solver"]

#: How a run that found no certified fixed point ends, in Pyomo's terms.
_UNSOLVED = {
    "max_iter": TerminationCondition.iterationLimit,
    "time_limit": TerminationCondition.maxTimeLimit,
    "cycle": TerminationCondition.error,
    "singular": TerminationCondition.error,
    "kkt residual": TerminationCondition.error,
}


class ActiveSetL2Solver(StructureSolver):
    """Solves TopDown L2 models (``build_l2``) by the primal-dual active-set method, KKT-certified."""

    formulations = frozenset({"topdown.l2"})
    integer_only = False
    honours_time_limit = True  # checked before each active set
    guarantee = "optimum of the L2 QP, certified by its KKT residuals (primal 1e-7 absolute, dual tol)"
    algorithm = "primal-dual active set, curvature eliminated in closed form (dense LU per iteration)"
    options = (
        Option("max_iter", 30, "active sets tried before giving up", PositiveInt),
        Option("tol", 1e-9, "bound on the dual KKT residuals of a certified optimum (relative)", PositiveFloat),
    )

    @classmethod
    def run(cls, payload, options, controls):
        """The certified result, with the presolve's kept columns and the full system's layout."""
        system = l2_system(payload.problem, payload.weights, payload.edits)
        reduced, keep = without_forced_zeros(system)
        outcome = solve_l2_active_set(reduced, **cls.keywords(options), time_limit=controls.time_limit)
        return outcome, keep, system

    def to_solution(self, marker, result, options):
        outcome, keep, system = result
        info = {"status": outcome.status, "iterations": outcome.iterations, "kkt_residual": outcome.residual}
        if outcome.x is None:
            return StructureSolution({}, None, _UNSOLVED[outcome.status], info=info)
        x = expanded(outcome.x, keep, system.n)
        values = model_values(marker.data.problem, x, system.n_hist, marker.layout)
        return converged(outcome.objective, values, bound=outcome.objective, info=info)


def model_values(problem, x, n_hist: int, layout: dict) -> dict:
    """Every variable of the ``build_l2`` model from the matrix form's solution ``x``: the histograms,
    the group-quarters type totals, arc flows (the columns after the histograms, in the layout's
    order) and combination populations, and the residual of every measured query row."""
    hist = x[:n_hist].reshape(problem.m, problem.n)
    values = {"H": hist}
    if "GQ" in layout:
        types = problem.types()
        flows = x[n_hist : n_hist + len(layout["F"])]
        combo: dict = {}
        for (t, _, c), f in zip(layout["F"], flows, strict=True):
            combo[t, c] = combo.get((t, c), 0.0) + f
        values["GQ"] = np.array([hist[t, types == g].sum() for t, g in layout["GQ"]])
        values["F"] = flows
        values["CB"] = np.array([combo.get(k, 0.0) for k in layout["CB"]])
    residuals: dict = {}  # (child, query) -> that query's residual rows, each computed once
    for t, q, _ in layout["resid"]:
        if (t, q) not in residuals:
            query = problem.children[t].queries[q]
            residuals[t, q] = query.matrix @ hist[t] - query.values
    values["resid"] = np.array([residuals[t, q][r] for t, q, r in layout["resid"]])
    return values


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "topdown_active_set_l2": ("ActiveSetL2Solver", "TopDown L2 by a KKT-certified active-set method (dpmodels)"),
}
