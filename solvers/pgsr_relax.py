"""``pgsr_relax``: PGSR Model 1-R (the continuous relaxation of Model 1) by demand functions.

A short adapter: the algorithm is :func:`dpmodels.pgsr.algorithms.relaxation.relaxed_values` (every node's
demand as a piecewise linear function of the price, bottom-up; the root price that splits ``G``;
prices top-down).  It needs no iterations and no tolerance: its answer is the optimum up to
floating-point rounding, about 0.6 s on the census shape (3.2 million variables), where a QP
solver first needs a Pyomo model of that size.
"""

from __future__ import annotations

from dpmodels.pgsr.algorithms.relaxation import relaxed_values

from ._adapters import model1_feasible
from .base import StructureSolver, converged

__all__ = ["PGSRRelaxSolver"]


class PGSRRelaxSolver(StructureSolver):
    """Solves Model 1-R (``build_hierarchical_qip(relax=True)``); refuses the integer Model 1."""

    formulations = frozenset({"pgsr.hierarchical_qip"})
    integer_only = False
    relaxed_only = True
    guarantee = "the optimum of Model 1-R up to floating-point rounding (a finite parametric algorithm)"
    algorithm = "Model 1-R: piecewise linear demand of every node bottom-up, the root price, prices top-down"

    @classmethod
    def run(cls, payload, options, controls):
        return relaxed_values(payload.noisy, model1_feasible(payload))

    def to_solution(self, marker, result, options):
        objective = marker.data.noisy.squared_error(result)
        return converged(objective, {"n": result})


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "pgsr_relax": ("PGSRRelaxSolver", "PGSR Model 1-R by piecewise linear demand functions (dpmodels)"),
}
