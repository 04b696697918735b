"""Compiled (numba) kernels of the PGSR dynamic programs.

Profiling showed these loops are the whole cost of the PGSR algorithms (the DP merge walks one
domain value at a time with a heap over the children; the chain DP walks every domain
value of 10^6+ chain nodes), so they are compiled; everything around them is numpy.

Conventions: regions are in the hierarchy's canonical breadth-first order (children of a
region are contiguous and have larger positions), sizes are 0-based columns, domains are
integer intervals ``[lo, hi]`` already reduced by interval propagation so that every
value of a node's interval is reachable by its children.

Weights: every cost is ``w (v - noisy)^2`` with the cell's weight ``w`` (ones when the values are
unweighted: multiplying by 1.0 is exact, so the paper's unweighted costs come out bit for bit).
A cell's weight does not move its own integer argmin, ``ceil(noisy - 1/2)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---------------------------------------------------------------------------- heap
# A binary min-heap of (key, id) pairs held in two arrays; ties on key go to the smaller
# id (the first child in the given order), which makes every result deterministic.


@njit(cache=True, inline="always")
def _less(keys, ids, a, b):
    return keys[a] < keys[b] or (keys[a] == keys[b] and ids[a] < ids[b])


@njit(cache=True)
def _heap_push(keys, ids, size, key, ident):
    i = size
    keys[i] = key
    ids[i] = ident
    while i > 0:
        parent = (i - 1) >> 1
        if _less(keys, ids, i, parent):
            keys[i], keys[parent] = keys[parent], keys[i]
            ids[i], ids[parent] = ids[parent], ids[i]
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _heap_pop(keys, ids, size):
    key = keys[0]
    ident = ids[0]
    size -= 1
    keys[0] = keys[size]
    ids[0] = ids[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        best = left
        if left + 1 < size and _less(keys, ids, left + 1, left):
            best = left + 1
        if _less(keys, ids, best, i):
            keys[i], keys[best] = keys[best], keys[i]
            ids[i], ids[best] = ids[best], ids[i]
            i = best
        else:
            break
    return key, ident, size


# ---------------------------------------------------------------------------- tables
# ``state = (is_leaf, noisy, lo, hi, offset, tables, argmin, weights)`` bundles the DP tables: an
# internal node's table lives in ``tables[offset[r, s] : offset[r, s] + hi - lo + 1]``, a
# leaf's is the closed form ``w (v - noisy)^2`` and is never stored.


@njit(cache=True, inline="always")
def _tau(state, r, s, v):
    """Cost table value tau_s^r(v)."""
    is_leaf, noisy, lo, hi, offset, tables, argmin, weights = state
    if is_leaf[r]:
        d = v - noisy[r, s]
        return weights[r, s] * (d * d)
    return tables[offset[r, s] + v - lo[r, s]]


@njit(cache=True, inline="always")
def _slope(state, r, s, v, step):
    """tau(v + step) - tau(v) for step = +1 or -1."""
    is_leaf, noisy, lo, hi, offset, tables, argmin, weights = state
    if is_leaf[r]:
        return weights[r, s] * (2.0 * step * (v - noisy[r, s]) + 1.0)
    base = offset[r, s] - lo[r, s]
    return tables[base + v + step] - tables[base + v]


@njit(cache=True, inline="always")
def _can_move(state, r, s, v, step):
    lo, hi = state[2], state[3]
    return (step > 0 and v < hi[r, s]) or (step < 0 and v > lo[r, s])


@njit(cache=True)
def _greedy_walk(state, rows, cols, step, stop, x, keys, ids, phi, phi_lo, record):
    """Greedy min-plus merge of the tables of nodes ``(rows[k], cols[k])`` (Lemma 5).

    Starts every node at its argmin (the sum V0) and moves one unit at a time in direction
    ``step`` on the node whose table grows least, ties to the first node, until the values
    sum to ``stop``.  ``x`` receives the values; with ``record`` the running cost is
    written to ``phi[V - phi_lo]`` for every sum V in range.  Returns the cost at ``stop``
    (tables are sums of squares, so a negative return flags an unreachable ``stop``).
    """
    argmin = state[6]
    n = rows.shape[0]
    total = 0
    cost = 0.0
    for k in range(n):
        x[k] = argmin[rows[k], cols[k]]
        total += x[k]
        cost += _tau(state, rows[k], cols[k], x[k])
    if record and phi_lo <= total < phi_lo + phi.shape[0]:
        phi[total - phi_lo] = cost
    size = 0
    for k in range(n):
        if _can_move(state, rows[k], cols[k], x[k], step):
            size = _heap_push(keys, ids, size, _slope(state, rows[k], cols[k], x[k], step), k)
    while total != stop:
        if size == 0:
            return -1.0
        key, k, size = _heap_pop(keys, ids, size)
        x[k] += step
        total += step
        cost += key
        if record and phi_lo <= total < phi_lo + phi.shape[0]:
            phi[total - phi_lo] = cost
        if _can_move(state, rows[k], cols[k], x[k], step):
            size = _heap_push(keys, ids, size, _slope(state, rows[k], cols[k], x[k], step), k)
    return cost


@njit(cache=True)
def _widest(child_count, n_sizes):
    return max(n_sizes, child_count.max() if child_count.shape[0] else 1, 1)


@njit(cache=True)
def hierarchical_tables(child_start, child_count, state):
    """Bottom-up pass: the table of every internal node and the argmin of every node.

    For node (r, s), phi over its interval comes from two walks starting at V0 = sum of the
    children's argmins (up to ``hi``, down to ``lo``); then ``tau = (v - noisy)^2 + phi``.
    Returns False if a walk could not reach the interval (the caller checked feasibility).
    """
    is_leaf, noisy, lo, hi, offset, tables, argmin, weights = state
    R, N = noisy.shape
    width = _widest(child_count, N)
    keys = np.empty(width)
    ids = np.empty(width, dtype=np.int64)
    x = np.empty(width, dtype=np.int64)
    for s in range(N):
        for r in range(R - 1, -1, -1):
            if is_leaf[r]:
                best = np.ceil(noisy[r, s] - 0.5)  # smallest integer minimiser of (v - y)^2
                argmin[r, s] = int(min(max(best, lo[r, s]), hi[r, s]))
                continue
            rows = np.arange(child_start[r], child_start[r] + child_count[r])
            cols = np.full(child_count[r], s)
            phi = tables[offset[r, s] : offset[r, s] + hi[r, s] - lo[r, s] + 1]
            v0 = 0
            for c in rows:
                v0 += argmin[c, s]
            if v0 <= hi[r, s]:
                if _greedy_walk(state, rows, cols, 1, hi[r, s], x, keys, ids, phi, lo[r, s], True) < 0:
                    return False
            if v0 > lo[r, s]:
                if _greedy_walk(state, rows, cols, -1, lo[r, s], x, keys, ids, phi, lo[r, s], True) < 0:
                    return False
            best_j = 0
            for j in range(phi.shape[0]):
                d = lo[r, s] + j - noisy[r, s]
                phi[j] += weights[r, s] * (d * d)
                if phi[j] < phi[best_j]:
                    best_j = j
            argmin[r, s] = lo[r, s] + best_j
    return True


@njit(cache=True)
def hierarchical_split(G, child_start, child_count, state, out):
    """Top-down pass: G over the root's sizes (the dummy root a^T), then every internal
    node's value over its children, each by the same greedy walk as bottom-up.

    Fills ``out`` (regions x sizes) and returns phi^T(G), or -1 if G is unreachable.
    """
    is_leaf, noisy, lo, hi, offset, tables, argmin, weights = state
    R, N = noisy.shape
    width = _widest(child_count, N)
    keys = np.empty(width)
    ids = np.empty(width, dtype=np.int64)
    x = np.empty(width, dtype=np.int64)
    dummy = np.empty(0)
    sizes = np.arange(N)
    roots = np.zeros(N, dtype=np.int64)
    v0 = 0
    for s in range(N):
        v0 += argmin[0, s]
    cost = _greedy_walk(state, roots, sizes, 1 if G >= v0 else -1, G, x, keys, ids, dummy, 0, False)
    if cost < 0:
        return cost
    out[0, :] = x[:N]
    for s in range(N):
        for r in range(R):
            if is_leaf[r]:
                continue
            rows = np.arange(child_start[r], child_start[r] + child_count[r])
            cols = np.full(child_count[r], s)
            v0 = 0
            for c in rows:
                v0 += argmin[c, s]
            step = 1 if out[r, s] >= v0 else -1
            if _greedy_walk(state, rows, cols, step, out[r, s], x, keys, ids, dummy, 0, False) < 0:
                return -1.0
            for k in range(child_count[r]):
                out[rows[k], s] = x[k]
    return cost


# ---------------------------------------------------------------------------- chain
@njit(cache=True)
def chain_dp(y, w, lo, hi, links, G):
    """Chain DP of Model 3 (Eqs. 8a-8b) with rolling tables: O(sum |D|) time, O(max |D|) memory.

    Node ``i`` costs ``w[i] (v - y[i])^2``.
    ``links[i]`` ties nodes i and i+1: 1 for ``<=``, 2 for ``=``.  ``lo``/``hi`` must be the
    forward-propagated feasible intervals with the last node fixed to G.  Each table is
    convex (Lemma 7), so ``min_{x<=v} tau_i(x)`` is ``tau_i(min(v, argmin_i))`` and the
    backward pass only needs each node's argmin.  Returns (x, objective).
    """
    n = y.shape[0]
    width = 1
    for i in range(n):
        width = max(width, hi[i] - lo[i] + 1)
    prev = np.empty(width)
    cur = np.empty(width)
    argmin = np.empty(n, dtype=np.int64)
    for j in range(hi[0] - lo[0] + 1):
        d = lo[0] + j - y[0]
        prev[j] = w[0] * (d * d)
    for i in range(n):
        if i > 0:
            for j in range(hi[i] - lo[i] + 1):
                v = lo[i] + j
                if links[i - 1] == 2:
                    u = v
                else:
                    u = min(v, argmin[i - 1])
                d = v - y[i]
                cur[j] = w[i] * (d * d) + prev[u - lo[i - 1]]
            prev, cur = cur, prev
        best = 0
        for j in range(1, hi[i] - lo[i] + 1):
            if prev[j] < prev[best]:
                best = j
        argmin[i] = lo[i] + best
    x = np.empty(n, dtype=np.int64)
    x[n - 1] = G
    objective = prev[G - lo[n - 1]]
    for i in range(n - 2, -1, -1):
        if links[i] == 2:
            x[i] = x[i + 1]
        else:
            x[i] = min(x[i + 1], argmin[i])
    return x, objective


@njit(cache=True)
def chain_pava(y, weight, lo, hi, links, G):
    """Exact integer isotonic regression on the chain (pool adjacent violators).

    Model 3 is a chain of ``<=``/``=`` links with separable convex costs ``weight[i] (x - y[i])^2``,
    so PAVA with block minimisers ``clip(ceil(mean - 1/2), max lo, min hi)`` (``mean`` the block's
    weighted mean) is exact.  Runs in O(n)
    whatever the domain widths, which the table DP cannot.  Returns (x, feasible).
    """
    n = y.shape[0]
    w = np.empty(n)
    sy = np.empty(n)
    blo = np.empty(n, dtype=np.int64)
    bhi = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    val = np.empty(n, dtype=np.int64)
    top = -1
    i = 0
    while i < n:
        # one base block: a run of nodes tied by '=' links
        top += 1
        w[top] = 0.0
        sy[top] = 0.0
        blo[top] = lo[i]
        bhi[top] = hi[i]
        first[top] = i
        while True:
            w[top] += weight[i]
            sy[top] += weight[i] * y[i]
            blo[top] = max(blo[top], lo[i])
            bhi[top] = min(bhi[top], hi[i])
            if i == n - 1:
                blo[top] = max(blo[top], G)
                bhi[top] = min(bhi[top], G)
            if i < n - 1 and links[i] == 2:
                i += 1
            else:
                break
        i += 1
        val[top] = _block_value(sy[top], w[top], blo[top], bhi[top])
        while top > 0 and val[top - 1] > val[top]:
            w[top - 1] += w[top]
            sy[top - 1] += sy[top]
            blo[top - 1] = max(blo[top - 1], blo[top])
            bhi[top - 1] = min(bhi[top - 1], bhi[top])
            top -= 1
            if blo[top] > bhi[top]:
                return np.zeros(n, dtype=np.int64), False
            val[top] = _block_value(sy[top], w[top], blo[top], bhi[top])
        if blo[top] > bhi[top]:
            return np.zeros(n, dtype=np.int64), False
    x = np.empty(n, dtype=np.int64)
    for b in range(top + 1):
        end = first[b + 1] if b < top else n
        for j in range(first[b], end):
            x[j] = val[b]
    return x, True


@njit(cache=True, inline="always")
def _block_value(sum_y, weight, low, high):
    best = np.ceil(sum_y / weight - 0.5)
    return int(min(max(best, low), high))


# ---------------------------------------------------------------------------- isotonic
@njit(cache=True)
def isotonic_rows(values, w, low, high):
    """Row-wise weighted least-squares isotonic regression clipped to [low, high] (Model A2).

    Bounded isotonic regression with uniform bounds is ``clip(PAVA(y))`` (spec 3.6); cell ``(r, i)``
    costs ``w[r, i] (x - values[r, i])^2`` and a pooled block takes its weighted mean.
    """
    R, N = values.shape
    out = np.empty_like(values)
    means = np.empty(N)
    weights = np.empty(N)
    starts = np.empty(N, dtype=np.int64)
    for r in range(R):
        top = -1
        for i in range(N):
            top += 1
            means[top] = values[r, i]
            weights[top] = w[r, i]
            starts[top] = i
            while top > 0 and means[top - 1] > means[top]:
                wsum = weights[top - 1] + weights[top]
                means[top - 1] = (means[top - 1] * weights[top - 1] + means[top] * weights[top]) / wsum
                weights[top - 1] = wsum
                top -= 1
        for b in range(top + 1):
            end = starts[b + 1] if b < top else N
            v = min(max(means[b], low), high)
            for j in range(starts[b], end):
                out[r, j] = v
    return out
