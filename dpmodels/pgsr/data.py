"""PGSR data: group-size hierarchies, their noisy releases and transforms (domains: ``domains.py``).

``counts[r, s-1]`` is ``n_s^r``, the number of groups of size ``s`` in region ``r``
(spec section 1.1).  Rows follow the hierarchy's canonical order.  :class:`GroupSizeData`
is the sensitive truth; :class:`NoisyGroupSizes` is all a post-processor may see: noisy
values plus the public hierarchy, ``N`` and ``G`` (spec section 7.2).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.tables import region_frame, region_matrix

from .bounding import Overflow, fit_width, leaf_groups, size_bins, unit_sizes, validate_overflow
from .sensitivity import validate_z_max
from .transforms import chain_cumulative, chain_decumulate, chain_order, cumulative, decumulate

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


# ---------------------------------------------------------------------- true data
@dataclass(frozen=True, eq=False)
class GroupSizeData:
    """The sensitive group-size hierarchy: ``counts[r, s-1] = n_s^r`` for every region.

    Parameters
    ----------
    hierarchy
        The declared (public) hierarchy of regions, of uniform depth.
    counts
        ``n_s^r`` for every region (rows in the hierarchy's order) and size ``1..N``; consistent
        (every internal region is the sum of its children).
    name
        A label for tables and ledgers.
    z_max
        The declared public bound on one person's unit quantity (the paper's ``z in {0, 1}`` is
        ``z_max = 1``); the noise is calibrated to it (see :mod:`dpmodels.pgsr.sensitivity`).
    N_declared
        Whether ``N`` (the width of ``counts``) was declared by the caller, as a public fact.
        ``N`` is released twice (the size rows ``1..N`` of the output, the ledger's cell counts),
        so an ``N`` read off the data (the largest group) discloses that group with certainty:
        :func:`dpmodels.pgsr.release.release` refuses such data on a private session.  The
        constructors set it: True when they are given ``N`` (``n_sizes=`` / ``N=``), False when
        they take the largest size in the data.  The bare constructor cannot tell, so it defaults
        to False; pass True only when the width of ``counts`` was fixed before seeing the data.
    overflow
        The rule that built ``counts`` for groups larger than ``N`` (:mod:`dpmodels.pgsr.bounding`):
        ``"top"`` counts them in the size-``N`` bin, ``"error"`` refused them (then whether the data
        exists at all depends on one group: experiments only).
    """

    hierarchy: Hierarchy
    counts: np.ndarray
    name: str = "pgsr"
    z_max: int = 1
    N_declared: bool = False
    overflow: Overflow = "top"

    def __post_init__(self):
        self.hierarchy.require_uniform_depth("hierarchy")
        object.__setattr__(self, "z_max", validate_z_max(self.z_max))
        if not isinstance(self.N_declared, bool | np.bool_):
            raise DataValidationError("N_declared", f"must be True or False, got {self.N_declared!r}")
        object.__setattr__(self, "N_declared", bool(self.N_declared))
        validate_overflow(self.overflow)
        counts = _integer_matrix(
            _region_matrix(self.hierarchy, self.counts, "counts"), "counts", (self.hierarchy.n_regions, None)
        )
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
    def from_leaf_counts(
        cls,
        hierarchy: Hierarchy,
        leaf_counts,
        name: str = "pgsr",
        z_max: int = 1,
        N: int | None = None,
        overflow: Overflow = "top",
    ) -> GroupSizeData:
        """Aggregate per-leaf group-size vectors (rows in ``hierarchy.leaves`` order) up the tree.

        Parameters
        ----------
        hierarchy
            The declared hierarchy.
        leaf_counts
            Non-negative integer counts, one row per leaf, column ``s - 1`` for size ``s``.
        name, z_max
            As in :class:`GroupSizeData`.
        N
            The declared largest group size.  Narrower counts are padded with zeros; wider ones
            have their sizes above ``N`` counted in the size-``N`` bin (``overflow="top"``) or
            refused (``"error"``).  None: ``N`` is the width of ``leaf_counts``, taken as not
            declared (``N_declared=False``).
        overflow
            ``"top"`` or ``"error"`` (see :mod:`dpmodels.pgsr.bounding`).
        """
        leaf = _integer_matrix(_leaf_matrix(hierarchy, leaf_counts), "leaf_counts", (len(hierarchy.leaves), None))
        if (leaf < 0).any():
            i, s = np.argwhere(leaf < 0)[0]
            raise DataValidationError(
                "leaf_counts", f"negative count at leaf {hierarchy.names[hierarchy.leaves[i]]!r}, size {s + 1}"
            )
        if N is not None:
            leaf = fit_width(leaf, _declared_n(N), overflow)
        return cls(hierarchy, hierarchy.aggregate(leaf), name, z_max, N is not None, validate_overflow(overflow))

    @classmethod
    def from_groups(
        cls,
        hierarchy: Hierarchy,
        regions,
        sizes,
        n_sizes: int | None = None,
        overflow: Overflow = "top",
        name: str = "pgsr",
        z_max: int = 1,
    ) -> GroupSizeData:
        """Count groups per leaf region and size, under the bounding rules of :mod:`dpmodels.pgsr.bounding`.

        Parameters
        ----------
        hierarchy
            The declared hierarchy.  Groups whose region is not one of its leaves are left out.
        regions, sizes
            One region and one size per group.  Sizes must be non-negative integers (else refused
            as malformed); a size-0 group is not a group and is left out.
        n_sizes
            The declared ``N``.  None takes the largest size in the data (``N_declared=False``:
            research only, a private release refuses it).
        overflow
            ``"top"`` (default): sizes above ``N`` are counted in the size-``N`` bin ("N or more").
            ``"error"``: refuse them (experiments only: a refusal depends on one group).
        name, z_max
            As in :class:`GroupSizeData`.
        """
        rows, sizes = leaf_groups(hierarchy, regions, sizes)
        N = (int(sizes.max()) if sizes.size else 1) if n_sizes is None else _declared_n(n_sizes)
        bins = size_bins(sizes, N, overflow)
        leaf = np.zeros((len(hierarchy.leaves), N), dtype=np.int64)
        np.add.at(leaf, (rows, bins - 1), 1)
        return cls(hierarchy, hierarchy.aggregate(leaf), name, z_max, n_sizes is not None, overflow)

    @classmethod
    def from_records(
        cls,
        records: pd.DataFrame,
        hierarchy: Hierarchy,
        n_sizes: int | None = None,
        overflow: Overflow = "top",
        name: str = "pgsr",
        z_max: int = 1,
    ) -> GroupSizeData:
        """From individual records with columns ``user, unit, region, quantity`` (spec 1.1).

        A unit's group size is the sum of its members' quantities, each clamped to ``[0, z_max]``
        first; then units outside the hierarchy's leaves and units of size 0 are left out, and
        sizes above ``N`` go to the size-``N`` bin (:mod:`dpmodels.pgsr.bounding`).  No record
        outside a declared bound makes the construction fail: only malformed tables are refused
        (a missing column or key value, a non-integer quantity, a user on two rows, a unit whose
        members name two regions).

        Parameters
        ----------
        records
            One row per person.
        hierarchy
            The declared hierarchy.
        n_sizes
            The declared ``N``; None takes the largest group in the data (research only, see
            :class:`GroupSizeData`'s ``N_declared``).
        overflow
            ``"top"`` (default) or ``"error"`` (experiments only), as in :meth:`from_groups`.
        name, z_max
            As in :class:`GroupSizeData`; ``z_max`` is the bound quantities are clamped to.
        """
        z_max = validate_z_max(z_max)
        declared = None if n_sizes is None else _declared_n(n_sizes)
        regions, sizes = unit_sizes(records, z_max, declared)
        return cls.from_groups(hierarchy, regions, sizes, declared, overflow, name, z_max)

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

    def to_frame(self) -> pd.DataFrame:
        """Counts as a table: indexed by region, a ``level`` column, one column per size ``1..N``."""
        return region_frame(self.counts, self.hierarchy.names, self.hierarchy.level)


# ---------------------------------------------------------------------- noisy data
@dataclass(frozen=True, eq=False)
class NoisyGroupSizes:
    """Noisy values in the (regions, sizes) layout plus the public ``hierarchy`` and ``G``.

    Parameters
    ----------
    hierarchy : Hierarchy
        The public hierarchy of regions.
    values : numpy.ndarray
        The noisy values, (regions, sizes), rows in the hierarchy's order.
    G : int
        The public number of groups (the root's total).
    kind : str
        What the values estimate: group-size counts ``n`` (``"counts"``), per-region cumulative
        counts ``(+)n`` (``"cumulative"``) or chain-cumulative values (``"chain"``).
    level_scales : tuple of Fraction, optional
        The public noise scale of each level, which sizes truncated domains (None: not measured):
        the Laplace scale, or for a discrete Gaussian level the scale of
        :func:`dpmodels.pgsr.domains.gaussian_domain_scale` (the variances are in ``info``).
    info : dict
        The measurement's other public facts (``epsilon``, ``calibration``, the declared
        ``z_max`` and the neighbour relation the budget refers to; a discrete Gaussian
        measurement has ``noise``, ``rho`` and ``sigma2_per_level`` instead of ``epsilon``).
    weights : numpy.ndarray, optional
        One positive weight per value, (regions, sizes) like ``values`` (a DataFrame is read by its
        labels): every post-processing then fits ``sum w (x - noisy)^2`` instead of the paper's
        ``sum (x - noisy)^2``.  For least squares the right weight is ``1 / variance``
        (:mod:`dpmodels.pgsr.weights` says why and builds them from stated variances); only their
        ratios matter.  None (default): every value weighs alike, the paper's objectives, computed
        exactly as without this field.  Equal weights given as an array are kept (their objective
        is the unweighted one times the weight).
    """

    hierarchy: Hierarchy
    values: np.ndarray
    G: int
    kind: Kind = "counts"
    level_scales: tuple[Fraction, ...] | None = None
    info: dict = field(default_factory=dict, compare=False)
    weights: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self):
        self.hierarchy.require_uniform_depth("hierarchy")
        values = np.array(_region_matrix(self.hierarchy, self.values, "values"), dtype=np.float64)
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
        if self.weights is not None:
            object.__setattr__(self, "weights", _weight_matrix(self.hierarchy, self.weights, values.shape))

    @property
    def N(self) -> int:
        return int(self.values.shape[1])

    @property
    def L(self) -> int:
        return self.hierarchy.n_levels

    def require_kind(self, kind: Kind, builder: str) -> None:
        if self.kind != kind:
            raise DataValidationError("noisy", f"{builder} needs {kind!r} values, got {self.kind!r}")

    def to_frame(self) -> pd.DataFrame:
        """The noisy values as a table: indexed by region, a ``level`` column, sizes ``1..N``."""
        return region_frame(self.values, self.hierarchy.names, self.hierarchy.level)

    def with_values(self, values, kind: Kind | None = None) -> NoisyGroupSizes:
        """Same public facts and weights, other values (e.g. the pre-processed estimates of Algorithm 2)."""
        return NoisyGroupSizes(
            self.hierarchy, values, self.G, kind or self.kind, self.level_scales, dict(self.info), self.weights
        )

    def with_weights(self, weights, info: dict | None = None) -> NoisyGroupSizes:
        """Same values and public facts, weighted by ``weights`` (None: unweighted); ``info`` replaces the facts."""
        info = dict(self.info) if info is None else info
        return NoisyGroupSizes(self.hierarchy, self.values, self.G, self.kind, self.level_scales, info, weights)

    def cell_weights(self) -> np.ndarray:
        """The weights as the compiled kernels take them: ``weights``, or ones when unweighted
        (multiplying by 1.0 is exact, so the kernels then compute the paper's objective bit for bit)."""
        if self.weights is None:
            return np.ones(self.values.shape)
        return np.ascontiguousarray(self.weights)

    def squared_error(self, estimate) -> float:
        """The least-squares objective at ``estimate`` (same layout as ``values``): ``sum w (x - noisy)^2``,
        or ``sum (x - noisy)^2`` when unweighted."""
        if self.weights is None:
            return float(((estimate - self.values) ** 2).sum())
        return float((self.weights * (estimate - self.values) ** 2).sum())


def _region_matrix(hierarchy: Hierarchy, values, field: str):
    """``values`` in the hierarchy's row order: a DataFrame is matched by its region and size labels."""
    return region_matrix(values, hierarchy.names, hierarchy.level, field)


def _weight_matrix(hierarchy: Hierarchy, weights, shape: tuple) -> np.ndarray:
    """Weights in the values' layout: finite and > 0 (a weight of 0 would drop a measurement silently)."""
    w = np.array(_region_matrix(hierarchy, weights, "weights"), dtype=np.float64)
    if w.shape != shape:
        raise DataValidationError("weights", f"must have the values' shape {shape}, got {w.shape}")
    bad = np.argwhere(~np.isfinite(w) | (w <= 0))
    if bad.size:
        r, s = bad[0]
        raise DataValidationError(
            "weights", f"must be finite and > 0, got {w[r, s]!r} at region {hierarchy.names[r]!r}, size {s + 1}"
        )
    w.setflags(write=False)
    return w


def _leaf_matrix(hierarchy: Hierarchy, values):
    """Leaf rows in ``hierarchy.leaves`` order: a DataFrame is matched by its region and size labels."""
    leaves = hierarchy.leaves
    return region_matrix(
        values, [hierarchy.names[i] for i in leaves], [hierarchy.level[i] for i in leaves], "leaf_counts"
    )


def _declared_n(n_sizes) -> int:
    """A declared ``N``: an integer >= 1."""
    if isinstance(n_sizes, bool) or not isinstance(n_sizes, numbers.Integral) or n_sizes < 1:
        raise DataValidationError("N", f"must be an integer >= 1 (the declared largest group size), got {n_sizes!r}")
    return int(n_sizes)


def _integer_matrix(values, field_name: str, shape: tuple) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape[0] != shape[0]:
        raise DataValidationError(field_name, f"must be a matrix with {shape[0]} rows, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)) or np.any(np.mod(arr, 1) != 0):
            raise DataValidationError(field_name, "must contain integers")
    return arr.astype(np.int64).copy()
