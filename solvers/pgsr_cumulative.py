"""Cumulative PGSR plugins: ``isotonic_pava`` (Model A2) and ``pgsr_cdp`` (Algorithm 2).

``isotonic_pava`` solves Model A2 exactly: bounded least-squares isotonic regression per
region is ``clip(PAVA(noisy), 0, G)`` (spec 3.6).

``pgsr_cdp`` is M_c^dp (spec 4.5): per region the isotonic estimate, rounded half up and
de-cumulated, becomes the input of the M_H^dp dynamic program.  It returns a feasible
solution of Model 2 but not its optimum (the paper's Model 2 has no known polynomial
algorithm), so its results say ``feasible``, not ``optimal``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.pgsr.data import Domains, NoisyGroupSizes, cumulative, decumulate

from . import _pgsr_kernels as kernels
from .base import StructureSolution, StructureSolver
from .pgsr_dp import solve_hierarchical

__all__ = ["solve_isotonic", "CumulativeSolution", "solve_cumulative_dp", "IsotonicPAVASolver", "CumulativeDPSolver"]


def solve_isotonic(noisy: NoisyGroupSizes) -> np.ndarray:
    """Model A2 for every region: the closest non-decreasing vector in ``[0, G]``."""
    noisy.require_kind("cumulative", "isotonic_pava")
    return kernels.isotonic_rows(np.ascontiguousarray(noisy.values), 0.0, float(noisy.G))


@dataclass
class CumulativeSolution:
    """Released counts and the Algorithm 2 intermediate estimates."""

    counts: np.ndarray
    isotonic: np.ndarray
    preprocessed: np.ndarray
    objective: float
    domains: Domains
    info: dict = field(default_factory=dict)


def solve_cumulative_dp(
    noisy: NoisyGroupSizes, domains="truncated", delta=None, on_infeasible: str = "widen"
) -> CumulativeSolution:
    """Algorithm 2: isotonic step, round half up, (-), then the M_H^dp DP on the result.

    The DP's domains are built around the pre-processed counts with the cumulative noise
    scale (spec 4.5: the smaller noise gives smaller domains).  ``objective`` is Model 2's
    objective at the released solution.
    """
    tick = time.perf_counter()
    iso = solve_isotonic(noisy)
    pre = decumulate(np.floor(iso + 0.5))
    dp = solve_hierarchical(noisy.with_values(pre, kind="counts"), domains, delta, on_infeasible)
    objective = float(((cumulative(dp.counts) - noisy.values) ** 2).sum())
    info = dict(dp.info, dp_objective=dp.objective, seconds=time.perf_counter() - tick)
    return CumulativeSolution(dp.counts, iso, pre, objective, dp.domains, info)


class IsotonicPAVASolver(StructureSolver):
    """Solves Model A2 (``build_isotonic_qp``) exactly by PAVA and clipping."""

    formulations = frozenset({"pgsr.isotonic_qp"})
    integer_only = False
    algorithm = "pool adjacent violators per region, clipped to [0, G]"
    solve_data = staticmethod(solve_isotonic)

    def _solve_marker(self, marker, config) -> StructureSolution:
        noisy = marker.data["noisy"]
        c = solve_isotonic(noisy)
        objective = float(((c - noisy.values) ** 2).sum())
        return StructureSolution(
            {"c": c}, objective, TerminationCondition.convergenceCriteriaSatisfied, bound=objective
        )


class CumulativeDPSolver(StructureSolver):
    """Algorithm 2 on Model 2 (``build_cumulative_qip``): a feasible, not optimal, solution.

    As in the paper, the DP stage uses domains around the pre-processed counts (truncated
    with the public noise scale when one is recorded, else ``[0, G]``).  A released vector
    outside the model's own bounds is reported as an error, never loaded.
    """

    formulations = frozenset({"pgsr.cumulative_qip"})
    algorithm = "M_c^dp (Algorithm 2): isotonic PAVA, rounding, then the M_H^dp DP; not exact for Model 2"

    def _solve_marker(self, marker, config) -> StructureSolution:
        noisy, dom = marker.data["noisy"], marker.data["domains"]
        sol = solve_cumulative_dp(noisy, "truncated" if noisy.level_scales else "full")
        c = cumulative(sol.counts)
        if np.any(c < dom.lo) or np.any(c > dom.hi):
            return StructureSolution(
                {},
                None,
                TerminationCondition.error,
                info={"reason": "Algorithm 2's solution leaves the model's domains"},
            )
        return StructureSolution(
            {"c": c}, sol.objective, TerminationCondition.convergenceCriteriaSatisfied, exact=False, info=sol.info
        )
