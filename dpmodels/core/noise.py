"""Noise mechanisms: the double-geometric (discrete Laplace) and Laplace distributions.

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
from fractions import Fraction
from numbers import Real

import numpy as np

from .errors import PrivacyParameterError
from .randomness import make_rng
from .samplers import discrete_laplace

__all__ = [
    "make_rng",
    "exact",
    "as_epsilon",
    "noise_scale",
    "double_geometric",
    "double_geometric_pmf",
    "double_geometric_variance",
    "laplace",
    "laplace_pdf",
    "truncation_delta",
]


def exact(value, field: str) -> Fraction:
    """``value`` as an exact Fraction; floats are read as the decimal they print as (0.1 -> 1/10)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool) or not isinstance(value, Real | str):
        raise PrivacyParameterError(field, f"must be a real number, got {value!r}")
    try:
        frac = Fraction(repr(float(value))) if isinstance(value, float) else Fraction(value)
    except (ValueError, ZeroDivisionError) as err:
        raise PrivacyParameterError(field, f"is not a finite number: {value!r}") from err
    return frac


def as_epsilon(epsilon, field: str = "epsilon") -> Fraction:
    """Validate a privacy budget: finite and strictly positive."""
    if isinstance(epsilon, float) and not math.isfinite(epsilon):
        raise PrivacyParameterError(field, f"must be finite and > 0, got {epsilon!r}")
    eps = exact(epsilon, field)
    if eps <= 0:
        raise PrivacyParameterError(field, f"must be > 0, got {epsilon!r}")
    return eps


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
