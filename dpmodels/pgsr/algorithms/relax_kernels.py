"""Compiled kernels of Model 1-R (the continuous relaxation) by demand functions.

A node's *demand* ``x_u(p)`` is the value minimising ``tau_u(x) - p x`` on its interval: the
amount the node takes at marginal price ``p``.  For the relaxation every demand is continuous,
non-decreasing and piecewise linear, and it is built bottom-up without any table of the domain:

* a leaf of cost ``w (x - a)^2`` takes ``clip((p + 2 w a) / (2 w), lo, hi)`` (two breakpoints);
* an internal node's children together take ``D(q) = sum_c x_c(q)`` (merge their breakpoints);
  its own cost adds ``2 w (x - a)`` to the price, so it takes ``x = D(q)`` at
  ``p = q + 2 w (D(q) - a)`` (the same breakpoints, moved), clipped to its interval.

``w`` is the cell's weight (ones for unweighted values: every product by 1.0 is exact, so the
unweighted demands come out bit for bit as before weights existed).

A demand is stored as its breakpoints ``P`` (increasing) and values ``X``: constant ``X[0]``
left of ``P[0]`` (the largest price at the lower bound), linear between, constant ``X[-1]``
right of the last point (the smallest price at the upper bound).  A node with ``k`` leaves below
has at most ``2 k + 2 * (internal nodes below)`` breakpoints, whatever the domain width.
Top-down, the root price splits ``G`` over the sizes and every node passes the price its
children see, ``q = p - 2 w (x - a)``, down the tree.  Floating point throughout: the result
centres the exact solver's windows (:mod:`dpmodels.pgsr.algorithms.window`), which certifies its own
answer, so nothing here has to be exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _child_increments(s, kids, is_leaf, a, w, lo, hi, P, X, start, count):
    """Breakpoints and slope increments of every child's demand, and their sum at -inf."""
    n = 0
    for c in kids:
        n += 2 if is_leaf[c] else count[c, s]
    at = np.empty(n)
    inc = np.empty(n)
    base = 0.0
    k = 0
    for c in kids:
        if is_leaf[c]:
            at[k] = 2.0 * w[c, s] * (lo[c, s] - a[c, s])
            inc[k] = 0.5 / w[c, s]
            at[k + 1] = 2.0 * w[c, s] * (hi[c, s] - a[c, s])
            inc[k + 1] = -0.5 / w[c, s]
            base += lo[c, s]
            k += 2
            continue
        o, m = start[c], count[c, s]
        base += X[s, o]
        before = 0.0
        for j in range(m):
            after = 0.0
            if j + 1 < m and P[s, o + j + 1] > P[s, o + j]:
                after = (X[s, o + j + 1] - X[s, o + j]) / (P[s, o + j + 1] - P[s, o + j])
            at[k] = P[s, o + j]
            inc[k] = after - before
            before = after
            k += 1
    return at, inc, base


@njit(cache=True)
def _node_demand(s, r, kids, is_leaf, a, w, lo, hi, P, X, start, count):
    """Store node ``(r, s)``'s clipped demand from its children's (see the module docstring)."""
    at, inc, base = _child_increments(s, kids, is_leaf, a, w, lo, hi, P, X, start, count)
    order = np.argsort(at, kind="mergesort")
    n = at.shape[0]
    px = np.empty(n)  # unclipped demand: price, value and slope after each point
    vx = np.empty(n)
    rx = np.empty(n)
    value, slope, prev = base, 0.0, at[order[0]] if n else 0.0
    for k in range(n):
        t = at[order[k]]
        value += slope * (t - prev)
        prev = t
        slope += inc[order[k]]
        if slope < 0.0:  # rounding of increments that cancel
            slope = 0.0
        px[k] = t + 2.0 * w[r, s] * (value - a[r, s])
        vx[k] = value
        rx[k] = slope / (1.0 + 2.0 * w[r, s] * slope)
    count[r, s] = _clip_into(px, vx, rx, lo[r, s], hi[r, s], P[s], X[s], start[r])


@njit(cache=True)
def _clip_into(px, vx, rx, low, high, P, X, o):
    """Write ``clip(x, low, high)`` of the unclipped demand as points from offset ``o``; returns
    how many.  The first point is the largest price at ``low``, the last the smallest at ``high``."""
    n = px.shape[0]
    k_lo = 0
    while k_lo + 1 < n and vx[k_lo + 1] <= low:
        k_lo += 1
    p_lo = px[k_lo]
    if vx[k_lo] < low and k_lo + 1 < n and rx[k_lo] > 0.0:
        p_lo = px[k_lo] + (low - vx[k_lo]) / rx[k_lo]
    k_hi = k_lo
    while k_hi < n and vx[k_hi] < high:
        k_hi += 1
    if k_hi == n:  # reached only in the tail (or, by rounding, not at all)
        p_hi = px[n - 1] + (high - vx[n - 1]) / rx[n - 1] if rx[n - 1] > 0.0 else px[n - 1]
    elif k_hi > 0 and vx[k_hi - 1] < high and rx[k_hi - 1] > 0.0:
        p_hi = px[k_hi - 1] + (high - vx[k_hi - 1]) / rx[k_hi - 1]
    else:
        p_hi = px[k_hi]
    if low >= high:  # a fixed node: any price between the two crossings
        P[o], X[o] = min(p_lo, p_hi), low
        P[o + 1], X[o + 1] = max(p_lo, p_hi), low
        return 2
    P[o], X[o] = p_lo, low
    m = 1
    for k in range(k_lo + 1, min(k_hi, n)):
        P[o + m], X[o + m] = px[k], vx[k]
        m += 1
    P[o + m], X[o + m] = max(p_hi, P[o + m - 1]), high
    return m + 1


@njit(cache=True)
def _evaluate(Ps, Xs, o, m, p):
    """Value of a stored demand at price ``p``."""
    if p <= Ps[o]:
        return Xs[o]
    if p >= Ps[o + m - 1]:
        return Xs[o + m - 1]
    j = np.searchsorted(Ps[o : o + m], p, side="right") - 1
    width = Ps[o + j + 1] - Ps[o + j]
    if width <= 0.0:
        return Xs[o + j + 1]
    return Xs[o + j] + (Xs[o + j + 1] - Xs[o + j]) * (p - Ps[o + j]) / width


@njit(cache=True, parallel=True)
def demands(child_start, child_count, is_leaf, a, w, lo, hi, start, capacity):
    """Bottom-up: the demand of every internal node of every size (``P``, ``X``, point counts)."""
    R, S = a.shape
    P = np.empty((S, capacity))
    X = np.empty((S, capacity))
    count = np.zeros((R, S), dtype=np.int64)
    for s in prange(S):
        for r in range(R - 1, -1, -1):
            if not is_leaf[r]:
                kids = np.arange(child_start[r], child_start[r] + child_count[r])
                _node_demand(s, r, kids, is_leaf, a, w, lo, hi, P, X, start, count)
    return P, X, count


@njit(cache=True)
def _root_demand(s, is_leaf, a, w, lo, hi, P, X, count, p):
    """The root's demand for size ``s`` at price ``p`` (closed form when the root is a leaf)."""
    if is_leaf[0]:
        return min(max((p + 2.0 * w[0, s] * a[0, s]) / (2.0 * w[0, s]), lo[0, s]), hi[0, s])
    return _evaluate(P[s], X[s], 0, count[0, s], p)


@njit(cache=True)
def root_price(is_leaf, a, w, lo, hi, P, X, count, G, iterations=200):
    """The price at which the root's sizes together take ``G`` (bisection on the total demand)."""
    S = a.shape[1]
    low, high = np.inf, -np.inf
    for s in range(S):
        if is_leaf[0]:
            low = min(low, 2.0 * w[0, s] * (lo[0, s] - a[0, s]))
            high = max(high, 2.0 * w[0, s] * (hi[0, s] - a[0, s]))
        else:
            low, high = min(low, P[s, 0]), max(high, P[s, count[0, s] - 1])
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if mid <= low or mid >= high:
            break
        total = 0.0
        for s in range(S):
            total += _root_demand(s, is_leaf, a, w, lo, hi, P, X, count, mid)
        if total < G:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


@njit(cache=True, parallel=True)
def split(price, child_start, child_count, is_leaf, a, w, lo, hi, P, X, start, count):
    """Top-down: every node's relaxed value, passing each node's price to its children."""
    R, S = a.shape
    out = np.empty((R, S))
    for s in prange(S):
        paid = np.empty(R)
        paid[0] = price
        for r in range(R):
            p = paid[r]
            if is_leaf[r]:
                out[r, s] = min(max((p + 2.0 * w[r, s] * a[r, s]) / (2.0 * w[r, s]), lo[r, s]), hi[r, s])
                continue
            o, m = start[r], count[r, s]
            x = _evaluate(P[s], X[s], o, m, p)
            out[r, s] = x
            p = min(max(p, P[s, o]), P[s, o + m - 1])  # a clipped node pays its crossing price
            for c in range(child_start[r], child_start[r] + child_count[r]):
                paid[c] = p - 2.0 * w[r, s] * (x - a[r, s])
    return out
