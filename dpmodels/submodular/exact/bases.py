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
* larger graphic and laminar matroids: sequential exact decisions (:mod:`.graphic`, the
  matrix-tree method; :mod:`.laminar`, generating polynomials over the laminar tree),
  each comparing a lazily revealed uniform with rigorous bounds refined until they decide.
* any other matroid class beyond enumeration: conditional Poisson on the whole ground set,
  accepted when the draw is a base.  Exact, but the expected number of draws
  ``1 / Pr[a draw is a base]`` grows with the weight range (a heavy circuit loses an element).

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
from dpmodels.core.selection import as_rational, exponential_mechanism

from ..matroids import ExplicitMatroid, GraphicMatroid, LaminarMatroid, Matroid, PartitionMatroid, UniformMatroid
from .coins import ExpCoins, logistic_bernoulli
from .graphic import sample_forest
from .laminar import sample_laminar

__all__ = ["ENUMERATE_MAX", "integer_vector", "conditional_poisson", "sample_base"]

#: Bases are enumerated for the exact EM when ``C(|E|, r)`` is at most this (graphic, laminar, explicit).
ENUMERATE_MAX = 20_000
_TRIALS = 4  # conditional Poisson trials drawn per batch (fewer for large blocks: about 4096 draws)
_BASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def integer_vector(values) -> tuple[list[int], int]:
    """Integers ``v_e`` and a power of two ``d`` with ``values[e] = v_e / d`` exactly (finite floats)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise DataValidationError("scores", "must all be finite")
    ratios = [v.as_integer_ratio() for v in x.tolist()]
    bits = max((q.bit_length() for _, q in ratios), default=1)
    return [p << (bits - q.bit_length()) for p, q in ratios], 1 << (bits - 1)


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

    Parameters
    ----------
    M : Matroid
        The matroid.
    g : array_like
        One score per element (floats, read exactly).
    beta : Fraction, float or inf
        The inverse temperature.
    rng : numpy.random.Generator
        The mechanism's stream.

    Returns
    -------
    numpy.ndarray
        The base, a boolean mask.
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
    if isinstance(M, LaminarMatroid):
        return sample_laminar(M, logits, den, rng)
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
