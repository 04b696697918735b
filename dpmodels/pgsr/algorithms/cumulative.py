"""Cumulative PGSR algorithms: Model A2 by PAVA and Algorithm 2 (M_c^dp).

:func:`solve_isotonic` solves Model A2 exactly: bounded least-squares isotonic regression per
region is ``clip(PAVA(noisy), 0, G)`` (spec 3.6).

:func:`solve_cumulative_dp` is M_c^dp (spec 4.5): per region the isotonic estimate, rounded
half up and de-cumulated, becomes the input of the M_H^dp dynamic program.  It returns a
feasible solution of Model 2 but not its optimum (the paper's Model 2 has no known polynomial
algorithm).  The plugins ``isotonic_pava`` and ``pgsr_cdp`` (:mod:`dpmodels.solvers.pgsr_cumulative`)
run them on Pyomo models.

Weighted values (``noisy.weights``): PAVA pools by weighted means, exact for any weight per cell.
Algorithm 2's DP stage works on each region's de-cumulated counts, which mix all of the region's
cumulative values, so it takes one weight per region (a region's cumulative values measured alike,
as every level-wise measurement is) and refuses weights that differ within a region, naming
``weights``: use M_c (Model 2 on a solver) for those.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError

from ..data import NoisyGroupSizes, cumulative, decumulate
from ..domains import Domains
from ..weights import region_weights
from . import kernels
from .hierarchical import solve_hierarchical
from .window import solve_exact

__all__ = ["solve_isotonic", "CumulativeSolution", "solve_cumulative_dp"]


def solve_isotonic(noisy: NoisyGroupSizes) -> np.ndarray:
    """Model A2 for every region: the closest non-decreasing vector in ``[0, G]``.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy cumulative counts (``kind="cumulative"``).

    Returns
    -------
    numpy.ndarray
        The isotonic estimates (regions x sizes, float).
    """
    noisy.require_kind("cumulative", "isotonic_pava")
    return kernels.isotonic_rows(np.ascontiguousarray(noisy.values), noisy.cell_weights(), 0.0, float(noisy.G))


@dataclass
class CumulativeSolution:
    """Released counts and the Algorithm 2 intermediate estimates."""

    counts: np.ndarray
    isotonic: np.ndarray
    preprocessed: np.ndarray
    objective: float
    domains: Domains
    info: dict = field(default_factory=dict)


def solve_cumulative_dp(
    noisy: NoisyGroupSizes, domains="truncated", delta=None, on_infeasible: str = "widen", method: str = "windows"
) -> CumulativeSolution:
    """Algorithm 2: isotonic step, round half up, (-), then the M_H^dp DP on the result.

    The DP's domains are built around the pre-processed counts with the cumulative noise
    scale (spec 4.5: the smaller noise gives smaller domains).  Weighted values need one weight per
    region (the DP stage weighs each region's counts by it); others are refused.  ``objective`` is Model 2's
    objective at the released solution.  The DP stage is exact Model 1 either way: ``method``
    ``"windows"`` (certified windows, :mod:`.window`) or ``"tables"`` (the paper's table DP).

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy cumulative counts (``kind="cumulative"``).
    domains : str or Domains
        ``"full"`` (``[0, G]``), ``"truncated"`` (the paper's ``noisy +- delta``) or explicit
        :class:`~dpmodels.pgsr.domains.Domains`.
    delta : int or sequence of int, optional
        The truncation's half-width per level (default: from the cumulative noise scales).
    on_infeasible : str
        ``"raise"`` or ``"widen"`` (double a truncation that admits no solution).
    method : str
        The DP stage: ``"windows"`` or ``"tables"``.

    Returns
    -------
    CumulativeSolution
        The released counts, Model 2's objective at them and ``info``.
    """
    if method not in ("windows", "tables"):
        raise DataValidationError("method", f"must be 'windows' or 'tables', got {method!r}")
    region_weights(noisy, "M_c^dp (Algorithm 2: its DP stage de-cumulates each region)")
    tick = time.perf_counter()
    iso = solve_isotonic(noisy)
    pre = decumulate(np.floor(iso + 0.5))
    solver = solve_exact if method == "windows" else solve_hierarchical
    dp = solver(noisy.with_values(pre, kind="counts"), domains, delta, on_infeasible)
    objective = noisy.squared_error(cumulative(dp.counts))
    info = dict(dp.info, dp_objective=dp.objective, seconds=time.perf_counter() - tick)
    return CumulativeSolution(dp.counts, iso, pre, objective, dp.domains, info)
