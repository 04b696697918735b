"""``pgsr_dp``: PGSR Model 1 solved exactly by the M_H^dp dynamic program (spec 4.2).

A short adapter: the algorithm is :func:`dpmodels.pgsr.dp.solve_hierarchical`.
"""

from __future__ import annotations

from dpmodels.pgsr.dp import solve_hierarchical

from ._adapters import model1_feasible, model1_solution
from .base import StructureSolver

__all__ = ["PGSRDPSolver"]


class PGSRDPSolver(StructureSolver):
    """Solves Model 1 (``build_hierarchical_qip`` / ``build_hierarchical_milp``) exactly by DP."""

    formulations = frozenset({"pgsr.hierarchical_qip", "pgsr.hierarchical_milp"})
    algorithm = "M_H^dp: bottom-up cost tables with TableMerge, top-down split (Algorithm 1)"

    @classmethod
    def run(cls, payload, options, controls):
        return solve_hierarchical(payload.noisy, model1_feasible(payload))

    def to_solution(self, marker, result, options):
        return model1_solution(marker, result)
