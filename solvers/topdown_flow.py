"""``topdown_flow``: TopDown L1 rounding models (``build_l1``) solved as a min-cost flow (spec 3.7).

The algorithm is :func:`dpmodels.topdown.flow.solve_flow_rounding` (networkx network simplex
on the rounding network); this module adapts it to Pyomo.  Models with edit rows are refused
(edits are not network rows); a rounding network without a feasible flow proves the model
infeasible.  The integral flow optimum is the optimum of the MILP and of its LP relaxation
(a network polytope), so relaxed models are accepted too.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpmodels.core.errors import ModelStructureError
from dpmodels.topdown.flow import SCALE, round_by_flow

from .base import StructureSolver, converged

__all__ = ["FlowRoundingSolver"]


class FlowRoundingSolver(StructureSolver):
    """Solves TopDown rounding models (``build_l1``) without edits as a min-cost flow."""

    formulations = frozenset({"topdown.l1"})
    integer_only = False  # the LP relaxation of a network polytope has the same integral optimum
    guarantee = (
        f"optimum of the rounding (MILP = LP); costs scaled to integers by {SCALE:.0e}, exact up to m n / {SCALE:.0e}"
    )
    algorithm = "min-cost flow (networkx network simplex) on the rounding network"

    def check(self, marker, options) -> None:
        if marker.data.edits and marker.data.problem.edits:
            raise ModelStructureError("topdown_flow: edit constraints are not network rows; use highs (MIP)")

    @classmethod
    def run(cls, payload, options, controls):
        """The :class:`~dpmodels.topdown.flow.FlowRounding`: rounded histograms (children x active
        cells), objective ``sum cost * y`` and the group-quarters flows that route them."""
        problem = payload.problem if payload.edits else replace(payload.problem, edits=())
        return round_by_flow(problem, payload.hstar, payload.objective)

    def to_solution(self, marker, result, options):
        problem = marker.data.problem
        low = marker.data.floor
        col = {int(x): j for j, x in enumerate(problem.cells)}
        values = {"y": [result.values[t, col[x]] - low[t, col[x]] for t, x in marker.layout["y"]]}
        if "GQ" in marker.layout:  # the group-quarters variables: type totals, arc flows, combination populations
            types = problem.types()
            flow = {
                (t, g, c): float(f)
                for t, arcs in result.arc_flows.items()
                for (g, c), f in zip(problem.children[t].flows.arcs(), arcs, strict=True)
            }
            combo = {}
            for (t, _, c), f in flow.items():
                combo[t, c] = combo.get((t, c), 0.0) + f
            values["GQ"] = [result.values[t, types == g].sum() for t, g in marker.layout["GQ"]]
            values["F"] = [flow[k] for k in marker.layout["F"]]
            values["CB"] = [combo.get(k, 0.0) for k in marker.layout["CB"]]
        arrays = {name: np.asarray(v, dtype=np.float64) for name, v in values.items()}
        return converged(result.objective, arrays, bound=result.objective)


#: The solvers this module registers (read without importing it: see :mod:`dpmodels.solvers.registry`).
PLUGINS = {
    "topdown_flow": ("FlowRoundingSolver", "TopDown L1 rounding as a min-cost flow (dpmodels)"),
}
