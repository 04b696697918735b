"""The set-function objectives of the private submodular family (spec 1.1, 1.2, 1.6, 9.1).

Each class is a :class:`..data.SetFunction` whose ``Delta`` is never read off the private data: it
takes a declared, data-independent record bound (coverage weights, facility ``benefit_bound``,
``DecomposableSum.record_bound``) and refuses records outside it.  Classes: weighted coverage
(sparse incidence, so 10^5 elements never allocate n^2), facility location, decomposable sums (CPP,
every record certified at construction), and generic callables (validated by
:mod:`.checks`: a callable declared monotone submodular that is not is refused).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

from ..data import SetFunction, positive_bound
from .checks import EXHAUSTIVE_CHECK_MAX, submodularity_violations

__all__ = ["WeightedCoverage", "FacilityLocation", "DecomposableSum", "CallableFunction"]


def declared_record_bound(given, sensitivity, field: str, values: np.ndarray) -> float:
    """The declared per-record bound ``Delta``: 1 for the public unit-weight default, otherwise
    ``sensitivity`` must be declared and every record value must lie in ``[0, Delta]`` (never clipped).

    Parameters
    ----------
    given : array_like or None
        The per-record values the caller passed (None for the unit-weight default).
    sensitivity : float or None
        The declared data-independent bound ``Delta``.
    field : str
        The name of the values, named by the error.
    values : numpy.ndarray
        The per-record values as used.
    """
    if sensitivity is None:
        if given is not None:
            raise PrivacyParameterError(
                "sensitivity", f"explicit {field} need a declared data-independent bound Delta (spec A10)"
            )
        return 1.0
    bound = positive_bound(sensitivity, "sensitivity")
    if values.size and values.max() > bound:
        raise DataValidationError(field, "a record's value exceeds the declared bound (values are not quoted: private)")
    return bound


def zero_one_incidence(mat, field: str):
    """``mat`` with explicit zeros dropped, refusing any other stored value than 1: a 0.5, a
    negative or a NaN entry is not an incidence and is never coerced into one (review F2).

    Parameters
    ----------
    mat : scipy.sparse matrix
        An incidence matrix (changed in place: duplicates summed, zeros dropped).
    field : str
        The name the error gives for ``mat``.
    """
    mat.sum_duplicates()
    mat.eliminate_zeros()
    if mat.nnz and not np.all(mat.data == 1.0):
        raise DataValidationError(field, "every stored entry must be 0 or 1 (an incidence matrix)")
    return mat


def _row_entries(csr, rows: np.ndarray) -> np.ndarray:
    """Column indices of the given rows of a CSR matrix, concatenated (vectorised gather)."""
    starts, ends = csr.indptr[rows], csr.indptr[rows + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return csr.indices[offsets + np.arange(total)]


class WeightedCoverage(SetFunction):
    """``F(S) = sum_v w_v [N(v) meets S]``: ``incidence`` is a sparse |E| x |V| 0/1 matrix.

    Users ``v`` are the private records; replacing one user's incidences changes ``F`` by at most
    ``max_v w_v`` (A9).  ``sensitivity`` is the *declared* global bound ``Delta`` on any user's weight
    (data-independent, A10): with unit weights (``weights=None``) it defaults to 1; explicit weights
    need it declared, and a weight above it is refused (``F`` would then change by more than ``Delta``).

    Parameters
    ----------
    incidence : scipy.sparse matrix or array_like
        |E| x |V|, 0/1: which users each element covers.
    weights : array_like, optional
        One weight per user (default 1).
    sensitivity : float, optional
        The declared bound ``Delta`` on a user's weight (required with ``weights``).
    """

    def __init__(self, incidence, weights=None, sensitivity: float | None = None):
        inc = zero_one_incidence(sp.csc_matrix(incidence, dtype=np.float64), "incidence")
        n, m = inc.shape
        w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (m,):
            raise DataValidationError("weights", f"need one weight per user ({m}), got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise DataValidationError("weights", "must be finite and non-negative (coverage is then monotone)")
        self.incidence = inc
        self.by_element = inc.tocsr()
        self.weights = w
        delta = declared_record_bound(weights, sensitivity, "weights", w)
        # public M_F: unit weights sum to |V|; declared weights are each at most Delta
        super().__init__(n, delta, float(m) if weights is None else delta * m)
        self.public_max_value = True

    @property
    def n_users(self) -> int:
        return self.incidence.shape[1]

    def _value(self, mask):
        users = _row_entries(self.by_element, np.flatnonzero(mask))
        return float(self.weights[np.unique(users)].sum()) if users.size else 0.0

    def replace_user(self, v: int, elements: Iterable[int], weight: float | None = None) -> WeightedCoverage:
        """The neighbouring dataset in which user ``v`` has incidences ``elements`` (spec 1.6)."""
        inc = self.incidence.tolil(copy=True)
        inc[:, v] = 0
        for e in elements:
            inc[int(e), v] = 1
        w = self.weights.copy()
        if weight is not None:
            w[v] = weight
        return WeightedCoverage(inc.tocsc(), w, self.sensitivity)


class FacilityLocation(SetFunction):
    """``F(S) = sum_j max_{i in S} c_ij`` with ``c`` in ``[0, B]`` (|E| x customers, dense or sparse).

    Customers are the private records.  ``benefit_bound`` ``B`` is a *declared*, data-independent
    bound on every benefit; replacing one customer changes ``F`` by at most ``B``, so ``Delta = B``
    (A10).  A benefit outside ``[0, B]`` is refused, never clipped.  ``max_value = B * customers``
    is public too (the number of customers is public under replace-one).

    Parameters
    ----------
    benefit : array_like or scipy.sparse matrix
        |E| x customers, in ``[0, B]``.
    benefit_bound : float
        The declared bound ``B``.
    """

    def __init__(self, benefit, benefit_bound: float):
        c = sp.csc_matrix(benefit, dtype=np.float64)
        c.eliminate_zeros()
        bound = positive_bound(benefit_bound, "benefit_bound")
        if c.nnz and (not np.all(np.isfinite(c.data)) or c.data.min() < 0 or c.data.max() > bound):
            raise DataValidationError("benefit", f"every benefit must be finite and in [0, benefit_bound={bound}]")
        self.benefit = c
        self.benefit_bound = bound
        self.by_element = c.tocsr()
        super().__init__(c.shape[0], bound, bound * c.shape[1])
        self.public_max_value = True

    @property
    def n_customers(self) -> int:
        return self.benefit.shape[1]

    def _value(self, mask):
        if not mask.any():
            return 0.0
        return float(self.by_element[mask].max(axis=0).toarray().sum())

    def replace_customer(self, j: int, column) -> FacilityLocation:
        """The neighbouring dataset in which customer ``j`` has benefits ``column``."""
        c = self.benefit.tolil(copy=True)
        c[:, j] = np.asarray(column, dtype=np.float64).reshape(-1, 1)
        return FacilityLocation(c.tocsc(), self.benefit_bound)


class DecomposableSum(SetFunction):
    """``F = (1/n) sum_i F_i`` (``average=True``, the CPP case) or ``sum_i F_i``.

    ``record_bound`` is a *declared*, data-independent bound ``B`` with every record ``F_i`` mapping
    into ``[0, B]`` (the paper's ``B = 1``); replace-one sensitivity is ``B / n`` (average) or ``B``
    (sum), with the public record count ``n``.

    Every record is certified at construction (review F1), since ``Delta = B/n`` is only valid if
    each ``F_i`` really maps into ``[0, B]`` on *every* set: built-in :class:`WeightedCoverage` and
    :class:`FacilityLocation` records are monotone and non-negative by construction, so
    ``F_i(E) <= B`` suffices; any other record (e.g. a :class:`CallableFunction`, even one built
    with ``check=False``) is checked exhaustively over all ``2^n`` subsets (``n <= 10``) to be
    finite, in ``[0, B]`` and monotone, and is refused for larger ``n`` unless the caller passes
    ``trust_records=True``, which makes the ``[0, B]`` range of those records *the user's
    responsibility* (a record outside it voids the privacy guarantee).

    Parameters
    ----------
    functions : sequence of SetFunction
        The records ``F_i`` (on one ground set).
    record_bound : float
        The declared bound ``B``.
    average : bool, default True
        ``(1/n) sum`` instead of ``sum``.
    trust_records : bool, default False
        Accept records that cannot be certified (their range is then the caller's responsibility).
    """

    def __init__(
        self,
        functions: Sequence[SetFunction],
        record_bound: float,
        average: bool = True,
        trust_records: bool = False,
    ):
        if not functions:
            raise DataValidationError("functions", "need at least one record function")
        n = functions[0].n
        if any(f.n != n for f in functions):
            raise DataValidationError("functions", "all record functions must share one ground set")
        bound = positive_bound(record_bound, "record_bound")
        for i, f in enumerate(functions):
            _certify_record(f, bound, f"functions[{i}]", trust_records)
        self.functions = list(functions)
        self.average = bool(average)
        self.trust_records = bool(trust_records)
        self.record_bound = bound
        scale = 1.0 / len(functions) if average else 1.0
        super().__init__(n, bound * scale, bound * len(functions) * scale)
        self.public_max_value = True  # B * (number of records) * scale: declared and public

    def _value(self, mask):
        total = sum(f._value(mask) for f in self.functions)
        return total / len(self.functions) if self.average else total

    def replace(self, i: int, function: SetFunction) -> DecomposableSum:
        funcs = list(self.functions)
        funcs[i] = function
        return DecomposableSum(funcs, self.record_bound, self.average, self.trust_records)


def _certify_record(f: SetFunction, bound: float, field: str, trusted: bool) -> None:
    """Refuse a record ``f`` that is not certified to map into ``[0, bound]`` monotonically
    (review F1).  Messages never quote the record's values: they are private."""
    if isinstance(f, (WeightedCoverage, FacilityLocation)):  # monotone, >= 0 by construction
        top = float(f._value(np.ones(f.n, dtype=bool)))
        if not math.isfinite(top) or top > bound:
            raise DataValidationError(field, "the record exceeds record_bound on the full ground set")
        return
    if trusted:
        return
    if f.n > EXHAUSTIVE_CHECK_MAX:
        raise DataValidationError(
            field,
            f"a record that is not a built-in coverage/facility function can only be certified to map into "
            f"[0, record_bound] for n <= {EXHAUSTIVE_CHECK_MAX}; pass trust_records=True to take that on yourself",
        )
    values = {}
    for bits in itertools.product([False, True], repeat=f.n):
        v = float(f._value(np.array(bits, dtype=bool)))
        if not math.isfinite(v) or v < 0 or v > bound:
            raise DataValidationError(field, "the record must be finite and in [0, record_bound] on every set")
        values[bits] = v
    for bits, v in values.items():
        for e in range(f.n):
            if not bits[e] and values[bits[:e] + (True,) + bits[e + 1 :]] < v - 1e-12:
                raise DataValidationError(field, "the record must be monotone (F_i(S + e) >= F_i(S))")


class CallableFunction(SetFunction):
    """A user's ``fn(frozenset) -> float`` declared monotone submodular with ``F(empty) = 0``.

    The declaration is checked at construction (exhaustively for ``n <= 10``, else on
    ``probes`` random chains drawn from a fixed seed); a violation is a ``DataValidationError``.
    A declared ``max_value`` is a public bound ``M_F`` (``F(E)`` above it is refused); without
    one, ``max_value = F(E)`` is read off the data and is *not* public.

    Parameters
    ----------
    fn : callable
        ``fn(frozenset) -> float``.
    n : int
        The size of the ground set.
    sensitivity : float
        The declared ``Delta``.
    max_value : float, optional
        A declared public bound ``M_F``.
    check : bool, default True
        Check the declaration at construction.
    probes : int, default 200
        Random chains checked when ``n > 10``.
    """

    def __init__(
        self,
        fn: Callable[[frozenset], float],
        n: int,
        sensitivity: float,
        max_value: float | None = None,
        check: bool = True,
        probes: int = 200,
    ):
        self.fn = fn
        super().__init__(n, sensitivity, math.inf if max_value is None else max_value)
        empty = float(fn(frozenset()))
        if not math.isfinite(empty) or abs(empty) > 1e-12:
            raise DataValidationError("fn", "F(empty set) must be 0 (spec A15)")
        if check:
            found = submodularity_violations(self, probes=probes, limit=1)
            if found:
                v = found[0]
                raise DataValidationError("fn", f"declared monotone submodular but is not {v.kind}")
        self.calls = 0
        top = self(np.ones(self.n, dtype=bool))  # F(E): the maximum of a monotone F
        self.calls = 0
        if max_value is None:
            self.max_value = top  # read off the data: not public (public_max_value stays False)
        elif top > self.max_value:
            raise DataValidationError("max_value", "F(E) exceeds the declared bound max_value")
        else:
            self.public_max_value = True  # a declared bound, verified at F(E): public

    def _value(self, mask):
        return float(self.fn(frozenset(np.flatnonzero(mask).tolist())))
