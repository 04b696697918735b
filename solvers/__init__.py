"""Pyomo solver plugins of dpmodels.

Importing this package registers every plugin with Pyomo's new solver factory
(``pyomo.contrib.solver.common.factory.SolverFactory``), which also registers the
legacy ``pyomo.environ.SolverFactory`` name.  ``import dpmodels`` imports it.
"""

from __future__ import annotations

from pyomo.contrib.solver.common.factory import SolverFactory

from .results import LegacyStructureWrapper

REGISTERED: dict[str, type] = {}


def register(name: str, cls: type, doc: str) -> type:
    """Register ``cls`` under ``name`` once, in the new and the legacy factory (the legacy
    class maps a converged but not proven-optimal run to the legacy ``feasible``)."""
    if name not in SolverFactory._cls:
        legacy = type(f"Legacy{cls.__name__}", (LegacyStructureWrapper, cls), {"__module__": cls.__module__})
        SolverFactory.register(name, doc=doc)(cls, legacy)
    REGISTERED[name] = SolverFactory._cls[name]
    return REGISTERED[name]


def _register_all() -> None:
    from .clarabel import ClarabelSolver
    from .facility_mechanism import FacilityMechanismSolver
    from .facility_tree_dp import FacilityTreeDPSolver
    from .mdp_benders import MDPBendersSolver
    from .mdp_ipm import MDPIPMSolver
    from .pgsr_chain import PGSRChainSolver
    from .pgsr_cumulative import CumulativeDPSolver, IsotonicPAVASolver
    from .pgsr_dp import PGSRDPSolver
    from .pgsr_dp_op import PGSRDPOPSolver
    from .pgsr_relax import PGSRRelaxSolver
    from .submodular_cg import ContinuousGreedySolver, PrivateContinuousGreedySolver
    from .submodular_greedy import SubmodularGreedySolver
    from .submodular_matroid import MatroidGreedySolver
    from .topdown_flow import FlowRoundingSolver
    from .topdown_tree import TreeL2Solver

    register("clarabel", ClarabelSolver, "Clarabel interior-point QP/LP solver (dpmodels)")
    register("pgsr_dp", PGSRDPSolver, "PGSR Model 1 by the M_H^dp dynamic program (dpmodels)")
    register("pgsr_dp_op", PGSRDPOPSolver, "PGSR Model 1 by the DP with per-value sub-models (dpmodels)")
    register("pgsr_relax", PGSRRelaxSolver, "PGSR Model 1-R by piecewise linear demand functions (dpmodels)")
    register("pgsr_chain", PGSRChainSolver, "PGSR Model 3 by the chain DP (dpmodels)")
    register("isotonic_pava", IsotonicPAVASolver, "PGSR Model A2 by pool adjacent violators (dpmodels)")
    register("pgsr_cdp", CumulativeDPSolver, "PGSR Model 2 by Algorithm 2, a heuristic (dpmodels)")
    register("topdown_flow", FlowRoundingSolver, "TopDown L1 rounding as a min-cost flow (dpmodels)")
    register("topdown_tree_l2", TreeL2Solver, "TopDown L2 by per-cell simplex projection (dpmodels)")
    register("facility_tree_dp", FacilityTreeDPSolver, "UFL on an HST (leaf sites) by the exact tree DP (dpmodels)")
    register("facility_mechanism", FacilityMechanismSolver, "eps-DP facility location, Algorithm 2 (dpmodels)")
    register("mdp_benders", MDPBendersSolver, "metric-DP perturbation LP by Benders decomposition (dpmodels)")
    register("mdp_ipm", MDPIPMSolver, "metric-DP perturbation LP by a block-angular interior point (dpmodels)")
    register("submodular_matroid_greedy", MatroidGreedySolver, "matroid LP by the greedy algorithm (dpmodels)")
    register("submodular_cg", ContinuousGreedySolver, "multilinear relaxation by continuous greedy (dpmodels)")
    register("submodular_private_cg", PrivateContinuousGreedySolver, "private continuous greedy, Alg. 1/2 (dpmodels)")
    register("submodular_greedy", SubmodularGreedySolver, "greedy / Mitrovic / k-greedy / Alg. 3-4 on MILPs (dpmodels)")


_register_all()
