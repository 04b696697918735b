"""``pgsr_dp_op``: PGSR Model 1 solved exactly by M_dp^OP, the DP with per-value Model 4 solves.

A short adapter: the algorithm is :func:`dpmodels.pgsr.algorithms.op.solve_hierarchical_op`.
"""

from __future__ import annotations

from dpmodels.pgsr.algorithms.op import solve_hierarchical_op

from ._adapters import model1_feasible, model1_solution
from .base import StructureSolver

__all__ = ["PGSRDPOPSolver"]


class PGSRDPOPSolver(StructureSolver):
    """Solves Model 1 exactly by the DP with per-value Model 4 solves (M_dp^OP)."""

    formulations = frozenset({"pgsr.hierarchical_qip", "pgsr.hierarchical_milp"})
    algorithm = "M_dp^OP: bottom-up DP with one Model 4 MILP per (region, size, value)"

    @classmethod
    def run(cls, payload, options, controls):
        return solve_hierarchical_op(payload.noisy, model1_feasible(payload))

    def to_solution(self, marker, result, options):
        return model1_solution(marker, result)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "pgsr_dp_op": ("PGSRDPOPSolver", "PGSR Model 1 by the DP with per-value sub-models (dpmodels)"),
}
