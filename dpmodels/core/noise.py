"""Noise mechanisms: the double-geometric (discrete Laplace) and Laplace distributions, and noisy
integers under the exact discrete Gaussian (:func:`noisy_gaussian_integers`, :mod:`dpmodels.core.gaussian`).

``double_geometric`` is the exact sampler of :mod:`dpmodels.core.samplers` (integer
arithmetic on raw random words; a scale it cannot represent exactly is refused).  The
continuous ``laplace`` draws in floating point and is kept for research comparisons only:
release paths use the discrete samplers.

A noise scale is ``lambda = sensitivity / epsilon``; both mechanisms then satisfy
epsilon-DP for a query of that L1 sensitivity.  Scales and budgets are kept as exact
``Fraction`` values (parsed from the decimal the user typed), because quantities such
as the truncation width ``3 * ceil(2 lambda^2)`` jump at integers and binary floating
point puts ``6 / 0.1`` just below 60.

All randomness comes from a ``numpy.random.Generator``; pass one or a seed
(:func:`dpmodels.core.randomness.make_rng`: no seed draws from the secure generator).
"""

from __future__ import annotations

import math
import re
import sys
from fractions import Fraction
from numbers import Real

import numpy as np

from .errors import PrivacyParameterError
from .gaussian import discrete_gaussian
from .randomness import make_rng
from .samplers import discrete_laplace

__all__ = [
    "make_rng",
    "exact",
    "float_up",
    "parse_number",
    "as_epsilon",
    "noise_scale",
    "double_geometric",
    "noisy_integers",
    "check_noise_range",
    "check_gaussian_range",
    "noisy_gaussian_integers",
    "NOISE_BOUND",
    "EXACT_RANGE",
    "double_geometric_pmf",
    "double_geometric_variance",
    "laplace",
    "laplace_pdf",
    "truncation_delta",
]


#: A number as a user types it: a decimal (``0.5``, ``1e-3``, ``+2``) or a ratio of integers
#: (``1/3``).  Python's own parsers also accept ``1_0`` (as 10), ``inf``, ``nan`` and surrounding
#: blanks; a privacy parameter is read by this grammar only.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?\d+/\d+")


def parse_number(text: str, field: str) -> Fraction:
    """``text`` read exactly as a decimal or a ratio of integers (see :data:`_NUMBER`), else refused.

    Parameters
    ----------
    text
        What the user typed, e.g. ``"0.1"``, ``"1e-3"`` or ``"1/3"``.
    field
        The parameter's name, used in the error.
    """
    if not _NUMBER.fullmatch(text):
        raise PrivacyParameterError(
            field, f"must be a decimal number such as 0.5 or 1e-3, or a ratio such as 1/3; got {text!r}"
        )
    try:
        return Fraction(text)
    except ZeroDivisionError as err:
        raise PrivacyParameterError(field, f"divides by zero: {text!r}") from err


def exact(value, field: str) -> Fraction:
    """``value`` as an exact Fraction; floats are read as the decimal they print as (0.1 -> 1/10),
    strings by :func:`parse_number`."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool) or not isinstance(value, Real | str):
        raise PrivacyParameterError(field, f"must be a real number, got {value!r}")
    if isinstance(value, str):
        return parse_number(value.strip(), field)
    try:
        frac = Fraction(repr(float(value))) if isinstance(value, float) else Fraction(value)
    except (ValueError, ZeroDivisionError, OverflowError) as err:
        raise PrivacyParameterError(field, f"is not a finite number: {value!r}") from err
    return frac


def float_up(value) -> float:
    """The smallest float >= ``value`` (a Fraction or int; floats and infinities pass through).

    A privacy loss shown as a float must never read lower than the exact one: ``float(Fraction)``
    rounds to nearest, which is one ulp low about half the time (``float(Fraction(1, 10))`` is
    0.1000000000000000055..., above; ``float(Fraction(2, 3))`` is below)."""
    if isinstance(value, float):
        return value
    nearest = float(value)
    return math.nextafter(nearest, math.inf) if Fraction(nearest) < value else nearest


def as_epsilon(epsilon, field: str = "epsilon") -> Fraction:
    """Validate a privacy budget: finite, strictly positive, and a normal float64 when rounded
    (between about 2.2e-308 and 1.8e308), so that no later float conversion silently gives 0 or inf.

    Parameters
    ----------
    epsilon
        A Fraction, an int, a float (read as the decimal it prints as) or a string (:func:`parse_number`).
    field
        The parameter's name, used in errors.
    """
    if isinstance(epsilon, float) and not math.isfinite(epsilon):
        raise PrivacyParameterError(field, f"must be finite and > 0, got {epsilon!r}")
    eps = exact(epsilon, field)
    if eps <= 0:
        raise PrivacyParameterError(field, f"must be > 0, got {epsilon!r}")
    if eps > _FLOAT_MAX:
        raise PrivacyParameterError(field, f"{_short_number(epsilon)} is too large: at most {sys.float_info.max:.3g}")
    if eps < _FLOAT_TINY:
        raise PrivacyParameterError(field, f"{_short_number(epsilon)} is too small: at least {sys.float_info.min:.3g}")
    return eps


_FLOAT_MAX = Fraction(sys.float_info.max)
_FLOAT_TINY = Fraction(sys.float_info.min)


def _short_number(value) -> str:
    text = str(value)
    return text if len(text) <= 30 else text[:27] + "..."


def noise_scale(sensitivity, epsilon, field: str = "epsilon") -> Fraction:
    """The scale ``lambda = sensitivity / epsilon`` that makes Laplace/geometric noise epsilon-DP."""
    sens = exact(sensitivity, "sensitivity")
    if sens <= 0:
        raise PrivacyParameterError("sensitivity", f"must be > 0, got {sensitivity!r}")
    return sens / as_epsilon(epsilon, field)


def _positive_scale(scale) -> float:
    value = float(exact(scale, "scale"))
    if not value > 0 or not math.isfinite(value):
        raise PrivacyParameterError("scale", f"must be finite and > 0, got {scale!r}")
    return value


def double_geometric(scale, size, rng=None) -> np.ndarray:
    """Draws of the double-geometric law ``P(X=v) = (1-a)/(1+a) a^|v|`` with ``a = exp(-1/scale)``.

    Sampled exactly (:func:`dpmodels.core.samplers.discrete_laplace`) for the scale read as an
    exact fraction (a float as the decimal it prints as, like every budget here).
    """
    return discrete_laplace(exact(scale, "scale"), size, make_rng(rng))


#: Every exact integer draw at ``scale`` is below ``NOISE_BOUND * scale`` in magnitude: the
#: samplers draw ``(U + t V) // s`` with ``U < t`` and ``V <= 255`` (a larger ``V``, probability
#: ``e^-256``, is refused, never wrapped), so ``|noise| < 256 t / s = 256 scale``.
NOISE_BOUND = 256
#: Noisy integer measurements stay within ``(-2^53, 2^53)``: every such integer is a float64, so
#: whatever post-processing does in floating point starts from the exact noisy value.
EXACT_RANGE = 2**53


def check_noise_range(scale, field: str = "epsilon") -> Fraction:
    """``scale`` if every draw at it keeps a noisy count exact, else refuse naming ``field``.

    The noise stays below ``2^52`` (``NOISE_BOUND * scale <= 2^52``), so a true count below
    ``2^52`` plus its noise is an integer of the exact range :data:`EXACT_RANGE`.  A wider noise
    would force rounding somewhere, and a rounded sum of truth and noise can reveal the truth
    (float64 double rounding: at eps = 2e-16 one count gave outputs = 2 mod 4, its neighbour never).
    """
    lam = exact(scale, "scale")
    if NOISE_BOUND * lam > EXACT_RANGE // 2:
        raise PrivacyParameterError(
            field,
            f"{float(lam):.6g} could draw noise of magnitude up to "
            f"{float(NOISE_BOUND * lam):.3g}, beyond the exact integer range 2^52 ~ {float(EXACT_RANGE // 2):.3g} "
            "of a noisy count (the sum would be rounded and could reveal the true count): pick a larger epsilon",
        )
    return lam


def noisy_integers(truth, scale, rng=None) -> np.ndarray:
    """``truth + Z`` in int64 arithmetic, ``Z`` exact double-geometric noise at ``scale``.

    ``truth`` must hold integers of magnitude below ``2^52`` and ``scale`` must pass
    :func:`check_noise_range`; both are checked before anything is drawn.  The result is exact
    (no float ever holds a sum of truth and noise) and lies in ``(-2^53, 2^53)``, so converting it
    to float64 later is exact too.
    """
    lam = check_noise_range(scale)
    values = _integer_truth(truth)
    values += discrete_laplace(lam, values.shape, make_rng(rng))
    return values


def _integer_truth(truth) -> np.ndarray:
    """A copy of ``truth`` as int64, refused unless every value is an integer below ``2^52`` in magnitude."""
    values = np.asarray(truth)
    if values.size and not np.issubdtype(values.dtype, np.integer):
        as_int = values.astype(np.int64)
        if not np.array_equal(as_int, values):
            raise PrivacyParameterError("truth", "noisy integer measurements need integer true values")
        values = as_int
    values = values.astype(np.int64, copy=True)
    if values.size and int(np.abs(values).max()) >= EXACT_RANGE // 2:
        raise PrivacyParameterError("truth", "a true value of magnitude >= 2^52 is outside the exact range")
    return values


def check_gaussian_range(sigma2, field: str = "rho") -> Fraction:
    """``sigma2`` (exact) if every discrete Gaussian draw at it keeps a noisy count exact, else refuse naming ``field``.

    The sampler keeps draws of a discrete Laplace of scale ``t = floor(sigma) + 1``, each below
    ``NOISE_BOUND * t`` in magnitude (:mod:`dpmodels.core.gaussian`); ``NOISE_BOUND * t <= 2^52``
    keeps a true count below ``2^52`` plus its noise inside :data:`EXACT_RANGE`, as for
    :func:`check_noise_range` (``sigma2`` below about ``2.8e26``).
    """
    var = exact(sigma2, "sigma2")
    if var <= 0:
        raise PrivacyParameterError("sigma2", f"must be > 0, got {sigma2!r}")
    t = math.isqrt(var.numerator * var.denominator) // var.denominator + 1
    if NOISE_BOUND * t > EXACT_RANGE // 2:
        raise PrivacyParameterError(
            field,
            f"gives sigma^2 = {float(var):.6g}, whose draws can reach {float(NOISE_BOUND * t):.3g}, beyond the exact "
            f"integer range 2^52 ~ {float(EXACT_RANGE // 2):.3g} of a noisy count (the sum would be rounded and "
            "could reveal the true count): pick a larger rho",
        )
    return var


def noisy_gaussian_integers(truth, sigma2, rng=None) -> np.ndarray:
    """``truth + Z`` in int64 arithmetic, ``Z`` exact discrete Gaussian noise at variance parameter ``sigma2``.

    ``truth`` must hold integers of magnitude below ``2^52`` and ``sigma2`` must pass
    :func:`check_gaussian_range`; both are checked before anything is drawn.  The draws are
    :func:`dpmodels.core.gaussian.discrete_gaussian` (Canonne, Kamath and Steinke 2020, Alg. 3).
    """
    var = check_gaussian_range(sigma2)
    values = _integer_truth(truth)
    values += discrete_gaussian(var, values.shape, make_rng(rng))
    return values


def double_geometric_pmf(values, scale) -> np.ndarray:
    """Exact probability mass of the double-geometric law at integer ``values``."""
    lam = _positive_scale(scale)
    alpha = math.exp(-1.0 / lam)
    v = np.abs(np.asarray(values, dtype=np.float64))
    return (1 - alpha) / (1 + alpha) * np.power(alpha, v)


def double_geometric_variance(scale) -> float:
    """``Var X = 2 a / (1 - a)^2``, about ``2 scale^2 - 1/6`` for large scales."""
    lam = _positive_scale(scale)
    alpha = math.exp(-1.0 / lam)
    return 2 * alpha / (-math.expm1(-1.0 / lam)) ** 2


def laplace(scale, size, rng=None) -> np.ndarray:
    """Draws of the Laplace law with density ``exp(-|x|/scale) / (2 scale)``, in floating point.

    Research comparisons only: floating-point Laplace leaks through its low bits (Mironov
    2012), so release paths refuse it and use :func:`double_geometric`.
    """
    lam = _positive_scale(scale)
    return make_rng(rng).laplace(0.0, lam, size=size)


def laplace_pdf(x, scale) -> np.ndarray:
    lam = _positive_scale(scale)
    return np.exp(-np.abs(np.asarray(x, dtype=np.float64)) / lam) / (2 * lam)


def truncation_delta(scale, multiplier: int = 3) -> int:
    """The paper's domain half-width ``3 * ceil(2 lambda^2)`` ("three times the variance").

    Computed in exact rational arithmetic (see module docstring).
    """
    lam = exact(scale, "scale")
    if lam <= 0:
        raise PrivacyParameterError("scale", f"must be > 0, got {scale!r}")
    if multiplier <= 0:
        raise PrivacyParameterError("multiplier", f"must be > 0, got {multiplier!r}")
    return int(multiplier * math.ceil(2 * lam * lam))
