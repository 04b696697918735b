"""Laminar matroids: a laminar family of sets with capacities (spec 1.4, 6.1).

Independence and the polytope are the family's rows (a totally unimodular system with
``x <= 1``).  The product-weight base sampler decides elements in turn with their exact
conditional probabilities, computed over the laminar tree as generating polynomials in the set
size, truncated at each set's capacity and kept in log space, so it runs at any ``|E|`` and any
weight range along one data-independent path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError

from ..data import as_mask
from .base import TOL, Matroid

__all__ = ["LaminarMatroid"]


def _log_poly_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Product of two polynomials given by log coefficients (``-inf`` for zero)."""
    out = np.full(a.size + b.size - 1, -np.inf)
    for i, ai in enumerate(a):
        if ai != -np.inf:
            out[i : i + b.size] = np.logaddexp(out[i : i + b.size], ai + b)
    return out


class LaminarMatroid(Matroid):
    """A laminar family of sets ``A`` with capacities ``c_A``: ``|S cap A| <= c_A`` for all ``A``.

    Parameters
    ----------
    n : int
        The size of the ground set.
    family : sequence of iterable of int
        The laminar sets.
    caps : sequence of int
        The capacity of every set.
    """

    kind = "laminar"

    def __init__(self, n: int, family: Sequence[Iterable[int]], caps: Sequence[int]):
        self.n = int(n)
        self.family = [as_mask(list(A), self.n) for A in family]
        self.caps = np.asarray(caps, dtype=np.int64)
        if len(self.family) != self.caps.size or np.any(self.caps < 0):
            raise DataValidationError("caps", "need one non-negative capacity per set of the family")
        for a, b in itertools.combinations(self.family, 2):
            inter = a & b
            if inter.any() and not (np.array_equal(inter, a) or np.array_equal(inter, b)):
                raise DataValidationError("family", "sets must be laminar (disjoint or nested)")
        self._rows = np.array(self.family, dtype=np.float64).reshape(len(self.family), self.n)

    def is_independent(self, S) -> bool:
        return bool(np.all(self._rows @ as_mask(S, self.n) <= self.caps))

    def sample_base(self, log_weights, rng) -> np.ndarray:
        """A base with probability ~ ``prod_{e in B} exp(log_weights[e])``, exactly, at any |E|.

        Elements are decided in turn, each with its exact conditional probability
        ``Z(e in) / (Z(e in) + Z(e out))``, where ``Z`` is the weight of the bases consistent with
        the decisions so far: a product over the laminar tree of generating polynomials in the
        set size, truncated at each set's capacity, kept in log space (no overflow at any weight
        range).  The same computation runs whatever the weights, so the path is data independent.
        Floating point: a base whose probability is below about ``2^-53`` can get probability 0
        (the private algorithms draw with :mod:`dpmodels.submodular.exact.bases` instead).
        """
        lw = np.asarray(log_weights, dtype=np.float64)
        if lw.shape != (self.n,) or not np.all(np.isfinite(lw)):
            raise DataValidationError("log_weights", f"need {self.n} finite values")
        state = np.zeros(self.n, dtype=np.int8)  # 0 undecided, 1 in, -1 out
        chosen_left = self.r
        for e in range(self.n):
            if chosen_left == 0:
                state[e:] = -1
                break
            state[e] = 1
            z_in = self._log_base_weight(lw, state)
            state[e] = -1
            z_out = self._log_base_weight(lw, state)
            p_in = 0.0 if z_in == -np.inf else math.exp(z_in - np.logaddexp(z_in, z_out))
            if rng.random() < p_in:
                state[e] = 1
                chosen_left -= 1
        return state == 1

    def _log_base_weight(self, lw: np.ndarray, state: np.ndarray) -> float:
        """``log sum`` of ``exp(lw(B))`` over bases ``B`` containing the ``state == 1`` elements
        and none of the ``state == -1`` ones (``-inf`` if there is none)."""
        poly = self._tree_polynomial(self._laminar_tree()[0], lw, state)
        return float(poly[self.r]) if poly.size > self.r else -np.inf

    def _laminar_tree(self):
        """Root node of the family as a tree ``(cap, direct elements, children)``; a virtual root
        without a cap holds the elements no set contains.  Equal sets merge with the smaller cap."""
        if not hasattr(self, "_tree"):
            merged: dict[bytes, int] = {}
            for A, c in zip(self.family, self.caps.tolist(), strict=True):
                key = A.tobytes()
                merged[key] = min(c, merged.get(key, c))
            sets = sorted(
                ((np.frombuffer(k, dtype=bool).copy(), c) for k, c in merged.items()), key=lambda t: t[0].sum()
            )
            nodes = []  # (mask, cap, children indices), smallest first so children precede parents
            parent = [None] * len(sets)
            for i, (A, _) in enumerate(sets):
                for j in range(i + 1, len(sets)):
                    if (sets[j][0] | ~A).all() and (parent[i] is None):  # A inside B_j: j is the smallest superset
                        parent[i] = j
            for i, (A, c) in enumerate(sets):
                children = [k for k in range(len(sets)) if parent[k] == i]
                covered = np.zeros(self.n, bool)
                for k in children:
                    covered |= sets[k][0]
                nodes.append((c, np.flatnonzero(A & ~covered), children))
            tops = [k for k in range(len(sets)) if parent[k] is None]
            covered = np.zeros(self.n, bool)
            for k in tops:
                covered |= sets[k][0]
            nodes.append((self.n, np.flatnonzero(~covered), tops))
            self._tree = (len(nodes) - 1, nodes)
        return self._tree

    def _tree_polynomial(self, node: int, lw: np.ndarray, state: np.ndarray) -> np.ndarray:
        """Log coefficients ``log sum exp(lw(S))`` over independent ``S`` inside the node's set with
        ``|S| = t``, ``t = 0..cap``, consistent with ``state``."""
        cap, direct, children = self._laminar_tree()[1][node]
        poly = np.zeros(1)
        for k in children:
            poly = _log_poly_product(poly, self._tree_polynomial(k, lw, state))[: cap + 1]
        for e in direct:
            factor = {0: np.array([0.0, lw[e]]), 1: np.array([-np.inf, lw[e]]), -1: np.zeros(1)}[int(state[e])]
            poly = _log_poly_product(poly, factor)[: cap + 1]
        return poly

    def contains(self, x, base=False, tol=TOL):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n,) or x.min() < -tol or x.max() > 1 + tol:
            return False
        if base and abs(x.sum() - self.r) > tol * self.n:
            return False
        # the laminar inequalities with x <= 1 describe P(M) (TU system, spec 6.1)
        return bool(np.all(self._rows @ x <= self.caps + tol * self.n))

    def add_polytope(self, block, y, base=False):
        sets = [np.flatnonzero(a) for a in self.family]
        block.laminar = pyo.Constraint(
            range(len(sets)),
            rule=lambda b, i: (
                sum(y[int(e)] for e in sets[i]) <= int(self.caps[i]) if sets[i].size else pyo.Constraint.Skip
            ),
        )
        if base:
            block.base_row = pyo.Constraint(expr=sum(y[e] for e in range(self.n)) == self.r)
