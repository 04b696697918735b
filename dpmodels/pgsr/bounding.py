"""Contribution bounding for PGSR: the stated rules that turn a user's records into group sizes.

Whether a release happens must not depend on one person, so data outside a *declared* bound is
handled by a rule, never by refusing the whole release (as OpenDP and Tumult Analytics clamp and
truncate).  The rules, applied in this order, each stated in :data:`RULES` (the release's manifest
quotes them; how many records a rule touched is never computed for output, printed or stored):

1. **Clamp** (``CLAMP``): each person's quantity is clamped to ``[0, z_max]``, the declared bound
   the noise is calibrated to, before the unit's size is summed.
2. **Leave out regions** (``LEAVE_OUT_REGIONS``): units whose region is not a leaf of the declared
   hierarchy are left out.
3. **Leave out empty units** (``LEAVE_OUT_EMPTY``): a unit of total size 0 is not a group.
4. **Top bin** (``TOP_BIN``, ``overflow="top"``): a group larger than the declared ``N`` is counted
   in the size-``N`` bin ("N or more").  ``overflow="error"`` refuses such data instead; it exists
   for experiments only (a refusal reveals that one group is larger than ``N``).

What stays refused is *malformed* input, a table that violates its own keys or types: missing
columns, quantities that are not integers, a user on two rows (``user`` is the key), a unit whose
members name two regions (``unit`` determines ``region``), negative group sizes or counts.  Why the
rules keep the documented sensitivities is in :mod:`dpmodels.pgsr.sensitivity`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

__all__ = [
    "Overflow",
    "OVERFLOWS",
    "CLAMP",
    "LEAVE_OUT_REGIONS",
    "LEAVE_OUT_EMPTY",
    "TOP_BIN",
    "RULES",
    "overflow_rule",
    "validate_overflow",
    "unit_sizes",
    "leaf_groups",
    "size_bins",
    "fit_width",
]

Overflow = Literal["top", "error"]
OVERFLOWS = ("top", "error")

CLAMP = "each person's quantity is clamped to [0, z_max] (the declared bound) before the unit's size is summed"
LEAVE_OUT_REGIONS = "units whose region is not a leaf of the declared hierarchy are left out"
LEAVE_OUT_EMPTY = "units of total size 0 are not groups and are left out"
TOP_BIN = "groups larger than N are counted in the size-N bin ('N or more')"
#: The rules of a private release, in the order they are applied.
RULES = (CLAMP, LEAVE_OUT_REGIONS, LEAVE_OUT_EMPTY, TOP_BIN)
_REFUSE = "data with a group larger than N is refused (overflow='error': NOT private, for experiments only)"


def validate_overflow(overflow) -> str:
    """``overflow`` if it is ``"top"`` or ``"error"``, else refuse naming the field."""
    if overflow not in OVERFLOWS:
        raise DataValidationError("overflow", f"must be 'top' or 'error', got {overflow!r}")
    return overflow


def overflow_rule(overflow: Overflow) -> str:
    """The sentence that states what happens to a group larger than ``N`` under ``overflow``."""
    return TOP_BIN if validate_overflow(overflow) == "top" else _REFUSE


def unit_sizes(records: pd.DataFrame, z_max: int, n_sizes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's region and size (the sum of its members' clamped quantities), in first-seen order.

    Parameters
    ----------
    records
        One row per person with columns ``user, unit, region, quantity``.  Refused as malformed:
        a missing column, a quantity that is not an integer, a user on two rows, a unit whose
        members name two regions (the table's keys).  A quantity outside ``[0, z_max]`` is not
        malformed: it is clamped (rule :data:`CLAMP`), so no one record decides whether a release
        happens.
    z_max
        The declared public bound on one person's quantity.
    n_sizes
        The declared ``N``, if any: quantities are then also capped at ``N + 1``, which changes no
        binned size (a unit with such a member is larger than ``N`` either way) and keeps the sums
        far from int64 overflow whatever ``z_max`` is declared.
    """
    missing = {"user", "unit", "region", "quantity"} - set(records.columns)
    if missing:
        raise DataValidationError("records", f"missing columns {sorted(missing)}")
    for column in ("user", "unit", "region"):
        if records[column].isna().any():
            row = int(np.flatnonzero(records[column].isna().to_numpy())[0])
            raise DataValidationError("records", f"column {column!r} is empty on data row {row + 1}")
    if records["user"].duplicated().any():
        dup = records.loc[records["user"].duplicated(), "user"].iloc[0]
        raise DataValidationError("records", f"user {dup!r} appears twice (one row per person)")
    q = pd.to_numeric(records["quantity"], errors="coerce")
    if q.isna().any() or (q % 1 != 0).any():
        raise DataValidationError("quantity", "must be integers (values outside [0, z_max] are clamped)")
    cap = z_max if n_sizes is None else min(z_max, n_sizes + 1)
    clamped = q.clip(0, cap).astype(np.int64)
    per_unit = records.assign(quantity=clamped).groupby("unit", sort=False)
    regions = per_unit["region"].unique()
    split = regions[regions.map(len) > 1]
    if len(split):
        raise DataValidationError(
            "records", f"unit {split.index[0]!r} has members in several regions {list(split.iloc[0])}"
        )
    leaf_regions = regions.map(lambda a: a[0]).astype(str).to_numpy()
    return leaf_regions, per_unit["quantity"].sum().to_numpy(dtype=np.int64)


def leaf_groups(hierarchy: Hierarchy, regions, sizes) -> tuple[np.ndarray, np.ndarray]:
    """The groups that count: ``(leaf position, size)`` of every group in a leaf with size >= 1.

    Parameters
    ----------
    hierarchy
        The declared hierarchy.  Groups whose region is not one of its leaves are left out
        (rule :data:`LEAVE_OUT_REGIONS`).
    regions, sizes
        One region name and one size per group.  Sizes must be non-negative integers (a negative
        or fractional size is malformed); size 0 is not a group and is left out
        (rule :data:`LEAVE_OUT_EMPTY`).
    """
    sizes = np.asarray(sizes)
    regions = np.asarray(regions).astype(str)
    if sizes.shape != regions.shape or sizes.ndim != 1:
        raise DataValidationError("sizes", f"need one size per group region; shapes {sizes.shape} and {regions.shape}")
    if sizes.size and not np.issubdtype(sizes.dtype, np.integer):
        if not np.issubdtype(sizes.dtype, np.number) or not np.all(np.mod(sizes, 1) == 0):
            raise DataValidationError("sizes", "group sizes must be integers")
        sizes = sizes.astype(np.int64)
    if (sizes < 0).any():
        raise DataValidationError("sizes", "group sizes must be >= 0 (a size cannot be negative)")
    leaf_pos = {hierarchy.names[i]: k for k, i in enumerate(hierarchy.leaves)}
    rows = np.array([leaf_pos.get(r, -1) for r in regions], dtype=np.int64)
    keep = (rows >= 0) & (sizes >= 1)
    return rows[keep], sizes[keep].astype(np.int64)


def size_bins(sizes: np.ndarray, n_sizes: int, overflow: Overflow) -> np.ndarray:
    """Sizes mapped to the bins ``1..N``: above ``N`` into bin ``N`` (rule :data:`TOP_BIN`).

    Parameters
    ----------
    sizes
        Group sizes >= 1.
    n_sizes
        The number of size bins ``N``.
    overflow
        ``"top"`` (the rule) or ``"error"``: refuse data with a group larger than ``N`` (experiments
        only; the error does not say how many groups).
    """
    if validate_overflow(overflow) == "error" and (sizes > n_sizes).any():
        raise DataValidationError("sizes", f"a group is larger than N={n_sizes}; {_RAISE_N}")
    return np.minimum(sizes, n_sizes)


def fit_width(leaf: np.ndarray, n_sizes: int, overflow: Overflow) -> np.ndarray:
    """Per-leaf counts of sizes ``1..w`` resized to ``1..N``: padded with zeros, or larger sizes
    counted in column ``N`` (rule :data:`TOP_BIN`; ``overflow="error"`` refuses a non-zero count
    beyond ``N``).

    Parameters
    ----------
    leaf
        Counts, one row per leaf, column ``s - 1`` for size ``s``.
    n_sizes
        The declared ``N``.
    overflow
        ``"top"`` or ``"error"``, as in :func:`size_bins`.
    """
    width = leaf.shape[1]
    if width <= n_sizes:
        return np.pad(leaf, ((0, 0), (0, n_sizes - width)))
    beyond = leaf[:, n_sizes:]
    if validate_overflow(overflow) == "error" and beyond.any():
        raise DataValidationError("counts", f"there are groups larger than N={n_sizes}; {_RAISE_N}")
    out = leaf[:, :n_sizes].copy()
    out[:, -1] += beyond.sum(axis=1)
    return out


_RAISE_N = (
    "declare a larger N, or count them in the size-N bin with overflow='top' (--overflow top on the command "
    "line, the default)"
)
