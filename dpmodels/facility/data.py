"""Facility-location data: the UFL instance ``(V, d, f, N)`` and λ-HST instances (spec 1.1, 2.1).

* :class:`UFLInstance` - a finite metric (a distance matrix, or points whose Euclidean metric is
  computed on demand), a facility cost ``f`` (uniform, or one per site for the two-point lower-bound
  instance), and the private client counts ``N`` (non-negative integers).  The metric is checked:
  square, finite, symmetric, zero diagonal, non-negative, triangle inequality within tolerance.
* :class:`HST` - a λ-HST (Definition 3) as a parent array with levels: every root-to-leaf path has
  exactly L edges, the edge above a level-ℓ node weighs ``λ^ℓ``, and the leaves are the locations.
* :class:`HSTInstance` - an HST with ``f`` and the leaf counts ``N``.

The checks of their fields, shared by the mechanism and the embedding, are in :mod:`.checks`, so
every entry point rejects bad input with an error naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dpmodels.core.errors import DataValidationError

from .checks import METRIC_TOL, check_cost, check_counts, check_metric

__all__ = [
    "UFLInstance",
    "HST",
    "HSTInstance",
    "euclidean",
    "DENSE_LIMIT",
]

#: Above this many locations a point instance never materialises its distance matrix implicitly.
DENSE_LIMIT = 20_000


def euclidean(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Pairwise Euclidean distances between rows (exactly symmetric with zero diagonal for ``b=None``).

    Parameters
    ----------
    a : numpy.ndarray
        ``n x k`` points.
    b : numpy.ndarray, optional
        ``m x k`` points (default ``a``).

    Returns
    -------
    numpy.ndarray
        The ``n x m`` distances.
    """
    from scipy.spatial.distance import cdist

    a = np.asarray(a, dtype=np.float64)
    out = cdist(a, a if b is None else np.asarray(b, dtype=np.float64))
    if b is None:
        out = (out + out.T) / 2
        np.fill_diagonal(out, 0.0)
    return out


@dataclass(frozen=True, eq=False)
class UFLInstance:
    """A uniform facility location instance ``(V, d, f, N)`` (spec 1.1), validated on construction.

    Give either ``d`` (an n x n metric) or ``points`` (n x k coordinates, Euclidean metric).  ``f`` is
    the facility cost (a scalar; a per-site vector is accepted for the MIP, e.g. the two-point
    instance, but the DP mechanism needs uniform ``f``).  ``N`` are the private client counts.

    Parameters
    ----------
    d : numpy.ndarray, optional
        An ``n x n`` metric (give ``d`` or ``points``).
    f : float or numpy.ndarray, default 1.0
        The facility cost (uniform for the mechanism; a per-site vector only for the MIP).
    N : numpy.ndarray, optional
        The client count of every location (private); default one client each.
    points : numpy.ndarray, optional
        ``n x k`` coordinates: the metric is Euclidean.
    name : str, default "ufl"
        A label for reports.
    labels : tuple, optional
        One name per location.
    info : dict, optional
        Free-form public metadata.
    check_triangle : bool, default True
        Check the triangle inequality of ``d`` (``O(n^3)``).
    """

    d: np.ndarray | None = None
    f: float | np.ndarray = 1.0
    N: np.ndarray | None = None
    points: np.ndarray | None = None
    name: str = "ufl"
    labels: tuple | None = None
    info: dict = field(default_factory=dict)
    #: ``False`` skips only the O(n^3) triangle check (for metrics that are one by construction, e.g. shortest paths)
    check_triangle: bool = True

    def __post_init__(self):
        if (self.d is None) == (self.points is None):
            raise DataValidationError("d", "give exactly one of d (a distance matrix) or points (coordinates)")
        if self.points is not None:
            pts = np.asarray(self.points, dtype=np.float64)
            if pts.ndim == 1:
                pts = pts[:, None]
            if pts.ndim != 2 or pts.shape[0] < 1 or not np.all(np.isfinite(pts)):
                raise DataValidationError("points", f"must be a finite n x k array, got shape {pts.shape}")
            object.__setattr__(self, "points", pts)
            n = pts.shape[0]
        else:
            d = np.array(self.d, dtype=np.float64)
            if d.ndim != 2 or d.shape[0] != d.shape[1]:
                raise DataValidationError("d", f"must be a square matrix, got shape {d.shape}")
            check_metric(d, METRIC_TOL, self.check_triangle)
            object.__setattr__(self, "d", d)
            n = d.shape[0]
        if self.N is None:
            raise DataValidationError("N", "client counts are required")
        object.__setattr__(self, "N", check_counts(self.N, n))
        object.__setattr__(self, "f", check_cost(self.f, n))
        if self.labels is not None and len(self.labels) != n:
            raise DataValidationError("labels", f"must name the {n} locations, got {len(self.labels)}")

    @property
    def n(self) -> int:
        return int(self.N.shape[0])

    @property
    def uniform(self) -> bool:
        return np.ndim(self.f) == 0

    @property
    def f_vector(self) -> np.ndarray:
        return np.full(self.n, self.f) if self.uniform else np.asarray(self.f)

    @cached_property
    def distances(self) -> np.ndarray:
        """The n x n distance matrix (computed from the points on first use)."""
        if self.d is not None:
            return self.d
        if self.n > DENSE_LIMIT:
            raise DataValidationError(
                "points", f"{self.n} locations: the dense distance matrix is not built above {DENSE_LIMIT}"
            )
        return euclidean(self.points)

    def with_counts(self, N) -> UFLInstance:
        """The same public metric and cost with other (private) counts."""
        return UFLInstance(
            d=self.d, f=self.f, N=N, points=self.points, name=self.name, labels=self.labels, check_triangle=False
        )

    def distance_to(self, sites) -> np.ndarray:
        """``d(v, S)`` for every location v (``inf`` when S is empty)."""
        sites = np.asarray(sorted(set(int(s) for s in sites)), dtype=np.int64)
        if sites.size == 0:
            return np.full(self.n, np.inf)
        if self.d is not None:
            return self.d[:, sites].min(axis=1)
        from scipy.spatial import cKDTree

        return cKDTree(self.points[sites]).query(self.points)[0]

    def cost(self, sites) -> float:
        """``cost_d(S; N) = sum_{s in S} f_s + sum_v N_v d(v, S)`` (Eq. 1), with ``0 * inf = 0``."""
        sites = sorted(set(int(s) for s in sites))
        facility = float(self.f_vector[sites].sum()) if sites else 0.0
        if not np.any(self.N > 0):
            return facility
        dist = self.distance_to(sites)
        served = self.N > 0
        return facility + float((self.N[served] * dist[served]).sum())

    def merged(self) -> UFLInstance:
        """Locations at distance 0 merged into one (counts summed): the FRT preprocessing (spec 2.2 step 1)."""
        d = self.distances
        zero = d <= 0
        first = zero.argmax(axis=0)  # the smallest index at distance 0 (a metric makes this an equivalence)
        keep = np.flatnonzero(first == np.arange(self.n))
        if keep.size == self.n:
            return self
        remap = np.searchsorted(keep, first)
        counts = np.bincount(remap, weights=self.N, minlength=keep.size).astype(np.int64)
        f = self.f if self.uniform else self.f_vector[keep]
        pts = None if self.points is None else self.points[keep]
        dd = None if pts is not None else d[np.ix_(keep, keep)]
        return UFLInstance(d=dd, f=f, N=counts, points=pts, name=self.name + " (merged)", check_triangle=False)


# ---------------------------------------------------------------------------------------------- HST


@dataclass(frozen=True, eq=False)
class HST:
    """A λ-HST (Definition 3): ``parent[u]`` (-1 at the root), ``level[u]`` (root L, leaves 0), λ, and
    ``leaf_node[k]``, the leaf of location k.  Node ids are arbitrary integers ``0..m-1``; unary
    chains are allowed.  Validated: one root, ``level[child] = level[parent] - 1``, the leaves are
    exactly the level-0 nodes and correspond one-to-one to the locations.

    Parameters
    ----------
    parent : numpy.ndarray
        The parent of every node, -1 at the root.
    level : numpy.ndarray
        The level of every node (leaves 0, root L).
    lam : float
        λ in (1, 2): an edge from level ℓ+1 to ℓ has length λ^ℓ.
    leaf_node : numpy.ndarray, optional
        The leaf of every location (default: the level-0 nodes in id order).
    """

    parent: np.ndarray
    level: np.ndarray
    lam: float
    leaf_node: np.ndarray | None = None

    def __post_init__(self):
        if isinstance(self.lam, bool) or not isinstance(self.lam, int | float | np.integer | np.floating):
            raise DataValidationError("lam", f"must be a number > 1, got {self.lam!r}")
        lam = float(self.lam)
        if not (math.isfinite(lam) and lam > 1):
            raise DataValidationError("lam", f"an HST needs λ > 1 (Definition 3), got {lam}")
        object.__setattr__(self, "lam", lam)
        parent = np.asarray(self.parent)
        level = np.asarray(self.level)
        if parent.ndim != 1 or level.shape != parent.shape or parent.size < 2:
            raise DataValidationError("parent", "parent and level must be 1-d arrays of the same length >= 2")
        if parent.dtype.kind not in "iu" or level.dtype.kind not in "iu":
            raise DataValidationError("parent", "parent and level must be integer arrays")
        parent = parent.astype(np.int64)
        level = level.astype(np.int64)
        m = parent.size
        roots = np.flatnonzero(parent == -1)
        if roots.size != 1:
            raise DataValidationError("parent", f"an HST has exactly one root (parent -1), found {roots.size}")
        if np.any((parent < -1) | (parent >= m)):
            raise DataValidationError("parent", "parent ids must be -1 or node ids 0..m-1")
        if np.any(level < 0):
            raise DataValidationError("level", "levels must be >= 0")
        child = np.flatnonzero(parent >= 0)
        bad = child[level[parent[child]] != level[child] + 1]
        if bad.size:
            raise DataValidationError(
                "level",
                f"node {int(bad[0])} has level {int(level[bad[0]])} but its parent has level "
                f"{int(level[parent[bad[0]]])}; Definition 3 needs level(parent) = level(child) + 1",
            )
        if level[roots[0]] < 1:
            raise DataValidationError("level", "the root must have level L >= 1")
        has_child = np.zeros(m, dtype=bool)
        has_child[parent[child]] = True
        if np.any(~has_child & (level > 0)):
            u = int(np.flatnonzero(~has_child & (level > 0))[0])
            raise DataValidationError(
                "parent", f"node {u} at level {int(level[u])} has no child: every root-to-leaf path must have L edges"
            )
        leaves = np.flatnonzero(level == 0)
        leaf_node = leaves if self.leaf_node is None else np.asarray(self.leaf_node)
        if leaf_node.dtype.kind not in "iu" or leaf_node.shape != leaves.shape:
            raise DataValidationError("leaf_node", f"must list the {leaves.size} leaves, one per location")
        if not np.array_equal(np.sort(leaf_node), leaves):
            raise DataValidationError("leaf_node", "must be a one-to-one map from locations to the level-0 nodes")
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "leaf_node", leaf_node.astype(np.int64))
        for arr in (self.parent, self.level, self.leaf_node):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def n(self) -> int:
        """Number of locations (leaves)."""
        return int(self.leaf_node.size)

    @property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent == -1)[0])

    @property
    def L(self) -> int:
        return int(self.level[self.root])

    @cached_property
    def location_of(self) -> np.ndarray:
        """Location index of every node (-1 for internal nodes)."""
        out = np.full(self.n_nodes, -1, dtype=np.int64)
        out[self.leaf_node] = np.arange(self.n)
        return out

    @cached_property
    def by_level(self) -> list[np.ndarray]:
        """Node ids of each level 0..L, ascending ids."""
        order = np.argsort(self.level, kind="stable")
        bounds = np.searchsorted(self.level[order], np.arange(self.L + 2))
        return [order[bounds[i] : bounds[i + 1]] for i in range(self.L + 1)]

    @cached_property
    def ancestors(self) -> np.ndarray:
        """``(L+1) x n`` array: row ℓ is the level-ℓ ancestor of each location's leaf (row 0 = the leaf)."""
        out = np.empty((self.L + 1, self.n), dtype=np.int64)
        out[0] = self.leaf_node
        for lvl in range(1, self.L + 1):
            out[lvl] = self.parent[out[lvl - 1]]
        return out

    def edge_weight(self, u) -> np.ndarray:
        """Weight ``λ^ℓ(u)`` of the edge above u (the root has none: 0)."""
        u = np.asarray(u)
        return np.where(self.parent[u] >= 0, self.lam ** self.level[u].astype(float), 0.0)

    def g(self, j) -> np.ndarray:
        """``g_j = (λ^j - 1)/(λ - 1)``: distance from a level-j node to any leaf below it."""
        return (self.lam ** np.asarray(j, dtype=float) - 1.0) / (self.lam - 1.0)


@dataclass(frozen=True, eq=False)
class HSTInstance:
    """UFL on an HST metric: the tree, the uniform cost ``f`` and the leaf counts ``N`` (location order).

    Parameters
    ----------
    tree : HST
        The tree; its leaves are the locations.
    f : float
        The uniform facility cost.
    N : numpy.ndarray
        The client count of every location (private), in location order.
    name : str, default "hst"
        A label for reports.
    info : dict, optional
        Free-form public metadata.
    """

    tree: HST
    f: float
    N: np.ndarray
    name: str = "hst"
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.tree, HST):
            raise DataValidationError("tree", f"must be an HST, got {type(self.tree).__name__}")
        f = check_cost(self.f)
        if np.ndim(f) != 0:
            raise DataValidationError("f", "the HST mechanism needs one uniform facility cost")
        object.__setattr__(self, "f", float(f))
        object.__setattr__(self, "N", check_counts(self.N, self.tree.n))

    @property
    def n(self) -> int:
        return self.tree.n

    def with_counts(self, N) -> HSTInstance:
        return HSTInstance(self.tree, self.f, N, self.name, dict(self.info))
