"""Optima and bounds of uniform facility location on an HST (spec 5.3-5.4).

* :func:`lb9` - Claim 9's best lower bound ``max_{antichain A} sum_{u in A} min(f, N_u λ^ℓ(u))``,
  by the recursion of spec 5.4, with an optimal antichain;
* :func:`tree_dp` - the exact leaf-only optimum by dynamic programming in ``O(sum_u |C_u| L)``,
  with the open set (the ``facility_tree_dp`` plugin adapts it to Pyomo).

The references the mechanism's cost is measured against (comparisons, benchmarks, tests); the
same quantities as the LB9 LP and the tree model of :mod:`.models`, computed directly on the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .data import HST, HSTInstance
from .hst import NO_NODE, subtree_counts

__all__ = ["lb9", "TreeDPResult", "tree_dp"]


def lb9(tree: HST, f: float, N) -> tuple[float, np.ndarray]:
    """Claim 9's best bound: ``max_{antichain A} sum_{u in A} B_u`` with ``B_u = min(f, N_u λ^ℓ(u))``.

    The recursion of spec 5.4 (``A(u) = max(B_u, sum_children A(w))``); returns the value and an
    optimal antichain (node ids).

    Parameters
    ----------
    tree : HST
        The tree.
    f : float
        The facility cost.
    N : array_like
        The client count of every location.

    Returns
    -------
    tuple
        ``(value, antichain)``.
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

    Parameters
    ----------
    instance : HSTInstance
        The tree, the facility cost ``f`` and the client counts ``N`` (private).

    Returns
    -------
    TreeDPResult
        The optimum and the open locations.
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
        arg = np.full((m, L + 2), NO_NODE, dtype=np.int64)
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
