"""Weighted post-processing: each noisy value weighs by its own variance (issue 24).

Every PGSR objective is a least-squares fit to the noisy values (Models 1, 2, 3, A2 and the
TopDown baseline's projections).  When the values were measured with different noises (levels
given different budgets, or a measurement file whose rows state different variances), the fit that
trusts each value as much as its noise deserves is the *weighted* least squares
``sum_i w_i (x_i - a_i)^2`` with ``w_i = 1 / Var_i``: for independent Gaussian noise it is the
maximum-likelihood fit, and for any independent noise it is the generalised least-squares estimator
(Gauss-Markov: the unbiased linear estimator of least variance).  An L1 objective ``sum_i w_i |x_i -
a_i|`` would instead take ``w_i = 1 / b_i``, the Laplace scale, because the Laplace density is
``exp(-|x - a| / b) / (2 b)`` and its negative log-likelihood is ``sum |x_i - a_i| / b_i``; PGSR has
no L1 objective, so every weight here is an inverse variance.

Only ratios of weights matter (a constant factor scales the objective, not its minimisers), so the
weights built here are relative: ``w_i = min_j Var_j / Var_i``, the most precise value weighs 1.
Equal variances give no weights at all (``None``): the paper's unweighted objectives, computed
exactly as before.  Weights are public: they come from the noise's stated variances, never from data.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpmodels.core.errors import DataValidationError

from .data import NoisyGroupSizes

__all__ = [
    "RULE",
    "inverse_variance_weights",
    "level_variances",
    "measured_weights",
    "region_weights",
    "weighting_record",
]

#: How the weights are derived, as manifests state it.
RULE = "1 / variance of each noisy value, relative to the smallest variance (weighted least squares)"


def inverse_variance_weights(variances, field: str = "variance") -> np.ndarray | None:
    """Relative least-squares weights ``min Var / Var`` of the given variances, or None if all are equal.

    Parameters
    ----------
    variances : array_like
        The noise variance of each value (any shape), finite and > 0.
    field : str
        The name errors give the variances.

    Returns
    -------
    numpy.ndarray or None
        Weights of the same shape in ``(0, 1]`` (float64), None when every variance is the same
        (the unweighted objective is then the weighted one up to a constant).
    """
    var = np.asarray(variances, dtype=np.float64)
    if var.size == 0 or not np.isfinite(var).all() or (var <= 0).any():
        raise DataValidationError(field, "variances must be finite and > 0 to weigh the values")
    if np.all(var == var.flat[0]):
        return None
    return var.min() / var


def level_variances(noisy: NoisyGroupSizes) -> list[float]:
    """The noise variance of each level of a measurement drawn by :func:`dpmodels.pgsr.mechanism.measure`.

    The discrete Laplace (double geometric) of each level's recorded scale, or the discrete
    Gaussian of each level's recorded ``sigma^2``.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        A measurement with its level scales (and ``sigma2_per_level`` for the discrete Gaussian).
    """
    from dpmodels.core.gaussian import discrete_gaussian_variance
    from dpmodels.core.noise import double_geometric_variance

    if noisy.info.get("noise") == "discrete-gaussian":
        return [discrete_gaussian_variance(Fraction(s)) for s in noisy.info["sigma2_per_level"]]
    if noisy.level_scales is None:
        raise DataValidationError("noisy", "has no noise scales: the variances of its levels are unknown")
    return [double_geometric_variance(s) for s in noisy.level_scales]


def measured_weights(noisy: NoisyGroupSizes) -> NoisyGroupSizes:
    """The same measurement weighted by its levels' variances (:func:`level_variances`).

    Levels measured alike (the even split of :func:`~dpmodels.pgsr.mechanism.measure` for counts and
    cumulative counts) give no weights, so the post-processing is exactly the paper's.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        A measurement with its level scales.
    """
    per_level = np.asarray(level_variances(noisy), dtype=np.float64)
    per_cell = np.repeat(per_level[noisy.hierarchy.level - 1][:, None], noisy.N, axis=1)
    weights = inverse_variance_weights(per_cell)
    if weights is None:
        return noisy
    info = dict(noisy.info, weighting=RULE + ", one variance per level as measured")
    return noisy.with_weights(weights, info)


def region_weights(noisy: NoisyGroupSizes, who: str) -> np.ndarray | None:
    """One weight per region, for an algorithm that can take no other (None: unweighted).

    Parameters
    ----------
    noisy : NoisyGroupSizes
        The weighted values.
    who : str
        The algorithm, named in the refusal of weights that vary within a region.
    """
    if noisy.weights is None:
        return None
    w = noisy.weights
    varies = np.flatnonzero((w != w[:, :1]).any(axis=1))
    if varies.size:
        region = noisy.hierarchy.names[varies[0]]
        raise DataValidationError(
            "weights",
            f"{who} needs one weight per region, but the weights of region {region!r} differ between sizes",
        )
    return w[:, 0].copy()


def weighting_record(noisy: NoisyGroupSizes) -> dict:
    """What a manifest states about the weights a post-processing used.

    Parameters
    ----------
    noisy : NoisyGroupSizes
        The values post-processed.
    """
    if noisy.weights is None:
        return {"weighted": False, "rule": "every noisy value weighs alike (they share one variance)"}
    w = noisy.weights
    return {
        "weighted": True,
        "rule": noisy.info.get("weighting", "weights given with the noisy values"),
        "distinct_weights": int(np.unique(w).size),
        "smallest_weight": float(w.min()),
        "largest_weight": float(w.max()),
    }
