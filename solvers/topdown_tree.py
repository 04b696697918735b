"""``topdown_tree_l2``: TopDown L2 models (``build_l2``) with identity measurements in closed form (spec 4.5).

The algorithm is :func:`dpmodels.topdown.tree_l2.solve_tree_l2` (per-cell weighted simplex
projection); this module adapts it to Pyomo.  Models with flow constraints, invariant child
totals, edit rows or non-identity measurements are refused.
"""

from __future__ import annotations

from dpmodels.topdown.tree_l2 import check_tree_l2, solve_tree_l2, tree_objective

from .base import StructureSolver, converged

__all__ = ["TreeL2Solver"]


class TreeL2Solver(StructureSolver):
    """Solves TopDown L2 models (``build_l2``) with identity measurements in closed form."""

    formulations = frozenset({"topdown.l2"})
    integer_only = False
    guarantee = "optimum of the L2 QP (closed form, exact up to floating point)"
    algorithm = "per-cell weighted simplex projection (water-filling)"

    def check(self, marker, options) -> None:
        check_tree_l2(marker.data.problem, marker.data.edits)

    @classmethod
    def run(cls, payload, options, controls):
        """The L2 solution (children x active cells)."""
        return solve_tree_l2(payload.problem, payload.weights, payload.edits)

    def to_solution(self, marker, result, options):
        objective = tree_objective(marker.data.problem, result, marker.data.weights)
        return converged(objective, {"H": result}, bound=objective)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "topdown_tree_l2": ("TreeL2Solver", "TopDown L2 by per-cell simplex projection (dpmodels)"),
}
