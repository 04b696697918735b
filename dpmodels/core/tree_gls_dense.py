"""The tree GLS passes on whole precision matrices, for measurements that share no eigenbasis.

:mod:`dpmodels.core.tree_gls_passes` runs the two passes on scalars, in a basis that diagonalises
every region's precision matrix.  When no such basis exists (structural zeros, or query sets that
are not marginals, together with variance ratios that differ from region to region), the same
recursions hold with matrices: upward ``S_v = (P_v + C_v^{-1})^{-1}`` and
``z_v = S_v (b_v + C_v^{-1} s_v)`` with ``C_v`` and ``s_v`` the sums of the children's ``S`` and
``z``; downward the gain ``G_c = S_c C_p^{-1}``, ``x_c = z_c + G_c (x_p - s_p)`` and
``V_c = S_c - G_c S_c + G_c V_p G_c^T``.  Each level is one batch of numpy linear algebra; the cost
is ``O(regions x cells^3)`` and the memory ``O(regions x cells^2)``, so the route is capped
(:data:`MAX_DENSE_ENTRIES`).
"""

from __future__ import annotations

import numpy as np

from .errors import DataValidationError
from .tree_gls_passes import TreeLevels

__all__ = ["MAX_DENSE_ENTRIES", "dense_passes"]

#: Largest ``regions x cells^2`` of the matrix route (its covariance matrices, 8 bytes each).
MAX_DENSE_ENTRIES = 60_000_000


def dense_passes(levels: TreeLevels, precisions, pattern, information: np.ndarray, names):
    """The GLS estimate (regions x cells x runs), cell variances and total variances, by matrix passes.

    Parameters
    ----------
    levels : TreeLevels
        The tree.
    precisions : list of numpy.ndarray
        The distinct precision matrices (cells x cells); ``pattern[v]`` is region ``v``'s.
    pattern : numpy.ndarray
        Each region's precision, by position in ``precisions``.
    information : numpy.ndarray
        Regions x cells x runs: the information vectors (the estimate is linear in them).
    names : sequence of str
        Region names, for the refusal of a leaf that is not identified.
    """
    h = levels.hierarchy
    n, d = information.shape[:2]
    if n * d * d > MAX_DENSE_ENTRIES:
        raise DataValidationError(
            "measurements",
            f"the regions' precisions share no eigenbasis and the matrix route needs {n * d * d:,} entries (more than "
            f"{MAX_DENSE_ENTRIES:,}); measure every region with the same ratios of query-set variances",
        )
    P = np.stack(precisions)
    S, C, Cinv = np.zeros((n, d, d)), np.zeros((n, d, d)), np.zeros((n, d, d))
    z, s = np.zeros(information.shape), np.zeros(information.shape)
    leaves = h.leaves
    S[leaves] = _leaf_covariances(P, pattern, leaves, names)
    z[leaves] = S[leaves] @ information[leaves]
    for internal, offsets, nxt in reversed(list(levels.levels())):
        if len(internal) == 0:
            continue
        C[internal] = np.add.reduceat(S[nxt], offsets, axis=0)
        s[internal] = np.add.reduceat(z[nxt], offsets, axis=0)
        Cinv[internal] = np.linalg.inv(C[internal])
        S[internal] = _symmetric(np.linalg.inv(P[pattern[internal]] + Cinv[internal]))
        z[internal] = S[internal] @ (information[internal] + Cinv[internal] @ s[internal])
    est, V = np.zeros(information.shape), np.zeros((n, d, d))
    est[0], V[0] = z[0], S[0]
    for internal, _offsets, nxt in levels.levels():
        if len(internal) == 0:
            continue
        kids = np.arange(nxt.start, nxt.stop)
        parent = h.parent[kids]
        gain = S[kids] @ Cinv[parent]
        est[kids] = z[kids] + gain @ (est[parent] - s[parent])
        V[kids] = _symmetric(S[kids] - gain @ S[kids] + gain @ V[parent] @ gain.transpose(0, 2, 1))
    cell_var = np.maximum(np.diagonal(V, axis1=1, axis2=2), 0.0)
    total_var = np.maximum(V.sum(axis=(1, 2)), 0.0)
    return est, cell_var, total_var


def _leaf_covariances(P: np.ndarray, pattern, leaves, names) -> np.ndarray:
    """``P^{-1}`` of every leaf's precision (one inverse per distinct precision); a singular one is refused."""
    out = np.zeros((len(leaves),) + P.shape[1:])
    for k in np.unique(pattern[leaves]):
        rows = pattern[leaves] == k
        eig = np.linalg.eigvalsh(P[k])
        if eig.min() <= 1e-12 * max(float(eig.max()), 1e-300):
            region = names[int(leaves[np.flatnonzero(rows)[0]])]
            raise DataValidationError(
                "measurements",
                f"region {region!r} is a leaf whose measurements do not determine its histogram: the GLS "
                "estimate is not identified; measure the detailed histogram at every leaf",
            )
        out[rows] = np.linalg.inv(P[k])
    return out


def _symmetric(m: np.ndarray) -> np.ndarray:
    return (m + m.transpose(0, 2, 1)) / 2
