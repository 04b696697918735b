"""``submodular_matroid_greedy``: the matroid LP of spec 6.1 solved by the greedy algorithm.

For a matroid, ``max <w, y>`` over the matroid polytope is attained at the greedy max-weight
independent set (positive weights only) and over the base polytope at the greedy max-weight base
(Edmonds), so the plugin is exact: it loads the 0/1 vector into ``y`` (and Martin's arc flows of
the forest for a graphic matroid) and reports the optimum as both objective and bound.  Models are
built by :func:`dpmodels.submodular.models.build_matroid_lp`.
"""

from __future__ import annotations

import numpy as np

from dpmodels.submodular.matroids import GraphicMatroid
from dpmodels.submodular.models import martin_values

from .base import StructureSolver, converged

__all__ = ["MatroidGreedySolver"]


class MatroidGreedySolver(StructureSolver):
    """Exact greedy for the LP (or 0/1 program) over a matroid or base polytope."""

    formulations = frozenset({"submodular.matroid_lp"})
    integer_only = False
    guarantee = "proven optimum: the greedy vertex is optimal over a matroid or base polytope (Edmonds)"
    algorithm = "matroid greedy (Edmonds): exact over the matroid / base polytope (spec 6.1)"

    @classmethod
    def run(cls, payload, options, controls) -> np.ndarray:
        """The optimal 0/1 vector of ``max <w, y>`` over ``P(M)`` (or ``B(M)`` with ``base=True``);
        ``payload`` is a :class:`~dpmodels.submodular.models.MatroidLPPayload`."""
        M, w = payload.matroid, payload.weights
        return (M.max_weight_base(w) if payload.base else M.max_weight_independent(w)).astype(float)

    def to_solution(self, marker, result, options):
        M = marker.data.matroid
        value = float(marker.data.weights @ result)
        values = {"y": result}
        if isinstance(M, GraphicMatroid):
            values["polytope.z"] = martin_values(M, result > 0.5)
        return converged(value, values, bound=value)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "submodular_matroid_greedy": ("MatroidGreedySolver", "matroid LP by the greedy algorithm (dpmodels)"),
}
