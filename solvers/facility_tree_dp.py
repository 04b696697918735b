"""``facility_tree_dp``: the exact leaf-only UFL optimum on an HST by dynamic programming (spec 5.3).

Solves :func:`~dpmodels.facility.models.build_tree_model` models with ``sites="leaves"`` (and
``build_ufl_mip`` models of an HST instance with leaf sites) in ``O(sum_u |C_u| L)`` time, no MIP
solver needed; the open set and each client's nearest open leaf are loaded into ``y`` and ``x``.
"""

from __future__ import annotations

import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError
from dpmodels.facility.data import HSTInstance
from dpmodels.facility.hst import TreeDPResult, nearest_in, tree_dp

from .base import StructureSolution, StructureSolver

__all__ = ["FacilityTreeDPSolver"]


class FacilityTreeDPSolver(StructureSolver):
    """Exact tree DP for UFL on λ-HST metrics with facilities at the leaves."""

    formulations = frozenset({"facility.tree", "facility.ufl"})
    integer_only = True
    algorithm = "exact leaf-only HST dynamic program H_u(j) / E_u(j) (spec 5.3)"

    @staticmethod
    def solve_data(instance: HSTInstance) -> TreeDPResult:
        return tree_dp(instance)

    def _solve_marker(self, marker, config) -> StructureSolution:
        inst = marker.data["instance"]
        if not isinstance(inst, HSTInstance) or marker.options.get("sites") != "leaves":
            raise ModelStructureError(
                "facility_tree_dp solves UFL on an HST with facilities at the leaves; this model has "
                f"sites={marker.options.get('sites')!r}; solve it with highs or scip"
            )
        if marker.options.get("forced_open"):
            raise ModelStructureError("facility_tree_dp does not honour forced_open sites; use highs or scip")
        res = self.solve_data(inst)
        I, J = marker.data["I"], marker.data["J"]
        y = np.zeros(I.size)
        y[res.locations] = 1.0
        x = np.zeros((I.size, J.size))
        if res.site_nodes.size:
            ident, _ = nearest_in(inst.tree, res.site_nodes)
            x[inst.tree.location_of[ident[inst.tree.leaf_node[J]]], np.arange(J.size)] = 1.0
        values = {"y": y, "x": x}
        return StructureSolution(
            values,
            res.objective,
            TerminationCondition.convergenceCriteriaSatisfied,
            bound=res.objective,
            info={"open_locations": res.locations.tolist()},
        )
