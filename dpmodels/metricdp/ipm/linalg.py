"""The Newton systems of :mod:`dpmodels.metricdp.ipm.driver`: per output k a block
``H_k = G' D_k G + diag(zx_k / x_k)`` and the row sums' Schur complement ``sum_k H_k^-1``.

Two interchangeable systems (same methods, same answers up to rounding):

* :class:`DenseSystem`: every block dense, factored and inverted by LAPACK (``potrf``/``potri``):
  ``K N^3`` flops and ``K N^2`` memory per iteration (25.5 s and 0.8 GB at N = 1,000);
* :class:`BandSystem`: the blocks in a band after a reverse Cuthill-McKee ordering of the mDP
  graph (half-width ``b``, about twice the short side of a grid), factored and summed by the
  compiled kernels of :mod:`~dpmodels.metricdp.ipm.band`: ``K N^2 b`` flops and ``K N b``
  memory.  The Schur complement stays dense (it is: every ``H_k^-1`` is).

:func:`newton_system` picks one: the band when ``4 (b + 1) <= N``, else dense (on 1 km grids
at eps = 1 the band took 0.4 / 3.9 / 10.6 CPU seconds where dense took 0.7 / 45 / 312 at
N = 80 / 250 / 500, the machine shared).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numba import get_num_threads
from scipy.linalg import lapack
from scipy.sparse.csgraph import reverse_cuthill_mckee

from dpmodels.core.errors import DataValidationError

from .band import band_cholesky, band_inverse_sum, band_solve

__all__ = ["Rows", "NumericalBreakdown", "DenseSystem", "BandSystem", "band_order", "newton_system", "MAX_BLOCK_BYTES"]

#: Memory the Newton blocks may take (dense: K N^2 doubles, band: K N (b + 1)); above it the method refuses.
MAX_BLOCK_BYTES = 6e9
SYSTEMS = ("auto", "band", "dense")


class Rows:
    """The mDP rows in output-major layout: ``GX[k, p] = X[k, src_p] - a_p X[k, dst_p]``."""

    def __init__(self, src, dst, coef, n: int):
        self.src, self.dst, self.coef, self.n = src, dst, coef, n
        p = len(src)
        g = sp.csr_matrix(
            (np.concatenate([np.ones(p), -coef]), (np.tile(np.arange(p), 2), np.concatenate([src, dst]))),
            shape=(p, n),
        )
        self.gt = g.T.tocsr()

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x[:, self.src] - self.coef * x[:, self.dst]

    def apply_t(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.gt @ u.T).T


def gatherer(flat: np.ndarray, weights: np.ndarray, n_pairs: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Distinct flat positions of a block and the sparse matrix that sums, for per-pair
    multipliers ``d``, each pair's ``weights`` into them: ``block.flat[positions] = gather @ d``.
    ``flat`` and ``weights`` list, entry group by entry group, one value per pair."""
    positions, slot = np.unique(flat, return_inverse=True)
    pair = np.tile(np.arange(n_pairs), len(flat) // max(n_pairs, 1))
    return positions, sp.csr_matrix((weights, (slot, pair)), shape=(len(positions), n_pairs))


class NumericalBreakdown(ArithmeticError):
    """A Newton block no ridge can make positive definite (non-finite iterates)."""


def _ridges(scale: float):
    """Growing ridges ``1e-12, 1e-10, ...`` times the block's diagonal scale, up to the scale."""
    ridge = 1e-12 * scale
    while np.isfinite(ridge) and ridge <= scale:
        yield ridge
        ridge *= 100


def _schur_factor(total: np.ndarray):
    """Cholesky factor of the row sums' Schur complement from its lower triangle (in place: the
    sum is not needed afterwards); non-finite
    entries (LAPACK passes NaNs through with info 0, so a bad block shows up here) or a failed
    factorisation are a breakdown."""
    if not np.isfinite(total).all():
        raise NumericalBreakdown("non-finite Newton blocks")
    try:
        return sla.cho_factor(total, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError as err:
        raise NumericalBreakdown(f"the row sums' Schur complement is not positive definite: {err}") from err


def invert_blocks(h: np.ndarray) -> np.ndarray:
    """In-place inverse of every dense SPD block (Cholesky); a block that fails gets a growing
    ridge (an inexact Newton step: the certificates do not depend on it)."""
    n = h.shape[1]
    low = np.tril_indices(n, -1)
    for k in range(h.shape[0]):
        c, info = lapack.dpotrf(h[k], lower=1, clean=0)
        inv, info = lapack.dpotri(c, lower=1) if info == 0 else (None, 1)
        if info != 0:
            inv = _ridged_inverse(h[k], k)
        inv[low[1], low[0]] = inv[low]  # potri fills the lower triangle only
        h[k] = inv
    return h


def _ridged_inverse(block: np.ndarray, k: int) -> np.ndarray:
    scale = float(np.abs(np.diag(block)).max())
    for ridge in _ridges(scale):
        c, info = lapack.dpotrf(block + ridge * np.eye(len(block)), lower=1, clean=0)
        if info == 0:
            inv, info = lapack.dpotri(c, lower=1)
            if info == 0:
                return inv
    raise NumericalBreakdown(f"Newton block {k} is not positive definite (diagonal scale {scale:g})")


class DenseSystem:
    """Dense blocks: explicit inverses ``H_k^-1`` and the Cholesky factor of their sum."""

    name = "dense"

    def __init__(self, rows: Rows, K: int):
        n = rows.n
        self.n, self.K = n, K
        src, dst, a = rows.src, rows.dst, rows.coef
        # G' diag(d) G: (s,s) gets d, (t,t) a^2 d, (s,t) and (t,s) -a d for each pair
        flat = np.concatenate([src * n + src, dst * n + dst, src * n + dst, dst * n + src])
        self.positions, self.gather = gatherer(flat, np.concatenate([np.ones(len(a)), a**2, -a, -a]), len(a))
        self.buffer = np.empty((K, n, n))  # reused: first-touching 200 MB each iteration cost more than LAPACK

    @staticmethod
    def nbytes(n: int, K: int, bandwidth: int) -> float:
        return 8.0 * K * n * n

    def factor(self, d: np.ndarray, diag: np.ndarray) -> None:
        K, n = diag.shape
        flat = self.buffer.reshape(K, n * n)
        flat.fill(0.0)
        flat[:, self.positions] = (self.gather @ d.T).T
        self.buffer[:, np.arange(n), np.arange(n)] += diag
        self.hinv = invert_blocks(self.buffer)
        self.schur = _schur_factor(self.hinv.sum(axis=0))

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``H_k^-1 rhs_k`` for every output k."""
        return np.matmul(self.hinv, rhs[:, :, None])[:, :, 0]

    def solve_sum(self, q: np.ndarray) -> np.ndarray:
        """``sum_k H_k^-1 q_k`` as one flat product (the blocks are symmetric; measured 2x einsum)."""
        K, n = q.shape
        return (q.reshape(1, K * n) @ self.hinv.reshape(K * n, n))[0]

    def schur_solve(self, r: np.ndarray) -> np.ndarray:
        return sla.cho_solve(self.schur, r)


def band_order(rows: Rows) -> tuple[np.ndarray, int]:
    """Reverse Cuthill-McKee order of the records (``order[new] = old``) and the half-bandwidth
    of the blocks in it (0 without pairs)."""
    n = rows.n
    if len(rows.src) == 0:
        return np.arange(n), 0
    pattern = sp.csr_matrix((np.ones(len(rows.src)), (rows.src, rows.dst)), shape=(n, n))
    order = np.asarray(reverse_cuthill_mckee(pattern + pattern.T, symmetric_mode=True))
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    return order, int(np.abs(where[rows.src] - where[rows.dst]).max())


class BandSystem:
    """Banded blocks in reverse Cuthill-McKee order: compiled band Cholesky, band solves, and the
    dense Schur complement from the Takahashi recurrence (:mod:`~dpmodels.metricdp.ipm.band`).
    Vectors go in and out in the records' own order."""

    name = "band"

    def __init__(self, rows: Rows, K: int, order: np.ndarray, bandwidth: int):
        n = rows.n
        self.n, self.K, self.order, self.w = n, K, order, bandwidth + 1
        where = np.empty(n, dtype=np.int64)
        where[order] = np.arange(n)
        s, t, a = where[rows.src], where[rows.dst], rows.coef
        hi, lo = np.maximum(s, t), np.minimum(s, t)
        flat = np.concatenate([s * self.w, t * self.w, hi * self.w + (hi - lo)])
        self.positions, self.gather = gatherer(flat, np.concatenate([np.ones(len(a)), a**2, -a]), len(a))
        self.band = np.empty((K, n, self.w))

    @staticmethod
    def nbytes(n: int, K: int, bandwidth: int) -> float:
        """The bands, and N x N sums: one per thread, the Schur complement and its factor."""
        return 8.0 * (K * n * (bandwidth + 1) + (get_num_threads() + 2) * n * n)

    def _assemble(self, d: np.ndarray, diag: np.ndarray, out: np.ndarray) -> np.ndarray:
        K, n = diag.shape
        flat = out.reshape(K, n * self.w)
        flat.fill(0.0)
        flat[:, self.positions] = (self.gather @ d.T).T
        out[:, :, 0] += diag[:, self.order]
        return out

    def factor(self, d: np.ndarray, diag: np.ndarray) -> None:
        band = self._assemble(d, diag, self.band)
        failed = np.zeros(self.K, dtype=bool)
        band_cholesky(band, failed)
        for k in np.flatnonzero(failed):  # rare: a growing ridge, as the dense path does
            band[k] = self._ridged(d[k : k + 1], diag[k : k + 1], k)
        self.schur = _schur_factor(band_inverse_sum(band))

    def _ridged(self, d, diag, k: int) -> np.ndarray:
        block = self._assemble(d, diag, np.empty((1, self.n, self.w)))
        scale = float(np.abs(block[0, :, 0]).max()) if np.isfinite(block).all() else np.inf
        for ridge in _ridges(scale):
            trial = block.copy()
            trial[0, :, 0] += ridge
            failed = np.zeros(1, dtype=bool)
            band_cholesky(trial, failed)
            if not failed[0]:
                return trial[0]
        raise NumericalBreakdown(f"Newton block {k} is not positive definite (diagonal scale {scale:g})")

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``H_k^-1 rhs_k`` for every output k."""
        permuted = band_solve(self.band, np.ascontiguousarray(rhs[:, self.order]), np.empty(rhs.shape))
        out = np.empty_like(permuted)
        out[:, self.order] = permuted
        return out

    def solve_sum(self, q: np.ndarray) -> np.ndarray:
        return self.solve(q).sum(axis=0)

    def schur_solve(self, r: np.ndarray) -> np.ndarray:
        out = np.empty_like(r)
        out[self.order] = sla.cho_solve(self.schur, r[self.order])
        return out


def newton_system(rows: Rows, K: int, system: str = "auto"):
    """The Newton system for ``rows`` and K outputs: ``"band"``, ``"dense"`` or ``"auto"`` (the
    band when ``4 (b + 1) <= N``, or when only the band fits in ``MAX_BLOCK_BYTES``)."""
    if system not in SYSTEMS:
        raise DataValidationError("system", f"must be one of {SYSTEMS}, got {system!r}")
    n = rows.n
    order, bandwidth = band_order(rows)
    fits = {cls: cls.nbytes(n, K, bandwidth) <= MAX_BLOCK_BYTES for cls in (DenseSystem, BandSystem)}
    if system == "auto":
        system = "band" if 4 * (bandwidth + 1) <= n or not fits[DenseSystem] else "dense"
    cls = BandSystem if system == "band" else DenseSystem
    if not fits[cls]:
        need = cls.nbytes(n, K, bandwidth) / 1e9
        raise DataValidationError(
            "instance", f"N = {n}, K = {K}: the {system} Newton blocks need {need:.1f} GB; use mdp_benders"
        )
    return BandSystem(rows, K, order, bandwidth) if cls is BandSystem else DenseSystem(rows, K)
