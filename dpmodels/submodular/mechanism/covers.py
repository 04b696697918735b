"""Covers of the matroid polytope ``P(M)`` that Algorithms 1 and 2 draw their directions from (spec 3.1).

``"bases"`` is sampled, never listed (:mod:`dpmodels.submodular.exact`); ``"grid"`` is the
certified ``sqrt(|E|)/q``-cover of tiny instances; ``"explicit"`` points are given by the caller.
"""

from __future__ import annotations

import itertools

import numpy as np

from dpmodels.core.errors import DataValidationError

from ..matroids import Matroid

__all__ = ["grid_cover", "cover_points"]


def grid_cover(M: Matroid, q: int) -> np.ndarray:
    """``{z in {0, 1/q, ..., 1}^E : z in P(M)}``: a ``sqrt(|E|)/q``-cover of ``P(M)`` (spec 3.1)."""
    if int(q) < 1:
        raise DataValidationError("q", f"the grid resolution must be >= 1, got {q}")
    if (q + 1) ** M.n > 2_000_000:
        raise DataValidationError("q", f"the grid has (q+1)^|E| = {(q + 1) ** M.n} points; use cover='bases'")
    levels = np.arange(q + 1) / q
    pts = [np.array(z) for z in itertools.product(levels, repeat=M.n)]
    return np.array([z for z in pts if M.contains(z)])


def cover_points(M: Matroid, cover: str, q, points) -> np.ndarray | None:
    """The points of a cover of ``P(M)`` as rows; None for ``cover="bases"`` (sampled, not listed).

    Parameters
    ----------
    M : Matroid
        The constraint.
    cover : {"bases", "grid", "explicit"}
        The cover.
    q : int or None
        The grid resolution (``cover="grid"``).
    points : array_like or None
        The explicit points, rows in ``P(M)`` (``cover="explicit"``).
    """
    if cover == "bases":
        return None
    if cover == "grid":
        if q is None:
            raise DataValidationError("q", "cover='grid' needs the grid resolution q")
        return grid_cover(M, q)
    if cover == "explicit":
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != M.n or not all(M.contains(p) for p in pts):
            raise DataValidationError("points", "explicit cover points must be rows in P(M)")
        return pts
    raise DataValidationError("cover", f"must be bases, grid or explicit, got {cover!r}")
