"""Compiled kernels for the banded Newton blocks of :mod:`dpmodels.metricdp.ipm.driver` (numba).

Each output's block ``H_k = G' D_k G + diag(zx_k / x_k)`` is sparse with the mDP graph's
pattern (about 12 neighbours per record on a 1 km grid with eta = 2 km); after a bandwidth-
reducing ordering (reverse Cuthill-McKee) its Cholesky factor lives in a band of half-width
``b`` (about twice the short side of a grid).  Layout, shared by every kernel here:
``band[k, i, d] = L_k[i, i - d]`` for ``d = 0..b`` (``d = 0`` is the diagonal).

* :func:`band_cholesky`: factor every block in place (LAPACK's blocked ``dpbtrf``), ``N b^2 / 2``
  per block instead of the dense ``N^3 / 3``;
* :func:`band_solve`: ``H_k^-1 r_k`` for every output, ``4 N b`` per block;
* :func:`band_inverse_sum`: the row sums' Schur complement ``sum_k H_k^-1`` (dense N x N, the
  one dense object of the method) by the Takahashi recurrence ``L' Z = L^-1`` run from the last
  row up, ``nb = 32`` rows at a time so that the work is one matrix product (BLAS) per step,
  keeping only a ring of ``nb + b + 1`` rows of each ``Z_k = H_k^-1``: ``N^2 b / 2``
  multiply-adds per block and ``(nb + b) N`` memory, instead of the dense inverse's ``N^3`` and
  ``N^2`` (on the 40 x 50 grid of N = 2,000 cells b = 80).  Measured on K = 100 blocks (2
  threads): 0.10 s at N = 1,000, b = 50 and 0.53 s at N = 2,000, b = 80, 25-30 GFMA/s, where the
  same recurrence one row at a time took 0.32 s and 1.63 s.

Blocks run in parallel over outputs (``prange``), BLAS and LAPACK single-threaded inside; the
Schur complement is summed in one buffer per thread so no two threads write the same memory.
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_num_threads, njit, prange

from dpmodels.core.blas import single_threaded_blas

__all__ = ["band_cholesky", "band_solve", "band_inverse_sum", "ROWS_PER_STEP"]

#: Rows of the blocked Takahashi recurrence per matrix product (24-48 measured alike; 16 is slower).
ROWS_PER_STEP = 32
#: Floating-point licence of the solves' inner products: reassociation (so that they vectorise)
#: and fused multiply-adds, but not fastmath's "no NaN / no inf".
_REASSOCIATE = {"reassoc", "contract"}


def _lapack(name: str, n_pointers: int):
    """LAPACK routine ``name`` (scipy's, LP64) as a numba external function of ``n_pointers``
    pointer arguments.  It is linked by symbol name, so the compiled kernels stay cacheable (a
    ctypes pointer would be baked into the machine code as an address)."""
    import llvmlite.binding as llvm
    from numba import types
    from numba.extending import get_cython_function_address

    symbol = f"dpmodels_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_lapack", name))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * n_pointers))


_dpbtrf = _lapack("dpbtrf", 6)


def band_cholesky(band: np.ndarray, failed: np.ndarray) -> None:
    """Cholesky factor of every banded block in place (LAPACK ``dpbtrf``, blocked, one block per
    thread); ``failed[k]`` is set for a block that is not positive definite or whose factor is not
    finite (its band is then garbage: the caller retries it).  Measured on K = 100 blocks: 0.044 s
    at N = 2,000, b = 80 (0.15 s for the compiled row-by-row loop it replaced), 0.020 s at N =
    1,000, b = 50 (0.034 s)."""
    with single_threaded_blas():
        _cholesky_blocks(band, failed)


@njit(cache=True, parallel=True)
def _cholesky_blocks(band, failed):
    """Our layout reversed along ``d`` is LAPACK's upper band storage: ``band[i, d] = A[i - d, i]``
    is column i's entry ``kd - d``."""
    K, N, w = band.shape
    for k in prange(K):
        upper = np.empty((N, w))
        for i in range(N):
            for d in range(w):
                upper[i, w - 1 - d] = band[k, i, d]
        uplo = np.array([ord("U")], dtype=np.uint8)
        ints = np.array([N, w - 1, w, 0], dtype=np.int32)  # n, kd, ldab, info
        _dpbtrf(uplo.ctypes, ints[0:].ctypes, ints[1:].ctypes, upper.ctypes, ints[2:].ctypes, ints[3:].ctypes)
        ok = ints[3] == 0
        for i in range(N):
            for d in range(w):
                v = upper[i, w - 1 - d]
                ok = ok and (d > i or math.isfinite(v))
                band[k, i, d] = v
        if not ok:
            failed[k] = True


@njit(cache=True, parallel=True, fastmath=_REASSOCIATE)
def band_solve(band, rhs, out):
    """``out[k] = H_k^-1 rhs[k]`` from the banded factors: forward substitution by rows, then
    backward by columns (each finished entry updates the ``b`` above it: contiguous reads)."""
    K, N, w = band.shape
    for k in prange(K):
        a = band[k]
        y = out[k]
        for i in range(N):
            s = rhs[k, i]
            for d in range(1, min(w, i + 1)):
                s -= a[i, d] * y[i - d]
            y[i] = s / a[i, 0]
        for i in range(N - 1, -1, -1):
            xi = y[i] / a[i, 0]
            y[i] = xi
            for d in range(1, min(w, i + 1)):
                y[i - d] -= a[i, d] * xi
    return out


@njit(cache=True)
def _lower_inverse(a, i0, n):
    """``L_II^-1`` of the diagonal block of rows ``i0 .. i0 + n`` (lower triangular, n x n)."""
    b = a.shape[1] - 1
    out = np.zeros((n, n))
    for c in range(n):
        out[c, c] = 1.0 / a[i0 + c, 0]
        for r in range(c + 1, n):
            s = 0.0
            for m in range(max(c, r - b), r):
                s += a[i0 + r, r - m] * out[m, c]
            out[r, c] = -s / a[i0 + r, 0]
    return out


@njit(cache=True)
def _coupling(a, i0, n, i1, nr):
    """``L_RI'`` (n x nr): the factor's entries ``L[i1 + r, i0 + i]`` that tie the rows below the
    block, ``R = i1 .. i1 + nr``, to its columns (zero outside the band)."""
    b = a.shape[1] - 1
    out = np.zeros((n, nr))
    for i in range(n):
        for r in range(nr):
            d = i1 + r - (i0 + i)
            if d <= b:
                out[i, r] = a[i1 + r, d]
    return out


@njit(cache=True)
def _store(ring, total, i0, col, values, sign):
    """Rows ``i0 ..`` of Z from column ``col`` on: ``sign * values`` into the ring and the sum."""
    slots = ring.shape[0]
    for i in range(values.shape[0]):
        row, tot = ring[(i0 + i) % slots], total[i0 + i]
        for j in range(values.shape[1]):
            v = sign * values[i, j]
            row[col + j] = v
            tot[col + j] += v


@njit(cache=True)
def _inverse_rows(a, ring, total, nb, scratch):
    """Add ``Z = H^-1`` (upper triangle) of one factored block to ``total``, ``nb`` rows at a time.

    The blocked Takahashi recurrence: for the rows ``I = i0 .. i1`` and the ``b`` rows below,
    ``R = i1 .. i1 + b``, ``L' Z = L^-1`` reads ``L_II' Z_IJ + L_RI' Z_RJ = (L^-1)_IJ``, so

        Z_IJ = -(L_II^-1)' L_RI' Z_RJ            for the columns J >= i1 (one GEMM),
        Z_II = (L_II^-1)' (L_II^-1 - L_RI' Z_RI)  on the diagonal block,

    with ``Z_RI = Z_IR'`` just computed.  The ring holds rows ``i0 .. i1 + b`` of Z (slot
    ``r % ring rows``) from column ``i0`` on, their lower parts filled by symmetry."""
    N, w = a.shape
    b = w - 1
    slots = ring.shape[0]
    i1 = N
    while i1 > 0:
        i0 = max(0, i1 - nb)
        n, nr, width = i1 - i0, min(N, i1 + b) - i1, N - i1
        inv = _lower_inverse(a, i0, n)
        inv_t = np.ascontiguousarray(inv.T)
        diag = inv.copy()
        if nr > 0:
            lt = _coupling(a, i0, n, i1, nr)
            below = scratch[: nr * width].reshape(nr, width)  # Z_RJ, contiguous for BLAS
            for r in range(nr):
                below[r, :] = ring[(i1 + r) % slots, i1:]
            neg = np.dot(np.dot(inv_t, lt), below)  # -Z_IJ
            _store(ring, total, i0, i1, neg, -1.0)
            for r in range(min(N, i0 + b) - i1):  # Z_RI = Z_IR' for the rows the next blocks read
                mirror = ring[(i1 + r) % slots]
                for i in range(n):
                    mirror[i0 + i] = -neg[i, r]
            diag += np.dot(lt, np.ascontiguousarray(neg[:, :nr].T))  # L_II^-1 - L_RI' Z_RI
        block = np.dot(inv_t, diag)
        for i in range(n):
            row = ring[(i0 + i) % slots]
            for j in range(n):
                row[i0 + j] = block[i, j] if j >= i else block[j, i]
            for j in range(i, n):
                total[i0 + i, i0 + j] += block[i, j]
        i1 = i0


@njit(cache=True, parallel=True)
def _inverse_sum_parts(band, parts, nb):
    """``parts[t]`` = the sum of the blocks ``k = t, t + T, ...`` (upper triangles)."""
    K, N, w = band.shape
    T = parts.shape[0]
    for t in prange(T):
        ring = np.zeros((nb + w, N))
        scratch = np.empty(max(w - 1, 1) * N)
        for k in range(t, K, T):
            _inverse_rows(band[k], ring, parts[t], nb, scratch)


def band_inverse_sum(band: np.ndarray, rows_per_step: int = ROWS_PER_STEP) -> np.ndarray:
    """``sum_k H_k^-1`` (symmetric, dense N x N) from the banded Cholesky factors, as its *lower
    triangle* (zeros above, which is all a Cholesky factorisation reads; mirroring it cost 45 ms
    per iteration at N = 2,000).

    BLAS runs single-threaded inside: the threads are the outputs' (``prange``)."""
    K, N, _ = band.shape
    threads = max(1, min(get_num_threads(), K))
    parts = np.zeros((threads, N, N))
    with single_threaded_blas():
        _inverse_sum_parts(band, parts, rows_per_step)
    total = parts[0]
    for extra in parts[1:]:
        total += extra
    return total.T  # the kernels fill the upper triangle of ``total``
