"""PGSR structure plugins against the spec's worked examples, brute force and SCIP."""

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgsr_oracles import brute_force, min_plus
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.util import NoOptimalSolutionError

from dpmodels.core.errors import InfeasibleDomainError, ModelStructureError
from dpmodels.core.relax import relax_integer_vars
from dpmodels.instances.pgsr import random_tree
from dpmodels.pgsr import models as M
from dpmodels.pgsr.algorithms.chain import chain_tables, solve_chain
from dpmodels.pgsr.algorithms.cumulative import solve_cumulative_dp, solve_isotonic
from dpmodels.pgsr.algorithms.hierarchical import hierarchical_tables, solve_hierarchical, table_merge
from dpmodels.pgsr.algorithms.op import solve_hierarchical_op
from dpmodels.pgsr.data import NoisyGroupSizes, chain_cumulative, chain_order, cumulative
from dpmodels.pgsr.domains import Domains


def noisy_counts(data, values, G=None):
    return NoisyGroupSizes(data.hierarchy, values, data.G if G is None else G)


# ---------------------------------------------------------------- worked examples (spec 4.7-4.8)
F1_ROOT_TABLES = [
    (13, 5, 1, 1, 5, 11, 21),
    (2, 0, 2, 6, 14, 24, 38),
    (6, 2, 0, 2, 6, 14, 24),
    (0, 2, 6, 14, 24, 38, 54),
    (0, 2, 6, 14, 24, 38, 54),
]
F2_ROOT_TABLES = [
    (13, 5, 1, 1, 5, 11, 21),
    (6, 2, 2, 6, 14, 24, 38),
    (21, 11, 5, 1, 1, 3, 9),
    (2, 2, 6, 14, 24, 38, 54),
    (5, 9, 17, 27, 41, 57, 77),
]


@pytest.mark.parametrize(
    "fixture, tables, optimum, solution",
    [
        ("f1_noisy", F1_ROOT_TABLES, 1, [[3, 1, 2, 0, 0], [3, 0, 1, 0, 0], [0, 1, 1, 0, 0]]),
        ("f2_noisy", F2_ROOT_TABLES, 11, [[2, 1, 3, 0, 0], [2, 0, 2, 0, 0], [0, 1, 1, 0, 0]]),
    ],
)
def test_dp_reproduces_root_tables_and_unique_optimum(request, running_example, fixture, tables, optimum, solution):
    noisy = noisy_counts(running_example, request.getfixturevalue(fixture))
    state = hierarchical_tables(noisy, Domains.full(noisy))
    for s, expected in enumerate(tables):
        lo, table = state.table(0, s, False, noisy.values)
        assert lo == 0
        np.testing.assert_array_equal(table, expected)
    sol = solve_hierarchical(noisy)
    assert sol.objective == optimum == sol.info["dp_objective"]
    np.testing.assert_array_equal(sol.counts, solution)


def test_table5_size1_subtree(running_example, f1_noisy):
    """Table 5: domains {0..4}; tau_1^US = (13, 5, 1, 1, 5); children's stars GA=3, NY=0."""
    noisy = noisy_counts(running_example, f1_noisy)
    dom = Domains(np.zeros((3, 5), int), np.full((3, 5), 4))
    state = hierarchical_tables(noisy, dom)
    np.testing.assert_array_equal(state.table(0, 0, False, noisy.values)[1], [13, 5, 1, 1, 5])
    sol = solve_hierarchical(noisy, dom)
    assert sol.counts[:, 0].tolist() == [3, 3, 0]


def test_example5_tablemerge_phi(running_example):
    """Example 5 with domains {0..6}: phi^US_1 over sums 0..12 and the v+ order."""
    ga, ny = (np.arange(7) - 3.0) ** 2, (np.arange(7) - 0.0) ** 2
    lo, phi, order = table_merge([0, 0], [ny, ga])  # child order (NY, GA) as in Example 4
    assert lo == 0
    np.testing.assert_array_equal(phi, [9, 4, 1, 0, 1, 2, 5, 8, 13, 18, 25, 34, 45])
    tau_us = (np.arange(7) - 2.0) ** 2 + phi[:7]
    np.testing.assert_array_equal(tau_us, [13, 5, 1, 1, 5, 11, 21])
    # the first three unit steps above V0 = 3 go to NY, GA, NY (slopes 1, 1, 3): Example 4/5
    assert order[3:6].tolist() == [0, 1, 0]


@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 5))
def test_table_merge_is_min_plus_convolution(seed, n_children, width):
    rng = np.random.default_rng(seed)
    lows = rng.integers(0, 4, n_children)
    tables = [(np.arange(width) + lo - rng.normal(2, 2)) ** 2 + rng.integers(0, 3) for lo in lows]
    lo, phi, _ = table_merge(lows, tables)
    lo_ref, ref = min_plus(lows, tables)
    assert lo == lo_ref
    np.testing.assert_allclose(phi, ref, rtol=0, atol=1e-9)


def test_chain_dp_table6_and_f1_f2(running_example, f1_noisy):
    h = running_example.hierarchy
    regions, sizes = chain_order(h, 5)
    # F1 Model 3: the chain cumulative of F1's noisy counts, optimum 5, tau_US5(6) = 5
    f1_chain = chain_cumulative(h, f1_noisy)
    assert f1_chain[regions, sizes].tolist() == [3, 3, 2, 3, 4, 3, 5, 6, 5, 6, 6, 5, 6, 6, 5]
    for method in ("dp", "pava"):
        assert solve_chain(NoisyGroupSizes(h, f1_chain, 6, "chain"), method=method).objective == 5
    f2 = np.zeros((3, 5))
    f2[regions, sizes] = [3, 3, 2, 2, 4, 5, 6, 6, 7, 7, 5, 6, 7, 8, 6]
    for method in ("dp", "pava"):
        sol = solve_chain(NoisyGroupSizes(h, f2, 6, "chain"), method=method)
        assert sol.objective == 11
        assert (sol.counts >= 0).all()


def test_table6_and_fixture_chain_tables(running_example, f1_noisy):
    """Table 6 (domains {0..4}) and the F1/F2 chain tables of spec 4.8 (domains {0..6})."""
    h = running_example.hierarchy
    regions, sizes = chain_order(h, 5)
    t6 = np.zeros((3, 5))
    t6[regions[:3], sizes[:3]] = [3, 3, 2]  # noisy GA1, NY1, US1 from Table 6
    noisy = NoisyGroupSizes(h, t6, 6, "chain")
    tabs = chain_tables(noisy, Domains(np.zeros((3, 5), int), np.full((3, 5), 4)))
    assert [t.tolist() for _, t in tabs[:3]] == [[9, 4, 1, 0, 1], [18, 8, 2, 0, 1], [22, 9, 2, 1, 5]]
    f1 = NoisyGroupSizes(h, chain_cumulative(h, f1_noisy), 6, "chain")
    tabs = chain_tables(f1, Domains.full(f1))
    assert [t.tolist() for _, t in tabs[:3]] == [
        [9, 4, 1, 0, 1, 4, 9],
        [18, 8, 2, 0, 1, 4, 9],
        [22, 9, 2, 1, 5, 13, 25],
    ]
    assert tabs[-1][1].tolist() == [336, 215, 124, 63, 26, 7, 5]
    assert all((np.diff(t, 2) >= 0).all() for _, t in tabs)  # Lemma 7: convex tables
    f2 = np.zeros((3, 5))
    f2[regions, sizes] = [3, 3, 2, 2, 4, 5, 6, 6, 7, 7, 5, 6, 7, 8, 6]
    f2 = NoisyGroupSizes(h, f2, 6, "chain")
    assert chain_tables(f2, Domains.full(f2))[-1][1].tolist() == [447, 308, 199, 120, 63, 28, 11]


def test_algorithm2_on_f1_keeps_monotone_input(running_example, f1_noisy):
    """Spec 4.8 F1: the cumulative inputs are monotone and in [0, 6], so n-bar = noisy and the DP gives 1."""
    sol = solve_cumulative_dp(NoisyGroupSizes(running_example.hierarchy, cumulative(f1_noisy), 6, "cumulative"), "full")
    np.testing.assert_array_equal(sol.preprocessed, f1_noisy)
    assert sol.info["dp_objective"] == 1


def test_algorithm2_on_f2(running_example):
    """Spec 4.8 F2: isotonic + clip, rounding, then the DP gives optimum 2 and a unique solution."""
    c = np.array([[2, 4, 7, 5, 6], [3, 1, 5, 4, 4], [0, 4, 2, 3, 4]], dtype=float)
    sol = solve_cumulative_dp(NoisyGroupSizes(running_example.hierarchy, c, 6, "cumulative"), "full")
    np.testing.assert_allclose(sol.isotonic, [[2, 4, 6, 6, 6], [2, 2, 13 / 3, 13 / 3, 13 / 3], [0, 3, 3, 3, 4]])
    np.testing.assert_array_equal(sol.preprocessed, [[2, 2, 2, 0, 0], [2, 0, 2, 0, 0], [0, 3, 0, 0, 1]])
    assert sol.info["dp_objective"] == 2
    np.testing.assert_array_equal(sol.counts, [[2, 2, 2, 0, 0], [2, 0, 2, 0, 0], [0, 2, 0, 0, 0]])


# ---------------------------------------------------------------- random small instances
@st.composite
def small_instances(draw):
    """A random uniform-depth tree (<= 6 leaves), N <= 3, G <= 4, noise in [-2, G + 2]."""
    seed = draw(st.integers(0, 10**6))
    depth = draw(st.integers(1, 3))
    N = draw(st.integers(1, 3))
    G = draw(st.integers(0, 4))
    data = random_tree(seed=seed, depth=depth, branching=(1, 2 if depth == 3 else 3), N=N, G=G)
    noise = draw(st.lists(st.integers(-2, G + 2), min_size=data.counts.size, max_size=data.counts.size))
    return data, np.array(noise, dtype=float).reshape(data.counts.shape)


def assert_pgsr_feasible(h, counts, G):
    assert np.issubdtype(counts.dtype, np.integer)
    assert (counts >= 0).all()
    assert not h.consistency_residual(counts).any()
    assert counts[0].sum() == G


@given(small_instances())
def test_dp_equals_brute_force_and_scip(instance):
    data, values = instance
    noisy = noisy_counts(data, values)
    sol = solve_hierarchical(noisy)
    best, optima = brute_force(data.hierarchy, values, data.G, "hierarchical")
    assert sol.objective == pytest.approx(best, abs=1e-9)
    assert any((sol.counts == o).all() for o in optima)
    assert_pgsr_feasible(data.hierarchy, sol.counts, data.G)
    scip = SolverFactory("scip_direct").solve(M.build_hierarchical_qip(noisy))
    assert scip.incumbent_objective == pytest.approx(best, abs=1e-6)


@given(small_instances())
def test_dp_tables_are_discretely_convex(instance):
    """Lemma 5 / Theorem 3: every stored cost table has non-negative second differences."""
    data, values = instance
    noisy = noisy_counts(data, values)
    state = hierarchical_tables(noisy, Domains.full(noisy))
    h = data.hierarchy
    for r in h.internal:
        for s in range(noisy.N):
            table = state.table(r, s, False, noisy.values)[1]
            assert (np.diff(table, 2) >= -1e-9).all()


@given(small_instances())
def test_chain_dp_pava_brute_force_agree(instance):
    data, noise = instance
    h = data.hierarchy
    noisy = NoisyGroupSizes(h, chain_cumulative(h, data.counts) + noise, data.G, "chain")
    best, _ = brute_force(h, noisy.values, data.G, "chain")
    dp = solve_chain(noisy, method="dp")
    pava = solve_chain(noisy, method="pava")
    assert chain_tables(noisy, Domains.full(noisy))[-1][1][data.G] == pytest.approx(best, abs=1e-9)
    assert dp.objective == pytest.approx(best, abs=1e-9)
    assert pava.objective == pytest.approx(best, abs=1e-9)
    assert_pgsr_feasible(h, dp.counts, data.G)
    assert_pgsr_feasible(h, pava.counts, data.G)


@given(small_instances(), st.integers(0, 3))
def test_chain_truncated_domains_match_scip(instance, delta):
    """With truncated domains the DP and PAVA solve the same bounded Model 3 as SCIP."""
    data, noise = instance
    h = data.hierarchy
    noisy = NoisyGroupSizes(h, chain_cumulative(h, data.counts) + noise, data.G, "chain")
    dom = Domains.truncated(noisy, delta + 1)
    try:
        model = M.build_chain_qip(noisy, domains=dom)
    except InfeasibleDomainError:
        return
    scip = SolverFactory("scip_direct").solve(model)
    for method in ("dp", "pava"):
        assert solve_chain(noisy, dom, method=method).objective == pytest.approx(scip.incumbent_objective, abs=1e-6)


@given(st.integers(0, 10_000), st.integers(1, 12))
def test_isotonic_pava_equals_qp(seed, N):
    rng = np.random.default_rng(seed)
    data = random_tree(seed=seed, depth=2, N=N, G=5)
    noisy = NoisyGroupSizes(
        data.hierarchy, cumulative(data.counts) + rng.normal(0, 3, data.counts.shape), data.G, "cumulative"
    )
    model = M.build_isotonic_qp(noisy)
    SolverFactory("highs").solve(model)
    np.testing.assert_allclose(solve_isotonic(noisy), M.variable_values(model, "c"), atol=1e-6)


@given(small_instances(), st.integers(0, 3))
def test_dp_truncated_domains_match_scip_and_brute_force(instance, delta):
    """On the paper's truncated domains the DP solves the bounded Model 1 exactly."""
    data, values = instance
    noisy = noisy_counts(data, values)
    dom = Domains.truncated(noisy, delta)
    try:
        model = M.build_hierarchical_qip(noisy, domains=dom)
    except InfeasibleDomainError:
        return
    sol = solve_hierarchical(noisy, dom)
    best, _ = brute_force(data.hierarchy, values, data.G, "hierarchical", dom.lo, dom.hi)
    assert sol.objective == pytest.approx(best, abs=1e-9)
    assert np.all((sol.counts >= dom.lo) & (sol.counts <= dom.hi))
    scip = SolverFactory("scip_direct").solve(model)
    assert scip.incumbent_objective == pytest.approx(best, abs=1e-6)


@settings(max_examples=15)
@given(small_instances())
def test_dp_op_equals_brute_force(instance):
    data, values = instance
    sol = solve_hierarchical_op(noisy_counts(data, values))
    best, _ = brute_force(data.hierarchy, values, data.G, "hierarchical")
    assert sol.objective == pytest.approx(best, abs=1e-9)
    assert_pgsr_feasible(data.hierarchy, sol.counts, data.G)


def test_dp_op_counts_subproblems_and_matches(running_example, f2_noisy):
    """Theorem 2: one sub-model per internal table entry, plus one at the dummy root."""
    noisy = noisy_counts(running_example, f2_noisy)
    sol = solve_hierarchical_op(noisy)
    assert sol.objective == 11
    assert sol.info["subproblems"] == 1 * 5 * 7 + 1  # US x 5 sizes x |{0..6}|, plus a^T
    np.testing.assert_array_equal(sol.counts, solve_hierarchical(noisy).counts)


def test_truncated_dp_matches_scip_on_same_bounds(running_example, f2_noisy):
    noisy = noisy_counts(running_example, f2_noisy)
    dom = Domains.truncated(noisy, 2)
    model = M.build_hierarchical_qip(noisy, domains=dom)
    scip = SolverFactory("scip_direct").solve(model.clone())
    dp = SolverFactory("pgsr_dp").solve(model)
    assert dp.incumbent_objective == pytest.approx(scip.incumbent_objective, abs=1e-6)


# ---------------------------------------------------------------- the plugin contract
def test_plugin_and_solve_data_agree(running_example, f2_noisy):
    noisy = noisy_counts(running_example, f2_noisy)
    model = M.build_hierarchical_qip(noisy)
    res = SolverFactory("pgsr_dp").solve(model)
    assert res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
    assert res.solution_status == SolutionStatus.optimal
    assert res.incumbent_objective == pyo.value(model.objective) == 11
    assert res.objective_bound == 11
    assert res.timing_info.wall_time > 0
    np.testing.assert_array_equal(M.released_counts(model), solve_hierarchical(noisy).counts)


def test_chain_and_isotonic_plugins_match_solve_data(running_example, f2_noisy):
    h = running_example.hierarchy
    chain = NoisyGroupSizes(h, chain_cumulative(h, f2_noisy), 6, "chain")
    m3 = M.build_chain_qip(chain)
    res = SolverFactory("pgsr_chain").solve(m3)
    np.testing.assert_array_equal(M.variable_values(m3, "c"), solve_chain(chain).chain)
    assert res.incumbent_objective == pyo.value(m3.objective)
    cum = NoisyGroupSizes(h, cumulative(f2_noisy), 6, "cumulative")
    a2 = M.build_isotonic_qp(cum)
    SolverFactory("isotonic_pava").solve(a2)
    np.testing.assert_allclose(M.variable_values(a2, "c"), solve_isotonic(cum))


def test_legacy_factory_name_works(running_example, f1_noisy):
    model = M.build_hierarchical_qip(noisy_counts(running_example, f1_noisy))
    res = pyo.SolverFactory("pgsr_dp").solve(model)
    assert str(res.solver.termination_condition) == "optimal"
    assert pyo.value(model.objective) == 1


def test_chord_milp_solved_by_dp_and_highs(running_example, f2_noisy):
    noisy = noisy_counts(running_example, f2_noisy)
    model = M.build_hierarchical_milp(noisy)
    highs = SolverFactory("highs").solve(model.clone())
    dp = SolverFactory("pgsr_dp").solve(model)
    assert highs.incumbent_objective == pytest.approx(11) and dp.incumbent_objective == 11
    assert pyo.value(model.objective) == pytest.approx(11)


@pytest.mark.parametrize("edit", ["bound", "fix", "deactivate", "new_constraint", "objective"])
def test_edited_model_is_refused(running_example, f1_noisy, edit):
    model = M.build_hierarchical_qip(noisy_counts(running_example, f1_noisy))
    if edit == "bound":
        model.n["GA", 1].setub(2)
    elif edit == "fix":
        model.n["NY", 2].fix(1)
    elif edit == "deactivate":
        model.consistency["US", 1].deactivate()
    elif edit == "new_constraint":
        model.extra = pyo.Constraint(expr=model.n["GA", 3] >= 1)
    else:
        model.objective.set_value(model.objective.expr + model.n["US", 1])
    with pytest.raises(ModelStructureError, match="edited after it was built"):
        SolverFactory("pgsr_dp").solve(model)


def test_refusals(running_example, f1_noisy):
    noisy = noisy_counts(running_example, f1_noisy)
    with pytest.raises(ModelStructureError, match="relaxation"):
        SolverFactory("pgsr_dp").solve(M.build_hierarchical_qip(noisy, relax=True))
    with pytest.raises(ModelStructureError, match="relaxation"):
        SolverFactory("pgsr_dp").solve(relax_integer_vars(M.build_hierarchical_qip(noisy)))
    with pytest.raises(ModelStructureError, match="does not solve formulation"):
        SolverFactory("pgsr_chain").solve(M.build_hierarchical_qip(noisy))
    plain = pyo.ConcreteModel()
    plain.x = pyo.Var()
    plain.o = pyo.Objective(expr=plain.x**2)
    with pytest.raises(ModelStructureError, match="no structure marker"):
        SolverFactory("pgsr_dp").solve(plain)
    chain = NoisyGroupSizes(
        running_example.hierarchy, chain_cumulative(running_example.hierarchy, f1_noisy), 6, "chain"
    )
    with pytest.raises(ModelStructureError, match="literal"):
        SolverFactory("pgsr_chain").solve(M.build_chain_qip(chain, literal=True))


def test_clone_keeps_marker_and_solves(running_example, f1_noisy):
    model = M.build_hierarchical_qip(noisy_counts(running_example, f1_noisy)).clone()
    assert SolverFactory("pgsr_dp").solve(model).incumbent_objective == 1


def test_infeasible_model_reports_infeasible(running_example, f1_noisy):
    """A hand-made infeasible Domains reaches the plugin, which must say so, not solve."""
    noisy = noisy_counts(running_example, f1_noisy)
    dom = Domains(np.zeros((3, 5), int), np.full((3, 5), 1))  # the root sizes can sum to at most 5 < G = 6
    with pytest.raises(InfeasibleDomainError, match="does not contain G = 6"):
        M.build_hierarchical_qip(noisy, domains=dom)
    model = M.build_hierarchical_qip(noisy, domains=Domains(np.zeros((3, 5), int), np.full((3, 5), 2)))
    model._dpmodels_structure.data = M.GroupSizePayload(
        noisy, dom
    )  # simulate data that only turn out infeasible at solve time
    res = SolverFactory("pgsr_dp").solve(model, raise_exception_on_nonoptimal_result=False, load_solutions=False)
    assert res.termination_condition == TerminationCondition.provenInfeasible
    assert res.solution_status == SolutionStatus.noSolution
    with pytest.raises(NoOptimalSolutionError):
        SolverFactory("pgsr_dp").solve(model)


def test_cdp_plugin_is_labelled_heuristic(running_example):
    c = np.array([[2, 4, 7, 5, 6], [3, 1, 5, 4, 4], [0, 4, 2, 3, 4]], dtype=float)
    model = M.build_cumulative_qip(NoisyGroupSizes(running_example.hierarchy, c, 6, "cumulative"))
    res = SolverFactory("pgsr_cdp").solve(model)
    assert res.solution_status == SolutionStatus.feasible
    assert res.extra_info.exact is False
    exact = SolverFactory("scip_direct").solve(model.clone()).incumbent_objective
    assert exact == pytest.approx(14) and res.incumbent_objective >= exact - 1e-9
