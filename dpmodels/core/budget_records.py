"""The records of a budget database: a request, a recorded charge, a dataset's budget (exact fractions).

:mod:`dpmodels.core.budget` stores them; this module holds what they are and how a request converts
between the budget units (:data:`UNITS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .errors import DataValidationError, PrivacyParameterError
from .noise import exact

__all__ = ["UNITS", "BudgetExceededError", "BudgetRequest", "Charge", "DatasetBudget", "amount_words"]

#: Budget units and what they mean.
UNITS = {
    "epsilon": "pure DP epsilon (approximate DP when a delta is budgeted too); sequential composition adds",
    "rho": "zCDP rho; a pure-DP eps costs eps^2/2; sequential composition adds",
    "epsilon_per_km": "metric DP (local, per record) epsilon per km; releases of the same records add",
}


class BudgetExceededError(PrivacyParameterError):
    """A request asked for more privacy budget than is left; nothing was drawn or charged."""


@dataclass(frozen=True)
class BudgetRequest:
    """What one release asks for, in its own unit (converted to the dataset's by :meth:`cost_in`).

    Parameters
    ----------
    unit
        ``"epsilon"``, ``"rho"`` or ``"epsilon_per_km"`` (:data:`UNITS`).
    amount
        The epsilon, rho or epsilon per km asked for, exact.
    delta
        The delta of an approximate-DP request (0 for pure DP, zCDP and metric DP).
    """

    unit: str
    amount: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self):
        if self.unit not in UNITS:
            raise DataValidationError("unit", f"must be one of {sorted(UNITS)}, got {self.unit!r}")
        object.__setattr__(self, "amount", exact(self.amount, self.unit))
        object.__setattr__(self, "delta", exact(self.delta, "delta"))
        if self.amount < 0 or not 0 <= self.delta < 1:
            raise PrivacyParameterError(self.unit, f"needs amount >= 0 and delta in [0, 1), got {self}")

    def cost_in(self, unit: str) -> Fraction:
        """The request's cost in a budget of ``unit``, exactly; refused where no conversion holds."""
        if unit == self.unit:
            return self.amount
        if unit == "rho" and self.unit == "epsilon" and self.delta == 0:
            return self.amount * self.amount / 2  # pure eps-DP is eps^2/2-zCDP (Bun-Steinke, Prop. 1.4)
        raise PrivacyParameterError(
            "--dataset",
            f"a {self.unit} request{' with delta > 0' if self.delta else ''} cannot be charged to a budget in "
            f"{unit} (no conversion holds that way); declare the dataset's budget in {self.unit}",
        )

    def to_dict(self) -> dict:
        return {"unit": self.unit, "amount": str(self.amount), "delta": str(self.delta)}


@dataclass(frozen=True)
class Charge:
    """One recorded charge of a dataset's budget."""

    id: int
    dataset: str
    time: str
    label: str
    command: str
    cost: Fraction
    delta: Fraction
    requested: dict
    status: str
    inputs: dict
    outputs: dict
    manifest: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "time": self.time,
            "label": self.label,
            "command": self.command,
            "cost": str(self.cost),
            "delta": str(self.delta),
            "requested": self.requested,
            "status": self.status,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "manifest": self.manifest,
            "note": self.note,
        }


@dataclass(frozen=True)
class DatasetBudget:
    """A dataset's declared budget, what its charges spent, and the charges themselves."""

    name: str
    unit: str
    budget: Fraction
    delta: Fraction
    created: str
    charges: list[Charge] = field(default_factory=list)

    @property
    def spent(self) -> Fraction:
        return sum((c.cost for c in self.charges), Fraction(0))

    @property
    def spent_delta(self) -> Fraction:
        return sum((c.delta for c in self.charges), Fraction(0))

    @property
    def remaining(self) -> Fraction:
        return self.budget - self.spent

    @property
    def remaining_delta(self) -> Fraction:
        return self.delta - self.spent_delta

    def to_dict(self) -> dict:
        return {
            "dataset": self.name,
            "unit": self.unit,
            "budget": str(self.budget),
            "delta": str(self.delta),
            "spent": str(self.spent),
            "spent_delta": str(self.spent_delta),
            "remaining": str(self.remaining),
            "created": self.created,
            "charges": [c.to_dict() for c in self.charges],
        }


def amount_words(value: Fraction, unit: str, delta: Fraction = Fraction(0)) -> str:
    text = f"{unit} {value} (~{float(value):.6g})"
    return text + (f", delta {delta}" if delta else "")
