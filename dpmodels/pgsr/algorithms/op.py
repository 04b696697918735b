"""M_dp^OP, the DP whose node costs come from optimization sub-models.

The same bottom-up/top-down DP as :mod:`dpmodels.pgsr.algorithms.hierarchical`, but every
``phi_s^r(v)`` is the optimum of Model 4 (:func:`~dpmodels.pgsr.models.build_node_subproblem`)
solved by a MILP solver, one solve per ``(r, s, v)`` (Theorem 2: ``O(|R| N |D|)`` sub-problems).
It exists to measure what TableMerge saves; use it on small instances only.  Weighted values
(``noisy.weights``) weigh each node's own cost ``w (v - noisy)^2``; Model 4 sees only the tables.
"""

from __future__ import annotations

import time

import numpy as np
from pyomo.contrib.solver.common.factory import SolverFactory

from ..data import NoisyGroupSizes
from ..domains import hierarchical_feasible_interval, resolve_domains
from ..models import build_node_subproblem
from .hierarchical import HierarchicalSolution

__all__ = ["solve_hierarchical_op"]


class _SubproblemSolver:
    """Model 4 for one node, built once and re-solved for every target value."""

    def __init__(self, child_lo, child_tables, subsolver: str):
        self.model = build_node_subproblem(child_lo, child_tables, int(child_lo[0]))
        self.solver = SolverFactory(subsolver)
        self.solves = 0

    def __call__(self, target: int) -> tuple[float, np.ndarray]:
        self.model.target.set_value(int(target))
        res = self.solver.solve(self.model, tee=False)
        self.solves += 1
        x = np.array([round(self.model.x[c].value) for c in self.model.children], dtype=np.int64)
        return float(res.incumbent_objective), x


def solve_hierarchical_op(
    noisy: NoisyGroupSizes, domains="full", delta=None, on_infeasible: str = "raise", subsolver: str = "highs"
) -> HierarchicalSolution:
    """Exact optimum of Model 1 with every DP table entry computed by a sub-model solve."""
    noisy.require_kind("counts", "pgsr_dp_op")
    tick = time.perf_counter()
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    h = noisy.hierarchy
    lo, hi = hierarchical_feasible_interval(h, dom)
    weights = noisy.cell_weights()
    tables: dict[tuple[int, int], np.ndarray] = {}
    splits: dict[tuple[int, int], dict[int, np.ndarray]] = {}
    solves = 0
    for s in range(noisy.N):
        for r in range(h.n_regions - 1, -1, -1):
            values = np.arange(lo[r, s], hi[r, s] + 1)
            own = weights[r, s] * (values - noisy.values[r, s]) ** 2
            if h.is_leaf[r]:
                tables[r, s] = own
                continue
            kids = h.children(r)
            sub = _SubproblemSolver([lo[c, s] for c in kids], [tables[c, s] for c in kids], subsolver)
            phi, splits[r, s] = np.empty(len(values)), {}
            for j, v in enumerate(values):
                phi[j], splits[r, s][int(v)] = sub(v)
            solves += sub.solves
            tables[r, s] = own + phi
    top = _SubproblemSolver([lo[0, s] for s in range(noisy.N)], [tables[0, s] for s in range(noisy.N)], subsolver)
    cost, root = top(noisy.G)
    solves += top.solves
    counts = np.zeros(lo.shape, dtype=np.int64)
    counts[0] = root
    for s in range(noisy.N):
        for r in h.internal:
            counts[h.children(r), s] = splits[r, s][int(counts[r, s])]
    objective = noisy.squared_error(counts)
    info = {
        "dp_objective": cost,
        "subproblems": solves,
        "domain_widenings": dom.widenings,
        "seconds": time.perf_counter() - tick,
    }
    return HierarchicalSolution(counts, objective, dom, info)
