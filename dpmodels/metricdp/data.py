"""Metric-DP data: the perturbation-matrix instance, its mDP graph, partitions (spec 1-4).

An :class:`MDPInstance` holds N secret records, K outputs, the record metric ``d`` (N x N),
the record-output distances (N x K, for the exponential mechanism and Euclidean costs),
the utility-loss matrix ``C`` (N x K, >= 0), the prior ``p`` and the privacy parameters
``epsilon`` (per distance unit) and ``eta`` (the neighbour threshold).  Records ``i != j``
are neighbours iff ``d_ij <= eta``; each neighbouring pair and output gives the mDP row
``z_ik <= exp(eps d_ij) z_jk``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

__all__ = ["MDPInstance", "MDPGraph", "Partition", "euclidean_distances", "destination_costs", "haversine_km"]

#: Above this eps * eta the mDP coefficients can exceed e^18 ~ 7e7, where HiGHS's answers were measured wrong:
#: its simplex "optimum" 1.6e-5 above a certified mechanism's loss at e^20 (paper grid, eps = 10/km), 8% above
#: at e^20.7 (two records, presolve on), "unbounded" for a bounded LP.  Certified bounds: ``mdp_ipm``.
WARN_EXPONENT = 18.0
#: exp overflows float64 beyond ~709.
MAX_EXPONENT = 700.0


def euclidean_distances(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Pairwise Euclidean distances between the rows of ``a`` and of ``b`` (default ``a``).

    Parameters
    ----------
    a : numpy.ndarray
        Points, one per row.
    b : numpy.ndarray, optional
        Other points (default: ``a``).
    """
    a = np.asarray(a, dtype=np.float64)
    b = a if b is None else np.asarray(b, dtype=np.float64)
    sq = (a**2).sum(axis=1)[:, None] + (b**2).sum(axis=1)[None, :] - 2 * a @ b.T
    out = np.sqrt(np.maximum(sq, 0.0))
    if b is a:
        np.fill_diagonal(out, 0.0)
        out = (out + out.T) / 2  # exact symmetry despite rounding
    return out


def haversine_km(lat1, lon1, lat2, lon2, radius: float = 6371.0) -> np.ndarray:
    """Great-circle distance in km (broadcasting), the paper's road-network metric."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dphi, dlmb = p2 - p1, np.radians(lon2) - np.radians(lon1)
    h = np.sin(dphi / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlmb / 2) ** 2
    return 2 * radius * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def destination_costs(path_rec_dest: np.ndarray, path_out_dest: np.ndarray, dest_prior=None) -> np.ndarray:
    """Eq. 67: ``c_ik = sum_dest p_dest |pd(r_i, dest) - pd(o_k, dest)|`` (path distances)."""
    pr = np.asarray(path_rec_dest, dtype=np.float64)  # N x T
    po = np.asarray(path_out_dest, dtype=np.float64)  # K x T
    if pr.shape[1] != po.shape[1]:
        raise DataValidationError("destinations", "record and output path distances need the same destinations")
    w = np.full(pr.shape[1], 1.0 / pr.shape[1]) if dest_prior is None else np.asarray(dest_prior, dtype=np.float64)
    return np.einsum("t,tik->ik", w, np.abs(pr.T[:, :, None] - po.T[:, None, :]))


@dataclass(frozen=True, eq=False)
class MDPInstance:
    """A perturbation-matrix optimisation instance (spec 2.2), validated on construction.

    Parameters
    ----------
    d_rr : numpy.ndarray
        Distances between the N records' locations (km): square, symmetric, zero diagonal.
    cost : numpy.ndarray
        The utility loss ``c_ik`` of reporting record i as output k (N x K, finite, >= 0).
    prior : numpy.ndarray
        The public prior over the records (N, summing to 1).
    epsilon : float
        The privacy level per km.
    eta : float
        The neighbour radius (km): records within ``eta`` get mDP rows.
    d_ro : numpy.ndarray, optional
        Record-output distances (N x K), for the exponential mechanism.
    features : numpy.ndarray, optional
        Raw feature vectors of the records (the ``k-m-rec`` partitioner).
    name : str
        A label for tables and ledgers.
    info : dict
        Other public facts (metric, prior's description, output labels...).
    """

    d_rr: np.ndarray
    cost: np.ndarray
    prior: np.ndarray
    epsilon: float
    eta: float
    d_ro: np.ndarray | None = None
    features: np.ndarray | None = None
    name: str = "mdp"
    info: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        d = np.array(self.d_rr, dtype=np.float64)
        n = d.shape[0]
        if d.ndim != 2 or d.shape != (n, n) or n < 1:
            raise DataValidationError("d_rr", f"must be a square N x N matrix, got shape {d.shape}")
        if not np.isfinite(d).all() or (d < 0).any():
            raise DataValidationError("d_rr", "distances must be finite and non-negative")
        if np.abs(np.diag(d)).max() > 0:
            raise DataValidationError("d_rr", "the diagonal must be 0 (d(r, r) = 0)")
        asym = np.abs(d - d.T).max()
        if asym > 1e-9 * max(1.0, d.max()):
            i, j = np.unravel_index(np.argmax(np.abs(d - d.T)), d.shape)
            raise DataValidationError("d_rr", f"is not symmetric: d[{i},{j}] = {d[i, j]} but d[{j},{i}] = {d[j, i]}")
        c = np.array(self.cost, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] != n or c.shape[1] < 1:
            raise DataValidationError("cost", f"must be N x K with N = {n}, got shape {c.shape}")
        if not np.isfinite(c).all() or (c < 0).any():
            raise DataValidationError("cost", "utility losses must be finite and >= 0 (Benders relies on it, spec A14)")
        p = np.array(self.prior, dtype=np.float64)
        if p.shape != (n,) or (p < 0).any() or not np.isfinite(p).all():
            raise DataValidationError("prior", f"must be N = {n} non-negative numbers")
        if abs(p.sum() - 1) > 1e-9:
            raise DataValidationError("prior", f"must sum to 1, sums to {p.sum()!r}")
        self._check_privacy()
        if self.d_ro is not None:
            dro = np.array(self.d_ro, dtype=np.float64)
            if dro.shape != c.shape or (dro < 0).any() or not np.isfinite(dro).all():
                raise DataValidationError("d_ro", f"must be finite, non-negative and N x K = {c.shape}")
            object.__setattr__(self, "d_ro", dro)
        for name, arr in (("d_rr", (d + d.T) / 2), ("cost", c), ("prior", p)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def _check_privacy(self) -> None:
        for name in ("epsilon", "eta"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                raise PrivacyParameterError(name, f"must be a finite number > 0, got {v!r}")
        exponent = self.epsilon * self.eta
        if exponent > MAX_EXPONENT:
            raise PrivacyParameterError(
                "epsilon", f"epsilon * eta = {exponent:g}: exp(eps d) overflows double precision (limit {MAX_EXPONENT})"
            )
        if exponent > WARN_EXPONENT:
            warnings.warn(
                f"epsilon * eta = {exponent:g}: mDP coefficients up to exp({exponent:g}) = {math.exp(exponent):.3g} "
                "make the LPs badly scaled: HiGHS's 'optimal' answers were measured wrong at this scale; "
                "mdp_ipm reports certified bounds (and mdp_benders's bounds are certified too)",
                RuntimeWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ facts
    @property
    def N(self) -> int:
        return self.d_rr.shape[0]

    @property
    def K(self) -> int:
        return self.cost.shape[1]

    @cached_property
    def weighted_cost(self) -> np.ndarray:
        """``c_hat_ik = p_i c_ik``: the objective coefficients."""
        return self.prior[:, None] * self.cost

    @cached_property
    def graph(self) -> MDPGraph:
        return MDPGraph.build(self.d_rr, self.eta, self.epsilon)

    def with_privacy(self, epsilon=None, eta=None) -> MDPInstance:
        """The same data with another epsilon or eta."""
        return MDPInstance(
            self.d_rr,
            self.cost,
            self.prior,
            self.epsilon if epsilon is None else epsilon,
            self.eta if eta is None else eta,
            self.d_ro,
            self.features,
            self.name,
            dict(self.info),
        )


@dataclass(frozen=True, eq=False)
class MDPGraph:
    """The mDP graph: ordered neighbouring pairs (both orientations) with distance and coefficient.

    Parameters
    ----------
    src, dst : numpy.ndarray
        The pairs' records, one entry per ordered pair.
    dist : numpy.ndarray
        Their distances ``d_ij`` (km).
    coef : numpy.ndarray
        ``exp(eps d_ij)``.
    n : int
        The number of records.
    """

    src: np.ndarray
    dst: np.ndarray
    dist: np.ndarray
    coef: np.ndarray  # exp(eps * dist)
    n: int

    @classmethod
    def build(cls, d: np.ndarray, eta: float, epsilon: float) -> MDPGraph:
        mask = d <= eta
        np.fill_diagonal(mask, False)
        src, dst = np.nonzero(mask)
        dist = d[src, dst]
        return cls(src, dst, dist, np.exp(epsilon * dist), d.shape[0])

    @property
    def n_pairs(self) -> int:
        """Ordered pairs |E| (twice the undirected edges)."""
        return len(self.src)

    def adjacency(self) -> sp.csr_matrix:
        """Weighted adjacency (edge weight = distance)."""
        return sp.csr_matrix((self.dist, (self.src, self.dst)), shape=(self.n, self.n))

    @cached_property
    def components(self) -> np.ndarray:
        """Connected-component label of every record (Property 3.1)."""
        return connected_components(self.adjacency(), directed=False)[1]

    def shortest_paths(self, sources=None) -> np.ndarray:
        """Shortest-path distances ``D`` along mDP edges (``inf`` across components)."""
        return dijkstra(self.adjacency(), directed=False, indices=sources)


@dataclass(frozen=True, eq=False)
class Partition:
    """Blocks of a record partition with their boundary and internal records (Def. 3.2).

    Parameters
    ----------
    labels : numpy.ndarray
        Each record's block (``0..M-1``).
    boundary : tuple of numpy.ndarray
        Per block, its records with a neighbour in another block (``Y_l``).
    internal : tuple of numpy.ndarray
        Per block, its other records (``X_l``).
    """

    labels: np.ndarray
    boundary: tuple[np.ndarray, ...]
    internal: tuple[np.ndarray, ...]

    @classmethod
    def from_labels(cls, labels, graph: MDPGraph) -> Partition:
        """Relabel to 0..M-1 (empty labels dropped) and split each block into Y_l and X_l."""
        raw = np.asarray(labels)
        if raw.shape != (graph.n,):
            raise DataValidationError("labels", f"need one label per record ({graph.n}), got shape {raw.shape}")
        _, lab = np.unique(raw, return_inverse=True)
        cross = lab[graph.src] != lab[graph.dst]
        is_boundary = np.zeros(graph.n, dtype=bool)
        is_boundary[graph.src[cross]] = True
        blocks = range(lab.max() + 1)
        boundary = tuple(np.flatnonzero((lab == b) & is_boundary) for b in blocks)
        internal = tuple(np.flatnonzero((lab == b) & ~is_boundary) for b in blocks)
        return cls(lab, boundary, internal)

    @property
    def M(self) -> int:
        return len(self.boundary)

    @cached_property
    def all_boundary(self) -> np.ndarray:
        return np.sort(np.concatenate(self.boundary)) if self.boundary else np.empty(0, np.int64)

    def stats(self, graph: MDPGraph) -> dict:
        """Subproblem sizes |X_l| and MP component sizes (Tables 1-2 of the paper, spec 4.4)."""
        sizes = np.array([len(x) for x in self.internal])
        nonempty = sizes[sizes > 0]
        cross = self.labels[graph.src] != self.labels[graph.dst]
        adj = sp.csr_matrix((np.ones(cross.sum()), (graph.src[cross], graph.dst[cross])), shape=(graph.n, graph.n))
        _, comp = connected_components(adj, directed=False)
        counts = np.bincount(comp)
        mp = counts[counts > 1]
        return {
            "blocks": self.M,
            "boundary records": int(len(self.all_boundary)),
            "cross pairs": int(cross.sum() // 2),
            "subproblem size avg": float(nonempty.mean()) if len(nonempty) else 0.0,
            "subproblem size max": int(sizes.max()) if len(sizes) else 0,
            "MP component size avg": float(mp.mean()) if len(mp) else 0.0,
            "MP component size max": int(mp.max()) if len(mp) else 0,
        }
