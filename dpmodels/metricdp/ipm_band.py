"""Compiled kernels for the banded Newton blocks of :mod:`dpmodels.metricdp.ipm` (numba).

Each output's block ``H_k = G' D_k G + diag(zx_k / x_k)`` is sparse with the mDP graph's
pattern (about 12 neighbours per record on a 1 km grid with eta = 2 km); after a bandwidth-
reducing ordering (reverse Cuthill-McKee) its Cholesky factor lives in a band of half-width
``b`` (about twice the short side of a grid).  Layout, shared by every kernel here:
``band[k, i, d] = L_k[i, i - d]`` for ``d = 0..b`` (``d = 0`` is the diagonal).

* :func:`band_cholesky`: factor every block in place, ``N b^2 / 2`` per block instead of the
  dense ``N^3 / 3``;
* :func:`band_solve`: ``H_k^-1 r_k`` for every output, ``4 N b`` per block;
* :func:`band_inverse_sum`: the row sums' Schur complement ``sum_k H_k^-1`` (dense N x N, the
  one dense object of the method) by the Takahashi recurrence ``L' Z = L^-1`` run from the last
  row up, keeping only a window of ``b + 1`` rows of each ``Z_k = H_k^-1``: ``N^2 b / 2``
  multiply-adds per block and ``(b + 1) N`` memory, instead of the dense inverse's ``N^3`` and
  ``N^2`` (on the 40 x 50 grid of N = 2,000 cells b = 80).

Blocks run in parallel over outputs (``prange``); the Schur complement is summed in one
buffer per thread so no two threads write the same memory.
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_num_threads, njit, prange

__all__ = ["band_cholesky", "band_solve", "band_inverse_sum"]


@njit(cache=True, parallel=True)
def band_cholesky(band, failed):
    """Cholesky factor of every banded block in place; ``failed[k]`` is set for a block whose
    pivot is not positive and finite (its band is then garbage: the caller retries it)."""
    K, N, w = band.shape
    for k in prange(K):
        a = band[k]
        for i in range(N):
            lo = max(i - (w - 1), 0)
            for j in range(lo, i):
                s = a[i, i - j]
                for m in range(lo, j):
                    s -= a[i, i - m] * a[j, j - m]
                a[i, i - j] = s / a[j, 0]
            s = a[i, 0]
            for m in range(lo, i):
                v = a[i, i - m]
                s -= v * v
            if not (s > 0.0 and s < math.inf):
                failed[k] = True
                break
            a[i, 0] = math.sqrt(s)


@njit(cache=True, parallel=True)
def band_solve(band, rhs, out):
    """``out[k] = H_k^-1 rhs[k]`` from the banded factors (forward, then backward substitution)."""
    K, N, w = band.shape
    for k in prange(K):
        a = band[k]
        y = out[k]
        for i in range(N):
            s = rhs[k, i]
            for m in range(max(i - (w - 1), 0), i):
                s -= a[i, i - m] * y[m]
            y[i] = s / a[i, 0]
        for i in range(N - 1, -1, -1):
            s = y[i]
            for m in range(i + 1, min(i + w, N)):
                s -= a[m, m - i] * y[m]
            y[i] = s / a[i, 0]
    return out


@njit(cache=True, fastmath=True)
def _axpy4(row, b0, b1, b2, b3, l0, l1, l2, l3, lo):
    """``row[lo:] -= l0 b0 + l1 b1 + l2 b2 + l3 b3`` (a loop of its own: it vectorises)."""
    for j in range(lo, row.shape[0]):
        row[j] -= l0 * b0[j] + l1 * b1[j] + l2 * b2[j] + l3 * b3[j]


@njit(cache=True, fastmath=True)
def _axpy8(row, window, r, w, a, m, lo):
    """``row[lo:] -= sum_{q < 8} L_{r+q, r+q-m'} Z_{r+q}`` over eight window rows."""
    b0, b1, b2, b3 = window[r % w], window[(r + 1) % w], window[(r + 2) % w], window[(r + 3) % w]
    b4, b5, b6, b7 = window[(r + 4) % w], window[(r + 5) % w], window[(r + 6) % w], window[(r + 7) % w]
    l0, l1, l2, l3 = a[r, m], a[r + 1, m + 1], a[r + 2, m + 2], a[r + 3, m + 3]
    l4, l5, l6, l7 = a[r + 4, m + 4], a[r + 5, m + 5], a[r + 6, m + 6], a[r + 7, m + 7]
    for j in range(lo, row.shape[0]):
        row[j] -= (l0 * b0[j] + l1 * b1[j] + l2 * b2[j] + l3 * b3[j]) + (
            l4 * b4[j] + l5 * b5[j] + l6 * b6[j] + l7 * b7[j]
        )


@njit(cache=True, fastmath=True)
def _axpy1(row, b0, l0, lo):
    """``row[lo:] -= l0 b0``."""
    for j in range(lo, row.shape[0]):
        row[j] -= l0 * b0[j]


@njit(cache=True)
def _inverse_rows(a, window, total):
    """Add ``Z = H^-1`` (upper triangle) of one factored block to ``total``.

    ``Z_ij = (delta_ij / L_ii - sum_{m = 1..b} L_{i+m, i} Z_{i+m, j}) / L_ii`` for ``j >= i``,
    rows from the last up.  The window holds rows ``i+1 .. i+b`` of Z (slot ``r % (b + 1)``)
    from column ``i + 1`` on: each finished row is also written into the rows below it at its
    own column (``Z_{r, i} = Z_{i, r}``), so every row below is complete where the next row
    reads it and the inner loops run over whole rows."""
    N, w = a.shape
    row = np.empty(N)  # apart from the window, so the compiler sees no aliasing and vectorises
    for i in range(N - 1, -1, -1):
        row[i:] = 0.0
        top = min(w - 1, N - 1 - i)
        m = 1
        while m + 7 <= top:  # eight rows below at once: one pass over ``row`` instead of eight
            r = i + m
            _axpy8(row, window, r, w, a, m, i + 1)
            m += 8
        while m + 3 <= top:  # four rows below at once
            r = i + m
            _axpy4(
                row,
                window[r % w],
                window[(r + 1) % w],
                window[(r + 2) % w],
                window[(r + 3) % w],
                a[r, m],
                a[r + 1, m + 1],
                a[r + 2, m + 2],
                a[r + 3, m + 3],
                i + 1,
            )
            m += 4
        while m <= top:
            r = i + m
            _axpy1(row, window[r % w], a[r, m], i + 1)
            m += 1
        lii = a[i, 0]
        row[i + 1 :] /= lii
        s = 1.0 / lii
        for m in range(1, top + 1):
            s -= a[i + m, m] * row[i + m]
        row[i] = s / lii
        window[i % w, i:] = row[i:]
        for m in range(1, top + 1):
            window[(i + m) % w, i] = row[i + m]
        total[i, i:] += row[i:]


@njit(cache=True, parallel=True)
def _inverse_sum_parts(band, parts):
    """``parts[t]`` = the sum of the blocks ``k = t, t + T, ...`` (upper triangles)."""
    K, N, w = band.shape
    T = parts.shape[0]
    for t in prange(T):
        window = np.zeros((w, N))
        for k in range(t, K, T):
            _inverse_rows(band[k], window, parts[t])


def band_inverse_sum(band: np.ndarray) -> np.ndarray:
    """``sum_k H_k^-1`` (symmetric, dense N x N) from the banded Cholesky factors."""
    K, N, _ = band.shape
    threads = max(1, min(get_num_threads(), K))
    parts = np.zeros((threads, N, N))
    _inverse_sum_parts(band, parts)
    total = parts[0]
    for extra in parts[1:]:
        total += extra
    upper = np.triu(total)
    return upper + np.triu(total, 1).T
