"""``topdown_flow``: TopDown L1 rounding models (``build_l1``) solved as a min-cost flow (spec 3.7).

The algorithm is :func:`dpmodels.topdown.flow.solve_flow_rounding` (networkx network simplex
on the rounding network); this module adapts it to Pyomo.  Models with edits are refused.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError
from dpmodels.topdown.flow import solve_flow_rounding

from .base import StructureSolution, StructureSolver

__all__ = ["FlowRoundingSolver"]


class FlowRoundingSolver(StructureSolver):
    """Solves TopDown rounding models (``build_l1``) without edits as a min-cost flow."""

    formulations = frozenset({"topdown.l1"})
    integer_only = False  # the LP relaxation of a network polytope has the same integral optimum
    algorithm = "min-cost flow (networkx network simplex) on the rounding network"

    @staticmethod
    def solve_data(problem, hstar, objective: str = "l1"):
        return solve_flow_rounding(problem, hstar, objective)

    def _solve_marker(self, marker, config) -> StructureSolution:
        problem = marker.data["problem"]
        if marker.options.get("edits", True) and problem.edits:
            raise ModelStructureError("topdown_flow: edit constraints are not network rows; use highs (MIP)")
        values, objective = solve_flow_rounding(
            replace(problem, edits=()), marker.data["hstar"], marker.options["objective"]
        )
        low = marker.data["floor"]
        col = {int(x): j for j, x in enumerate(problem.cells)}
        y = np.array([values[t, col[x]] - low[t, col[x]] for t, x in marker.layout["y"]], dtype=np.float64)
        return StructureSolution(
            {"y": y}, objective, TerminationCondition.convergenceCriteriaSatisfied, bound=objective
        )
