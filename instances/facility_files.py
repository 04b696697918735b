"""A user's facility-location tables: points and counts (:func:`from_files`), a points table with a
count column (:func:`from_csv`, what ``dpmodels release facility`` reads) and the same in memory
(:func:`from_frame`).  Re-exported by :mod:`dpmodels.instances.facility`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.tables import read_table, source_name, source_stem
from dpmodels.facility.data import UFLInstance
from dpmodels.facility.release import count_cap

__all__ = ["from_files", "from_csv", "from_frame"]


def from_files(points, counts=None, f: float = 1.0, name: str | None = None) -> UFLInstance:
    """A user's instance: ``points`` is a CSV/whitespace file of coordinates (one location per row, an
    optional header row), ``counts`` one non-negative integer per location (a single column, or the
    last column of ``points`` when omitted)."""
    pts = _read_table(points, "points")
    if counts is None:
        if pts.shape[1] < 2:
            raise DataValidationError("counts", "no counts file and the points file has a single column")
        pts, N = pts[:, :-1], pts[:, -1]
    else:
        N = _read_table(counts, "counts")
        if N.shape[1] != 1:
            raise DataValidationError("counts", f"must have one column (one count per location), got {N.shape[1]}")
        N = N[:, 0]
        if N.size != pts.shape[0]:
            raise DataValidationError("counts", f"{N.size} counts for {pts.shape[0]} points")
    return UFLInstance(points=pts, f=f, N=N, name=name or Path(points).stem)


def _read_table(path, field: str) -> np.ndarray:
    path = Path(path)
    if not path.is_file():
        raise DataValidationError(field, f"no such file: {path}")
    lines = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    rows = [ln.replace(",", " ").split() for ln in lines]
    try:
        float(rows[0][0])
    except (ValueError, IndexError):
        rows = rows[1:]  # header
    if not rows:
        raise DataValidationError(field, f"{path} holds no data rows")
    try:
        arr = np.array([[float(v) for v in row] for row in rows])
    except ValueError as err:
        raise DataValidationError(field, f"{path}: non-numeric entry ({err})") from err
    except Exception as err:  # ragged rows
        raise DataValidationError(field, f"{path}: rows of different lengths") from err
    return arr


def from_csv(path, f: float = 1.0, count_column: str = "count", name: str | None = None) -> UFLInstance:
    """A user's points CSV (what ``dpmodels release facility`` reads).

    Parameters
    ----------
    path
        A CSV with a header row, one point per row: numeric coordinate columns (the public
        locations) and ``count_column``, the clients at each point (the private data).
    f
        The declared facility opening cost.
    count_column
        The column of client counts: non-negative integers.  A blank, non-numeric, negative or
        fractional count is malformed and refused naming the row.
    name
        The instance's name (default: the file's stem).

    Rows with identical coordinates are one location (their counts add up), and the locations
    are in lexicographic order of their coordinates: the FRT tree needs distinct locations, and
    neither the grouping nor the order depends on the counts or on the rows' order.  Each
    location's count is clamped to :func:`dpmodels.facility.release.count_cap` of the number of
    locations (a stated rule, never a refusal); the float sum of a location's rows is exact below
    the cap (a sum reaching ``2^53`` stays above the cap, ``<= 2^40``).  ``info["columns"]`` holds the
    coordinate names.
    """
    frame = read_table(path, field="points")
    path = source_name(path, "points")
    if count_column not in frame.columns:
        raise DataValidationError(str(path), f"no {count_column!r} column of client counts (has {list(frame.columns)})")
    columns = [c for c in frame.columns if c != count_column]
    if not columns:
        raise DataValidationError(str(path), "no coordinate columns besides the counts")
    pts = np.column_stack([_numeric_column(frame, c, path) for c in columns])
    counts = _numeric_column(frame, count_column, path, quote=False)  # private: the entry is not quoted
    bad = np.flatnonzero((counts < 0) | (counts != np.round(counts)))
    if bad.size:
        raise DataValidationError(
            str(path), f"column {count_column!r} must hold non-negative integers; data row {bad[0] + 1} is not one"
        )
    _, first, group = np.unique(pts, axis=0, return_index=True, return_inverse=True)
    totals = np.bincount(group.ravel(), weights=counts, minlength=first.size)
    N = np.minimum(totals, count_cap(first.size)).astype(np.int64)  # the stated rule: clamp to the cap
    info = {"columns": columns, "count_column": count_column}
    return UFLInstance(points=pts[first], f=f, N=N, name=name or source_stem(path, "points"), info=info)


def _numeric_column(frame: pd.DataFrame, column: str, path, quote: bool = True) -> np.ndarray:
    """``frame[column]`` as finite floats; a blank, non-numeric or infinite entry is refused with its row
    (and, when ``quote``, its text: never for a private column)."""
    text = frame[column].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        shown = f"has {text.iloc[bad[0]]!r}" if quote else "is not one"
        raise DataValidationError(str(path), f"column {column!r} needs finite numbers; data row {bad[0] + 1} {shown}")
    return values


def from_frame(points, f: float = 1.0, count_column: str = "count", name: str | None = None) -> UFLInstance:
    """:func:`from_csv` for a table in memory: ``points`` may be a pandas DataFrame (or a
    ``.csv``/``.parquet`` path) with the coordinate columns and ``count_column``.

    Parameters
    ----------
    points, f, count_column, name
        As in :func:`from_csv`.
    """
    return from_csv(points, f=f, count_column=count_column, name=name)
