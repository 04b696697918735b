"""Exact samplers: integer arithmetic on raw random words, never floating point.

Floating-point Laplace, geometric and Gumbel draws leak through their low bits (Mironov
2012), and numpy's geometric saturates at ``INT64_MAX`` for tiny epsilon (two saturated
draws subtract to zero noise).  Every sampler here consumes only the 64-bit words of the
Generator's bit generator (``random_raw``) and integer comparisons, following Canonne,
Kamath and Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020):

* :func:`bernoulli_exp` - ``Bernoulli(exp(-num/den))`` for rational exponents (their Alg. 1);
* :func:`discrete_laplace` - ``P(Z=z) ~ exp(-|z|/scale)`` for a rational scale (Alg. 2);
* :func:`discrete_gaussian` - ``P(Z=z) ~ exp(-z^2/(2 sigma^2))`` for rational ``sigma^2`` (Alg. 3),
  defined with its law (:func:`discrete_gaussian_pmf`, ``_cdf``, ``_variance``) in
  :mod:`dpmodels.core.gaussian` and re-exported here.

The loops are vectorized over the draws still undecided; each is a sequence of independent
trials, so accepting the first success per draw keeps the law exact.  The same bit stream
gives the same integers on every platform and numpy version.  Scales must be exact
fractions whose numerator and denominator stay below :data:`EXACT_LIMIT` (so that all
intermediate integers fit in int64); anything else is refused with an error naming it.  The
Gaussian's variance is not so limited (its acceptance test runs on 64-bit limbs when needed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .errors import PrivacyParameterError
from .lazy import lazy_exports

#: The discrete Gaussian and its law live in :mod:`dpmodels.core.gaussian`, which builds on this
#: module; they are re-exported here, imported on first use (see the end of this module).
_GAUSSIAN = ("discrete_gaussian", "discrete_gaussian_pmf", "discrete_gaussian_cdf", "discrete_gaussian_variance")

__all__ = [
    "EXACT_LIMIT",
    "positive_fraction",
    "exact_fraction",
    "uniform_below",
    "uniform_below_int",
    "raw_words",
    "bernoulli_exp",
    "bernoulli_exp_scalar",
    "discrete_laplace",
    "in_chunks",
    "DRAW_CHUNK",
    *_GAUSSIAN,
]

EXACT_LIMIT = 2**55  # numerators and denominators of scales; leaves 8 bits of headroom in int64
_K_CAP = 127  # Alg. 1's counter: den * K < 2^63; P(K > 127) = 1/127! (handled exactly anyway)
_V_CAP = 255  # geometric part of Alg. 2: t * V < 2^63; P(V > 255) = e^-256 (refused, never wrapped)
#: Draws per pass of the vectorised samplers: the rejection loops keep about a dozen arrays of the
#: draws' length alive, so a large request is drawn in chunks of this many (independent draws, so the
#: law is the same; a request at most this long reads the generator exactly as before).  Measured:
#: one county of the largest state (24 million block cells) peaked at 2.9 GB in TopDown's measurement.
DRAW_CHUNK = 2**20


def positive_fraction(value, field: str) -> Fraction:
    """``value`` (int, Fraction, decimal string, or float read exactly) as a positive Fraction.

    Parameters
    ----------
    value : int, Fraction, str or float
        The number; a float is read exactly (``0.1`` is ``3602879701896397/2^55``).
    field : str
        The parameter named in errors.
    """
    if isinstance(value, bool):
        raise PrivacyParameterError(field, f"must be a positive number, got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PrivacyParameterError(field, f"must be finite and > 0, got {value!r}")
        value = Fraction(*value.as_integer_ratio())
    try:
        frac = Fraction(value)
    except (TypeError, ValueError):
        raise PrivacyParameterError(field, f"must be a rational number, got {value!r}") from None
    if frac <= 0:
        raise PrivacyParameterError(field, f"must be > 0, got {value!r}")
    return frac


def exact_fraction(value, field: str) -> Fraction:
    """``value`` (int, Fraction, or float read exactly) as a positive Fraction within :data:`EXACT_LIMIT`."""
    frac = positive_fraction(value, field)
    if frac.numerator >= EXACT_LIMIT or frac.denominator >= EXACT_LIMIT:
        raise PrivacyParameterError(
            field,
            f"{float(frac):.6g} (= {_short(frac)}) cannot be sampled exactly: its numerator and denominator "
            f"must be below 2^55 ~ {float(EXACT_LIMIT):.3g} (a smaller epsilon than this would give noise "
            "wider than any int64 answer; pick a larger epsilon)",
        )
    return frac


def _short(frac: Fraction) -> str:
    text = str(frac)
    return text if len(text) < 60 else text[:57] + "..."


# ----------------------------------------------------------------------------- raw words and uniforms
def raw_words(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` raw 64-bit words of ``rng``'s bit generator.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator whose bit generator is read.
    size : int
        The number of words.
    """
    return np.asarray(rng.bit_generator.random_raw(size), dtype=np.uint64)


def _smear(x: np.ndarray) -> np.ndarray:
    """Every bit below the highest set bit of ``x`` set: the mask of ``bit_length(x)`` ones."""
    x = x.astype(np.uint64)
    for shift in (1, 2, 4, 8, 16, 32):
        x |= x >> np.uint64(shift)
    return x


def uniform_below(high, rng: np.random.Generator, size=None) -> np.ndarray:
    """Uniform integers in ``[0, high)`` (``1 <= high < 2^63``, scalar or array) by masked rejection.

    One bound (the common case) keeps a scalar mask and bound instead of per-element arrays;
    both read the same words.
    """
    high = np.asarray(high, dtype=np.int64)
    shape = tuple(np.atleast_1d(size)) if size is not None else high.shape
    n = int(np.prod(shape))
    if high.ndim and size is not None:
        high = np.broadcast_to(high, shape)
    bound = high if high.ndim == 0 else high.ravel()
    if bound.size and bound.min() < 1:
        raise PrivacyParameterError("high", "uniform_below needs bounds >= 1")
    mask = _smear(bound - 1)
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    take = (lambda a: a) if bound.ndim == 0 else (lambda a: a[todo])  # the undecided entries' mask and bound
    while todo.size:
        draw = (raw_words(rng, todo.size) & take(mask)).astype(np.int64)
        ok = draw < take(bound)
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out.reshape(shape)


def uniform_below_int(high: int, rng: np.random.Generator) -> int:
    """One uniform integer in ``[0, high)`` for a Python int of any size (rejection on whole words).

    Parameters
    ----------
    high : int
        The exclusive upper bound, ``>= 1``.
    rng : numpy.random.Generator
        The generator whose raw words are read.
    """
    bits = (high - 1).bit_length()
    words = max(1, -(-bits // 64))
    while True:
        value = 0
        for word in raw_words(rng, words):
            value = (value << 64) | int(word)
        value &= (1 << bits) - 1
        if value < high:
            return value


# ----------------------------------------------------------------------------- Bernoulli(exp(-gamma))
def bernoulli_exp(num, den, rng: np.random.Generator) -> np.ndarray:
    """Exact ``Bernoulli(exp(-num/den))`` per element for int arrays ``num >= 0``, ``1 <= den < 2^55``.

    ``exp(-g) = exp(-1)^floor(g) * exp(-frac(g))``: one Alg.-1 trial for the fraction and
    ``floor(g)`` trials of ``exp(-1)``, stopping at the first failure.
    """
    num, den = np.broadcast_arrays(np.asarray(num, dtype=np.int64), np.asarray(den, dtype=np.int64))
    num, den = num.ravel(), den.ravel()
    whole, frac = np.divmod(num, den)
    out = _bernoulli_exp_unit(frac, den, rng)
    alive = np.flatnonzero(out & (whole > 0))
    step = 0
    while alive.size:
        ones = np.ones(alive.size, dtype=np.int64)
        ok = _bernoulli_exp_unit(ones, ones, rng)
        out[alive[~ok]] = False
        step += 1
        alive = alive[ok & (whole[alive] > step)]
    return out


def _bernoulli_exp_unit(num: np.ndarray, den: np.ndarray, rng) -> np.ndarray:
    """Alg. 1 of Canonne-Kamath-Steinke for ``gamma = num/den`` in ``[0, 1]``: ``P(K odd) = exp(-gamma)``.

    K starts at 1 and grows while ``Bernoulli(gamma / K)`` succeeds.
    """
    k = np.ones(num.size, dtype=np.int64)
    active = np.flatnonzero(num > 0)
    while active.size:
        if k[active[0]] >= _K_CAP:  # every active entry has the same K
            for i in active:
                k[i] = _unit_counter_int(int(num[i]), int(den[i]), int(k[i]), rng)
            break
        success = uniform_below(den[active] * k[active], rng) < num[active]
        k[active[success]] += 1
        active = active[success]
    return (k % 2) == 1


def _unit_counter_int(num: int, den: int, k: int, rng) -> int:
    """Continue Alg. 1's counter from ``k`` with Python integers (reached with probability 1/127!)."""
    while uniform_below_int(den * k, rng) < num:
        k += 1
    return k


def bernoulli_exp_scalar(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Exact ``Bernoulli(exp(-gamma))`` for one Fraction ``gamma >= 0`` of any size (Python integers)."""
    gamma = Fraction(gamma)
    if gamma < 0:
        raise PrivacyParameterError("gamma", f"must be >= 0, got {gamma}")
    whole = math.floor(gamma)
    frac = gamma - whole
    if _unit_counter_int(frac.numerator, frac.denominator, 1, rng) % 2 == 0:
        return False
    for _ in range(whole):
        if _unit_counter_int(1, 1, 1, rng) % 2 == 0:
            return False
    return True


# ----------------------------------------------------------------------------- discrete Laplace
def discrete_laplace(scale, size, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of ``P(Z=z) = (1-a)/(1+a) a^|z|``, ``a = exp(-1/scale)`` (Alg. 2 of Canonne et al.).

    With ``scale = t/s``: ``U`` uniform in ``[0, t)`` kept with probability ``exp(-U/t)``, ``V``
    geometric with ratio ``exp(-1)``, ``X = U + tV`` (geometric with ratio ``exp(-1/t)``),
    ``Y = floor(X/s)``, a random sign, and ``-0`` rejected.
    """
    lam = exact_fraction(scale, "scale")
    t, s = lam.numerator, lam.denominator
    n = int(np.prod(size)) if np.ndim(size) else int(size)
    return in_chunks(lambda k: _discrete_laplace(t, s, k, rng), n).reshape(size)


def in_chunks(draw, n: int) -> np.ndarray:
    """``n`` int64 draws made by ``draw(k)`` in chunks of at most :data:`DRAW_CHUNK` (one call when ``n``
    is no longer), concatenated in order."""
    if n <= DRAW_CHUNK:
        return draw(n)
    out = np.empty(n, dtype=np.int64)
    for a in range(0, n, DRAW_CHUNK):
        b = min(a + DRAW_CHUNK, n)
        out[a:b] = draw(b - a)
    return out


def _discrete_laplace(t: int, s: int, n: int, rng) -> np.ndarray:
    """``n`` draws of Alg. 2 at scale ``t/s`` (one pass of :func:`discrete_laplace`)."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        u = uniform_below(t, rng, size=todo.size)
        keep = bernoulli_exp(u, np.int64(t), rng)
        u, slots = u[keep], todo[keep]
        y = (u + t * _geometric_exp1(u.size, rng)) // s
        sign = (raw_words(rng, u.size) & np.uint64(1)).astype(bool)
        ok = ~(sign & (y == 0))
        out[slots[ok]] = np.where(sign[ok], -y[ok], y[ok])
        done = np.zeros(todo.size, dtype=bool)
        done[np.flatnonzero(keep)[ok]] = True
        todo = todo[~done]
    return out


def _geometric_exp1(n: int, rng) -> np.ndarray:
    """Number of successes of ``Bernoulli(exp(-1))`` before the first failure, for ``n`` draws."""
    v = np.zeros(n, dtype=np.int64)
    alive = np.arange(n)
    ones = np.ones(n, dtype=np.int64)
    while alive.size:
        success = _bernoulli_exp_unit(ones[: alive.size], ones[: alive.size], rng)
        v[alive[success]] += 1
        alive = alive[success]
        if alive.size and v[alive[0]] > _V_CAP:
            raise OverflowError("geometric draw above 255 (probability e^-256): refusing to wrap int64")
    return v


__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_GAUSSIAN, "dpmodels.core.gaussian"), globals())
