"""Graphic matroids: the forests of a graph (spec A16).

Beyond the interface of :class:`.base.Matroid`: a union-find independence oracle and rank,
the weighted spanning-forest sampler by the sequential matrix-tree method (effective conductances
by star-mesh elimination in log space, accurate at any weight range), polytope membership over
vertex subsets, and Martin's compact extended formulation of the forest polytope for Pyomo.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dpmodels.core.errors import DataValidationError

from ..data import as_mask
from .base import ENUMERATION_MAX, Matroid

__all__ = ["GraphicMatroid"]


class GraphicMatroid(Matroid):
    """Edges of a graph on ``n_vertices``; independent sets are forests (extension, spec A16).

    Parameters
    ----------
    n_vertices : int
        The number of vertices.
    edges : sequence of tuple of int
        The edges ``(u, v)``: the ground set, in order.
    """

    kind = "graphic"

    def __init__(self, n_vertices: int, edges: Sequence[tuple[int, int]]):
        self.n_vertices = int(n_vertices)
        self.edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        self.n = len(self.edges)
        if self.n == 0:
            raise DataValidationError("edges", "need at least one edge")
        if self.edges.min() < 0 or self.edges.max() >= self.n_vertices:
            raise DataValidationError("edges", f"endpoints must be in 0..{self.n_vertices - 1}")
        if np.any(self.edges[:, 0] == self.edges[:, 1]):
            raise DataValidationError("edges", "self-loops are never independent; remove them")

    def _components(self, mask) -> tuple[int, bool]:
        parent = list(range(self.n_vertices))

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        acyclic, merges = True, 0
        for u, v in self.edges[mask]:
            ru, rv = find(int(u)), find(int(v))
            if ru == rv:
                acyclic = False
            else:
                parent[ru] = rv
                merges += 1
        return merges, acyclic

    def is_independent(self, S) -> bool:
        return self._components(as_mask(S, self.n))[1]

    def extensions(self, S) -> list[int]:
        """``Lambda(S)``: the edges outside the forest ``S`` whose endpoints lie in different trees of
        ``S``, from one connected-components labelling (``scipy.sparse.csgraph``) instead of a
        union-find per candidate edge (measured by
        ``dpmodels bench submodular --graphic V E``: 0.98 ms vs 74 s at |V| = 5,000, |E| = 25,000 and a
        forest of 2,499 edges).  Empty when ``S`` is not a forest."""
        mask = as_mask(S, self.n)
        count, label = self._forest_labels(mask)
        if mask.sum() != self.n_vertices - count:  # edges = vertices - trees holds exactly for forests
            return []
        u, v = self.edges[:, 0], self.edges[:, 1]
        return np.flatnonzero(~mask & (label[u] != label[v])).tolist()

    def _forest_labels(self, mask) -> tuple[int, np.ndarray]:
        chosen = self.edges[mask]
        graph = sp.coo_matrix(
            (np.ones(len(chosen)), (chosen[:, 0], chosen[:, 1])), shape=(self.n_vertices, self.n_vertices)
        )
        return connected_components(graph, directed=False)

    def rank(self, S=None) -> int:
        mask = np.ones(self.n, bool) if S is None else as_mask(S, self.n)
        return self._components(mask)[0]

    def sample_base(self, log_weights, rng):
        """Weighted spanning forest, ``Pr[B] ~ exp(sum_{e in B} log_weights_e)``, by the sequential
        matrix-tree method: take edge ``e`` with probability ``lambda_e R_eff(e)`` in the current
        (contracted, pruned) graph; bridges are taken with probability 1 exactly.

        ``R_eff`` comes from subtraction-free star-mesh (Kron) elimination in log space
        (:meth:`_log_effective_conductance`), which keeps full relative accuracy for *any* range of
        weights.  So one code path serves every dataset: there is no range-dependent fallback or
        refusal, whose choice would itself depend on the private scores (review F2).  Floating
        point: a forest whose probability is below about ``2^-53`` can get probability 0 (the
        private algorithms draw with :mod:`dpmodels.submodular.exact.bases` instead)."""
        lw = np.asarray(log_weights, dtype=np.float64)
        if lw.shape != (self.n,) or not np.all(np.isfinite(lw)):
            raise DataValidationError("log_weights", f"need {self.n} finite log-weights")
        label = np.arange(self.n_vertices)
        alive = np.ones(self.n, bool)
        chosen = np.zeros(self.n, bool)
        for e in range(self.n):
            u, v = label[self.edges[e]]
            alive[e] = False
            if u == v:
                continue
            if not self._connected_without(label, alive, u, v):
                p = 1.0  # a bridge is in every spanning forest
            else:
                with_e = alive | (np.arange(self.n) == e)
                p = min(1.0, math.exp(lw[e] - self._log_effective_conductance(label, with_e, lw, u, v)))
            if rng.random() < p:
                chosen[e] = True
                label[label == v] = u
        return chosen

    def _connected_without(self, label, alive, u, v) -> bool:
        """Are ``u`` and ``v`` joined by the alive edges (in the contracted graph)?"""
        parent = {}

        def find(a):
            parent.setdefault(a, a)
            while parent[a] != a:
                a = parent[a]
            return a

        for e in np.flatnonzero(alive):
            a, b = find(label[self.edges[e, 0]]), find(label[self.edges[e, 1]])
            if a != b:
                parent[a] = b
        return find(u) == find(v)

    def _log_effective_conductance(self, label, alive, lw, u, v) -> float:
        """``ln(1 / R_eff(u, v))`` with conductances ``exp(lw)`` on the alive (contracted) edges.

        Eliminating a vertex ``k`` (Schur complement of the Laplacian) replaces its star by the mesh
        ``c_ij += c_ik c_kj / c_k`` with ``c_k = sum_j c_kj``: only sums and products of positive
        numbers, done here with ``logaddexp``/``logsumexp``, so no cancellation and no overflow.
        After every vertex but ``u, v`` is gone, the single ``u``-``v`` conductance is ``1/R_eff``."""
        ids = np.flatnonzero(alive)
        ends = label[self.edges[ids]]
        keep = ends[:, 0] != ends[:, 1]
        a, b, w = ends[keep, 0], ends[keep, 1], lw[ids[keep]]
        C = np.full((self.n_vertices, self.n_vertices), -np.inf)
        np.logaddexp.at(C, (a, b), w)  # parallel edges: conductances add
        np.logaddexp.at(C, (b, a), w)
        for k in np.unique(np.concatenate([a, b])):
            if k in (u, v):
                continue
            nbrs = np.flatnonzero(np.isfinite(C[k]))
            if nbrs.size == 0:
                continue
            row = C[k, nbrs]
            top = row.max()
            mesh = row[:, None] + row[None, :] - (top + math.log(np.exp(row - top).sum()))  # - ln c_k
            block = np.ix_(nbrs, nbrs)
            C[block] = np.logaddexp(C[block], mesh)
            C[k, :] = C[:, k] = -np.inf
            C[nbrs, nbrs] = -np.inf  # self-loops carry no current
        return float(C[u, v])

    def _rank_inequalities_hold(self, x, tol):
        if self.n_vertices > ENUMERATION_MAX:
            raise DataValidationError("matroid", f"contains() enumerates vertex subsets; |V| > {ENUMERATION_MAX}")
        for size in range(2, self.n_vertices + 1):
            for combo in itertools.combinations(range(self.n_vertices), size):
                inside = np.isin(self.edges, combo).all(axis=1)
                sub = inside.copy()
                if x[sub].sum() > self.rank(sub) + tol:
                    return False
        return True

    def add_polytope(self, block, y, base=False):
        """Martin's extended formulation: ``y_e = z_{k,i->j} + z_{k,j->i}``, out-degree <= 1 off the
        root, 0 at the root, for every root ``k``; then ``sum y <= |V|-1`` (or ``= r`` for bases)."""
        V, edges = range(self.n_vertices), self.edges
        arcs = [(e, int(a), int(b)) for e, (i, j) in enumerate(edges) for a, b in ((i, j), (j, i))]
        block.z = pyo.Var(V, range(len(arcs)), bounds=(0, None))
        block.split = pyo.Constraint(V, range(self.n), rule=lambda b, k, e: y[e] == b.z[k, 2 * e] + b.z[k, 2 * e + 1])
        out = {i: [a for a, (_, tail, _) in enumerate(arcs) if tail == i] for i in V}

        def degree(b, k, i):
            if not out[i]:
                return pyo.Constraint.Skip
            return sum(b.z[k, a] for a in out[i]) <= (0 if i == k else 1)

        block.degree = pyo.Constraint(V, V, rule=degree)
        total = sum(y[e] for e in range(self.n))
        block.forest_size = pyo.Constraint(expr=total == self.r if base else total <= self.n_vertices - 1)
