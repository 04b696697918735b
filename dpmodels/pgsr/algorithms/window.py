"""Exact Model 1 on any domain, full ``[0, G]`` included, at a cost that does not grow with it.

Issue 14.  The table DP (:mod:`dpmodels.pgsr.algorithms.hierarchical`) stores every internal node's cost on its whole
domain, so its work grows with the domain width (``delta`` ~ 1/eps^2 truncated, ``G`` full).
This solver needs tables only where the optimum can be:

1. **Centre.**  Solve the continuous relaxation exactly by demand functions
   (:mod:`dpmodels.pgsr.algorithms.relaxation`; about two breakpoints per leaf, no domain tables).
2. **Window.**  Run the table DP on windows ``[floor(x_R) - w, ceil(x_R) + w]`` of every node,
   intersected with its domain (``w = 2`` at first): tables of width ``2 w + 2``.
3. **Certify.**  Model 1 is a *laminar convex* function of the leaf cells (every cost is a convex
   function of the sum over a set of cells, and the sets - one per DP node - are laminar), with
   the total fixed to ``G``: an M-convex function (laminar convex functions are M-natural-convex;
   Murota, *Discrete Convex Analysis*, SIAM 2003, ch. 6).  By the M-optimality criterion (same
   chapter) a point is a global minimum iff no exchange ``x - e_i + e_j`` of one unit between two
   cells lowers the cost.  :func:`exchange_gain` finds the best exchange over all pairs in one
   pass up the tree on the *original* domains.  If it lowers nothing, the window's optimum is the
   exact optimum; otherwise the windows widen (x4) and the DP runs again, until certified or
   until the windows are the whole domains (then the table DP is exact by itself).

Nothing is claimed from the relaxation or the window: the exactness comes from step 3, in exact
integer arithmetic when the noisy values are integers (discrete noise) and unweighted, else up to a
tolerance recorded in the result.

Weighted values (``noisy.weights``, :mod:`dpmodels.pgsr.weights`) keep every argument: each cost is
``w (sum - noisy)^2``, still a convex function of a laminar sum, so the function is still M-convex and
the exchange criterion still certifies; the gains are then floating-point sums of weighted slopes,
compared with a tolerance scaled by the largest weight.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, prange

from dpmodels.core.errors import DataValidationError

from ..data import NoisyGroupSizes
from ..domains import Domains, hierarchical_infeasibility, resolve_domains
from . import kernels
from .hierarchical import HierarchicalSolution, hierarchical_tables
from .relaxation import relaxed_values

__all__ = ["solve_exact", "exchange_gain", "window_domains"]

FIRST_WINDOW = 2
WIDEN_FACTOR = 4


def solve_exact(
    noisy: NoisyGroupSizes,
    domains="full",
    delta=None,
    on_infeasible: str = "raise",
    window: int = FIRST_WINDOW,
    centre: np.ndarray | None = None,
) -> HierarchicalSolution:
    """Certified exact optimum of Model 1 on ``domains`` (``"full"`` by default: no truncation).

    Same contract as :func:`~dpmodels.pgsr.algorithms.hierarchical.solve_hierarchical`; ``info`` adds
    the windows tried, the certificate (best exchange gain, >= 0 proves optimality) and the step
    times.

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
    window : int
        The first windows' half-width around the centre (widened until the optimum is certified).
    centre : numpy.ndarray, optional
        (regions x sizes) values replacing the relaxed optimum as the windows' centre, e.g. a
        previous solution: a poor centre costs wider windows, never exactness.

    Returns
    -------
    HierarchicalSolution
        The integral counts, the objective and ``info``.
    """
    noisy.require_kind("counts", "pgsr_dp")
    ticks = {"start": time.perf_counter()}
    dom = resolve_domains(noisy, domains, delta, on_infeasible)
    ticks["check"] = time.perf_counter()
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
        raise DataValidationError("window", f"must be a non-negative integer, got {window!r}")
    if centre is None:
        centre = relaxed_values(noisy, dom)
    elif np.shape(centre) != noisy.values.shape or not np.isfinite(centre).all():
        raise DataValidationError("centre", f"needs finite values of shape {noisy.values.shape}")
    ticks["relaxation"] = time.perf_counter()
    tolerance = _tolerance(noisy)
    widths, entries = [], 0
    while True:
        win = window_domains(centre, dom, window)
        covers = bool(np.array_equal(win.lo, dom.lo) and np.array_equal(win.hi, dom.hi))
        widths.append(window)
        if covers or hierarchical_infeasibility(noisy, win) is None:  # rounding could empty a window
            counts, cost, size = _window_optimum(noisy, win)
            entries += size
            gain, _ = exchange_gain(noisy, dom, counts)
            if gain >= -tolerance or covers:
                break
        window = max(1, window * WIDEN_FACTOR)
    ticks["windows"] = time.perf_counter()
    objective = noisy.squared_error(counts)
    info = {
        "method": "relaxation-centred windows + exchange certificate",
        "dp_objective": float(cost),
        "table_entries": entries,
        "windows": widths,
        "certificate gain": float(gain),
        "certificate": "exchange optimality (M-convex)" if gain >= -tolerance else "window covers the domain",
        "certificate tolerance": tolerance,
        "domain_widenings": dom.widenings,
        "delta": dom.delta,
        "seconds_check": ticks["check"] - ticks["start"],
        "seconds_relaxation": ticks["relaxation"] - ticks["check"],
        "seconds_windows": ticks["windows"] - ticks["relaxation"],
    }
    return HierarchicalSolution(counts, objective, dom, info)


def _tolerance(noisy: NoisyGroupSizes) -> float:
    """0 for unweighted integer noisy values (every exchange gain is an exact integer in float64), else
    a rounding allowance relative to the largest magnitude involved (times the largest weight)."""
    values = noisy.values
    scale = 1.0 if noisy.weights is None else float(noisy.weights.max())
    exact = noisy.weights is None and np.array_equal(values, np.round(values))
    if exact and np.abs(values).max(initial=0) + noisy.G < 2**40:
        return 0.0
    return 1e-9 * scale * (1.0 + float(np.abs(values).max(initial=0)) + noisy.G)


def window_domains(centre: np.ndarray, domains: Domains, window: int) -> Domains:
    """``[floor(c) - w, ceil(c) + w]`` around every relaxed value, inside the given domains."""
    lo = np.maximum(domains.lo, np.floor(centre).astype(np.int64) - window)
    hi = np.minimum(domains.hi, np.ceil(centre).astype(np.int64) + window)
    return Domains(lo, np.maximum(hi, lo), domains.delta, domains.widenings)


def _window_optimum(noisy: NoisyGroupSizes, win: Domains) -> tuple[np.ndarray, float, int]:
    """The table DP on the window domains: counts, DP cost and table entries."""
    state = hierarchical_tables(noisy, win)
    counts = np.empty(state.lo.shape, dtype=np.int64)
    h = noisy.hierarchy
    cost = kernels.hierarchical_split(noisy.G, h.child_start, h.child_count, state.kernel_state(noisy), counts)
    if cost < 0:
        raise RuntimeError("pgsr_dp: top-down split failed on feasible windows (internal error)")
    return counts, float(cost), int(state.tables.size)


def exchange_gain(noisy: NoisyGroupSizes, domains: Domains, counts: np.ndarray) -> tuple[float, tuple[int, int]]:
    """The best change of the Model 1 cost by moving one unit between two leaf cells, over all
    pairs, within ``domains``; and the DP node where the best pair meets (``(-1, -1)``: the root).

    A value >= 0 proves ``counts`` optimal (M-convexity; see the module docstring).
    """
    h = noisy.hierarchy
    a = np.ascontiguousarray(noisy.values, dtype=np.float64)
    x = np.ascontiguousarray(counts, dtype=np.float64)
    lo, hi = domains.lo.astype(np.float64), domains.hi.astype(np.float64)
    up, down, gains, nodes = _exchange_pass(h.child_start, h.child_count, a, noisy.cell_weights(), x, lo, hi)
    root = _best_pair(up[0], down[0])
    s = int(np.argmin(gains))
    if root < gains[s]:
        return float(root), (-1, -1)
    return float(gains[s]), (int(nodes[s]), s)


@njit(cache=True, parallel=True)
def _exchange_pass(child_start, child_count, a, w, x, lo, hi):
    """Per size, bottom-up: the cheapest unit added (``up``) and removed (``down``) below every
    node, path costs included (cell ``(r, s)`` costs ``w[r, s] (x - a)^2``), and the best exchange
    between two different children."""
    R, S = a.shape
    up = np.empty((R, S))
    down = np.empty((R, S))
    gains = np.zeros(S)
    nodes = np.full(S, -1, dtype=np.int64)
    for s in prange(S):
        for r in range(R - 1, -1, -1):
            d = x[r, s] - a[r, s]
            add = w[r, s] * (2.0 * d + 1.0) if x[r, s] < hi[r, s] else np.inf
            rem = w[r, s] * (1.0 - 2.0 * d) if x[r, s] > lo[r, s] else np.inf
            first, last = child_start[r], child_start[r] + child_count[r]
            if first == last:
                up[r, s], down[r, s] = add, rem
                continue
            best = _best_pair(up[first:last, s], down[first:last, s])
            if best < gains[s]:
                gains[s], nodes[s] = best, r
            up[r, s] = add + up[first:last, s].min()
            down[r, s] = rem + down[first:last, s].min()
    return up, down, gains, nodes


@njit(cache=True)
def _best_pair(up, down):
    """``min over i != j of down[i] + up[j]`` (``inf`` with fewer than two entries)."""
    u1 = u2 = d1 = d2 = np.inf
    iu = idn = -1
    for k in range(up.shape[0]):
        if up[k] < u1:
            u1, u2, iu = up[k], u1, k
        elif up[k] < u2:
            u2 = up[k]
        if down[k] < d1:
            d1, d2, idn = down[k], d1, k
        elif down[k] < d2:
            d2 = down[k]
    if iu != idn:
        return d1 + u1
    return min(d1 + u2, d2 + u1)
