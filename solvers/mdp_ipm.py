"""``mdp_ipm``: the metric-DP perturbation LP by a structured interior-point method (spec 2.2).

``SolverFactory('mdp_ipm').solve(full_model, gap=1e-3)`` solves the model built by
:func:`~dpmodels.metricdp.models.build_full_lp` with the block-angular interior-point
decomposition of :mod:`dpmodels.metricdp.ipm`: one N x N block per output, coordinated by the
N row sums through their Schur complement.  The loaded mechanism is exactly eps-mDP (repaired,
and refused unless every neighbour ratio passes the exact audit); ``objective_bound`` is a
certified lower bound.
"""

from __future__ import annotations

from pyomo.common.config import ConfigValue, NonNegativeFloat, PositiveInt
from pyomo.contrib.solver.common.config import SolverConfig

from dpmodels.metricdp.ipm import structured_ipm

from ._adapters import exact_instance, mdp_solution
from .base import StructureSolution, StructureSolver

__all__ = ["IPMConfig", "MDPIPMSolver"]


class IPMConfig(SolverConfig):
    """SolverConfig plus the method's options."""

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(
            description=description, doc=doc, implicit=implicit, implicit_domain=implicit_domain, visibility=visibility
        )
        self.gap = self.declare(
            "gap", ConfigValue(default=1e-3, domain=NonNegativeFloat, description="certified relative gap to stop at")
        )
        self.max_iter = self.declare("max_iter", ConfigValue(default=100, domain=PositiveInt))
        self.presolve = self.declare(
            "presolve", ConfigValue(default=True, domain=bool, description="leave out rows implied by two-hop paths")
        )
        self.progress = self.declare("progress", ConfigValue(default=False, domain=bool))


class MDPIPMSolver(StructureSolver):
    """Structured IPM for ``build_full_lp`` models (exact ones: no slack, no z_min)."""

    CONFIG = IPMConfig()
    formulations = frozenset({"mdp.full_lp"})
    integer_only = False
    algorithm = "block-angular interior point by outputs, certified bounds (dpmodels.metricdp.ipm)"

    @staticmethod
    def solve_data(instance, **options):
        return structured_ipm(instance, **options)

    def _solve_marker(self, marker, config) -> StructureSolution:
        instance = exact_instance(marker, self.name)
        res = self.solve_data(
            instance,
            gap=config.gap,
            max_iter=config.max_iter,
            time_limit=config.time_limit,
            presolve=config.presolve,
            progress=config.progress,
        )
        return mdp_solution(instance, res, extra=res.info)
