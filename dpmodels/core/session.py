"""A privacy session: one dataset, one total budget, every release drawn from it.

The anchors are Tumult Analytics' ``Session`` and OpenDP's odometers.  A
:class:`PrivacySession` owns the sensitive data and a total budget: in memory
(``PrivacySession(data, epsilon)``) or in a budget database that persists across processes
(:meth:`PrivacySession.from_database`, :mod:`dpmodels.core.budget`).  Every mechanism of every
family runs through :meth:`PrivacySession.run`, which

1. **charges before it evaluates**: the request is checked against what remains and charged in
   one step under a lock (a database transaction when the budget lives in a database), so two
   threads or processes cannot both spend the last of a budget, and a request that does not fit
   is refused before the mechanism is called (no noise is drawn for it);
2. hands the mechanism the data and the session's generator (secure unless the session was
   opened with a seed and ``not_private=True``);
3. keeps the charge when the mechanism raises (like OpenDP and Tumult: a mechanism that failed
   may have drawn noise, and retrying it for free would leak), marking it ``failed``;
4. checks the mechanism's own ledger against the request (a mechanism that spends more than it
   was granted is a bug: its output is withheld and the excess is charged too);
5. exports the charges as the JSON ledger written beside every release.

Requests compose sequentially (they all read the same dataset): epsilons (or rhos) and deltas
add.  A mechanism that composes its own steps more tightly (the submodular accountant's
advanced composition) reports its own ``(epsilon, delta)`` in its ledger; the session adds
those totals.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from .budget import BudgetDatabase, BudgetExceededError, BudgetRequest
from .errors import PrivacyParameterError
from .noise import as_epsilon, exact
from .randomness import describe, is_secure, release_rng
from .zcdp import rho_of_epsilon

__all__ = ["BudgetExceededError", "SessionCharge", "PrivacySession", "ledger_spend"]


@dataclass
class SessionCharge:
    """One granted request: what ran, what it cost, where its randomness came from, how it ended.

    ``status`` is ``"charged"`` while the mechanism runs, then ``"done"``, ``"failed"`` (it
    raised: the budget stays spent) or ``"withheld"`` (it overspent).  ``database_id`` is the
    charge's row in the budget database, if the session has one.
    """

    label: str
    epsilon: Fraction
    delta: Fraction
    randomness: str
    measurements: list = field(default_factory=list)  # rows of the mechanism's own ledger
    when: float = 0.0
    unit: str = "epsilon"
    status: str = "charged"
    database_id: int | None = None

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "unit": self.unit,
            self.unit: str(self.epsilon),
            f"{self.unit}_float": float(self.epsilon),
            "delta": str(self.delta),
            "status": self.status,
            "randomness": self.randomness,
            "measurements": self.measurements,
            "unix_time": self.when,
            "budget_database_charge": self.database_id,
        }


def ledger_spend(ledger, unit: str = "epsilon") -> tuple[Fraction, Fraction, list]:
    """``(amount, delta, rows)`` of a mechanism's ledger in ``unit``: a core ``PrivacyLedger`` or anything
    with ``total_epsilon`` (and optionally ``total_rho``, ``total_delta`` and ``to_records`` or ``to_frame``).

    In ``"rho"`` the amount is the ledger's ``total_rho`` (zCDP steps add their rho, a pure step
    ``eps^2/2``), or ``eps^2/2`` of a pure ledger without one; ``inf`` (no such bound) is refused as
    an overspend by :meth:`PrivacySession.run`.  In the other units it is ``total_epsilon``.
    """
    if unit == "rho":
        total = getattr(ledger, "total_rho", None)
        if total is None:
            total = rho_of_epsilon(exact(ledger.total_epsilon, "ledger.total_epsilon"))
        eps = math.inf if isinstance(total, float) and math.isinf(total) else exact(total, "ledger.total_rho")
    else:
        total = ledger.total_epsilon
        eps = math.inf if isinstance(total, float) and math.isinf(total) else exact(total, "ledger.total_epsilon")
    delta = getattr(ledger, "total_delta", 0) or 0
    delta = exact(delta, "ledger.total_delta") if delta else Fraction(0)
    if hasattr(ledger, "to_records"):
        rows = ledger.to_records()
    else:
        rows = ledger.to_frame().to_dict(orient="records") if hasattr(ledger, "to_frame") else []
    return eps, delta, rows


class _MemoryBudget:
    """A budget that lives as long as the session (the default)."""

    def __init__(self, unit: str, total: Fraction, delta: Fraction, name: str):
        self.unit, self.total, self.delta, self.name = unit, total, delta, name
        self.spent, self.spent_delta = Fraction(0), Fraction(0)
        self.where = "this session"

    def state(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        return self.total, self.delta, self.spent, self.spent_delta

    def charge(self, label: str, request: BudgetRequest, force: bool = False) -> int | None:
        cost = request.cost_in(self.unit)
        if not force and (cost > self.total - self.spent or request.delta > self.delta - self.spent_delta):
            raise BudgetExceededError(
                request.unit if request.unit != "epsilon_per_km" else "epsilon",
                f"{label!r} asks for {float(cost):g} but the session on {self.name!r} has "
                f"{float(self.total - self.spent):g} of {float(self.total):g} left"
                + (
                    f" (delta: asks {float(request.delta):g}, {float(self.delta - self.spent_delta):g} left)"
                    if request.delta
                    else ""
                )
                + "; nothing was drawn",
            )
        self.spent += cost
        self.spent_delta += request.delta
        return None

    def fail(self, charge_id, reason: str) -> None:
        """Nothing to record beyond the session's own charge list."""


class _DatabaseBudget:
    """A budget in a :class:`~dpmodels.core.budget.BudgetDatabase`, shared with other processes."""

    def __init__(self, database: BudgetDatabase, dataset: str, command: str, inputs: dict, outputs: dict):
        self.database, self.name = database, dataset
        self.command, self.inputs, self.outputs = command, inputs, outputs
        self.unit = database.dataset(dataset).unit
        self.where = f"{database.path} (dataset {dataset!r})"

    def state(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        budget = self.database.dataset(self.name)
        return budget.budget, budget.delta, budget.spent, budget.spent_delta

    def charge(self, label: str, request: BudgetRequest, force: bool = False) -> int:
        if force:  # an overspending mechanism's excess: recorded even beyond the budget
            return self.database.record_excess(self.name, request, label, self.command)
        return self.database.charge(self.name, request, label, self.command, self.inputs, self.outputs).id

    def fail(self, charge_id, reason: str) -> None:
        self.database.fail(charge_id, reason)


class PrivacySession:
    """A dataset with a total budget; see the module docstring.

    Parameters
    ----------
    data
        The sensitive data, handed to every mechanism.
    epsilon
        The total budget in ``unit`` (default unit: pure-DP epsilon).
    delta
        The total delta (approximate DP; ``unit="epsilon"`` only).
    unit
        ``"epsilon"``, ``"rho"`` (zCDP; pure requests cost ``eps^2/2``) or ``"epsilon_per_km"``
        (metric DP): see :data:`dpmodels.core.budget.UNITS`.
    seed
        Refused unless ``not_private=True`` (an experiment): then every charge and the exported
        ledger say the output is not private.
    not_private
        Declares the output not private (needed with ``seed`` or a seeded ``rng``).
    name
        The dataset's name in errors and ledgers.
    rng
        A generator to draw from instead of a fresh secure one: a secure generator, or (with
        ``not_private=True``) any numpy Generator.
    """

    def __init__(
        self,
        data,
        epsilon,
        delta=0,
        *,
        unit: str = "epsilon",
        seed=None,
        not_private: bool = False,
        name: str = "dataset",
        rng=None,
    ):
        total = as_epsilon(epsilon, "budget epsilon" if unit == "epsilon" else f"budget {unit}")
        dlt = exact(delta, "budget delta")
        if not 0 <= dlt < 1:
            raise PrivacyParameterError("budget delta", f"must be in [0, 1), got {delta!r}")
        if dlt and unit != "epsilon":
            raise PrivacyParameterError("budget delta", f"a {unit} budget has no delta (epsilon only), got {delta!r}")
        BudgetRequest(unit, total, dlt)  # validates the unit
        self._setup(data, _MemoryBudget(unit, total, dlt, name), name, seed, not_private, rng)

    @classmethod
    def from_database(
        cls,
        data,
        database,
        dataset: str,
        *,
        seed=None,
        not_private: bool = False,
        rng=None,
        command: str = "",
        inputs: dict | None = None,
        outputs: dict | None = None,
    ) -> PrivacySession:
        """A session whose budget is ``dataset``'s in the budget database ``database`` (a path or a
        :class:`~dpmodels.core.budget.BudgetDatabase`): charges persist and other processes see them.

        Parameters
        ----------
        data, seed, not_private, rng
            As for the constructor.
        database
            The database, created beforehand by ``dpmodels budget init``
            (:meth:`BudgetDatabase.init`).
        dataset
            The declared dataset name to charge.
        command, inputs, outputs
            Recorded with every charge: the command line, the inputs' hashes, the output paths.
        """
        db = database if isinstance(database, BudgetDatabase) else BudgetDatabase(database)
        budget = _DatabaseBudget(db, dataset, command, inputs or {}, outputs or {})
        session = cls.__new__(cls)
        session._setup(data, budget, dataset, seed, not_private, rng)
        return session

    def _setup(self, data, budget, name: str, seed, not_private: bool, rng) -> None:
        self._data = data
        self._budget = budget
        self._lock = threading.Lock()
        self.name = name
        self.unit = budget.unit
        self.not_private = bool(not_private)
        if rng is None:
            self.rng = release_rng(seed, not_private=not_private)
        else:
            if seed is not None:
                raise PrivacyParameterError("seed", "give a seed or a generator, not both")
            if not is_secure(rng) and not not_private:
                raise PrivacyParameterError(
                    "rng", "is not a secure generator: declare the output not private (not_private=True)"
                )
            self.rng = rng
        self.randomness = describe(self.rng)
        self.charges: list[SessionCharge] = []

    # ------------------------------------------------------------------ budget
    @property
    def private(self) -> bool:
        """Whether the session's outputs can be private: it draws from a secure generator and was not
        declared not private (a declared experiment may use public facts derived from the data)."""
        return is_secure(self.rng) and not self.not_private

    @property
    def budget_location(self) -> str:
        """Where the budget lives: ``"this session"``, or the budget database and dataset."""
        return self._budget.where

    @property
    def epsilon(self) -> Fraction:
        """The total budget (in :attr:`unit`)."""
        return self._budget.state()[0]

    @property
    def delta(self) -> Fraction:
        return self._budget.state()[1]

    @property
    def spent_epsilon(self) -> Fraction:
        """What is spent (in :attr:`unit`); with a database, by every process."""
        return self._budget.state()[2]

    @property
    def spent_delta(self) -> Fraction:
        return self._budget.state()[3]

    @property
    def remaining_epsilon(self) -> Fraction:
        total, _, spent, _ = self._budget.state()
        return total - spent

    @property
    def remaining_delta(self) -> Fraction:
        _, delta, _, spent = self._budget.state()
        return delta - spent

    def request(self, epsilon, delta=0, rho=None) -> BudgetRequest:
        """The request ``(epsilon, delta)`` (or ``rho``) validated, in the session's terms.

        A request names one amount: ``rho`` beside an ``epsilon`` or a ``delta`` is refused (zCDP has
        no delta; one would be silently dropped)."""
        if rho is not None:
            if epsilon is not None:
                raise PrivacyParameterError("epsilon", "give epsilon or rho, not both (a request has one amount)")
            if exact(delta, "delta") != 0:
                raise PrivacyParameterError("delta", f"a rho (zCDP) request has no delta, got {delta!r}")
            return BudgetRequest("rho", as_epsilon(rho, "rho"))
        eps = as_epsilon(epsilon)
        dlt = exact(delta, "delta")
        if dlt < 0:
            raise PrivacyParameterError("delta", f"must be >= 0, got {delta!r}")
        unit = "epsilon_per_km" if self.unit == "epsilon_per_km" else "epsilon"
        return BudgetRequest(unit, eps, dlt)

    # ------------------------------------------------------------------ running mechanisms
    def run(self, label: str, mechanism: Callable, epsilon=None, delta=0, *, rho=None, **options):
        """Charge ``(epsilon, delta)`` (or ``rho``), then run ``mechanism(data, amount, rng, **options)
        -> (output, ledger)``; returns the output.

        The charge is made before the mechanism runs and stays if it raises.  The mechanism's
        ledger must not exceed the request.
        """
        request = self.request(epsilon, delta, rho)
        with self._lock:
            database_id = self._budget.charge(label, request)
        charge = SessionCharge(
            label, request.amount, request.delta, self.randomness, [], time.time(), request.unit, "charged", database_id
        )
        self.charges.append(charge)
        try:
            output, ledger = mechanism(self._data, request.amount, self.rng, **options)
        except BaseException as err:
            charge.status = "failed"
            self._budget.fail(database_id, f"{type(err).__name__}: {err}")
            raise
        self._settle(charge, request, ledger)
        return output

    def _settle(self, charge: SessionCharge, request: BudgetRequest, ledger) -> None:
        """Check the mechanism's ledger against the charge; an overspend is charged and withheld."""
        spent_eps, spent_delta, rows = ledger_spend(ledger, request.unit)
        charge.measurements = rows
        if spent_eps <= request.amount and spent_delta <= request.delta:
            charge.status = "done"
            return
        if math.isinf(spent_eps) or (request.unit == "rho" and spent_delta):
            # no bound in the request's unit: a zCDP ledger on an epsilon request, or a delta a rho budget cannot pay
            charge.status = "withheld"
            why = "inf" if math.isinf(spent_eps) else f"paired with delta {float(spent_delta):g}"
            raise PrivacyParameterError(
                "mechanism",
                f"{charge.label!r} has no {request.unit} bound (its ledger's {request.unit} is {why}) but was "
                f"granted {request.unit} {float(request.amount):g}; its output is withheld",
            )
        excess = BudgetRequest(request.unit, max(spent_eps - request.amount, 0), max(spent_delta - request.delta, 0))
        with self._lock:
            self._budget.charge(f"{charge.label} (overspent)", excess, force=True)
        charge.epsilon, charge.delta = max(request.amount, spent_eps), max(request.delta, spent_delta)
        charge.status = "withheld"
        raise PrivacyParameterError(
            "mechanism",
            f"{charge.label!r} spent {request.unit} {float(spent_eps):g} (delta {float(spent_delta):g}) but was "
            f"granted {float(request.amount):g} (delta {float(request.delta):g}); its output is withheld and the "
            "spend is charged",
        )

    # ------------------------------------------------------------------ export
    def to_dict(self) -> dict:
        total, delta, spent, spent_delta = self._budget.state()
        return {
            "dataset": self.name,
            "budget_unit": self.unit,
            "budget_held_in": self._budget.where,
            "budget": {self.unit: str(total), "delta": str(delta)},
            "spent": {self.unit: str(spent), "delta": str(spent_delta)},
            "remaining": {self.unit: str(total - spent), "delta": str(delta - spent_delta)},
            "composition": "sequential (basic): the charges add",
            "randomness": self.randomness,
            "private": self.private,
            "charges": [c.to_dict() for c in self.charges],
        }

    def write_ledger(self, path) -> Path:
        """Write :meth:`to_dict` as JSON to ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path
