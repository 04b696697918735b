"""``submodular_matroid_greedy``: the matroid LP of spec 6.1 solved by the greedy algorithm.

For a matroid, ``max <w, y>`` over the matroid polytope is attained at the greedy max-weight
independent set (positive weights only) and over the base polytope at the greedy max-weight base
(Edmonds), so the plugin is exact: it loads the 0/1 vector into ``y`` and reports the optimum
as both objective and bound.  Models are built by :func:`dpmodels.submodular.models.build_matroid_lp`.
"""

from __future__ import annotations

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from .base import StructureSolution, StructureSolver

__all__ = ["MatroidGreedySolver"]


class MatroidGreedySolver(StructureSolver):
    """Exact greedy for the LP (or 0/1 program) over a matroid or base polytope."""

    formulations = frozenset({"submodular.matroid_lp"})
    integer_only = False
    algorithm = "matroid greedy (Edmonds): exact over the matroid / base polytope (spec 6.1)"

    @staticmethod
    def solve_data(matroid, weights, base: bool = False) -> np.ndarray:
        """The optimal 0/1 vector of ``max <w, y>`` over ``P(M)`` (or ``B(M)`` with ``base=True``)."""
        pick = matroid.max_weight_base(weights) if base else matroid.max_weight_independent(weights)
        return pick.astype(float)

    def _solve_marker(self, marker, config) -> StructureSolution:
        w = marker.data["weights"]
        y = self.solve_data(marker.data["matroid"], w, marker.options["base"])
        value = float(w @ y)
        return StructureSolution(
            {"y": y}, value, TerminationCondition.convergenceCriteriaSatisfied, bound=value, exact=True
        )
