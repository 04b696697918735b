"""HST toolkit (spec 2.1, 3.1-3.2, 3.5): the operations on an HST that everything else builds on.

On an :class:`~dpmodels.facility.data.HST`: subtree counts, LCA and the closed-form tree
distances, ``minset``, padding with unary roots, representative leaves, the nearest member of a
site set R in the tree metric (two linear passes, ties by node id) and the cost of a site set.
The mechanism, the Pyomo models and the algorithms below all use these.

Beside it: :mod:`.hst_optimum` (the Claim-9 bound LB9 and the exact leaf-only optimum by dynamic
programming) and :mod:`.frt` (the FRT-λ embedding of a metric into an HST, and its stretch).
"""

from __future__ import annotations

import numpy as np

from dpmodels.core.errors import DataValidationError

from .data import HST

__all__ = [
    "NO_NODE",
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
]

#: Relative tolerance of distance ties in the closest-facility rule (spec 3.5, A3).
TIE_TOL = 1e-9
#: A node id above every real one: where a minimum over node ids starts (and "no node" if it stays).
NO_NODE = np.iinfo(np.int64).max


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
    out = np.full(tree.n_nodes, NO_NODE, dtype=np.int64)
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
    ident = np.where(mask, np.arange(tree.n_nodes), NO_NODE)
    lam = tree.lam
    for lvl in range(1, tree.L + 1):
        kids = tree.by_level[lvl - 1]
        par = tree.parent[kids]
        cand = lam ** (lvl - 1) + dist[kids]
        gmin = np.full(tree.n_nodes, np.inf)
        np.minimum.at(gmin, par, cand)
        scale = np.maximum(np.where(np.isfinite(gmin[par]), gmin[par], 1.0), 1.0)
        elig = (cand <= gmin[par] + TIE_TOL * scale) & np.isfinite(cand)
        gid = np.full(tree.n_nodes, NO_NODE, dtype=np.int64)
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
