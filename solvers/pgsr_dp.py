"""``pgsr_dp``: Model 1 solved exactly by the M_H^dp dynamic program with TableMerge (spec 4.2-4.3).

The algorithm is :func:`dpmodels.pgsr.dp.solve_hierarchical`; this module adapts it to Pyomo.
"""

from __future__ import annotations

from dpmodels.pgsr.dp import solve_hierarchical

from ._adapters import model1_solution
from .base import StructureSolution, StructureSolver

__all__ = ["PGSRDPSolver"]


class PGSRDPSolver(StructureSolver):
    """Solves Model 1 (``build_hierarchical_qip`` / ``build_hierarchical_milp``) exactly by DP."""

    formulations = frozenset({"pgsr.hierarchical_qip", "pgsr.hierarchical_milp"})
    algorithm = "M_H^dp: bottom-up cost tables with TableMerge, top-down split (Algorithm 1)"
    solve_data = staticmethod(solve_hierarchical)

    def _solve_marker(self, marker, config) -> StructureSolution:
        return model1_solution(marker, solve_hierarchical)
