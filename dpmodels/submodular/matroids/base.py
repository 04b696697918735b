"""Matroids on ``E = {0..n-1}``: the common interface, the shared helpers, and the uniform, partition
and explicit kinds (spec 1.4, 3.0, 6.1).

Each matroid has an independence oracle, rank, the greedy max-weight independent set and base
(exact by Edmonds' theorem), base enumeration for small instances, a floating-point sampler of
the product-weight distribution ``Pr[B] ~ prod_{e in B} exp(l_e)`` (exact up to float rounding;
Algorithm 2 uses it for its data-independent uniform bases, while the private exponential
mechanism over bases, spec 3.1 ``cover="bases"``, draws with the exact sampler of
:mod:`dpmodels.submodular.exact.bases`), the strong-exchange step of swap rounding, membership in the matroid
polytope (6.2) and the Pyomo constraints of the polytope (6.1).  :class:`Matroid` implements all
of it from the independence oracle alone, by enumeration where it must; each kind overrides what
its structure makes fast.  The kinds with a toolkit of their own live apart:
:mod:`.laminar` (tree polynomials) and :mod:`.graphic` (the matrix-tree sampler
and Martin's compact extended formulation).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pyomo.environ as pyo
from scipy.special import logsumexp

from dpmodels.core.errors import DataValidationError

from ..data import as_mask

__all__ = [
    "check_pair",
    "Matroid",
    "UniformMatroid",
    "PartitionMatroid",
    "ExplicitMatroid",
    "esp_sample",
]

#: Enumeration (bases, generic polytope rows, generic samplers) is allowed up to this |E|.
ENUMERATION_MAX = 20
TOL = 1e-9


class Matroid:
    """Common interface; subclasses implement ``is_independent`` and may speed up the rest."""

    n: int
    kind = "matroid"

    def is_independent(self, S) -> bool:
        raise NotImplementedError

    # ---------------------------------------------------------------- rank and greedy
    def rank(self, S=None) -> int:
        """``r(S)``: size of a maximal independent subset (greedy is exact for matroids)."""
        mask = np.ones(self.n, bool) if S is None else as_mask(S, self.n)
        chosen = np.zeros(self.n, bool)
        for e in np.flatnonzero(mask):
            chosen[e] = True
            if not self.is_independent(chosen):
                chosen[e] = False
        return int(chosen.sum())

    def extensions(self, S) -> list[int]:
        """``Lambda(S) = {e not in S : S + e independent}``, in increasing order (empty if ``S`` is
        dependent).  Generic: one independence test per element; subclasses answer in one pass."""
        S = as_mask(S, self.n).copy()
        out = []
        for e in np.flatnonzero(~S):
            S[e] = True
            if self.is_independent(S):
                out.append(int(e))
            S[e] = False
        return out

    @property
    def r(self) -> int:
        if not hasattr(self, "_r"):
            self._r = self.rank()
        return self._r

    def _greedy(self, w, positive_only: bool) -> np.ndarray:
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.n,):
            raise DataValidationError("weights", f"need {self.n} weights, got shape {w.shape}")
        order = np.lexsort((np.arange(self.n), -w))  # weight descending, ties by lowest index
        chosen = np.zeros(self.n, bool)
        size = 0
        for e in order:
            if positive_only and w[e] <= 0:
                break
            chosen[e] = True
            if self.is_independent(chosen):
                size += 1
                if size == self.r:
                    break
            else:
                chosen[e] = False
        return chosen

    def max_weight_independent(self, w) -> np.ndarray:
        """Greedy max-weight independent set (elements of positive weight only)."""
        return self._greedy(w, positive_only=True)

    def max_weight_base(self, w) -> np.ndarray:
        """Greedy max-weight base; ties broken by the lowest element index."""
        return self._greedy(w, positive_only=False)

    # ---------------------------------------------------------------- enumeration
    def _check_small(self, what: str) -> None:
        if self.n > ENUMERATION_MAX:
            raise DataValidationError("matroid", f"{what} enumerates subsets; |E| = {self.n} > {ENUMERATION_MAX}")

    def bases(self) -> list[np.ndarray]:
        """Every base as a mask, in lexicographic order of the element tuples (small |E| only)."""
        self._check_small("bases()")
        out = []
        for combo in itertools.combinations(range(self.n), self.r):
            mask = as_mask(combo, self.n)
            if self.is_independent(mask):
                out.append(mask)
        return out

    def independent_sets(self) -> list[np.ndarray]:
        self._check_small("independent_sets()")
        out = []
        for size in range(self.r + 1):
            for combo in itertools.combinations(range(self.n), size):
                mask = as_mask(combo, self.n)
                if self.is_independent(mask):
                    out.append(mask)
        return out

    # ---------------------------------------------------------------- sampling
    def sample_base(self, log_weights, rng) -> np.ndarray:
        """A base ``B`` with probability proportional to ``exp(sum_{e in B} log_weights[e])``.

        Generic version: enumerate the bases (small |E|); subclasses have polynomial samplers.
        In floating point a base whose probability is below about ``2^-53`` can get probability 0
        (the private algorithms draw with :func:`dpmodels.submodular.exact.bases.sample_base` instead).
        """
        bases = self.bases()
        lw = _check_log_weights(log_weights, self.n)
        scores = np.array([lw[b].sum() for b in bases])
        p = np.exp(scores - logsumexp(scores))
        return bases[int(rng.choice(len(bases), p=p))].copy()

    # ---------------------------------------------------------------- exchange
    def strong_exchange(self, B1, B2, i: int) -> int:
        """``j in B2 \\ B1`` with ``B1 - i + j`` and ``B2 - j + i`` both bases (exists for matroids)."""
        B1, B2 = as_mask(B1, self.n), as_mask(B2, self.n)
        if not B1[i] or B2[i]:
            raise DataValidationError("i", f"element {i} must be in B1 minus B2")
        for j in np.flatnonzero(B2 & ~B1):
            a, b = B1.copy(), B2.copy()
            a[i], a[j] = False, True
            b[j], b[i] = False, True
            if self.is_independent(a) and self.is_independent(b):
                return int(j)
        raise DataValidationError("matroid", "strong exchange failed: the independence oracle is not a matroid")

    # ---------------------------------------------------------------- polytope
    def contains(self, x, base: bool = False, tol: float = TOL) -> bool:
        """Membership of ``x`` in the matroid (or base) polytope, by the rank inequalities."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n,) or x.min() < -tol or x.max() > 1 + tol:
            return False
        if base and abs(x.sum() - self.r) > tol * max(1, self.n):
            return False
        return self._rank_inequalities_hold(x, tol)

    def _rank_inequalities_hold(self, x, tol) -> bool:
        self._check_small("contains()")
        for size in range(1, self.n + 1):
            for combo in itertools.combinations(range(self.n), size):
                if x[list(combo)].sum() > self.rank(combo) + tol:
                    return False
        return True

    def add_polytope(self, block, y, base: bool = False) -> None:
        """Add ``y in P(M)`` (or ``B(M)``) to ``block``; ``y`` is indexed by ``range(n)`` in ``[0, 1]``."""
        self._check_small("the rank-inequality polytope")
        subsets = [c for size in range(1, self.n + 1) for c in itertools.combinations(range(self.n), size)]
        block.rank_rows = pyo.Constraint(
            range(len(subsets)), rule=lambda b, s: sum(y[e] for e in subsets[s]) <= self.rank(subsets[s])
        )
        if base:
            block.base_row = pyo.Constraint(expr=sum(y[e] for e in range(self.n)) == self.r)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, r={self.r})"


def esp_sample(log_weights: np.ndarray, size: int, rng) -> np.ndarray:
    """Exactly ``size`` of the items, with probability ~ ``prod exp(log_weights)`` (spec 3.1).

    Elementary symmetric polynomials in log space: ``Z(j, s) = Z(j+1, s) + l_j Z(j+1, s-1)``,
    then item ``j`` is taken with probability ``l_j Z(j+1, s-1) / Z(j, s)``.

    Non-finite log-weights and ``size`` outside ``0..m`` are refused (review F3: an overflowed
    weight would otherwise give NaN probabilities and a silently wrong draw).  Floating point: an
    outcome whose probability is below about ``2^-53`` relative to the total can get probability 0,
    a delta-level caveat (review F7); the private algorithms draw with :mod:`dpmodels.submodular.exact.bases` instead.
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.ndim != 1 or not np.all(np.isfinite(lw)):
        raise DataValidationError("log_weights", "must be a vector of finite values")
    m = lw.size
    if not 0 <= int(size) <= m:
        raise DataValidationError("size", f"must be in 0..{m} (the number of items)")
    size = int(size)
    logz = np.full((m + 1, size + 1), -np.inf)
    logz[m, 0] = 0.0
    for j in range(m - 1, -1, -1):
        logz[j, 0] = 0.0
        logz[j, 1:] = np.logaddexp(logz[j + 1, 1:], lw[j] + logz[j + 1, :-1])
    chosen = np.zeros(m, bool)
    s = size
    for j in range(m):
        if s == 0:
            break
        p = np.exp(lw[j] + logz[j + 1, s - 1] - logz[j, s])
        if rng.random() < p:
            chosen[j] = True
            s -= 1
    return chosen


def _check_log_weights(log_weights, n: int) -> np.ndarray:
    """One finite log-weight per element (a wrong shape would silently sample a wrong base)."""
    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.shape != (n,) or not np.all(np.isfinite(lw)):
        raise DataValidationError("log_weights", f"need {n} finite log-weights, got shape {lw.shape}")
    return lw


class UniformMatroid(Matroid):
    """``U(n, r)``: the sets of size at most ``r`` (cardinality constraint).

    Parameters
    ----------
    n : int
        The size of the ground set.
    r : int
        The rank.
    """

    kind = "uniform"

    def __init__(self, n: int, r: int):
        if not 0 <= int(r) <= int(n) or int(n) < 1:
            raise DataValidationError("r", f"need 0 <= r <= n and n >= 1, got n={n}, r={r}")
        self.n, self._r = int(n), int(r)

    def is_independent(self, S) -> bool:
        return int(as_mask(S, self.n).sum()) <= self._r

    def rank(self, S=None) -> int:
        return self._r if S is None else min(self._r, int(as_mask(S, self.n).sum()))

    def _greedy(self, w, positive_only):
        w = np.asarray(w, dtype=np.float64)
        order = np.lexsort((np.arange(self.n), -w))[: self._r]
        if positive_only:
            order = order[w[order] > 0]
        return as_mask(order, self.n)

    def sample_base(self, log_weights, rng):
        return esp_sample(_check_log_weights(log_weights, self.n), self._r, rng)

    def contains(self, x, base=False, tol=TOL):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n,) or x.min() < -tol or x.max() > 1 + tol:
            return False
        total = x.sum()
        return abs(total - self._r) <= tol * self.n if base else total <= self._r + tol * self.n

    def add_polytope(self, block, y, base=False):
        total = sum(y[e] for e in range(self.n))
        block.cardinality = pyo.Constraint(expr=total == self._r if base else total <= self._r)


class PartitionMatroid(Matroid):
    """Blocks ``P_j`` (``labels[e]`` = block of ``e``) with capacities ``c_j``.

    Parameters
    ----------
    labels : sequence of int
        The block of every element.
    caps : sequence of int
        The capacity of every block.
    """

    kind = "partition"

    def __init__(self, labels: Sequence[int], caps: Sequence[int]):
        labels = np.asarray(labels, dtype=np.int64)
        caps = np.asarray(caps, dtype=np.int64)
        if labels.ndim != 1 or labels.size == 0:
            raise DataValidationError("labels", "need one block label per element")
        if labels.min() < 0 or labels.max() >= caps.size:
            raise DataValidationError("labels", f"block labels must be in 0..{caps.size - 1}")
        if np.any(caps < 0):
            raise DataValidationError("caps", "capacities must be non-negative")
        self.n, self.labels, self.caps = labels.size, labels, caps
        self.block_sizes = np.bincount(labels, minlength=caps.size)
        self._r = int(np.minimum(caps, self.block_sizes).sum())

    @property
    def blocks(self) -> list[np.ndarray]:
        return [np.flatnonzero(self.labels == j) for j in range(self.caps.size)]

    def is_independent(self, S) -> bool:
        counts = np.bincount(self.labels[as_mask(S, self.n)], minlength=self.caps.size)
        return bool(np.all(counts <= self.caps))

    def rank(self, S=None) -> int:
        if S is None:
            return self._r
        counts = np.bincount(self.labels[as_mask(S, self.n)], minlength=self.caps.size)
        return int(np.minimum(counts, self.caps).sum())

    def sample_base(self, log_weights, rng):
        lw = _check_log_weights(log_weights, self.n)
        out = np.zeros(self.n, bool)
        for j, members in enumerate(self.blocks):
            size = int(min(self.caps[j], members.size))
            out[members[esp_sample(lw[members], size, rng)]] = True
        return out

    def contains(self, x, base=False, tol=TOL):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n,) or x.min() < -tol or x.max() > 1 + tol:
            return False
        sums = np.bincount(self.labels, weights=x, minlength=self.caps.size)
        target = np.minimum(self.caps, self.block_sizes)
        return bool(np.all(np.abs(sums - target) <= tol * self.n) if base else np.all(sums <= self.caps + tol * self.n))

    def add_polytope(self, block, y, base=False):
        blocks = self.blocks
        target = np.minimum(self.caps, self.block_sizes)

        def rule(b, j):
            if not blocks[j].size:
                return pyo.Constraint.Skip
            total = sum(y[int(e)] for e in blocks[j])
            if base:
                return total == int(target[j])
            return total <= int(self.caps[j])

        block.block_caps = pyo.Constraint(range(len(blocks)), rule=rule)


class ExplicitMatroid(Matroid):
    """A matroid given by its independent sets (closed under subsets), for tests and tiny cases.

    Parameters
    ----------
    n : int
        The size of the ground set.
    independent_sets : iterable of iterable of int
        The independent sets.
    check : bool, default True
        Check the matroid axioms.
    """

    kind = "explicit"

    def __init__(self, n: int, independent_sets: Iterable[Iterable[int]], check: bool = True):
        self.n = int(n)
        self.family = {frozenset(int(e) for e in S) for S in independent_sets}
        self.family.add(frozenset())
        if any(e < 0 or e >= self.n for S in self.family for e in S):
            raise DataValidationError("independent_sets", f"elements must be in 0..{self.n - 1}")
        if check:
            self._check_axioms()

    def _check_axioms(self) -> None:
        for S in self.family:
            for e in S:
                if S - {e} not in self.family:
                    raise DataValidationError("independent_sets", f"not closed under subsets: {sorted(S)} minus {e}")
        for A, B in itertools.combinations(self.family, 2):
            small, big = (A, B) if len(A) < len(B) else (B, A)
            if len(small) < len(big) and not any(small | {e} in self.family for e in big - small):
                raise DataValidationError(
                    "independent_sets", f"exchange axiom fails for {sorted(small)}, {sorted(big)}"
                )

    def is_independent(self, S) -> bool:
        return frozenset(np.flatnonzero(as_mask(S, self.n)).tolist()) in self.family


def check_pair(F, M: Matroid) -> None:
    """The matroid must live on the function's ground set."""
    if M.n != F.n:
        raise DataValidationError("matroid", f"ground set of {M.n} elements but the function has {F.n}")
