"""The exact exponential mechanism over the bases of a matroid (Algorithm 1, ``cover="bases"``).

The law is ``Pr[B] ~ exp(beta sum_{e in B} g_e)`` for the float gradient ``g`` read as the
dyadic rationals it is and a rational inverse temperature ``beta``: nothing is exponentiated in
floating point, every coin is an exact ``Bernoulli(exp(-gamma))`` on the generator's raw words
(:mod:`dpmodels.core.samplers`).  Three samplers, chosen from the public matroid only:

* uniform and partition matroids: **conditional Poisson sampling**.  Each element of a block
  is kept independently with probability ``sigma(beta g_e - tau)`` (``sigma`` the logistic
  function, drawn exactly by the two-coin algorithm), and the draw is accepted when the block
  holds exactly its capacity.  Given the size, ``Pr[S] ~ prod_{e in S} exp(beta g_e)``, whatever
  ``tau``; ``tau`` (computed in floats) only sets the expected size to the capacity, so that a
  draw is accepted with probability about ``1 / sqrt(r)``.
* explicit matroids, and any other with at most :data:`ENUMERATE_MAX` candidate ``r``-sets:
  the bases are enumerated (once per matroid) and
  :func:`dpmodels.core.selection.exponential_mechanism` runs on their exact scores (integer
  sums of the gradient on a common power of two).
* larger graphic matroids: the sequential matrix-tree method with exact decisions
  (:mod:`.exact_graphic`: rigorous interval bounds, refined in exact rational arithmetic).
* larger laminar matroids: conditional Poisson on the whole ground set, accepted when the draw
  is a base.  Exact, but the expected number of draws ``1 / Pr[a draw is a base]`` grows with
  the weight range (a heavy set over its capacity must lose elements).

``beta = inf`` is the greedy max-weight base (the non-private limit).
"""

from __future__ import annotations

import itertools
import math
import weakref
from fractions import Fraction

import numpy as np
from scipy.special import expit

from dpmodels.core.errors import DataValidationError
from dpmodels.core.samplers import EXACT_LIMIT, bernoulli_exp, bernoulli_exp_scalar
from dpmodels.core.selection import as_rational, exponential_mechanism

from .exact_graphic import sample_forest
from .matroids import ExplicitMatroid, GraphicMatroid, Matroid, PartitionMatroid, UniformMatroid

__all__ = ["ENUMERATE_MAX", "integer_vector", "ExpCoins", "logistic_bernoulli", "conditional_poisson", "sample_base"]

#: Bases are enumerated for the exact EM when ``C(|E|, r)`` is at most this (graphic, laminar, explicit).
ENUMERATE_MAX = 20_000
_SPLIT = 2**52  # grid of the vectorized head of an exponent on a large denominator
_CAP = 2**61  # cap of a head's numerator (heads <= 512)
_BASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def integer_vector(values) -> tuple[list[int], int]:
    """Integers ``v_e`` and a power of two ``d`` with ``values[e] = v_e / d`` exactly (finite floats)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise DataValidationError("scores", "must all be finite")
    ratios = [v.as_integer_ratio() for v in x.tolist()]
    bits = max((q.bit_length() for _, q in ratios), default=1)
    return [p << (bits - q.bit_length()) for p, q in ratios], 1 << (bits - 1)


class ExpCoins:
    """Exact ``Bernoulli(exp(-n_j / d))`` for integers ``n_j >= 0`` on one denominator ``d``, vectorized.

    On int64 words directly when ``d < 2^55`` and ``n_j < 2^62``; otherwise each exponent is split
    as ``head_j / 2^52 + tail_j`` (``tail_j >= 0``), the head drawn vectorized and the tail (below
    ``2^-52`` unless the head is capped at 512) with Python integers only when the head succeeded:
    the AND of two independent exact coins, as in the core exponential mechanism.
    """

    def __init__(self, nums: list[int], den: int):
        self.nums, self.den = nums, den
        self.direct = den < EXACT_LIMIT and max(nums, default=0) < 2**62
        self.grid = den if self.direct else _SPLIT
        heads = nums if self.direct else [min(n * _SPLIT // den, _CAP) for n in nums]
        self.heads = np.array(heads, dtype=np.int64)

    def draw(self, idx: np.ndarray, rng) -> np.ndarray:
        """One coin for each index in ``idx`` (repeats allowed, all independent)."""
        if idx.size == 0:
            return np.zeros(0, dtype=bool)
        ok = bernoulli_exp(self.heads[idx], np.int64(self.grid), rng)
        if not self.direct:
            for i in np.flatnonzero(ok):
                j = int(idx[i])
                tail = Fraction(self.nums[j] * _SPLIT - int(self.heads[j]) * self.den, self.den * _SPLIT)
                ok[i] = not tail or bernoulli_exp_scalar(tail, rng)
        return ok


_ROUNDS = 4  # two-coin rounds drawn per pass (fewer, larger vectorized calls)
_TRIALS = 4  # conditional Poisson trials drawn per batch (fewer for large blocks: about 4096 draws)


def logistic_bernoulli(coins: ExpCoins, positive: np.ndarray, rng, items=None) -> np.ndarray:
    """Exact ``Bernoulli(sigma(z_j))`` with ``|z_j| = nums_j / den`` of ``coins`` and ``z_j >= 0`` where ``positive``.

    One independent draw per entry of ``items`` (indices ``j``; default: each ``j`` once).

    The two-coin algorithm for ``p_1 / (p_1 + p_2)`` with ``{p_1, p_2} = {1, exp(-|z|)}``: a fair bit
    picks a coin; heads with coin ``p_1`` answers 1, tails with coin ``p_2`` answers 0, a failed coin
    starts over.  A round decides with probability at least 1/2; :data:`_ROUNDS` independent rounds
    are drawn at once per undecided element and the first decisive one answers (later rounds'
    draws are discarded, which leaves the law exact).
    """
    items = np.arange(positive.size) if items is None else np.asarray(items)
    out = np.zeros(items.size, dtype=bool)
    todo = np.arange(items.size)
    while todo.size:
        raw = np.asarray(rng.bit_generator.random_raw(todo.size * _ROUNDS), dtype=np.uint64)
        heads = (raw & np.uint64(1)).astype(bool).reshape(todo.size, _ROUNDS)
        pos = positive[items[todo]][:, None]
        decisive = heads == pos  # heads with p_1 = 1 (z >= 0), tails with p_2 = 1 (z < 0): certain
        value = np.broadcast_to(pos, decisive.shape).copy()
        row, col = np.nonzero(~decisive)
        success = coins.draw(items[todo[row]], rng)
        decisive[row[success], col[success]] = True
        value[row[success], col[success]] = ~pos[row[success], 0]
        done = decisive.any(axis=1)
        first = decisive.argmax(axis=1)
        out[todo[done]] = value[np.flatnonzero(done), first[done]]
        todo = todo[~done]
    return out


def _threshold(logits: np.ndarray, size: int) -> float:
    """``tau`` with ``sum_j sigma(logits_j - tau) = size`` (bisection in floats; any ``tau`` keeps the law)."""
    lo, hi = float(logits.min()) - 40.0 - math.log(logits.size), float(logits.max()) + 40.0
    for _ in range(1100):
        mid = lo + (hi - lo) / 2
        if hi - lo <= 1e-9 or mid in (lo, hi):
            break
        if expit(logits - mid).sum() > size:
            lo = mid
        else:
            hi = mid
    return lo + (hi - lo) / 2


def conditional_poisson(logits: list[int], den: int, size: int, rng, accept=None) -> np.ndarray:
    """Exactly ``size`` items (and ``accept(mask)`` true) with ``Pr[S] ~ exp(sum_{j in S} logits_j / den)``.

    Independent exact ``Bernoulli(sigma(logits_j / den - tau))`` draws, repeated until accepted;
    up to :data:`_TRIALS` trials are drawn per batch and the first accepted one, in order, is returned.
    """
    m = len(logits)
    if not 0 <= size <= m:
        raise DataValidationError("size", f"must be in 0..{m}, got {size}")
    if size in (0, m):
        return np.full(m, size == m)
    t = round(_threshold(np.array([v / den for v in logits]), size) * den)
    diff = [v - t for v in logits]
    positive = np.array([d >= 0 for d in diff])
    coins = ExpCoins([abs(d) for d in diff], den)
    trials = max(1, min(_TRIALS, 4096 // m))
    items = np.tile(np.arange(m), trials)
    while True:
        for S in logistic_bernoulli(coins, positive, rng, items).reshape(trials, m):
            if int(S.sum()) == size and (accept is None or accept(S)):
                return S.copy()


def _bases(M: Matroid) -> np.ndarray:
    """Every base of ``M`` as rows of a 0/1 matrix (cached per matroid: public, data independent)."""
    if M not in _BASES:
        rows = []
        if isinstance(M, ExplicitMatroid):  # the family lists them: no search over r-sets
            combos = sorted(tuple(sorted(S)) for S in M.family if len(S) == M.r)
        else:
            combos = itertools.combinations(range(M.n), M.r)
        for combo in combos:
            mask = np.zeros(M.n, dtype=bool)
            mask[list(combo)] = True
            if M.is_independent(mask):
                rows.append(mask)
        _BASES[M] = np.array(rows, dtype=bool).reshape(len(rows), M.n)
    return _BASES[M]


def _enumerated(M: Matroid, scores: list[int], inv_temp: Fraction, rng) -> np.ndarray:
    """The core exponential mechanism over the enumerated bases; a base scores ``sum_{e in B} scores_e``."""
    bases = _bases(M)
    totals = [sum(scores[e] for e in np.flatnonzero(row)) for row in bases]
    return bases[exponential_mechanism(np.array(totals, dtype=object), inv_temp, rng)].copy()


def sample_base(M: Matroid, g, beta, rng) -> np.ndarray:
    """A base ``B`` (0/1 mask) with probability exactly ``~ exp(beta sum_{e in B} g_e)``; see the module docstring.

    ``beta`` is a rational ``>= 0`` (a Fraction ``eps / (2 Delta)``; a float is read as the dyadic
    rational it is) or ``inf`` (the greedy max-weight base).
    """
    g = np.asarray(g, dtype=np.float64)
    if g.shape != (M.n,):
        raise DataValidationError("gradient", f"need {M.n} scores, got shape {g.shape}")
    if isinstance(beta, float) and math.isinf(beta):
        return M.max_weight_base(g)
    b = as_rational(beta, "inv_temp")
    if b < 0:
        raise DataValidationError("inv_temp", f"must be >= 0, got {beta!r}")
    ints, common = integer_vector(g)
    logits, den = _reduced([b.numerator * v for v in ints], b.denominator * common)
    if isinstance(M, UniformMatroid):
        return conditional_poisson(logits, den, M.r, rng)
    if isinstance(M, PartitionMatroid):
        return _partition(M, logits, den, rng)
    if isinstance(M, ExplicitMatroid) or math.comb(M.n, M.r) <= ENUMERATE_MAX:
        return _enumerated(M, ints, Fraction(b.numerator, b.denominator * common), rng)
    if isinstance(M, GraphicMatroid):
        return sample_forest(M, logits, den, rng)
    return conditional_poisson(logits, den, M.r, rng, accept=M.is_independent)


def _reduced(nums: list[int], den: int) -> tuple[list[int], int]:
    """``nums / den`` on the smallest common denominator (the int64 path needs it below ``2^55``)."""
    g = math.gcd(den, *nums)
    return [n // g for n in nums], den // g


def _partition(M: PartitionMatroid, logits: list[int], den: int, rng) -> np.ndarray:
    """Bases of a partition matroid are independent choices per block: one conditional Poisson each."""
    out = np.zeros(M.n, dtype=bool)
    for j, members in enumerate(M.blocks):
        size = int(min(M.caps[j], members.size))
        out[members[conditional_poisson([logits[e] for e in members], den, size, rng)]] = True
    return out
