"""A user's PGSR tables: the hierarchy (:func:`read_hierarchy`), counts or records by region
(:func:`from_csv`, what ``dpmodels release pgsr`` reads) and the same in memory (:func:`from_frame`).
Re-exported by :mod:`dpmodels.instances.pgsr`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.tables import align_sizes, read_table, source_name, source_stem
from dpmodels.pgsr.bounding import fit_width
from dpmodels.pgsr.data import GroupSizeData

__all__ = ["read_hierarchy", "from_csv", "from_frame"]


def read_hierarchy(path: str | Path) -> Hierarchy:
    """The declared hierarchy of a ``region,parent`` CSV (the root's parent empty).

    Names are read as the text they are (``01`` stays ``01``, as in a records or counts file; read as
    numbers, ``01`` became ``1`` and, with the root's empty parent, ``13`` became ``13.0``).  The
    regions are read by label, never by row position: the children of a region come in label order,
    so a file whose rows are shuffled declares the same hierarchy.

    Parameters
    ----------
    path
        The CSV file; every problem is refused naming it.
    """
    table = read_table(path, ["region", "parent"], nonblank=["region"], field="hierarchy")
    return Hierarchy.from_parent_table(table.sort_values("region", kind="stable"))


def from_csv(
    hierarchy: str | Path | Hierarchy,
    counts: str | Path | None = None,
    records: str | Path | None = None,
    N: int | None = None,
    overflow: str = "top",
    name: str | None = None,
    z_max: int = 1,
) -> GroupSizeData:
    """Load a user's hierarchy (``region,parent``) with either group-size counts or records.

    Data outside the declared facts is handled by the stated rules of :mod:`dpmodels.pgsr.bounding`,
    never by refusing the file: quantities are clamped to ``[0, z_max]``, units and counts of regions
    that are not leaves of the hierarchy are left out (internal regions, if given in a counts file,
    must agree with their leaves), units of size 0 are left out, and sizes above ``N`` are counted
    in the size-``N`` bin.  Malformed files are refused naming the file: missing columns, blank
    keys, non-integers, a user on two rows, a unit in two regions, a (region, size) pair or a region
    given twice, a negative count or size.

    Parameters
    ----------
    hierarchy
        The ``region,parent`` CSV, or a hierarchy already read (:func:`read_hierarchy`).
    counts
        Long format ``region,size,count`` for the leaves (absent leaves and sizes count zero), or
        wide format with a ``region`` column and one column per size ``1..w``.
    records
        Individual rows ``user,unit,region,quantity`` (spec 1.1); give exactly one of the two.
    N
        The declared largest group size, a public fact.  None reads it from the data (the largest
        size, or the wide format's width): ``N_declared`` is then False and a private release
        refuses the data.
    overflow
        ``"top"`` (default): sizes above ``N`` in the size-``N`` bin; ``"error"``: refuse them
        (experiments only).
    name
        A label (default: the data file's name).
    z_max
        The declared public bound on one person's quantity (the noise is calibrated to it).
    """
    if (counts is None) == (records is None):
        raise DataValidationError("counts/records", "give exactly one of counts= or records=")
    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    source, field = (counts, "counts") if records is None else (records, "records")
    label, where = name or source_stem(source, field), source_name(source, field)
    if records is not None:
        frame = read_table(
            records, ["user", "unit", "region", "quantity"], nonblank=["user", "unit", "region"], field="records"
        )
        try:
            return GroupSizeData.from_records(frame, tree, N, overflow, label, z_max)
        except DataValidationError as err:
            if err.field in ("N", "z_max", "overflow"):
                raise
            raise DataValidationError(where, f"{err.field}: {err.problem}") from err
    frame = read_table(counts, ["region"], field="counts", dtype={"region": str}, keep_default_na=True)
    wide, sparse = _wide_counts(_set_aside_level(frame, tree, where), where)
    given = wide.index.intersection([tree.names[i] for i in tree.internal])
    leaf_names = [tree.names[i] for i in tree.leaves]
    leaf = wide.reindex(leaf_names, fill_value=0).to_numpy()  # absent leaves count zero; others are left out
    try:
        data = GroupSizeData.from_leaf_counts(tree, leaf, label, z_max, N, overflow)
    except DataValidationError as err:
        if err.field in ("N", "z_max", "overflow"):
            raise
        raise DataValidationError(where, f"{err.field}: {err.problem}") from err
    _check_internal_rows(tree, wide, given, data, where)
    return data


def _set_aside_level(frame: pd.DataFrame, tree: Hierarchy, path) -> pd.DataFrame:
    """The table without its ``level`` column, which ``GroupSizeData.to_frame()`` and ``release_frame``
    write: each region of the hierarchy must be at its declared level (regions outside it are left
    out later, whatever their level), so that a table of another hierarchy is not read silently."""
    if "level" not in frame.columns:
        return frame
    given = pd.to_numeric(frame["level"], errors="coerce")
    declared = frame["region"].map(dict(zip(tree.names, tree.level, strict=True)))
    wrong = np.flatnonzero((declared.notna() & (given != declared)).to_numpy())
    if wrong.size:
        row = wrong[0]
        value = frame["level"].iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        raise DataValidationError(
            str(path),
            f"column 'level' of region {frame['region'].iloc[row]!r} is {value!r}, declared {int(declared.iloc[row])}",
        )
    return frame.drop(columns="level")


def _check_internal_rows(tree: Hierarchy, wide: pd.DataFrame, given, data: GroupSizeData, path) -> None:
    """Internal regions given in a counts file must equal the sum of their leaves (a consistency
    violation of the table is malformed input), compared in the data's size bins."""
    for region in given:
        binned = fit_width(wide.loc[[region]].to_numpy(), data.N, "top")  # the leaves' size bins
        if not np.array_equal(binned[0], data.counts[tree.index[region]]):
            raise DataValidationError(str(path), f"counts of {region!r} differ from the sum of its leaves")


def _wide_counts(frame: pd.DataFrame, path) -> tuple[pd.DataFrame, bool]:
    """Counts as a (region x size ``1..w``) table, and whether the file was in long format.

    Long format: integer ``size`` and ``count`` columns, counts >= 0, sizes >= 0 (size-0 rows are
    not groups and are left out), each (region, size) once.  Wide format: size columns ``1..w``
    (matched by label, in any order), each region once.
    """
    if {"size", "count"} <= set(frame.columns):
        for col in ("size", "count"):
            vals = pd.to_numeric(frame[col], errors="coerce")
            if vals.isna().any() or (vals % 1 != 0).any():
                raise DataValidationError(str(path), f"column {col!r} must hold integers")
            frame = frame.assign(**{col: vals.astype(np.int64)})
        if (frame["count"] < 0).any():
            bad = frame.loc[frame["count"] < 0].iloc[0]
            raise DataValidationError(
                str(path), f"negative count {bad['count']} for region {bad['region']!r}, size {bad['size']}"
            )
        if (frame["size"] < 0).any():
            raise DataValidationError(str(path), "sizes must be >= 0 (size 0 is not a group and is left out)")
        if frame.duplicated(["region", "size"]).any():
            raise DataValidationError(str(path), "a (region, size) pair appears twice")
        frame = frame[frame["size"] >= 1]
        width = int(frame["size"].max()) if len(frame) else 1
        wide = frame.pivot(index="region", columns="size", values="count")
        wide = wide.reindex(columns=range(1, width + 1)).fillna(0).astype(np.int64)
        return wide, True
    if frame["region"].duplicated().any():
        raise DataValidationError(
            str(path), f"region {frame['region'][frame['region'].duplicated()].iloc[0]!r} appears twice"
        )
    wide = frame.set_index("region")
    if wide.shape[1] == 0:
        raise DataValidationError(str(path), "wide counts need size columns 1..N, or use region,size,count")
    return align_sizes(wide, str(path)), False


def from_frame(hierarchy, counts=None, records=None, **declared) -> GroupSizeData:
    """:func:`from_csv` for tables in memory: each of ``hierarchy``, ``counts`` and ``records`` may
    be a pandas DataFrame (or a ``.csv``/``.parquet`` path), read by its column labels and, for
    labels held in the index (``region`` as the index), by the index.

    Parameters
    ----------
    hierarchy, counts, records
        As in :func:`from_csv`.
    **declared
        ``N``, ``overflow``, ``name``, ``z_max``, as in :func:`from_csv`.
    """
    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    return from_csv(tree, counts=counts, records=records, **declared)
