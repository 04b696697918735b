"""Non-private algorithms: greedy, continuous greedy, rounding, k-greedy, brute-force OPT (spec 3.3, 3.6).

These read ``F_D`` without noise: given a private :class:`PrivacyAccountant` they refuse to run
(``diagnostic=True`` lets them run for reports).  Swap rounding and randomized pipage rounding
never query ``F`` and take their own rng, so they are private post-processing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from dpmodels.core.errors import DataValidationError
from dpmodels.core.noise import make_rng

from .accounting import PrivacyAccountant
from .data import KSubmodularFunction, SetFunction
from .matroids import Matroid, check_pair
from .objectives import SampledGradient, gradient, has_closed_form, multilinear
from .results import GreedyRelease, TrueDataDiagnostics, as_tuple, epsilon_spent
from .rounding import pipage_rounding, swap_rounding

__all__ = [
    "check_pair",
    "GreedyResult",
    "greedy",
    "ContinuousGreedyResult",
    "continuous_greedy",
    "gradient_oracle",
    "brute_force_opt",
    "k_greedy",
    "k_brute_force_opt",
]


def _guard(accountant: PrivacyAccountant | None, component: str, diagnostic: bool) -> None:
    if accountant is not None:
        accountant.require_private(component, diagnostic)


@dataclass
class GreedyResult:
    """A set (mask) or k-vector, the order it was built in and the oracle calls it took.

    :attr:`release` is what a private run publishes.  ``diagnostics`` holds ``F_D(S)``, evaluated
    on the true data: a report, never part of the release (``value`` is its read-only alias).

    Parameters
    ----------
    S : numpy.ndarray
        The set (mask) or k-vector.
    diagnostics : TrueDataDiagnostics
        ``F_D(S)`` (never published).
    calls : int
        Oracle calls.
    order : list, optional
        The elements (or pairs) in the order chosen.
    accountant : PrivacyAccountant, optional
        The ledger of a private run.
    info : dict, optional
        Public parameters of the run.
    """

    S: np.ndarray
    diagnostics: TrueDataDiagnostics
    calls: int
    order: list = field(default_factory=list)
    accountant: PrivacyAccountant | None = None
    info: dict = field(default_factory=dict)

    @property
    def value(self) -> float:
        """``F_D(S)`` on the true data: a diagnostic (``diagnostics.value``), not a private output."""
        return self.diagnostics.value

    @property
    def release(self) -> GreedyRelease:
        """The published output: ``S``, the order of the choices and the epsilon charged."""
        order = tuple(tuple(int(v) for v in o) if isinstance(o, tuple) else int(o) for o in self.order)
        return GreedyRelease(as_tuple(self.S), order, epsilon_spent(self.accountant))


def greedy(F: SetFunction, M: Matroid, accountant=None, diagnostic: bool = False) -> GreedyResult:
    """Matroid greedy: add the feasible element of largest marginal gain (ties: lowest index) until
    a base (1/2-approximation; 1 - 1/e for uniform matroids).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    accountant : PrivacyAccountant, optional
        A private accountant makes the run refuse (it reads F without noise).
    diagnostic : bool, default False
        Run anyway, for reports.

    Returns
    -------
    GreedyResult
    """
    check_pair(F, M)
    _guard(accountant, "greedy", diagnostic)
    start = F.calls
    S = np.zeros(F.n, bool)
    order = []
    current = F(S)
    for _ in range(M.r):
        best, best_gain, best_value = -1, -np.inf, current
        for e in M.extensions(S):
            S[e] = True
            value = F(S)
            S[e] = False
            if value - current > best_gain:
                best, best_gain, best_value = e, value - current, value
        S[best] = True
        order.append(best)
        current = best_value
    return GreedyResult(S, TrueDataDiagnostics(current), F.calls - start, order)


# ----------------------------------------------------------------------------- continuous greedy


def gradient_oracle(F: SetFunction, mode: str = "auto", samples: int | None = None, rng=None, kind: str = "partial"):
    """``x -> grad f(x)``: closed form / enumeration, or sampled with ``samples`` common random sets."""
    if mode == "sampled":
        if samples is None:
            raise DataValidationError("samples", "sampled gradients need a fixed sample count m")
        sampler = SampledGradient(samples, make_rng(rng))
        return lambda x: sampler(F, x, kind)
    return lambda x: gradient(F, x, mode, kind)


@dataclass
class ContinuousGreedyResult:
    """``x_T = (1/T) sum_t y_t`` with its directions (bases), value ``f(x_T)`` and counts.

    Parameters
    ----------
    x : numpy.ndarray
        ``x_T``.
    directions : list
        The directions (bases).
    value : float
        ``f(x_T)``.
    calls : int
        Oracle calls.
    S : numpy.ndarray, optional
        The rounded set.
    rounded_value : float, optional
        ``F(S)``.
    info : dict, optional
        Counters.
    """

    x: np.ndarray
    directions: list
    value: float
    calls: int
    S: np.ndarray | None = None
    rounded_value: float | None = None
    info: dict = field(default_factory=dict)

    @property
    def coefficients(self) -> np.ndarray:
        return np.full(len(self.directions), 1.0 / len(self.directions))


def continuous_greedy(
    F: SetFunction,
    M: Matroid,
    T: int | None = None,
    direction: str = "greedy",
    gradient_mode: str = "auto",
    samples: int | None = None,
    rounding: str = "swap",
    seed=None,
    accountant=None,
    diagnostic: bool = False,
) -> ContinuousGreedyResult:
    """Non-private continuous greedy: ``y_t = argmax_{y in P(M)} <y, grad f(x_t)>`` (matroid greedy,
    or the Pyomo LP over the base polytope solved by HiGHS with ``direction="highs"``), step ``1/T``
    (default ``T = r``), then swap rounding (``rounding="swap"``), randomized pipage (``"pipage"``) or
    none.  Streams: ``seed`` spawns independent rngs for gradient samples and rounding.

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    T : int, optional
        The number of steps (default the rank).
    direction : {"greedy", "highs"}, default "greedy"
        How each direction is found.
    gradient_mode : {"auto", "closed_form", "exact_enum", "sampled"}, default "auto"
        How ``grad f`` is computed.
    samples : int, optional
        Common random sets per sampled gradient (``gradient_mode="sampled"``).
    rounding : {"swap", "pipage", "none"}, default "swap"
        Round ``x_T``.
    seed : int or numpy.random.Generator, optional
        Seeds the gradient samples and the rounding.
    accountant : PrivacyAccountant, optional
        A private accountant makes the run refuse (it reads F without noise).
    diagnostic : bool, default False
        Run anyway, for reports.

    Returns
    -------
    ContinuousGreedyResult
    """
    check_pair(F, M)
    _guard(accountant, "continuous greedy", diagnostic)
    T = M.r if T is None else int(T)
    if T < 1:
        raise DataValidationError("T", f"the number of steps must be >= 1, got {T}")
    grad_rng, round_rng = np.random.SeedSequence(_entropy(seed)).spawn(2)
    grad = gradient_oracle(F, gradient_mode, samples, np.random.default_rng(grad_rng))
    start = F.calls
    total = np.zeros(F.n)  # x_t = (sum of directions) / T: no drift from repeated x + y/T
    x = total
    directions = []
    for _ in range(T):
        w = grad(x)
        y = lp_direction(M, w) if direction == "highs" else M.max_weight_base(w).astype(float)
        directions.append(y)
        total = total + y
        x = total / T
    x = np.clip(np.mean(directions, axis=0), 0.0, 1.0)
    value = multilinear(F, x) if has_closed_form(F) or F.n <= 16 else float("nan")
    res = ContinuousGreedyResult(x, directions, value, F.calls - start)
    _round(res, F, M, rounding, np.random.default_rng(round_rng))
    return res


def _entropy(seed):
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    return seed


def lp_direction(M: Matroid, w) -> np.ndarray:
    """The direction LP of spec 6.1 over the base polytope, solved by HiGHS through Pyomo."""
    import pyomo.environ as pyo

    from dpmodels.core.facade import solve

    from .models import build_matroid_lp

    model = build_matroid_lp(M, w, base=True)
    solve(model, "highs", raise_on_nonoptimal=True)
    return np.clip(np.array([pyo.value(model.y[e]) for e in range(M.n)]), 0.0, 1.0)


def _round(res: ContinuousGreedyResult, F, M, rounding: str, rng) -> None:
    if rounding == "none":
        return
    if rounding == "swap":
        bases = [d > 0.5 for d in res.directions]
        if any(not np.allclose(d, b) for d, b in zip(res.directions, bases, strict=True)):
            raise DataValidationError("directions", "swap rounding needs 0/1 base directions")
        res.S = swap_rounding(M, bases, res.coefficients, rng)
    elif rounding == "pipage":
        res.S = pipage_rounding(M, res.x, rng)
    else:
        raise DataValidationError("rounding", f"must be swap, pipage or none, got {rounding!r}")
    res.rounded_value = F(res.S)


# ----------------------------------------------------------------------------- exact OPT


def brute_force_opt(F: SetFunction, M: Matroid) -> tuple[float, np.ndarray]:
    """``max_{S in I} F(S)`` over the bases (monotone F), small |E| only.

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.

    Returns
    -------
    tuple
        ``(value, base)``.
    """
    check_pair(F, M)
    best, arg = -np.inf, None
    for B in M.bases():
        value = F(B)
        if value > best + 1e-12:
            best, arg = value, B
    return best, arg


# ----------------------------------------------------------------------------- k-submodular


def k_extensions(M: Matroid, s: np.ndarray) -> list[int]:
    """The elements a k-greedy may add to the support of ``s`` (:meth:`Matroid.extensions`)."""
    return M.extensions(s != 0)


def k_greedy(F: KSubmodularFunction, M: Matroid, accountant=None, diagnostic: bool = False) -> GreedyResult:
    """Sakaue's greedy: ``r`` steps, each adding the ``(e, i)`` of largest gain (ties: lowest e, then i).

    Parameters
    ----------
    F : KSubmodularFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    accountant : PrivacyAccountant, optional
        A private accountant makes the run refuse (it reads F without noise).
    diagnostic : bool, default False
        Run anyway, for reports.

    Returns
    -------
    GreedyResult
    """
    check_pair(F, M)
    _guard(accountant, "k-greedy", diagnostic)
    start = F.calls
    s = np.zeros(F.n, dtype=np.int64)
    order = []
    current = F(s)
    for _ in range(M.r):
        best, best_value = None, -np.inf
        for e in k_extensions(M, s):
            for i in range(1, F.k + 1):
                s[e] = i
                value = F(s)
                s[e] = 0
                if value > best_value:
                    best, best_value = (e, i), value
        s[best[0]] = best[1]
        order.append(best)
        current = best_value
    return GreedyResult(s, TrueDataDiagnostics(current), F.calls - start, order)


def k_brute_force_opt(F: KSubmodularFunction, M: Matroid) -> tuple[float, np.ndarray]:
    """``max F(s)`` over ``s`` with ``supp(s)`` independent (small |E| only)."""
    check_pair(F, M)
    if (F.k + 1) ** F.n > 5**8:
        raise DataValidationError("F", "brute force over (k+1)^E is for tiny instances")
    best, arg = -np.inf, None
    for combo in itertools.product(range(F.k + 1), repeat=F.n):
        s = np.array(combo)
        if M.is_independent(s != 0):
            value = F(s)
            if value > best + 1e-12:
                best, arg = value, s
    return best, arg
