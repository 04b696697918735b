"""The GLS (best linear unbiased) estimate of PGSR's noisy group-size counts.

PGSR measures, at every region, the count of groups of each size ``1..N`` with a noise variance
per level; the number of groups ``G`` (the root's total) is public.  The tree GLS of
:mod:`dpmodels.core.tree_gls` weighs each level by its variance, makes every parent the sum of
its children and the root sum to ``G``: it is unbiased, real-valued (possibly negative or
fractional, unlike Model 1's integer counts in their domains) and comes with exact variances.

* :func:`level_variances` - the noise variance of each level of a measurement;
* :func:`gls_problem` - the :class:`~dpmodels.core.tree_gls.TreeGLSProblem` of the counts;
* :func:`gls_estimate` - its estimate from a :class:`~dpmodels.pgsr.data.NoisyGroupSizes` or
  a measurement file (:func:`dpmodels.core.measurements.read_measurements`).

Only ``kind="counts"`` fits: cumulative and chain values are other linear images of the
counts, which the GLS here does not take.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.gaussian import discrete_gaussian_variance
from dpmodels.core.measurements import MeasurementSet
from dpmodels.core.noise import double_geometric_variance
from dpmodels.core.tree_gls import GLSQuery, GLSResult, TreeGLSProblem, solve_tree_gls

from .data import NoisyGroupSizes

__all__ = ["level_variances", "gls_problem", "gls_estimate"]


def level_variances(noisy: NoisyGroupSizes) -> tuple[float, ...]:
    """The noise variance of every level of a measurement drawn by :func:`dpmodels.pgsr.mechanism.measure`.

    The discrete Gaussian's recorded ``sigma^2`` (its exact variance), else the discrete Laplace of
    each level's recorded scale.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        A measurement with its level scales (and ``sigma2_per_level`` for the discrete Gaussian).
    """
    if noisy.info.get("noise") == "discrete-gaussian":
        return tuple(discrete_gaussian_variance(Fraction(s)) for s in noisy.info["sigma2_per_level"])
    if "source" in noisy.info:  # read from a measurement file: its rows state the variances, not these scales
        raise DataValidationError(
            "noisy", "comes from a measurement file: give gls_estimate its MeasurementSet (rows state variances)"
        )
    if noisy.level_scales is None:
        raise DataValidationError("noisy", "has no noise scales: give the level variances")
    return tuple(double_geometric_variance(s) for s in noisy.level_scales)


def gls_problem(noisy: NoisyGroupSizes, variances=None, *, region_variances=None) -> TreeGLSProblem:
    """The tree GLS problem of noisy counts: one query set (the counts), ``G`` the root's exact total.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        Noisy counts (``kind="counts"``) with the public hierarchy and ``G``.
    variances : sequence of float, optional
        The noise variance of each level (default :func:`level_variances`).
    region_variances : sequence of float, optional
        The noise variance of each region, in hierarchy order (a measurement file's rows); replaces
        ``variances``.
    """
    noisy.require_kind("counts", "gls_problem")
    h = noisy.hierarchy
    if region_variances is None:
        per_level = np.asarray(level_variances(noisy) if variances is None else variances, dtype=np.float64)
        if per_level.shape != (h.n_levels,) or not (per_level > 0).all() or not np.isfinite(per_level).all():
            raise DataValidationError("variances", f"need one positive finite variance per level ({h.n_levels})")
        region_variances = per_level[h.level - 1]
    counts = GLSQuery("counts", sp.identity(noisy.N, format="csr"), noisy.values, np.asarray(region_variances))
    return TreeGLSProblem(h, noisy.N, (counts,), totals={0: float(noisy.G)})


def gls_estimate(noisy: NoisyGroupSizes | MeasurementSet, variances=None) -> GLSResult:
    """The GLS estimate of every region's counts (sizes ``1..N`` in columns ``0..N-1``) and its variances.

    Parameters
    ----------
    noisy : NoisyGroupSizes or MeasurementSet
        The noisy counts, or a PGSR measurement file (its rows' variances are used, one per level).
    variances : sequence of float, optional
        The noise variance of each level (default: the measurement's).
    """
    if isinstance(noisy, MeasurementSet):
        from .measurements import noisy_from_measurements

        found, noisy = noisy, noisy_from_measurements(noisy)
        if variances is None:
            return solve_tree_gls(gls_problem(noisy, region_variances=_set_variances(found, noisy)))
    return solve_tree_gls(gls_problem(noisy, variances))


def _set_variances(found: MeasurementSet, noisy: NoisyGroupSizes) -> np.ndarray:
    """Each region's variance as the file's rows state it (a region whose rows state two is refused:
    the GLS here takes one variance per region)."""
    stated = found.table.groupby("node")["variance"]
    mixed = sorted(str(node) for node, n in stated.nunique().items() if n > 1)
    if mixed:
        raise DataValidationError("variance", f"regions {mixed[:5]} state more than one variance; give one per region")
    first = stated.first()
    return np.array([float(first[name]) for name in noisy.hierarchy.names])
