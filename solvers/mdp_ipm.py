"""``mdp_ipm``: the metric-DP perturbation LP by a structured interior-point method (spec 2.2).

``SolverFactory('mdp_ipm').solve(full_model, gap=1e-3)`` solves the model built by
:func:`~dpmodels.metricdp.models.build_full_lp` with the block-angular interior-point
decomposition of :mod:`dpmodels.metricdp.ipm`: one sparse N x N block per output (factored in
a band after a bandwidth-reducing ordering), coordinated by the N row sums through their Schur
complement.  The loaded mechanism is exactly eps-mDP (repaired,
and refused unless every neighbour ratio passes the exact audit); ``objective_bound`` is a
certified lower bound, and the duals (``results.solution_loader.get_duals()``, or a ``dual``
import suffix) are the dual feasible point of the full LP that certifies it.
"""

from __future__ import annotations

from pyomo.common.config import In, NonNegativeFloat, PositiveInt

from dpmodels.metricdp.ipm import structured_ipm

from ._adapters import exact_instance, mdp_solution
from .base import Option, StructureSolver

__all__ = ["MDPIPMSolver", "full_lp_duals"]


class MDPIPMSolver(StructureSolver):
    """Structured IPM for ``build_full_lp`` models (exact ones: no slack, no z_min)."""

    formulations = frozenset({"mdp.full_lp"})
    integer_only = False
    exact = False
    guarantee = (
        "certified relative gap (default 1e-3): an exactly eps-mDP incumbent and a weak-duality bound, "
        "with the dual feasible point that proves it"
    )
    options = (
        Option("gap", 1e-3, "certified relative gap to stop at", NonNegativeFloat),
        Option("max_iter", 100, "iteration limit", PositiveInt),
        Option("presolve", True, "leave out rows implied by two-hop paths", bool),
        Option(
            "system",
            "auto",
            "Newton system: band (sparse blocks in a band, K N^2 b per iteration), dense (LAPACK, K N^3) or auto",
            In(["auto", "band", "dense"]),
        ),
    )
    honours_time_limit = True
    iteration_log = True
    duals = True
    algorithm = "block-angular interior point by outputs, certified bounds (dpmodels.metricdp.ipm)"

    def check(self, marker, options) -> None:
        exact_instance(marker, self.name)

    @classmethod
    def run(cls, payload, options, controls):
        return structured_ipm(
            payload.instance, **cls.keywords(options), time_limit=controls.time_limit, progress=controls.tee
        )

    def to_solution(self, marker, result, options):
        instance = marker.data.instance
        return mdp_solution(instance, result, extra=result.info, duals=full_lp_duals(instance, result))


def full_lp_duals(instance, result) -> dict | None:
    """The IPM's certificate as duals of the ``build_full_lp`` model in Pyomo's sign convention
    (a minimisation: ``<=`` rows have duals <= 0): ``mdp[i, j, k] = -u[k, pair]`` and
    ``unit[i] = min_k (C_hat + G'u)[i, k]``; their dual objective is the reported bound."""
    if result.multipliers is None:
        return None
    g = instance.graph
    u = result.multipliers
    mdp = {
        (i, j, k): -float(u[k, p])
        for p, (i, j) in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True))
        for k in range(instance.K)
    }
    unit = {i: float(y) for i, y in enumerate(result.row_duals.tolist())}
    return {"mdp": mdp, "unit": unit}


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "mdp_ipm": ("MDPIPMSolver", "metric-DP perturbation LP by a block-angular interior point (dpmodels)"),
}
