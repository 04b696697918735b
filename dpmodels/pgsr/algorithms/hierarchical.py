"""The M_H^dp dynamic program with polynomial TableMerge (spec 4.2-4.3).

Bottom-up, every node of the DP tree gets a convex cost table ``tau(v) = w (v - noisy)^2 +
phi(v)`` (``w`` the cell's weight, 1 when the values are unweighted), where ``phi`` is the
min-plus convolution of its children's tables, computed by merging their slopes greedily
(Algorithm 1; Lemma 5 makes the greedy exact).  Top-down,
G is split over the root's sizes and every chosen value over the children.  The result
is the exact optimum of Model 1 on the model's domains: integral, consistent, faithful and
non-negative by construction.

Leaf tables are closed-form and never stored; internal tables are stored only on the
node's reachable interval, so memory is ``O(internal nodes x domain width)``.
The ``pgsr_dp`` plugin (:mod:`dpmodels.solvers.pgsr_dp`) runs it on a Pyomo model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..data import NoisyGroupSizes
from ..domains import Domains, hierarchical_feasible_interval, resolve_domains
from . import kernels

__all__ = ["CostTables", "HierarchicalSolution", "solve_hierarchical", "hierarchical_tables", "table_merge"]


def table_merge(child_lo, child_tables) -> tuple[int, np.ndarray, np.ndarray]:
    """Algorithm 1 (TableMerge) on explicit convex child tables, as cleaned in spec 4.3.

    ``child_tables[c][j] = tau_c(child_lo[c] + j)``.  Returns ``(lo, phi, order)``: the
    min-plus convolution ``phi(lo + k)`` for every reachable sum, and the child of each unit
    step above ``lo`` in merged (slope, child, value) order, from which any split is read.
    This is the readable reference of the merge the compiled kernel does with a heap.
    """
    lows = [int(v) for v in child_lo]
    tabs = [np.asarray(t, dtype=np.float64) for t in child_tables]
    slopes = np.concatenate([np.diff(t) for t in tabs]) if tabs else np.empty(0)
    child = np.concatenate([np.full(len(t) - 1, c) for c, t in enumerate(tabs)]).astype(np.int64)
    step = np.concatenate([np.arange(1, len(t)) for t in tabs]).astype(np.int64)
    order = np.lexsort((step, child, slopes))  # slope, then child order, then value
    phi = np.concatenate([[sum(t[0] for t in tabs)], sum(t[0] for t in tabs) + np.cumsum(slopes[order])])
    return sum(lows), phi, child[order]


@dataclass
class HierarchicalSolution:
    """Output of the DP on plain data: released counts in (regions, sizes) layout."""

    counts: np.ndarray
    objective: float
    domains: Domains
    info: dict = field(default_factory=dict)


@dataclass
class CostTables:
    """Bottom-up DP state: reachable intervals, internal tables and every node's argmin."""

    lo: np.ndarray
    hi: np.ndarray
    offset: np.ndarray
    tables: np.ndarray
    argmin: np.ndarray

    def kernel_state(self, noisy: NoisyGroupSizes) -> tuple:
        """The tuple the compiled kernels take (see :mod:`dpmodels.pgsr.algorithms.kernels`)."""
        h = noisy.hierarchy
        return (h.is_leaf, noisy.values, self.lo, self.hi, self.offset, self.tables, self.argmin, noisy.cell_weights())

    def table(self, r: int, s: int, is_leaf: bool, noisy: np.ndarray, weight: float = 1.0) -> tuple[int, np.ndarray]:
        """``(lo, values)`` of the table of node (r, s); leaf tables (``weight`` times the squared
        distance) are evaluated on demand."""
        lo, hi = int(self.lo[r, s]), int(self.hi[r, s])
        if is_leaf:
            return lo, weight * (np.arange(lo, hi + 1) - noisy[r, s]) ** 2
        start = int(self.offset[r, s])
        return lo, self.tables[start : start + hi - lo + 1].copy()


def hierarchical_tables(noisy: NoisyGroupSizes, domains: Domains) -> CostTables:
    """Run the bottom-up pass; the domains must already be feasible."""
    h = noisy.hierarchy
    lo, hi = hierarchical_feasible_interval(h, domains)
    width = np.where(h.is_leaf[:, None], 0, hi - lo + 1)
    offset = (np.cumsum(width.ravel()) - width.ravel()).reshape(width.shape)
    tables = np.empty(int(width.sum()), dtype=np.float64)
    state = CostTables(lo, hi, offset, tables, np.empty(lo.shape, dtype=np.int64))
    if not kernels.hierarchical_tables(h.child_start, h.child_count, state.kernel_state(noisy)):
        raise RuntimeError("pgsr_dp: a merge could not reach a feasible interval (internal error)")
    return state


def solve_hierarchical(
    noisy: NoisyGroupSizes, domains="full", delta=None, on_infeasible: str = "raise"
) -> HierarchicalSolution:
    """Exact optimum of Model 1 on plain data, without building a Pyomo model.

    The paper's M_H^dp: cost tables on every internal node's domain, merged by TableMerge.
    A widened truncation is recorded in ``info``.  Weighted values (``noisy.weights``, any weight
    per cell) weigh every cell's cost; the tables stay convex, so the merge stays exact.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy counts (``kind="counts"``) and the public hierarchy and ``G``.
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains`.
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation that admits no solution).

    Returns
    -------
    HierarchicalSolution
        The integral counts, the objective and ``info``.
    """
    noisy.require_kind("counts", "pgsr_dp")
    tick = time.perf_counter()
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    checked = time.perf_counter()
    state = hierarchical_tables(noisy, dom)
    up = time.perf_counter()
    counts = np.empty(state.lo.shape, dtype=np.int64)
    h = noisy.hierarchy
    cost = kernels.hierarchical_split(noisy.G, h.child_start, h.child_count, state.kernel_state(noisy), counts)
    if cost < 0:
        raise RuntimeError("pgsr_dp: top-down split failed on feasible domains (internal error)")
    done = time.perf_counter()
    objective = noisy.squared_error(counts)
    info = {
        "dp_objective": float(cost),
        "table_entries": int(state.tables.size),
        "domain_widenings": dom.widenings,
        "delta": dom.delta,
        "seconds_check": checked - tick,
        "seconds_bottom_up": up - checked,
        "seconds_top_down": done - up,
    }
    return HierarchicalSolution(counts, objective, dom, info)
