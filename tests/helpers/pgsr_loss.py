"""The exact privacy loss of PGSR's measurements on a neighbouring pair (oracle of the privacy tests)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpmodels.core.hierarchy import Hierarchy


def level_l1(h: Hierarchy, a: np.ndarray, b: np.ndarray) -> list[int]:
    """``||f_l(D) - f_l(D')||_1`` for every level ``l``."""
    diff = np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64))
    return [int(diff[h.level_slice(lvl)].sum()) for lvl in range(1, h.n_levels + 1)]


def exact_privacy_loss(h: Hierarchy, a: np.ndarray, b: np.ndarray, scales) -> Fraction:
    """``max_o log P[M(D) = o] / P[M(D') = o]`` for independent double-geometric noise.

    A cell with true values ``a`` and ``b`` and scale ``lambda`` has ratio
    ``alpha^(|o - a| - |o - b|)``, ``alpha = exp(-1/lambda)``, largest at ``o = a`` where its log
    is ``|a - b| / lambda``.  Cells are independent, so the log-ratios add and all maxima are
    reached together at ``o = f(D)``: the loss is ``sum_l ||f_l(D) - f_l(D')||_1 / lambda_l``.
    """
    return sum((Fraction(d) / Fraction(scale) for d, scale in zip(level_l1(h, a, b), scales, strict=True)), Fraction(0))
