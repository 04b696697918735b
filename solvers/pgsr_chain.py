"""``pgsr_chain``: the corrected PGSR Model 3 solved exactly by the chain DP M_c^ch (spec 4.6).

A short adapter: the algorithm is :func:`dpmodels.pgsr.algorithms.chain.solve_chain`.
"""

from __future__ import annotations

from dpmodels.core.errors import InfeasibleDomainError, ModelStructureError
from dpmodels.pgsr.algorithms.chain import solve_chain
from dpmodels.pgsr.domains import chain_infeasibility

from .base import StructureSolver, converged

__all__ = ["PGSRChainSolver"]


class PGSRChainSolver(StructureSolver):
    """Solves the corrected Model 3 (``build_chain_qip``) exactly; refuses ``literal=True``."""

    formulations = frozenset({"pgsr.chain_qip"})
    algorithm = "M_c^ch: chain DP with prefix minima (Eqs. 8a-8b), PAVA for wide domains"

    def check(self, marker, options) -> None:
        if marker.options.get("literal"):
            raise ModelStructureError(
                "pgsr_chain solves the corrected Model 3; this model was built with literal=True "
                "(the paper's printed C8, erratum A3), whose optimum can be invalid in n-space. "
                "Solve it with a general solver such as scip"
            )

    @classmethod
    def run(cls, payload, options, controls):
        reason = chain_infeasibility(payload.noisy, payload.domains)
        if reason is not None:
            raise InfeasibleDomainError("domains", reason)
        return solve_chain(payload.noisy, payload.domains)

    def to_solution(self, marker, result, options):
        return converged(result.objective, {"c": result.chain}, bound=result.objective, info=result.info)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "pgsr_chain": ("PGSRChainSolver", "PGSR Model 3 by the chain DP (dpmodels)"),
}
