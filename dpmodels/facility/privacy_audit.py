"""The privacy audit of the facility mechanism (spec 3.6): the exact privacy loss of its marks.

Marks are independent across nodes, so the worst-case log-likelihood ratio of the marked set
between two count vectors is a sum over the noisy nodes; R and the clients' facilities are
post-processing of it.  :func:`~.mechanism.epsilon_used` is the closed-form bound it is checked
against.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError

from .checks import check_epsilon, check_lambda
from .data import HSTInstance
from .hst import pad, subtree_counts
from .mechanism import noise_scales, robust_lprime

__all__ = ["privacy_loss_exact", "log_tails"]


def log_tails(x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log P[Lap(b) >= x]`` and ``log P[Lap(b) < x]``, numerically stable.

    Parameters
    ----------
    x : numpy.ndarray
        Thresholds.
    b : numpy.ndarray
        Laplace scales (broadcast with ``x``).

    Returns
    -------
    tuple of numpy.ndarray
        ``(log_p, log_q)``.
    """
    z = np.exp(-np.abs(x) / b)
    half = math.log(0.5)
    pos = x >= 0
    log_p = np.where(pos, half - x / b, np.log1p(-0.5 * z))
    log_q = np.where(pos, np.log1p(-0.5 * z), half + x / b)
    return log_p, log_q


def privacy_loss_exact(instance: HSTInstance, other_counts, epsilon: float, algorithm: str = "dp") -> float:
    """Exact worst-case privacy loss ``ε_M`` of the marked set between N and ``other_counts`` (spec 3.6).

    Marks are independent across nodes, so ``ε_M = sum_u max(|ln p_u/p'_u|, |ln (1-p_u)/(1-p'_u)|)``
    with ``p_u = P[N_u + Lap(b_ℓ) >= f/λ^ℓ]``.  R and the clients' facilities are post-processing.

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).
    other_counts : array_like
        The neighbouring counts ``N'`` (location order).
    epsilon : float
        The privacy parameter ε > 0.
    algorithm : {"dp", "dp_uniform_noise"}, default "dp"
        Whose noise.

    Returns
    -------
    float
        ``ε_M``.
    """
    if algorithm not in ("dp", "dp_uniform_noise"):
        raise DataValidationError("algorithm", "the exact oracle covers the noise of 'dp' and 'dp_uniform_noise'")
    eps = check_epsilon(epsilon)
    lam = check_lambda(instance.tree.lam, "tree.lam")
    other = instance.with_counts(other_counts).N
    lp = robust_lprime(eps, instance.f, lam)
    tree = pad(instance.tree, lp)
    noisy = np.flatnonzero(tree.level < lp)
    if noisy.size == 0:
        return 0.0
    scales = noise_scales(instance.f, lam, lp) if algorithm == "dp" else np.full(lp, lp / eps)
    lvl = tree.level[noisy]
    b = scales[lvl]
    threshold = instance.f / lam ** lvl.astype(float)
    a = subtree_counts(tree, instance.N)[noisy]
    a2 = subtree_counts(tree, other)[noisy]
    lp1, lq1 = log_tails(threshold - a, b)
    lp2, lq2 = log_tails(threshold - a2, b)
    return float(np.maximum(np.abs(lp1 - lp2), np.abs(lq1 - lq2)).sum())
