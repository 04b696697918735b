"""Privacy budgets: exact splits, and the one accountant every family uses.

:class:`PrivacyLedger` records every step of a mechanism: a noisy measurement with its
sensitivity, epsilon and noise scale (:meth:`PrivacyLedger.record`: PGSR, TopDown, facility
location), a zCDP measurement with its squared L2 sensitivity, rho and variance
(:meth:`PrivacyLedger.record_gaussian`: the discrete Gaussian), or a step of known privacy cost
such as one exponential mechanism (:meth:`PrivacyLedger.charge`: the submodular algorithms).
Steps of one ``group`` touch disjoint parts of the data and compose in parallel (the group costs
its largest epsilon and delta, or rho); groups compose sequentially.  Totals: basic composition in exact arithmetic
(:attr:`PrivacyLedger.total_rho` adds the groups' rhos, a pure step costing ``eps^2 / 2``), and the
corrected advanced compositions (A8 of the submodular spec) for long sequences: zCDP
(Bun-Steinke, ``rho = sum eps_g^2 / 2``, ``eps = rho + 2 sqrt(rho ln(1/delta'))``) and
Dwork-Rothblum-Vadhan (``eps0 sqrt(2k ln(1/delta')) + k eps0 (e^eps0 - 1)``); :meth:`total`
reports the smallest valid bound (with zCDP steps also Canonne-Kamath-Steinke's conversion of
the total rho, :func:`dpmodels.core.zcdp.epsilon_of_rho`).  A zCDP step has no pure-DP epsilon:
its ``epsilon`` is ``inf``, so :attr:`PrivacyLedger.total_epsilon` of a ledger holding one is
``inf`` and its guarantee is read in rho (or in ``(eps, delta)`` through :meth:`PrivacyLedger.total`).
A private ledger refuses components that read the data without noise (:meth:`require_private`),
and it records where the randomness came from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import pandas as pd

from .errors import PrivacyParameterError
from .noise import as_epsilon, check_gaussian_range, check_noise_range, exact, float_up
from .randomness import SECURE_SOURCE, describe
from .samplers import exact_fraction
from .zcdp import bun_steinke_epsilon, drv_epsilon, epsilon_of_rho, rho_of_epsilon

__all__ = ["split_budget", "Measurement", "PrivacyLedger", "NonPrivateComponentError", "check_epsilon", "step_epsilon"]


class NonPrivateComponentError(PrivacyParameterError):
    """A component that reads private data without a privacy guarantee was used in private mode."""


def check_epsilon(epsilon, field: str = "epsilon") -> float:
    """``epsilon`` as a float in ``[0, inf]`` (``inf``: the non-private limit, ``0``: uniform)."""
    if isinstance(epsilon, bool):
        raise PrivacyParameterError(field, f"must be a number, got {epsilon!r}")
    try:
        eps = float(epsilon)
    except (TypeError, ValueError) as err:
        raise PrivacyParameterError(field, f"must be a number, got {epsilon!r}") from err
    if math.isnan(eps) or eps < 0:
        raise PrivacyParameterError(field, f"must be >= 0 (0: uniform, inf: non-private), got {epsilon!r}")
    return eps


def step_epsilon(epsilon, field: str = "epsilon") -> Fraction | float:
    """A step's epsilon exactly: a Fraction (a float read as the decimal it prints as), ``inf``
    kept as ``inf`` (the non-private limit, allowed only in a non-private ledger's totals), 0 allowed."""
    value = check_epsilon(epsilon, field)
    return math.inf if math.isinf(value) else exact(epsilon, field)


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
    """One step: a noisy query with ``scale = sensitivity / epsilon`` on ``count`` cells, a zCDP
    query (``rho`` set, ``epsilon = inf``) with ``scale = sigma^2 = sensitivity / (2 rho)`` for its
    squared L2 ``sensitivity``, or (``sensitivity`` and ``scale`` None) a step of known cost such as
    an exponential mechanism."""

    query: str
    group: str
    sensitivity: Fraction | None
    epsilon: Fraction | float
    scale: Fraction | None
    noise: str
    count: int = 1
    delta: Fraction = Fraction(0)
    rho: Fraction | None = None

    def __post_init__(self):
        if self.rho is not None:
            if self.scale != self.sensitivity / (2 * self.rho) or not math.isinf(self.epsilon) or self.delta:
                expected = self.sensitivity / (2 * self.rho)
                raise PrivacyParameterError(
                    "scale", f"{self.scale} != sensitivity/(2 rho) = {expected} (eps inf, delta 0) for {self.query}"
                )
        elif self.scale is not None and self.scale != self.sensitivity / self.epsilon:
            raise PrivacyParameterError(
                "scale", f"{self.scale} != sensitivity/epsilon = {self.sensitivity / self.epsilon} for {self.query}"
            )

    @property
    def name(self) -> str:
        return self.query

    def exact(self) -> tuple[Fraction | float, Fraction]:
        return self.epsilon, self.delta

    @property
    def zcdp_rho(self) -> Fraction | float:
        """The step's zCDP rho: its own, or ``eps^2 / 2`` for a pure step (Bun-Steinke, Prop. 1.4; the
        delta of an approximate step is added apart, as approximate zCDP); ``inf`` for ``eps = inf``."""
        if self.rho is not None:
            return self.rho
        return math.inf if math.isinf(self.epsilon) else rho_of_epsilon(self.epsilon)


@dataclass
class PrivacyLedger:
    """The accountant of every family: steps grouped into parallel groups that compose sequentially.

    Within a ``group`` the steps touch disjoint data (parallel composition: the group costs its
    largest epsilon and delta); the groups add up (sequential composition).  ``private=False``
    marks a ledger of a non-private run (limits, diagnostics): it may hold ``eps = inf`` steps
    and lets non-private components run.
    """

    entries: list[Measurement] = field(default_factory=list)
    randomness: str = ""  # the source the noise was drawn from (dpmodels.core.randomness.describe)
    private: bool = True
    diagnostics: list[str] = field(default_factory=list)

    # ---------------------------------------------------------------- recording
    def record(self, query: str, group: str, sensitivity, epsilon, noise: str, count: int = 1) -> Fraction:
        """Record a measurement and return its noise scale; a scale no exact sampler can draw is refused.

        Mechanisms record before they draw, so a refused measurement never draws noise.
        """
        sens = exact(sensitivity, "sensitivity")
        eps = as_epsilon(epsilon)
        scale = sens / eps
        try:
            exact_fraction(scale, "scale")  # the samplers' own limit, checked before anything is drawn
            check_noise_range(scale, "scale")  # and the exact integer range of a noisy count
        except PrivacyParameterError as err:
            raise PrivacyParameterError(
                "epsilon",
                f"{float(eps):.6g} for {query!r} is refused: noise scale {err.problem}",
            ) from err
        m = Measurement(query, group, sens, eps, scale, noise, count)
        self.entries.append(m)
        return m.scale

    def record_gaussian(self, query: str, group: str, sensitivity, rho, noise: str, count: int = 1) -> Fraction:
        """Record a zCDP measurement and return its variance ``sigma^2 = sensitivity / (2 rho)``, exact.

        ``sensitivity`` is the query's *squared* L2 sensitivity ``Delta_2^2``: the discrete Gaussian
        at ``sigma^2`` is then ``Delta_2^2 / (2 sigma^2) = rho``-zCDP (Canonne, Kamath and Steinke
        2020).  A variance whose draws could leave the exact integer range is refused; mechanisms
        record before they draw, so a refused measurement never draws noise.
        """
        sens = exact(sensitivity, "sensitivity")
        if sens <= 0:
            raise PrivacyParameterError("sensitivity", f"must be > 0, got {sensitivity!r}")
        r = as_epsilon(rho, "rho")
        sigma2 = sens / (2 * r)
        try:
            check_gaussian_range(sigma2)
        except PrivacyParameterError as err:
            raise PrivacyParameterError("rho", f"{float(r):.6g} for {query!r} is refused: it {err.problem}") from err
        m = Measurement(query, group, sens, math.inf, sigma2, noise, count, Fraction(0), r)
        self.entries.append(m)
        return m.scale

    def charge(self, name: str, epsilon, delta=0, group: str | None = None, noise: str = "") -> None:
        """Record a step of known cost ``(epsilon, delta)`` (kept exactly); its own sequential
        group unless ``group`` names one it shares (parallel) with other steps."""
        eps = step_epsilon(epsilon)
        dlt = exact(delta, "delta")
        if not 0 <= dlt < 1:
            raise PrivacyParameterError("delta", f"must be in [0, 1), got {delta}")
        group = group if group is not None else f"step {len(self.entries) + 1}: {name}"
        self.entries.append(Measurement(name, group, None, eps, None, noise, 1, dlt))

    def note_randomness(self, rng) -> None:
        """Record the source of ``rng``; once a seeded (not private) stream is noted it stays noted."""
        if self.randomness in ("", SECURE_SOURCE):
            self.randomness = describe(rng)

    def require_private(self, component: str, diagnostic: bool = False) -> None:
        """Refuse ``component`` (it reads private data without noise) in a private ledger.

        ``diagnostic=True`` allows it when its result is reported only and never feeds an output.
        """
        if diagnostic:
            self.diagnostics.append(component)
            return
        if self.private:
            raise NonPrivateComponentError(
                "component",
                f"{component} reads the private data without a privacy guarantee; it is refused in private mode "
                "(use the private algorithm, or pass diagnostic=True for a report that never feeds the output)",
            )

    # ---------------------------------------------------------------- totals
    @property
    def charges(self) -> list[Measurement]:
        """The steps, in order (the name the submodular code reads them by)."""
        return self.entries

    def groups(self) -> dict[str, tuple[Fraction | float, Fraction]]:
        """``group -> (epsilon, delta)``: the largest of each over the group's parallel steps."""
        out: dict[str, tuple] = {}
        for m in self.entries:
            eps, dlt = out.get(m.group, (Fraction(0), Fraction(0)))
            out[m.group] = (max(eps, m.epsilon), max(dlt, m.delta))
        return out

    def group_epsilons(self) -> dict[str, Fraction | float]:
        return {g: eps for g, (eps, _) in self.groups().items()}

    def group_rhos(self) -> dict[str, Fraction | float]:
        """``group -> rho``: the largest zCDP rho over the group's parallel steps (:attr:`Measurement.zcdp_rho`)."""
        out: dict[str, Fraction | float] = {}
        for m in self.entries:
            out[m.group] = max(out.get(m.group, Fraction(0)), m.zcdp_rho)
        return out

    @property
    def is_zcdp(self) -> bool:
        """Whether a step is a zCDP measurement (then the ledger's guarantee is read in rho)."""
        return any(m.rho is not None for m in self.entries)

    @property
    def total_rho(self) -> Fraction | float:
        """The zCDP rho of the whole ledger: the groups' rhos add (sequential composition), exactly."""
        return sum(self.group_rhos().values(), Fraction(0))

    @property
    def steps(self) -> int:
        """Sequentially composed steps (groups)."""
        return len(self.groups())

    def basic_exact(self) -> tuple[Fraction | float, Fraction]:
        """Basic composition in exact arithmetic: ``(sum eps_g, sum delta_g)`` (``inf`` if a step is)."""
        groups = self.groups().values()
        return sum((e for e, _ in groups), Fraction(0)), sum((d for _, d in groups), Fraction(0))

    def basic(self) -> tuple[float, float]:
        eps, dlt = self.basic_exact()
        return float_up(eps), float_up(dlt)

    @property
    def total_epsilon(self) -> Fraction | float:
        return self.basic_exact()[0]

    @property
    def total_delta(self) -> Fraction:
        return self.basic_exact()[1]

    def zcdp(self, delta_prime) -> tuple[Fraction, Fraction]:
        """Bun-Steinke: ``eps_g``-DP is ``eps_g^2/2``-zCDP; ``rho``-zCDP is ``(rho + 2 sqrt(rho ln 1/d'), d')``.

        The epsilon is an exact upper bound (:func:`dpmodels.core.zcdp.bun_steinke_epsilon`, rounded up)."""
        d_prime = _check_delta_prime(delta_prime)
        rho, delta = self.total_rho, d_prime + self.total_delta
        return (math.inf if math.isinf(rho) else bun_steinke_epsilon(rho, d_prime)), delta

    def cks(self, delta_prime) -> tuple[Fraction | float, Fraction]:
        """Canonne-Kamath-Steinke: ``rho``-zCDP is ``(eps, d')``-DP with the eps of
        :func:`dpmodels.core.zcdp.epsilon_of_rho` (rounded up), tighter than Bun-Steinke."""
        d_prime = _check_delta_prime(delta_prime)
        rho, delta = self.total_rho, d_prime + self.total_delta
        return (math.inf if math.isinf(rho) else epsilon_of_rho(rho, d_prime)), delta

    def drv(self, delta_prime) -> tuple[Fraction, Fraction]:
        """Dwork-Rothblum-Vadhan with ``eps0 = max eps_g``: ``eps0 sqrt(2k ln 1/d') + k eps0 (e^eps0 - 1)``,
        an exact upper bound (:func:`dpmodels.core.zcdp.drv_epsilon`, rounded up)."""
        d_prime = _check_delta_prime(delta_prime)
        groups = list(self.groups().values())
        k = len(groups)
        eps0 = max((e for e, _ in groups), default=Fraction(0))
        delta0 = max((d for _, d in groups), default=Fraction(0))
        if math.isinf(eps0):
            return math.inf, d_prime + k * delta0
        return drv_epsilon(eps0, k, d_prime), d_prime + k * delta0

    def total(self, delta_prime=None) -> tuple[float, float]:
        """The smallest valid ``(eps, delta)`` bound: basic, or with ``delta_prime`` also zCDP and DRV
        (the minimum epsilon among the bounds; its delta comes with it), as floats for reports."""
        bounds = [self.basic_exact()]
        if delta_prime is not None:
            bounds += [self.zcdp(delta_prime), self.drv(delta_prime)]
            if self.is_zcdp:
                bounds.append(self.cks(delta_prime))
        eps, delta = min(bounds, key=lambda b: (b[0], b[1]))
        return float_up(eps), float_up(delta)

    def summary(self, delta_prime: float | None = None) -> dict:
        eps, delta = self.total(delta_prime)
        basic = self.basic()
        out = {
            "steps": self.steps,
            "basic_epsilon": basic[0],
            "basic_delta": basic[1],
            "epsilon": eps,
            "delta": delta,
            "diagnostics": list(self.diagnostics),
            "randomness": self.randomness,
        }
        if self.is_zcdp:
            out["rho"] = float(self.total_rho)
        return out

    def to_records(self) -> list[dict]:
        """Every step as a dict, its sensitivity, epsilon, delta and scale as exact fractions (text) and
        floats: the per-query, per-level budget of a release's ledger and manifest.  A zCDP step adds its
        ``rho`` and says that its sensitivity is the squared L2 one and its scale ``sigma^2``; its epsilon is
        null (it has no pure-DP epsilon)."""
        rows = []
        for m in self.entries:
            row = {"query": m.query, "group": m.group, "noise": m.noise, "cells": m.count}
            for name in ("sensitivity", "epsilon", "delta", "scale") + (("rho",) if m.rho is not None else ()):
                value = getattr(m, name)
                row[name] = None if value is None else float(value)
                row[f"{name}_exact"] = None if value is None else str(value)
            if m.rho is not None:  # no pure-DP epsilon (JSON has no inf): null, the guarantee is the rho
                row["epsilon"] = row["epsilon_exact"] = None
                row["sensitivity_norm"] = "squared L2"
                row["scale_is"] = "sigma^2 (the discrete Gaussian's variance parameter)"
            rows.append(row)
        return rows

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "query": m.query,
                    "group": m.group,
                    "sensitivity": None if m.sensitivity is None else float(m.sensitivity),
                    "epsilon": float(m.epsilon),
                    "delta": float(m.delta),
                    "scale": None if m.scale is None else float(m.scale),
                    "noise": m.noise,
                    "cells": m.count,
                }
                for m in self.entries
            ]
        )


def _check_delta_prime(delta_prime) -> Fraction:
    value = exact(delta_prime, "delta_prime") if not isinstance(delta_prime, bool) else None
    if value is None or not 0 < value < 1:
        raise PrivacyParameterError("delta_prime", f"must be in (0, 1), got {delta_prime}")
    return value
