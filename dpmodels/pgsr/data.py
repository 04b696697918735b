"""PGSR data: group-size hierarchies, their noisy releases and transforms (domains: ``domains.py``).

``counts[r, s-1]`` is ``n_s^r``, the number of groups of size ``s`` in region ``r``
(spec section 1.1).  Rows follow the hierarchy's canonical order.  :class:`GroupSizeData`
is the sensitive truth; :class:`NoisyGroupSizes` is all a post-processor may see: noisy
values plus the public hierarchy, ``N`` and ``G`` (spec section 7.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

from .sensitivity import require_quantities_within, validate_z_max

__all__ = [
    "GroupSizeData",
    "NoisyGroupSizes",
    "cumulative",
    "decumulate",
    "chain_cumulative",
    "chain_decumulate",
    "chain_order",
]

Kind = Literal["counts", "cumulative", "chain"]


# ---------------------------------------------------------------------- transforms
def cumulative(values: np.ndarray) -> np.ndarray:
    """The operator (+): ``c_s = sum_{k<=s} n_k`` along the size axis (spec 2.3)."""
    return np.cumsum(values, axis=-1)


def decumulate(values: np.ndarray) -> np.ndarray:
    """The operator (-): first differences along the size axis, the inverse of (+)."""
    values = np.asarray(values)
    return np.diff(values, axis=-1, prepend=np.zeros_like(values[..., :1]))


def chain_order(hierarchy: Hierarchy, n_sizes: int) -> tuple[np.ndarray, np.ndarray]:
    """Regions and 0-based sizes of the chain nodes ``a_1..a_{|R|N}`` (spec 4.6).

    Size-major post-order of the DP tree without its dummy root: all of size 1 in
    post-order of the hierarchy, then size 2, and so on.
    """
    post = hierarchy.postorder
    regions = np.tile(post, n_sizes)
    sizes = np.repeat(np.arange(n_sizes), len(post))
    return regions, sizes


def chain_cumulative(hierarchy: Hierarchy, values: np.ndarray) -> np.ndarray:
    """Per-level running sums along the chain: ``c_i = sum of n_j, j <= i, same level``.

    Returned in the (regions, sizes) layout.  Within a level, chain order is size-major
    and then the level's canonical order (which equals its post-order).
    """
    values = np.asarray(values)
    out = np.empty_like(values)
    for level in range(1, hierarchy.n_levels + 1):
        block = values[hierarchy.level_slice(level)]
        out[hierarchy.level_slice(level)] = np.cumsum(block.T.ravel()).reshape(block.T.shape).T
    return out


def chain_decumulate(hierarchy: Hierarchy, chain: np.ndarray) -> np.ndarray:
    """Inverse of :func:`chain_cumulative`: per-level first differences along the chain."""
    chain = np.asarray(chain)
    out = np.empty_like(chain)
    for level in range(1, hierarchy.n_levels + 1):
        block = chain[hierarchy.level_slice(level)]
        flat = block.T.ravel()
        out[hierarchy.level_slice(level)] = np.diff(flat, prepend=np.zeros_like(flat[:1])).reshape(block.T.shape).T
    return out


# ---------------------------------------------------------------------- true data
@dataclass(frozen=True, eq=False)
class GroupSizeData:
    """The sensitive group-size hierarchy: ``counts[r, s-1] = n_s^r`` for every region.

    ``z_max`` is the declared public bound on one person's unit quantity (the paper's
    ``z in {0, 1}`` is ``z_max = 1``); the noise is calibrated to it (see :mod:`dpmodels.pgsr.sensitivity`).
    """

    hierarchy: Hierarchy
    counts: np.ndarray
    name: str = "pgsr"
    z_max: int = 1

    def __post_init__(self):
        self.hierarchy.require_uniform_depth("hierarchy")
        object.__setattr__(self, "z_max", validate_z_max(self.z_max))
        counts = _integer_matrix(self.counts, "counts", (self.hierarchy.n_regions, None))
        if counts.shape[1] < 1:
            raise DataValidationError("counts", "needs at least one group size (N >= 1)")
        if (counts < 0).any():
            r, s = np.argwhere(counts < 0)[0]
            raise DataValidationError(
                "counts", f"negative count {counts[r, s]} at region {self.hierarchy.names[r]!r}, size {s + 1}"
            )
        residual = self.hierarchy.consistency_residual(counts)
        if residual.any():
            k, s = np.argwhere(residual != 0)[0]
            r = self.hierarchy.internal[k]
            raise DataValidationError(
                "counts",
                f"region {self.hierarchy.names[r]!r}, size {s + 1}: {counts[r, s]} != sum of its children "
                f"({counts[r, s] - residual[k, s]}); build from leaf counts to aggregate",
            )
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def from_leaf_counts(cls, hierarchy: Hierarchy, leaf_counts, name: str = "pgsr", z_max: int = 1) -> GroupSizeData:
        """Aggregate per-leaf group-size vectors (rows in ``hierarchy.leaves`` order) up the tree."""
        leaf = _integer_matrix(leaf_counts, "leaf_counts", (len(hierarchy.leaves), None))
        if (leaf < 0).any():
            i, s = np.argwhere(leaf < 0)[0]
            raise DataValidationError(
                "leaf_counts", f"negative count at leaf {hierarchy.names[hierarchy.leaves[i]]!r}, size {s + 1}"
            )
        return cls(hierarchy, hierarchy.aggregate(leaf), name, z_max)

    @classmethod
    def from_groups(
        cls,
        hierarchy: Hierarchy,
        regions,
        sizes,
        n_sizes: int | None = None,
        overflow: Literal["error", "top"] = "error",
        name: str = "pgsr",
        z_max: int = 1,
    ) -> GroupSizeData:
        """Count groups per leaf region and size.

        Group sizes must be in ``1..N``.  With ``overflow="top"`` sizes above ``N`` are
        counted in the last bin (an explicit "N or more" bin); the default rejects them.
        """
        sizes = np.asarray(sizes)
        regions = np.asarray(regions).astype(str)
        if sizes.shape != regions.shape or sizes.ndim != 1:
            raise DataValidationError(
                "sizes", f"need one size per group region; shapes {sizes.shape} and {regions.shape}"
            )
        if sizes.size and not np.issubdtype(sizes.dtype, np.integer):
            if not np.all(np.mod(sizes, 1) == 0):
                raise DataValidationError("sizes", "group sizes must be integers")
            sizes = sizes.astype(np.int64)
        if (sizes < 1).any():
            raise DataValidationError(
                "sizes", f"group sizes must be >= 1 (found {sizes.min()}); empty groups are outside the model"
            )
        n_sizes = int(sizes.max()) if n_sizes is None else int(n_sizes)
        if n_sizes < 1:
            raise DataValidationError("n_sizes", f"must be >= 1, got {n_sizes}")
        if (sizes > n_sizes).any():
            if overflow != "top":
                raise DataValidationError(
                    "sizes",
                    f"{int((sizes > n_sizes).sum())} groups are larger than N={n_sizes}; "
                    "raise N or pass overflow='top' to count them in the last bin",
                )
            sizes = np.minimum(sizes, n_sizes)
        leaf_pos = {hierarchy.names[i]: k for k, i in enumerate(hierarchy.leaves)}
        unknown = sorted(set(regions) - set(leaf_pos))
        if unknown:
            raise DataValidationError("regions", f"not leaves of the hierarchy: {unknown[:5]}")
        rows = np.array([leaf_pos[r] for r in regions], dtype=np.int64)
        leaf = np.zeros((len(leaf_pos), n_sizes), dtype=np.int64)
        np.add.at(leaf, (rows, sizes - 1), 1)
        return cls.from_leaf_counts(hierarchy, leaf, name, z_max)

    @classmethod
    def from_records(
        cls,
        records: pd.DataFrame,
        hierarchy: Hierarchy,
        n_sizes: int | None = None,
        overflow: Literal["error", "top"] = "error",
        name: str = "pgsr",
        z_max: int = 1,
    ) -> GroupSizeData:
        """From individual records with columns ``user, unit, region, quantity`` (spec 1.1).

        A unit's group size is the sum of its members' quantities; all members of a unit
        must be in the same leaf region.  Quantities above the public bound ``z_max`` are
        refused: one person then moves a group by more than the noise is calibrated for.
        """
        z_max = validate_z_max(z_max)
        missing = {"user", "unit", "region", "quantity"} - set(records.columns)
        if missing:
            raise DataValidationError("records", f"missing columns {sorted(missing)}")
        if records["user"].duplicated().any():
            dup = records.loc[records["user"].duplicated(), "user"].iloc[0]
            raise DataValidationError("records", f"user {dup!r} appears twice")
        q = pd.to_numeric(records["quantity"], errors="coerce")
        if q.isna().any() or (q < 0).any() or (q % 1 != 0).any():
            raise DataValidationError("quantity", "must be non-negative integers")
        require_quantities_within(records["user"], q.astype(np.int64), z_max)
        per_unit = records.assign(quantity=q.astype(np.int64)).groupby("unit", sort=False)
        regions = per_unit["region"].agg(lambda s: s.unique())
        split = regions[regions.map(len) > 1]
        if len(split):
            raise DataValidationError(
                "records", f"unit {split.index[0]!r} has members in several regions {list(split.iloc[0])}"
            )
        sizes = per_unit["quantity"].sum()
        leaf_regions = regions.map(lambda a: a[0]).astype(str).to_numpy()
        return cls.from_groups(hierarchy, leaf_regions, sizes.to_numpy(), n_sizes, overflow, name, z_max)

    # ------------------------------------------------------------------ facts
    @property
    def N(self) -> int:
        return int(self.counts.shape[1])

    @property
    def G(self) -> int:
        """Total number of groups (public in PGSR)."""
        return int(self.counts[0].sum())

    @property
    def L(self) -> int:
        return self.hierarchy.n_levels

    def cumulative(self) -> np.ndarray:
        return cumulative(self.counts)

    def chain(self) -> np.ndarray:
        return chain_cumulative(self.hierarchy, self.counts)

    def frame(self) -> pd.DataFrame:
        """Counts as a table: one row per region, one column per size, plus the level."""
        df = pd.DataFrame(
            self.counts,
            index=pd.Index(self.hierarchy.names, name="region"),
            columns=pd.RangeIndex(1, self.N + 1, name="size"),
        )
        df.insert(0, "level", self.hierarchy.level)
        return df


# ---------------------------------------------------------------------- noisy data
@dataclass(frozen=True, eq=False)
class NoisyGroupSizes:
    """Noisy values in the (regions, sizes) layout plus the public ``hierarchy`` and ``G``.

    ``kind`` says what the values estimate: group-size counts ``n``, per-region cumulative
    counts ``(+)n``, or chain-cumulative values.  ``level_scales`` are the public noise
    scales per level, used to size truncated domains.  ``info`` holds the measurement's
    other public facts (``epsilon``, ``calibration``, the declared ``z_max`` and the neighbour
    relation the budget refers to).
    """

    hierarchy: Hierarchy
    values: np.ndarray
    G: int
    kind: Kind = "counts"
    level_scales: tuple[Fraction, ...] | None = None
    info: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        self.hierarchy.require_uniform_depth("hierarchy")
        values = np.array(self.values, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] != self.hierarchy.n_regions or values.shape[1] < 1:
            raise DataValidationError(
                "values", f"must have shape ({self.hierarchy.n_regions}, N>=1), got {values.shape}"
            )
        if not np.isfinite(values).all():
            raise DataValidationError("values", "contain NaN or infinity")
        if self.kind not in ("counts", "cumulative", "chain"):
            raise DataValidationError("kind", f"must be 'counts', 'cumulative' or 'chain', got {self.kind!r}")
        if isinstance(self.G, bool) or int(self.G) != self.G or self.G < 0:
            raise DataValidationError("G", f"must be a non-negative integer, got {self.G!r}")
        if self.level_scales is not None and len(self.level_scales) != self.hierarchy.n_levels:
            raise DataValidationError("level_scales", f"need one scale per level ({self.hierarchy.n_levels})")
        values.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "G", int(self.G))

    @property
    def N(self) -> int:
        return int(self.values.shape[1])

    @property
    def L(self) -> int:
        return self.hierarchy.n_levels

    def require_kind(self, kind: Kind, builder: str) -> None:
        if self.kind != kind:
            raise DataValidationError("noisy", f"{builder} needs {kind!r} values, got {self.kind!r}")

    def with_values(self, values, kind: Kind | None = None) -> NoisyGroupSizes:
        """Same public facts, other values (e.g. the pre-processed estimates of Algorithm 2)."""
        return NoisyGroupSizes(self.hierarchy, values, self.G, kind or self.kind, self.level_scales, dict(self.info))


def _integer_matrix(values, field_name: str, shape: tuple) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape[0] != shape[0]:
        raise DataValidationError(field_name, f"must be a matrix with {shape[0]} rows, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)) or np.any(np.mod(arr, 1) != 0):
            raise DataValidationError(field_name, "must contain integers")
    return arr.astype(np.int64).copy()
