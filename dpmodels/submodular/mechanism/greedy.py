"""The private greedy family: Mitrovic et al.'s private greedy, Algorithm 3 (private k-greedy) and
Algorithm 4 (private k-greedy over random subsets).

Each takes ``r`` steps; each step is one exponential mechanism over the feasible extensions with
the marginal gain as score and inverse temperature ``eps' = eps / (2 Delta)`` as a Fraction
(Def 2.7), drawn exactly (:mod:`.exponential`) and charged ``eps`` (spec 1.7) in a
:class:`PrivacyAccountant`.  A run starts under the family's contract (:mod:`.contract`: ledger,
streams, overflow refusal); Algorithm 4's subsets ``R`` come from a data-independent stream
separate from the exponential mechanism's.
"""

from __future__ import annotations

import math

import numpy as np

from dpmodels.core.errors import DataValidationError

from ..accounting import PrivacyAccountant, greedy_step_epsilon
from ..algorithms import GreedyResult, check_pair, k_extensions
from ..data import KSubmodularFunction, SetFunction
from ..matroids import Matroid
from ..results import TrueDataDiagnostics
from .contract import check_finite_scale, run_ledger, run_streams
from .exponential import em_choice, inverse_temperature

__all__ = [
    "mitrovic_private_greedy",
    "private_k_greedy",
    "private_k_greedy_sampled",
    "alg4_subset_size",
    "greedy_setup",
    "ALG4_STREAMS",
]


def greedy_setup(F, M: Matroid, epsilon, accountant, diagnostic: bool = False):
    """Checks and state every greedy-type private mechanism starts from: ``(eps, accountant, beta)``.

    Parameters
    ----------
    F : SetFunction or KSubmodularFunction
        The objective.
    M : Matroid
        The constraint.
    epsilon : float or Fraction
        The per-step epsilon.
    accountant : PrivacyAccountant or None
        The ledger to charge.
    diagnostic : bool, default False
        Admit the non-private limits ``eps = inf`` and ``eps = 0``.
    """
    check_pair(F, M)
    eps, acc = run_ledger(epsilon, accountant, diagnostic)
    check_finite_scale(F, M, eps)
    return eps, acc, inverse_temperature(epsilon, F.sensitivity)


def mitrovic_private_greedy(
    F: SetFunction,
    M: Matroid,
    epsilon,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Mitrovic et al.: ``r`` EM steps over the feasible ``e`` with score ``F(S + e) - F(S)``; ``eps`` per step.

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The epsilon of each step.
    seed : None, int or numpy.random.Generator, optional
        None (or a secure generator) for a private run; a seed gives reproducible streams, not private.
    accountant : PrivacyAccountant, optional
        The ledger charged (default: a new one).
    diagnostic : bool, default False
        Admit the non-private limits ``eps = inf`` (argmax) and ``eps = 0`` (uniform).

    Returns
    -------
    GreedyResult
    """
    eps, acc, beta = greedy_setup(F, M, epsilon, accountant, diagnostic)
    rng = run_streams(seed, ["em"], acc)["em"]
    start = F.calls
    S = np.zeros(F.n, bool)
    order = []
    for t in range(M.r):
        cand = M.extensions(S)
        base = F(S)
        gains = []
        for e in cand:
            S[e] = True
            gains.append(F(S) - base)
            S[e] = False
        idx, _ = em_choice(gains, beta, rng)
        S[cand[idx]] = True
        order.append(cand[idx])
        acc.charge(f"mitrovic step {t + 1}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(S, TrueDataDiagnostics(F(S)), calls, order)
    res.accountant = acc
    return res


def _k_step(F: KSubmodularFunction, s, cand, beta, rng):
    """One EM over ``cand x [k]`` with score ``Delta_{e,i} F(s)`` (``k |cand| + 1`` oracle calls)."""
    base = F(s)
    pairs, gains = [], []
    for e in cand:
        for i in range(1, F.k + 1):
            s[e] = i
            gains.append(F(s) - base)
            s[e] = 0
            pairs.append((e, i))
    idx, probs = em_choice(gains, beta, rng)
    return pairs[idx], pairs, probs


def private_k_greedy(
    F: KSubmodularFunction,
    M: Matroid,
    epsilon,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Algorithm 3: ``r`` EM steps over ``Lambda(x) x [k]``; ``eps`` per step (cancellation), ``eps r`` total.

    Parameters
    ----------
    F : KSubmodularFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The epsilon of each step.
    seed : None, int or numpy.random.Generator, optional
        None (or a secure generator) for a private run; a seed gives reproducible streams, not private.
    accountant : PrivacyAccountant, optional
        The ledger charged (default: a new one).
    diagnostic : bool, default False
        Admit the non-private limits ``eps = inf`` (argmax) and ``eps = 0`` (uniform).

    Returns
    -------
    GreedyResult
    """
    eps, acc, beta = greedy_setup(F, M, epsilon, accountant, diagnostic)
    rng = run_streams(seed, ["em"], acc)["em"]
    start = F.calls
    s = np.zeros(F.n, dtype=np.int64)
    order = []
    for t in range(M.r):
        (e, i), _, _ = _k_step(F, s, k_extensions(M, s), beta, rng)
        s[e] = i
        order.append((e, i))
        acc.charge(f"alg3 step {t + 1}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(s, TrueDataDiagnostics(F(s)), calls, order)
    res.accountant = acc
    return res


def alg4_subset_size(n: int, r: int, t: int, gamma: float) -> int:
    """``s_t = min(ceil((|E|-t+1)/(r-t+1) ln(r/gamma)), |E|-t+1)`` (A13)."""
    return min(math.ceil((n - t + 1) / (r - t + 1) * math.log(r / gamma)), n - t + 1)


#: Alg. 4's independent random streams, in spawn order (the subsets ``R`` never see data).
ALG4_STREAMS = ("em", "subsets")


def private_k_greedy_sampled(
    F: KSubmodularFunction,
    M: Matroid,
    epsilon,
    gamma: float = 0.1,
    seed=None,
    accountant: PrivacyAccountant | None = None,
    diagnostic: bool = False,
) -> GreedyResult:
    """Algorithm 4: like Alg. 3 but over ``R cap Lambda`` for a uniform ``R`` of size ``s_t`` drawn from
    a data-independent stream; an empty intersection redraws ``R`` (counted in ``info``).

    Parameters
    ----------
    F : KSubmodularFunction
        The objective (the private data), with its declared sensitivity.
    M : Matroid
        The constraint, on the same ground set.
    epsilon : float or Fraction
        The epsilon of each step.
    gamma : float, default 0.1
        The failure probability that sets the subset sizes, in (0, 1).
    seed : None, int or numpy.random.Generator, optional
        None (or a secure generator) for a private run; a seed gives reproducible streams, not private.
    accountant : PrivacyAccountant, optional
        The ledger charged (default: a new one).
    diagnostic : bool, default False
        Admit the non-private limits ``eps = inf`` (argmax) and ``eps = 0`` (uniform).

    Returns
    -------
    GreedyResult
    """
    if not 0 < gamma < 1:
        raise DataValidationError("gamma", f"the failure probability must be in (0, 1), got {gamma}")
    eps, acc, beta = greedy_setup(F, M, epsilon, accountant, diagnostic)
    rngs = run_streams(seed, ALG4_STREAMS, acc)
    start = F.calls
    s = np.zeros(F.n, dtype=np.int64)
    order, redraws, sizes = [], 0, []
    r = M.r
    for t in range(1, r + 1):
        lam = set(k_extensions(M, s))
        free = np.flatnonzero(s == 0)
        size = alg4_subset_size(F.n, r, t, gamma)
        while True:
            R = rngs["subsets"].choice(free, size=min(size, free.size), replace=False)
            cand = sorted(int(e) for e in R if int(e) in lam)
            if cand:
                break
            redraws += 1
        sizes.append(len(cand))
        (e, i), _, _ = _k_step(F, s, cand, beta, rngs["em"])
        s[e] = i
        order.append((e, i))
        acc.charge(f"alg4 step {t}", greedy_step_epsilon(epsilon))
    calls = F.calls - start
    res = GreedyResult(s, TrueDataDiagnostics(F(s)), calls, order)
    res.accountant = acc
    res.info = {"redraws": redraws, "candidates": sizes}
    return res
