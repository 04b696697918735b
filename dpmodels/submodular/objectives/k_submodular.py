"""The k-submodular objectives of the private k-submodular family (spec 1.3, paper Examples 5.1, 5.2).

Each is a :class:`..data.KSubmodularFunction` on vectors ``s`` in ``{0..k}^E`` with a declared
sensitivity: k-coverage (one incidence matrix per colour) and separable sums ``sum_i g_i(S_i)`` of
set functions, of which the paper's Examples 5.1 (:func:`ad_slots`) and 5.2
(:func:`facility_variant`) are instances.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from ..data import KSubmodularFunction, SetFunction, positive_bound
from .set_functions import FacilityLocation, WeightedCoverage, declared_record_bound, zero_one_incidence

__all__ = ["KCoverage", "SeparableSum", "ad_slots", "facility_variant"]


class KCoverage(KSubmodularFunction):
    """``F(s) = w(union_{e in supp s} N_{s(e)}(e))``; ``incidence[i]`` is the |E| x |V| matrix of ``N_{i+1}``.

    Parameters
    ----------
    incidence : sequence of matrices
        One |E| x |V| 0/1 matrix per type.
    weights : array_like, optional
        One weight per user (default 1).
    sensitivity : float, optional
        The declared bound ``Delta`` (required with ``weights``).
    """

    def __init__(self, incidence: Sequence, weights=None, sensitivity: float | None = None):
        mats = [
            zero_one_incidence(sp.csr_matrix(m, dtype=np.float64), f"incidence[{i}]") for i, m in enumerate(incidence)
        ]
        if not mats:
            raise DataValidationError("incidence", "need one incidence matrix per colour")
        shape = mats[0].shape
        if any(m.shape != shape for m in mats):
            raise DataValidationError("incidence", "all colours need the same |E| x |V| shape")
        n, m = shape
        w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (m,) or np.any(w < 0) or not np.all(np.isfinite(w)):
            raise DataValidationError("weights", f"need {m} finite non-negative weights")
        # row e*k + (i-1) is N_i(e)
        stacked = sp.vstack(mats).tocsr()
        order = np.arange(n * len(mats)).reshape(len(mats), n).T.ravel()
        self.rows = stacked[order]
        self.weights = w
        delta = declared_record_bound(weights, sensitivity, "weights", w)
        # M_F = Delta |V| (declared bound times the public user count), not the data's w(V) (review2 F6)
        super().__init__(n, len(mats), delta, delta * m)
        self.public_max_value = True

    def _value(self, s):
        supp = np.flatnonzero(s)
        if supp.size == 0:
            return 0.0
        hit = self.rows[supp * self.k + s[supp] - 1].sum(axis=0).A1
        return float(self.weights[hit > 0].sum())

    def incidence(self, colour: int) -> sp.csr_matrix:
        """``N_colour`` as an |E| x |V| matrix (colour in 1..k)."""
        return self.rows[np.arange(self.n) * self.k + colour - 1]


class SeparableSum(KSubmodularFunction):
    """``F(s) = sum_i g_i(S_i)`` with monotone submodular ``g_i`` (paper Examples 5.1, 5.2).

    Parameters
    ----------
    parts : sequence of SetFunction
        ``g_1, ..., g_k``.
    sensitivity : float, optional
        A declared ``Delta`` at least the parts' largest (default: that largest).
    """

    def __init__(self, parts: Sequence[SetFunction], sensitivity: float | None = None):
        if not parts:
            raise DataValidationError("parts", "need one set function per colour")
        n = parts[0].n
        if any(g.n != n for g in parts):
            raise DataValidationError("parts", "all colours need one ground set")
        self.parts = list(parts)
        default = sum(g.sensitivity for g in parts)
        if sensitivity is not None and positive_bound(sensitivity, "sensitivity") < max(g.sensitivity for g in parts):
            # one record may change a single colour's term by its part's Delta: never declare less (F4)
            raise PrivacyParameterError("sensitivity", "must be at least the largest part sensitivity")
        super().__init__(
            n, len(parts), default if sensitivity is None else sensitivity, sum(g.max_value for g in parts)
        )
        self.public_max_value = all(g.public_max_value for g in parts)

    def _value(self, s):
        return sum(g._value(s == i + 1) for i, g in enumerate(self.parts))


def ad_slots(incidences: Sequence) -> SeparableSum:
    """Example 5.1: ``F = sum_i |N_{G_i}(S_i)|``; replace-one-user sensitivity ``k`` (spec 7.2.4)."""
    parts = [WeightedCoverage(m) for m in incidences]
    return SeparableSum(parts, sensitivity=float(len(parts)))


def facility_variant(costs: Sequence, C: float) -> SeparableSum:
    """Example 5.2: ``sum_e sum_i (C - c_i(e, S_i))`` with ``c_i(e, empty) = C`` (A15 reading).

    ``costs[i]`` is the |E| x |E| matrix ``c_i(e', e)`` (facility e' serving land e) in ``[0, C]``;
    the term of colour ``i`` is the facility location ``sum_e max_{e' in S_i} (C - c_i(e', e))``.
    Sensitivity ``k C`` (one land's costs in every colour).
    """
    parts = []
    for i, c in enumerate(costs):
        c = np.asarray(c, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] != c.shape[1] or c.min() < 0 or c.max() > C:
            raise DataValidationError(f"costs[{i}]", f"must be a square matrix with entries in [0, C={C}]")
        parts.append(FacilityLocation(C - c, benefit_bound=float(C)))
    return SeparableSum(parts, sensitivity=len(parts) * float(C))
