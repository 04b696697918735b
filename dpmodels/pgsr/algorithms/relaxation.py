"""Model 1-R (the continuous relaxation of Model 1) by demand functions, in seconds at census scale.

The relaxation's optimum is where every node's marginal cost equals the price its parent pays
(:mod:`dpmodels.pgsr.algorithms.relax_kernels` builds each node's demand bottom-up as a piecewise linear
function of the price, with about two breakpoints per leaf below it, then splits ``G`` top-down).
Its cost grows with the number of leaves, not with the domain width ``G``.

Weighted values (``noisy.weights``) enter every cell's cost ``w (x - noisy)^2`` and so every demand.
Floating point: the values are accurate to rounding, not certified.  The exact solver
(:mod:`dpmodels.pgsr.algorithms.window`) only uses them to centre its search windows and certifies its
own integer answer independently.
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import InfeasibleDomainError
from dpmodels.core.hierarchy import Hierarchy

from ..data import NoisyGroupSizes
from ..domains import Domains, hierarchical_feasible_interval, hierarchical_infeasibility, resolve_domains
from . import relax_kernels

__all__ = ["relaxed_values", "demand_capacity"]


def demand_capacity(hierarchy: Hierarchy) -> np.ndarray:
    """Breakpoints each internal region's demand can have (0 for leaves): two per leaf child,
    an internal child's own, plus the two crossings of the node's own bounds."""
    cap = np.zeros(hierarchy.n_regions, dtype=np.int64)
    for r in range(hierarchy.n_regions - 1, -1, -1):  # canonical order: children after parents
        kids = hierarchy.children(r)
        if len(kids):
            cap[r] = int(np.where(hierarchy.is_leaf[kids], 2, cap[kids]).sum()) + 2
    return cap


def relaxed_values(noisy: NoisyGroupSizes, domains="full") -> np.ndarray:
    """Optimal Model 1-R values (regions x sizes, float) on ``domains``.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy counts (``kind="counts"``) and the public hierarchy and ``G``.
    domains : str or Domains
        ``"full"``, ``"truncated"`` or a :class:`~dpmodels.pgsr.domains.Domains`, which must admit
        a solution.
    """
    noisy.require_kind("counts", "relaxed_values")
    dom = domains if isinstance(domains, Domains) else resolve_domains(noisy, domains)
    reason = hierarchical_infeasibility(noisy, dom)
    if reason is not None:
        raise InfeasibleDomainError("domains", reason)
    h = noisy.hierarchy
    lo, hi = (b.astype(np.float64) for b in hierarchical_feasible_interval(h, dom))
    a = np.ascontiguousarray(noisy.values, dtype=np.float64)
    w = noisy.cell_weights()
    cap = demand_capacity(h)
    start = (np.cumsum(cap) - cap).astype(np.int64)
    P, X, count = relax_kernels.demands(h.child_start, h.child_count, h.is_leaf, a, w, lo, hi, start, int(cap.sum()))
    price = relax_kernels.root_price(h.is_leaf, a, w, lo, hi, P, X, count, float(noisy.G))
    return relax_kernels.split(price, h.child_start, h.child_count, h.is_leaf, a, w, lo, hi, P, X, start, count)
