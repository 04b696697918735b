"""Error metrics and constraint-violation counts for hierarchical releases.

All functions take arrays in the (regions, cells) layout of a :class:`Hierarchy`, so any
family that releases a histogram per region (PGSR, TopDown) reports the same numbers.
"""

from __future__ import annotations

import numpy as np

from .hierarchy import Hierarchy

__all__ = [
    "per_level_l1",
    "consistency_violations",
    "faithfulness_violations",
    "negative_cells",
    "non_integral_cells",
    "release_metrics",
]


def per_level_l1(hierarchy: Hierarchy, truth: np.ndarray, released: np.ndarray) -> np.ndarray:
    """``sum_{r in R_l} ||truth^r - released^r||_1`` for each level l = 1..L."""
    err = np.abs(np.asarray(released, dtype=np.float64) - np.asarray(truth, dtype=np.float64))
    rows = err.reshape(err.shape[0], -1).sum(axis=1)
    return np.array([rows[hierarchy.level_slice(lvl)].sum() for lvl in range(1, hierarchy.n_levels + 1)])


def consistency_violations(hierarchy: Hierarchy, released: np.ndarray, tol: float = 1e-6) -> int:
    """Cells ``(r, s)`` of internal regions that differ from the sum of their children (#CV)."""
    return int((np.abs(hierarchy.consistency_residual(np.asarray(released, dtype=np.float64))) > tol).sum())


def faithfulness_violations(hierarchy: Hierarchy, released: np.ndarray, total: float, tol: float = 1e-6) -> int:
    """Levels whose released cells do not sum to the public ``total`` (G)."""
    values = np.asarray(released, dtype=np.float64)
    sums = [values[hierarchy.level_slice(lvl)].sum() for lvl in range(1, hierarchy.n_levels + 1)]
    return int(sum(abs(s - total) > tol for s in sums))


def negative_cells(released: np.ndarray, tol: float = 1e-6) -> int:
    return int((np.asarray(released, dtype=np.float64) < -tol).sum())


def non_integral_cells(released: np.ndarray, tol: float = 1e-6) -> int:
    values = np.asarray(released, dtype=np.float64)
    return int((np.abs(values - np.round(values)) > tol).sum())


def release_metrics(hierarchy: Hierarchy, truth: np.ndarray, released: np.ndarray, total: float) -> dict:
    """Per-level L1 errors, total L1 and the violation counts of one release, as a flat dict."""
    l1 = per_level_l1(hierarchy, truth, released)
    out = {f"L1 level {lvl}": float(v) for lvl, v in enumerate(l1, start=1)}
    out["L1 total"] = float(l1.sum())
    out["#CV"] = consistency_violations(hierarchy, released)
    out["#faithfulness"] = faithfulness_violations(hierarchy, released, total)
    out["#negative"] = negative_cells(released)
    out["#non-integral"] = non_integral_cells(released)
    return out
