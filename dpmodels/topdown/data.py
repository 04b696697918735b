"""Census TopDown data: schemas, histograms, geography and public knowledge (spec section 1).

A :class:`Schema` is an ordered list of attributes; a histogram over it is a vector of
``schema.size`` cells in C (row-major) order, as ``numpy.reshape`` flattens it.  The
geography is a :class:`~dpmodels.core.hierarchy.Hierarchy` (any depth); its levels are
numbered 1..L there, which the paper calls 0..k.  The sensitive data are leaf (block)
histograms, stored sparse because blocks are small and the schema is not.

Public knowledge (spec 1.5) is what is released exactly and what every solve must respect:
node populations down to an invariant level, group-quarters (GQ) facts per leaf,
structural zeros and linear edits.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

__all__ = [
    "Attribute",
    "Schema",
    "pl94_schema",
    "GEOCODE_LEVELS",
    "parse_geocode",
    "geography_from_geocodes",
    "Edit",
    "GQKnowledge",
    "FlowData",
    "PublicKnowledge",
    "TopDownData",
    "microdata",
]


# ---------------------------------------------------------------------- schema
@dataclass(frozen=True)
class Attribute:
    """A categorical attribute with its ordered values."""

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
    """An ordered set of attributes; cells are flattened in C order."""

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
    cenrace (63 nonempty subsets of 6 OMB categories; fewer for small test runs)."""
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
    """Split a 15-digit block geocode into its state/county/tract/block-group/block prefixes."""
    code = str(code)
    if len(code) != 15 or not (code.isascii() and code.isdigit()):
        raise DataValidationError("geocode", f"must be 15 digits (state 2, county 3, tract 6, block 4), got {code!r}")
    return {name: code[:length] for name, length in GEOCODE_LEVELS[1:]}


def geography_from_geocodes(
    codes: Iterable[str], levels: Sequence[str] = ("state", "county", "tract", "block group", "block"), root: str = "US"
) -> Hierarchy:
    """A geography tree whose nodes are geocode prefixes; ``levels`` picks which ones to keep."""
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


# ---------------------------------------------------------------------- public knowledge
@dataclass(frozen=True)
class Edit:
    """A linear edit ``coef . h  op  0`` that every node histogram must satisfy (spec 1.5 items 4-6)."""

    name: str
    coef: np.ndarray
    op: str = ">="

    def __post_init__(self):
        if self.op not in ("<=", ">=", "=="):
            raise DataValidationError(f"edit {self.name!r}", f"op must be '<=', '>=' or '==', got {self.op!r}")

    def holds(self, histograms: np.ndarray | sp.spmatrix, tol: float = 1e-9) -> np.ndarray:
        """Whether each row histogram satisfies the edit (within ``tol``, for fractional solutions)."""
        lhs = np.asarray(histograms @ self.coef).ravel()
        return {"<=": lhs <= tol, ">=": lhs >= -tol, "==": np.abs(lhs) <= tol}[self.op]


@dataclass(frozen=True)
class FlowData:
    """The combination network of one node (spec 3.5): what its histogram's GQ types must route to.

    ``combos[c]`` is a support (bool over types); ``lower[c, g]`` the flow lower bound
    ``f_{g,c}``; ``population[c]`` the fixed combination population ``N_c`` (or -1 when the
    node lies below the invariant level and only the lower bounds bind).
    """

    combos: np.ndarray
    lower: np.ndarray
    population: np.ndarray

    @classmethod
    def from_units(cls, present: np.ndarray, lower: np.ndarray, totals=None) -> FlowData:
        """Merge units (leaves, or total-invariant nodes) with the same support into
        combinations: lower bounds and populations add up (exact, spec 3.5)."""
        combos, combo_of = np.unique(np.asarray(present, dtype=bool), axis=0, return_inverse=True)
        flow_lower = np.zeros((len(combos), combos.shape[1]), dtype=np.int64)
        np.add.at(flow_lower, combo_of, np.asarray(lower, dtype=np.int64))
        population = np.full(len(combos), -1, dtype=np.int64)
        if totals is not None:
            population[:] = 0
            np.add.at(population, combo_of, np.asarray(totals, dtype=np.int64))
        return cls(combos, flow_lower, population)

    @property
    def n_types(self) -> int:
        return self.combos.shape[1]

    @property
    def type_minimum(self) -> np.ndarray:
        """``gq_g``: the least population of every type."""
        return self.lower.sum(axis=0)

    @property
    def fixed(self) -> bool:
        return bool((self.population >= 0).all())

    def arcs(self) -> list[tuple[int, int]]:
        """Legal (type, combination) flow pairs ``E``."""
        return [(int(g), int(c)) for c, g in zip(*np.nonzero(self.combos), strict=True)]


@dataclass(frozen=True, eq=False)
class GQKnowledge:
    """Per-leaf group-quarters facts: which types are present and their population lower bounds.

    ``cell_type[x]`` is the GQ type of cell ``x`` (household is one type); the types partition
    the cells.  ``present`` and ``lower`` have one row per leaf, in the hierarchy's leaf order.
    """

    cell_type: np.ndarray
    type_names: tuple[str, ...]
    present: np.ndarray
    lower: np.ndarray

    def __post_init__(self):
        n_types = len(self.type_names)
        present = np.asarray(self.present)
        if present.dtype != bool:
            if not np.isin(present, (0, 1)).all():
                raise DataValidationError("gq.present", "must be boolean (or 0/1)")
            object.__setattr__(self, "present", present.astype(bool))
        if self.present.shape != self.lower.shape or self.present.shape[1] != n_types:
            raise DataValidationError("gq", f"present/lower must be (leaves, {n_types}), got {self.present.shape}")
        if (self.lower < 0).any() or (self.lower[~self.present] != 0).any():
            raise DataValidationError("gq", "lower bounds must be >= 0 and 0 for absent types")
        if self.cell_type.min() < 0 or self.cell_type.max() >= n_types:
            raise DataValidationError("gq", "cell_type must index the types")

    @property
    def n_types(self) -> int:
        return len(self.type_names)

    def type_matrix(self) -> sp.csr_matrix:
        """``types x cells`` 0/1 matrix: row g sums the cells of type g."""
        n = len(self.cell_type)
        return sp.csr_matrix((np.ones(n), (self.cell_type, np.arange(n))), shape=(self.n_types, n))


@dataclass(frozen=True, eq=False)
class PublicKnowledge:
    """What is public: node populations down to ``total_level``, GQ facts, zeros, edits.

    ``node_totals`` has one entry per region (hierarchy order); only the totals of levels
    ``<= total_level`` are invariants (1 = the nation only; the leaf level = block totals).
    """

    node_totals: np.ndarray
    total_level: int
    gq: GQKnowledge | None = None
    structural_zeros: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    edits: tuple[Edit, ...] = ()

    def invariant_total(self, geography: Hierarchy, node: int) -> int | None:
        """The node's population if it is an invariant, else None."""
        return int(self.node_totals[node]) if geography.level[node] <= self.total_level else None

    def flow_data(self, geography: Hierarchy, node: int) -> FlowData | None:
        """The combination network of ``node`` (spec 3.5 with erratum 8's total-invariant units)."""
        if self.gq is None:
            return None
        leaves = _leaves_under(geography, node)
        leaf_pos = np.searchsorted(geography.leaves, leaves)
        present = self.gq.present[leaf_pos]
        lower = self.gq.lower[leaf_pos]
        if geography.level[node] <= self.total_level:
            unit = _ancestor_at(geography, leaves, self.total_level)
            totals = {u: int(self.node_totals[u]) for u in np.unique(unit)}
        else:
            unit = leaves
            totals = None
        keys, inverse = np.unique(unit, return_inverse=True)
        unit_present = np.zeros((len(keys), self.gq.n_types), dtype=bool)
        unit_lower = np.zeros((len(keys), self.gq.n_types), dtype=np.int64)
        np.logical_or.at(unit_present, inverse, present)
        np.add.at(unit_lower, inverse, lower)
        return FlowData.from_units(unit_present, unit_lower, None if totals is None else [totals[k] for k in keys])


def _leaves_under(geography: Hierarchy, node: int) -> np.ndarray:
    nodes = np.array([node])
    leaves = []
    while len(nodes):
        leaves.append(nodes[geography.is_leaf[nodes]])
        inner = nodes[~geography.is_leaf[nodes]]
        nodes = np.concatenate([geography.children(i) for i in inner]) if len(inner) else np.empty(0, np.int64)
    return np.sort(np.concatenate(leaves))


def _ancestor_at(geography: Hierarchy, nodes: np.ndarray, level: int) -> np.ndarray:
    out = nodes.copy()
    while True:
        deep = geography.level[out] > level
        if not deep.any():
            return out
        out[deep] = geography.parent[out[deep]]


# ---------------------------------------------------------------------- the data
@dataclass(frozen=True, eq=False)
class TopDownData:
    """The sensitive input: one histogram per leaf (sparse rows, hierarchy leaf order)."""

    schema: Schema
    geography: Hierarchy
    leaf_counts: sp.csr_matrix
    knowledge: PublicKnowledge
    name: str = "topdown"

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
        if len(kn.node_totals) != geo.n_regions:
            raise DataValidationError("knowledge.node_totals", f"need one per region ({geo.n_regions})")
        if not 1 <= kn.total_level <= geo.n_levels:
            raise DataValidationError("knowledge.total_level", f"must be in 1..{geo.n_levels}")
        true_totals = np.asarray(self.node_histograms_all().sum(axis=1)).ravel()
        bad = np.flatnonzero((geo.level <= kn.total_level) & (true_totals != kn.node_totals))
        if len(bad):
            raise DataValidationError(
                "knowledge.node_totals", f"region {geo.names[bad[0]]!r} total does not match the data"
            )
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
    """One record per person: the leaf's name (geocode) and the labels of its cell."""
    counts = sp.coo_matrix(leaf_counts)
    if counts.nnz and ((counts.data < 0).any() or (np.mod(counts.data, 1) != 0).any()):
        raise DataValidationError("leaf_counts", "only non-negative integer histograms can be turned into records")
    reps = counts.data.astype(np.int64)
    rows, cells = np.repeat(counts.row, reps), np.repeat(counts.col, reps)
    frame = schema.cells_frame().iloc[cells].reset_index(drop=True)
    frame.insert(0, "geocode", np.asarray(geography.names)[geography.leaves[rows]])
    return frame
