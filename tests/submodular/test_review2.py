"""Regression tests of the second review of the submodular family (F1-F6).

Each test fails on the code before the fix: record certification of decomposable sums (F1),
0/1 incidences (F2), overflow refusal from public quantities only (F3), separable-sum
sensitivity (F4), private values kept out of refusal messages (F5) and public ``M_F`` opt-in (F6).
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.submodular.data import SetFunction
from dpmodels.submodular.matroids import (
    ExplicitMatroid,
    GraphicMatroid,
    LaminarMatroid,
    PartitionMatroid,
    UniformMatroid,
    esp_sample,
)
from dpmodels.submodular.mechanism.continuous import improved_private_continuous_greedy, private_continuous_greedy
from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy, private_k_greedy
from dpmodels.submodular.objectives import (
    CallableFunction,
    DecomposableSum,
    FacilityLocation,
    KCoverage,
    SeparableSum,
    WeightedCoverage,
    ad_slots,
    check_sensitivity,
)

# ----------------------------------------------------------------------------- F1: record certification


def _table_record(values: dict, n: int, **kw) -> CallableFunction:
    """A record given by its value table on all subsets (``check=False``: certification is DecomposableSum's job)."""
    return CallableFunction(lambda S: values[frozenset(S)], n, sensitivity=1.0, max_value=None, check=False, **kw)


def _subsets(n):
    return [frozenset(c) for size in range(n + 1) for c in itertools.combinations(range(n), size)]


def test_decomposable_sum_refuses_records_outside_the_bound_below_the_full_set():
    """Review2 F1: B was checked only at F_i(E); a record worth 5 on {0} passed with B = 1 (Delta 1, actual 5)."""
    zero = _table_record(dict.fromkeys(_subsets(3), 0.0), 3)
    spike = _table_record({S: 5.0 if S == frozenset({0}) else 0.0 for S in _subsets(3)}, 3)
    with pytest.raises(DataValidationError, match=r"functions\[0\]"):
        DecomposableSum([spike, zero], record_bound=1.0, average=False)
    nan = _table_record({S: float("nan") if S == frozenset({1}) else float(len(S) > 0) for S in _subsets(3)}, 3)
    with pytest.raises(DataValidationError, match=r"functions\[1\].*finite"):
        DecomposableSum([zero, nan], record_bound=1.0)
    dip = {S: 1.0 if S == frozenset({0}) else 0.5 * bool(S) for S in _subsets(3)}  # in [0, 1], not monotone
    with pytest.raises(DataValidationError, match="monotone"):
        DecomposableSum([_table_record(dip, 3)], record_bound=1.0)


def test_decomposable_sum_large_callables_need_an_explicit_opt_in():
    """For n > 10 a callable record cannot be certified: refused unless trust_records=True."""
    rec = CallableFunction(lambda S: float(len(S) > 0), 12, sensitivity=1.0, max_value=1.0)
    with pytest.raises(DataValidationError, match="trust_records"):
        DecomposableSum([rec, rec], record_bound=1.0)
    D = DecomposableSum([rec, rec], record_bound=1.0, trust_records=True)
    assert D.sensitivity == 0.5 and D.replace(0, rec).trust_records


def test_probe_check_reaches_sets_of_size_n_minus_one():
    """Review2 F1: the probes never drew |S| = n - 1, so F(E) < F(E - e) went unseen for n > 10."""
    n = 12
    with pytest.raises(DataValidationError, match="monotone"):
        CallableFunction(lambda S: 1.0 if len(S) == n else float(len(S)), n, sensitivity=1.0, max_value=n)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5]), min_size=16, max_size=16), st.booleans())
def test_accepted_decomposable_sums_honour_their_declared_sensitivity(table, average):
    """Oracle: brute-force max_S |F_D(S) - F_D'(S)| over all sets of n = 3 for neighbours that
    differ in one arbitrary record table; whenever both sums are accepted it is at most Delta."""
    subsets = _subsets(3)
    vals = dict(zip(subsets, [0.0] + table[: len(subsets) - 1], strict=True))
    base = _table_record({S: float(len(S)) / 3 for S in subsets}, 3)
    try:
        Dp = DecomposableSum([_table_record(vals, 3), base], record_bound=1.0, average=average)
    except DataValidationError:
        assert any(v > 1.0 for v in vals.values()) or any(
            vals[S] > vals[S | {e}] for S in subsets for e in range(3) if e not in S
        )
        return
    D = DecomposableSum([base, base], record_bound=1.0, average=average)
    assert check_sensitivity(D, Dp) <= D.sensitivity


# ----------------------------------------------------------------------------- F2: 0/1 incidences


@pytest.mark.parametrize("bad", [0.5, -3.0, float("nan"), 2.0])
def test_incidences_other_than_zero_or_one_are_refused(bad):
    """Review2 F2: stored 0.5 / negative / NaN entries became incidences (data set to 1 before zeros were dropped)."""
    inc = np.array([[1.0, 0.0], [bad, 0.0]])
    with pytest.raises(DataValidationError, match="incidence"):
        WeightedCoverage(inc)
    with pytest.raises(DataValidationError, match=r"incidence\[1\]"):
        KCoverage([np.eye(2), inc], sensitivity=1.0)


def test_explicit_zeros_are_not_incidences():
    inc = sp.csc_matrix((np.array([1.0, 0.0]), (np.array([0, 1]), np.array([0, 1]))), shape=(2, 2))
    assert inc.nnz == 2  # the zero is stored explicitly
    assert WeightedCoverage(inc)([1]) == 0.0
    assert KCoverage([inc], sensitivity=1.0)(np.array([0, 1])) == 0.0


# ----------------------------------------------------------------------------- F3: overflow


def _moved_user_pair():
    """D: element 1 covers 4 users; D': one of them moved to element 2 (t_overflow.py of the review)."""
    inc = np.zeros((3, 5))
    inc[0, 0] = inc[2, 0] = 1
    inc[1, 1:5] = 1
    incp = inc.copy()
    incp[1, 4], incp[2, 4] = 0, 1
    return WeightedCoverage(inc), WeightedCoverage(incp)


@pytest.mark.parametrize(
    "M",
    [UniformMatroid(3, 1), LaminarMatroid(3, [[0, 1, 2]], [1]), GraphicMatroid(2, [(0, 1), (0, 1), (0, 1)])],
    ids=["uniform", "laminar", "graphic"],
)
def test_overflowing_inverse_temperature_is_refused_on_both_neighbours(M):
    """Review2 F3: at eps = 1e308, beta * g overflowed on D only (raise on D, not D'; Uniform silently
    returned a wrong element).  The refusal now depends on public quantities only, so D and D' agree."""
    for F in _moved_user_pair():
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            private_continuous_greedy(F, M, 1e308, seed=0)
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            mitrovic_private_greedy(F, M, 1e308, seed=0)
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            improved_private_continuous_greedy(F, M, 1e308, sample_size=3, seed=0, rounding="none")
        assert private_continuous_greedy(F, M, 1.0, seed=0).S is not None  # moderate eps still runs
    for K in (ad_slots([np.eye(3), np.eye(3)]), KCoverage([np.eye(3), np.eye(3)], sensitivity=1.0)):
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            private_k_greedy(K, UniformMatroid(3, 1), 1e308, seed=0)


def test_samplers_refuse_non_finite_weights_and_bad_sizes():
    rng = np.random.default_rng(0)
    with pytest.raises(DataValidationError, match="log_weights"):
        esp_sample(np.array([0.0, np.inf, 1.0]), 1, rng)
    with pytest.raises(DataValidationError, match="size"):
        esp_sample(np.zeros(3), 4, rng)
    with pytest.raises(DataValidationError, match="log_weights"):
        UniformMatroid(3, 1).sample_base(np.zeros(4), rng)  # used to sample over 4 items
    with pytest.raises(DataValidationError, match="log_weights"):
        PartitionMatroid([0, 0, 1], [1, 1]).sample_base(np.array([0.0, np.nan, 0.0]), rng)
    with pytest.raises(DataValidationError, match="log_weights"):
        ExplicitMatroid(3, [[], [0], [1], [2]]).sample_base(np.array([0.0, np.inf, 0.0]), rng)


# ----------------------------------------------------------------------------- F4, F5, F6


def test_separable_sum_refuses_a_sensitivity_below_a_part():
    """Review2 F4: one record can change a single colour's term by that part's Delta."""
    parts = [WeightedCoverage(np.eye(3), np.ones(3), sensitivity=2.0), WeightedCoverage(np.eye(3))]
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        SeparableSum(parts, sensitivity=1.5)
    assert SeparableSum(parts, sensitivity=2.0).sensitivity == 2.0


def test_refusal_messages_do_not_quote_private_values():
    """Review2 F5: refusals quoted the private weight / record value / F(empty) / witness set."""
    with pytest.raises(DataValidationError, match="weights") as err:
        WeightedCoverage(np.eye(3), weights=[0.2, 0.7310585, 0.1], sensitivity=0.5)
    assert "0.731" not in str(err.value)
    with pytest.raises(DataValidationError, match="record_bound") as err:
        DecomposableSum([WeightedCoverage(np.eye(3), [1.25, 1.25, 1.25], sensitivity=2.0)], record_bound=1.0)
    assert "3.75" not in str(err.value)
    with pytest.raises(DataValidationError, match="empty") as err:
        CallableFunction(lambda S: 1.625 + len(S), 4, sensitivity=1)
    assert "1.625" not in str(err.value)
    with pytest.raises(DataValidationError, match="monotone") as err:
        CallableFunction(lambda S: float(len(S) == 1), 4, sensitivity=1)
    assert "S=" not in str(err.value)


def test_public_max_value_is_opt_in():
    """Review2 F6: every SetFunction subclass claimed a public M_F by default, KCoverage's w(V) included."""

    class Plain(SetFunction):  # a user subclass that never declared its max_value public
        def _value(self, mask):
            return float(mask.any())

    F = Plain(3, 1.0, 1.0)
    assert not F.public_max_value
    with pytest.raises(PrivacyParameterError, match="value_bound"):
        improved_private_continuous_greedy(F, UniformMatroid(3, 1), 1.0, seed=0)
    assert improved_private_continuous_greedy(F, UniformMatroid(3, 1), 1.0, value_bound=1.0, seed=0).S is not None
    K = KCoverage([np.eye(2)], weights=[0.25, 0.5], sensitivity=1.0)
    assert K.public_max_value and K.max_value == 2.0  # Delta |V|, never the data's w(V) = 0.75
    assert WeightedCoverage(np.eye(2)).public_max_value
    assert FacilityLocation(np.eye(2), benefit_bound=1.0).public_max_value
    assert not CallableFunction(lambda S: float(len(S) > 0), 3, sensitivity=1.0).public_max_value
    assert CallableFunction(lambda S: float(len(S) > 0), 3, sensitivity=1.0, max_value=1.0).public_max_value
    with pytest.raises(DataValidationError, match="max_value"):  # a declared bound below F(E)
        CallableFunction(lambda S: float(len(S)), 3, sensitivity=1.0, max_value=2.0)


def test_private_runs_need_a_public_bound_on_F():
    """Without a public M_F, whether eps' times the scores overflows (and the sampler refuses)
    would depend on the data; private runs refuse such functions up front, and run once it is declared."""
    from dpmodels.submodular.mechanism.continuous import private_continuous_greedy
    from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy

    undeclared = CallableFunction(lambda S: float(min(len(S), 2)), 3, sensitivity=1.0)
    declared = CallableFunction(lambda S: float(min(len(S), 2)), 3, sensitivity=1.0, max_value=2.0)
    M = UniformMatroid(3, 2)
    for run in (private_continuous_greedy, mitrovic_private_greedy):
        with pytest.raises(PrivacyParameterError, match="max_value"):
            run(undeclared, M, 1.0, seed=0)
        assert run(declared, M, 1.0, seed=0).S.sum() == 2
