"""Synthetic census person data for TopDown (project-defined, spec section 5 "[X]").

The paper evaluates nothing, and real block data are not reachable here, so the generator
draws persons over a configurable geography with a PL94-like schema (hhgq 8 x votingage 2
x hispanic 2 x cenrace): heavy-tailed block populations with many empty blocks, random
group-quarters facilities (occupied facilities give the GQ lower bounds), households with
one to three adults and at most four children per adult.  Its public knowledge is the
2018 End-to-End kind: state populations invariant (block totals optionally), GQ facts per
block, the structural zeros of GQs with a minimum age, and one edit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng
from dpmodels.core.tables import read_table, source_name, source_stem
from dpmodels.topdown.data import (
    GQ_TYPES,
    Edit,
    GQKnowledge,
    PublicKnowledge,
    Schema,
    TopDownData,
    geography_from_geocodes,
    microdata,
    pl94_schema,
)
from dpmodels.topdown.layouts import LAYOUTS, read_ppmf, read_ppmf_pl94
from dpmodels.topdown.production import declared_child_groups
from dpmodels.topdown.production import structural_zeros as named_zeros

from . import topdown_examples  # noqa: F401  (registers one example model per formulation)
from .registry import register_generator

__all__ = [
    "synthetic_census",
    "PRESETS",
    "LEVELS",
    "adult_only_zeros",
    "children_per_adult_edit",
    "records",
    "from_csv",
    "from_frame",
]

#: Fan-outs (states, counties per state, tracts per county, block groups per tract, blocks per block group).
PRESETS = {
    "tiny": (2, 2, 2, 1, 3),
    "small": (2, 3, 3, 2, 6),
    "county": (1, 1, 12, 3, 25),
    "state": (1, 5, 30, 3, 30),
}
#: Geography levels by name (1 = the nation, the root), as ``total_level`` names them.
LEVELS = {"nation": 1, "state": 2, "county": 3, "tract": 4, "block group": 5, "block": 6}
ADULT_ONLY_GQ = ("correctional", "nursing", "college housing", "military")


def adult_only_zeros(schema: Schema) -> np.ndarray:
    """Structural zeros: persons under 18 in GQ types with a minimum age (spec 1.5 item 2)."""
    gq = schema.cell_values("hhgq")
    va = schema.cell_values("votingage")
    adult_only = np.isin(np.asarray(schema.attribute("hhgq").values)[gq], ADULT_ONLY_GQ)
    return np.flatnonzero(adult_only & (va == 0))


def children_per_adult_edit(schema: Schema) -> Edit:
    """``4 x adults in households - children in households >= 0`` (a project-defined edit in
    the spirit of spec 1.5 items 4-6; its coefficient 4 breaks total unimodularity)."""
    gq = schema.cell_values("hhgq")
    va = schema.cell_values("votingage")
    coef = np.where(gq == 0, np.where(va == 1, 4.0, -1.0), 0.0)
    return Edit("children per adult in households", coef, ">=")


@register_generator(
    "topdown/synthetic", "synthetic persons over nation/state/county/tract/block group/block, PL94-like schema"
)
def synthetic_census(
    seed=0,
    preset: str = "tiny",
    fanout: tuple | None = None,
    races: int = 7,
    scale: float = 1.0,
    mean_block_population: float = 30.0,
    empty_share: float = 0.2,
    gq_share: float = 0.05,
    total_level: str = "state",
    edits: bool = True,
    structural_zeros: str = "adult-only",
    child_groups=None,
) -> TopDownData:
    """Draw a synthetic census.  ``fanout`` overrides the preset's (states, counties, tracts,
    block groups, blocks) counts; ``scale`` multiplies block populations; ``total_level``
    names the deepest geography whose populations are invariant ("nation" ... "block");
    ``structural_zeros`` names the declared set (:data:`dpmodels.topdown.production.STRUCTURAL_ZEROS`):
    ``"adult-only"`` (the default since 2019: no minor in four GQ types) or ``"production"`` (the 2020
    production's: no minor in a nursing facility).  The persons drawn are the same either way.
    ``child_groups`` declares groups of sibling regions (``"01001,01002"``; regions split by ``,``, groups
    by ``;``, or a list of lists of names) whose totals are invariant
    (:func:`dpmodels.topdown.production.declared_child_groups`)."""
    rng = make_rng(seed)
    fan = tuple(fanout) if fanout is not None else PRESETS.get(preset)
    if fan is None or len(fan) != 5 or min(fan) < 1:
        raise DataValidationError("fanout", f"need 5 positive fan-outs or a preset in {sorted(PRESETS)}, got {fan}")
    if not 0 <= empty_share < 1 or not 0 <= gq_share <= 1 or scale <= 0:
        raise DataValidationError("shares", "need 0 <= empty_share < 1, 0 <= gq_share <= 1 and scale > 0")
    schema = pl94_schema(races)
    codes = _block_geocodes(fan)
    geography = geography_from_geocodes(codes)
    block_rows = {geography.names[i]: k for k, i in enumerate(geography.leaves)}
    n_blocks = len(codes)
    pop = np.where(
        rng.random(n_blocks) < empty_share,
        0,
        np.ceil(rng.lognormal(np.log(mean_block_population * scale) - 0.5, 1.0, n_blocks)),
    ).astype(int)
    race_p = _race_profile(races)
    counts = sp.lil_matrix((n_blocks, schema.size), dtype=np.int64)
    present = np.zeros((n_blocks, len(GQ_TYPES)), dtype=bool)
    lower = np.zeros((n_blocks, len(GQ_TYPES)), dtype=np.int64)
    for code, size in zip(codes, pop, strict=True):
        row = block_rows[code]
        cells, facilities = _block_persons(rng, schema, int(size), gq_share, race_p)
        for g, n_fac in facilities.items():
            present[row, g] = True
            lower[row, g] = n_fac if g else 0
        if cells.size:
            uniq, num = np.unique(cells, return_counts=True)
            counts[row, uniq] = num
    counts = counts.tocsr()
    gq = GQKnowledge(schema.cell_values("hhgq"), GQ_TYPES, present, lower)
    level = LEVELS.get(total_level)
    if level is None:
        raise DataValidationError(
            "total_level", f"must be nation/state/county/tract/block group/block, got {total_level!r}"
        )
    totals = _region_totals(geography, counts)
    knowledge = PublicKnowledge.from_region_totals(
        geography,
        totals,
        level,
        gq=gq,
        structural_zeros=named_zeros(schema, structural_zeros),
        edits=(children_per_adult_edit(schema),) if edits else (),
        child_groups=declared_child_groups(geography, totals, child_groups, "child_groups"),
    )
    return TopDownData(
        schema, geography, counts, knowledge, name=f"synthetic({preset if fanout is None else fan}, seed={seed})"
    )


def _block_geocodes(fan: tuple) -> list[str]:
    states, counties, tracts, groups, blocks = fan
    if states > 99 or counties > 999 or tracts > 999_999 or groups > 9 or blocks > 999:
        raise DataValidationError(
            "fanout",
            "geocodes allow at most 99 states, 999 counties, 999,999 tracts, "
            "9 block groups and 999 blocks per block group",
        )
    return [
        f"{s + 1:02d}{c + 1:03d}{t + 1:06d}{g + 1}{b:03d}"
        for s in range(states)
        for c in range(counties)
        for t in range(tracts)
        for g in range(groups)
        for b in range(blocks)
    ]


def _race_profile(races: int) -> np.ndarray:
    p = 1.0 / np.arange(1, races + 1) ** 1.6
    return p / p.sum()


def _block_persons(rng, schema: Schema, size: int, gq_share: float, race_p: np.ndarray):
    """Cells of the persons of one block and its occupied facilities per GQ type."""
    gq_types, va, facilities = [], [], {}
    remaining = size
    if size and rng.random() < gq_share:
        g = int(rng.integers(1, len(GQ_TYPES)))
        n_fac = int(rng.integers(1, 3))
        occupants = min(remaining, max(n_fac, int(rng.lognormal(3.0, 0.8))))
        if occupants >= n_fac:
            facilities[g] = n_fac
            adult_only = GQ_TYPES[g] in ADULT_ONLY_GQ
            va += list(np.ones(occupants, int) if adult_only else (rng.random(occupants) < 0.3).astype(int))
            gq_types += [g] * occupants
            remaining -= occupants
    while remaining > 0:  # households: 1-3 adults, at most 4 children per adult
        adults = min(remaining, int(rng.integers(1, 4)))
        kids = min(remaining - adults, int(rng.integers(0, 4 * adults + 1)) if rng.random() < 0.4 else 0)
        va += [1] * adults + [0] * kids
        gq_types += [0] * (adults + kids)
        remaining -= adults + kids
    if 0 in gq_types:
        facilities[0] = 0  # households present, no lower bound (occupancy is not invariant)
    n = len(gq_types)
    if n == 0:
        return np.empty(0, dtype=np.int64), facilities
    hisp = (rng.random(n) < 0.18).astype(int)
    race = rng.choice(len(race_p), size=n, p=race_p)
    cells = np.ravel_multi_index((np.array(gq_types), np.array(va), hisp, race), schema.shape)
    return cells.astype(np.int64), facilities


def _region_totals(geography, counts: sp.csr_matrix) -> np.ndarray:
    leaf_totals = np.asarray(counts.sum(axis=1)).ravel()
    return geography.aggregate(leaf_totals.astype(np.int64))


def records(data: TopDownData, leaf_counts: sp.spmatrix | None = None) -> pd.DataFrame:
    """Microdata: one row per person (block geocode and attribute labels) from leaf histograms."""
    return microdata(data.schema, data.geography, data.leaf_counts if leaf_counts is None else leaf_counts)


def from_csv(
    persons: str | Path,
    races: int = 63,
    total_level: str = "state",
    blocks: str | Path | None = None,
    layout: str = "labels",
    structural_zeros: str | None = None,
    child_groups=None,
) -> TopDownData:
    """Load person records (``geocode`` plus one column per PL94 attribute, value labels; or Census codes).

    The public knowledge is the population invariant down to ``total_level``, computed after
    the rules below; GQ facts, zeros and edits are not in the file.  Persons outside the
    declared domain are left out by the stated rules of
    :data:`dpmodels.topdown.data.BOUNDING_RULES` (a geocode that is not a listed block, an
    attribute value that is not one of the schema's): refusing the file instead would make
    whether a release happens depend on one person.  How many persons a rule left out is
    never reported.  Malformed input is refused, naming the file: an unreadable file, a
    missing column, a blank value, a geocode that is not 15 digits, a block listed twice.

    Parameters
    ----------
    persons
        Person records, one row per person (a DataFrame, CSV or Parquet file): with ``layout="labels"``
        ``geocode`` (15-digit block geocode) and ``hhgq``, ``votingage``, ``hispanic``, ``cenrace``
        (value labels of :func:`pl94_schema`).
    races
        The cenrace categories of the schema (1..63): the declared domain of ``cenrace``.
    total_level
        The deepest geography level (:data:`LEVELS`) whose populations are invariant.
    blocks
        CSV with a ``geocode`` column: the declared (public) block list, empty blocks too, each
        once.  Without it the geography is the set of blocks that have persons, which depends
        on the data: the result says so (``geography_declared=False``) and a private release
        refuses it.
    layout
        ``"labels"``, ``"ppmf"``: the Census microdata codes (TABBLKST ... TABBLK, RTYPE, GQTYPE,
        QAGE, CENHISP, CENRACE), read by :func:`dpmodels.topdown.layouts.read_ppmf`, whose codes
        outside the domain are left out by the same rule and whose malformed codes are refused; or
        ``"ppmf-pl94"``, the 2020 redistricting columns (GQTYPE_PL, VOTING_AGE for GQTYPE, QAGE).
    structural_zeros
        A named set of structural zeros to declare (``"production"``: no person under 18 in a nursing
        facility; ``"adult-only"``), or None.  A person in a declared zero cell is left out by the stated
        rule :data:`dpmodels.topdown.production.STRUCTURAL_ZERO_RULE` (refusing instead would make
        whether a release happens depend on one person).
    child_groups
        Declared groups of sibling regions (geocode prefixes; ``"01001,01003;01005"``: regions split by
        ``,``, groups by ``;``, or a list of lists) whose total population is invariant, released exactly
        like the invariant totals (the production's AIAN and non-AIAN parts of a state); computed after
        the rules below (:func:`dpmodels.topdown.production.declared_child_groups`).
    """
    level = LEVELS.get(total_level)
    if level is None:
        raise DataValidationError("total_level", f"must be one of {list(LEVELS)}, got {total_level!r}")
    schema = pl94_schema(races)
    where = source_name(persons, "persons")
    if layout in ("ppmf", "ppmf-pl94"):  # the label layout, checked code by code
        frame = read_ppmf(persons) if layout == "ppmf" else read_ppmf_pl94(persons)
    elif layout == "labels":
        frame = read_table(persons, ["geocode", *schema.names], nonblank=["geocode", *schema.names], field="persons")
        _check_geocodes(frame["geocode"], where)
    else:
        raise DataValidationError("layout", f"must be one of {list(LAYOUTS)}, got {layout!r}")
    geography = _geography(frame["geocode"], where) if blocks is None else _declared_geography(blocks)
    leaf_row = {geography.names[i]: k for k, i in enumerate(geography.leaves)}
    rows = frame["geocode"].map(leaf_row)
    cells, in_schema = _cells(frame, schema)
    keep = rows.notna().to_numpy() & in_schema  # the stated rules: out-of-domain persons are left out
    zeros = np.empty(0, dtype=np.int64) if structural_zeros is None else named_zeros(schema, structural_zeros)
    keep &= ~np.isin(cells, zeros)  # and persons in declared structural-zero cells
    counts = sp.csr_matrix(
        (np.ones(int(keep.sum()), np.int64), (rows.to_numpy()[keep].astype(np.int64), cells[keep])),
        shape=(len(leaf_row), schema.size),
    )
    totals = _region_totals(geography, counts)
    groups = declared_child_groups(geography, totals, child_groups, "child_groups")
    knowledge = PublicKnowledge.from_region_totals(
        geography, totals, level, structural_zeros=zeros, child_groups=groups
    )
    name = source_stem(persons, "persons")
    return TopDownData(schema, geography, counts, knowledge, name=name, geography_declared=blocks is not None)


def from_frame(persons, blocks=None, **declared) -> TopDownData:
    """:func:`from_csv` for tables in memory: ``persons`` and ``blocks`` may be pandas DataFrames
    (or ``.csv``/``.parquet`` paths), read by their column labels (a ``geocode`` index counts).

    Parameters
    ----------
    persons, blocks
        As in :func:`from_csv`.
    **declared
        ``races``, ``total_level``, ``layout``, as in :func:`from_csv`.
    """
    return from_csv(persons, blocks=blocks, **declared)


def _check_geocodes(codes: pd.Series, path) -> None:
    """Refuse a geocode that is not 15 ASCII digits (malformed input), naming the file and the row."""
    bad = np.flatnonzero(~codes.str.fullmatch(r"[0-9]{15}").to_numpy(dtype=bool))
    if len(bad):
        raise DataValidationError(
            str(path),
            f"column 'geocode' on data row {bad[0] + 1} must be 15 digits (state 2, county 3, tract 6, block 4), "
            f"got {codes.iloc[bad[0]]!r}",
        )


def _declared_geography(blocks):
    """The geography of the declared block list; a malformed or repeated geocode is refused naming the file."""
    codes = read_table(blocks, ["geocode"], nonblank=["geocode"], field="blocks")["geocode"]
    blocks = source_name(blocks, "blocks")
    _check_geocodes(codes, blocks)
    repeated = np.flatnonzero(codes.duplicated().to_numpy())
    if len(repeated):
        raise DataValidationError(
            str(blocks), f"geocode {codes.iloc[repeated[0]]!r} is listed twice (again on data row {repeated[0] + 1})"
        )
    return _geography(codes, blocks)


def _cells(frame: pd.DataFrame, schema) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cell of ``schema`` and whether every value is one of the schema's (else the cell is 0)."""
    positions = [frame[a.name].map({v: i for i, v in enumerate(a.values)}).to_numpy() for a in schema.attributes]
    known = np.logical_and.reduce([~pd.isna(p) for p in positions])
    positions = [np.where(known, p, 0).astype(np.int64) for p in positions]
    return np.ravel_multi_index(positions, schema.shape).astype(np.int64), known


def _geography(codes, path):
    """The geography tree of the geocodes in ``codes``; a malformed geocode is refused naming ``path``."""
    try:
        return geography_from_geocodes(sorted(codes))  # by label: the rows' order never matters
    except DataValidationError as err:
        raise DataValidationError(str(path), err.problem) from err
