"""Checks of what an objective declares: monotonicity, (k-)submodularity and sensitivity
(spec 1.1-1.3, 8.1.9, 8.2.3).

:func:`submodularity_violations` looks for counterexamples to monotonicity and submodularity
(exhaustively for ``n <= 10``, else on random chains from a fixed seed: the probe set is
data-independent); :class:`.set_functions.CallableFunction` refuses a callable that fails it.
:func:`k_submodularity_violations` brute-forces the k-submodular inequality on tiny instances, and
:func:`check_sensitivity` measures two neighbours against the declared ``Delta``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from ..data import KSubmodularFunction, SetFunction, as_mask

__all__ = ["Violation", "submodularity_violations", "k_submodularity_violations", "check_sensitivity"]

#: Above this ground-set size the callable check samples chains instead of enumerating.
EXHAUSTIVE_CHECK_MAX = 10


@dataclass(frozen=True)
class Violation:
    """A counterexample to monotonicity or (k-)submodularity."""

    kind: str
    detail: str
    amount: float


def submodularity_violations(F: SetFunction, probes: int = 200, limit: int | None = None, tol: float = 1e-9):
    """Counterexamples to monotonicity and submodularity of ``F``.

    Exhaustive over all ``(S, e)`` and ``S subset T`` pairs (via the equivalent local condition
    ``F(S+a) + F(S+b) >= F(S+a+b) + F(S)``) for ``n <= 10``; otherwise on random chains.
    """
    n = F.n
    out: list[Violation] = []

    def value(members):
        return F(as_mask(members, n))

    for S, a, b in _probe_triples(n, probes):
        fs, fa = value(S), value(S | {a})
        if fa < fs - tol:
            out.append(Violation("monotone", f"F(S + {a}) < F(S) at S={sorted(S)}", fs - fa))
        if b is not None:
            fb, fab = value(S | {b}), value(S | {a, b})
            gap = fab + fs - fa - fb
            if gap > tol:
                out.append(Violation("submodular", f"F(S+{a}+{b}) + F(S) > F(S+{a}) + F(S+{b}) at S={sorted(S)}", gap))
        if limit is not None and len(out) >= limit:
            break
    return out


def _probe_triples(n: int, probes: int):
    if n <= EXHAUSTIVE_CHECK_MAX:
        for size in range(n + 1):
            for S in itertools.combinations(range(n), size):
                rest = [e for e in range(n) if e not in S]
                for i, a in enumerate(rest):
                    yield set(S), a, None
                    for b in rest[i + 1 :]:
                        yield set(S), a, b
        return
    rng = np.random.default_rng(12345)  # data-independent probe set
    for _ in range(probes):
        perm = rng.permutation(n)
        size = int(rng.integers(0, n))  # every size 0..n-1, so F(E - a) <= F(E) is probed too
        b = int(perm[size + 1]) if size + 1 < n else None
        yield set(perm[:size].tolist()), int(perm[size]), b


def check_sensitivity(F: SetFunction, F_prime: SetFunction, sets: Iterable | None = None) -> float:
    """``max_S |F(S) - F'(S)|`` over ``sets`` (all subsets when ``n <= 12``), raising when it
    exceeds the declared sensitivity of ``F`` (spec 8.2.3)."""
    if sets is None:
        if F.n > 12:
            raise DataValidationError("sets", "pass the sets to check when n > 12")
        sets = (np.array(bits, dtype=bool) for bits in itertools.product([False, True], repeat=F.n))
    worst = max(abs(F(S) - F_prime(S)) for S in sets)
    if worst > F.sensitivity + 1e-12:
        raise PrivacyParameterError(
            "sensitivity", f"declared {F.sensitivity} but the neighbours differ by {worst} on some set"
        )
    return worst


def k_submodularity_violations(F: KSubmodularFunction, tol: float = 1e-9) -> list[Violation]:
    """Brute force over all pairs of ``(k+1)^E`` (|E| <= 4, k <= 3): monotonicity and the
    defining inequality ``F(s) + F(t) >= F(s meet t) + F(s join t)`` (spec 1.3, 8.1.9)."""
    n, k = F.n, F.k
    if (k + 1) ** n > 4**4:
        raise DataValidationError("F", f"brute-force check needs (k+1)^n <= 256, got {(k + 1) ** n}")
    points = [np.array(p) for p in itertools.product(range(k + 1), repeat=n)]
    values = {tuple(p): F(p) for p in points}
    out = []
    for s in points:
        for e in np.flatnonzero(s == 0):
            for i in range(1, k + 1):
                t = s.copy()
                t[e] = i
                if values[tuple(t)] < values[tuple(s)] - tol:
                    out.append(Violation("monotone", f"Delta_({e},{i}) F({s.tolist()}) < 0", 0.0))
    for s, t in itertools.product(points, repeat=2):
        meet = np.where(s == t, s, 0)
        join = np.where((s != 0) & (t != 0) & (s != t), 0, np.maximum(s, t))
        gap = values[tuple(meet)] + values[tuple(join)] - values[tuple(s)] - values[tuple(t)]
        if gap > tol:
            out.append(Violation("k-submodular", f"s={s.tolist()}, t={t.tolist()}", gap))
    return out
