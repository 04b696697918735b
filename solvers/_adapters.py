"""Adapter helpers shared by several plugins (a private module: it registers no solver).

Plugins import these instead of importing each other: ``model1_feasible`` and ``model1_solution`` for the PGSR
Model 1 plugins (``pgsr_dp``, ``pgsr_dp_op``), ``exact_instance`` and ``mdp_solution`` for
the metric-DP plugins (``mdp_benders``, ``mdp_ipm``).
"""

from __future__ import annotations

from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import InfeasibleDomainError, ModelStructureError
from dpmodels.metricdp.privacy_audit import require_exact_mdp
from dpmodels.pgsr.domains import hierarchical_infeasibility

from .base import StructureSolution, converged

__all__ = ["model1_feasible", "model1_solution", "exact_instance", "mdp_solution", "MDP_TERMINATION"]


def model1_feasible(payload):
    """The payload's domains, after proving them feasible for Model 1 (else ``InfeasibleDomainError``)."""
    reason = hierarchical_infeasibility(payload.noisy, payload.domains)
    if reason is not None:
        raise InfeasibleDomainError("domains", reason)
    return payload.domains


def model1_solution(marker, sol) -> StructureSolution:
    """A Model 1 DP solution in the layout of the marker's model (QIP, or chord MILP with ``t``)."""
    values = {"n": sol.counts}
    if marker.formulation == "pgsr.hierarchical_milp":
        noisy = marker.data.noisy
        squared = (sol.counts - noisy.values) ** 2
        values["t"] = squared if noisy.weights is None else noisy.weights * squared  # the chords' epigraph
    return converged(sol.objective, values, bound=sol.objective, info=sol.info)


#: Statuses of both mDP algorithms as Pyomo terminations.  A gap-reached stop is converged but not
#: a proven optimum: both plugins declare ``exact = False``, and :func:`mdp_solution` marks the run
#: exact only when Benders proved optimality (``"optimal"``), so it is reported ``feasible``.
MDP_TERMINATION = {
    "optimal": TerminationCondition.convergenceCriteriaSatisfied,
    "gap reached": TerminationCondition.convergenceCriteriaSatisfied,
    "max_iter": TerminationCondition.iterationLimit,
    "time limit": TerminationCondition.maxTimeLimit,
    "stalled": TerminationCondition.error,
}


def exact_instance(marker, solver: str):
    """The instance of an exact ``build_full_lp`` model; the reference code's relaxations are refused."""
    opts = marker.options
    if opts.get("mdp_slack", 0) != 0 or opts.get("z_min", 0) != 0:
        raise ModelStructureError(
            f"{solver} solves the exact perturbation LP; this model was built with the reference code's "
            f"relaxations (mdp_slack={opts.get('mdp_slack')}, z_min={opts.get('z_min')}); solve it with highs"
        )
    return marker.data.instance


def mdp_solution(instance, res, extra: dict, duals=None) -> StructureSolution:
    """A Benders or IPM result (certified incumbent, bound, history) as a StructureSolution.

    The incumbent is loaded only if it passes the exact ratio audit (both algorithms repair it;
    this refuses, rather than loads, a matrix that is not eps-mDP).  The run is exact only when
    the algorithm proved optimality (status ``"optimal"``); a certified gap is not a proof.
    ``duals``: constraint name -> {index: multiplier} of the full LP, if the algorithm has them."""
    values = {"z": require_exact_mdp(instance, res.z, "incumbent z")} if res.z is not None else {}
    info = dict(extra, history=res.history, iterations=res.iterations, status=res.status)
    objective = res.upper_bound if res.z is not None else None
    return StructureSolution(
        values,
        objective,
        MDP_TERMINATION[res.status],
        bound=res.lower_bound,
        exact=res.status == "optimal",
        info=info,
        duals=duals,
    )
