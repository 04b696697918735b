"""``facility_tree_dp``: the exact leaf-only UFL optimum on an HST by dynamic programming (spec 5.3).

Solves :func:`~dpmodels.facility.models.build_tree_model` models with ``sites="leaves"`` (and
``build_ufl_mip`` models of an HST instance with leaf sites) in ``O(sum_u |C_u| L)`` time, no MIP
solver needed; the open set and each client's nearest open leaf are loaded into ``y`` and ``x``.
Models with all-node sites, a general metric or ``forced_open`` sites are refused.  The
algorithm is :func:`dpmodels.facility.hst_optimum.tree_dp`; this module adapts it to Pyomo.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import ModelStructureError
from dpmodels.facility.data import HSTInstance
from dpmodels.facility.hst import nearest_in
from dpmodels.facility.hst_optimum import tree_dp

from .base import StructureSolver, converged

__all__ = ["FacilityTreeDPSolver"]


def _refuse(payload) -> None:
    """The DP solves UFL on an HST with leaf sites and no forced-open sites, nothing else."""
    if not isinstance(payload.instance, HSTInstance) or payload.sites != "leaves":
        raise ModelStructureError(
            "facility_tree_dp solves UFL on an HST with facilities at the leaves; this model has "
            f"sites={payload.sites!r}; solve it with highs or scip"
        )
    if payload.forced_open:
        raise ModelStructureError("facility_tree_dp does not honour forced_open sites; use highs or scip")


class FacilityTreeDPSolver(StructureSolver):
    """Exact tree DP for UFL on λ-HST metrics with facilities at the leaves."""

    formulations = frozenset({"facility.tree", "facility.ufl"})
    integer_only = True
    guarantee = "proven optimum of the leaf-site UFL on an HST (exact dynamic program)"
    algorithm = "exact leaf-only HST dynamic program H_u(j) / E_u(j) (spec 5.3)"

    def check(self, marker, options) -> None:
        _refuse(marker.data)

    @classmethod
    def run(cls, payload, options, controls):
        """The :class:`~dpmodels.facility.hst_optimum.TreeDPResult` (optimum and open locations)."""
        _refuse(payload)
        return tree_dp(payload.instance)

    def to_solution(self, marker, result, options):
        data = marker.data
        tree = data.instance.tree
        y = np.zeros(data.I.size)
        y[result.locations] = 1.0
        x = np.zeros((data.I.size, data.J.size))
        if result.site_nodes.size:
            ident, _ = nearest_in(tree, result.site_nodes)
            x[tree.location_of[ident[tree.leaf_node[data.J]]], np.arange(data.J.size)] = 1.0
        info = {"open_locations": result.locations.tolist()}
        return converged(result.objective, {"y": y, "x": x}, bound=result.objective, info=info)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "facility_tree_dp": ("FacilityTreeDPSolver", "UFL on an HST (leaf sites) by the exact tree DP (dpmodels)"),
}
