"""The TopDown L1 rounding as a min-cost flow (spec 3.7).

With only parent sums (or the root total), invariant totals and the group-quarters flow
constraints, the rounding ``H = floor(H*) + y`` is a min-cost flow: cells send their
rounding units (``parent - sum of floors``) to the children's type nodes over unit arcs
costing ``1 - 2 phi``; type nodes route their population to the leaf combinations above
the flow lower bounds; combinations with invariant populations absorb exactly that.
Integral capacities give an integral optimum, the same as the LP/MIP (spec 6.3 item 6).
Costs are scaled to integers (``K = 10^6``), so the optimum is exact up to ``n m / K``.

The network is built with numpy and solved with networkx's network simplex.  OR-tools'
C++ min-cost flow was evaluated and rejected: its wheel bundles its own HiGHS, whose
symbols clash with highspy's in one process (whichever is imported second fails to load).
``dpmodels bench topdown`` measures where this rounder beats HiGHS's LP and where not.
Models with edits (non-network rows) are refused; a network without a feasible flow raises
``InfeasibleDomainError`` (the rounding model has no solution).  The ``topdown_flow`` plugin
(:mod:`dpmodels.solvers.topdown_flow`) runs it on a Pyomo model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError, InfeasibleDomainError, ModelStructureError

from .node_data import split_floor

__all__ = ["SCALE", "FlowNetwork", "FlowRounding", "rounding_network", "round_by_flow", "solve_flow_rounding"]

SCALE = 10**6
_BIG = 10**12


@dataclass
class FlowNetwork:
    """Arcs as arrays (tail, head, capacity, integer cost), node supplies, and which arcs are ``y``."""

    n_nodes: int
    tails: np.ndarray
    heads: np.ndarray
    caps: np.ndarray
    costs: np.ndarray
    supplies: np.ndarray
    y_arcs: np.ndarray  # arc positions of the rounding variables
    y_child: np.ndarray
    y_cell: np.ndarray
    gq_arcs: dict[int, np.ndarray] = field(default_factory=dict)  # child -> type-to-combination arcs


@dataclass
class FlowRounding:
    """A rounding found by the network: integer histograms (children x active cells), its
    objective ``sum cost * y``, and per child with a group-quarters network the flows
    ``F[t, g, c]`` (lower bounds included) in ``flows.arcs()`` order."""

    values: np.ndarray
    objective: float
    arc_flows: dict[int, np.ndarray]


class _Builder:
    def __init__(self):
        self.n = 0
        self.arcs: list[tuple[np.ndarray, ...]] = []
        self.supply: dict[int, int] = {}

    def nodes(self, k: int) -> np.ndarray:
        ids = np.arange(self.n, self.n + k)
        self.n += k
        return ids

    def add(self, tails, heads, caps, costs) -> np.ndarray:
        tails, heads = np.atleast_1d(tails).astype(np.int64), np.atleast_1d(heads).astype(np.int64)
        start = sum(len(a[0]) for a in self.arcs)
        self.arcs.append(
            (
                tails,
                heads,
                np.broadcast_to(caps, tails.shape).astype(np.int64),
                np.broadcast_to(costs, tails.shape).astype(np.int64),
            )
        )
        return np.arange(start, start + len(tails))

    def give(self, node: int, amount: int) -> None:
        self.supply[int(node)] = self.supply.get(int(node), 0) + int(amount)


def rounding_network(problem, low: np.ndarray, cost: np.ndarray) -> FlowNetwork:
    """The flow network of a rounding problem (spec 3.7, root or child form)."""
    b = _Builder()
    types = problem.types() if problem.cell_type is not None else np.zeros(problem.n, dtype=np.int64)
    sink = b.nodes(1)[0]
    if problem.parent is None:
        source = b.nodes(1)[0]
        b.give(source, problem.root_total - int(low.sum()))
        movable = np.arange(problem.n)
        tails = b.nodes(problem.n)  # one node per cell keeps the source's arcs distinct
    else:
        rhs = problem.parent - low.sum(axis=0)
        movable = np.flatnonzero(rhs > 0)
        tails = b.nodes(problem.n)
        for j in movable:
            b.give(tails[j], rhs[j])
    free_sink = False
    y_arcs, y_child, y_cell = [], [], []
    gq_arcs = {}
    for t, child in enumerate(problem.children):
        if child.flows is not None:
            total = child.total if problem.parent is not None and not child.flows.fixed else None
            heads, gq_arcs[t] = _flow_block(b, child.flows, low[t], types, sink, total)
            free_sink |= not child.flows.fixed and total is None
        else:
            u = b.nodes(1)[0]
            heads = np.full(int(types.max()) + 1, u)
            if child.total is not None and problem.parent is not None:
                b.give(u, -(child.total - int(low[t].sum())))
            else:
                b.add(u, sink, _BIG, 0)
                free_sink = True
        cells = movable[heads[types[movable]] >= 0]
        scaled = np.round(SCALE * cost[t, cells]).astype(np.int64)
        if problem.parent is None:
            y_arcs.append(b.add(np.full(len(cells), source), tails[cells], 1, scaled))
            b.add(tails[cells], heads[types[cells]], _BIG, 0)
        else:
            y_arcs.append(b.add(tails[cells], heads[types[cells]], 1, scaled))
        y_child.append(np.full(len(cells), t))
        y_cell.append(cells)
    if free_sink:
        b.give(sink, -sum(b.supply.values()))
    supplies = np.zeros(b.n, dtype=np.int64)
    for node, amount in b.supply.items():
        supplies[node] = amount
    tails_a, heads_a, caps_a, costs_a = (np.concatenate(parts) for parts in zip(*b.arcs, strict=True))
    return FlowNetwork(
        b.n,
        tails_a,
        heads_a,
        caps_a,
        costs_a,
        supplies,
        np.concatenate(y_arcs),
        np.concatenate(y_child),
        np.concatenate(y_cell),
        gq_arcs,
    )


def _flow_block(
    b: _Builder, flows, low_t: np.ndarray, types: np.ndarray, sink: int, total: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Type nodes (supplied with the floors' type mass) and combination nodes of one child.

    Combinations without an invariant population drain into the common sink, or, when the
    child has an invariant ``total`` that the fixed populations do not imply, into a node of
    the child that absorbs exactly ``total`` minus the fixed populations.
    Returns, per type, its node or -1 when no combination admits the type (its cells stay 0),
    and the positions of the type-to-combination arcs in ``flows.arcs()`` order.
    """
    type_nodes = b.nodes(flows.n_types)
    combo_nodes = b.nodes(len(flows.combos))
    if total is not None:
        drain = b.nodes(1)[0]
        b.give(drain, -(int(total) - int(flows.population[flows.population >= 0].sum())))
        sink = drain
    for g in range(flows.n_types):
        b.give(type_nodes[g], int(low_t[types == g].sum()))
    arcs = []
    for g, c in flows.arcs():
        lower = int(flows.lower[c, g])
        arcs.append(b.add(type_nodes[g], combo_nodes[c], _BIG, 0)[0])
        b.give(type_nodes[g], -lower)  # shift the lower bound out of the arc
        b.give(combo_nodes[c], lower)
    for c in range(len(flows.combos)):
        if flows.population[c] >= 0:
            b.give(combo_nodes[c], -int(flows.population[c]))
        else:
            b.add(combo_nodes[c], sink, _BIG, 0)
    return np.where(flows.combos.any(axis=0), type_nodes, -1), np.asarray(arcs, dtype=np.int64)


def _solve_networkx(net: FlowNetwork) -> np.ndarray:
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_nodes_from((i, {"demand": -int(s)}) for i, s in enumerate(net.supplies))
    keys = [
        g.add_edge(int(t), int(h), capacity=int(c), weight=int(w))
        for t, h, c, w in zip(net.tails, net.heads, net.caps, net.costs, strict=True)
    ]
    try:
        _, flow = nx.network_simplex(g)
    except nx.NetworkXUnfeasible as err:  # the network is the rounding model: no flow, no rounding
        raise InfeasibleDomainError(
            "rounding", f"the rounding network has no feasible flow, so the rounding model is infeasible ({err})"
        ) from err
    return np.array([flow[int(t)][int(h)][k] for t, h, k in zip(net.tails, net.heads, keys, strict=True)])


def round_by_flow(problem, hstar: np.ndarray, objective: str = "l1") -> FlowRounding:
    """The optimal rounding of ``hstar`` with the group-quarters flows that route it."""
    if problem.edits:
        raise ModelStructureError("topdown_flow: edit constraints are not network rows; use highs (MIP)")
    if getattr(problem, "rows", ()):
        raise ModelStructureError("topdown_flow: production rows (child_rows.py) are not network rows; use highs")
    low, phi = split_floor(np.asarray(hstar, dtype=np.float64).reshape(problem.m, problem.n))
    if objective not in ("l1", "paper"):
        raise DataValidationError("objective", f"the flow rounder takes 'l1' or 'paper', got {objective!r}")
    cost = (1 - 2 * phi) if objective == "l1" else -phi
    net = rounding_network(problem, low, cost)
    flows = _solve_networkx(net)
    y = np.zeros_like(low)
    y[net.y_child, net.y_cell] = flows[net.y_arcs]
    arc_flows = {}
    for t, arcs in net.gq_arcs.items():
        fl = problem.children[t].flows
        lower = np.array([fl.lower[c, g] for g, c in fl.arcs()], dtype=np.int64)
        arc_flows[t] = flows[arcs] + lower
    return FlowRounding(low + y, float((cost * y).sum()), arc_flows)


def solve_flow_rounding(problem, hstar: np.ndarray, objective: str = "l1"):
    """Integer rounding ``(children x cells)`` and its objective ``sum cost * y``.

    Parameters
    ----------
    problem : NodeProblem
        The node solve's data (noisy answers and public knowledge only).
    hstar : numpy.ndarray
        The L2 solution (children x active cells) to round.
    objective : {"l1", "paper"}, default "l1"
        The rounding objective.

    Returns
    -------
    tuple
        ``(values, objective)``.
    """
    result = round_by_flow(problem, hstar, objective)
    return result.values, result.objective
