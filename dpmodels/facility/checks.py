"""Checks of the facility family's inputs: each refuses bad input with an error naming the field.

λ (the HST and embedding parameter), ε, facility costs, client counts and metrics.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

__all__ = ["METRIC_TOL", "check_lambda", "check_epsilon", "check_cost", "check_counts", "check_metric"]

#: Relative tolerance of the metric checks.
METRIC_TOL = 1e-9


def check_lambda(lam, field_name: str = "lam") -> float:
    """λ of the mechanism and the embedding: a finite number in the open interval (1, 2) (spec 8.1.10).

    Parameters
    ----------
    lam : float
        λ.
    field_name : str, optional
        The name the error gives for the value.
    """
    if isinstance(lam, bool) or not isinstance(lam, int | float | np.integer | np.floating):
        raise DataValidationError(field_name, f"must be a number in (1, 2), got {lam!r}")
    lam = float(lam)
    if not (1.0 < lam < 2.0):
        raise DataValidationError(
            field_name, f"must lie in the open interval (1, 2) (Lemma 15 needs λ < 2, Definition 3 λ > 1), got {lam}"
        )
    return lam


def check_epsilon(eps, field_name: str = "epsilon") -> float:
    """A privacy budget: finite and > 0.

    Parameters
    ----------
    eps : float
        The budget.
    field_name : str, optional
        The name the error gives for the value.
    """
    if isinstance(eps, bool) or not isinstance(eps, int | float | np.integer | np.floating):
        raise PrivacyParameterError(field_name, f"must be a finite number > 0, got {eps!r}")
    eps = float(eps)
    if not (math.isfinite(eps) and eps > 0):
        raise PrivacyParameterError(field_name, f"must be finite and > 0, got {eps}")
    return eps


def check_cost(f, n_sites: int | None = None, field_name: str = "f") -> float | np.ndarray:
    """A facility cost: a finite number >= 0, or (with ``n_sites``) one such number per site.

    Parameters
    ----------
    f : float or array_like
        The facility cost(s).
    n_sites : int, optional
        The number of sites a per-site vector must have.
    field_name : str, optional
        The name the error gives for the value.
    """
    try:
        arr = None if isinstance(f, bool | str) else np.asarray(f, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None:
        raise DataValidationError(field_name, f"must be a finite number >= 0, got {f!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise DataValidationError(field_name, f"must be finite and >= 0, got {f!r}")
    if arr.ndim == 0:
        return float(arr)
    if n_sites is None or arr.shape != (n_sites,):
        raise DataValidationError(field_name, f"must be a scalar or one cost per site ({n_sites}), got {arr.shape}")
    return arr


def check_counts(N, n: int, field_name: str = "N") -> np.ndarray:
    """Client counts: ``n`` non-negative integers (integer-valued floats are accepted, nothing is rounded).

    Parameters
    ----------
    N : array_like
        The client counts.
    n : int
        The number of locations.
    field_name : str, optional
        The name the error gives for the value.
    """
    arr = np.asarray(N)
    if arr.shape != (n,):
        raise DataValidationError(field_name, f"must hold one count per location ({n}), got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise DataValidationError(field_name, f"must be non-negative integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))[:5].tolist()
        raise DataValidationError(field_name, f"must be integers; non-integer entries at {bad}")
    if np.any(arr < 0):
        raise DataValidationError(
            field_name, f"must be >= 0; negative entries at {np.flatnonzero(arr < 0)[:5].tolist()}"
        )
    return arr.astype(np.int64)


def check_metric(d: np.ndarray, tol: float = METRIC_TOL, triangle: bool = True) -> None:
    """Refuse ``d`` unless it is a metric: square, finite, symmetric, zero diagonal, non-negative,
    and (``triangle``) within ``tol`` of the triangle inequality.

    Parameters
    ----------
    d : numpy.ndarray
        A distance matrix.
    tol : float, optional
        Relative tolerance.
    triangle : bool, default True
        Check the triangle inequality (``O(n^3)``).
    """
    n = d.shape[0]
    if d.ndim != 2 or d.shape != (n, n) or n < 1:
        raise DataValidationError("d", f"must be a non-empty square matrix, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise DataValidationError("d", "must be finite")
    if np.any(d < 0):
        raise DataValidationError("d", "distances must be >= 0")
    if np.any(np.diag(d) != 0):
        raise DataValidationError("d", "the diagonal must be 0 (d(v, v) = 0)")
    scale = max(float(d.max()), 1e-300)
    asym = np.abs(d - d.T).max()
    if asym > tol * scale:
        raise DataValidationError("d", f"is not symmetric (max |d - d^T| = {asym:.3g})")
    if not triangle:
        return
    # triangle inequality d(i,k) <= d(i,j) + d(j,k), one intermediate j at a time (O(n^3) time, O(n^2) memory)
    for j in range(n):
        excess = d - (d[:, j][:, None] + d[j, :][None, :])
        worst = excess.max()
        if worst > tol * scale:
            i, k = np.unravel_index(int(excess.argmax()), excess.shape)
            raise DataValidationError(
                "d",
                f"is not a metric: triangle inequality fails, d({i},{k}) = {d[i, k]:.6g} > "
                f"d({i},{j}) + d({j},{k}) = {d[i, j] + d[j, k]:.6g}",
            )
