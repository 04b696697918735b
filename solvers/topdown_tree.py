"""``topdown_tree_l2``: TopDown L2 models (``build_l2``) with identity measurements in closed form (spec 4.5).

The algorithm is :func:`dpmodels.topdown.tree_l2.solve_tree_l2` (per-cell weighted simplex
projection); this module adapts it to Pyomo.
"""

from __future__ import annotations

from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.topdown.tree_l2 import solve_tree_l2, tree_objective

from .base import StructureSolution, StructureSolver

__all__ = ["TreeL2Solver"]


class TreeL2Solver(StructureSolver):
    """Solves TopDown L2 models (``build_l2``) with identity measurements in closed form."""

    formulations = frozenset({"topdown.l2"})
    integer_only = False
    algorithm = "per-cell weighted simplex projection (water-filling)"
    solve_data = staticmethod(solve_tree_l2)

    def _solve_marker(self, marker, config) -> StructureSolution:
        problem = marker.data["problem"]
        h = solve_tree_l2(problem, marker.options["weights"], marker.options["edits"])
        objective = tree_objective(problem, h, marker.options["weights"])
        return StructureSolution(
            {"H": h}, objective, TerminationCondition.convergenceCriteriaSatisfied, bound=objective
        )
