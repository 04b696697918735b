"""The exact discrete Gaussian at any rational variance, and its law in floating point.

:func:`discrete_gaussian` is Alg. 3 of Canonne, Kamath and Steinke (NeurIPS 2020): ``Y``
discrete Laplace of scale ``t = floor(sigma) + 1`` (:func:`dpmodels.core.samplers.discrete_laplace`),
kept with probability ``exp(-gamma)``, ``gamma = (|Y| t q - p)^2 / (2 p q t^2)`` for ``sigma2 = p/q``.
Two exact paths evaluate that test, chosen from the parameters alone:

* **int64** when ``D = 2 p q t^2 < 2^55`` (variances up to about 1.35e8 with small denominators):
  :func:`dpmodels.core.samplers.bernoulli_exp` on ``(x^2, D)``, the sampler's original path,
  bit for bit;
* **multi-limb** otherwise (census variances 1e10, 1e12 and beyond, finely specified rationals
  such as ``1000000007/1000000``): ``x^2`` and ``D`` as rows of 64-bit limbs (most significant
  first, exact squares of int64 ``x``, or Python integers split into limbs when ``x`` itself
  leaves int64).  ``floor(gamma)`` trials of ``Bernoulli(exp(-1))`` subtract ``D`` from ``x^2``
  while it stays ``>= D``; Alg. 1 then runs on the remainder ``r / D`` with
  ``Bernoulli(r / (D k)) = Bernoulli(1/k) and [U < r]``, ``U`` uniform below ``D`` drawn by
  rejection on whole words.  Only integer comparisons, subtractions and raw words: no float.

The one cap is the Laplace scale: ``t < 2^55`` (``sigma2 < (2^55 - 1)^2 ~ 1.3e33``), so that
every draw (``|Z| < 256 t``) fits int64.

:func:`discrete_gaussian_pmf`, :func:`discrete_gaussian_cdf` and :func:`discrete_gaussian_variance`
give the law in floating point: direct sums for ``sigma2 <= 400``, and for larger variances the
Poisson-summation (Jacobi theta) dual forms and the Euler-Maclaurin midpoint expansion of the cdf.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .errors import PrivacyParameterError
from .samplers import (
    EXACT_LIMIT,
    bernoulli_exp,
    bernoulli_exp_scalar,
    discrete_laplace,
    in_chunks,
    positive_fraction,
    raw_words,
    uniform_below,
)

__all__ = [
    "discrete_gaussian",
    "discrete_gaussian_pmf",
    "discrete_gaussian_cdf",
    "discrete_gaussian_variance",
]

#: ``t = floor(sigma) + 1`` must stay below this (the discrete Laplace scale; draws fit int64).
SCALE_LIMIT = 2**55
_V_BOUND = 256  # discrete_laplace draws satisfy |Y| < 256 t (its geometric part is capped at 255)
_SQUARE_LIMIT = 2**63  # |x| below this: x^2 from int64 halves; beyond, Python integers split into limbs
_WORD = 64
_MASK = (1 << _WORD) - 1


# ----------------------------------------------------------------------------- parameters
def _gaussian_parameters(sigma2) -> tuple[int, int, int]:
    """``(p, q, t)``: ``sigma2 = p/q`` in lowest terms and the Laplace scale ``t = floor(sqrt(p/q)) + 1``."""
    var = positive_fraction(sigma2, "sigma2")
    p, q = var.numerator, var.denominator
    t = math.isqrt(p * q) // q + 1
    if t >= SCALE_LIMIT:
        raise PrivacyParameterError(
            "sigma2",
            f"{float(var):.6g} is too large to sample: floor(sigma) + 1 must be below 2^55, i.e. "
            f"sigma2 < (2^55 - 1)^2 ~ {float((SCALE_LIMIT - 1) ** 2):.3g} (wider noise leaves int64)",
        )
    return p, q, t


# ----------------------------------------------------------------------------- the sampler
def discrete_gaussian(sigma2, size, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of ``P(Z=z) ~ exp(-z^2 / (2 sigma2))`` for any rational variance parameter (Alg. 3).

    ``Y`` discrete Laplace with scale ``t = floor(sigma) + 1``, kept with probability
    ``exp(-(|Y| - sigma2/t)^2 / (2 sigma2))``; with ``sigma2 = p/q`` that exponent is
    ``(|Y| t q - p)^2 / (2 p q t^2)``, evaluated in integers: int64 when ``2 p q t^2 < 2^55``,
    64-bit limbs beyond (see the module's documentation).

    Parameters
    ----------
    sigma2 : int, Fraction, str or float
        The variance parameter ``sigma^2 > 0``, read exactly (a float is the dyadic rational it
        is).  Any numerator and denominator; the one cap is ``floor(sigma) + 1 < 2^55``
        (``sigma2 < (2^55 - 1)^2 ~ 1.3e33``), so that every draw fits int64.
    size : int or tuple of int
        The shape of the result.
    rng : numpy.random.Generator
        The generator whose raw 64-bit words are read.

    Returns
    -------
    numpy.ndarray
        int64 draws of shape ``size``.
    """
    p, q, t = _gaussian_parameters(sigma2)
    den = 2 * p * q * t * t
    accept = _accept_int64 if den < EXACT_LIMIT else _accept_limbs
    n = int(np.prod(size)) if np.ndim(size) else int(size)
    return in_chunks(lambda k: _discrete_gaussian(p, q, t, accept, k, rng), n).reshape(size)


def _discrete_gaussian(p: int, q: int, t: int, accept, n: int, rng) -> np.ndarray:
    """``n`` draws of Alg. 3 (one pass of :func:`discrete_gaussian`)."""
    den = 2 * p * q * t * t
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        y = discrete_laplace(t, todo.size, rng)
        keep = accept(np.abs(y), t, p, q, den, rng)
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out


def _accept_int64(ay: np.ndarray, t: int, p: int, q: int, den: int, rng) -> np.ndarray:
    """``Bernoulli(exp(-(ay t q - p)^2 / den))``, ``den < 2^55``; large squares go through Python ints."""
    x = ay * (t * q) - p
    small = np.abs(x) < 2**31
    keep = np.zeros(ay.size, dtype=bool)
    idx = np.flatnonzero(small)
    keep[idx] = bernoulli_exp(x[idx] * x[idx], np.int64(den), rng)
    for i in np.flatnonzero(~small):
        keep[i] = bernoulli_exp_scalar(Fraction(int(x[i]) ** 2, den), rng)
    return keep


def _accept_limbs(ay: np.ndarray, t: int, p: int, q: int, den: int, rng) -> np.ndarray:
    """``Bernoulli(exp(-x^2 / den))`` with ``x = ay t q - p``, on 64-bit limbs (any ``den``)."""
    tq = t * q
    x_bound = _V_BOUND * t * tq + p  # |x| < x_bound since |Y| < 256 t
    width = max(2, -(-max(2 * x_bound.bit_length(), den.bit_length()) // _WORD))
    if x_bound < _SQUARE_LIMIT:
        r = _square_limbs(ay * tq - p)
    else:
        x = ay.astype(object) * tq - p
        r = _object_limbs(x * x, width)
    d = _limbs(den, r.shape[1])
    keep = np.ones(ay.size, dtype=bool)
    # floor(gamma) trials of Bernoulli(exp(-1)): while r >= den, one trial, then r -= den
    alive = np.arange(ay.size)
    while alive.size:
        over = alive[~_less(r[alive], d)]
        ok = bernoulli_exp(np.ones(over.size, dtype=np.int64), np.int64(1), rng)
        keep[over[~ok]] = False
        alive = over[ok]
        r[alive] = _subtract(r[alive], d)
    # Alg. 1 on gamma - floor(gamma) = r / den: K grows while Bernoulli(r / (den K)) succeeds; odd K accepts
    active, k = np.flatnonzero(keep), 1
    while active.size:
        tried = active if k == 1 else active[uniform_below(k, rng, size=active.size) == 0]
        succeeded = tried[_less(_uniform_limbs(den, r.shape[1], tried.size, rng), r[tried])]
        if k % 2 == 0:  # K = k for the draws that stop here
            keep[np.setdiff1d(active, succeeded, assume_unique=True)] = False
        active, k = succeeded, k + 1
    return keep


def _square_limbs(x: np.ndarray) -> np.ndarray:
    """``x^2`` for int64 ``|x| < 2^63`` as ``(n, 2)`` uint64 limbs, high limb first (32-bit halves)."""
    a = np.abs(x).astype(np.uint64)
    hi, lo = a >> np.uint64(32), a & np.uint64(0xFFFFFFFF)
    mid = np.uint64(2) * hi * lo  # < 2^64 as hi < 2^31
    low = lo * lo
    out = np.empty((a.size, 2), dtype=np.uint64)
    out[:, 1] = low + (mid << np.uint64(32))
    out[:, 0] = hi * hi + (mid >> np.uint64(32)) + (out[:, 1] < low)
    return out


def _object_limbs(values: np.ndarray, width: int) -> np.ndarray:
    """Non-negative Python integers (object array) as ``(n, width)`` uint64 limbs, high limb first."""
    out = np.empty((values.size, width), dtype=np.uint64)
    for i in range(width):
        out[:, width - 1 - i] = ((values >> (_WORD * i)) & _MASK).astype(np.uint64)
    return out


def _limbs(value: int, width: int) -> np.ndarray:
    """One non-negative Python integer as ``width`` uint64 limbs, high limb first."""
    return np.array([(value >> (_WORD * i)) & _MASK for i in reversed(range(width))], dtype=np.uint64)


def _less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a < b`` for limbs ``a`` of shape ``(n, w)`` and ``b`` of shape ``(w,)`` or ``(n, w)``."""
    less = np.zeros(a.shape[0], dtype=bool)
    equal = np.ones(a.shape[0], dtype=bool)
    for i in range(a.shape[1]):
        ai, bi = a[:, i], b[..., i]
        less |= equal & (ai < bi)
        equal &= ai == bi
    return less


def _subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a - b`` for limbs with ``a >= b`` (``b`` one row), borrowing from the low limb up."""
    out = np.empty_like(a)
    borrow = np.zeros(a.shape[0], dtype=bool)
    for i in reversed(range(a.shape[1])):
        ai = a[:, i]
        out[:, i] = ai - b[i] - borrow.astype(np.uint64)  # modulo 2^64
        borrow = (ai < b[i]) | ((ai == b[i]) & borrow)
    return out


def _uniform_limbs(high: int, width: int, n: int, rng) -> np.ndarray:
    """``n`` uniform integers in ``[0, high)`` as ``(n, width)`` limbs: masked whole words, rejection."""
    bits = max(1, (high - 1).bit_length())
    used = -(-bits // _WORD)
    top = np.uint64((1 << (bits - _WORD * (used - 1))) - 1)
    bound = _limbs(high, width)
    out = np.zeros((n, width), dtype=np.uint64)
    todo = np.arange(n)
    while todo.size:
        draw = np.zeros((todo.size, width), dtype=np.uint64)
        draw[:, width - used :] = raw_words(rng, todo.size * used).reshape(todo.size, used)
        draw[:, width - used] &= top
        ok = _less(draw, bound)
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


# ----------------------------------------------------------------------------- the law in floating point
_DIRECT_UP_TO = 400.0  # sigma2 <= 400 (sigma <= 20): direct sums; beyond, the dual forms


def _sigma2_float(sigma2) -> float:
    frac = positive_fraction(sigma2, "sigma2")
    try:
        return float(frac)
    except OverflowError:
        raise PrivacyParameterError("sigma2", f"must be within the float range, got {_short(frac)}") from None


def _short(frac: Fraction) -> str:
    text = str(frac)
    return text if len(text) < 60 else text[:57] + "..."


def _table(s2: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Support ``|k| <= 39 sigma + 2`` (beyond, the weights underflow), weights and their sum."""
    half = math.ceil(39 * math.sqrt(s2)) + 2
    k = np.arange(-half, half + 1)
    w = np.exp(-(k.astype(float) ** 2) / (2 * s2))
    return k, w, math.fsum(w)


def _dual(s2: float, second_moment: bool = False) -> float:
    """``1 + 2 sum_n c_n exp(-a n^2)``, ``a = 2 pi^2 sigma2``: ``c_n = 1`` (the theta function that
    multiplies ``sqrt(2 pi sigma2)`` in the normalizer), or ``c_n = 1 - 2 a n^2`` (that of
    ``sigma2 sqrt(2 pi sigma2)`` in ``sum_k k^2 exp(-k^2 / (2 sigma2))``)."""
    a = 2 * math.pi**2 * s2
    terms = [(1 - 2 * a * n * n if second_moment else 1.0) * math.exp(-a * n * n) for n in range(1, 8)]
    return 1 + 2 * math.fsum(terms)


def _normalizer_direct(s2: float) -> float:
    return _table(s2)[2]


def _normalizer_dual(s2: float) -> float:
    return math.sqrt(2 * math.pi * s2) * _dual(s2)


def _variance_direct(s2: float) -> float:
    k, w, total = _table(s2)
    return math.fsum(k.astype(float) ** 2 * w) / total


def _variance_dual(s2: float) -> float:
    return s2 * _dual(s2, second_moment=True) / _dual(s2)


def _lower_tail_direct(z: np.ndarray, s2: float) -> np.ndarray:
    """``P(Z <= z)`` for integers ``z <= -1``, summed."""
    k, w, total = _table(s2)
    cum = np.cumsum(w) / total
    idx = np.clip(z - k[0], -1, k.size - 1).astype(np.int64)
    return np.where(idx < 0, 0.0, cum[np.maximum(idx, 0)])


def _lower_tail_expansion(z: np.ndarray, s2: float) -> np.ndarray:
    """``P(Z <= z)`` for integers ``z <= -1`` by the Euler-Maclaurin midpoint expansion (large ``sigma2``)."""
    from scipy.special import ndtr

    v = (z + 0.5) / math.sqrt(s2)
    phi = np.exp(-(v**2) / 2) / math.sqrt(2 * math.pi)
    he1, he3, he5 = v, v**3 - 3 * v, v**5 - 10 * v**3 + 15 * v
    series = he1 / (24 * s2) - 7 * he3 / (5760 * s2**2) + 31 * he5 / (967680 * s2**3)
    return (ndtr(v) + phi * series) / _dual(s2)


def discrete_gaussian_pmf(values, sigma2) -> np.ndarray:
    """``P(Z = z)`` of the discrete Gaussian ``P(Z=z) ~ exp(-z^2 / (2 sigma2))``, in floating point.

    The normalizer is a direct sum for ``sigma2 <= 400`` and the Poisson-summation dual
    ``sqrt(2 pi sigma2) (1 + 2 sum_n exp(-2 pi^2 sigma2 n^2))`` beyond.

    Parameters
    ----------
    values : array_like
        The points ``z`` (a non-integer has probability 0).
    sigma2 : int, Fraction, str or float
        The variance parameter ``sigma^2 > 0``.

    Returns
    -------
    numpy.ndarray
        float64 probabilities, of the shape of ``values``.
    """
    s2 = _sigma2_float(sigma2)
    z = np.asarray(values, dtype=float)
    total = _normalizer_direct(s2) if s2 <= _DIRECT_UP_TO else _normalizer_dual(s2)
    return np.where(z == np.floor(z), np.exp(-(z**2) / (2 * s2)) / total, 0.0)


def discrete_gaussian_cdf(values, sigma2) -> np.ndarray:
    """``P(Z <= z)`` of the discrete Gaussian, in floating point.

    The lower tail ``P(Z <= z)``, ``z < 0``, is a direct sum for ``sigma2 <= 400`` and, beyond,
    the Euler-Maclaurin midpoint expansion ``Phi(v) + phi(v) (He_1(v) / (24 sigma^2) -
    7 He_3(v) / (5760 sigma^4) + 31 He_5(v) / (967680 sigma^6))`` at ``v = (z + 1/2) / sigma``
    (``He`` the probabilists' Hermite polynomials; the next term is below 1e-16 there).  The
    upper half is ``1 - P(Z <= -z - 1)`` by symmetry.

    Parameters
    ----------
    values : array_like
        The points ``z`` (``P(Z <= z) = P(Z <= floor(z))``).
    sigma2 : int, Fraction, str or float
        The variance parameter ``sigma^2 > 0``.

    Returns
    -------
    numpy.ndarray
        float64 probabilities, of the shape of ``values``.
    """
    s2 = _sigma2_float(sigma2)
    z = np.floor(np.asarray(values, dtype=float))
    low = np.where(z < 0, z, -z - 1)
    tail = (_lower_tail_direct if s2 <= _DIRECT_UP_TO else _lower_tail_expansion)(low, s2)
    return np.where(z < 0, tail, 1.0 - tail)


def discrete_gaussian_variance(sigma2) -> float:
    """``E[Z^2]``, the variance of the discrete Gaussian (just below ``sigma2`` for ``sigma2 >= 1``).

    A direct sum for ``sigma2 <= 400``; beyond, the Poisson-summation dual ``sigma2 (1 + 2 sum_n
    (1 - 4 pi^2 sigma2 n^2) exp(-2 pi^2 sigma2 n^2)) / (1 + 2 sum_n exp(-2 pi^2 sigma2 n^2))``.

    Parameters
    ----------
    sigma2 : int, Fraction, str or float
        The variance parameter ``sigma^2 > 0``.

    Returns
    -------
    float
        The variance of the distribution.
    """
    s2 = _sigma2_float(sigma2)
    return _variance_direct(s2) if s2 <= _DIRECT_UP_TO else _variance_dual(s2)
