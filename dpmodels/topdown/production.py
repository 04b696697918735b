"""The 2020 production's public constraints, as options of the TopDown driver (issue 25).

The Census Bureau's production TopDown (the public ``DAS_2020_Redistricting_Production_Code``) keeps
constraints that the 2019 paper's algorithm does not have.  Each is declared public knowledge here and
becomes linear rows (:class:`~dpmodels.topdown.child_rows.ChildRows`) of the solves it concerns; every
solve path and the failsafe keep them, and the release's checks count any that is off.

* **Grouped child totals** (:class:`~dpmodels.topdown.knowledge.ChildGroup` in
  ``PublicKnowledge.child_groups``): sibling regions held to one public total, as the production holds
  the AIAN and non-AIAN parts of a state to the state's invariant population (``makeChildGroups``,
  ``addGroupedChildTotalConstraint``): one row ``sum over the group's children and cells = total``.
* **Occupancy caps** (``GQKnowledge.upper``): at most ``upper[leaf, type]`` persons of a group-quarters
  type in a block, the production's ``hhgq_total_ub`` when the block total is not invariant (the number
  of facilities of the type times the declared persons per facility, :func:`occupancy_caps`).  A
  region's cap is the sum of its blocks' caps (a necessary condition on every solve above the blocks);
  a type with an uncapped block under the region is not capped there.
* **Structural zeros by name** (:data:`STRUCTURAL_ZEROS`, :func:`structural_zeros`): ``"production"`` is
  the production's PL94 set (``nurse_nva_0``: no person under 18 in a nursing facility, the only
  structural zero of ``theConstraints.Block`` in its PL94 configuration); ``"adult-only"`` is the set the
  synthetic census has always declared (under 18 in correctional, nursing, college housing and military
  quarters: four types, not one).  The synthetic generator keeps ``"adult-only"`` as its default; the
  published figures and tests depend on it.

:func:`failsafe_nodes` lists the parents whose solve used the failsafe, for the release's manifest.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.hierarchy import Hierarchy

from .child_rows import ChildRows
from .data import Schema
from .knowledge import ChildGroup, PublicKnowledge

__all__ = [
    "STRUCTURAL_ZEROS",
    "STRUCTURAL_ZERO_RULE",
    "structural_zeros",
    "occupancy_caps",
    "ProductionRows",
    "production_rows",
    "failsafe_nodes",
    "production_checks",
    "parse_child_groups",
    "declared_child_groups",
]

#: Named sets of structural zeros: (GQ types whose persons are all 18 or over, description).
STRUCTURAL_ZEROS = {
    "production": (
        ("nursing",),
        "the 2020 production's PL94 set: no person under 18 in a nursing facility (nurse_nva_0)",
    ),
    "adult-only": (
        ("correctional", "nursing", "college housing", "military"),
        "no person under 18 in correctional, nursing, college-housing or military group quarters (the synthetic "
        "census's set since 2019; three types more than the production's)",
    ),
}

#: The stated rule of a release from person files that declares structural zeros.
STRUCTURAL_ZERO_RULE = (
    "a person in a declared structural-zero cell (e.g. under 18 in a nursing facility) is left out (counted "
    "nowhere, invariant totals included)"
)


def structural_zeros(schema: Schema, name: str) -> np.ndarray:
    """The cells of the named set of structural zeros (:data:`STRUCTURAL_ZEROS`) in ``schema``.

    Parameters
    ----------
    schema : Schema
        A schema with the ``hhgq`` and ``votingage`` attributes of :func:`~dpmodels.topdown.data.pl94_schema`.
    name : {"production", "adult-only"}
        The set.

    Returns
    -------
    numpy.ndarray
        The flat indices of the zero cells, sorted.
    """
    if name not in STRUCTURAL_ZEROS:
        raise DataValidationError("structural_zeros", f"must be one of {sorted(STRUCTURAL_ZEROS)}, got {name!r}")
    types, _ = STRUCTURAL_ZEROS[name]
    hhgq = schema.attribute("hhgq")
    unknown = [t for t in types if t not in hhgq.values]
    if unknown:
        raise DataValidationError("structural_zeros", f"the schema's hhgq has no {unknown}")
    if schema.attribute("votingage").values[0] != "under 18":
        raise DataValidationError("structural_zeros", "votingage's first value must be 'under 18'")
    adult_only = np.isin(np.asarray(hhgq.values)[schema.cell_values("hhgq")], types)
    return np.flatnonzero(adult_only & (schema.cell_values("votingage") == 0))


def occupancy_caps(facilities: np.ndarray, per_facility) -> np.ndarray:
    """Occupancy caps per block and type: ``facilities x per_facility``, -1 where a type has no cap.

    Parameters
    ----------
    facilities : numpy.ndarray
        Blocks x types: the number of facilities of each type (public, like the production's ``gqhh_vect``).
    per_facility : sequence of int or None
        The declared persons per facility of each type (None: not capped).

    Returns
    -------
    numpy.ndarray
        Blocks x types, int64.
    """
    facilities = np.asarray(facilities)
    if facilities.ndim != 2 or len(per_facility) != facilities.shape[1]:
        raise DataValidationError("per_facility", f"needs one cap per type ({facilities.shape[-1]})")
    if (facilities < 0).any() or not np.all(np.mod(facilities, 1) == 0):
        raise DataValidationError("facilities", "must be counts")
    out = np.full(facilities.shape, -1, dtype=np.int64)
    for g, cap in enumerate(per_facility):
        if cap is None:
            continue
        if int(cap) != cap or cap < 1:
            raise DataValidationError("per_facility", f"type {g}: a cap is a positive count, got {cap!r}")
        out[:, g] = facilities[:, g].astype(np.int64) * int(cap)
    return out


class ProductionRows:
    """The production rows of every solve of one release: built once from the public knowledge.

    Parameters
    ----------
    knowledge : PublicKnowledge
        Its ``child_groups`` and ``gq.upper``.
    geography : Hierarchy
        The geography tree.
    """

    def __init__(self, knowledge: PublicKnowledge, geography: Hierarchy):
        index = geography.index
        self.groups = [([index[r] for r in g.regions], g.total) for g in knowledge.child_groups]
        self.cell_type = None if knowledge.gq is None else knowledge.gq.cell_type
        self.caps = None
        if knowledge.gq is not None and knowledge.gq.upper is not None:
            gq = knowledge.gq
            capped = np.where(gq.upper >= 0, gq.upper, 0)
            open_ = (gq.upper < 0) & gq.present  # a present type without a cap leaves the region uncapped
            caps = geography.aggregate(capped)
            self.caps = np.where(geography.aggregate(open_.astype(np.int64)) > 0, -1, caps)

    def for_solve(self, kids, cells: np.ndarray) -> tuple[ChildRows, ...]:
        """The rows of the solve of ``kids`` (region indices; ``[0]`` at the root) on the active ``cells``.

        Parameters
        ----------
        kids : sequence of int
            The children of the solve.
        cells : numpy.ndarray
            Its active cells.
        """
        kids = [int(k) for k in kids]
        m, n = len(kids), len(cells)
        out = []
        position = {k: t for t, k in enumerate(kids)}
        groups = [(g, total) for g, total in self.groups if g[0] in position]
        if groups:
            cols = [np.concatenate([position[r] * n + np.arange(n) for r in g]) for g, _ in groups]
            out.append(ChildRows("group total", _rows(cols, m * n), [total for _, total in groups], "=="))
        if self.caps is not None:
            types = self.cell_type[cells]
            rows, rhs = [], []
            present = {int(g): np.flatnonzero(types == g) for g in np.unique(types)}  # a type with no cell: no row
            for t, k in enumerate(kids):
                for g in np.flatnonzero(self.caps[k] >= 0):
                    if int(g) in present:
                        rows.append(t * n + present[int(g)])
                        rhs.append(self.caps[k, g])
            if rows:
                out.append(ChildRows("occupancy cap", _rows(rows, m * n), rhs, "<="))
        return tuple(out)


def _rows(cols: list[np.ndarray], width: int) -> sp.csr_matrix:
    """0/1 rows with ones at ``cols[k]``."""
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    data = np.ones(int(indptr[-1]))
    return sp.csr_matrix((data, np.concatenate(cols) if cols else [], indptr), shape=(len(cols), width))


def production_rows(knowledge: PublicKnowledge, geography: Hierarchy) -> ProductionRows | None:
    """The production rows of a release, or None when the knowledge declares no group and no cap.

    Parameters
    ----------
    knowledge : PublicKnowledge
        The public knowledge.
    geography : Hierarchy
        The geography tree.
    """
    caps = knowledge.gq is not None and knowledge.gq.upper is not None
    return ProductionRows(knowledge, geography) if knowledge.child_groups or caps else None


def failsafe_nodes(log) -> list[str]:
    """The parents whose solve used the failsafe (or, with passes, kept an earlier pass), in log order.

    Parameters
    ----------
    log : pandas.DataFrame
        A :class:`~dpmodels.topdown.driver.TopDownResult`'s ``log``.
    """
    if log.empty:
        return []
    used = log["failsafe"].astype(bool) | (log["method"] == "earlier pass kept")
    return list(dict.fromkeys(log.loc[used, "node"].tolist()))


def production_checks(counts: np.ndarray, knowledge: PublicKnowledge, geography: Hierarchy) -> dict:
    """Violations of the declared group totals and occupancy caps on released histograms (empty when
    neither is declared): ``"group totals off"`` (groups), ``"occupancy caps off"`` (regions x types).

    Parameters
    ----------
    counts : numpy.ndarray
        Regions x cells: the released histograms.
    knowledge : PublicKnowledge
        The public knowledge.
    geography : Hierarchy
        The geography tree.
    """
    out = {}
    totals = counts.sum(axis=1)
    index = geography.index
    if knowledge.child_groups:
        off = [sum(int(totals[index[r]]) for r in g.regions) != g.total for g in knowledge.child_groups]
        out["group totals off"] = int(sum(off))
    rows = production_rows(knowledge, geography)
    if rows is not None and rows.caps is not None:
        per_type = counts @ knowledge.gq.type_matrix().T
        per_type = np.asarray(per_type.todense() if sp.issparse(per_type) else per_type)
        out["occupancy caps off"] = int(((rows.caps >= 0) & (per_type > rows.caps)).sum())
    return out


def parse_child_groups(text, field: str = "--child-groups") -> tuple[tuple[str, ...], ...]:
    """Declared groups of sibling regions: ``"01001,01003;01005,01007"`` (regions split by ``,``, groups
    by ``;``) or a sequence of sequences of region names; None or empty gives no group.

    Parameters
    ----------
    text : str or sequence of sequences of str, optional
        The groups.
    field : str, default "--child-groups"
        The name errors give.
    """
    if text is None:
        return ()
    if isinstance(text, str):
        parts = [part for part in text.split(";") if part.strip()]
        groups = [tuple(r.strip() for r in part.split(",")) for part in parts]
    else:
        groups = [(group,) if isinstance(group, str) else tuple(str(r) for r in group) for group in text]
    for k, group in enumerate(groups):
        if not group or any(not r for r in group):
            raise DataValidationError(field, f"group {k + 1} has an empty region name: {group!r}")
    return tuple(groups)


def declared_child_groups(
    geography: Hierarchy, region_totals: np.ndarray, groups, field: str = "--child-groups"
) -> tuple[ChildGroup, ...]:
    """The declared groups (:func:`parse_child_groups`) as :class:`~dpmodels.topdown.knowledge.ChildGroup`,
    each total the sum of its regions' populations: an invariant, released exactly like the invariant
    totals of ``total_level`` (the production's AIAN and non-AIAN state parts), which the manifest lists.

    Which regions form a group is the user's declaration; only the totals come from the data, as every
    invariant does.  The groups' shape (siblings, an invariant parent) is checked by
    :meth:`PublicKnowledge.check`.

    Parameters
    ----------
    geography : Hierarchy
        The geography tree.
    region_totals : numpy.ndarray
        Every region's population, in hierarchy order (after the bounding rules).
    groups : str or sequence of sequences of str
        The declared groups.
    field : str, default "--child-groups"
        The name errors give.
    """
    index = geography.index
    out = []
    for group in parse_child_groups(groups, field):
        unknown = [r for r in group if r not in index]
        if unknown:
            raise DataValidationError(field, f"regions {unknown} are not in the geography (group {', '.join(group)})")
        out.append(ChildGroup(group, int(sum(int(region_totals[index[r]]) for r in group))))
    return tuple(out)
