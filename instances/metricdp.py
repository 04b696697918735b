"""Metric-DP instances: grid maps, Gaussian points, road-like graphs, text embeddings (spec 8.2).

The paper's Rome road network and word2vec vectors cannot be fetched here; road-like graphs
are generated (or loaded from a user's node/edge files with Haversine distances) and text
instances take a user-supplied embedding matrix.  Outputs are a random subset of K records
(spec A4), the prior is uniform (A6), and costs follow the paper: Eq. 67 with shortest-path
distances to random destinations for maps, the Euclidean distance for vectors.
:func:`locations_from_csv` and :func:`records_from_csv` read the files of ``dpmodels release mdp``:
the public candidate locations, and each user's secret location.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from dpmodels.core.errors import DataValidationError
from dpmodels.core.formulations import register_example
from dpmodels.core.noise import make_rng
from dpmodels.core.tables import read_table, source_name, source_stem
from dpmodels.metricdp.data import MDPGraph, MDPInstance, destination_costs, euclidean_distances, haversine_km

from .registry import register_generator

__all__ = [
    "grid_maps",
    "paper_grid",
    "gaussian",
    "road_like",
    "road_from_files",
    "text_embeddings",
    "locations_from_csv",
    "records_from_csv",
    "from_frame",
    "OUTSIDE",
    "ROME_BOX",
]

#: The paper's Rome bounding box (south-west and north-east corners, degrees).
ROME_BOX = (41.66, 12.24, 42.10, 12.81)
PAPER_SCALE = {"N": 500, "K": 100, "M": 25}
#: Eq. 67 averages over this many random destinations by default (or every record if fewer).
DEFAULT_DESTINATIONS = 100


def _outputs(rng, n: int, k: int) -> np.ndarray:
    if not 1 <= k <= n:
        raise DataValidationError("K", f"must be in 1..{n} (outputs are a subset of the records), got {k}")
    return np.sort(rng.choice(n, k, replace=False))


def _map_instance(
    d: np.ndarray, path: np.ndarray, rng, K: int, destinations: int, epsilon: float, eta: float, name: str, features
) -> MDPInstance:
    """Records on a map: outputs are K records, cost Eq. 67 to random destinations."""
    n = d.shape[0]
    outs = _outputs(rng, n, K)
    if destinations is None:
        destinations = min(DEFAULT_DESTINATIONS, n)
    if not 1 <= destinations <= n:
        raise DataValidationError("destinations", f"must be in 1..{n} (destinations are records), got {destinations}")
    dest = rng.choice(n, destinations, replace=False)
    finite = np.where(np.isfinite(path), path, path[np.isfinite(path)].max() * 2 if np.isfinite(path).any() else 0)
    cost = destination_costs(finite[:, dest], finite[outs][:, dest])
    return MDPInstance(
        d,
        cost,
        np.full(n, 1.0 / n),
        epsilon,
        eta,
        d_ro=d[:, outs],
        features=features,
        name=name,
        info={"outputs": outs, "destinations": dest},
    )


@register_generator("mdp/grid", "grid map of 1 km cells (paper: 20 x 25), outputs and destinations random cells")
def grid_maps(
    seed=0,
    rows: int = 20,
    cols: int = 25,
    cell_km: float = 1.0,
    K: int = 100,
    destinations: int | None = None,
    epsilon: float = 10.0,
    eta: float = 2.0,
) -> MDPInstance:
    """Cells of a ``rows x cols`` grid, Euclidean distances between centres (spec 8.2 item 2);
    ``pd`` in Eq. 67 is the shortest path along the mDP graph."""
    if min(rows, cols) < 1 or cell_km <= 0:
        raise DataValidationError("grid", f"need positive rows, cols and cell size, got {rows}, {cols}, {cell_km}")
    rng = make_rng(seed)
    xy = cell_km * np.array([(r, c) for r in range(rows) for c in range(cols)], dtype=float)
    d = euclidean_distances(xy)
    path = MDPGraph.build(d, eta, epsilon).shortest_paths()
    return _map_instance(d, path, rng, K, destinations, epsilon, eta, f"grid {rows}x{cols} (seed={seed})", xy)


@register_generator("mdp/paper-grid", "the paper-scale setting: 20 x 25 grid, N = 500, K = 100 (solve with M = 25)")
def paper_grid(seed=0, epsilon: float = 10.0, eta: float = 2.0) -> MDPInstance:
    inst = grid_maps(seed=seed, rows=20, cols=25, K=PAPER_SCALE["K"], epsilon=epsilon, eta=eta)
    inst.info["M"] = PAPER_SCALE["M"]
    return inst


@register_generator("mdp/gaussian", "3-d Gaussian points N(0, 4^2 I), N records from a pool of 2,000, Euclidean costs")
def gaussian(
    seed=0,
    N: int = 500,
    K: int = 100,
    dim: int = 3,
    sigma: float = 4.0,
    pool: int = 2000,
    epsilon: float = 10.0,
    eta: float = 2.0,
) -> MDPInstance:
    if not 1 <= N <= pool:
        raise DataValidationError("N", f"must be in 1..pool={pool}, got {N}")
    rng = make_rng(seed)
    points = rng.normal(0.0, sigma, (pool, dim))[rng.choice(pool, N, replace=False)]
    return _vector_instance(points, rng, K, epsilon, eta, f"gaussian N={N} (seed={seed})")


def _vector_instance(points: np.ndarray, rng, K: int, epsilon: float, eta: float, name: str) -> MDPInstance:
    d = euclidean_distances(points)
    outs = _outputs(rng, len(points), K)
    return MDPInstance(
        d,
        d[:, outs],
        np.full(len(points), 1.0 / len(points)),
        epsilon,
        eta,
        d_ro=d[:, outs],
        features=points,
        name=name,
        info={"outputs": outs},
    )


def text_embeddings(
    vectors, N: int | None = None, K: int = 100, epsilon: float = 10.0, eta: float = 2.0, seed=0
) -> MDPInstance:
    """Words as embedding vectors (a user matrix, one row per word; the paper used 300-d word2vec)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or not np.isfinite(v).all():
        raise DataValidationError("vectors", f"need a finite (words x dims) matrix, got shape {v.shape}")
    rng = make_rng(seed)
    n = len(v) if N is None else N
    if not 1 <= n <= len(v):
        raise DataValidationError("N", f"must be in 1..{len(v)}, got {n}")
    pick = rng.choice(len(v), n, replace=False) if n < len(v) else np.arange(n)
    return _vector_instance(v[pick], rng, K, epsilon, eta, f"text N={n}")


# ---------------------------------------------------------------------- road networks
@register_generator("mdp/road-like", "road-like network in the Rome box: Haversine metric, Eq. 67 on road distances")
def road_like(
    seed=0,
    N: int = 500,
    K: int = 100,
    destinations: int | None = None,
    degree: int = 3,
    epsilon: float = 10.0,
    eta: float = 2.0,
    box=ROME_BOX,
) -> MDPInstance:
    """Nodes clustered like a city (dense centre, sparse suburbs) joined to their nearest
    neighbours; the record metric is Haversine (spec 8.2 item 1), road distance is the
    shortest path along the edges."""
    rng = make_rng(seed)
    lat0, lon0, lat1, lon1 = box
    centre = np.array([(lat0 + lat1) / 2, (lon0 + lon1) / 2])
    spread = np.array([lat1 - lat0, lon1 - lon0]) / 8
    dense = rng.normal(centre, spread, (N // 2, 2))
    sparse = np.column_stack([rng.uniform(lat0, lat1, N - N // 2), rng.uniform(lon0, lon1, N - N // 2)])
    nodes = np.clip(np.vstack([dense, sparse]), [lat0, lon0], [lat1, lon1])
    d = haversine_km(nodes[:, None, 0], nodes[:, None, 1], nodes[None, :, 0], nodes[None, :, 1])
    np.fill_diagonal(d, 0.0)
    d = (d + d.T) / 2
    nearest = np.argsort(d, axis=1)[:, 1 : degree + 1]
    src = np.repeat(np.arange(N), degree)
    dst = nearest.ravel()
    frame = pd.DataFrame({"source": src, "target": dst})
    return _road_instance(nodes, frame, d, rng, K, destinations, epsilon, eta, f"road-like N={N} (seed={seed})")


def _road_instance(nodes, edges: pd.DataFrame, d, rng, K, destinations, epsilon, eta, name) -> MDPInstance:
    n = len(nodes)
    lengths = edges["length_km"].to_numpy() if "length_km" in edges else d[edges["source"], edges["target"]]
    road = sp.csr_matrix((lengths, (edges["source"], edges["target"])), shape=(n, n))
    path = dijkstra(road, directed=False)
    return _map_instance(d, path, rng, K, destinations, epsilon, eta, name, nodes)


def road_from_files(
    nodes: str | Path,
    edges: str | Path,
    K: int = 100,
    destinations: int | None = None,
    epsilon: float = 10.0,
    eta: float = 2.0,
    seed=0,
) -> MDPInstance:
    """Load a road network: ``nodes`` CSV with ``id, lat, lon``; ``edges`` CSV with ``source,
    target`` (node ids) and optionally ``length_km`` (default: Haversine length)."""
    nf = pd.read_csv(nodes)
    ef = pd.read_csv(edges)
    for frame, path, cols in ((nf, nodes, {"id", "lat", "lon"}), (ef, edges, {"source", "target"})):
        missing = sorted(cols - set(frame.columns))
        if missing:
            raise DataValidationError(str(path), f"missing columns {missing}")
    if nf["id"].duplicated().any():
        raise DataValidationError(str(nodes), "node ids repeat")
    if not (nf["lat"].between(-90, 90).all() and nf["lon"].between(-180, 180).all()):
        raise DataValidationError(str(nodes), "lat must be in [-90, 90] and lon in [-180, 180]")
    pos = {v: i for i, v in enumerate(nf["id"])}
    unknown = sorted(set(ef["source"]).union(ef["target"]) - set(pos))
    if unknown:
        raise DataValidationError(str(edges), f"edges name unknown nodes {unknown[:5]}")
    if "length_km" in ef and (ef["length_km"] < 0).any():
        raise DataValidationError(str(edges), "length_km must be >= 0")
    coords = nf[["lat", "lon"]].to_numpy(dtype=np.float64)
    d = haversine_km(coords[:, None, 0], coords[:, None, 1], coords[None, :, 0], coords[None, :, 1])
    np.fill_diagonal(d, 0.0)
    mapped = ef.assign(source=ef["source"].map(pos), target=ef["target"].map(pos))
    return _road_instance(
        coords, mapped, (d + d.T) / 2, make_rng(seed), K, destinations, epsilon, eta, Path(nodes).stem
    )


# ---------------------------------------------------------------------- a user's CSV files (release)
def locations_from_csv(path, epsilon: float, eta: float, name: str | None = None) -> MDPInstance:
    """The public domain of a metric-DP release: a CSV of candidate locations, one per row.

    Columns: ``location`` (a unique label: what records and released outputs name), the
    coordinates, and optionally ``prior`` (public weights of the locations, e.g. from a census;
    normalised; default uniform; never estimated from the secret records).  Coordinates are
    ``lat,lon`` in degrees (great-circle km), or any other numeric columns read as km
    (Euclidean).  Every location is a possible output and the loss is the distance
    (``C = d``); ``epsilon`` is per km and ``eta`` the neighbour radius in km.  Locations are
    numbered in label order, so the order of the rows does not change a release.
    """
    frame = read_table(path, ["location"], nonblank=["location"], field="locations")
    stem, path = source_stem(path, "locations"), source_name(path, "locations")
    labels = frame["location"].str.strip()
    repeated = np.flatnonzero(labels.duplicated().to_numpy())
    if repeated.size:
        row = int(repeated[0])
        raise DataValidationError(str(path), f"column 'location': {labels.iloc[row]!r} repeats on data row {row + 1}")
    columns = [c for c in frame.columns if c not in ("location", "prior")]
    if not columns:
        raise DataValidationError(str(path), "no coordinate columns besides location (and prior)")
    order = np.argsort(labels.to_numpy(dtype=str), kind="stable")  # locations by label, not by row position
    coords = np.column_stack([_finite_column(frame, c, path) for c in columns])[order]
    labels = labels.iloc[order].reset_index(drop=True)
    if sorted(columns) == ["lat", "lon"]:
        lat, lon = coords[:, columns.index("lat")], coords[:, columns.index("lon")]
        if np.abs(lat).max() > 90 or np.abs(lon).max() > 180:
            raise DataValidationError(str(path), "lat must be in [-90, 90] and lon in [-180, 180] degrees")
        d = haversine_km(lat[:, None], lon[:, None], lat[None, :], lon[None, :])
        np.fill_diagonal(d, 0.0)
        d = (d + d.T) / 2
        metric = "great-circle km (lat, lon)"
    else:
        d = euclidean_distances(coords)
        metric = f"Euclidean km ({', '.join(columns)})"
    prior = np.full(len(labels), 1.0 / len(labels))
    if "prior" in frame.columns:
        weights = _finite_column(frame, "prior", path)[order]
        if (weights < 0).any() or weights.sum() <= 0:
            raise DataValidationError(str(path), "column 'prior' needs weights >= 0 with a positive sum")
        prior = weights / weights.sum()
    info = {
        "outputs": np.arange(len(labels)),
        "labels": labels.tolist(),
        "metric": metric,
        "prior": "declared (column prior)" if "prior" in frame.columns else "uniform",
    }
    return MDPInstance(d, d, prior, epsilon, eta, d_ro=d, features=coords, name=name or stem, info=info)


def from_frame(locations, epsilon: float, eta: float, name: str | None = None) -> MDPInstance:
    """:func:`locations_from_csv` for a table in memory: ``locations`` may be a pandas DataFrame
    (or a ``.csv``/``.parquet`` path), read by its column labels (a ``location`` index counts);
    :func:`records_from_csv` takes a DataFrame of ``user,record`` the same way.

    Parameters
    ----------
    locations, epsilon, eta, name
        As in :func:`locations_from_csv`.
    """
    return locations_from_csv(locations, epsilon, eta, name=name)


def _finite_column(frame: pd.DataFrame, column: str, path) -> np.ndarray:
    """``frame[column]`` as finite floats; a blank, non-numeric or infinite entry is refused with its row."""
    text = frame[column].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise DataValidationError(
            str(path), f"column {column!r} needs finite numbers; data row {bad[0] + 1} has {text.iloc[bad[0]]!r}"
        )
    return values


#: The record index :func:`records_from_csv` gives a location outside the public domain.
OUTSIDE = -1
_INTEGER = r"^[+-]?\d+$"


def records_from_csv(path, labels, *, cells: bool = False) -> tuple[list[str], np.ndarray]:
    """Each user's secret location: a CSV ``user,record``, one row per user.

    Parameters
    ----------
    path
        The records file.  ``record`` is a label of the public domain (a location of the points
        file), or with ``cells=True`` a cell index ``0..N-1`` of a generated grid (row-major).
    labels
        The public domain's location labels, in index order.
    cells
        Whether records are integer cell indices (a generated grid) rather than labels.

    Returns
    -------
    The users in label order (the rows' order in the file does not matter) and their record
    indices.  A record naming no location of the domain (an unknown label, a cell index outside
    ``0..N-1``) gets :data:`OUTSIDE`: the release
    perturbs it as if it were at the declared fallback location (a stated rule, never a refusal:
    whether a release happens must not depend on one person's record).

    Only malformed input is refused, naming the file and the row: a missing column, a blank
    entry, a user on two rows (``user`` is the key: a user with two records would compose), and
    with ``cells=True`` a record that is not an integer.
    """
    index = {str(label): i for i, label in enumerate(labels)}
    frame = read_table(path, ["user", "record"], nonblank=["user", "record"], field="records")
    path = source_name(path, "records")
    users, records = frame["user"].str.strip(), frame["record"].str.strip()
    repeated = np.flatnonzero(users.duplicated().to_numpy())
    if repeated.size:
        row = int(repeated[0])
        first = int(np.flatnonzero((users == users.iloc[row]).to_numpy())[0])
        raise DataValidationError(
            str(path),
            f"user {users.iloc[row]!r} is on data rows {first + 1} and {row + 1}; give one record per user",
        )
    if cells:
        records = _cell_labels(records, path)
    order = np.argsort(users.to_numpy(dtype=str), kind="stable")
    return users.iloc[order].tolist(), records.iloc[order].map(index).fillna(OUTSIDE).to_numpy(dtype=np.intp)


def _cell_labels(records: pd.Series, path) -> pd.Series:
    """Cell indices as the labels ``"0".."N-1"`` (``"07"`` is cell 7); a non-integer is refused with its row."""
    bad = np.flatnonzero(~records.str.fullmatch(_INTEGER).to_numpy())
    if bad.size:
        row = int(bad[0])
        raise DataValidationError(
            str(path),
            f"column 'record': data row {row + 1} is not an integer cell index of the grid (row x cols + col)",
        )
    return records.map(lambda text: str(int(text)))


# ---------------------------------------------------------------------- one tiny model per formulation
@register_example("mdp.full_lp")
def _example_full_lp():
    """A 3 x 4 grid of 1 km cells, 4 outputs, eps = 1/km, neighbours within 1.5 km (12 records)."""
    from dpmodels.metricdp.models import build_full_lp

    return build_full_lp(grid_maps(seed=0, rows=3, cols=4, K=4, epsilon=1.0, eta=1.5))
