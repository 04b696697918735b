"""The exact chain DP of M_c^ch for Model 3 (spec 4.6, corrected C8).

Along the size-major post-order chain, ``tau_{i+1}(v) = (v - noisy_{i+1})^2 + phi_{i+1}(v)``
with ``phi`` either ``tau_i(v)`` (the next node is shallower: equality C9) or the prefix
minimum of ``tau_i`` (Eqs. 8a-8b).  Tables are convex (Lemma 7), so the DP keeps one table
at a time and each node's argmin.  When the tables would be too large (wide domains, as
with the sound noise calibration) the same optimum is computed by pool-adjacent-violators
on the chain, which is exact for separable convex costs under chain constraints.  Weighted values
(``noisy.weights``, any weight per cell) weigh each chain node's cost ``w (v - noisy)^2``; the tables
stay convex and PAVA pools by weighted means, so both stay exact.  The
``pgsr_chain`` plugin (:mod:`dpmodels.solvers.pgsr_chain`) runs it on a Pyomo model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError

from ..data import NoisyGroupSizes, chain_decumulate, chain_order
from ..domains import Domains, chain_feasible_interval, chain_infeasibility, chain_links, resolve_domains
from . import kernels

__all__ = ["ChainSolution", "solve_chain", "chain_tables", "TABLE_BUDGET"]

#: Above this many table entries ``method="auto"`` switches from the table DP to PAVA.
TABLE_BUDGET = 50_000_000


@dataclass
class ChainSolution:
    """Chain values and the released counts, both in (regions, sizes) layout."""

    chain: np.ndarray
    counts: np.ndarray
    objective: float
    domains: Domains
    info: dict = field(default_factory=dict)


def solve_chain(
    noisy: NoisyGroupSizes, domains="full", delta=None, on_infeasible: str = "raise", method: str = "auto"
) -> ChainSolution:
    """Exact optimum of the corrected Model 3 on plain data.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy chain-cumulative values (``kind="chain"``).
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains`.
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation that admits no solution).
    method : str
        ``"dp"`` (the paper's table DP), ``"pava"`` (pool adjacent violators) or ``"auto"`` (the
        DP unless its tables exceed ``TABLE_BUDGET`` entries).

    Returns
    -------
    ChainSolution
        The released counts, the objective and ``info``.
    """
    noisy.require_kind("chain", "pgsr_chain")
    if method not in ("auto", "dp", "pava"):
        raise DataValidationError("method", f"must be 'auto', 'dp' or 'pava', got {method!r}")
    tick = time.perf_counter()
    dom = resolve_domains(noisy, domains, delta, on_infeasible, check=chain_infeasibility)
    regions, sizes = chain_order(noisy.hierarchy, noisy.N)
    links = chain_links(noisy.hierarchy, noisy.N)
    y = noisy.values[regions, sizes]
    w = noisy.cell_weights()[regions, sizes]
    lo = dom.lo[regions, sizes].copy()
    hi = dom.hi[regions, sizes].copy()
    lo[-1] = hi[-1] = noisy.G
    flo, fhi = chain_feasible_interval(lo, hi, links == 2)
    entries = int((fhi - flo + 1).sum())
    chosen = method if method != "auto" else ("dp" if entries <= TABLE_BUDGET else "pava")
    if chosen == "dp":
        x, _ = kernels.chain_dp(y, w, flo, fhi, links, noisy.G)
    else:
        x, feasible = kernels.chain_pava(y, w, flo, fhi, links, noisy.G)
        if not feasible:
            raise RuntimeError("pgsr_chain: PAVA found no feasible pooling on feasible domains (internal error)")
    chain = np.empty(noisy.values.shape, dtype=np.int64)
    chain[regions, sizes] = x
    objective = float((w * (x - y) ** 2).sum())  # ones when unweighted: the same sum, bit for bit
    info = {
        "method": chosen,
        "table_entries": entries,
        "domain_widenings": dom.widenings,
        "delta": dom.delta,
        "seconds": time.perf_counter() - tick,
    }
    return ChainSolution(chain, chain_decumulate(noisy.hierarchy, chain), objective, dom, info)


def chain_tables(noisy: NoisyGroupSizes, domains: Domains) -> list[tuple[int, np.ndarray]]:
    """Every cost table ``tau_i`` of the chain DP, literally as Eqs. 8a-8b define them.

    Returns ``(lo_i, tau_i)`` in chain order on each node's own domain (``inf`` where no
    earlier value fits).  The optimum of Model 3 is ``tau_last(G)``.  This is the readable
    reference for inspecting small instances; ``solve_chain`` keeps only one table at a time.
    """
    regions, sizes = chain_order(noisy.hierarchy, noisy.N)
    links = chain_links(noisy.hierarchy, noisy.N)
    weights = noisy.cell_weights()
    tables: list[tuple[int, np.ndarray]] = []
    for i, (r, s) in enumerate(zip(regions, sizes, strict=True)):
        lo, hi = int(domains.lo[r, s]), int(domains.hi[r, s])
        v = np.arange(lo, hi + 1)
        tau = weights[r, s] * (v - noisy.values[r, s]) ** 2
        if tables:
            prev_lo, prev = tables[-1]
            ref = prev if links[i - 1] == 2 else np.minimum.accumulate(prev)  # tau_i(v) or min_{x<=v} tau_i(x)
            pos = v - prev_lo if links[i - 1] == 2 else np.minimum(v, prev_lo + len(prev) - 1) - prev_lo
            inside = (pos >= 0) & (pos < len(prev))
            tau = tau + np.where(inside, ref[np.clip(pos, 0, len(prev) - 1)], np.inf)
        tables.append((lo, tau.astype(np.float64)))
    return tables
