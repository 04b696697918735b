"""The contract every private mechanism of the family runs under: its ledger, its random streams,
and the up-front refusal of an epsilon at which its scores could overflow.

The mechanisms themselves are Algorithms 1 and 2 (:mod:`.continuous`), Mitrovic's private
greedy and Algorithms 3 and 4 (:mod:`.greedy`); :mod:`dpmodels.submodular.privacy_audit` holds
their exact output laws.  All of them start a run here, so that privacy, the limits ``eps = inf``
/ ``eps = 0`` and overflow are decided one way.  Runs are private unless flagged: they need a
finite ``eps > 0``; with ``diagnostic=True`` (or a non-private accountant) ``eps = inf`` is the
argmax (lowest index on ties) and ``eps = 0`` is uniform.  Data-independent randomness (gradient
samples, Alg. 2 cover sub-samples, Alg. 4 subsets, rounding) comes from streams separate from the
exponential mechanism's (:mod:`.randomness`: secure without a seed, reproducible and not private
with one; the accountant records which).
"""

from __future__ import annotations

import math

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from ..accounting import PrivacyAccountant, check_epsilon, check_private_epsilon
from ..data import SetFunction
from ..matroids import Matroid, check_pair
from .exponential import inverse_temperature
from .randomness import streams

__all__ = ["run_ledger", "run_streams", "check_finite_scale", "check_run"]


def run_streams(seed, names, acc: PrivacyAccountant) -> dict:
    """The run's named random streams; ``acc`` records the source of the mechanism's (``em``) stream.

    Parameters
    ----------
    seed : None, int, SeedSequence or Generator
        None or a secure generator for a private run; anything else is reproducible, not private
        (:func:`.randomness.streams`).
    names : sequence of str
        The streams' names, ``"em"`` among them, in spawn order.
    acc : PrivacyAccountant
        The run's accountant.

    Returns
    -------
    dict
        Name -> generator.
    """
    rngs = streams(seed, names)
    acc.note_randomness(rngs["em"])
    return rngs


def run_ledger(epsilon, accountant, diagnostic: bool) -> tuple[float, PrivacyAccountant]:
    """``(eps, accountant)`` of a mechanism run.  Private by default, so ``eps`` must be finite and
    ``> 0``; ``diagnostic=True`` or a non-private ``accountant`` admits the limits ``inf`` (the
    exact argmax) and ``0``, and the ledger records them as diagnostics.

    Parameters
    ----------
    epsilon : float or Fraction
        The run's epsilon.
    accountant : PrivacyAccountant or None
        The ledger to charge (None: a new one, private unless ``diagnostic``).
    diagnostic : bool
        Admit the non-private limits ``eps = inf`` and ``eps = 0``.

    Returns
    -------
    tuple
        ``(eps, accountant)``.
    """
    acc = accountant if accountant is not None else PrivacyAccountant(private=not diagnostic)
    eps = check_private_epsilon(epsilon, private=acc.private and not diagnostic)
    if not 0 < eps < math.inf:
        acc.diagnostics.append(f"epsilon = {eps!r}: a non-private limit, not a private run")
    return eps, acc


def check_finite_scale(F, M: Matroid, eps: float, value_bound: float | None = None) -> None:
    """Refuse up front a finite ``eps`` at which ``eps' = eps/(2 Delta)`` times the largest possible
    score overflows (review F3): the samplers would then raise, or return a wrong element, on some
    datasets and not on their neighbours.  Only public quantities decide: ``eps``, ``Delta``, the
    rank ``r``, ``|E|`` and the public bound ``M_F`` (``value_bound``, else ``F.max_value`` when
    the class declares it public).  Every score (a marginal gain, a gradient entry, or
    ``<y, grad f>`` with ``y`` in ``P(M)``) is at most ``r M_F``; the extra ``|E|`` factor leaves
    headroom for the samplers' log-space sums.  A private run without a public bound is refused:
    whether its scores overflow would depend on the data.

    Parameters
    ----------
    F : SetFunction or KSubmodularFunction
        The objective (its declared ``sensitivity`` and public ``max_value``).
    M : Matroid
        The constraint (its rank and ground set).
    eps : float
        The run's epsilon.
    value_bound : float, optional
        A public bound ``M_F`` on ``F`` (default ``F.max_value`` when the class declares it public).
    """
    beta = inverse_temperature(eps, F.sensitivity)
    if math.isinf(beta) or beta == 0.0:
        return
    bound = value_bound if value_bound is not None else (F.max_value if F.public_max_value else None)
    if bound is None or not math.isfinite(bound):
        raise PrivacyParameterError(
            "max_value",
            "a private run needs a public bound on F (declare max_value, or pass value_bound): without it, "
            "whether the mechanism's scores overflow would depend on the data",
        )
    if not math.isfinite(beta * float(bound) * max(M.r, 1) * M.n):
        raise PrivacyParameterError(
            "epsilon",
            "eps/(2 Delta) times the public score bound r M_F |E| overflows a float; "
            "use a smaller epsilon (epsilon=inf with diagnostic=True is the non-private argmax)",
        )


def check_run(F: SetFunction, M: Matroid, epsilon, T, value_bound: float | None = None):
    """Check a continuous mechanism's inputs before any draw: ``(eps, T)``, ``T`` defaulting to the rank.

    Parameters
    ----------
    F : SetFunction
        The objective.
    M : Matroid
        The constraint.
    epsilon : float or Fraction
        The run's epsilon.
    T : int or None
        The number of steps.
    value_bound : float, optional
        A public bound on ``F`` (:func:`.contract.check_finite_scale`).
    """
    check_pair(F, M)
    eps = check_epsilon(epsilon)
    T = M.r if T is None else int(T)
    if T < 1:
        raise DataValidationError("T", f"the number of steps must be >= 1, got {T}")
    check_finite_scale(F, M, eps, value_bound)
    return eps, T
