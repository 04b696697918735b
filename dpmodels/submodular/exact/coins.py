"""Exact coins for the base samplers: ``Bernoulli(exp(-gamma))``, ``Bernoulli(sigma(z))``, ``U < p``.

* :class:`ExpCoins` - ``Bernoulli(exp(-n_j / d))`` for integer exponents on any denominator,
  vectorized on the core's int64 sampler (:func:`dpmodels.core.samplers.bernoulli_exp`);
* :func:`logistic_bernoulli` - ``Bernoulli(1 / (1 + exp(-z)))`` by the two-coin algorithm;
* :class:`LazyUniform` - a uniform revealed 64 bits at a time, compared with rigorous bounds of a
  probability ``p`` that can be refined (the sequential samplers' exact decisions), and
  :func:`exp_bounds` / :func:`decimal_exp_bounds`, rigorous bounds of ``exp`` at any precision.
"""

from __future__ import annotations

import decimal
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from fractions import Fraction

import numpy as np

from dpmodels.core.samplers import EXACT_LIMIT, bernoulli_exp
from dpmodels.core.selection import SPLIT_DEN, split_heads, tail_passes

__all__ = ["DIGITS", "ExpCoins", "logistic_bernoulli", "LazyUniform", "exp_bounds", "decimal_exp_bounds"]

DIGITS = 25  # decimal digits of the first exp bounds of the sequential samplers (then 50, 100, ...)
_ROUNDS = 4  # two-coin rounds drawn per pass (fewer, larger vectorized calls)


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
        self.grid = den if self.direct else SPLIT_DEN
        self.heads = np.array(nums, dtype=np.int64) if self.direct else split_heads(nums, den)

    def draw(self, idx: np.ndarray, rng) -> np.ndarray:
        """One coin for each index in ``idx`` (repeats allowed, all independent)."""
        if idx.size == 0:
            return np.zeros(0, dtype=bool)
        ok = bernoulli_exp(self.heads[idx], np.int64(self.grid), rng)
        if not self.direct:
            for i in np.flatnonzero(ok):
                j = int(idx[i])
                ok[i] = tail_passes(self.nums[j], self.den, int(self.heads[j]), rng)
        return ok


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


class LazyUniform:
    """A uniform ``U`` in ``[0, 1)`` revealed 64 bits at a time: ``[m / 2^k, (m + 1) / 2^k)``."""

    def __init__(self, rng):
        self.rng, self.m, self.k = rng, 0, 0

    def below(self, lo: Fraction, hi: Fraction) -> bool | None:
        """``U < p`` for any ``p`` in ``[lo, hi]``, or None when the bounds are too wide to tell."""
        while True:
            left, right = Fraction(self.m, 1 << self.k), Fraction(self.m + 1, 1 << self.k)
            if self.k and right <= lo:
                return True
            if self.k and left >= hi:
                return False
            if self.k and lo <= left and right <= hi:
                return None  # U's interval lies inside [lo, hi]: only tighter bounds can decide
            word = int(self.rng.bit_generator.random_raw())
            self.m, self.k = (self.m << 64) | word, self.k + 64


def decimal_context(digits: int, rounding: str) -> decimal.Context:
    """A decimal context of ``digits`` digits, ``rounding``, and no exponent limits in practice."""
    return decimal.Context(prec=digits, rounding=rounding, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX)


def exp_bounds(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= exp(x) <= hi`` (relative gap about ``10^-digits``).

    ``x`` is rounded outward to ``digits`` decimals; ``Decimal.exp`` is correctly rounded (to
    nearest), so one step outward from its result bounds the true value."""
    low, high = decimal_exp_bounds(x, digits)
    return Fraction(low), Fraction(high)


def decimal_exp_bounds(x: Fraction, digits: int) -> tuple[Decimal, Decimal]:
    """:func:`exp_bounds` as Decimals of ``digits`` digits."""
    num, den = Decimal(x.numerator), Decimal(x.denominator)
    low = decimal_context(digits, ROUND_FLOOR).divide(num, den)
    high = decimal_context(digits, ROUND_CEILING).divide(num, den)
    nearest = decimal_context(digits, ROUND_HALF_EVEN)
    return nearest.next_minus(nearest.exp(low)), nearest.next_plus(nearest.exp(high))
