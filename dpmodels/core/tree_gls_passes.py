"""The two passes of the tree GLS on scalar coordinates, and the basis that makes them scalar.

:mod:`dpmodels.core.tree_gls` states the problem.  This module holds its linear algebra:

* :func:`common_basis` - an orthonormal basis of the active cells in which the measurement
  precision matrix of every region, ``P_v = sum_q A_q^T A_q / sigma^2_{v,q}``, is diagonal (the
  cells themselves when every ``P_v`` is diagonal, else the eigenvectors of a generic combination
  of the distinct ``P_v``, verified), if one exists.  In that basis the GLS problem separates into
  one scalar problem per coordinate, with independent estimates (otherwise
  :mod:`dpmodels.core.tree_gls_dense` runs the same passes on matrices).
* :func:`upward_variances`, :func:`estimate_means` and :func:`posterior_variances` - the scalar
  problem on the tree, for every coordinate at once: upward, each region combines its own
  measurement with the sum of its children's subtree estimates by inverse variance (a Kalman
  filter); downward, the parent's final estimate minus the children's sum is split among the
  children in proportion to their subtree variances, and the variances follow the
  Rauch-Tung-Striebel recursion.  Each pass touches every region once (children are contiguous
  in the hierarchy's breadth-first order, so a level is a handful of numpy calls).

Exact facts enter as *fixed* coordinates (variance 0); a leaf must be fixed or measured in every
coordinate, else its histogram is not identified and the problem is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DataValidationError
from .hierarchy import Hierarchy

__all__ = [
    "TreeLevels",
    "common_basis",
    "floor_precisions",
    "upward_variances",
    "estimate_means",
    "posterior_variances",
]

#: Relative size below which an off-diagonal entry of ``V^T P V`` counts as zero (the basis check).
BASIS_TOLERANCE = 1e-8
#: Relative size below which a precision counts as zero (a coordinate left unmeasured).
PRECISION_FLOOR = 1e-12


@dataclass(frozen=True)
class TreeLevels:
    """Per level, the positions of its internal regions and where their children start in the next level."""

    hierarchy: Hierarchy

    def levels(self):
        """``(internal positions, reduceat offsets into the next level, next level's slice)`` per level."""
        h = self.hierarchy
        for level in range(1, h.n_levels + 1):
            sl = h.level_slice(level)
            nodes = np.arange(sl.start, sl.stop)
            internal = nodes[h.child_count[nodes] > 0]
            nxt = h.level_slice(level + 1) if level < h.n_levels else slice(sl.stop, sl.stop)
            yield internal, h.child_start[internal] - nxt.start, nxt

    def child_sums(self, values: np.ndarray, internal, offsets, nxt) -> np.ndarray:
        """For the ``internal`` regions of a level, the sums of their children's rows."""
        if len(internal) == 0:
            return np.zeros((0,) + values.shape[1:])
        return np.add.reduceat(values[nxt], offsets, axis=0)


def common_basis(precisions: list[np.ndarray], ones: np.ndarray | None = None):
    """An orthonormal basis ``V`` (columns) in which every matrix of ``precisions`` is diagonal.

    Parameters
    ----------
    precisions : list of numpy.ndarray
        The distinct symmetric precision matrices (active cells x active cells).
    ones : numpy.ndarray, optional
        The totals' direction: when it is an eigenvector of every precision, it becomes a basis
        vector too (``aligned``), so exact totals fix one coordinate.

    Returns
    -------
    tuple or None
        ``(V or None, diagonals, aligned)``: ``V`` None means the cells themselves; ``diagonals``
        the diagonal of each precision in the basis; ``aligned`` whether ``ones`` is a basis vector.
        None when the precisions share no eigenbasis (they do not commute).
    """
    if all(_is_diagonal(p) for p in precisions):
        return None, [np.diag(p).copy() for p in precisions], False
    aligned = ones is not None and all(_has_eigenvector(p, ones) for p in precisions)
    mats = [*precisions, np.outer(ones, ones) / len(ones)] if aligned else list(precisions)
    basis = _joint_eigenvectors(mats)
    if basis is None:
        return None
    return basis, [np.einsum("ij,ij->j", basis, p @ basis) for p in precisions], aligned


def _is_diagonal(matrix: np.ndarray) -> bool:
    return not np.any(matrix - np.diag(np.diag(matrix)))


def _has_eigenvector(matrix: np.ndarray, v: np.ndarray) -> bool:
    """Whether ``matrix @ v`` is a multiple of ``v`` (then ``matrix`` commutes with ``v v^T``)."""
    w = matrix @ v
    lam = float(v @ w) / float(v @ v)
    scale = max(float(np.abs(matrix).max()), 1e-300) * float(np.abs(v).max())
    return float(np.abs(w - lam * v).max()) <= BASIS_TOLERANCE * scale


def _joint_eigenvectors(mats: list[np.ndarray]) -> np.ndarray | None:
    """Eigenvectors of a generic combination of ``mats``, if they diagonalise every one (commuting
    symmetric matrices share an eigenbasis, and a generic combination separates their joint
    eigenspaces); None otherwise.  The combination's weights come from a fixed seed; one matrix
    is its own combination and needs no check."""
    if len(mats) == 1:
        return np.linalg.eigh(mats[0])[1]
    weights = np.random.default_rng(20100).uniform(1.0, 2.0, len(mats))
    scales = [max(float(np.abs(m).max()), 1e-300) for m in mats]
    combined = sum(w * m / s for w, m, s in zip(weights, mats, scales, strict=True))
    _, basis = np.linalg.eigh(combined)
    for m, s in zip(mats, scales, strict=True):
        rotated = basis.T @ (m @ basis)
        if np.abs(rotated - np.diag(np.diag(rotated))).max() > BASIS_TOLERANCE * s:
            return None
    return basis


def floor_precisions(lam: np.ndarray) -> np.ndarray:
    """``lam`` with entries below ``PRECISION_FLOOR`` times the largest set to 0 (rounding left in the
    basis change, not a measurement)."""
    return np.where(lam > PRECISION_FLOOR * max(float(lam.max(initial=0.0)), 1e-300), lam, 0.0)


def upward_variances(levels: TreeLevels, lam: np.ndarray, fixed: np.ndarray, names) -> tuple[np.ndarray, np.ndarray]:
    """The subtree variances ``S`` (regions x coordinates) and the children's summed variances ``C``.

    ``S_v`` is the variance of the estimate of region ``v`` from the measurements of its subtree
    alone: ``1 / lam`` at a leaf, ``1 / (lam_v + 1 / C_v)`` above, 0 where ``fixed``.

    Parameters
    ----------
    levels : TreeLevels
        The tree.
    lam : numpy.ndarray
        Each region's precision per coordinate (0: not measured; floored by :func:`floor_precisions`).
    fixed : numpy.ndarray
        Boolean, the coordinates known exactly.
    names : sequence of str
        Region names, for the refusal of a leaf that is not identified.
    """
    h = levels.hierarchy
    leaf_gap = h.is_leaf[:, None] & (lam == 0) & ~fixed
    if leaf_gap.any():
        region = names[int(np.flatnonzero(leaf_gap.any(axis=1))[0])]
        raise DataValidationError(
            "measurements",
            f"region {region!r} is a leaf whose measurements do not determine its histogram (a direction no query "
            "set measures there): the GLS estimate is not identified; measure the detailed histogram at every leaf",
        )
    S = np.zeros(lam.shape)
    C = np.zeros(lam.shape)
    with np.errstate(divide="ignore"):
        leaf_var = np.where(fixed | (lam == 0), 0.0, 1.0 / np.where(lam == 0, 1.0, lam))
    S[h.is_leaf] = leaf_var[h.is_leaf]
    for internal, offsets, nxt in reversed(list(levels.levels())):
        if len(internal) == 0:
            continue
        C[internal] = levels.child_sums(S, internal, offsets, nxt)
        c = C[internal]
        with np.errstate(divide="ignore"):
            var = 1.0 / (lam[internal] + 1.0 / np.where(c > 0, c, np.inf))
        S[internal] = np.where(fixed[internal] | (c == 0), 0.0, var)
    return S, C


def estimate_means(
    levels: TreeLevels, lam, b, fixed, fixed_values, S, C, names
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GLS estimate of every region and coordinate, for one or more information vectors.

    Parameters
    ----------
    levels : TreeLevels
        The tree.
    lam, fixed, S, C : numpy.ndarray
        As for :func:`upward_variances` (and its results).
    b : numpy.ndarray
        Information vectors ``sum_q A_q^T y / sigma^2`` in the basis: regions x coordinates x runs
        (the estimate is linear in ``b``; extra runs give covariance columns).
    fixed_values : numpy.ndarray
        The exact values where ``fixed`` (regions x coordinates x runs).
    names : sequence of str
        Region names, for the refusal of inconsistent exact totals.

    Returns
    -------
    tuple of numpy.ndarray
        ``(estimate, z, s)``: the final estimates, the subtree estimates and the children's sums.
    """
    h = levels.hierarchy
    fx = fixed[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        leaf = np.where(fx, fixed_values, b / lam[..., None])
    z = np.where(h.is_leaf[:, None, None], leaf, 0.0)
    s = np.zeros(b.shape)
    for internal, offsets, nxt in reversed(list(levels.levels())):
        if len(internal) == 0:
            continue
        s[internal] = levels.child_sums(z, internal, offsets, nxt)
        c = C[internal][..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            combined = S[internal][..., None] * (b[internal] + s[internal] / c)
        z[internal] = np.where(fx[internal], fixed_values[internal], np.where(c > 0, combined, s[internal]))
    _check_exact_sums(h, fixed, C, fixed_values, s, names)
    est = np.zeros(b.shape)
    est[0] = z[0]
    for internal, _offsets, nxt in levels.levels():
        if len(internal) == 0:
            continue
        kids = np.arange(nxt.start, nxt.stop)
        parent = h.parent[kids]
        gain = _gains(S[kids], C[parent])[..., None]
        est[kids] = z[kids] + gain * (est[parent] - s[parent])
    return est, z, s


def _gains(S_child: np.ndarray, C_parent: np.ndarray) -> np.ndarray:
    """``S_c / C_p``, the share of the parent's residual a child takes (0 where ``C_p`` is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(C_parent > 0, S_child / np.where(C_parent > 0, C_parent, 1.0), 0.0)


def _check_exact_sums(h: Hierarchy, fixed, C, fixed_values, s, names) -> None:
    """A region whose total is exact over children that are all exact must equal their sum."""
    clash = fixed & (C == 0) & ~h.is_leaf[:, None]
    if not clash.any():
        return
    gap = np.abs(fixed_values - s)[clash]
    scale = np.maximum(1.0, np.abs(fixed_values[clash]))
    if (gap > 1e-9 * scale).any():
        region = names[int(np.flatnonzero(clash.any(axis=1))[0])]
        raise DataValidationError("totals", f"region {region!r}'s exact total differs from the sum of its children's")


def posterior_variances(levels: TreeLevels, S: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The variance of every region's final estimate per coordinate (downward, from the root's ``S``).

    ``Var_c = S_c - S_c^2 / C_p + (S_c / C_p)^2 Var_p``: the child's subtree variance, less what the
    parent's residual explains, plus the parent's own uncertainty passed down.
    """
    h = levels.hierarchy
    var = np.zeros(S.shape)
    var[0] = S[0]
    for internal, _offsets, nxt in levels.levels():
        if len(internal) == 0:
            continue
        kids = np.arange(nxt.start, nxt.stop)
        parent = h.parent[kids]
        gain = _gains(S[kids], C[parent])
        var[kids] = np.maximum(S[kids] - S[kids] * gain + gain**2 * var[parent], 0.0)
    return var
