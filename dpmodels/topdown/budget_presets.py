"""The 2020 production's budget allocation as a named preset, in exact fractions (issue 25).

``"pl94-2020"`` is the allocation of the 2020 redistricting (P.L. 94-171) persons file, read from the
public production code (``uscensusbureau/DAS_2020_Redistricting_Production_Code``):

* the geolevel shares of ``configs/production/pl94/person_US.ini``: ``104/4099, 1440/4099, 447/4099,
  687/4099, 1256/4099, 165/4099`` for US, State, County, Tract, Block_Group, Block;
* the query sets and their per-level shares of its strategy ``ProductionCandidate20210527US_mult8_add02_
  dsepJune3`` (``programs/strategies/strategies.py``): eleven query sets, from ``total`` to ``detailed``;
  the US level measures no ``total`` (the nation's population is invariant) and gets share 0 there;
* the discrete Gaussian under zCDP (``dp_mechanism = discrete_gaussian_mechanism``) with
  ``global_scale = 339/542`` (``person_default.ini``), i.e. ``rho = 1 / global_scale^2 = 293764/114921``
  (about 2.56), kept here as :data:`PL94_2020_RHO` for reference: a release's rho is the user's choice.

The per-query rho of the production is ``rho x geolevel share x query share``: so is the ledger's
(:func:`~dpmodels.topdown.mechanism.plan_measurement` with ``Strategy.per_level``).

**Levels.**  The preset names six levels.  A geography of six levels takes them in order (root = US).
A geography with fewer levels names its levels (``levels=``, from :data:`LEVEL_NAMES`); the geolevel
shares of the levels present are then renormalized exactly (each divided by their sum, so they add to
1 and keep their ratios) and the dropped levels' budget is spread over the others in proportion.
A level name outside the preset, a repeated one or a count that does not match is refused.

**Schema.**  The query sets are built on :func:`~dpmodels.topdown.data.pl94_schema` (hhgq 8 x votingage 2 x
hispanic 2 x cenrace); a schema with fewer races keeps the same shares (the shares are per query set).
``hhinstlevels`` groups hhgq into household / institutional (correctional, juvenile, nursing, other
institutional) / non-institutional (college, military, other noninstitutional), as the production does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction as F

from dpmodels.core.errors import DataValidationError

from .data import GQ_TYPES, Schema
from .mechanism import Strategy
from .queries import QuerySet, grouping_matrix, identity, kron_query, marginal, total

__all__ = [
    "BUDGET_PRESETS",
    "PL94_2020_LEVELS",
    "PL94_2020_GEOLEVEL_SHARES",
    "PL94_2020_QUERY_SHARES",
    "PL94_2020_RHO",
    "PL94_2020_PASSES",
    "PL94_2020_INNER_PASSES",
    "LEVEL_NAMES",
    "BudgetPreset",
    "budget_preset",
]

#: The production's geolevels, root first.
PL94_2020_LEVELS = ("US", "State", "County", "Tract", "Block_Group", "Block")
#: This library's level names (:data:`dpmodels.instances.topdown.LEVELS`) -> the production's.
LEVEL_NAMES = {
    "nation": "US",
    "state": "State",
    "county": "County",
    "tract": "Tract",
    "block group": "Block_Group",
    "block": "Block",
    **{name: name for name in PL94_2020_LEVELS},
}
#: ``geolevel_budget_prop`` of person_US.ini.
PL94_2020_GEOLEVEL_SHARES = dict(
    zip(
        PL94_2020_LEVELS,
        (F(104, 4099), F(1440, 4099), F(447, 4099), F(687, 4099), F(1256, 4099), F(165, 4099)),
        strict=True,
    )
)
#: The query sets of the strategy, in its order.
PL94_2020_QUERIES = (
    "total",
    "cenrace",
    "hispanic",
    "votingage",
    "hhinstlevels",
    "hhgq",
    "hispanic * cenrace",
    "votingage * cenrace",
    "votingage * hispanic",
    "votingage * hispanic * cenrace",
    "detailed",
)
_q = F(1, 4097)  # most rows are in 4097ths
#: Per level, the share of each query set (``PL94_2020_QUERIES`` order; 0: not measured there).
PL94_2020_QUERY_SHARES = {
    "US": (F(0), 52 * _q, 26 * _q, 26 * _q, 26 * _q, 26 * _q, 130 * _q, 130 * _q, 26 * _q, F(26, 241), F(189, 241)),
    "State": (3773 * _q, 6 * _q, 6 * _q, 6 * _q, 6 * _q, 6 * _q, 12 * _q, 12 * _q, 6 * _q, F(2, 241), 230 * _q),
    "County": (3126 * _q, 10 * _q, 10 * _q, 10 * _q, 10 * _q, 10 * _q, 28 * _q, 28 * _q, 10 * _q, 101 * _q, 754 * _q),
    "Tract": (
        F(1567, 4102),
        F(4, 2051),
        F(5, 4102),
        F(5, 4102),
        F(5, 4102),
        F(5, 4102),
        F(1933, 4102),
        F(10, 2051),
        F(5, 4102),
        F(67, 4102),
        F(241, 2051),
    ),
    "Block_Group": tuple(F(k, 4099) for k in (1705, 3, 3, 3, 3, 3, 1055, 9, 3, 24, 1288)),
    "Block": (5 * _q, 9 * _q, 5 * _q, 5 * _q, 5 * _q, 5 * _q, 21 * _q, 21 * _q, 5 * _q, 71 * _q, 3945 * _q),
}
#: ``1 / global_scale^2`` with ``global_scale = 339/542``: the persons file's rho (about 2.56).
PL94_2020_RHO = F(542, 339) ** 2
#: The interleaved passes closest to the production's PL94 ordering (the total isolated first).
PL94_2020_PASSES = (("total",), ("rest",))
#: The production's PL94 ordering itself: one pass whose L2 passes and rounder passes take the total first
#: (``NodeOptions(l2_passes=..., rounder_passes=...)``; its ``Strategy1b_ST_CTY_TR_BG_isoTot_Ordering``).
PL94_2020_INNER_PASSES = (("total",), ("rest",))
#: The hhinstlevels recode of hhgq.
HHINSTLEVELS = {
    "household": ("household",),
    "institutional": ("correctional", "juvenile", "nursing", "other institutional"),
    "non-institutional": ("college housing", "military", "other noninstitutional"),
}


@dataclass(frozen=True)
class BudgetPreset:
    """A named budget allocation, resolved for one schema and geography.

    Parameters
    ----------
    name : str
        The preset's name.
    strategy : Strategy
        The query sets with their shares level by level (``Strategy.per_level``).
    level_shares : tuple of Fraction
        The geolevel shares of the geography's levels, summing to exactly 1.
    levels : tuple of str
        The production's name of each level of the geography, root first.
    renormalized : bool
        Whether levels were dropped and the shares of the others renormalized.
    noise : str
        The production's noise.
    rho : Fraction
        The production's total rho (for reference; a release spends the rho it is given).
    """

    name: str
    strategy: Strategy
    level_shares: tuple[F, ...]
    levels: tuple[str, ...]
    renormalized: bool
    noise: str = "discrete-gaussian"
    rho: F = PL94_2020_RHO

    def facts(self) -> dict:
        """What a release states of the preset (exact fractions as text)."""
        return {
            "budget_preset": self.name,
            "preset_levels": list(self.levels),
            "preset_level_shares": [str(v) for v in self.level_shares],
            "preset_renormalized": self.renormalized,
        }


def _pl94_queries(schema: Schema) -> tuple[QuerySet, ...]:
    need = {"hhgq", "votingage", "hispanic", "cenrace"}
    if set(schema.names) != need or schema.attribute("hhgq").values != GQ_TYPES:
        raise DataValidationError(
            "schema", f"the pl94-2020 preset needs the PL94 schema ({sorted(need)}, hhgq 8 types)"
        )
    recode = grouping_matrix(GQ_TYPES, HHINSTLEVELS)
    matrices = {
        "total": total(schema),
        "hhinstlevels": kron_query(schema, {"hhgq": recode.toarray()}),
        "detailed": identity(schema),
    }
    for name in PL94_2020_QUERIES:
        if name not in matrices:
            matrices[name] = marginal(schema, name.split(" * "))
    return tuple(QuerySet(name, matrices[name]) for name in PL94_2020_QUERIES)


def _levels(n_levels: int, levels: Sequence[str] | None) -> tuple[str, ...]:
    if levels is None:
        if n_levels != len(PL94_2020_LEVELS):
            raise DataValidationError(
                "levels",
                f"the geography has {n_levels} levels, the preset {len(PL94_2020_LEVELS)}: name the geography's "
                f"levels (root first) among {list(LEVEL_NAMES)[:6]}",
            )
        return PL94_2020_LEVELS
    if isinstance(levels, str) or len(levels) != n_levels:
        raise DataValidationError("levels", f"needs one name per geography level ({n_levels}), root first")
    unknown = [v for v in levels if v not in LEVEL_NAMES]
    if unknown:
        raise DataValidationError("levels", f"{unknown} are not levels of the preset; choose from {list(LEVEL_NAMES)}")
    out = tuple(LEVEL_NAMES[v] for v in levels)
    if len(set(out)) != len(out) or list(out) != sorted(out, key=PL94_2020_LEVELS.index):
        raise DataValidationError(
            "levels", f"must be distinct and in the preset's order (root first), got {list(levels)}"
        )
    return out


def budget_preset(name: str, schema: Schema, n_levels: int, levels: Sequence[str] | None = None) -> BudgetPreset:
    """The named preset for ``schema`` and a geography of ``n_levels`` levels.

    Parameters
    ----------
    name : {"pl94-2020"}
        The preset (:data:`BUDGET_PRESETS`).
    schema : Schema
        The PL94 schema (:func:`~dpmodels.topdown.data.pl94_schema`, any number of races).
    n_levels : int
        The geography's number of levels.
    levels : sequence of str, optional
        The production's level of each geography level, root first (required unless there are six):
        the shares of the levels present are renormalized exactly.

    Returns
    -------
    BudgetPreset
    """
    if name not in BUDGET_PRESETS:
        raise DataValidationError("budget_preset", f"must be one of {sorted(BUDGET_PRESETS)}, got {name!r}")
    names = _levels(n_levels, levels)
    present = [PL94_2020_GEOLEVEL_SHARES[v] for v in names]
    level_shares = tuple(v / sum(present) for v in present)  # exact: Fractions
    per_level = tuple(PL94_2020_QUERY_SHARES[v] for v in names)
    strategy = Strategy(_pl94_queries(schema), PL94_2020_QUERY_SHARES["Block"], per_level)
    return BudgetPreset(name, strategy, level_shares, names, len(names) < len(PL94_2020_LEVELS))


#: The named presets (``--budget-preset``).
BUDGET_PRESETS = {"pl94-2020": "the 2020 redistricting persons allocation (PL94, zCDP, exact fractions)"}
