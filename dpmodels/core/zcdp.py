"""Zero-concentrated DP (zCDP): conversions between pure epsilon, rho and (epsilon, delta), rounded up.

* Pure ``eps``-DP implies ``eps^2 / 2``-zCDP (Bun and Steinke 2016, Prop. 1.4): exact, a Fraction.
* ``rho``-zCDP implies ``(eps, delta)``-DP for every ``alpha > 1`` with (Canonne, Kamath and Steinke
  2020, Corollary 13; the conversion OpenDP's ``make_zCDP_to_approxDP`` uses)::

      eps = alpha rho + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1)

  :func:`epsilon_of_rho` picks ``alpha`` numerically (any ``alpha`` gives a valid bound), then
  evaluates the bound at that ``alpha`` in 60-digit decimal arithmetic and rounds **up**, so the
  epsilon reported is never below the true bound (a bound rounded to nearest can be too small).
* The weaker Bun-Steinke form ``rho + 2 sqrt(rho ln(1/delta))`` and the Dwork-Rothblum-Vadhan
  advanced composition are evaluated the same way (:func:`bun_steinke_epsilon`, :func:`drv_epsilon`),
  for the accountant's composition bounds.

Every result is an exact Fraction that is an upper bound of the real number it stands for.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

from .errors import PrivacyParameterError
from .noise import exact

__all__ = ["rho_of_epsilon", "epsilon_of_rho", "bun_steinke_epsilon", "drv_epsilon", "round_up"]

_DIGITS = 60  # working precision; results are rounded up to _KEPT significant digits
_KEPT = 17


def _context() -> decimal.Context:
    return decimal.Context(prec=_DIGITS, rounding=decimal.ROUND_HALF_EVEN)


def _dec(value) -> decimal.Decimal:
    frac = Fraction(value)
    ctx = _context()
    return ctx.divide(decimal.Decimal(frac.numerator), decimal.Decimal(frac.denominator))


def round_up(value: decimal.Decimal) -> Fraction:
    """A Fraction above ``value`` by more than its 60-digit working error, with 17 significant digits."""
    ctx = _context()
    if value == 0:
        return Fraction(0)
    margin = abs(value).scaleb(-(_DIGITS - 10))  # far above the few half-ulps the operations lost
    padded = ctx.add(value, margin)
    exponent = padded.adjusted() - (_KEPT - 1)
    ceiling = padded.quantize(decimal.Decimal(1).scaleb(exponent), rounding=decimal.ROUND_CEILING)
    return Fraction(ceiling)


def _check_delta(delta, field: str = "delta") -> Fraction:
    value = exact(delta, field)
    if not 0 < value < 1:
        raise PrivacyParameterError(field, f"must be in (0, 1), got {delta!r}")
    return value


def _check_rho(rho) -> Fraction:
    value = exact(rho, "rho")
    if value < 0:
        raise PrivacyParameterError("rho", f"must be >= 0, got {rho!r}")
    return value


def rho_of_epsilon(epsilon) -> Fraction:
    """The zCDP ``rho = eps^2 / 2`` implied by pure ``eps``-DP, exactly.

    Parameters
    ----------
    epsilon
        A pure-DP budget (read exactly: ``0.1`` is ``1/10``).
    """
    eps = exact(epsilon, "epsilon")
    if eps < 0:
        raise PrivacyParameterError("epsilon", f"must be >= 0, got {epsilon!r}")
    return eps * eps / 2


def _cks_at(rho: Fraction, delta: Fraction, alpha: Fraction) -> decimal.Decimal:
    ctx = _context()
    a, r = _dec(alpha), _dec(rho)
    am1 = ctx.subtract(a, 1)
    log_term = ctx.add(
        ctx.subtract(_dec(1 / delta).ln(ctx), a.ln(ctx)),
        ctx.multiply(am1, ctx.subtract(1, ctx.divide(1, a)).ln(ctx)),
    )
    return ctx.add(ctx.multiply(a, r), ctx.divide(log_term, am1))


def _cks_float(alpha: float, rho: float, log_inv_delta: float) -> float:
    return alpha * rho + (log_inv_delta + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)) / (alpha - 1)


def epsilon_of_rho(rho, delta) -> Fraction:
    """The smallest epsilon (rounded up) such that ``rho``-zCDP implies ``(eps, delta)``-DP (CKS 2020).

    Parameters
    ----------
    rho
        The zCDP parameter (read exactly).
    delta
        The target delta, in ``(0, 1)``.

    Returns
    -------
    Fraction
        An upper bound of ``min_alpha eps(alpha)``: the bound at a numerically chosen ``alpha``,
        evaluated in 60-digit decimals and rounded up to 17 significant digits.
    """
    r, d = _check_rho(rho), _check_delta(delta)
    if r == 0:
        return Fraction(0)
    rf, lf = float(r), math.log(1 / float(d))
    # the optimum lies near alpha = 1 + sqrt(ln(1/delta) / rho); search a bracket around it in log(alpha - 1)
    centre = math.log(math.sqrt(lf / rf))
    from scipy.optimize import minimize_scalar  # imported here: scipy.optimize takes ~0.6 s to import

    found = minimize_scalar(
        lambda t: _cks_float(1 + math.exp(t), rf, lf),
        bounds=(centre - 20, centre + 20),
        method="bounded",
        options={"xatol": 1e-12},
    )
    alpha = 1 + Fraction(math.exp(found.x))
    return max(round_up(_cks_at(r, d, alpha)), Fraction(0))  # a negative bound means (0, delta)-DP holds


def bun_steinke_epsilon(rho, delta) -> Fraction:
    """``rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016, Prop. 1.3), rounded up.

    Parameters
    ----------
    rho
        The zCDP parameter.
    delta
        The target delta, in ``(0, 1)``.
    """
    r, d = _check_rho(rho), _check_delta(delta)
    ctx = _context()
    root = ctx.multiply(_dec(r), _dec(1 / d).ln(ctx)).sqrt(ctx)
    return round_up(ctx.add(_dec(r), ctx.multiply(2, root)))


def drv_epsilon(epsilon0, k: int, delta) -> Fraction:
    """``eps0 sqrt(2 k ln(1/delta)) + k eps0 (e^eps0 - 1)`` (Dwork, Rothblum and Vadhan 2010), rounded up.

    Parameters
    ----------
    epsilon0
        The largest epsilon of the ``k`` composed steps.
    k
        The number of steps.
    delta
        The slack ``delta'`` in ``(0, 1)``.
    """
    e0, d = exact(epsilon0, "epsilon0"), _check_delta(delta)
    ctx = _context()
    e = _dec(e0)
    root = ctx.multiply(2 * k, _dec(1 / d).ln(ctx)).sqrt(ctx)
    growth = ctx.subtract(e.exp(ctx), 1)
    return round_up(ctx.add(ctx.multiply(e, root), ctx.multiply(ctx.multiply(k, e), growth)))
