"""``pgsr_dp_op``: Model 1 by M_dp^OP, the DP whose node costs come from optimization sub-models.

The algorithm is :func:`dpmodels.pgsr.dp_op.solve_hierarchical_op` (one MILP per DP table
entry, to measure what TableMerge saves); this module adapts it to Pyomo.
"""

from __future__ import annotations

from dpmodels.pgsr.dp_op import solve_hierarchical_op

from ._adapters import model1_solution
from .base import StructureSolution, StructureSolver

__all__ = ["PGSRDPOPSolver"]


class PGSRDPOPSolver(StructureSolver):
    """Solves Model 1 exactly by the DP with per-value Model 4 solves (M_dp^OP)."""

    formulations = frozenset({"pgsr.hierarchical_qip", "pgsr.hierarchical_milp"})
    algorithm = "M_dp^OP: bottom-up DP with one Model 4 MILP per (region, size, value)"
    solve_data = staticmethod(solve_hierarchical_op)

    def _solve_marker(self, marker, config) -> StructureSolution:
        return model1_solution(marker, solve_hierarchical_op)
