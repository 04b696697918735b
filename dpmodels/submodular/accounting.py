"""Privacy accountant of the (k-)submodular algorithms (spec 1.6, 1.7, 3.0, A6, A8).

Every exponential-mechanism call is charged its exact per-step epsilon from the table of spec 1.7:

- Alg. 1 step (score ``<y, grad f>``, ``||y||_1 <= r``): ``2 eps r``;
- Alg. 2 step (quantised score, grid width ``w = ln(1+mu)``): ``2 eps r + eps w / Delta`` (A7 v);
- Alg. 3/4 step and Mitrovic's private greedy (score ``F(x + (e,i))`` after cancellation): ``eps``.

Totals: basic composition, and the corrected advanced composition (A8): zCDP (Bun-Steinke,
``rho = sum eps_i^2 / 2``, ``eps = rho + 2 sqrt(rho ln(1/delta'))``) and Dwork-Rothblum-Vadhan
(``eps0 sqrt(2k ln(1/delta')) + k eps0 (e^eps0 - 1)``); ``total`` reports the minimum valid bound.
In private mode, a non-private component (greedy on private data, an LP on the private gradient,
deterministic pipage rounding) is refused unless flagged as a diagnostic, and so is a mechanism
run at ``eps = inf`` (the exact argmax) or ``eps = 0`` (:func:`check_private_epsilon`).

The accountant is the core :class:`~dpmodels.core.accounting.PrivacyLedger` (one type for every
family; ``PrivacyAccountant`` is its name here).  Charges are kept exactly: the step functions
return Fractions (``eps`` read as the decimal it prints as, a Fraction as itself), so
``basic_exact()`` is the rational total a :class:`~dpmodels.core.session.PrivacySession` adds
(``0.1 + 0.1 + 0.1`` is ``3/10``, not ``0.30000000000000004``).  The ledger also records where the
mechanism's randomness came from (``randomness``).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpmodels.core.accounting import NonPrivateComponentError, PrivacyLedger, check_epsilon, step_epsilon
from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.noise import exact
from dpmodels.core.selection import as_rational

__all__ = [
    "NonPrivateComponentError",
    "check_epsilon",
    "check_private_epsilon",
    "exact_epsilon",
    "alg1_step_epsilon",
    "alg2_step_epsilon",
    "greedy_step_epsilon",
    "calibrate_alg1",
    "calibrate_greedy",
    "PrivacyAccountant",
]


def check_private_epsilon(epsilon, private: bool, field: str = "epsilon") -> float:
    """``epsilon`` of a mechanism run: a finite ``eps > 0`` when ``private``.

    ``eps = inf`` is the exact argmax, a deterministic function of the data with no privacy at
    all, and ``eps = 0`` ignores the data; both are limits for tests and diagnostics, so a private
    run refuses them (NaN and negatives are refused everywhere by :func:`check_epsilon`)."""
    eps = check_epsilon(epsilon, field)
    if private and not 0 < eps < math.inf:
        raise PrivacyParameterError(
            field,
            f"a private run needs a finite epsilon > 0, got {epsilon!r}; epsilon = inf (the exact argmax, "
            "no privacy) and 0 are allowed only on a non-private path: diagnostic=True, or a "
            "PrivacyAccountant(private=False)",
        )
    return eps


def exact_epsilon(epsilon) -> Fraction | float:
    """``epsilon`` as an exact Fraction (a float read as the decimal it prints as); ``inf`` stays ``inf``."""
    return step_epsilon(epsilon)


def alg1_step_epsilon(epsilon, r: int) -> Fraction | float:
    """Exact per-step privacy of Alg. 1: ``2 eps' * 2 Delta r = 2 eps r`` (spec 1.7)."""
    return 2 * exact_epsilon(epsilon) * r


def alg2_step_epsilon(epsilon, r: int, width, sensitivity) -> Fraction | float:
    """Exact per-step privacy of Alg. 2 with grid width ``ln(1+mu)``: ``2 eps r + eps width / Delta``.

    ``width`` is the float the scores are quantised with, read as the dyadic rational it is."""
    eps = exact_epsilon(epsilon)
    return 2 * eps * r + eps * as_rational(width, "width") / exact(sensitivity, "sensitivity")


def greedy_step_epsilon(epsilon, cancellation: bool = True) -> Fraction | float:
    """Per-step privacy of Alg. 3/4 and Mitrovic's greedy: ``eps`` (tight) or ``2 eps`` (naive)."""
    eps = exact_epsilon(epsilon)
    return eps if cancellation else 2 * eps


def calibrate_alg1(total_epsilon: float, T: int, r: int) -> float:
    """Budget first (spec 3.1 [S]): the paper-style input ``eps`` whose basic total ``2 eps r T`` is
    ``total_epsilon``."""
    total = check_epsilon(total_epsilon, "total_epsilon")
    if T < 1 or r < 1:
        raise PrivacyParameterError("T, r", f"need T >= 1 and r >= 1, got T={T}, r={r}")
    return total / (2.0 * r * T)


def calibrate_greedy(total_epsilon: float, r: int) -> float:
    """The input ``eps`` of Alg. 3/4 or Mitrovic's greedy whose basic total ``eps r`` is ``total_epsilon``."""
    total = check_epsilon(total_epsilon, "total_epsilon")
    if r < 1:
        raise PrivacyParameterError("r", f"need r >= 1, got {r}")
    return total / r


#: The submodular algorithms' accountant is the core ledger every family uses (one type):
#: each exponential mechanism is a :meth:`~dpmodels.core.accounting.PrivacyLedger.charge`.
PrivacyAccountant = PrivacyLedger
