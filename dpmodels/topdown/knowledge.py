"""TopDown public knowledge (spec 1.5): what is released exactly and what every solve must respect.

Node populations down to an invariant level (only those: the totals of deeper regions are
computed from the confidential data and are not public), group-quarters (GQ) facts per
leaf, structural zeros and linear edits, and the combination networks (spec 3.5) the GQ
facts give every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

__all__ = ["ChildGroup", "Edit", "FlowData", "GQKnowledge", "PublicKnowledge"]


# ---------------------------------------------------------------------- public knowledge
@dataclass(frozen=True)
class ChildGroup:
    """Sibling regions held to one public total: the 2020 production's grouped child totals (the AIAN
    and non-AIAN parts of a state sum to the state's invariant population while neither part's is).

    Parameters
    ----------
    regions : tuple of str
        The regions' names: children of one parent, each in one group only.
    total : int
        Their total population, released exactly (an invariant).
    """

    regions: tuple[str, ...]
    total: int

    def __post_init__(self):
        regions = tuple(str(r) for r in self.regions) if not isinstance(self.regions, str) else ()
        if not regions or len(set(regions)) != len(regions):
            raise DataValidationError("child group", f"needs distinct region names, got {self.regions!r}")
        if int(self.total) != self.total or self.total < 0:
            raise DataValidationError(f"child group {regions}", f"total must be a count, got {self.total!r}")
        object.__setattr__(self, "regions", regions)
        object.__setattr__(self, "total", int(self.total))


@dataclass(frozen=True)
class Edit:
    """A linear edit ``coef . h  op  0`` that every node histogram must satisfy (spec 1.5 items 4-6).

    Parameters
    ----------
    name : str
        A label for logs and errors.
    coef : numpy.ndarray
        One coefficient per cell.
    op : {">=", "<=", "=="}, default ">="
        The comparison with 0.
    """

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

    Parameters
    ----------
    combos : numpy.ndarray
        Supports: combinations x types, boolean.
    lower : numpy.ndarray
        Flow lower bounds ``f_{g,c}`` (combinations x types).
    population : numpy.ndarray
        The population ``N_c`` of every combination, -1 where not fixed.
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

    @cached_property
    def fixed(self) -> bool:
        """Whether every combination's population is fixed (an invariant level); asked per check and system."""
        return bool((self.population >= 0).all())

    def arcs(self) -> list[tuple[int, int]]:
        """Legal (type, combination) flow pairs ``E``."""
        return [(int(g), int(c)) for c, g in zip(*np.nonzero(self.combos), strict=True)]


@dataclass(frozen=True, eq=False)
class GQKnowledge:
    """Per-leaf group-quarters facts: which types are present and their population lower bounds.

    ``cell_type[x]`` is the GQ type of cell ``x`` (household is one type); the types partition
    the cells.  ``present`` and ``lower`` have one row per leaf, in the hierarchy's leaf order.

    Parameters
    ----------
    cell_type : numpy.ndarray
        The GQ type of every cell.
    type_names : tuple of str
        One name per type.
    present : numpy.ndarray
        Leaves x types: whether the type is present in the leaf.
    lower : numpy.ndarray
        Leaves x types: population lower bounds.
    upper : numpy.ndarray, optional
        Leaves x types: occupancy caps (the 2020 production's ``hhgq_total_ub``: facilities x the
        declared persons per facility), -1 where a type is not capped; None: no caps.  A cap binds
        the *release*, not the data: confidential data with more persons of a type in a block than
        its cap are measured as they are (the measurement never reads the caps), and the
        post-processing holds every released block, and every region to the sum of its blocks'
        caps, at or under them.  Nothing refuses data over a cap, so whether a release happens
        never depends on one person; a cap set below the truth biases the release, never its
        privacy.
    """

    cell_type: np.ndarray
    type_names: tuple[str, ...]
    present: np.ndarray
    lower: np.ndarray
    upper: np.ndarray | None = None

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
        if self.upper is not None:
            upper = np.asarray(self.upper)
            if upper.shape != self.lower.shape or not np.all(np.mod(upper, 1) == 0) or (upper < -1).any():
                raise DataValidationError("gq.upper", f"must be integer caps (leaves, {n_types}), -1 where not capped")
            if ((upper >= 0) & (upper < self.lower)).any():
                raise DataValidationError("gq.upper", "a cap is below its type's lower bound")
            object.__setattr__(self, "upper", upper.astype(np.int64))

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

    ``invariant_totals`` holds the populations of the invariant regions only, those of levels
    ``<= total_level`` (1 = the nation only; the leaf level = block totals).  They are the
    first regions in hierarchy order, since every level is a contiguous slice.  The totals
    of deeper regions are computed from the confidential data and are not public, so they
    are kept nowhere here: :meth:`from_region_totals` drops them, :meth:`check` refuses them.

    Parameters
    ----------
    invariant_totals : numpy.ndarray
        The populations of the regions of levels ``<= total_level``, in hierarchy order.
    total_level : int
        The deepest level whose totals are invariant (1: the nation only).
    gq : GQKnowledge, optional
        Group-quarters facts of the leaves.
    structural_zeros : numpy.ndarray, optional
        Cells that are zero everywhere (boolean over cells).
    edits : tuple of Edit, optional
        Linear edits every histogram satisfies.
    child_groups : tuple of ChildGroup, optional
        Sibling regions held to one public total (:mod:`dpmodels.topdown.production`).
    """

    invariant_totals: np.ndarray
    total_level: int
    gq: GQKnowledge | None = None
    structural_zeros: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    edits: tuple[Edit, ...] = ()
    child_groups: tuple[ChildGroup, ...] = ()

    def __post_init__(self):
        totals = np.asarray(self.invariant_totals)
        if totals.ndim != 1 or (totals.size and not np.all(np.mod(totals, 1) == 0)):
            raise DataValidationError("knowledge.invariant_totals", "must be a vector of integer populations")
        object.__setattr__(self, "invariant_totals", totals.astype(np.int64))

    @classmethod
    def from_region_totals(cls, geography: Hierarchy, region_totals, total_level: int, **rest) -> PublicKnowledge:
        """Keep the invariant totals of ``region_totals`` (one per region, hierarchy order) and
        drop the others, which are not public."""
        totals = np.asarray(region_totals)
        if totals.shape != (geography.n_regions,):
            raise DataValidationError("region_totals", f"need one per region ({geography.n_regions})")
        return cls(totals[: _invariant_count(geography, total_level)], total_level, **rest)

    def check(self, geography: Hierarchy) -> None:
        """Refuse a ``total_level`` outside the geography, totals beyond the invariant regions, group totals
        the invariant totals contradict, and occupancy caps that leave no room for an invariant total
        (public facts against public facts)."""
        need = _invariant_count(geography, self.total_level)
        if len(self.invariant_totals) != need:
            raise DataValidationError(
                "knowledge.invariant_totals",
                f"need one per invariant region (levels <= {self.total_level}: {need}), got "
                f"{len(self.invariant_totals)}; the totals of deeper regions are not public",
            )
        _check_groups(self.child_groups, geography, self.total_level)
        _check_group_totals(self, geography)
        _check_caps_against_totals(self, geography)

    @property
    def root_total(self) -> int:
        """The population (always invariant)."""
        return int(self.invariant_totals[0])

    @property
    def node_totals(self) -> np.ndarray:
        """Former name of :attr:`invariant_totals` (only the invariant regions are held)."""
        return self.invariant_totals

    def invariant_total(self, geography: Hierarchy, node: int) -> int | None:
        """The node's population if it is an invariant, else None."""
        return int(self.invariant_totals[node]) if geography.level[node] <= self.total_level else None

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
            totals = {u: int(self.invariant_totals[u]) for u in np.unique(unit)}
        else:
            unit = leaves
            totals = None
        keys, inverse = np.unique(unit, return_inverse=True)
        unit_present = np.zeros((len(keys), self.gq.n_types), dtype=bool)
        unit_lower = np.zeros((len(keys), self.gq.n_types), dtype=np.int64)
        np.logical_or.at(unit_present, inverse, present)
        np.add.at(unit_lower, inverse, lower)
        return FlowData.from_units(unit_present, unit_lower, None if totals is None else [totals[k] for k in keys])


def _check_groups(groups: tuple[ChildGroup, ...], geography: Hierarchy, total_level: int) -> None:
    """Refuse a group naming an unknown region, the root, regions of two parents, a region twice, or a
    parent whose total is not invariant (its noisy total could fall below the group's: no split, and the
    failsafe, which keeps the parent's total, could not help)."""
    seen: set[str] = set()
    index = geography.index
    for group in groups:
        missing = [r for r in group.regions if r not in index]
        if missing:
            raise DataValidationError(f"child group {group.regions}", f"regions {missing} are not in the geography")
        parents = {int(geography.parent[index[r]]) for r in group.regions}
        if len(parents) != 1 or -1 in parents:
            raise DataValidationError(f"child group {group.regions}", "its regions must be children of one parent")
        parent = parents.pop()
        if len(geography.children(parent)) == 1:
            raise DataValidationError(f"child group {group.regions}", "an only child has its parent's total: no group")
        if geography.level[parent] > total_level:
            raise DataValidationError(
                f"child group {group.regions}",
                f"its parent's total must be invariant (level <= {total_level}); a noisy parent may hold fewer persons",
            )
        again = seen.intersection(group.regions)
        if again:
            raise DataValidationError(f"child group {group.regions}", f"regions {sorted(again)} are in two groups")
        seen.update(group.regions)


def _check_group_totals(knowledge: PublicKnowledge, geography: Hierarchy) -> None:
    """Refuse group totals that no counts can meet with the invariant totals: a group of invariant regions
    whose total is not their sum, groups of one parent that add to more than the parent's (invariant) total,
    or that cover all its children and add to less."""
    index, totals = geography.index, knowledge.invariant_totals
    by_parent: dict[int, list[ChildGroup]] = {}
    for group in knowledge.child_groups:
        by_parent.setdefault(int(geography.parent[index[group.regions[0]]]), []).append(group)
    for parent, groups in by_parent.items():
        name = geography.names[parent]
        for group in groups:
            if geography.level[parent] + 1 <= knowledge.total_level:
                own = int(sum(totals[index[r]] for r in group.regions))
                if own != group.total:
                    raise DataValidationError(
                        f"child group {group.regions}",
                        f"its total {group.total} is not the sum of its regions' invariant totals ({own})",
                    )
        summed = sum(g.total for g in groups)
        covered = sum(len(g.regions) for g in groups) == len(geography.children(parent))
        if summed > totals[parent] or (covered and summed != totals[parent]):
            raise DataValidationError(
                f"child groups of {name!r}",
                f"their totals add to {summed}, {'not' if covered else 'more than'} the invariant total "
                f"{int(totals[parent])} of {name!r}" + (" (they cover all its children)" if covered else ""),
            )


def _invariant_count(geography: Hierarchy, total_level: int) -> int:
    """How many regions have invariant totals: the levels ``1..total_level``."""
    if not 1 <= total_level <= geography.n_levels:
        raise DataValidationError("knowledge.total_level", f"must be in 1..{geography.n_levels}")
    return int(geography.level_bounds[total_level])


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


def _check_caps_against_totals(knowledge: PublicKnowledge, geography: Hierarchy) -> None:
    """Refuse an invariant total above the sum of its region's caps when every type present in the
    region is capped: no release could meet both (public facts only; the data are not read)."""
    gq = knowledge.gq
    if gq is None or gq.upper is None or knowledge.total_level < 1:
        return
    uncapped = geography.aggregate(((gq.upper < 0) & gq.present).astype(np.int64))
    room = geography.aggregate(np.where(gq.upper >= 0, gq.upper, 0)).sum(axis=1)
    invariant = np.arange(len(knowledge.invariant_totals))
    over = invariant[(uncapped[invariant].sum(axis=1) == 0) & (knowledge.invariant_totals > room[invariant])]
    if len(over):
        r = int(over[0])
        raise DataValidationError(
            "gq.upper",
            f"region {geography.names[r]!r}: its invariant total {int(knowledge.invariant_totals[r])} is above "
            f"the sum of its occupancy caps {int(room[r])} ({len(over)} region(s) so); no release can hold both",
        )
