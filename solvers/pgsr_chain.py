"""``pgsr_chain``: the corrected Model 3 solved exactly by the chain DP of M_c^ch (spec 4.6, C8).

The algorithm is :func:`dpmodels.pgsr.chain_dp.solve_chain` (table DP, or PAVA for wide
domains); this module adapts it to Pyomo and refuses the paper-literal C8 (erratum A3).
"""

from __future__ import annotations

from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError
from dpmodels.pgsr.chain_dp import solve_chain
from dpmodels.pgsr.data import chain_infeasibility

from .base import StructureSolution, StructureSolver

__all__ = ["PGSRChainSolver"]


class PGSRChainSolver(StructureSolver):
    """Solves the corrected Model 3 (``build_chain_qip``) exactly; refuses ``literal=True``."""

    formulations = frozenset({"pgsr.chain_qip"})
    algorithm = "M_c^ch: chain DP with prefix minima (Eqs. 8a-8b), PAVA for wide domains"
    solve_data = staticmethod(solve_chain)

    def _solve_marker(self, marker, config) -> StructureSolution:
        if marker.options.get("literal"):
            raise ModelStructureError(
                "pgsr_chain solves the corrected Model 3; this model was built with literal=True "
                "(the paper's printed C8, erratum A3), whose optimum can be invalid in n-space. "
                "Solve it with a general solver such as scip"
            )
        noisy, dom = marker.data["noisy"], marker.data["domains"]
        reason = chain_infeasibility(noisy, dom)
        if reason is not None:
            return StructureSolution({}, None, TerminationCondition.provenInfeasible, info={"reason": reason})
        sol = solve_chain(noisy, dom)
        return StructureSolution(
            {"c": sol.chain},
            sol.objective,
            TerminationCondition.convergenceCriteriaSatisfied,
            bound=sol.objective,
            info=sol.info,
        )
