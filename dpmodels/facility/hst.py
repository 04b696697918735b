"""HST toolkit and the FRT-λ embedding (spec 2.1-2.2, 3.1-3.2, 3.5, 5.3-5.4).

Toolkit on an :class:`~dpmodels.facility.data.HST`: subtree counts, LCA and the closed-form tree
distances, ``minset``, padding with unary roots, representative leaves, the nearest member of a
site set R in the tree metric (two linear passes, ties by node id), the Claim-9 bound LB9 and the
exact leaf-only optimum by dynamic programming.

:func:`frt_embedding` is the randomized FRT construction of spec 2.2 adapted to Definition 3's
weights: scaled so that the minimum distance is 1, ``β = λ^{-U}``, a uniform permutation π of all
locations, open balls of radius ``β g_i`` ("tight", default) or ``β λ^{i-1}`` ("geometric"), unary
chains kept, node ids in creation order.  It never shrinks a distance (``d_T >= d`` with
probability 1).  It works from a distance matrix or, for large point sets, from coordinates through
KD-trees (same tree for the same seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .data import HST, HSTInstance, check_lambda

__all__ = [
    "subtree_counts",
    "lca",
    "node_distance",
    "leaf_distances",
    "minset",
    "is_antichain",
    "pad",
    "rep",
    "nearest_in",
    "nearest_in_naive",
    "tree_cost",
    "lb9",
    "TreeDPResult",
    "tree_dp",
    "Embedding",
    "frt_embedding",
    "stretch_ratios",
    "measured_stretch",
    "distortion_bound",
    "RADIUS_MODES",
]

RADIUS_MODES = ("tight", "geometric")
#: Relative tolerance of distance ties in the closest-facility rule (spec 3.5, A3).
TIE_TOL = 1e-9
_BIG = np.iinfo(np.int64).max


# ------------------------------------------------------------------------------------------ basics
def subtree_counts(tree: HST, N) -> np.ndarray:
    """``N_u`` for every node: the clients at the leaves below u (leaf counts in location order)."""
    out = np.zeros(tree.n_nodes, dtype=np.int64)
    out[tree.leaf_node] = np.asarray(N, dtype=np.int64)
    for lvl in range(tree.L):
        nodes = tree.by_level[lvl]
        np.add.at(out, tree.parent[nodes], out[nodes])
    return out


def lca(tree: HST, x, y) -> np.ndarray:
    """Lowest common ancestor of node arrays ``x`` and ``y`` (elementwise)."""
    x = np.array(x, dtype=np.int64, ndmin=1)
    y = np.array(y, dtype=np.int64, ndmin=1)
    x, y = np.broadcast_arrays(x, y)
    x, y = x.copy(), y.copy()
    lv = tree.level
    for _ in range(tree.L + 1):
        lower_x = lv[x] < lv[y]
        lower_y = lv[y] < lv[x]
        x = np.where(lower_x, tree.parent[x], x)
        y = np.where(lower_y, tree.parent[y], y)
        same_level_diff = (lv[x] == lv[y]) & (x != y)
        x = np.where(same_level_diff, tree.parent[x], x)
        y = np.where(same_level_diff, tree.parent[y], y)
        if np.all(x == y):
            break
    return x


def node_distance(tree: HST, x, y) -> np.ndarray:
    """``d_T(x, y) = (2 λ^ℓ(w) - λ^ℓ(x) - λ^ℓ(y)) / (λ - 1)`` with w = LCA (spec 2.1 closed form)."""
    w = lca(tree, x, y)
    lam = tree.lam
    lv = tree.level.astype(float)
    x = np.broadcast_to(np.asarray(x), w.shape)
    y = np.broadcast_to(np.asarray(y), w.shape)
    return (2 * lam ** lv[w] - lam ** lv[x] - lam ** lv[y]) / (lam - 1)


def leaf_distances(tree: HST) -> np.ndarray:
    """The ``n x n`` matrix of ``d_T`` between locations: ``2 g_j`` with j the level of their LCA."""
    anc = tree.ancestors
    j = np.full((tree.n, tree.n), tree.L, dtype=np.int64)
    for lvl in range(tree.L, -1, -1):
        j[anc[lvl][:, None] == anc[lvl][None, :]] = lvl
    return 2 * tree.g(j)


def minset(tree: HST, mask) -> np.ndarray:
    """Definition 8: the members of M with no proper descendant in M (boolean mask over nodes)."""
    mask = np.asarray(mask, dtype=bool)
    below = np.zeros(tree.n_nodes, dtype=bool)
    for lvl in range(tree.L):
        nodes = tree.by_level[lvl]
        hit = nodes[mask[nodes] | below[nodes]]
        below[tree.parent[hit]] = True
    return mask & ~below


def is_antichain(tree: HST, nodes) -> bool:
    """No member of ``nodes`` is a proper ancestor of another."""
    inside = np.zeros(tree.n_nodes, dtype=bool)
    inside[np.asarray(nodes, dtype=np.int64)] = True
    for u in np.flatnonzero(inside):
        p = tree.parent[u]
        while p >= 0:
            if inside[p]:
                return False
            p = tree.parent[p]
    return True


def pad(tree: HST, depth: int) -> HST:
    """Footnote 1: add unary roots until ``L >= depth``; old ids and every leaf distance are kept."""
    extra = int(depth) - tree.L
    if extra <= 0:
        return tree
    m = tree.n_nodes
    parent = np.concatenate([tree.parent, np.arange(m + 1, m + extra + 1)])
    parent[tree.root] = m
    parent[-1] = -1
    level = np.concatenate([tree.level, np.arange(tree.L + 1, tree.L + extra + 1)])
    return HST(parent, level, tree.lam, tree.leaf_node)


def rep(tree: HST) -> np.ndarray:
    """Spec 3.2: the data-independent representative leaf of every node, the smallest leaf id below it."""
    out = np.full(tree.n_nodes, _BIG, dtype=np.int64)
    out[tree.leaf_node] = tree.leaf_node
    for lvl in range(tree.L):
        nodes = tree.by_level[lvl]
        np.minimum.at(out, tree.parent[nodes], out[nodes])
    return out


def _tie_better(d_new, id_new, d_old, id_old) -> np.ndarray:
    """Lexicographic (distance within relative TIE_TOL, then id): is the new candidate better?"""
    with np.errstate(invalid="ignore"):
        scale = np.maximum(np.maximum(np.abs(d_new), np.abs(d_old)), 1.0)
        scale = np.where(np.isfinite(scale), scale, 1.0)
        close = np.abs(d_new - d_old) <= TIE_TOL * scale
        close |= np.isinf(d_new) & np.isinf(d_old)
    return np.where(close, id_new < id_old, d_new < d_old)


def nearest_in(tree: HST, sites) -> tuple[np.ndarray, np.ndarray]:
    """For every node, its nearest member of ``sites`` in ``d_T`` (ties by node id) and the distance.

    Spec 3.5's O(|V_T|) version: a bottom-up pass (nearest site below) and a top-down pass.
    ``sites`` is a boolean node mask or node ids; returns ``(site_id, distance)`` arrays over nodes.
    """
    mask = np.zeros(tree.n_nodes, dtype=bool)
    sites = np.asarray(sites)
    mask[sites if sites.dtype != bool else np.flatnonzero(sites)] = True
    if not mask.any():
        raise DataValidationError("sites", "the site set R is empty: no client can be served")
    dist = np.where(mask, 0.0, np.inf)
    ident = np.where(mask, np.arange(tree.n_nodes), _BIG)
    lam = tree.lam
    for lvl in range(1, tree.L + 1):
        kids = tree.by_level[lvl - 1]
        par = tree.parent[kids]
        cand = lam ** (lvl - 1) + dist[kids]
        gmin = np.full(tree.n_nodes, np.inf)
        np.minimum.at(gmin, par, cand)
        scale = np.maximum(np.where(np.isfinite(gmin[par]), gmin[par], 1.0), 1.0)
        elig = (cand <= gmin[par] + TIE_TOL * scale) & np.isfinite(cand)
        gid = np.full(tree.n_nodes, _BIG, dtype=np.int64)
        np.minimum.at(gid, par[elig], ident[kids][elig])
        nodes = tree.by_level[lvl]
        open_ = ~mask[nodes]
        dist[nodes[open_]] = gmin[nodes[open_]]
        ident[nodes[open_]] = gid[nodes[open_]]
    for lvl in range(tree.L - 1, -1, -1):
        nodes = tree.by_level[lvl]
        par = tree.parent[nodes]
        up_d = lam**lvl + dist[par]
        up_id = ident[par]
        better = _tie_better(up_d, up_id, dist[nodes], ident[nodes])
        dist[nodes] = np.where(better, up_d, dist[nodes])
        ident[nodes] = np.where(better, up_id, ident[nodes])
    return ident, dist


def nearest_in_naive(tree: HST, sites) -> tuple[np.ndarray, np.ndarray]:
    """The naive O(n |R| L) closest-facility rule for the locations (test oracle of :func:`nearest_in`)."""
    sites = np.asarray(sites)
    ids = np.flatnonzero(sites) if sites.dtype == bool else np.sort(sites.astype(np.int64))
    out_id = np.empty(tree.n, dtype=np.int64)
    out_d = np.empty(tree.n)
    for k, leaf in enumerate(tree.leaf_node):
        d = node_distance(tree, np.full(ids.size, leaf), ids)
        best = d.min()
        tied = ids[d <= best + TIE_TOL * max(best, 1.0)]
        out_id[k] = tied.min()
        out_d[k] = d[ids == out_id[k]][0]
    return out_id, out_d


def tree_cost(tree: HST, f: float, N, site_nodes) -> float:
    """``|S| f + sum_v N_v d_T(v, S)`` for facilities at tree nodes ``S`` (clients use their nearest one)."""
    N = np.asarray(N, dtype=np.int64)
    site_nodes = np.unique(np.asarray(site_nodes, dtype=np.int64))
    if not np.any(N > 0):
        return f * site_nodes.size
    _, dist = nearest_in(tree, site_nodes)
    served = N > 0
    return f * site_nodes.size + float((N[served] * dist[tree.leaf_node][served]).sum())


# ------------------------------------------------------------------------------------------ bounds
def lb9(tree: HST, f: float, N) -> tuple[float, np.ndarray]:
    """Claim 9's best bound: ``max_{antichain A} sum_{u in A} B_u`` with ``B_u = min(f, N_u λ^ℓ(u))``.

    The recursion of spec 5.4 (``A(u) = max(B_u, sum_children A(w))``); returns the value and an
    optimal antichain (node ids).
    """
    counts = subtree_counts(tree, N).astype(float)
    B = np.minimum(f, counts * tree.lam ** tree.level.astype(float))
    A = B.copy()
    child_sum = np.zeros(tree.n_nodes)
    for lvl in range(tree.L):
        nodes = tree.by_level[lvl]
        np.add.at(child_sum, tree.parent[nodes], A[nodes])
        up = tree.by_level[lvl + 1]
        A[up] = np.maximum(B[up], child_sum[up])
    take_self = B >= child_sum  # leaves: child_sum 0 <= B
    chosen = []
    stack = [tree.root]
    children = _children(tree)
    while stack:
        u = stack.pop()
        if take_self[u] or tree.level[u] == 0:
            if B[u] > 0:
                chosen.append(u)
        else:
            stack.extend(children[u])
    return float(A[tree.root]), np.sort(np.asarray(chosen, dtype=np.int64))


def _children(tree: HST) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in range(tree.n_nodes)]
    for u, p in enumerate(tree.parent.tolist()):
        if p >= 0:
            kids[p].append(u)
    return kids


@dataclass
class TreeDPResult:
    """Exact leaf-only optimum: the value and the open locations (leaf node ids and location indices)."""

    objective: float
    site_nodes: np.ndarray
    locations: np.ndarray
    info: dict = field(default_factory=dict)


def tree_dp(instance: HSTInstance) -> TreeDPResult:
    """Spec 5.3: the exact leaf-only UFL optimum on an HST in ``O(sum_u |C_u| L)``, with the open set.

    ``H_u(j)``: min cost inside ``T_u`` given a facility in ``T_u`` and the nearest outside facility
    reached at level j (``j = L+1`` stands for none); ``E_u(j) = N_u D(j)`` with ``D(j) = 2 g_j``.
    """
    tree, f = instance.tree, instance.f
    L, m = tree.L, tree.n_nodes
    counts = subtree_counts(tree, instance.N).astype(float)
    if counts[tree.root] == 0:
        return TreeDPResult(0.0, np.empty(0, np.int64), np.empty(0, np.int64), {"levels": L})
    D = np.append(2 * tree.g(np.arange(L + 1)), np.inf)  # index L+1 = no facility outside

    def E(nodes, j):
        n = counts[nodes]
        return np.where(n > 0, n * D[j], 0.0)

    H = np.full((m, L + 2), np.inf)
    H[tree.leaf_node] = f
    choice = np.full((m, L + 2), -1, dtype=np.int64)  # option 1: the child with facilities; -2: option 2
    pick2 = np.full((m, 2), -1, dtype=np.int64)
    for lvl in range(1, L + 1):
        kids = tree.by_level[lvl - 1]
        par = tree.parent[kids]
        e_here = E(kids, lvl)
        sum_e = np.zeros(m)
        np.add.at(sum_e, par, e_here)
        cand = H[kids] - e_here[:, None]  # option 1 per child, before adding sum_e of the parent
        best = np.full((m, L + 2), np.inf)
        np.minimum.at(best, par, cand)
        # argmin child per (parent, j): smallest child id among exact minimisers
        is_min = cand == best[par]
        arg = np.full((m, L + 2), _BIG, dtype=np.int64)
        rows, cols = np.nonzero(is_min)
        np.minimum.at(arg, (par[rows], cols), kids[rows])
        nodes = tree.by_level[lvl]
        H[nodes] = best[nodes] + sum_e[nodes, None]
        choice[nodes] = arg[nodes]
        # option 2: at least two children with facilities
        Fw = np.minimum(e_here, H[kids, lvl])
        delta = H[kids, lvl] - Fw
        sum_f = np.zeros(m)
        np.add.at(sum_f, par, Fw)
        order = np.lexsort((kids, delta, par))
        p_sorted = par[order]
        first = np.ones(order.size, dtype=bool)
        first[1:] = p_sorted[1:] != p_sorted[:-1]
        start = np.flatnonzero(first)
        size = np.diff(np.append(start, order.size))
        two = start[size >= 2]
        pp = p_sorted[two]
        opt2 = sum_f[pp] + delta[order[two]] + delta[order[two + 1]]
        pick2[pp, 0] = kids[order[two]]
        pick2[pp, 1] = kids[order[two + 1]]
        better = opt2[:, None] < H[pp]
        H[pp] = np.where(better, opt2[:, None], H[pp])
        choice[pp] = np.where(better, -2, choice[pp])
    objective = float(H[tree.root, L + 1])
    sites = _dp_sites(tree, counts, D, H, choice, pick2)
    return TreeDPResult(objective, sites, tree.location_of[sites], {"levels": L})


def _dp_sites(tree, counts, D, H, choice, pick2) -> np.ndarray:
    """Walk the DP's choices down from the root: the leaves that open."""
    children = _children(tree)
    open_leaves = []
    stack = [(tree.root, tree.L + 1)]
    while stack:
        u, j = stack.pop()
        lvl = tree.level[u]
        if lvl == 0:
            open_leaves.append(u)
            continue
        c = choice[u, j]
        if c >= 0:
            stack.append((c, j))
            continue
        first, second = pick2[u]
        for w in children[u]:
            e = counts[w] * D[lvl] if counts[w] > 0 else 0.0
            if w in (first, second) or H[w, lvl] <= e:
                stack.append((w, lvl))
    return np.sort(np.asarray(open_leaves, dtype=np.int64))


# ------------------------------------------------------------------------------------------ FRT
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
