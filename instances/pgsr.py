"""PGSR instances: the paper's running example, census-like and taxi-like generators, CSV files.

The real data sets of the paper (2010 Census SF1, 2014 NYC taxi trips) cannot be fetched
here, so the generators follow the shapes stated in spec section 6.6: 1/52/3,144 regions
with N up to 1,000 and the paper's tail recipe for the census; 1/6/263 regions with
heavy-tailed group sizes for the taxis.  ``scale`` multiplies the number of groups.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_example
from dpmodels.core.hierarchy import Hierarchy
from dpmodels.core.noise import make_rng
from dpmodels.pgsr.data import GroupSizeData

from .pgsr_files import from_csv, from_frame, read_hierarchy
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
