"""Cumulative PGSR plugins: ``isotonic_pava`` (Model A2) and ``pgsr_cdp`` (Algorithm 2).

``isotonic_pava`` solves Model A2 exactly: bounded least-squares isotonic regression per
region is ``clip(PAVA(noisy), 0, G)`` (spec 3.6), with weighted means for a weighted model.

``pgsr_cdp`` is M_c^dp (spec 4.5): per region the isotonic estimate, rounded half up and
de-cumulated, becomes the input of the M_H^dp dynamic program.  It returns a feasible
solution of Model 2 but not its optimum (the paper's Model 2 has no known polynomial
algorithm), so its results say ``feasible``, not ``optimal``, in both Pyomo APIs.  Its DP stage
takes one weight per region: a model weighted otherwise is refused, naming ``weights``.  The
algorithms are in :mod:`dpmodels.pgsr.algorithms.cumulative`; this module adapts them to Pyomo.
"""

from __future__ import annotations

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.pgsr.algorithms.cumulative import solve_cumulative_dp, solve_isotonic
from dpmodels.pgsr.data import cumulative

from .base import StructureSolution, StructureSolver, converged

__all__ = ["IsotonicPAVASolver", "CumulativeDPSolver"]


class IsotonicPAVASolver(StructureSolver):
    """Solves Model A2 (``build_isotonic_qp``) exactly by PAVA and clipping."""

    formulations = frozenset({"pgsr.isotonic_qp"})
    integer_only = False
    algorithm = "pool adjacent violators per region, clipped to [0, G]"

    @classmethod
    def run(cls, payload, options, controls):
        return solve_isotonic(payload.noisy)

    def to_solution(self, marker, result, options):
        objective = marker.data.noisy.squared_error(result)
        return converged(objective, {"c": result}, bound=objective)


class CumulativeDPSolver(StructureSolver):
    """Algorithm 2 on Model 2 (``build_cumulative_qip``): a feasible, not optimal, solution.

    As in the paper, the DP stage uses domains around the pre-processed counts (truncated
    with the public noise scale when one is recorded, else ``[0, G]``).  A released vector
    outside the model's own bounds is reported as an error, never loaded.
    """

    formulations = frozenset({"pgsr.cumulative_qip"})
    exact = False
    guarantee = "heuristic: a feasible point of Model 2 (Algorithm 2), no bound"
    algorithm = "M_c^dp (Algorithm 2): isotonic PAVA, rounding, then the M_H^dp DP; not exact for Model 2"

    @classmethod
    def run(cls, payload, options, controls):
        noisy = payload.noisy
        return solve_cumulative_dp(noisy, "truncated" if noisy.level_scales else "full")

    def to_solution(self, marker, result, options) -> StructureSolution:
        dom = marker.data.domains
        c = cumulative(result.counts)
        if np.any(c < dom.lo) or np.any(c > dom.hi):
            return StructureSolution(
                {},
                None,
                TerminationCondition.error,
                info={"reason": "Algorithm 2's solution leaves the model's domains"},
            )
        return converged(result.objective, {"c": c}, exact=False, info=result.info)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "isotonic_pava": ("IsotonicPAVASolver", "PGSR Model A2 by pool adjacent violators (dpmodels)"),
    "pgsr_cdp": ("CumulativeDPSolver", "PGSR Model 2 by Algorithm 2, a heuristic (dpmodels)"),
}
