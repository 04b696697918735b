"""``pgsr_dp``: PGSR Model 1 solved exactly by the M_H^dp dynamic program (spec 4.2).

A short adapter: by default the algorithm is :func:`dpmodels.pgsr.algorithms.window.solve_exact` (the
optimum certified from windows around the relaxation, whatever the domain width);
``method="tables"`` runs the paper's table DP :func:`dpmodels.pgsr.algorithms.hierarchical.solve_hierarchical`.
"""

from __future__ import annotations

from pyomo.common.config import In

from dpmodels.pgsr.algorithms.hierarchical import solve_hierarchical
from dpmodels.pgsr.algorithms.window import solve_exact

from ._adapters import model1_feasible, model1_solution
from .base import Option, StructureSolver

__all__ = ["PGSRDPSolver"]


class PGSRDPSolver(StructureSolver):
    """Solves Model 1 (``build_hierarchical_qip`` / ``build_hierarchical_milp``) exactly by DP."""

    formulations = frozenset({"pgsr.hierarchical_qip", "pgsr.hierarchical_milp"})
    algorithm = (
        "M_H^dp: the table DP (TableMerge, Algorithm 1) on windows around the exact relaxation, "
        "certified by M-convex exchange optimality; or the table DP on the whole domains"
    )
    options = (
        Option(
            "method",
            "windows",
            "windows: certified windows (cost independent of the domain width); tables: the paper's table DP",
            In(["windows", "tables"]),
        ),
    )

    @classmethod
    def run(cls, payload, options, controls):
        solver = solve_exact if options["method"] == "windows" else solve_hierarchical
        return solver(payload.noisy, model1_feasible(payload))

    def to_solution(self, marker, result, options):
        return model1_solution(marker, result)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "pgsr_dp": ("PGSRDPSolver", "PGSR Model 1 by the M_H^dp dynamic program (dpmodels)"),
}
