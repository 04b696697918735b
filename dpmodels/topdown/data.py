"""Census TopDown data: schemas, histograms, geography and public knowledge (spec section 1).

A :class:`Schema` is an ordered list of attributes; a histogram over it is a vector of
``schema.size`` cells in C (row-major) order, as ``numpy.reshape`` flattens it.  The
geography is a :class:`~dpmodels.core.hierarchy.Hierarchy` (any depth); its levels are
numbered 1..L there, which the paper calls 0..k.  The sensitive data are leaf (block)
histograms, stored sparse because blocks are small and the schema is not.

Public knowledge (spec 1.5) lives in :mod:`.knowledge` and is re-exported here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

from .knowledge import ChildGroup, Edit, FlowData, GQKnowledge, PublicKnowledge

__all__ = [
    "Attribute",
    "Schema",
    "pl94_schema",
    "GEOCODE_LEVELS",
    "parse_geocode",
    "geography_from_geocodes",
    "ChildGroup",
    "Edit",
    "GQKnowledge",
    "FlowData",
    "PublicKnowledge",
    "TopDownData",
    "microdata",
    "BOUNDING_RULES",
]


# ---------------------------------------------------------------------- schema
@dataclass(frozen=True)
class Attribute:
    """A categorical attribute with its ordered values.

    Parameters
    ----------
    name : str
        The attribute's name.
    values : tuple of str
        Its ordered values (at least one).
    """

    name: str
    values: tuple[str, ...]

    def __post_init__(self):
        if not self.values:
            raise DataValidationError(f"attribute {self.name!r}", "needs at least one value")
        if len(set(self.values)) != len(self.values):
            raise DataValidationError(f"attribute {self.name!r}", "has repeated values")

    @property
    def size(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class Schema:
    """An ordered set of attributes; cells are flattened in C order.

    Parameters
    ----------
    attributes : tuple of Attribute
        The attributes, with distinct names.
    """

    attributes: tuple[Attribute, ...]

    def __post_init__(self):
        names = [a.name for a in self.attributes]
        if not names or len(set(names)) != len(names):
            raise DataValidationError("schema", f"needs distinct attribute names, got {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def index(self, name: str) -> int:
        if name not in self.names:
            raise DataValidationError("attribute", f"{name!r} is not in the schema {self.names}")
        return self.names.index(name)

    def attribute(self, name: str) -> Attribute:
        return self.attributes[self.index(name)]

    def cell_values(self, name: str) -> np.ndarray:
        """For every cell, the position of its value of attribute ``name``."""
        return np.unravel_index(np.arange(self.size), self.shape)[self.index(name)]

    def cell(self, **values) -> int:
        """Flat index of the cell with the given attribute values (labels or positions)."""
        missing = set(self.names) - set(values)
        if missing:
            raise DataValidationError("cell", f"missing attributes {sorted(missing)}")
        extra = set(values) - set(self.names)
        if extra:
            raise DataValidationError("cell", f"unknown attributes {sorted(extra)}")
        pos = []
        for attr in self.attributes:
            v = values[attr.name]
            if isinstance(v, str):
                if v not in attr.values:
                    raise DataValidationError(f"cell {attr.name!r}", f"unknown value {v!r}")
                pos.append(attr.values.index(v))
            elif not 0 <= int(v) < attr.size:
                raise DataValidationError(f"cell {attr.name!r}", f"position {v} outside 0..{attr.size - 1}")
            else:
                pos.append(int(v))
        return int(np.ravel_multi_index(pos, self.shape))

    def cells_frame(self) -> pd.DataFrame:
        """One row per cell with the value labels of every attribute."""
        idx = np.unravel_index(np.arange(self.size), self.shape)
        return pd.DataFrame({a.name: np.asarray(a.values)[i] for a, i in zip(self.attributes, idx, strict=True)})

    def extend(self, *attributes: Attribute) -> Schema:
        """A schema extension ``S`` of this ``S^0`` (spec 1.1)."""
        return Schema(self.attributes + tuple(attributes))


GQ_TYPES = (
    "household",
    "correctional",
    "juvenile",
    "nursing",
    "other institutional",
    "college housing",
    "military",
    "other noninstitutional",
)


def pl94_schema(races: int = 63) -> Schema:
    """The PL94-171 schema in the 2018 End-to-End order: hhgq 8 x votingage 2 x hispanic 2 x
    cenrace (63 nonempty subsets of 6 OMB categories; fewer for small test runs).

    Parameters
    ----------
    races : int, default 63
        How many cenrace values to keep (the first ones).
    """
    if not 1 <= races <= 63:
        raise DataValidationError("races", f"must be in 1..63, got {races}")
    omb = ("AIAN", "Asian", "Black", "NHPI", "White", "Other")
    combos = [c for k in range(1, 7) for c in itertools.combinations(omb, k)]
    race_labels = tuple("+".join(c) for c in combos[:races])
    return Schema(
        (
            Attribute("hhgq", GQ_TYPES),
            Attribute("votingage", ("under 18", "18 or over")),
            Attribute("hispanic", ("not hispanic", "hispanic")),
            Attribute("cenrace", race_labels),
        )
    )


# ---------------------------------------------------------------------- geography
#: (level name, geocode prefix length) of the Census hierarchy (spec 1.4).
GEOCODE_LEVELS = (("nation", 0), ("state", 2), ("county", 5), ("tract", 11), ("block group", 12), ("block", 15))


def parse_geocode(code: str) -> dict[str, str]:
    """Split a 15-digit block geocode into its state/county/tract/block-group/block prefixes.

    Parameters
    ----------
    code : str
        A 15-digit block geocode.

    Returns
    -------
    dict
        Level name -> geocode prefix.
    """
    code = str(code)
    if len(code) != 15 or not (code.isascii() and code.isdigit()):
        raise DataValidationError("geocode", f"must be 15 digits (state 2, county 3, tract 6, block 4), got {code!r}")
    return {name: code[:length] for name, length in GEOCODE_LEVELS[1:]}


def geography_from_geocodes(
    codes: Iterable[str], levels: Sequence[str] = ("state", "county", "tract", "block group", "block"), root: str = "US"
) -> Hierarchy:
    """A geography tree whose nodes are geocode prefixes; ``levels`` picks which ones to keep.

    Parameters
    ----------
    codes : iterable of str
        15-digit block geocodes.
    levels : sequence of str
        The levels kept, among state, county, tract, block group and block.
    root : str, default "US"
        The root's name.
    """
    lengths = dict(GEOCODE_LEVELS)
    unknown = [lv for lv in levels if lv not in lengths or lv == "nation"]
    if unknown:
        raise DataValidationError("levels", f"unknown {unknown}; choose from {[n for n, _ in GEOCODE_LEVELS[1:]]}")
    order = sorted(levels, key=lengths.get)
    table: dict[str, str | None] = {root: None}
    for code in dict.fromkeys(str(c) for c in codes):
        parse_geocode(code)
        parent = root
        for name in order:
            node = code[: lengths[name]]
            table.setdefault(node, parent)
            parent = node
    return Hierarchy.from_parent_table(table)


# ---------------------------------------------------------------------- the data
#: The stated rules that bound the records of a release before anything is counted (applied by
#: ``instances.topdown.from_csv``; a histogram built in Python holds in-domain cells only).  Each
#: leaves a record out rather than refusing the release, so whether a release happens never
#: depends on one person; how many records a rule left out is never reported.
BOUNDING_RULES = (
    "a person whose geocode is not a block of the declared geography is left out (counted nowhere, "
    "invariant totals included)",
    "a person with an attribute value outside the schema's declared values is left out (counted nowhere, "
    "invariant totals included), like a key set in Tumult Analytics",
)


@dataclass(frozen=True, eq=False)
class TopDownData:
    """The sensitive input: one histogram per leaf (sparse rows, hierarchy leaf order).

    Parameters
    ----------
    schema, geography, leaf_counts, knowledge, name
        The schema, the geography tree, the leaf histograms (leaves x cells, non-negative
        integers), the public knowledge they must satisfy, and a name for ledgers.
    geography_declared
        Whether ``geography`` was declared by the user (a public block list, a Python tree, a
        generator's fan-outs) rather than derived from the records (the blocks where persons
        live, which depend on them).  A private release refuses a derived geography
        (:func:`dpmodels.topdown.release.release`).
    """

    schema: Schema
    geography: Hierarchy
    leaf_counts: sp.csr_matrix
    knowledge: PublicKnowledge
    name: str = "topdown"
    geography_declared: bool = True

    def __post_init__(self):
        raw = sp.csr_matrix(self.leaf_counts)
        if raw.nnz and not np.all(np.mod(raw.data, 1) == 0):
            raise DataValidationError("leaf_counts", "counts must be integers (tables are integer histograms)")
        counts = sp.csr_matrix(raw, dtype=np.int64)
        if counts.shape != (len(self.geography.leaves), self.schema.size):
            raise DataValidationError(
                "leaf_counts",
                f"must be (leaves={len(self.geography.leaves)}, cells={self.schema.size}), got {counts.shape}",
            )
        if counts.nnz and counts.data.min() < 0:
            raise DataValidationError("leaf_counts", "counts must be non-negative")
        object.__setattr__(self, "leaf_counts", counts)
        self._check_knowledge()

    def _check_knowledge(self) -> None:
        kn, geo = self.knowledge, self.geography
        kn.check(geo)
        invariant = len(kn.invariant_totals)
        true_totals = np.asarray(self.node_histograms_all()[:invariant].sum(axis=1)).ravel()
        bad = np.flatnonzero(true_totals != kn.invariant_totals)
        if len(bad):
            raise DataValidationError(
                "knowledge.invariant_totals", f"region {geo.names[bad[0]]!r} total does not match the data"
            )
        if kn.child_groups:
            self._check_groups(kn.child_groups)
        zeros = np.asarray(kn.structural_zeros, dtype=np.int64)
        if len(zeros) and self.leaf_counts[:, zeros].nnz:
            raise DataValidationError("knowledge.structural_zeros", "the data have persons in structural-zero cells")
        for edit in kn.edits:
            if not edit.holds(self.leaf_counts).all():
                raise DataValidationError(f"edit {edit.name!r}", "does not hold on every leaf of the data")
        if kn.gq is not None:
            self._check_gq(kn.gq)

    def _check_gq(self, gq: GQKnowledge) -> None:
        if len(gq.cell_type) != self.schema.size or gq.present.shape[0] != len(self.geography.leaves):
            raise DataValidationError("gq", "cell_type must cover the schema and present/lower the leaves")
        per_type = np.asarray((self.leaf_counts @ gq.type_matrix().T).todense())
        if (per_type[~gq.present] != 0).any():
            raise DataValidationError("gq", "persons of a type that is absent from their leaf")
        if (per_type < gq.lower).any():
            raise DataValidationError("gq", "a leaf has fewer persons of a type than its lower bound")
        # no check of gq.upper: a cap binds the release, not the data (GQKnowledge); refusing data over
        # a cap would make whether a release happens depend on one person

    def _check_groups(self, groups) -> None:
        totals = np.asarray(self.node_histograms_all().sum(axis=1)).ravel()
        index = self.geography.index
        for group in groups:
            if sum(int(totals[index[r]]) for r in group.regions) != group.total:
                raise DataValidationError(f"child group {group.regions}", "its total does not match the data")

    @cached_property
    def aggregation(self) -> sp.csr_matrix:
        """``regions x leaves`` 0/1 matrix: row r sums the leaves under r."""
        geo = self.geography
        rows, cols = [], []
        for k, leaf in enumerate(geo.leaves):
            node = leaf
            while node >= 0:
                rows.append(node)
                cols.append(k)
                node = geo.parent[node]
        return sp.csr_matrix((np.ones(len(rows), np.int64), (rows, cols)), shape=(geo.n_regions, len(geo.leaves)))

    def node_histograms_all(self) -> sp.csr_matrix:
        """Histogram of every region (rows in hierarchy order)."""
        return (self.aggregation @ self.leaf_counts).tocsr()

    @property
    def population(self) -> int:
        return int(self.leaf_counts.sum())


def microdata(schema: Schema, geography: Hierarchy, leaf_counts: sp.spmatrix) -> pd.DataFrame:
    """One record per person: the leaf's name (geocode) and the labels of its cell.

    Parameters
    ----------
    schema : Schema
        The histogram's attributes.
    geography : Hierarchy
        The geography tree (its leaves name the records' blocks).
    leaf_counts : scipy.sparse matrix
        One histogram per leaf (leaves x cells).

    Returns
    -------
    pandas.DataFrame
    """
    counts = sp.coo_matrix(leaf_counts)
    if counts.nnz and ((counts.data < 0).any() or (np.mod(counts.data, 1) != 0).any()):
        raise DataValidationError("leaf_counts", "only non-negative integer histograms can be turned into records")
    reps = counts.data.astype(np.int64)
    rows, cells = np.repeat(counts.row, reps), np.repeat(counts.col, reps)
    frame = schema.cells_frame().iloc[cells].reset_index(drop=True)
    frame.insert(0, "geocode", np.asarray(geography.names)[geography.leaves[rows]])
    return frame
