"""PGSR instances: the paper's running example, census-like and taxi-like generators, CSV files.

The real data sets of the paper (2010 Census SF1, 2014 NYC taxi trips) cannot be fetched
here, so the generators follow the shapes stated in spec section 6.6: 1/52/3,144 regions
with N up to 1,000 and the paper's tail recipe for the census; 1/6/263 regions with
heavy-tailed group sizes for the taxis.  ``scale`` multiplies the number of groups.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_example
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import make_rng
from dpmodels.core.tables import align_sizes, read_table, source_name, source_stem
from dpmodels.pgsr.bounding import fit_width
from dpmodels.pgsr.data import GroupSizeData

from .registry import data_path, register_generator, register_instance

__all__ = [
    "running_example",
    "census_like",
    "taxi_like",
    "random_tree",
    "read_hierarchy",
    "from_csv",
    "from_frame",
    "TAXI_BOROUGHS",
]

#: NYC TLC zone counts per borough (263 zones), spec 6.6.
TAXI_BOROUGHS = {"EWR": 1, "Queens": 69, "Bronx": 43, "Manhattan": 69, "Staten Island": 20, "Brooklyn": 61}

#: Household-size shares of sizes 1..7 and "8 or more", as SF1 reports them (illustrative).
CENSUS_PROFILE = np.array([0.267, 0.336, 0.158, 0.134, 0.062, 0.024, 0.011, 0.008])


@register_instance("pgsr/running-example", "the paper's running example (Tables 2-4): US -> GA, NY; N = 5, G = 6")
def running_example() -> GroupSizeData:
    hierarchy = Hierarchy.from_parent_table(pd.read_csv(data_path("pgsr/running_example_hierarchy.csv")))
    records = pd.read_csv(data_path("pgsr/running_example_records.csv"), dtype={"user": str})
    return GroupSizeData.from_records(records, hierarchy, n_sizes=5, name="running-example")


# ---------------------------------------------------------------------- census-like
def _check_positive(**values) -> None:
    for key, val in values.items():
        if not val > 0:
            raise DataValidationError(key, f"must be > 0, got {val!r}")


def census_size_distribution(N: int, head: np.ndarray = CENSUS_PROFILE) -> np.ndarray:
    """Shares of sizes 1..N from ``head`` (sizes 1..7 and "8 or more", spec 6.3).

    The "8 or more" share is spread over 8, 9, ... so that consecutive sizes keep the ratio
    ``r = n_7 / n_6`` (capped below 1 so the tail decays); sizes above N fold into N.
    """
    head = np.asarray(head, dtype=np.float64)
    shares = np.zeros(max(N, 7))
    shares[:7] = head[:7]
    if N > 7:
        ratio = min(head[6] / head[5], 0.95)
        tail = ratio ** np.arange(1, N - 6)
        shares[7:N] = head[7] * tail / tail.sum()
    else:
        shares[6] += head[7]
    p = shares[:N].copy()
    p[N - 1] += shares[N:].sum()
    return p / p.sum()


@register_generator(
    "pgsr/census-like", "1 nation / 52 states / 3,144 counties, N <= 1,000, household sizes with the paper's tail"
)
def census_like(
    seed=0,
    scale: float = 1.0,
    N: int = 1000,
    n_states: int = 52,
    n_counties: int = 3144,
    households: int = 117_630_445,
    outliers: int = 50,
) -> GroupSizeData:
    """A synthetic census of household sizes of the paper's shape.

    County sizes are heavy-tailed (lognormal), each county's shares of sizes 1..6 and
    "7 or more" are a Dirichlet draw around the national ones (the tail then follows the
    ratio rule), and ``outliers`` group quarters of size uniform in
    ``[10, min(1000, N)]`` are added to random counties (spec 6.3).
    """
    _check_positive(scale=scale, N=N, n_states=n_states, n_counties=n_counties, households=households)
    if n_counties < n_states:
        raise DataValidationError("n_counties", f"must be >= n_states ({n_states}), got {n_counties}")
    rng = make_rng(seed)
    per_state = 1 + rng.multinomial(n_counties - n_states, rng.dirichlet(np.full(n_states, 2.0)))
    states = [f"S{i + 1:02d}" for i in range(n_states)]
    table = {"US": None}
    counties = []
    for state, k in zip(states, per_state, strict=True):
        table[state] = "US"
        for j in range(k):
            counties.append(f"{state}-C{j + 1:03d}")
            table[counties[-1]] = state
    hierarchy = Hierarchy.from_parent_table(table)
    total = max(1, int(round(households * scale)))
    weights = rng.lognormal(0.0, 1.5, size=n_counties)
    county_totals = rng.multinomial(total, weights / weights.sum())
    heads = rng.dirichlet(CENSUS_PROFILE * 400.0, size=n_counties)
    profiles = np.stack([census_size_distribution(N, head) for head in heads])
    leaf = rng.multinomial(county_totals, profiles).astype(np.int64)
    if outliers and N >= 10:
        sizes = rng.integers(10, min(1000, N) + 1, size=outliers)
        where = rng.integers(0, n_counties, size=outliers)
        np.add.at(leaf, (where, sizes - 1), 1)
    leaf = _reorder_leaves(hierarchy, counties, leaf)
    return GroupSizeData.from_leaf_counts(hierarchy, leaf, name=f"census-like(scale={scale}, N={N}, seed={seed})", N=N)


def _reorder_leaves(hierarchy: Hierarchy, names: list[str], rows: np.ndarray) -> np.ndarray:
    """Rows given in ``names`` order, returned in the hierarchy's leaf order."""
    pos = {n: i for i, n in enumerate(names)}
    return rows[[pos[hierarchy.names[i]] for i in hierarchy.leaves]]


# ---------------------------------------------------------------------- taxi-like
@register_generator(
    "pgsr/taxi-like", "NYC / 6 boroughs / 263 zones; taxis with heavy-tailed pickup counts, sizes > N removed"
)
def taxi_like(
    seed=0, scale: float = 1.0, N: int = 50, n_taxis: int = 13_282, mean_size: float = 1844.0, sigma: float = 2.0
) -> GroupSizeData:
    """A synthetic taxi data set of the paper's shape (spec 6.6).

    A group is a taxi, its size its number of pickups (lognormal with mean ``mean_size``),
    and each taxi is assigned to one zone drawn by zone popularity (Manhattan zones are
    busier).  As in the paper's Figure 7, taxis with more than ``N`` pickups are removed.
    """
    _check_positive(scale=scale, N=N, n_taxis=n_taxis, mean_size=mean_size, sigma=sigma)
    rng = make_rng(seed)
    table = {"NYC": None}
    zones, boost = [], []
    for borough, k in TAXI_BOROUGHS.items():
        table[borough] = "NYC"
        for j in range(k):
            zones.append(f"{borough}-Z{j + 1:02d}")
            table[zones[-1]] = borough
            boost.append(4.0 if borough == "Manhattan" else 1.0)
    hierarchy = Hierarchy.from_parent_table(table)
    count = max(1, int(round(n_taxis * scale)))
    mu = np.log(mean_size) - sigma**2 / 2
    sizes = np.ceil(rng.lognormal(mu, sigma, size=count)).astype(np.int64)
    popularity = rng.lognormal(0.0, 1.0, size=len(zones)) * np.array(boost)
    zone_of = rng.choice(len(zones), size=count, p=popularity / popularity.sum())
    keep = sizes <= N
    if not keep.any():
        raise DataValidationError("N", f"no taxi has at most N={N} pickups; raise N or scale")
    regions = np.asarray(zones)[zone_of[keep]]
    return GroupSizeData.from_groups(
        hierarchy, regions, sizes[keep], n_sizes=N, name=f"taxi-like(scale={scale}, N={N}, seed={seed})"
    )


# ---------------------------------------------------------------------- small random trees
@register_generator("pgsr/random-tree", "a small random hierarchy with random counts, for tests and examples")
def random_tree(seed=0, depth: int = 3, branching: tuple[int, int] = (1, 3), N: int = 3, G: int = 4) -> GroupSizeData:
    """A uniform-depth tree with ``branching[0]..branching[1]`` children per node and G
    groups placed uniformly at random over (leaf, size) cells."""
    _check_positive(depth=depth, N=N)
    if G < 0 or branching[0] < 1 or branching[1] < branching[0]:
        raise DataValidationError("branching", f"need 1 <= min <= max and G >= 0, got {branching}, G={G}")
    rng = make_rng(seed)
    table = {"R": None}
    frontier = ["R"]
    for _ in range(depth - 1):
        nxt = []
        for node in frontier:
            for j in range(int(rng.integers(branching[0], branching[1] + 1))):
                child = f"{node}.{j + 1}"
                table[child] = node
                nxt.append(child)
        frontier = nxt
    hierarchy = Hierarchy.from_parent_table(table)
    leaf = np.zeros((len(hierarchy.leaves), N), dtype=np.int64)
    cells = rng.integers(0, leaf.size, size=G)
    np.add.at(leaf.ravel(), cells, 1)
    return GroupSizeData.from_leaf_counts(hierarchy, leaf, name=f"random-tree(seed={seed})", N=N)


# ---------------------------------------------------------------------- user files
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


# ---------------------------------------------------------------------- one tiny model per formulation
#: Spec 4.8 F2: noise everywhere, negative entries included (rows US, GA, NY of the running example).
_F2_NOISY = np.array([[2, 1, 4, 0, -2], [3, -1, 2, 1, 0], [0, 2, 1, -1, 1]], dtype=float)


def _noisy(kind: str = "counts"):
    from dpmodels.pgsr.data import NoisyGroupSizes, chain_cumulative, cumulative

    data = running_example()
    values = {"counts": _F2_NOISY, "cumulative": cumulative(_F2_NOISY)}.get(kind)
    if kind == "chain":
        values = chain_cumulative(data.hierarchy, _F2_NOISY)
    return NoisyGroupSizes(data.hierarchy, values, data.G, kind)


@register_example("pgsr.hierarchical_qip")
def _example_hierarchical_qip():
    from dpmodels.pgsr.models import build_hierarchical_qip

    return build_hierarchical_qip(_noisy())


@register_example("pgsr.hierarchical_milp")
def _example_hierarchical_milp():
    from dpmodels.pgsr.models import build_hierarchical_milp

    return build_hierarchical_milp(_noisy())


@register_example("pgsr.cumulative_qip")
def _example_cumulative_qip():
    from dpmodels.pgsr.models import build_cumulative_qip

    return build_cumulative_qip(_noisy("cumulative"))


@register_example("pgsr.isotonic_qp")
def _example_isotonic_qp():
    from dpmodels.pgsr.models import build_isotonic_qp

    return build_isotonic_qp(_noisy("cumulative"))


@register_example("pgsr.chain_qip")
def _example_chain_qip():
    from dpmodels.pgsr.models import build_chain_qip

    return build_chain_qip(_noisy("chain"))


@register_example("pgsr.node_subproblem")
def _example_node_subproblem():
    from dpmodels.pgsr.models import build_node_subproblem

    return build_node_subproblem([0, 1], [np.array([4.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 2.0])], target=3)


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
