"""Independent oracles for PGSR tests: brute-force enumeration and min-plus convolution, and the
small random instances they are run on.

Models 1, 2 and 3 share one feasible set in n-space (spec 3.4, 3.7): integer, non-negative,
consistent counts whose root sums to G.  Enumerating every way to place G groups over the
(leaf, size) cells and aggregating gives that set exactly, so one enumerator is the oracle
of all three objectives.  Feasible only for tiny instances (C(G + kN - 1, kN - 1) points).
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr.data import chain_cumulative, cumulative


def compositions(total: int, parts: int) -> np.ndarray:
    """All non-negative integer vectors of length ``parts`` summing to ``total`` (stars and bars)."""
    rows = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1,) + bars + (total + parts - 1,)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(parts)])
    return np.array(rows, dtype=np.int64).reshape(-1, parts)


def feasible_counts(hierarchy, n_sizes: int, G: int, lo=None, hi=None) -> np.ndarray:
    """Every PGSR-feasible release, shape (M, R, N); optional per-cell bounds filter it."""
    leaves = compositions(G, len(hierarchy.leaves) * n_sizes).reshape(-1, len(hierarchy.leaves), n_sizes)
    full = np.moveaxis(hierarchy.aggregate(np.moveaxis(leaves, 0, 1)), 1, 0)
    if lo is not None:
        keep = np.all(full >= lo, axis=(1, 2)) & np.all(full <= hi, axis=(1, 2))
        full = full[keep]
    return full


def brute_force(
    hierarchy, values: np.ndarray, G: int, model: str, lo=None, hi=None, weights=None
) -> tuple[float, np.ndarray]:
    """Optimum and the list of optimal releases of Model 1, 2 or 3 by enumeration (``weights``: the
    weighted objective ``sum w (x - values)^2``, in the values' layout)."""
    points = feasible_counts(hierarchy, values.shape[1], G, lo, hi)
    if model == "hierarchical":
        transformed = points
    elif model == "cumulative":
        transformed = cumulative(points)
    elif model == "chain":
        transformed = np.stack([chain_cumulative(hierarchy, p) for p in points])
    else:
        raise ValueError(model)
    w = np.ones(values.shape) if weights is None else np.asarray(weights, dtype=np.float64)
    obj = (w[None] * (transformed - values[None]) ** 2).sum(axis=(1, 2))
    best = obj.min()
    return float(best), points[np.isclose(obj, best)]


def min_plus(tables_lo, tables) -> tuple[int, np.ndarray]:
    """Brute-force min-plus convolution of explicit tables: phi(v) = min sum tau_c(x_c)."""
    lo = int(sum(tables_lo))
    result = np.array([0.0])
    for t in tables:
        t = np.asarray(t, dtype=np.float64)
        out = np.full(len(result) + len(t) - 1, np.inf)
        for i, a in enumerate(result):
            out[i : i + len(t)] = np.minimum(out[i : i + len(t)], a + t)
        result = out
    return lo, result


@st.composite
def small_instances(draw):
    """A random tree (<= 6 leaves), N <= 3, G <= 4, integer noise in [-2, G + 2]."""
    seed = draw(st.integers(0, 10**6))
    depth = draw(st.integers(1, 3))
    data = random_tree(
        seed=seed,
        depth=depth,
        branching=(1, 2 if depth == 3 else 3),
        N=draw(st.integers(1, 3)),
        G=draw(st.integers(0, 4)),
    )
    noise = draw(st.lists(st.integers(-2, data.G + 2), min_size=data.counts.size, max_size=data.counts.size))
    return data, np.array(noise, dtype=float).reshape(data.counts.shape)


def consistent(h, counts, G) -> bool:
    """Non-negative, every parent the sum of its children, the root summing to G."""
    return (counts >= 0).all() and not h.consistency_residual(counts).any() and counts[0].sum() == G
