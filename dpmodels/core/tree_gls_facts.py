"""The exact sums of the tree GLS that the passes do not fix: the rank-``J`` correction of the constrained BLUE.

:mod:`dpmodels.core.tree_gls` fixes a region's exact total inside the passes when it lies along one
basis coordinate.  Every other exact linear fact on region totals is imposed afterwards, here: a
region's total off the basis, or the sum of several regions' totals (a *group total*, e.g. the AIAN
and non-AIAN parts of a state held to one public population).  Each fact is a row ``f_j`` of a
``J x regions`` 0/1 matrix ``F`` with a value ``T_j``: ``sum_v F[j, v] * total(x_v) = T_j``.

Let ``x`` be the BLUE without these facts and ``g = F (totals of x)`` its estimate of the facts.  The
BLUE with them is ``x - Cov(x, g) Cov(g)^+ (g - T)`` and its covariance
``Cov(x) - Cov(x, g) Cov(g)^+ Cov(g, x)`` (the conditional mean and covariance of a Gaussian, and
for any noise the Gauss-Markov estimate under the added equalities).  ``Cov(x, g_j)`` is what the
passes return for the information vector that puts the totals' direction ``c`` at every region of
row ``j`` (the estimate is ``K b`` with ``K = Cov(x)``), so each fact costs one more run of the
passes: linear in the number of regions, times ``J + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import DataValidationError

__all__ = ["MAX_CORRECTION_ENTRIES", "ExactSums", "information_runs", "correct_for_sums", "whitening"]

#: Largest ``J x regions x coordinates`` of the rank-J correction's covariance columns (memory bound).
MAX_CORRECTION_ENTRIES = 200_000_000


@dataclass(frozen=True, eq=False)
class ExactSums:
    """``J`` exact facts ``F @ (region totals) = values``.

    Parameters
    ----------
    rows : scipy.sparse.csr_matrix
        ``J x regions``, 0/1: the regions whose totals each fact sums.
    values : numpy.ndarray
        The facts' exact values (``J``).
    labels : list of str
        One label per fact, for the refusal of facts that contradict each other.
    """

    rows: sp.csr_matrix
    values: np.ndarray
    labels: list[str]

    @classmethod
    def of(cls, sums: list[tuple[tuple[int, ...], float, str]], n_regions: int) -> ExactSums:
        """The facts of ``(region positions, value, label)`` triples.

        Parameters
        ----------
        sums : list of tuple
            ``(regions, value, label)`` per fact.
        n_regions : int
            The hierarchy's size (the matrix's width).
        """
        cols = [np.asarray(regions, dtype=np.int64) for regions, _, _ in sums]
        indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])]).astype(np.int64)
        indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        rows = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(sums), n_regions))
        return cls(rows, np.array([float(v) for _, v, _ in sums]), [label for _, _, label in sums])

    def __len__(self) -> int:
        return self.rows.shape[0]


def information_runs(b: np.ndarray, c: np.ndarray, sums: ExactSums) -> np.ndarray:
    """The information vectors of the passes: the data's (run 0), then one run per exact sum.

    Run ``1 + j`` puts ``c`` (a region's total is ``c . coordinates``) at every region of fact ``j``:
    its estimate is ``Cov(x, g_j)``.

    Parameters
    ----------
    b : numpy.ndarray
        Regions x coordinates: the data's information vectors.
    c : numpy.ndarray
        The totals' direction in the coordinates.
    sums : ExactSums
        The facts the correction imposes.
    """
    n_regions = b.shape[0]
    entries = len(sums) * n_regions * len(c)
    if entries > MAX_CORRECTION_ENTRIES:
        raise DataValidationError(
            "totals",
            f"{len(sums)} exact totals off the basis (region or group totals) need {entries:,} covariance entries "
            f"(more than {MAX_CORRECTION_ENTRIES:,}); declare totals at fewer regions",
        )
    runs = np.zeros(b.shape + (1 + len(sums),))
    runs[..., 0] = b
    rows = sums.rows
    for j in range(len(sums)):
        runs[rows.indices[rows.indptr[j] : rows.indptr[j + 1]], :, 1 + j] = c
    return runs


def correct_for_sums(sums: ExactSums, est, cell_var, total_var):
    """Estimates, cell variances and total variances after the rank-``J`` correction (module docstring).

    Parameters
    ----------
    sums : ExactSums
        The facts.
    est : numpy.ndarray
        Regions x cells x runs: run 0 the estimate ``x`` without the facts, run ``1 + j`` the
        covariance ``Cov(x, g_j)``.
    cell_var, total_var : numpy.ndarray
        The variances of ``x``'s cells (regions x cells) and totals (regions) without the facts.
    """
    coords = est[..., 0]
    if not len(sums):
        return coords, cell_var, total_var
    cross = est[..., 1:]  # regions x cells x J
    cross_total = cross.sum(axis=1)  # Cov(total of each region, g)
    gap = sums.rows @ coords.sum(axis=1) - sums.values
    scale = max(float(total_var.max(initial=0.0)), float(cell_var.max(initial=0.0)))
    whiten = whitening(np.asarray(sums.rows @ cross_total), gap, sums.labels, scale)
    coords = coords - cross @ (whiten @ (whiten.T @ gap))
    white = cross.reshape(-1, len(sums)) @ whiten
    cell_var = np.maximum(cell_var - (white**2).sum(axis=1).reshape(cell_var.shape), 0.0)
    total_var = np.maximum(total_var - ((cross_total @ whiten) ** 2).sum(axis=1), 0.0)
    return coords, cell_var, total_var


def whitening(cov: np.ndarray, gap: np.ndarray, labels: list[str], scale: float = 0.0) -> np.ndarray:
    """``W`` with ``W W^T`` the pseudo-inverse of ``cov`` (the facts' covariance).

    Facts that are implied by others (a region and its only child, a parent and all its children, a
    group of regions whose totals are exact anyway) make ``cov`` singular; they must then agree with
    the others (the gap has no part in the null space), else the facts contradict each other and are
    refused.  An eigenvalue counts as zero below ``1e-10`` times the problem's variance scale (or the
    largest eigenvalue): when every fact is implied, ``cov`` is rounding alone, and dividing by it
    would turn rounding into variance.

    Parameters
    ----------
    cov : numpy.ndarray
        ``J x J``: the covariance of the estimated facts.
    gap : numpy.ndarray
        The estimated facts minus their exact values.
    labels : list of str
        The facts, for the refusal.
    scale : float, optional
        The largest variance of a region total or cell before the correction.
    """
    mu, q = np.linalg.eigh((cov + cov.T) / 2)
    keep = mu > 1e-10 * max(float(mu.max()), scale, 1e-300)
    null = q[:, ~keep].T @ gap
    if null.size and np.abs(null).max() > 1e-7 * max(1.0, float(np.abs(gap).max())):
        raise DataValidationError("totals", f"the exact totals of {labels} contradict each other (tree sums)")
    return q[:, keep] / np.sqrt(mu[keep])
