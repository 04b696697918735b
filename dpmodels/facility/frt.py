"""The FRT-λ embedding of a metric into an HST, and its measured stretch (spec 2.2, 7.1).

:func:`frt_embedding` is the randomized FRT construction of spec 2.2 adapted to Definition 3's
weights: scaled so that the minimum distance is 1, ``β = λ^{-U}``, a uniform permutation π of all
locations, open balls of radius ``β g_i`` ("tight", default) or ``β λ^{i-1}`` ("geometric"), unary
chains kept, node ids in creation order.  It never shrinks a distance (``d_T >= d`` with
probability 1).  It works from a distance matrix or, for large point sets, from coordinates through
KD-trees (same tree for the same seed).

:func:`stretch_ratios`, :func:`measured_stretch` and :func:`distortion_bound` measure the
distortion against the (18b) bound (spec 7.1 oracle 4).  The tree is data independent: the
general-metric pipeline (:mod:`.general_metric`) runs the mechanism on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .checks import check_lambda
from .data import HST
from .hst import leaf_distances

__all__ = [
    "RADIUS_MODES",
    "Embedding",
    "frt_embedding",
    "stretch_ratios",
    "measured_stretch",
    "distortion_bound",
]

RADIUS_MODES = ("tight", "geometric")


@dataclass
class Embedding:
    """An FRT-λ tree over the locations, with the scale ``s = d_min`` (original distance = ``s * d_T``)."""

    tree: HST
    scale: float
    beta: float
    perm: np.ndarray
    radius_mode: str
    diameter: float

    def distances(self) -> np.ndarray:
        """Tree distances between locations in the original units (``s * d_T``)."""
        return self.scale * leaf_distances(self.tree)


def distortion_bound(lam: float, n: int, radius_mode: str = "tight") -> float:
    """Spec 2.2's explicit (18b) constant times ``H_n``: the expected stretch of any pair is at most this."""
    h_n = sum(1.0 / k for k in range(1, n + 1))
    if radius_mode == "tight":
        return 2 * lam * (lam + 1) / math.log(lam) * h_n
    return 2 * lam**3 / ((lam - 1) * math.log(lam)) * h_n


def _depth(delta: float, lam: float, radius_mode: str) -> int:
    if radius_mode == "tight":
        L = 1
        while 2 * (lam**L - 1) / (lam - 1) < delta:
            L += 1
        return L
    k = 0
    while lam**k < delta:
        k += 1
    return max(1, k + 1)


def _radius(i: int, beta: float, lam: float, radius_mode: str) -> float:
    return beta * (lam**i - 1) / (lam - 1) if radius_mode == "tight" else beta * lam ** (i - 1)


def _first_center_dense(dprime: np.ndarray, perm: np.ndarray, r: float, block: int = 2048) -> np.ndarray:
    """For every x, the π-rank of the first centre w with ``d'(w, x) < r``."""
    n = dprime.shape[0]
    out = np.empty(n, dtype=np.int64)
    rows = dprime[perm]
    for s in range(0, n, block):
        hit = rows[:, s : s + block] < r
        out[s : s + block] = hit.argmax(axis=0)
    return out


def _first_center_points(pts: np.ndarray, perm: np.ndarray, r: float) -> np.ndarray:
    """Same as the dense version, with KD-trees over growing prefixes of π (for large point sets)."""
    from scipy.spatial import cKDTree

    n = pts.shape[0]
    radius = np.nextafter(r, 0.0)  # the closed ball of the next float below r is the open ball of radius r
    out = np.full(n, -1, dtype=np.int64)
    todo = np.arange(n)
    start, size = 0, 16
    while todo.size:
        stop = n if size >= 4096 else min(n, start + size)
        kd = cKDTree(pts[perm[start:stop]])
        near, _ = kd.query(pts[todo], k=1, distance_upper_bound=r)  # strict: inf unless a centre is at < r
        hit = np.isfinite(near)
        if hit.any():
            found = kd.query_ball_point(pts[todo[hit]], radius)
            out[todo[hit]] = start + np.fromiter((min(lst) for lst in found), dtype=np.int64, count=int(hit.sum()))
        todo = todo[~hit]
        start, size = stop, size * 2
        if start >= n and todo.size:
            raise RuntimeError("FRT: a point is in no ball (internal error)")
    return out


def _diameter_points(pts: np.ndarray) -> float:
    from scipy.spatial.distance import pdist

    if pts.shape[0] <= 3000:
        return float(pdist(pts).max()) if pts.shape[0] > 1 else 0.0
    if pts.shape[1] <= 3:
        from scipy.spatial import ConvexHull

        try:
            hull = pts[ConvexHull(pts).vertices]
            return float(pdist(hull).max())
        except Exception:  # degenerate (collinear) sets: fall through to the exact scan
            pass
    best = 0.0
    from scipy.spatial.distance import cdist

    for s in range(0, pts.shape[0], 2048):
        best = max(best, float(cdist(pts[s : s + 2048], pts).max()))
    return best


def frt_embedding(
    d: np.ndarray | None = None,
    *,
    points: np.ndarray | None = None,
    lam: float = 1.5,
    radius_mode: str = "tight",
    rng=None,
    beta: float | None = None,
    perm=None,
) -> Embedding:
    """Spec 2.2's FRT-λ tree of a metric (``d``) or of Euclidean ``points``; seeded by ``rng``.

    ``beta``/``perm`` override the random draws (for worked examples); otherwise ``U ~ U[0,1)``,
    ``β = λ^{-U}`` and π are drawn from ``rng`` in that order.  Distinct locations at distance 0
    are rejected (merge them first: :meth:`UFLInstance.merged`).

    Parameters
    ----------
    d : numpy.ndarray, optional
        An ``n x n`` metric (give ``d`` or ``points``).
    points : numpy.ndarray, optional
        Euclidean points, one row per location.
    lam : float, default 1.5
        λ in (1, 2).
    radius_mode : {"tight", "geometric"}, default "tight"
        The radii of the levels.
    rng : None, int or numpy.random.Generator, optional
        The draw of ``β`` and π.
    beta : float, optional
        A fixed ``β`` in ``(1/λ, 1]``.
    perm : sequence of int, optional
        A fixed permutation π.

    Returns
    -------
    Embedding
    """
    lam = check_lambda(lam)
    if radius_mode not in RADIUS_MODES:
        raise DataValidationError("radius_mode", f"must be one of {RADIUS_MODES}, got {radius_mode!r}")
    if (d is None) == (points is None):
        raise DataValidationError("d", "give exactly one of d or points")
    if points is not None:
        pts = np.asarray(points, dtype=np.float64)
        pts = pts[:, None] if pts.ndim == 1 else pts
        n = pts.shape[0]
        if n >= 2:
            from scipy.spatial import cKDTree

            nn = cKDTree(pts).query(pts, k=2)[0][:, 1]
            s = float(nn.min())
        else:
            s = 1.0
        dmax = _diameter_points(pts)
    else:
        dmat = np.asarray(d, dtype=np.float64)
        n = dmat.shape[0]
        off = dmat[~np.eye(n, dtype=bool)]
        s = float(off.min()) if n >= 2 else 1.0
        dmax = float(off.max()) if n >= 2 else 0.0
    if n >= 2 and s <= 0:
        raise DataValidationError("d", "distinct locations at distance 0: merge them first (UFLInstance.merged())")
    rng = make_rng(rng)
    u = rng.random()
    beta = lam ** (-u) if beta is None else float(beta)
    perm = rng.permutation(n) if perm is None else np.asarray(perm, dtype=np.int64)
    if not (1 / lam < beta <= 1):
        raise DataValidationError("beta", f"must lie in (1/λ, 1], got {beta}")
    if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
        raise DataValidationError("perm", f"must be a permutation of 0..{n - 1}")
    L = _depth(dmax / s, lam, radius_mode)
    rank = np.empty(n, dtype=np.int64)
    rank[perm] = np.arange(n)
    parents, levels = [np.array([-1])], [np.array([L])]
    cluster = np.zeros(n, dtype=np.int64)  # level-L cluster of every location: the root, id 0
    next_id = 1
    for i in range(L - 1, -1, -1):
        if i == 0:
            first = rank  # level 0 is built explicitly as singletons
        elif points is not None:
            first = _first_center_points(pts / s, perm, _radius(i, beta, lam, radius_mode))
        else:
            first = _first_center_dense(dmat / s, perm, _radius(i, beta, lam, radius_mode))
        key = cluster * n + first
        uniq, inv = np.unique(key, return_inverse=True)
        parents.append(uniq // n)
        levels.append(np.full(uniq.size, i))
        cluster = next_id + inv.reshape(-1)
        next_id += uniq.size
    tree = HST(np.concatenate(parents), np.concatenate(levels), lam, cluster)
    return Embedding(tree, s, beta, perm, radius_mode, dmax)


def stretch_ratios(emb: Embedding, d: np.ndarray) -> np.ndarray:
    """``d_T(u,v) / d(u,v)`` (original units) over the pairs u < v."""
    iu = np.triu_indices(emb.tree.n, 1)
    return emb.distances()[iu] / np.asarray(d)[iu]


def measured_stretch(d: np.ndarray, lam: float = 1.5, radius_mode: str = "tight", trees: int = 100, seed=0) -> dict:
    """Mean stretch per pair over ``trees`` independent embeddings (spec 7.1 oracle 4).

    Returns the mean over pairs of the per-pair mean, its max over pairs, the smallest single
    ratio seen (>= 1 by domination) and the (18b) bound ``C_dist H_n``.

    Parameters
    ----------
    d : numpy.ndarray
        An ``n x n`` metric.
    lam : float, default 1.5
        λ in (1, 2).
    radius_mode : {"tight", "geometric"}, default "tight"
        The radii of the levels.
    trees : int, default 100
        Independent embeddings.
    seed : int, default 0
        Seeds the trees.

    Returns
    -------
    dict
    """
    rng = make_rng(seed)
    total = None
    smallest = np.inf
    for _ in range(trees):
        r = stretch_ratios(frt_embedding(d, lam=lam, radius_mode=radius_mode, rng=rng), d)
        total = r if total is None else total + r
        smallest = min(smallest, float(r.min()))
    per_pair = total / trees
    n = np.asarray(d).shape[0]
    return {
        "mean": float(per_pair.mean()),
        "max_pair_mean": float(per_pair.max()),
        "min_ratio": smallest,
        "bound": distortion_bound(lam, n, radius_mode),
        "trees": trees,
    }
