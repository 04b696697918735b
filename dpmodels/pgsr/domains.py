"""PGSR variable domains: integer intervals per cell, truncation, feasibility proofs.

:class:`Domains` holds ``[lo, hi]`` for every cell; :func:`resolve_domains` builds the full
``[0, G]`` domain or the paper's truncation ``noisy +- delta`` (widened on request when it is
infeasible); a discrete Gaussian level's truncation follows :func:`gaussian_domain_scale`.  The
``*_infeasibility`` functions prove that domains admit no solution of Model 1 or of the corrected
Model 3 (plugins report ``provenInfeasible`` with their reason).
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError, InfeasibleDomainError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import truncation_delta

from .data import NoisyGroupSizes, chain_order

__all__ = [
    "Domains",
    "chain_feasible_interval",
    "chain_links",
    "chain_infeasibility",
    "gaussian_domain_scale",
    "hierarchical_feasible_interval",
    "hierarchical_infeasibility",
    "resolve_domains",
]


@dataclass(frozen=True, eq=False)
class Domains:
    """Integer interval ``[lo, hi]`` of every variable, in the (regions, sizes) layout.

    ``delta`` records the per-level half-width of a truncated domain (``None``: full
    ``[0, G]``); ``widenings`` counts how often an infeasible truncation was doubled.

    Parameters
    ----------
    lo, hi : numpy.ndarray
        The bounds of every cell, (regions, sizes), integers with ``lo <= hi``.
    delta : tuple of int, optional
        The per-level half-width of a truncated domain; None for the full domain.
    widenings : int
        How often an infeasible truncation was doubled.
    """

    lo: np.ndarray
    hi: np.ndarray
    delta: tuple[int, ...] | None = None
    widenings: int = 0

    def __post_init__(self):
        lo = np.asarray(self.lo, dtype=np.int64)
        hi = np.asarray(self.hi, dtype=np.int64)
        if lo.shape != hi.shape or lo.ndim != 2:
            raise DataValidationError("domains", f"lo and hi need the same 2-d shape, got {lo.shape} and {hi.shape}")
        lo.setflags(write=False)
        hi.setflags(write=False)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @classmethod
    def full(cls, noisy: NoisyGroupSizes) -> Domains:
        """``[0, G]`` everywhere: the exact model."""
        shape = noisy.values.shape
        return cls(np.zeros(shape, np.int64), np.full(shape, noisy.G, np.int64))

    @classmethod
    def truncated(cls, noisy: NoisyGroupSizes, delta=None) -> Domains:
        """``[v - delta, v + delta]`` around each noisy value, intersected with ``[0, G]`` (spec 2.4).

        ``delta`` is an int or one int per level; by default ``3 ceil(2 lambda_l^2)`` from the
        public noise scale of each level.
        """
        deltas = _level_deltas(noisy, delta)
        per_row = np.asarray(deltas, dtype=np.float64)[noisy.hierarchy.level - 1][:, None]
        lo = np.maximum(np.ceil(noisy.values - per_row), 0)
        hi = np.minimum(np.floor(noisy.values + per_row), noisy.G)
        return cls(lo.astype(np.int64), hi.astype(np.int64), tuple(deltas))

    def widened(self, noisy: NoisyGroupSizes, factor: int = 2) -> Domains:
        """The truncation with every ``delta`` multiplied by ``factor`` (at least 1; full domains stay full)."""
        if self.delta is None:
            return self
        wider = Domains.truncated(noisy, [max(1, d * factor) for d in self.delta])
        return Domains(wider.lo, wider.hi, wider.delta, self.widenings + 1)

    @property
    def is_full(self) -> bool:
        return self.delta is None

    def size(self) -> int:
        """Total number of domain values, the DP's table budget."""
        return int(np.maximum(self.hi - self.lo + 1, 0).sum())


def _level_deltas(noisy: NoisyGroupSizes, delta) -> list[int]:
    L = noisy.L
    if delta is None:
        if noisy.level_scales is None:
            raise DataValidationError("delta", "no noise scale is recorded with these values; pass delta explicitly")
        return [truncation_delta(s) for s in noisy.level_scales]
    deltas = [delta] * L if np.isscalar(delta) else list(delta)
    if len(deltas) != L:
        raise DataValidationError("delta", f"need one value or one per level ({L}), got {len(deltas)}")
    for d in deltas:
        if isinstance(d, bool) or int(d) != d or d < 0:
            raise DataValidationError("delta", f"must be non-negative integers, got {delta!r}")
    return [int(d) for d in deltas]


def gaussian_domain_scale(sigma2) -> Fraction:
    """The level scale that sizes the truncated domains of a discrete Gaussian level at ``sigma2``.

    The paper truncates a Laplace level of scale ``b`` to ``noisy +- d``, ``d = 3 ceil(2 b^2)``
    (three times the variance, :func:`dpmodels.core.noise.truncation_delta`), which leaves the
    truth outside with probability at most ``exp(-d / b)`` per cell.  A Gaussian level takes the
    Laplace of the same variance as its yardstick (``b = sigma / sqrt 2``, so ``d = 3 ceil(sigma2)``)
    and keeps at most that tail probability: its half-width ``h`` is the smallest integer with
    ``2 exp(-h^2 / (2 sigma2)) <= exp(-d / b)`` (the discrete Gaussian is ``sigma2``-subgaussian,
    Canonne, Kamath and Steinke 2020), i.e. ``h^2 >= 2 sqrt(2) sigma d + 2 sigma2 ln 2``; lighter
    tails give narrower domains (``sigma2 = 6``: ``h = 12`` where the Laplace rule gives 18).

    Returns
    -------
    Fraction
        An exact ``lambda`` with ``truncation_delta(lambda) = 3 ceil(h / 3) >= h``, so that
        :meth:`Domains.truncated` applies the paper's rule unchanged.  Like every level scale it is
        public (a function of ``rho``, ``L`` and the sensitivities): it shapes the domains, never the
        privacy.
    """
    var = Fraction(sigma2)
    if var <= 0:
        raise DataValidationError("sigma2", f"must be > 0, got {sigma2!r}")
    ctx = decimal.Context(prec=50)
    s2 = ctx.divide(decimal.Decimal(var.numerator), decimal.Decimal(var.denominator))
    d = 3 * math.ceil(var)
    h2 = ctx.add(
        ctx.multiply(ctx.multiply(decimal.Decimal(2).sqrt(ctx), 2 * d), s2.sqrt(ctx)),
        ctx.multiply(2 * s2, decimal.Decimal(2).ln(ctx)),
    )
    h = int(h2.sqrt(ctx).to_integral_value(rounding=decimal.ROUND_CEILING))
    k = max(1, -(-h // 3))
    m = math.isqrt(2 * k) + 1  # lambda = p / (2m) with k - 1 < 2 lambda^2 <= k (p = isqrt(2 k m^2))
    scale = Fraction(math.isqrt(2 * k * m * m), 2 * m)
    assert truncation_delta(scale) == 3 * k
    return scale


def hierarchical_feasible_interval(hierarchy: Hierarchy, domains: Domains) -> tuple[np.ndarray, np.ndarray]:
    """Bottom-up interval propagation for the tree-sum constraints (H3).

    Returns ``(lo, hi)``: the values each node can take given its own domain and what its
    subtree can sum to.  Sums of integer intervals are integer intervals, so this is exact.
    """
    lo = domains.lo.copy()
    hi = domains.hi.copy()
    for level in range(hierarchy.n_levels - 1, 0, -1):
        rows = np.arange(*hierarchy.level_slice(level).indices(hierarchy.n_regions))
        lo[rows] = np.maximum(lo[rows], hierarchy.sum_children(lo, rows))
        hi[rows] = np.minimum(hi[rows], hierarchy.sum_children(hi, rows))
    return lo, hi


def hierarchical_infeasibility(noisy: NoisyGroupSizes, domains: Domains) -> str | None:
    """Why the domains admit no solution of Model 1 (``None`` if they do)."""
    h = noisy.hierarchy
    lo, hi = hierarchical_feasible_interval(h, domains)
    empty = np.argwhere(lo > hi)
    if len(empty):
        # report the deepest empty node: the cause, not its consequences up the tree
        r, s = max(empty.tolist(), key=lambda rs: h.level[rs[0]])
        return (
            f"no value of region {h.names[r]!r}, size {s + 1} fits its domain "
            f"[{domains.lo[r, s]}, {domains.hi[r, s]}] and the sums its children can reach"
        )
    top_lo, top_hi = int(lo[0].sum()), int(hi[0].sum())
    if not top_lo <= noisy.G <= top_hi:
        return f"the root's sizes can sum to [{top_lo}, {top_hi}], which does not contain G = {noisy.G}"
    return None


def chain_links(hierarchy: Hierarchy, n_sizes: int, literal: bool = False) -> np.ndarray:
    """How consecutive chain nodes are linked: 0 none, 1 ``<=`` (C8), 2 ``=`` (C9).

    The corrected model (spec erratum A3) links every step with ``<=`` unless the next node
    is shallower, which needs ``=``.  ``literal=True`` prints the paper's C8: ``<=`` only
    between nodes of the same level, nothing when the next node is deeper.
    """
    regions, _ = chain_order(hierarchy, n_sizes)
    lev = hierarchy.level[regions]
    links = np.where(lev[:-1] > lev[1:], 2, 1).astype(np.int8)
    if literal:
        links[lev[:-1] < lev[1:]] = 0
    return links


def chain_infeasibility(noisy: NoisyGroupSizes, domains: Domains) -> str | None:
    """Why the domains admit no solution of the corrected Model 3 (``None`` if they do)."""
    regions, sizes = chain_order(noisy.hierarchy, noisy.N)
    lo = domains.lo[regions, sizes].copy()
    hi = domains.hi[regions, sizes].copy()
    if not lo[-1] <= noisy.G <= hi[-1]:
        return f"the last chain node (root, size N) must equal G = {noisy.G} but its domain is [{lo[-1]}, {hi[-1]}]"
    lo[-1] = hi[-1] = noisy.G
    flo, fhi = chain_feasible_interval(lo, hi, chain_links(noisy.hierarchy, noisy.N) == 2)
    empty = np.flatnonzero(flo > fhi)
    if len(empty):
        i = empty[0]
        r, s = regions[i], sizes[i]
        return (
            f"chain node {i + 1} (region {noisy.hierarchy.names[r]!r}, size {s + 1}) cannot be >= the "
            f"earlier nodes within its domain [{domains.lo[r, s]}, {domains.hi[r, s]}]"
        )
    return None


def chain_feasible_interval(lo: np.ndarray, hi: np.ndarray, equal_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward propagation along a chain with ``x_i <= x_{i+1}`` or ``x_i = x_{i+1}``.

    Lower bounds travel forward through every link; upper bounds only through ``=`` links.
    """
    flo = np.maximum.accumulate(np.asarray(lo, dtype=np.int64))
    run = np.concatenate([[0], np.cumsum(~np.asarray(equal_next, dtype=bool))])
    fhi = pd.Series(np.asarray(hi, dtype=np.int64)).groupby(run).cummin().to_numpy()
    return flo, fhi


def resolve_domains(
    noisy: NoisyGroupSizes,
    domains="full",
    delta=None,
    on_infeasible: Literal["raise", "widen"] = "raise",
    check=hierarchical_infeasibility,
) -> Domains:
    """Turn a domain request into :class:`Domains` and check that it admits a solution.

    ``domains`` is ``"full"``, ``"truncated"`` or a :class:`Domains`.  An infeasible
    truncation raises :class:`InfeasibleDomainError` (``on_infeasible="raise"``) or is
    widened by doubling ``delta`` until feasible (``"widen"``; at worst it reaches ``[0, G]``).
    """
    if isinstance(domains, Domains):
        dom = domains
        if dom.lo.shape != noisy.values.shape:
            raise DataValidationError("domains", f"shape {dom.lo.shape} does not match the values {noisy.values.shape}")
    elif domains == "full":
        dom = Domains.full(noisy)
    elif domains == "truncated":
        dom = Domains.truncated(noisy, delta)
    else:
        raise DataValidationError("domains", f"must be 'full', 'truncated' or a Domains, got {domains!r}")
    if on_infeasible not in ("raise", "widen"):
        raise DataValidationError("on_infeasible", f"must be 'raise' or 'widen', got {on_infeasible!r}")
    reason = check(noisy, dom)
    while reason is not None:
        if on_infeasible == "raise" or dom.is_full:
            raise InfeasibleDomainError(
                "domains", f"{reason}. Use on_infeasible='widen', a larger delta, or domains='full'"
            )
        if np.all(dom.lo == 0) and np.all(dom.hi == noisy.G):
            raise InfeasibleDomainError("domains", f"{reason}, even with domains [0, G]")
        dom = dom.widened(noisy)
        reason = check(noisy, dom)
    return dom
