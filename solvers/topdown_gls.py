"""``topdown_gls``: the tree GLS model (``build_gls``) in closed form, by two passes over the tree.

The algorithm is :func:`dpmodels.core.tree_gls.solve_tree_gls` (upward inverse-variance
combination, downward residual split, in a basis where every region's precision is diagonal);
this module adapts it to Pyomo.  It is exact (the QP's unique optimum, up to floating point), so
a run is ``optimal``.  The estimate's variances are in ``results.extra_info.gls``.
"""

from __future__ import annotations

from dpmodels.core.tree_gls import solve_tree_gls

from .base import StructureSolver, converged

__all__ = ["TreeGLSSolver"]


class TreeGLSSolver(StructureSolver):
    """Solves the tree GLS model (``build_gls``) in closed form."""

    formulations = frozenset({"topdown.gls"})
    integer_only = False
    guarantee = "optimum of the GLS QP (closed form, exact up to floating point)"
    algorithm = "two passes over the tree (upward inverse-variance combination, downward residual split)"

    @classmethod
    def run(cls, payload, options, controls):
        """The GLS estimate and its variances (:class:`~dpmodels.core.tree_gls.GLSResult`)."""
        return solve_tree_gls(payload.problem)

    def to_solution(self, marker, result, options):
        values = result.estimate[:, marker.data.problem.active]  # layout: regions x active cells
        return converged(result.objective, {"x": values}, bound=result.objective, info={"gls": result})


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "topdown_gls": ("TreeGLSSolver", "tree GLS / BLUE of hierarchical counts in closed form (dpmodels)"),
}
