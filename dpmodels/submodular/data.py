"""Set-function oracles of the private (k-)submodular family (spec 1.1-1.3, 1.6, 9.1).

A :class:`SetFunction` is a monotone submodular ``F_D : 2^E -> R_+`` with ``F(empty) = 0`` (A15),
a *declared global* sensitivity ``Delta`` (A10) and an upper bound ``max_value`` (``M_F``).
``Delta`` is never read off the private data: each class takes a declared, data-independent
record bound (coverage weights, facility ``benefit_bound``, ``DecomposableSum.record_bound``) and
refuses records outside it.  Non-finite values of ``F`` are refused at every call.  Sets are
boolean masks over ``E = {0..n-1}`` (``as_mask`` converts index lists).  Every call of ``F`` is
counted in ``calls`` (A14: real oracle calls, not the paper's "f-evaluations").

Classes: weighted coverage (sparse incidence, so 10^5 elements never allocate n^2), facility
location, decomposable sums (CPP), generic callables (validated: a callable declared monotone
submodular that is not is refused).  k-submodular functions take a vector ``s`` in
``{0..k}^E``: k-coverage and separable sums (paper Examples 5.1 and 5.2 are separable sums).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpmodels.core.errors import DataValidationError, PrivacyParameterError

__all__ = [
    "as_mask",
    "SetFunction",
    "WeightedCoverage",
    "FacilityLocation",
    "DecomposableSum",
    "CallableFunction",
    "KSubmodularFunction",
    "KCoverage",
    "SeparableSum",
    "ad_slots",
    "facility_variant",
    "Violation",
    "submodularity_violations",
    "k_submodularity_violations",
    "check_sensitivity",
    "SubmodularInstance",
    "KSubmodularInstance",
]

#: Above this ground-set size the callable check samples chains instead of enumerating.
EXHAUSTIVE_CHECK_MAX = 10


def as_mask(S, n: int) -> np.ndarray:
    """A boolean mask of length ``n`` from a mask or an iterable of element indices."""
    if isinstance(S, np.ndarray) and S.dtype == bool:
        if S.shape != (n,):
            raise DataValidationError("S", f"mask of shape {S.shape}, expected ({n},)")
        return S
    idx = np.fromiter((int(e) for e in S), dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise DataValidationError("S", f"element indices must be in 0..{n - 1}, got {sorted(set(idx.tolist()))}")
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return mask


def _declared_record_bound(given, sensitivity, field: str, values: np.ndarray) -> float:
    """The declared per-record bound ``Delta``: 1 for the public unit-weight default, otherwise
    ``sensitivity`` must be declared and every record value must lie in ``[0, Delta]`` (never clipped)."""
    if sensitivity is None:
        if given is not None:
            raise PrivacyParameterError(
                "sensitivity", f"explicit {field} need a declared data-independent bound Delta (spec A10)"
            )
        return 1.0
    bound = _positive(sensitivity, "sensitivity")
    if values.size and values.max() > bound:
        raise DataValidationError(field, "a record's value exceeds the declared bound (values are not quoted: private)")
    return bound


def _positive(value, field: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise PrivacyParameterError(field, f"must be a finite positive number, got {value!r}")
    return value


class SetFunction:
    """Monotone submodular ``F`` on ``n`` elements with declared sensitivity and value bound."""

    n: int
    sensitivity: float
    max_value: float
    #: Is ``max_value`` a public (data-independent) bound?  Only then may private algorithms use it.
    #: Off by default: each built-in class whose ``max_value`` is public by construction opts in.
    public_max_value: bool = False

    def __init__(self, n: int, sensitivity: float, max_value: float):
        if int(n) < 1:
            raise DataValidationError("n", f"the ground set must be non-empty, got {n}")
        self.n = int(n)
        self.sensitivity = _positive(sensitivity, "sensitivity")
        self.max_value = float(max_value)
        self.calls = 0

    def __call__(self, S) -> float:
        self.calls += 1
        value = float(self._value(as_mask(S, self.n)))
        if not math.isfinite(value):
            raise DataValidationError("F", f"F(S) must be a finite number, got {value!r} (spec 1.1: F maps into R_+)")
        return value

    def _value(self, mask: np.ndarray) -> float:
        raise NotImplementedError

    def marginal(self, S, e: int) -> float:
        """``F(S + e) - F(S)`` (two oracle calls)."""
        mask = as_mask(S, self.n).copy()
        mask[e] = False
        base = self(mask)
        mask[e] = True
        return self(mask) - base


def _zero_one(mat, field: str):
    """``mat`` with explicit zeros dropped, refusing any other stored value than 1: a 0.5, a
    negative or a NaN entry is not an incidence and is never coerced into one (review F2)."""
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
    """

    def __init__(self, incidence, weights=None, sensitivity: float | None = None):
        inc = _zero_one(sp.csc_matrix(incidence, dtype=np.float64), "incidence")
        n, m = inc.shape
        w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (m,):
            raise DataValidationError("weights", f"need one weight per user ({m}), got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise DataValidationError("weights", "must be finite and non-negative (coverage is then monotone)")
        self.incidence = inc
        self.by_element = inc.tocsr()
        self.weights = w
        delta = _declared_record_bound(weights, sensitivity, "weights", w)
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
    is public too (the number of customers is public under replace-one)."""

    def __init__(self, benefit, benefit_bound: float):
        c = sp.csc_matrix(benefit, dtype=np.float64)
        c.eliminate_zeros()
        bound = _positive(benefit_bound, "benefit_bound")
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
        bound = _positive(record_bound, "record_bound")
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


@dataclass(frozen=True)
class Violation:
    """A counterexample to monotonicity or (k-)submodularity."""

    kind: str
    detail: str
    amount: float


class CallableFunction(SetFunction):
    """A user's ``fn(frozenset) -> float`` declared monotone submodular with ``F(empty) = 0``.

    The declaration is checked at construction (exhaustively for ``n <= 10``, else on
    ``probes`` random chains drawn from a fixed seed); a violation is a ``DataValidationError``.
    A declared ``max_value`` is a public bound ``M_F`` (``F(E)`` above it is refused); without
    one, ``max_value = F(E)`` is read off the data and is *not* public.
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


# ----------------------------------------------------------------------------- k-submodular


class KSubmodularFunction:
    """Monotone k-submodular ``F : {0..k}^E -> R_+`` with ``F(0) = 0`` and declared sensitivity."""

    #: Is ``max_value`` a public (data-independent) bound?  Off unless a class opts in.
    public_max_value: bool = False

    def __init__(self, n: int, k: int, sensitivity: float, max_value: float):
        if int(n) < 1 or int(k) < 1:
            raise DataValidationError("n, k", f"need n >= 1 and k >= 1, got n={n}, k={k}")
        self.n, self.k = int(n), int(k)
        self.sensitivity = _positive(sensitivity, "sensitivity")
        self.max_value = float(max_value)
        self.calls = 0

    def __call__(self, s) -> float:
        s = np.asarray(s, dtype=np.int64)
        if s.shape != (self.n,) or (s.size and (s.min() < 0 or s.max() > self.k)):
            raise DataValidationError("s", f"must be a length-{self.n} vector with entries in 0..{self.k}")
        self.calls += 1
        value = float(self._value(s))
        if not math.isfinite(value):
            raise DataValidationError("F", f"F(s) must be a finite number, got {value!r}")
        return value

    def _value(self, s: np.ndarray) -> float:
        raise NotImplementedError


class KCoverage(KSubmodularFunction):
    """``F(s) = w(union_{e in supp s} N_{s(e)}(e))``; ``incidence[i]`` is the |E| x |V| matrix of ``N_{i+1}``."""

    def __init__(self, incidence: Sequence, weights=None, sensitivity: float | None = None):
        mats = [_zero_one(sp.csr_matrix(m, dtype=np.float64), f"incidence[{i}]") for i, m in enumerate(incidence)]
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
        delta = _declared_record_bound(weights, sensitivity, "weights", w)
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
    """``F(s) = sum_i g_i(S_i)`` with monotone submodular ``g_i`` (paper Examples 5.1, 5.2)."""

    def __init__(self, parts: Sequence[SetFunction], sensitivity: float | None = None):
        if not parts:
            raise DataValidationError("parts", "need one set function per colour")
        n = parts[0].n
        if any(g.n != n for g in parts):
            raise DataValidationError("parts", "all colours need one ground set")
        self.parts = list(parts)
        default = sum(g.sensitivity for g in parts)
        if sensitivity is not None and _positive(sensitivity, "sensitivity") < max(g.sensitivity for g in parts):
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


# ----------------------------------------------------------------------------- instances


@dataclass
class SubmodularInstance:
    """A monotone submodular objective, a matroid on the same ground set, and optional neighbour."""

    function: SetFunction
    matroid: object
    name: str = ""
    neighbour: SetFunction | None = None

    def __post_init__(self):
        if self.matroid.n != self.function.n:
            raise DataValidationError(
                "matroid", f"ground set of {self.matroid.n} elements but the function has {self.function.n}"
            )


@dataclass
class KSubmodularInstance:
    """A monotone k-submodular objective with a matroid on supports."""

    function: KSubmodularFunction
    matroid: object
    name: str = ""
    neighbour: KSubmodularFunction | None = None

    def __post_init__(self):
        if self.matroid.n != self.function.n:
            raise DataValidationError(
                "matroid", f"ground set of {self.matroid.n} elements but the function has {self.function.n}"
            )
