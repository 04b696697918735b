"""Oracles, checkers and the multilinear extension against enumeration (spec 8.1.5-8.1.9, 8.2.3)."""

import itertools

import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmodels import instances
from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.submodular.objectives import (
    CallableFunction,
    DecomposableSum,
    FacilityLocation,
    KCoverage,
    SampledGradient,
    WeightedCoverage,
    ad_slots,
    check_sensitivity,
    facility_variant,
    gradient,
    k_submodularity_violations,
    multilinear,
    pyomo_multilinear,
    submodularity_violations,
)


def random_coverage(seed, n=6, users=8):
    rng = np.random.default_rng(seed)
    inc = rng.random((n, users)) < 0.35
    return WeightedCoverage(inc, rng.uniform(0, 1, users), sensitivity=1.0)


def random_facility(seed, n=6, customers=5):
    rng = np.random.default_rng(seed)
    c = rng.random((n, customers))
    c[c < 0.4] = 0
    c[1, 0] = c[2, 0] = 0.7  # a tie
    return FacilityLocation(c, benefit_bound=1.0)


FUNCTIONS = [random_coverage, random_facility]


def test_trap_instance_multilinear_numbers_of_the_spec():
    F = instances.load("submodular/trap").function
    x = np.array([0.3, 0.6, 0.9])
    assert multilinear(F, x) == pytest.approx(1.56, abs=1e-12)
    assert multilinear(F, x, "exact_enum") == pytest.approx(1.56, abs=1e-12)
    assert np.allclose(gradient(F, x), [0.2, 1.0, 0.7], atol=1e-12)
    assert F([0, 2]) == pytest.approx(1.1) and F([1, 2]) == pytest.approx(2.0)


@settings(max_examples=15)
@given(seed=st.integers(0, 10**6), which=st.sampled_from(FUNCTIONS))
def test_closed_form_equals_enumeration(seed, which):
    F = which(seed)
    rng = np.random.default_rng(seed)
    x = rng.random(F.n)
    x[rng.integers(F.n)] = 1.0  # the zero-factor branches of the closed forms
    x[rng.integers(F.n)] = 0.0
    assert multilinear(F, x, "closed_form") == pytest.approx(multilinear(F, x, "exact_enum"), abs=1e-12)
    assert np.allclose(gradient(F, x, "closed_form"), gradient(F, x, "exact_enum"), atol=1e-12)
    g = gradient(F, x)
    assert np.all(g >= -1e-12)
    assert np.allclose(gradient(F, x, kind="marginal"), (1 - x) * g, atol=1e-12)


@settings(max_examples=10)
@given(seed=st.integers(0, 10**6), which=st.sampled_from(FUNCTIONS))
def test_vertices_gradient_concavity_and_lemma_3_2(seed, which):
    F = which(seed)
    rng = np.random.default_rng(seed)
    S = rng.random(F.n) < 0.5
    assert multilinear(F, S.astype(float)) == pytest.approx(F(S), abs=1e-12)
    x = rng.uniform(0.05, 0.95, F.n)
    h = 1e-6
    fd = [
        (multilinear(F, x + h * np.eye(F.n)[e]) - multilinear(F, x - h * np.eye(F.n)[e])) / (2 * h) for e in range(F.n)
    ]
    assert np.allclose(gradient(F, x), fd, atol=1e-6)
    d = rng.random(F.n) * 0.3  # d >= 0: t -> f(x + t d) is concave
    vals = [multilinear(F, np.clip(x * 0.5 + t * d, 0, 1)) for t in np.linspace(0, 1, 7)]
    assert np.all(np.diff(vals, 2) <= 1e-12)
    y = rng.random(F.n)
    assert y @ gradient(F, x) >= multilinear(F, y) - multilinear(F, x) - 1e-12


def test_sampled_gradient_is_within_hoeffding_radius_and_counts_calls():
    F = random_coverage(3)
    x = np.random.default_rng(0).random(F.n)
    exact = gradient(F, x)
    m, beta = 200, 0.1
    radius = SampledGradient.hoeffding_radius(F.max_value, F.n, m, beta)
    sampler = SampledGradient(m, np.random.default_rng(1))
    hits = 0
    for _ in range(10):
        before = F.calls
        est = sampler(F, x)
        assert F.calls - before == m * (F.n + 1)
        hits += np.max(np.abs(est - exact)) <= radius
    assert hits >= 10 * (1 - beta) - 1


def test_pyomo_expression_matches_closed_form():
    for F in (random_coverage(5), random_facility(5)):
        m = pyo.ConcreteModel()
        m.y = pyo.Var(range(F.n), bounds=(0, 1))
        expr = pyomo_multilinear(F, m.y)
        x = np.random.default_rng(2).random(F.n)
        for e in range(F.n):
            m.y[e].value = x[e]
        assert pyo.value(expr) == pytest.approx(multilinear(F, x), abs=1e-12)


def test_checkers_accept_the_classes_and_reject_counterexamples():
    assert submodularity_violations(random_coverage(1)) == []
    assert submodularity_violations(random_facility(1)) == []
    with pytest.raises(DataValidationError, match="monotone"):
        CallableFunction(lambda S: float(len(S) == 1), 4, sensitivity=1)
    with pytest.raises(DataValidationError, match="submodular"):
        CallableFunction(lambda S: float(len(S)) ** 2, 4, sensitivity=1)
    with pytest.raises(DataValidationError, match="empty"):
        CallableFunction(lambda S: 1.0 + len(S), 4, sensitivity=1)
    ok = CallableFunction(lambda S: float(min(len(S), 2)), 12, sensitivity=1)  # sampled check for n > 10
    assert ok([0, 1, 2]) == 2.0 and ok.max_value == 2.0


def test_k_submodularity_checker():
    ex = instances.load("submodular/k-coverage-example").function
    assert k_submodularity_violations(ex) == []
    rng = np.random.default_rng(0)
    slots = ad_slots([rng.random((3, 4)) < 0.5 for _ in range(2)])
    assert k_submodularity_violations(slots) == [] and slots.sensitivity == 2
    costs = [rng.uniform(0, 5, (3, 3)) for _ in range(2)]
    fv = facility_variant(costs, 5.0)
    assert k_submodularity_violations(fv) == [] and fv(np.zeros(3, int)) == 0

    class Bad(KCoverage):  # F = 1 only when two different colours are used: not k-submodular
        def _value(self, s):
            return float(len(set(s[s > 0].tolist())) >= 2)

    bad = Bad([np.eye(3), np.eye(3)])
    assert any(v.kind == "k-submodular" for v in k_submodularity_violations(bad))


def test_sensitivity_declarations_on_neighbours():
    inst = instances.load("submodular/trap")
    F, Fp = inst.function, inst.neighbour
    worst = check_sensitivity(F, Fp)
    assert 0 < worst <= F.sensitivity
    for x in np.random.default_rng(0).random((20, 3)):
        assert np.max(np.abs(gradient(F, x) - gradient(Fp, x))) <= 2 * F.sensitivity + 1e-12
    tight = CallableFunction(lambda S: F(sorted(S)), F.n, sensitivity=0.5)  # under-declared Delta
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        check_sensitivity(tight, Fp)
    with pytest.raises(DataValidationError, match="weights"):  # a weight above the declared bound
        WeightedCoverage(F.incidence, F.weights, sensitivity=0.5)


def test_decomposable_sum_sensitivity_is_the_declared_record_bound_over_n():
    """Delta = B / n from the declared record bound B (never from the records' own ranges)."""
    parts = [random_coverage(s) for s in range(4)]
    top = max(p(np.ones(6, bool)) for p in parts)
    D = DecomposableSum(parts, record_bound=8.0, average=True)
    assert D.sensitivity == 8.0 / 4 and D.max_value == 8.0
    assert DecomposableSum(parts, record_bound=8.0, average=False).sensitivity == 8.0
    S = [0, 2]
    assert D(S) == pytest.approx(np.mean([p(S) for p in parts]))
    Dp = D.replace(1, random_coverage(99))
    assert Dp.sensitivity == D.sensitivity  # the neighbour runs with the same Delta
    sets = [np.array(b, bool) for b in itertools.product([0, 1], repeat=6)]
    assert check_sensitivity(D, Dp, sets) <= D.sensitivity
    with pytest.raises(DataValidationError, match="record_bound"):  # a record outside [0, B] is refused
        DecomposableSum(parts, record_bound=top / 2)
    with pytest.raises(TypeError):  # no data-derived default
        DecomposableSum(parts)


def test_facility_location_sensitivity_is_the_declared_benefit_bound():
    """Review F1 / e2: Delta used to default to max(c) of the private data, so neighbours ran with
    different eps' and Alg. 1 (T=1, r=1, eps=1) lost 4.19 against the accounted 2 eps r T = 2."""
    from dpmodels.submodular.matroids import UniformMatroid
    from dpmodels.submodular.mechanism.continuous import private_continuous_greedy
    from dpmodels.submodular.privacy_audit import alg1_distribution, privacy_loss

    c = np.zeros((3, 10))
    c[0, :] = 1.0
    cp = c.copy()
    cp[:, 9] = [0.0, 0.0, 50.0]  # customer 9 replaced by one valuing site 2 at 50
    with pytest.raises(TypeError):
        FacilityLocation(c)  # no data-derived default
    with pytest.raises(DataValidationError, match="benefit"):
        FacilityLocation(cp, benefit_bound=1.0)  # refused, never clipped
    D, Dp = FacilityLocation(c, benefit_bound=50.0), FacilityLocation(cp, benefit_bound=50.0)
    assert D.sensitivity == Dp.sensitivity == 50.0 and D.max_value == 500.0
    assert D.replace_customer(9, cp[:, 9]).sensitivity == 50.0
    assert check_sensitivity(D, Dp) <= 50.0
    M = UniformMatroid(3, 1)
    for eps in (0.5, 1.0, 2.0):
        loss = privacy_loss(alg1_distribution(D, M, eps, T=1), alg1_distribution(Dp, M, eps, T=1))
        accounted = private_continuous_greedy(D, M, eps, T=1, seed=0).accountant.basic()[0]
        assert accounted == pytest.approx(2 * eps) and loss <= accounted + 1e-9


def test_non_finite_values_are_refused():
    """Review F4 / e7: a NaN F value passed the declaration check and made the EM deterministic."""
    from dpmodels.submodular.mechanism.exponential import em_choice, em_probabilities

    with pytest.raises(DataValidationError, match="finite"):
        CallableFunction(lambda S: float("nan") if S == frozenset({1}) else float(min(len(S), 2)), 4, sensitivity=1)
    with pytest.raises(DataValidationError, match="empty"):
        CallableFunction(lambda S: float(len(S)) if S else float("nan"), 4, sensitivity=1)
    with pytest.raises(DataValidationError, match="scores"):
        em_probabilities([1, np.nan, 1, 1], 0.05)
    with pytest.raises(DataValidationError, match="scores"):
        em_choice([1, np.inf, 1], 0.05, np.random.default_rng(0))
    for bad in (np.nan, -1.0):
        with pytest.raises(PrivacyParameterError, match="inv_temp"):
            em_probabilities([1, 2], bad)


def test_bad_function_inputs_fail_early():
    with pytest.raises(DataValidationError, match="weights"):
        WeightedCoverage(np.eye(2), [1.0, -1.0])
    with pytest.raises(DataValidationError, match="benefit"):
        FacilityLocation(-np.eye(2), benefit_bound=1.0)
    with pytest.raises(PrivacyParameterError, match="sensitivity"):
        WeightedCoverage(np.eye(2), sensitivity=-1)
    with pytest.raises(DataValidationError, match="S"):
        random_coverage(0)([7])
    with pytest.raises(DataValidationError, match="x"):
        multilinear(random_coverage(0), np.full(6, 1.5))


def test_sparse_coverage_gradient_at_scale_is_linear_memory():
    rng = np.random.default_rng(0)
    n, users = 100_000, 50_000
    pairs = np.unique(np.column_stack([rng.integers(n, size=3 * users), np.repeat(np.arange(users), 3)]), axis=0)
    inc = sp.csc_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, users))  # 0/1, no duplicates
    F = WeightedCoverage(inc)
    g = gradient(F, np.full(n, 0.1))
    assert g.shape == (n,) and np.all(g >= 0)


def test_lemma_3_1_continuity_bound():
    """|f(x) - f(x + v)| <= 4 |E|^{1/4} sqrt(||v||_2) M_F for v >= 0 (spec 8.1.6)."""
    rng = np.random.default_rng(0)
    for which in FUNCTIONS:
        F = which(11)
        for _ in range(30):
            x = rng.random(F.n) * 0.7
            v = rng.random(F.n) * (1 - x) * rng.random()
            gap = abs(multilinear(F, x) - multilinear(F, x + v))
            assert gap <= 4 * F.n**0.25 * np.sqrt(np.linalg.norm(v)) * F.max_value
