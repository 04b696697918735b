"""The multilinear extension ``f(x) = E_{X ~ x}[F(X)]`` and its gradient (spec 1.2).

Modes:
- ``exact_enum``: sum over all ``2^|E|`` sets (|E| <= 16), the test oracle;
- ``closed_form``: polynomial formulas for weighted coverage and facility location (no oracle calls),
  also as Pyomo expressions;
- ``sampled``: :class:`SampledGradient`, ``m`` common random sets fixed before seeing the data.

The gradient is the true partial derivative ``E[F(R + e) - F(R - e)]`` (A4); ``kind="marginal"``
gives the Calinescu weight ``E[F(R + e) - F(R)] = (1 - x_e) d_e f``.  Both have sensitivity ``2 Delta``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyomo.environ as pyo

from dpmodels.core.errors import DataValidationError

from ..data import SetFunction
from .set_functions import FacilityLocation, WeightedCoverage

__all__ = [
    "multilinear",
    "gradient",
    "SampledGradient",
    "coverage_value",
    "coverage_gradient",
    "facility_value",
    "facility_gradient",
    "pyomo_multilinear",
    "ENUM_MAX",
]

ENUM_MAX = 16


def _point(F: SetFunction, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (F.n,) or not np.all(np.isfinite(x)) or x.min() < 0 or x.max() > 1:
        raise DataValidationError("x", f"must be a point of [0, 1]^{F.n}")
    return x


def has_closed_form(F: SetFunction) -> bool:
    return isinstance(F, WeightedCoverage | FacilityLocation)


def multilinear(F: SetFunction, x, mode: str = "auto") -> float:
    """``f(x)``; ``mode`` is ``auto`` (closed form when available, else enumeration), ``closed_form``
    or ``exact_enum``.

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    x : array_like
        A point of ``[0, 1]^E``.
    mode : {"auto", "closed_form", "exact_enum"}, default "auto"
        How ``f`` is computed.
    """
    x = _point(F, x)
    mode = _mode(F, mode)
    if mode == "exact_enum":
        return float(sum(p * val for p, val in _enumerate(F, x)))
    if isinstance(F, WeightedCoverage):
        return coverage_value(F, x)
    return facility_value(F, x)


def gradient(F: SetFunction, x, mode: str = "auto", kind: str = "partial") -> np.ndarray:
    """``grad f(x)`` (``kind="partial"``) or the marginal weights ``(1 - x) * grad f`` (``"marginal"``).

    Parameters
    ----------
    F : SetFunction
        The objective (the private data), with its declared sensitivity.
    x : array_like
        A point of ``[0, 1]^E``.
    mode : {"auto", "closed_form", "exact_enum"}, default "auto"
        How the gradient is computed.
    kind : {"partial", "marginal"}, default "partial"
        The partial derivatives, or ``(1 - x) * grad f``.
    """
    x = _point(F, x)
    if kind not in ("partial", "marginal"):
        raise DataValidationError("kind", f"must be 'partial' or 'marginal', got {kind!r}")
    mode = _mode(F, mode)
    if mode == "exact_enum":
        g = _enum_gradient(F, x)
    elif isinstance(F, WeightedCoverage):
        g = coverage_gradient(F, x)
    else:
        g = facility_gradient(F, x)
    return g * (1.0 - x) if kind == "marginal" else g


def _mode(F, mode: str) -> str:
    if mode == "auto":
        mode = "closed_form" if has_closed_form(F) else "exact_enum"
    if mode == "closed_form" and not has_closed_form(F):
        raise DataValidationError("mode", f"no closed form for {type(F).__name__}; use exact_enum or sampled")
    if mode == "exact_enum" and F.n > ENUM_MAX:
        raise DataValidationError("mode", f"exact_enum sums 2^{F.n} sets; allowed for |E| <= {ENUM_MAX}")
    if mode not in ("closed_form", "exact_enum"):
        raise DataValidationError("mode", f"unknown mode {mode!r}")
    return mode


def _enumerate(F: SetFunction, x):
    for bits in itertools.product([False, True], repeat=F.n):
        mask = np.array(bits)
        p = float(np.prod(np.where(mask, x, 1.0 - x)))
        yield p, F(mask)


def _enum_gradient(F: SetFunction, x) -> np.ndarray:
    values = {}
    for bits in itertools.product([False, True], repeat=F.n):
        values[bits] = F(np.array(bits))
    g = np.zeros(F.n)
    for bits, val in values.items():
        mask = np.array(bits)
        for e in np.flatnonzero(~mask):
            others = np.delete(np.where(mask, x, 1.0 - x), e)
            up = list(bits)
            up[e] = True
            g[e] += float(np.prod(others)) * (values[tuple(up)] - val)
    return g


# ----------------------------------------------------------------------------- coverage


def _segments(F: WeightedCoverage, x):
    """Per user: (1 - x_u) over its elements, the product of non-zero factors, and zero counts."""
    inc = F.incidence
    q = 1.0 - x[inc.indices]
    zero = q <= 0.0
    safe = np.where(zero, 1.0, q)
    user = np.repeat(np.arange(F.n_users), np.diff(inc.indptr))
    log_prod = np.bincount(user, weights=np.log(safe), minlength=F.n_users)
    zeros = np.bincount(user, weights=zero.astype(float), minlength=F.n_users)
    return q, zero, safe, user, np.exp(log_prod), zeros


def coverage_value(F: WeightedCoverage, x) -> float:
    """``sum_v w_v (1 - prod_{u in N(v)} (1 - x_u))``."""
    _, _, _, _, prod, zeros = _segments(F, x)
    miss = np.where(zeros > 0, 0.0, prod)
    return float(F.weights @ (1.0 - miss))


def coverage_gradient(F: WeightedCoverage, x) -> np.ndarray:
    """``d_u f = sum_{v ni u} w_v prod_{u' in N(v) - u} (1 - x_u')``."""
    q, zero, safe, user, prod, zeros = _segments(F, x)
    other_zero = zeros[user] - zero
    excl = np.where(other_zero > 0, 0.0, prod[user] / safe)
    return np.bincount(F.incidence.indices, weights=F.weights[user] * excl, minlength=F.n)


# ----------------------------------------------------------------------------- facility location


def _facility_columns(F: FacilityLocation):
    """Per customer: element indices and benefits sorted by benefit descending (ties by index)."""
    if not hasattr(F, "_sorted"):
        c = F.benefit
        cols = []
        for j in range(F.n_customers):
            idx = c.indices[c.indptr[j] : c.indptr[j + 1]]
            val = c.data[c.indptr[j] : c.indptr[j + 1]]
            order = np.lexsort((idx, -val))
            cols.append((idx[order], val[order]))
        F._sorted = cols
    return F._sorted


def facility_value(F: FacilityLocation, x) -> float:
    """``sum_j sum_l c_(l)j x_(l) prod_{l' < l} (1 - x_(l'))``."""
    total = 0.0
    for idx, val in _facility_columns(F):
        xs = x[idx]
        before = np.concatenate(([1.0], np.cumprod(1.0 - xs)[:-1]))
        total += float(np.sum(val * xs * before))
    return total


def facility_gradient(F: FacilityLocation, x) -> np.ndarray:
    """``d_i = prod_{l < p} (1 - x_(l)) * (c_p - E[max over the elements after p])`` per customer."""
    g = np.zeros(F.n)
    for idx, val in _facility_columns(F):
        xs = x[idx]
        before = np.concatenate(([1.0], np.cumprod(1.0 - xs)[:-1]))
        tail = np.zeros(idx.size)  # tail[p] = E[max of the elements after position p]
        acc = 0.0
        for p in range(idx.size - 1, -1, -1):
            tail[p] = acc
            acc = val[p] * xs[p] + (1.0 - xs[p]) * acc
        np.add.at(g, idx, before * (val - tail))
    return g


# ----------------------------------------------------------------------------- sampled


class SampledGradient:
    """Gradient estimate from ``m`` common random sets ``R_s ~ x`` (spec 1.2, 8.2.4).

    ``m`` is fixed before the data is seen and the sets come from this object's own rng, which
    never sees data: for a fixed draw, ``|hat d_e f_D - hat d_e f_D'| <= 2 Delta``.  Costs
    ``m (|E| + 1)`` oracle calls per gradient.
    """

    def __init__(self, m: int, rng):
        if int(m) < 1:
            raise DataValidationError("m", f"the sample count must be >= 1, got {m}")
        self.m = int(m)
        self.rng = rng

    def draw(self, x) -> np.ndarray:
        """The ``m`` random sets for point ``x`` (data-independent)."""
        x = np.asarray(x, dtype=np.float64)
        return self.rng.random((self.m, x.size)) < x

    def __call__(self, F: SetFunction, x, kind: str = "partial", sets=None) -> np.ndarray:
        x = _point(F, x)
        sets = self.draw(x) if sets is None else sets
        g = np.zeros(F.n)
        for R in sets:
            base = F(R)
            for e in range(F.n):
                other = R.copy()
                other[e] = not R[e]
                val = F(other)
                if kind == "marginal":
                    g[e] += 0.0 if R[e] else val - base
                else:
                    g[e] += (base - val) if R[e] else (val - base)
        return g / self.m

    @staticmethod
    def hoeffding_radius(max_value: float, n: int, m: int, beta: float) -> float:
        """``M_F sqrt(ln(2|E|/beta) / (2m))``: all coordinates within it w.p. >= 1 - beta."""
        return max_value * math.sqrt(math.log(2 * n / beta) / (2 * m))


# ----------------------------------------------------------------------------- Pyomo


def pyomo_multilinear(F: SetFunction, y):
    """``f(y)`` as a Pyomo expression in the variables ``y[0..n-1]`` (coverage, facility location)."""
    if isinstance(F, WeightedCoverage):
        inc = F.incidence
        terms = []
        for v in range(F.n_users):
            members = inc.indices[inc.indptr[v] : inc.indptr[v + 1]]
            if members.size and F.weights[v] > 0:
                terms.append(F.weights[v] * (1 - pyo.prod(1 - y[int(u)] for u in members)))
        return pyo.quicksum(terms)
    if isinstance(F, FacilityLocation):
        terms = []
        for idx, val in _facility_columns(F):
            for p in range(idx.size):
                miss = [1 - y[int(i)] for i in idx[:p]]
                terms.append(float(val[p]) * y[int(idx[p])] * (pyo.prod(miss) if miss else 1))
        return pyo.quicksum(terms)
    raise DataValidationError("F", f"no closed-form multilinear expression for {type(F).__name__}")
