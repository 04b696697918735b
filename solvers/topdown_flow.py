"""``topdown_flow``: the TopDown L1 rounding as a min-cost flow (spec 3.7).

With only parent sums (or the root total), invariant totals and the group-quarters flow
constraints, the rounding ``H = floor(H*) + y`` is a min-cost flow: cells send their
rounding units (``parent - sum of floors``) to the children's type nodes over unit
arcs costing ``1 - 2 phi``; type nodes route their population to the leaf combinations
above the flow lower bounds; combinations with invariant populations absorb exactly that.
Integral capacities give an integral optimum, the same as the LP/MIP (spec 6.3 item 6).
Costs are scaled to integers (``K = 10^6``), so the optimum is exact up to ``n m / K``.
Models with edits (non-network rows) are refused.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from pyomo.contrib.solver.common.results import TerminationCondition

from dpmodels.core.errors import ModelStructureError

from .base import StructureSolution, StructureSolver

__all__ = ["rounding_network", "solve_flow_rounding", "FlowRoundingSolver"]

SCALE = 10**6


def rounding_network(problem, low: np.ndarray, cost: np.ndarray) -> tuple[nx.DiGraph, dict]:
    """The flow network of a rounding problem and the map (child, cell) -> y arc."""
    g = nx.DiGraph()
    supply: dict = {}
    y_arc: dict = {}

    def add_supply(node, amount):
        supply[node] = supply.get(node, 0) + int(amount)

    types = problem.types() if problem.cell_type is not None else np.zeros(problem.n, dtype=np.int64)
    if problem.parent is None:
        add_supply("s", problem.root_total - int(low.sum()))
        sources = {j: "s" for j in range(problem.n)}
    else:
        rhs = problem.parent - low.sum(axis=0)
        sources = {j: ("p", j) for j in range(problem.n) if rhs[j] > 0}
        for j, node in sources.items():
            add_supply(node, rhs[j])
    free_sink = False
    for t, child in enumerate(problem.children):
        if child.flows is not None:
            target = _add_flow_block(g, t, child.flows, low[t], types, add_supply)
            free_sink |= not child.flows.fixed
        else:
            target = {gg: ("u", t) for gg in np.unique(types)}
            if child.total is not None:
                add_supply(("u", t), -(child.total - int(low[t].sum())))
            else:
                g.add_edge(("u", t), "t", capacity=_BIG, weight=0)
                free_sink = True
        for j, src in sources.items():
            head = target.get(int(types[j]))
            if head is None:
                continue  # the child has no combination for this type: y must stay 0
            if problem.parent is None:
                tail = ("w", j)
                g.add_edge(src, tail, capacity=1, weight=int(round(SCALE * cost[t, j])))
                g.add_edge(tail, head, capacity=_BIG, weight=0)
                y_arc[t, j] = (src, tail)
            else:
                g.add_edge(src, head, capacity=1, weight=int(round(SCALE * cost[t, j])))
                y_arc[t, j] = (src, head)
    if free_sink:
        add_supply("t", -sum(supply.values()))
    for node, amount in supply.items():
        g.add_node(node)
        g.nodes[node]["demand"] = -amount
    return g, y_arc


_BIG = 10**12


def _add_flow_block(g, t, flows, low_t, types, add_supply) -> dict:
    """Type nodes ``b`` (with the floors' type mass as supply) and combination nodes ``v``."""
    heads = {}
    for gg in range(flows.n_types):
        add_supply(("b", t, gg), int(low_t[types == gg].sum()))
        if flows.combos[:, gg].any():
            heads[gg] = ("b", t, gg)
    for gg, c in flows.arcs():
        lower = int(flows.lower[c, gg])
        g.add_edge(("b", t, gg), ("v", t, c), capacity=_BIG, weight=0)
        add_supply(("b", t, gg), -lower)  # shift the lower bound out of the arc
        add_supply(("v", t, c), lower)
    for c in range(len(flows.combos)):
        if flows.population[c] >= 0:
            add_supply(("v", t, c), -int(flows.population[c]))
        else:
            g.add_edge(("v", t, c), "t", capacity=_BIG, weight=0)
    return heads


def solve_flow_rounding(problem, hstar: np.ndarray, objective: str = "l1") -> tuple[np.ndarray, float]:
    """Integer rounding ``(children x cells)`` and its objective ``sum cost * y``."""
    from dpmodels.topdown.models import split_floor

    if problem.edits:
        raise ModelStructureError("topdown_flow: edit constraints are not network rows; use highs (MIP)")
    low, phi = split_floor(np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n))
    cost = (1 - 2 * phi) if objective == "l1" else -phi
    g, y_arc = rounding_network(problem, low, cost)
    try:
        flow = nx.min_cost_flow(g)
    except nx.NetworkXUnfeasible as err:
        raise ModelStructureError(f"topdown_flow: the rounding network has no feasible flow ({err})") from err
    y = np.zeros_like(low)
    for (t, j), (a, b) in y_arc.items():
        y[t, j] = flow[a][b]
    return low + y, float((cost * y).sum())


class FlowRoundingSolver(StructureSolver):
    """Solves TopDown rounding models (``build_l1``) without edits as a min-cost flow."""

    formulations = frozenset({"topdown.l1"})
    integer_only = False  # the LP relaxation of a network polytope has the same integral optimum
    algorithm = "min-cost flow (networkx network simplex) on the rounding network"

    @staticmethod
    def solve_data(problem, hstar, objective: str = "l1"):
        return solve_flow_rounding(problem, hstar, objective)

    def _solve_marker(self, marker, config) -> StructureSolution:
        problem = marker.data["problem"]
        if marker.options.get("edits", True) and problem.edits:
            raise ModelStructureError("topdown_flow: edit constraints are not network rows; use highs (MIP)")
        if problem.edits:
            from dataclasses import replace

            problem = replace(problem, edits=())
        values, objective = solve_flow_rounding(problem, marker.data["hstar"], marker.options["objective"])
        low = marker.data["floor"]
        col = {int(x): j for j, x in enumerate(problem.cells)}
        y = np.array([values[t, col[x]] - low[t, col[x]] for t, x in marker.layout["y"]], dtype=np.float64)
        return StructureSolution(
            {"y": y}, objective, TerminationCondition.convergenceCriteriaSatisfied, bound=objective
        )
