"""Model 1 by prices instead of tables: a slow, independent test oracle (pure Python, integer noise).

A third exact method beside brute force and the table DP, built on a different principle from
the product's window solver (:mod:`dpmodels.pgsr.algorithms.window`), which the tests check against it.

The DP tree's objective is a laminar convex function (each node's cost is convex in the sum of
the leaves below it), so its cost tables are convex (spec Theorem 3) and a node is described by
its *demand* at a marginal price ``p``:

    x_u(p) = the largest value of node u whose every unit step costs at most p
           = lo_u + #{x in [lo_u, hi_u) : tau_u(x + 1) - tau_u(x) <= p}.

A leaf's step ``x -> x + 1`` costs ``2x + 1 - 2 a_u``, so its demand is closed form.  An internal
node's step costs its own ``2x + 1 - 2 a_u`` plus the cheapest extra unit among its children
(the min-plus convolution merges the children's slopes), and ``phi_u``'s slope at ``x`` is at
most ``q`` exactly when the children's demands at ``q`` add up to more than ``x``.  So

    step x is bought at price p  <=>  sum_c x_c(p - (2x + 1 - 2 a_u)) >= x + 1,

which is monotone in ``x``: a binary search over ``x`` with the children's demands.  Top-down,
the root's G and then every node's value V are split at the smallest price ``q`` whose demand
reaches V; every child takes its demand just below ``q`` plus a share of the units priced
exactly ``q``.  Each child value then minimises ``tau_c(x) - q x``, which is the Lagrangian
optimality condition of the split, so the result is an exact optimum of Model 1 on the given
domains (tested against the table DP and brute force).  Nothing here is a table of the domain.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.pgsr.data import NoisyGroupSizes
from dpmodels.pgsr.domains import Domains, hierarchical_feasible_interval, hierarchical_infeasibility, resolve_domains

__all__ = ["solve_by_prices"]


def solve_by_prices(noisy: NoisyGroupSizes, domains="full") -> tuple[np.ndarray, float]:
    """Exact Model 1 counts and objective on ``domains`` (``"full"``, ``"truncated"`` or a Domains)."""
    noisy.require_kind("counts", "solve_by_prices")
    values = np.asarray(noisy.values, dtype=np.float64)
    if not np.array_equal(values, np.round(values)):
        raise DataValidationError("noisy", "solve_by_prices needs integer noisy values (discrete noise)")
    dom = resolve_domains(noisy, domains) if not isinstance(domains, Domains) else domains
    reason = hierarchical_infeasibility(noisy, dom)
    if reason is not None:
        raise DataValidationError("domains", reason)
    lo, hi = hierarchical_feasible_interval(noisy.hierarchy, dom)
    demand = _Demand(noisy, values.astype(np.int64), lo.astype(np.int64), hi.astype(np.int64))
    counts = demand.split_all()
    return counts, float(((counts - values) ** 2).sum())


class _Demand:
    """Demands ``x_u(p)`` of every DP node ``(region, size)`` and the top-down split."""

    def __init__(self, noisy: NoisyGroupSizes, a: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        self.h, self.G = noisy.hierarchy, int(noisy.G)
        self.a, self.lo, self.hi = a, lo, hi
        # every step of any path costs at most |2x + 1 - 2a| <= 2G + 1 + 2 max|a| per level
        self.bound = (self.h.n_levels + 1) * (2 * self.G + 2 + 2 * int(np.abs(a).max(initial=0)))
        self.x = lru_cache(maxsize=None)(self._x)

    def _x(self, r: int, s: int, p: int) -> int:
        lo, hi, a = int(self.lo[r, s]), int(self.hi[r, s]), int(self.a[r, s])
        kids = self.h.children(r)
        if len(kids) == 0:  # 2x - 1 - 2a <= p  <=>  x <= (p + 1 + 2a) / 2
            return min(max((p + 1 + 2 * a) // 2, lo), hi)
        # largest x in [lo, hi] such that step x - 1 is bought: sum_c x_c(p - (2(x-1) + 1 - 2a)) >= x
        left, right = lo, hi
        while left < right:
            mid = (left + right + 1) // 2
            price = p - (2 * (mid - 1) + 1 - 2 * a)
            if sum(self.x(int(c), s, price) for c in kids) >= mid:
                left = mid
            else:
                right = mid - 1
        return left

    def _split(self, nodes: list[tuple[int, int]], total: int) -> list[int]:
        """Values of ``nodes`` summing to ``total`` at the smallest price whose demand reaches it."""
        low, high = -self.bound, self.bound
        while low < high:
            mid = (low + high) // 2
            if sum(self.x(r, s, mid) for r, s in nodes) >= total:
                high = mid
            else:
                low = mid + 1
        below = [self.x(r, s, low - 1) for r, s in nodes]
        at = [self.x(r, s, low) for r, s in nodes]
        left = total - sum(below)
        out = []
        for b, t in zip(below, at, strict=True):
            take = min(t - b, left)
            out.append(b + take)
            left -= take
        if left != 0:
            raise RuntimeError("price split failed on feasible domains (internal error)")
        return out

    def split_all(self) -> np.ndarray:
        h, n_sizes = self.h, self.a.shape[1]
        counts = np.zeros(self.a.shape, dtype=np.int64)
        counts[0] = self._split([(0, s) for s in range(n_sizes)], self.G)
        for r in range(h.n_regions):  # canonical order: parents before children
            kids = [int(c) for c in h.children(r)]
            if kids:
                for s in range(n_sizes):
                    counts[kids, s] = self._split([(c, s) for c in kids], int(counts[r, s]))
        return counts
