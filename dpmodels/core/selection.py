"""Exact selection samplers: the exponential mechanism, proportional draws, Laplace threshold tests.

Built on :mod:`dpmodels.core.samplers` (integer arithmetic on raw random words).  Every
float argument is read as the dyadic rational it is (``float.as_integer_ratio``), so the
law sampled is exactly the one the floats describe; nothing is exponentiated in floating
point.

* :func:`exponential_mechanism` - ``P(j) ~ exp(inv_temp * q_j)`` by rejection: a uniform
  candidate is accepted with probability ``exp(-inv_temp (max q - q_j))``; trials are
  independent, so the first acceptance has exactly the target law.
* :func:`sample_proportional` - an index with probability ``w_k / sum(w)`` for non-negative
  floats (one draw or a batch), via their exact integer representation on a common power of
  two (:func:`exact_integer_weights`) and uniform integers from :mod:`~dpmodels.core.samplers`;
  no float inverse CDF, so a zero weight is never drawn and ``2**-1000`` beside ``1.0`` has
  probability ``1 / (2**1000 + 1)``.
* :func:`laplace_exceeds` - ``Bernoulli(P[c + Lap(b) >= threshold])`` without drawing the
  Laplace variable: exactly the law of a noisy threshold test whose noisy value is never
  published (the facility mechanism's marks).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from itertools import accumulate

import numpy as np

from .errors import DataValidationError, PrivacyParameterError
from .samplers import EXACT_LIMIT, bernoulli_exp, bernoulli_exp_scalar, raw_words, uniform_below, uniform_below_int

__all__ = ["exponential_mechanism", "sample_proportional", "exact_integer_weights", "laplace_exceeds", "as_rational"]

_BATCH = 64  # candidates tried per round of the vectorized rejection loop


def as_rational(value, field: str) -> Fraction:
    """A finite int, Fraction or float as the exact rational it denotes."""
    if isinstance(value, bool):
        raise DataValidationError(field, f"must be a number, got {value!r}")
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise DataValidationError(field, f"must be finite, got {value!r}")
        return Fraction(*float(value).as_integer_ratio())
    if isinstance(value, np.integer):
        return Fraction(int(value))
    return Fraction(value)


def exponential_mechanism(scores, inv_temp, rng: np.random.Generator) -> int:
    """Index ``j`` with probability ``exp(inv_temp q_j) / sum_i exp(inv_temp q_i)``, exactly.

    ``inv_temp`` is a finite rational ``>= 0`` (``eps / (2 Delta)``); 0 is uniform.  The exponents
    are centred at the best score before anything else, so ties and huge scores are exact.
    They are put on one integer denominator (:func:`_integer_exponents`, plain integer arithmetic
    for float scores); below ``2^55`` the vectorized rejection runs on them directly, otherwise
    (float scores times a decimal ``inv_temp``) on their split (:func:`_reject_split`), so no
    candidate set falls back to a per-candidate Python loop.
    """
    beta = as_rational(inv_temp, "inv_temp")
    if beta < 0:
        raise PrivacyParameterError("inv_temp", f"must be >= 0, got {inv_temp!r}")
    nums, den = _integer_exponents(scores, beta)
    if den < EXACT_LIMIT and max(nums) < 2**62:
        return _reject_vectorized(np.array(nums, dtype=np.int64), den, rng)
    return _reject_split(nums, den, rng)


def _integer_scores(scores) -> tuple[list[int], int]:
    """Integers ``n_j`` and ``d`` with ``q_j = n_j / d`` exactly (floats: ``d`` a power of two)."""
    arr = np.asarray(scores)
    if arr.size == 0:
        raise DataValidationError("scores", "the exponential mechanism needs at least one candidate")
    if arr.dtype.kind != "f":
        q = [as_rational(s, "scores") for s in arr.astype(object).ravel()]
        common = math.lcm(*(v.denominator for v in q))
        return [v.numerator * (common // v.denominator) for v in q], common
    flat = arr.astype(np.float64).ravel()
    if not np.isfinite(flat).all():
        raise DataValidationError("scores", f"must be finite, got {flat[~np.isfinite(flat)][0]!r}")
    ratios = [x.as_integer_ratio() for x in flat.tolist()]
    bits = max(d.bit_length() for _, d in ratios)
    return [n << (bits - d.bit_length()) for n, d in ratios], 1 << (bits - 1)


def _integer_exponents(scores, beta: Fraction) -> tuple[list[int], int]:
    """Integers ``e_j >= 0`` and the smallest ``d`` with ``beta (max q - q_j) = e_j / d`` exactly."""
    ints, common = _integer_scores(scores)
    top = max(ints)
    nums = [beta.numerator * (top - v) for v in ints]
    den = beta.denominator * common
    g = math.gcd(den, *nums)
    return [n // g for n in nums], den // g


def _reject_vectorized(num: np.ndarray, den: int, rng) -> int:
    """First accepted of uniform candidates, each kept with probability ``exp(-num_j / den)``."""
    while True:
        candidates = uniform_below(num.size, rng, size=_BATCH)
        accepted = np.flatnonzero(bernoulli_exp(num[candidates], np.int64(den), rng))
        if accepted.size:
            return int(candidates[accepted[0]])


SPLIT_DEN = 2**52  # the grid of the vectorized part of a split exponent (below EXACT_LIMIT)
_SPLIT_CAP = 2**61  # its numerator cap: the vectorized part is at most 512 (exp(-512) ~ 1e-222)


def split_heads(nums: list[int], den: int) -> np.ndarray:
    """The vectorized parts ``head_j = min(floor(gamma_j 2^52), 2^61)`` of exponents ``gamma_j = nums_j / den``.

    ``Bernoulli(exp(-gamma))`` is the AND of independent exact Bernoullis of ``head / 2^52`` (int64
    words, :func:`bernoulli_exp` on the grid :data:`SPLIT_DEN`) and of the tail :func:`tail_passes`.
    """
    return np.array([min(n * SPLIT_DEN // den, _SPLIT_CAP) for n in nums], dtype=np.int64)


def tail_passes(num: int, den: int, head: int, rng) -> bool:
    """The tail coin ``Bernoulli(exp(-(num/den - head/2^52)))`` of a split exponent (Python integers)."""
    tail = Fraction(num * SPLIT_DEN - head * den, den * SPLIT_DEN)
    return not tail or bernoulli_exp_scalar(tail, rng)


def _reject_split(nums: list[int], den: int, rng) -> int:
    """:func:`_reject_vectorized` for exponents ``gamma_j = nums_j / den`` on any denominator.

    Each exponent is split (:func:`split_heads`); trials are independent and taken in order, so
    drawing a trial's tail only when its head passed (and no later trial's) keeps the law exact.
    """
    heads = split_heads(nums, den)
    while True:
        candidates = uniform_below(heads.size, rng, size=_BATCH)
        for i in np.flatnonzero(bernoulli_exp(heads[candidates], np.int64(SPLIT_DEN), rng)):
            j = int(candidates[i])
            if tail_passes(nums[j], den, int(heads[j]), rng):
                return j


def exact_integer_weights(weights) -> tuple[list[int], int]:
    """Integers ``n_k`` and an exponent ``e`` with ``weights[k] == n_k * 2**e`` exactly.

    Every finite float is a dyadic rational ``p / 2**b`` (``float.as_integer_ratio``); putting
    the vector on the common denominator ``2**max(b)`` makes the probabilities
    ``n_k / sum(n)`` exact rationals, however far apart the weights' magnitudes are.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise DataValidationError("weights", f"must be a non-empty vector, got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or not (w > 0).any():
        raise DataValidationError("weights", "must be finite and non-negative with a positive entry")
    ratios = [x.as_integer_ratio() for x in w.tolist()]
    bits = [q.bit_length() - 1 for _, q in ratios]
    top = max(bits)
    return [p << (top - b) for (p, _), b in zip(ratios, bits, strict=True)], -top


def sample_proportional(weights, rng: np.random.Generator, size=None):
    """Index ``k`` with probability *exactly* ``w_k / sum(w)`` for finite non-negative float weights.

    The weights become integers on a common power of two (:func:`exact_integer_weights`); a
    uniform integer below their total, made from the bit generator's raw words
    (:mod:`dpmodels.core.samplers`, so the same stream gives the same indices on every
    platform and numpy version), is located in the cumulative sums.  Returns an int, or an
    ``intp`` array of shape ``size``; ``size=1`` consumes the stream exactly as one draw.
    """
    rng = _require_generator(rng)
    ints, _ = exact_integer_weights(weights)
    cum = list(accumulate(ints))
    if size is None:
        return bisect_right(cum, uniform_below_int(cum[-1], rng))
    n = int(np.prod(size))
    if cum[-1] < 2**63:  # one word per trial: vectorized
        u = uniform_below(cum[-1], rng, size=n)
        idx = np.searchsorted(np.array(cum, dtype=np.int64), u, side="right")
    else:
        idx = [bisect_right(cum, uniform_below_int(cum[-1], rng)) for _ in range(n)]
    return np.asarray(idx, dtype=np.intp).reshape(size)


def _require_generator(rng) -> np.random.Generator:
    """``rng`` if it is a numpy Generator (whose raw words the samplers read), else a named error."""
    if not isinstance(rng, np.random.Generator):
        raise DataValidationError(
            "rng", f"must be a numpy Generator (dpmodels.core.randomness.make_rng), got {type(rng).__name__}"
        )
    return rng


def laplace_exceeds(value, scale, threshold, rng: np.random.Generator) -> bool:
    """Exactly ``Bernoulli(P[value + Lap(scale) >= threshold])``, the Laplace draw never materialized.

    With ``x = threshold - value`` and ``g = |x| / scale``: ``P = exp(-g) / 2`` for ``x > 0`` and
    ``1 - exp(-g) / 2`` for ``x <= 0``; ``exp(-g)/2`` is a fair coin and a ``Bernoulli(exp(-g))``.
    """
    b = as_rational(scale, "scale")
    if b <= 0:
        raise PrivacyParameterError("scale", f"must be > 0, got {scale!r}")
    x = as_rational(threshold, "threshold") - as_rational(value, "value")
    coin = bool(raw_words(rng, 1)[0] & np.uint64(1)) and bernoulli_exp_scalar(abs(x) / b, rng)
    return coin if x > 0 else not coin
