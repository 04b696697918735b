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

Charges are kept exactly as well: the step functions return Fractions (``eps`` read as the
decimal it prints as, a Fraction as itself), so :meth:`PrivacyAccountant.basic_exact` is the
rational total a :class:`~dpmodels.core.session.PrivacySession` adds (``0.1 + 0.1 + 0.1`` is
``3/10``, not ``0.30000000000000004``).  The accountant also records where the mechanism's
randomness came from (:attr:`PrivacyAccountant.randomness`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from dpmodels.core.errors import PrivacyParameterError
from dpmodels.core.noise import exact
from dpmodels.core.randomness import SECURE_SOURCE, describe
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
    "Charge",
    "PrivacyAccountant",
]


class NonPrivateComponentError(PrivacyParameterError):
    """A component that reads private data without a privacy guarantee was used in private mode."""


def check_epsilon(epsilon, field: str = "epsilon") -> float:
    """``epsilon`` as a float in ``[0, inf]`` (``inf``: the non-private limit, ``0``: uniform)."""
    if isinstance(epsilon, bool):
        raise PrivacyParameterError(field, f"must be a number, got {epsilon!r}")
    try:
        eps = float(epsilon)
    except (TypeError, ValueError) as err:
        raise PrivacyParameterError(field, f"must be a number, got {epsilon!r}") from err
    if math.isnan(eps) or eps < 0:
        raise PrivacyParameterError(field, f"must be >= 0 (0: uniform, inf: non-private), got {epsilon!r}")
    return eps


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
    eps = check_epsilon(epsilon)
    return eps if math.isinf(eps) else exact(epsilon, "epsilon")


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


@dataclass(frozen=True)
class Charge:
    """One mechanism call: what, its epsilon and delta (floats), and both as exact rationals."""

    name: str
    epsilon: float
    delta: float = 0.0
    exact_epsilon: Fraction | float | None = None  # None: read from ``epsilon``'s decimal
    exact_delta: Fraction | None = None

    def exact(self) -> tuple[Fraction | float, Fraction]:
        """``(epsilon, delta)`` exactly: the recorded Fractions, else the floats' decimals."""
        eps = self.exact_epsilon if self.exact_epsilon is not None else exact_epsilon(self.epsilon)
        return eps, self.exact_delta if self.exact_delta is not None else exact(self.delta, "delta")


@dataclass
class PrivacyAccountant:
    """Ledger of per-step charges; ``private=True`` refuses non-private components.

    ``randomness`` is :func:`~dpmodels.core.randomness.describe` of the mechanism's stream (set by
    :meth:`note_randomness`; a seeded run marks the ledger not private for good)."""

    private: bool = True
    charges: list[Charge] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    randomness: str = ""

    def charge(self, name: str, epsilon, delta=0.0) -> None:
        """Record one step; ``epsilon`` and ``delta`` may be Fractions (kept exactly) or floats."""
        eps = check_epsilon(epsilon)
        if not 0 <= delta < 1:
            raise PrivacyParameterError("delta", f"must be in [0, 1), got {delta}")
        self.charges.append(Charge(name, eps, float(delta), exact_epsilon(epsilon), exact(delta, "delta")))

    def note_randomness(self, rng) -> None:
        """Record the source of ``rng``; once a seeded (not private) stream is noted it stays noted."""
        if self.randomness in ("", SECURE_SOURCE):
            self.randomness = describe(rng)

    def require_private(self, component: str, diagnostic: bool = False) -> None:
        """Refuse ``component`` (it reads private data without noise) in private mode.

        ``diagnostic=True`` allows it when its result is reported only and never feeds an output.
        """
        if diagnostic:
            self.diagnostics.append(component)
            return
        if self.private:
            raise NonPrivateComponentError(
                "component",
                f"{component} reads the private data without a privacy guarantee; it is refused in private mode "
                "(use the private algorithm, or pass diagnostic=True for a report that never feeds the output)",
            )

    # ---------------------------------------------------------------- totals
    @property
    def steps(self) -> int:
        return len(self.charges)

    def basic(self) -> tuple[float, float]:
        """Basic composition: ``(sum eps_i, sum delta_i)``."""
        return sum(c.epsilon for c in self.charges), sum(c.delta for c in self.charges)

    def basic_exact(self) -> tuple[Fraction | float, Fraction]:
        """:meth:`basic` in exact arithmetic (``inf`` if a diagnostic step was charged ``inf``)."""
        pairs = [c.exact() for c in self.charges]
        return sum((e for e, _ in pairs), Fraction(0)), sum((d for _, d in pairs), Fraction(0))

    def zcdp(self, delta_prime: float) -> tuple[float, float]:
        """Bun-Steinke: ``eps_i``-DP is ``eps_i^2/2``-zCDP; ``rho``-zCDP is ``(rho + 2 sqrt(rho ln 1/d'), d')``."""
        _check_delta_prime(delta_prime)
        rho = sum(0.5 * c.epsilon**2 for c in self.charges)
        eps = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta_prime))
        return eps, delta_prime + sum(c.delta for c in self.charges)

    def drv(self, delta_prime: float) -> tuple[float, float]:
        """Dwork-Rothblum-Vadhan with ``eps0 = max eps_i``: ``eps0 sqrt(2k ln 1/d') + k eps0 (e^eps0 - 1)``."""
        _check_delta_prime(delta_prime)
        k = self.steps
        eps0 = max((c.epsilon for c in self.charges), default=0.0)
        delta0 = max((c.delta for c in self.charges), default=0.0)
        eps = eps0 * math.sqrt(2 * k * math.log(1.0 / delta_prime)) + k * eps0 * math.expm1(eps0)
        return eps, delta_prime + k * delta0

    def total(self, delta_prime: float | None = None) -> tuple[float, float]:
        """The smallest valid ``(eps, delta)`` bound: basic, or with ``delta_prime`` also zCDP and DRV
        (the minimum epsilon among the bounds; its delta comes with it)."""
        bounds = [self.basic()]
        if delta_prime is not None:
            bounds += [self.zcdp(delta_prime), self.drv(delta_prime)]
        return min(bounds, key=lambda b: (b[0], b[1]))

    def summary(self, delta_prime: float | None = None) -> dict:
        eps, delta = self.total(delta_prime)
        basic = self.basic()
        return {
            "steps": self.steps,
            "basic_epsilon": basic[0],
            "basic_delta": basic[1],
            "epsilon": eps,
            "delta": delta,
            "diagnostics": list(self.diagnostics),
            "randomness": self.randomness,
        }


def _check_delta_prime(delta_prime: float) -> None:
    if not 0 < delta_prime < 1:
        raise PrivacyParameterError("delta_prime", f"must be in (0, 1), got {delta_prime}")
