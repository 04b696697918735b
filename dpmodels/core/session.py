"""A privacy session: one dataset, one total budget, every release drawn from it.

The anchors are Tumult Analytics' ``Session`` and OpenDP's odometers.  A
:class:`PrivacySession` owns the sensitive data and a total ``(epsilon, delta)`` budget.
Every mechanism of every family runs through :meth:`PrivacySession.run`, which

1. refuses a request whose epsilon (or delta) would exceed what remains, **before** the
   mechanism is called, so no noise is drawn for it;
2. hands the mechanism the data and the session's generator (secure unless the session
   was opened with a seed and ``not_private=True``);
3. checks the mechanism's own ledger against the request (a mechanism that spends more
   than it was granted is a bug: its output is withheld, the whole spend is charged);
4. appends the charge to the session ledger, exported as JSON beside every release.

Requests compose sequentially (they all read the same dataset): epsilons and deltas add.
A mechanism that composes its own steps more tightly (the submodular accountant's
corrected advanced composition) reports its own ``(epsilon, delta)`` in its ledger; the
session adds those totals.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from .errors import PrivacyParameterError
from .noise import as_epsilon, exact
from .randomness import describe, is_secure, release_rng

__all__ = ["BudgetExceededError", "SessionCharge", "PrivacySession", "ledger_spend"]


class BudgetExceededError(PrivacyParameterError):
    """A request asked for more privacy budget than the session has left; nothing was drawn."""


@dataclass(frozen=True)
class SessionCharge:
    """One granted request: what ran, what it cost, and where its randomness came from."""

    label: str
    epsilon: Fraction
    delta: Fraction
    randomness: str
    measurements: list = field(default_factory=list)  # rows of the mechanism's own ledger
    when: float = 0.0

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "epsilon": str(self.epsilon),
            "epsilon_float": float(self.epsilon),
            "delta": str(self.delta),
            "randomness": self.randomness,
            "measurements": self.measurements,
            "unix_time": self.when,
        }


def ledger_spend(ledger) -> tuple[Fraction, Fraction, list]:
    """``(epsilon, delta, rows)`` of a mechanism's ledger: a core ``PrivacyLedger`` or anything with
    ``total_epsilon`` (and optionally ``total_delta`` and ``to_frame``)."""
    eps = exact(ledger.total_epsilon, "ledger.total_epsilon")
    delta = getattr(ledger, "total_delta", 0) or 0
    delta = exact(delta, "ledger.total_delta") if delta else Fraction(0)
    rows = ledger.to_frame().to_dict(orient="records") if hasattr(ledger, "to_frame") else []
    return eps, delta, rows


class PrivacySession:
    """A dataset with a total budget; see the module docstring.

    ``seed`` is refused unless ``not_private=True`` (an experiment): then every charge and the
    exported ledger say the output is not private.
    """

    def __init__(self, data, epsilon, delta=0, *, seed=None, not_private: bool = False, name: str = "dataset"):
        self._data = data
        self.name = name
        self.epsilon = as_epsilon(epsilon, "budget epsilon")
        self.delta = exact(delta, "budget delta")
        if not 0 <= self.delta < 1:
            raise PrivacyParameterError("budget delta", f"must be in [0, 1), got {delta!r}")
        self.rng = release_rng(seed, not_private=not_private)
        self.randomness = describe(self.rng)
        self.charges: list[SessionCharge] = []

    # ------------------------------------------------------------------ budget
    @property
    def spent_epsilon(self) -> Fraction:
        return sum((c.epsilon for c in self.charges), Fraction(0))

    @property
    def spent_delta(self) -> Fraction:
        return sum((c.delta for c in self.charges), Fraction(0))

    @property
    def remaining_epsilon(self) -> Fraction:
        return self.epsilon - self.spent_epsilon

    @property
    def remaining_delta(self) -> Fraction:
        return self.delta - self.spent_delta

    def check(self, epsilon, delta=0, label: str = "request") -> tuple[Fraction, Fraction]:
        """Validate a request against what remains; raises :class:`BudgetExceededError` if it does not fit."""
        eps = as_epsilon(epsilon)
        dlt = exact(delta, "delta")
        if dlt < 0:
            raise PrivacyParameterError("delta", f"must be >= 0, got {delta!r}")
        if eps > self.remaining_epsilon:
            raise BudgetExceededError(
                "epsilon",
                f"{label!r} asks for {float(eps):g} but the session on {self.name!r} has "
                f"{float(self.remaining_epsilon):g} of {float(self.epsilon):g} left; nothing was drawn",
            )
        if dlt > self.remaining_delta:
            raise BudgetExceededError(
                "delta", f"{label!r} asks for delta {float(dlt):g}, {float(self.remaining_delta):g} left"
            )
        return eps, dlt

    # ------------------------------------------------------------------ running mechanisms
    def run(self, label: str, mechanism: Callable, epsilon, delta=0, **options):
        """Run ``mechanism(data, epsilon, rng, **options) -> (output, ledger)`` within the budget.

        Returns the output; the charge is the request (``epsilon``, ``delta``), which the
        mechanism's ledger must not exceed.
        """
        eps, dlt = self.check(epsilon, delta, label)
        output, ledger = mechanism(self._data, eps, self.rng, **options)
        spent_eps, spent_delta, rows = ledger_spend(ledger)
        overspent = spent_eps > eps or spent_delta > dlt
        self.charges.append(
            SessionCharge(label, max(eps, spent_eps), max(dlt, spent_delta), self.randomness, rows, time.time())
        )
        if overspent:
            raise PrivacyParameterError(
                "mechanism",
                f"{label!r} spent ({float(spent_eps):g}, {float(spent_delta):g}) but was granted "
                f"({float(eps):g}, {float(dlt):g}); its output is withheld and the spend is charged",
            )
        return output

    # ------------------------------------------------------------------ export
    def to_dict(self) -> dict:
        return {
            "dataset": self.name,
            "budget": {"epsilon": str(self.epsilon), "delta": str(self.delta)},
            "spent": {"epsilon": str(self.spent_epsilon), "delta": str(self.spent_delta)},
            "remaining": {"epsilon": str(self.remaining_epsilon), "delta": str(self.remaining_delta)},
            "composition": "sequential (basic): epsilons and deltas of the charges add",
            "randomness": self.randomness,
            "private": is_secure(self.rng),
            "charges": [c.to_dict() for c in self.charges],
        }

    def write_ledger(self, path) -> Path:
        """Write :meth:`to_dict` as JSON to ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path
