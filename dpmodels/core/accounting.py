"""Privacy budgets: exact splits and a ledger of what each mechanism spent.

Pure epsilon-DP composes simply: measurements on disjoint parts of the data (regions of
one level) compose in parallel (the max counts), groups of measurements on the same data
compose sequentially (the sum counts).  The ledger records every measurement with its
sensitivity, budget and noise scale so that tests and users can audit a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import pandas as pd

from .errors import PrivacyParameterError
from .noise import as_epsilon, exact
from .samplers import exact_fraction

__all__ = ["split_budget", "Measurement", "PrivacyLedger"]


def split_budget(epsilon, parts: int | Sequence) -> list[Fraction]:
    """Split ``epsilon`` into ``parts`` equal shares, or in proportion to the weights given.

    The shares are exact fractions that sum to ``epsilon`` exactly.
    """
    eps = as_epsilon(epsilon)
    if isinstance(parts, int) and not isinstance(parts, bool):
        if parts < 1:
            raise PrivacyParameterError("parts", f"must be >= 1, got {parts}")
        weights = [Fraction(1)] * parts
    else:
        weights = [exact(w, "weights") for w in parts]
        if not weights or any(w <= 0 for w in weights):
            raise PrivacyParameterError("weights", f"must be a non-empty list of positive numbers, got {parts!r}")
    total = sum(weights)
    return [eps * w / total for w in weights]


@dataclass(frozen=True)
class Measurement:
    """One noisy query: ``noise`` with ``scale = sensitivity / epsilon`` on ``count`` cells."""

    query: str
    group: str
    sensitivity: Fraction
    epsilon: Fraction
    scale: Fraction
    noise: str
    count: int = 1

    def __post_init__(self):
        if self.scale != self.sensitivity / self.epsilon:
            raise PrivacyParameterError(
                "scale", f"{self.scale} != sensitivity/epsilon = {self.sensitivity / self.epsilon} for {self.query}"
            )


@dataclass
class PrivacyLedger:
    """Measurements grouped into parallel groups that compose sequentially.

    Within a ``group`` the measurements touch disjoint data (parallel composition: the
    group costs its largest epsilon); the groups add up (sequential composition).
    """

    entries: list[Measurement] = field(default_factory=list)
    randomness: str = ""  # the source the noise was drawn from (dpmodels.core.randomness.describe)

    def record(self, query: str, group: str, sensitivity, epsilon, noise: str, count: int = 1) -> Fraction:
        """Record a measurement and return its noise scale; a scale no exact sampler can draw is refused.

        Mechanisms record before they draw, so a refused measurement never draws noise.
        """
        sens = exact(sensitivity, "sensitivity")
        eps = as_epsilon(epsilon)
        scale = sens / eps
        try:
            exact_fraction(scale, "scale")  # the samplers' own limit, checked before anything is drawn
        except PrivacyParameterError as err:
            raise PrivacyParameterError(
                "epsilon",
                f"{float(eps):.6g} for {query!r}: the exact samplers cannot represent its scale {err.problem}",
            ) from err
        m = Measurement(query, group, sens, eps, scale, noise, count)
        self.entries.append(m)
        return m.scale

    def group_epsilons(self) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for m in self.entries:
            out[m.group] = max(out.get(m.group, Fraction(0)), m.epsilon)
        return out

    @property
    def total_epsilon(self) -> Fraction:
        return sum(self.group_epsilons().values(), Fraction(0))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "query": m.query,
                    "group": m.group,
                    "sensitivity": float(m.sensitivity),
                    "epsilon": float(m.epsilon),
                    "scale": float(m.scale),
                    "noise": m.noise,
                    "cells": m.count,
                }
                for m in self.entries
            ]
        )
