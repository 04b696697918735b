"""Private submodular releases through a :class:`~dpmodels.core.session.PrivacySession`.

:func:`release` runs one private algorithm (Algorithms 1-4 or Mitrovic's greedy) on the
session's dataset, the private function ``F_D``, with the session's generator, and returns only
its ``.release`` (the set or point, the choices, public parameters): never the true-data
diagnostics ``F_D(S)``.  ``epsilon`` is the algorithm's input (the paper's per-mechanism
parameter); what the session is charged is the run's total, known before anything is drawn
from public inputs alone (the matroid's rank, ``T``, the declared ``Delta``, ``delta'``):

* basic composition by default, exactly (``3 x 0.1`` is ``3/10``);
* with ``delta_prime``, the accountant's smallest valid bound: basic, or the corrected advanced
  composition (zCDP of Bun-Steinke or Dwork-Rothblum-Vadhan) with its ``delta = delta'``.

A request beyond what the session has left is refused before the algorithm runs.
:func:`input_epsilon` goes the other way, budget first: the input epsilon whose planned total
fits a given budget (``dpmodels release submodular --epsilon`` is that total), and
:func:`selection_frame` writes a release as the selected elements.

**Public means declared.**  The neighbour relation is replace-one (:data:`NEIGHBOURS`): the
number of users is the same in every dataset and sizes the public bound ``M_F`` the algorithms
are run by (Alg. 2's sample size, the overflow check), so a private release refuses a function
whose user count was counted in the files rather than declared
(``public_record_count = False``); only a session declared not private (an experiment) may run
it.  :func:`release_facts` states the unit, the relation, the declared facts and the
bounding rules of the file reader (:data:`BOUNDING_RULES`) for the release's manifest.

**Timing side channel.**  Every exponential mechanism draws through the exact sampler
(:func:`dpmodels.core.selection.exponential_mechanism`), which is rejection sampling: uniform
candidates kept with probability ``exp(-eps' (max q - q_j))``, so the number of rounds, and the
running time, depend on the scores, that is on the data.  An observer who can time a release
learns about the score gaps (as OpenDP states for its own samplers); :data:`TIMING` gives the
figures ``dpmodels bench noise`` measured, repeated in :func:`release_facts`' notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import pandas as pd

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.core.facts import ReleaseFacts
from dpmodels.core.noise import as_epsilon, exact
from dpmodels.core.randomness import is_secure
from dpmodels.core.session import PrivacySession

from .accounting import (
    PrivacyAccountant,
    alg1_step_epsilon,
    alg2_step_epsilon,
    check_epsilon,
    check_private_epsilon,
    greedy_step_epsilon,
)
from .matroids import Matroid
from .mechanism.continuous import alg2_width, improved_private_continuous_greedy, private_continuous_greedy
from .mechanism.greedy import mitrovic_private_greedy, private_k_greedy, private_k_greedy_sampled

__all__ = [
    "ALGORITHMS",
    "SET_FUNCTION_ALGORITHMS",
    "SubmodularLedger",
    "spend",
    "planned_accountant",
    "input_epsilon",
    "release",
    "selection_frame",
    "NEIGHBOURS",
    "BOUNDING_RULES",
    "TIMING",
    "release_facts",
]

#: The private algorithms a session can run, by name.
ALGORITHMS = {
    "alg1": private_continuous_greedy,
    "alg2": improved_private_continuous_greedy,
    "mitrovic": mitrovic_private_greedy,
    "alg3": private_k_greedy,
    "alg4": private_k_greedy_sampled,
}
#: The algorithms of a set function (such as coverage); Algorithms 3 and 4 take a k-submodular function.
SET_FUNCTION_ALGORITHMS = ("mitrovic", "alg1", "alg2")
_SESSION_OWNED = ("seed", "accountant", "diagnostic")  # the session provides these
#: Bisection steps of Alg. 2's input epsilon (a float: 64 halvings reach its last bit).
_BISECTION_STEPS = 200
#: The family's neighbour relation (spec 1.6, A9): the budget refers to it.
NEIGHBOURS = (
    "replace one user: one user's coverage rows and weight are replaced by any others (within the declared "
    "ground set and weight bound); the number of users is declared, public, and the same in both datasets"
)
#: The rules the file reader (``dpmodels.instances.submodular.from_csv``) applies to data outside the declared bounds.
BOUNDING_RULES = {
    "element": "a coverage row naming an element outside the declared ground set is left out",
    "weight": "a weight outside [0, max_weight] is clamped to it (max_weight is the declared Delta)",
    "missing weight": "a user of the coverage file without a weight row weighs 0 (counts for nothing)",
    "pair": "a repeated (element, user) pair is one incidence",
    "unit": "without a weights file every user weighs 1 (Delta = 1)",
}
#: The exact exponential mechanism's running time, measured (see the module docstring).
TIMING = (
    "the exact exponential mechanism is rejection sampling, so its running time depends on the scores (the "
    "data): with 2,000 candidates at eps' = 1/2, medians of 101 draws on a 2-core machine (dpmodels bench noise), "
    "0.67 ms when all are tied and 13-16 ms (single draws up to 110 ms) when one leads by 50 or 1,000; whoever "
    "can time a release learns about the score gaps"
)


@dataclass(frozen=True)
class SubmodularLedger:
    """What a run spent, as :meth:`PrivacySession.run` reads it (``total_epsilon``, ``total_delta``, rows)."""

    accountant: PrivacyAccountant
    total_epsilon: Fraction
    total_delta: Fraction
    composition: str

    def to_frame(self) -> pd.DataFrame:
        """One row per exponential mechanism, then the total with the composition that gave it."""
        rows = [
            {"step": c.name, "epsilon": float(c.epsilon), "epsilon_exact": str(c.epsilon), "delta": float(c.delta)}
            for c in self.accountant.charges
        ]
        rows.append(
            {
                "step": f"total ({self.composition})",
                "epsilon": float(self.total_epsilon),
                "epsilon_exact": str(self.total_epsilon),
                "delta": float(self.total_delta),
            }
        )
        frame = pd.DataFrame(rows)
        frame["randomness"] = self.accountant.randomness
        return frame


def spend(accountant: PrivacyAccountant, delta_prime=None) -> SubmodularLedger:
    """The accountant's total as an exact ``(epsilon, delta)`` and the composition that gave it.

    Without ``delta_prime``: basic composition in exact arithmetic.  With it: the smallest of
    basic, zCDP and DRV (:meth:`PrivacyAccountant.total`'s choice); an advanced bound is a float,
    read as the decimal it prints as."""
    if delta_prime is None:
        return SubmodularLedger(accountant, *accountant.basic_exact(), "basic")
    bounds = [("basic", accountant.basic()), ("zCDP", accountant.zcdp(delta_prime))]
    bounds.append(("DRV", accountant.drv(delta_prime)))
    name, (eps, delta) = min(bounds, key=lambda b: (b[1][0], b[1][1]))
    if name == "basic":
        return SubmodularLedger(accountant, *accountant.basic_exact(), name)
    return SubmodularLedger(accountant, exact(eps, "epsilon"), exact(delta, "delta"), name)


def planned_accountant(algorithm: str, F, M: Matroid, epsilon, **options) -> PrivacyAccountant:
    """The charges a run of ``algorithm`` will make, from public inputs only, before any draw:
    the rank, ``T``, the declared sensitivity ``Delta`` and Alg. 2's grid width."""
    acc = PrivacyAccountant(private=True)
    if algorithm in ("alg1", "alg2"):
        T = M.r if options.get("T") is None else int(options["T"])
        if algorithm == "alg1":
            step = alg1_step_epsilon(epsilon, M.r)
        else:
            width = alg2_width(
                check_epsilon(epsilon), F.sensitivity, options.get("mu"), options.get("mu_mode", "paper")
            )
            step = alg2_step_epsilon(epsilon, M.r, width, F.sensitivity)
        for t in range(T):
            acc.charge(f"{algorithm} step {t + 1}", step)
    else:
        for t in range(M.r):
            acc.charge(f"{algorithm} step {t + 1}", greedy_step_epsilon(epsilon))
    return acc


def input_epsilon(algorithm: str, F, M: Matroid, budget, **options):
    """The input epsilon of ``algorithm`` whose planned total (basic composition) fits ``budget``.

    From public inputs only (the rank ``r``, ``T``, the declared ``Delta``), before anything is
    drawn.  The greedy family (``eps r``) and Algorithm 1 (``2 eps r T``) get ``budget / r`` and
    ``budget / (2 r T)`` as exact Fractions, so the total is the budget exactly.  Algorithm 2's
    total ``T (2 eps r + eps w / Delta)`` depends on ``eps`` through its grid width ``w`` too: the
    largest float whose planned total is at most ``budget`` is found by bisection.

    Parameters
    ----------
    algorithm : str
        One of the release's algorithms.
    F, M : SetFunction, Matroid
        The objective (its declared ``Delta`` only) and the constraint.
    budget : float or Fraction
        The total to spend.
    **options
        The algorithm's options (``T``, ``mu``, ...).
    """
    total = as_epsilon(budget, "epsilon")
    if algorithm not in ALGORITHMS:
        raise DataValidationError("algorithm", f"must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    if M.r < 1:
        raise DataValidationError("matroid", "has rank 0: there is nothing to select")
    T = M.r if options.get("T") is None else int(options["T"])
    if T < 1:
        raise DataValidationError("T", f"must be >= 1, got {T}")

    def planned(eps):
        return spend(planned_accountant(algorithm, F, M, eps, **options)).total_epsilon

    if algorithm == "alg1":
        eps = total / (2 * M.r * T)
    elif algorithm == "alg2":
        lo, hi = 0.0, float(total / (2 * M.r * T))  # a step costs at least 2 eps r
        for _ in range(_BISECTION_STEPS):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if planned(mid) <= total else (lo, mid)
        if lo == 0.0:
            raise PrivacyParameterError("epsilon", f"a budget of {float(total):g} is too small for {T} steps of alg2")
        eps = lo
    else:
        eps = total / M.r
    if planned(eps) > total:  # pragma: no cover - the closed forms and the bisection keep within the budget
        raise PrivacyParameterError("epsilon", f"the planned total of {algorithm} exceeds the budget")
    return eps


def _check_request(algorithm: str, epsilon, options: dict) -> None:
    if algorithm not in ALGORITHMS:
        raise DataValidationError("algorithm", f"must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    check_private_epsilon(epsilon, private=True)
    owned = sorted(set(options) & set(_SESSION_OWNED))
    if owned:
        raise PrivacyParameterError(
            owned[0],
            "is set by the session: its generator draws (open it with seed=..., not_private=True for a "
            "reproducible experiment) and its ledger accounts",
        )


def _check_declared_users(F, session: PrivacySession) -> None:
    """Refuse, on a private session, a function whose number of users was not declared."""
    private = getattr(session, "private", is_secure(session.rng))  # a secure generator, no not_private declaration
    if private and not getattr(F, "public_record_count", True):
        raise PrivacyParameterError(
            "n_users",
            "the number of users was counted in the private files, not declared: it sizes the public bound M_F "
            "the private algorithms are run by, so a private release needs it declared (n_users=..., --users N "
            "on the command line); only an experiment declared not private (not_private=True) may count them",
        )


def _mechanism(F, granted, rng, *, algorithm, matroid, input_epsilon, delta_prime, options):
    """``PrivacySession.run``'s mechanism: the run on ``F`` with the session's ``rng``; (release, ledger)."""
    acc = PrivacyAccountant(private=True)
    result = ALGORITHMS[algorithm](F, matroid, input_epsilon, seed=rng, accountant=acc, **options)
    return result.release, spend(acc, delta_prime)


def release(
    session: PrivacySession, algorithm: str, matroid: Matroid, epsilon, delta_prime=None, label=None, **options
):
    """Spend one private run of ``algorithm`` from ``session``; returns its ``.release`` only.

    Parameters
    ----------
    session
        The session holding the private function ``F_D``.  On a private session (a secure
        generator and no ``not_private`` declaration: ``session.private``), ``F_D``'s number of
        users must be declared: a function whose users were counted in the files
        (``public_record_count = False``, e.g. ``from_csv`` without ``n_users``) is refused before
        anything is charged or drawn, naming ``n_users``, because that count sizes the public bound
        ``M_F`` the run depends on.  A session declared not private may run it.
    algorithm
        One of :data:`ALGORITHMS`.
    matroid
        The declared matroid.
    epsilon
        The algorithm's input epsilon; the session is charged the run's total
        (:func:`planned_accountant`, :func:`spend`), refused before the run if it exceeds what is left.
    delta_prime
        With it, the accountant's smallest valid ``(epsilon, delta)`` bound instead of basic composition.
    label
        The charge's label in the session ledger.
    options
        Passed to the algorithm (``T``, ``cover``, ``gamma``, ...); the seed, the accountant and
        diagnostic mode belong to the session and are refused.
    """
    _check_request(algorithm, epsilon, options)
    F = session._data  # read for its declared, data-independent facts only (Delta, spec A9; the user count)
    _check_declared_users(F, session)
    plan = spend(planned_accountant(algorithm, F, matroid, epsilon, **options), delta_prime)
    return session.run(
        label or f"submodular {algorithm}",
        _mechanism,
        plan.total_epsilon,
        plan.total_delta,
        algorithm=algorithm,
        matroid=matroid,
        input_epsilon=epsilon,
        delta_prime=delta_prime,
        options=options,
    )


def selection_frame(released, labels=None) -> pd.DataFrame:
    """The selected elements of a release, one row each, named by ``labels`` (default: the index).

    A greedy-type release (Mitrovic's greedy) gives ``element, step``: the step whose exponential
    mechanism chose it.  A continuous release (Algorithms 1 and 2) gives ``element, x``: the
    elements of the rounded base ``S`` and their coordinate in the released point ``x_T``.
    Only published fields are read (post-processing of the release).

    Parameters
    ----------
    released : GreedyRelease or ContinuousRelease
        A release.
    labels : sequence of str, optional
        The public name of each element.
    """
    name = (lambda e: e) if labels is None else (lambda e: labels[int(e)])
    if hasattr(released, "order"):
        if any(isinstance(e, tuple) for e in released.order):
            raise DataValidationError("release", "a k-submodular release (Alg. 3, 4) picks (element, type) pairs")
        return pd.DataFrame({"element": [name(e) for e in released.order], "step": range(1, len(released.order) + 1)})
    x = released.x
    chosen = [e for e, s in enumerate(released.S) if s] if released.S is not None else []
    return pd.DataFrame({"element": [name(e) for e in chosen], "x": [x[e] for e in chosen]})


# ---------------------------------------------------------------------- the manifest's family part
def release_facts(
    matroid: Matroid,
    algorithm: str,
    *,
    n_users: int | None,
    max_weight: float | None = None,
    T: int | None = None,
    delta_prime=None,
) -> ReleaseFacts:
    """What a submodular release states, from the declarations and options only (no record is read).

    Parameters
    ----------
    matroid
        The declared matroid (its ground set, kind, rank and, for a partition, capacities).
    algorithm
        The private algorithm (:data:`ALGORITHMS`).
    n_users
        The declared number of users; ``None`` when it was counted in the files (an experiment:
        the facts then say the output is NOT private).
    max_weight
        The declared bound ``Delta`` of a weights file; ``None`` for unit weights (``Delta = 1``).
    T
        The continuous-greedy steps of ``alg1`` / ``alg2`` (default: the rank).
    delta_prime
        Given, the accountant's (epsilon, delta) bound is charged: approximate DP.
    """
    if algorithm not in ALGORITHMS:
        raise DataValidationError("algorithm", f"must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    declared = {
        "ground set size": int(matroid.n),
        "matroid": matroid.kind,
        "rank": int(matroid.r),
        "number of users": int(n_users) if n_users is not None else "not declared: counted in the files (NOT private)",
        "Delta (max weight)": float(max_weight) if max_weight is not None else 1.0,
        "algorithm": algorithm,
    }
    if getattr(matroid, "kind", None) == "partition":
        declared["capacity per part"] = [int(c) for c in matroid.caps]
    if algorithm in ("alg1", "alg2"):
        declared["T"] = int(T) if T is not None else int(matroid.r)
    if delta_prime is not None:
        declared["delta_prime"] = float(delta_prime)
    weight_rules = ("weight", "missing weight") if max_weight is not None else ("unit",)
    notes = [
        f"timing side channel: {TIMING}",
        "Algorithm 1's exact samplers of matroid bases (conditional Poisson, sequential decisions) are rejection "
        "samplers too: their running time may also depend on the data (not measured here)",
        "the session is charged the run's total planned from public inputs before anything is drawn",
    ]
    if n_users is None:
        notes.insert(0, "the number of users was counted in the files, not declared: this output is NOT private")
    return ReleaseFacts(
        privacy_unit="one user: their coverage rows and their weight",
        neighbours=NEIGHBOURS,
        declared=declared,
        invariants={},
        bounding=tuple(BOUNDING_RULES[k] for k in ("element", *weight_rules, "pair")),
        post_processing=_POST_PROCESSING[algorithm in ("alg1", "alg2")],
        flavor="pure DP" if delta_prime is None else "approximate DP",
        notes=tuple(notes),
    )


_POST_PROCESSING = {
    False: "the selected elements in the order the exponential mechanisms chose them; nothing else is computed "
    "from the data",
    True: "swap rounding of the released point x_T with data-independent randomness; the output lists the rounded "
    "base and x_T's coordinates on it",
}
