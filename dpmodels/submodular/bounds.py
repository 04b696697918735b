"""Theorem-bound calculators for reports (spec 4, 9.12): the paper's bounds in pre-asymptotic form.

The paper assumes ``F_D`` in ``[0, 1]``; here every bound takes ``M_F`` (``max F``) explicitly (A9).
These are the [D] concrete forms of spec 4 with the errata applied (A11: ``C sqrt(rho)``; A12: the
EM range of Alg. 3 is ``Lambda x [k]``).  Nothing here feeds an algorithm.
"""

from __future__ import annotations

import math

__all__ = [
    "em_gap",
    "continuous_greedy_discrete_bound",
    "thm33_bound",
    "alg3_bound",
    "alg4_step_gap",
    "nominal_privacy",
]


def em_gap(inv_temp: float, n_candidates: int, beta: float) -> float:
    """Thm 2.8: with probability ``>= 1 - beta`` the EM's score is within ``ln(|R|/beta) / eps'`` of the max."""
    return math.log(n_candidates / beta) / inv_temp


def continuous_greedy_discrete_bound(opt: float, T: int, r: int, max_value: float, eta: float = 0.0) -> float:
    """[D] ``f(x_T) >= (1 - (1 - 1/T)^T)(OPT - eta) - M_F r^2 / (2T)`` (``eta``: per-step direction error)."""
    return (1 - (1 - 1 / T) ** T) * (opt - eta) - max_value * r**2 / (2 * T)


def thm33_bound(
    opt: float, n: int, rho: float, log_cover_size: float, epsilon: float, sensitivity: float, max_value: float = 1.0
) -> float:
    """Thm 3.3 pre-asymptotic (continuous time): ``(1 - 1/e)(OPT - 4 |E|^{1/4} sqrt(rho) M_F
    - (2 Delta / eps) ln(|E|^2 |C|))``, with probability ``>= 1 - T/|E|^2``."""
    cover_term = 4 * n**0.25 * math.sqrt(rho) * max_value
    em_term = 2 * sensitivity / epsilon * (2 * math.log(n) + log_cover_size)
    return (1 - 1 / math.e) * (opt - cover_term - em_term)


def alg3_bound(opt: float, r: int, k: int, n: int, epsilon: float, sensitivity: float) -> tuple[float, float]:
    """[D] Thm 5.3: ``F(x) >= OPT/2 - (r Delta / eps) ln(k |E|^3)`` with probability ``>= 1 - r/|E|^2``;
    returns (bound, failure probability)."""
    return opt / 2 - r * sensitivity / epsilon * math.log(k * n**3), r / n**2


def alg4_step_gap(epsilon: float, sensitivity: float, r: int, lam_size: int, gamma: float) -> float:
    """Thm 5.6 per-step gap ``(2 Delta / eps) ln(r |Lambda| / gamma)``."""
    return 2 * sensitivity / epsilon * math.log(r * lam_size / gamma)


def nominal_privacy(algorithm: str, epsilon: float, r: int) -> float:
    """The paper's nominal privacy (Thm 1.1, 3.5, 4.6: ``eps r^2``; Thm 5.4/5.5: ``eps r``); the
    accountant's exact values are ``2 eps r T`` and ``eps r`` (A6)."""
    if algorithm in ("alg1", "alg2"):
        return epsilon * r**2
    if algorithm in ("alg3", "alg4", "mitrovic"):
        return epsilon * r
    raise ValueError(f"algorithm: unknown {algorithm!r}; one of alg1, alg2, alg3, alg4, mitrovic")
