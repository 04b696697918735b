"""The structured interior-point method against HiGHS on the same LP, and its certificates."""

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mdp_cases import random_instance
from pyomo.contrib.solver.common.factory import SolverFactory

from dpmodels.core.errors import DataValidationError, ModelStructureError, SolverOptionError
from dpmodels.metricdp.data import MDPInstance, euclidean_distances
from dpmodels.metricdp.ipm import dual_bound, essential_pairs, structured_ipm
from dpmodels.metricdp.lp import full_lp
from dpmodels.metricdp.models import build_full_lp, perturbation_matrix
from dpmodels.metricdp.privacy_audit import max_mdp_violation, repair, row_sum_error


def highs_optimum(inst):
    res = full_lp(inst).solve()
    assert res.status == "Optimal"
    return res.objective


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(2, 16),
    st.integers(1, 6),
    st.sampled_from([0.3, 1.0, 3.0, 8.0]),
    st.sampled_from([0.8, 1.5, 3.0]),
    st.booleans(),
)
def test_certified_bounds_bracket_the_highs_optimum(seed, n, k, eps, eta, grid):
    assume(eps * eta <= 12)  # HiGHS is no oracle beyond: see the next test
    inst = random_instance(seed, n, k, eps, eta, grid)
    res = structured_ipm(inst, gap=1e-6, max_iter=200)
    opt = highs_optimum(inst)
    tol = 1e-9 * max(1.0, abs(opt))
    assert res.lower_bound <= opt + tol
    assert res.upper_bound >= opt - tol
    # the incumbent is an exactly feasible mechanism whose loss is the upper bound: every
    # probability ratio within exp(eps d), not just the rows up to a tolerance
    g = inst.graph
    assert (res.z[g.src] <= g.coef[:, None] * res.z[g.dst] * (1 + 1e-12)).all()
    assert max_mdp_violation(inst, res.z) == 0.0
    assert row_sum_error(res.z) <= 1e-12
    assert float((inst.weighted_cost * res.z).sum()) == pytest.approx(res.upper_bound, rel=1e-12)
    if res.status == "gap reached":
        assert res.relative_gap <= 1e-6


def test_certified_bracket_where_highs_presolve_answers_wrong():
    """Two records 2.59 apart at eps = 8 (coefficient e^20.7 ~ 1e9): HiGHS 1.15 with presolve
    returned "optimal" 3.3314, a non-optimal vertex (found by the property test above); its answer
    without presolve and the brute-force optimum over the vertices lie in mdp_ipm's certified
    bracket."""
    inst = random_instance(0, 2, 2, 8.0, 3.0, False)
    res = structured_ipm(inst, gap=1e-7)
    lp = full_lp(inst)
    lp.h.setOptionValue("presolve", "off")
    opt = lp.solve().objective
    # brute force: z_0 = (t, 1 - t), z_1 = (s, 1 - s); the mDP rows cut the square to a polygon
    # with vertices (0, 0), (1, 1), (a, 1) / (a + 1) and (1, a) / (a + 1)
    a = float(np.exp(inst.epsilon * inst.d_rr[0, 1]))
    w = inst.weighted_cost
    vertices = [(0.0, 0.0), (1.0, 1.0), (a / (a + 1), 1 / (a + 1)), (1 / (a + 1), a / (a + 1))]
    brute = min(w[0, 0] * t + w[0, 1] * (1 - t) + w[1, 0] * u + w[1, 1] * (1 - u) for t, u in vertices)
    assert res.lower_bound <= brute + 1e-9 and brute <= res.upper_bound + 1e-9
    assert opt == pytest.approx(brute, rel=1e-6)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_grid_reaches_a_tight_gap_at_the_highs_optimum(eps):
    xy = np.array([(r, c) for r in range(6) for c in range(7)], float)
    d = euclidean_distances(xy)
    inst = MDPInstance(d, d, np.full(len(xy), 1 / len(xy)), eps, 2.0, d_ro=d)
    res = structured_ipm(inst, gap=1e-5)
    assert res.status == "gap reached"
    assert res.lower_bound <= highs_optimum(inst) <= res.upper_bound
    assert res.upper_bound == pytest.approx(highs_optimum(inst), rel=1e-5)


def test_presolve_drops_exactly_the_collinear_pairs_and_keeps_the_optimum():
    xy = np.array([(r, c) for r in range(4) for c in range(5)], float)
    d = euclidean_distances(xy)
    inst = MDPInstance(d, d, np.full(len(xy), 1 / len(xy)), 1.0, 2.0, d_ro=d)
    g = inst.graph
    keep = essential_pairs(g)
    # on a grid with eta = 2 the implied pairs are the straight two-steps (distance 2)
    np.testing.assert_array_equal(~keep, np.isclose(g.dist, 2.0))
    reduced = MDPInstance(np.where(np.isclose(d, 2.0), 2.5, d), d, inst.prior, 1.0, 2.0)  # drops them from the graph
    assert reduced.graph.n_pairs == keep.sum()
    a = structured_ipm(inst, gap=1e-5, presolve=True)
    b = structured_ipm(inst, gap=1e-5, presolve=False)
    assert a.upper_bound == pytest.approx(b.upper_bound, rel=2e-5)
    assert a.lower_bound <= highs_optimum(inst) <= a.upper_bound


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 10), st.integers(2, 5), st.floats(0.1, 5.0))
def test_repair_makes_any_nonnegative_matrix_an_mdp_mechanism(seed, n, k, eps):
    inst = random_instance(seed, n, k, eps, 2.0)
    rng = np.random.default_rng(seed)
    z = rng.random((n, k)) ** 3
    fixed, t = repair(inst, z)
    g = inst.graph
    assert (fixed[g.src] <= g.coef[:, None] * fixed[g.dst] * (1 + 1e-12)).all()  # ratios, not just rows
    assert max_mdp_violation(inst, fixed) == 0.0
    assert row_sum_error(fixed) <= 1e-12
    feasible = np.full((n, k), 1.0 / k)
    same, t0 = repair(inst, feasible)
    assert t0 == 0.0
    np.testing.assert_array_equal(same, feasible)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 8), st.integers(2, 4))
def test_dual_bound_is_below_the_optimum_for_any_multipliers(seed, n, k):
    inst = random_instance(seed, n, k, 1.0, 2.0)
    g = inst.graph
    rng = np.random.default_rng(seed)
    u = rng.exponential(size=(k, g.n_pairs)) * rng.random()
    gt_u = np.zeros((k, n))
    np.add.at(gt_u.T, g.src, u.T)
    np.add.at(gt_u.T, g.dst, -(g.coef[:, None] * u.T))
    assert dual_bound(inst.weighted_cost.T, gt_u) <= highs_optimum(inst) + 1e-12


def test_plugin_solves_the_full_model_and_refuses_relaxed_ones():
    xy = np.array([(r, c) for r in range(4) for c in range(4)], float)
    d = euclidean_distances(xy)
    inst = MDPInstance(d, d, np.full(16, 1 / 16), 1.0, 1.5, d_ro=d)
    model = build_full_lp(inst)
    res = SolverFactory("mdp_ipm").solve(model, gap=1e-5)
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    assert res.extra_info.status == "gap reached"
    # a certified gap is not a proof of optimality: feasible, not optimal, in both APIs
    assert res.solution_status.name == "feasible" and res.extra_info.exact is False
    z = perturbation_matrix(model, inst)
    assert max_mdp_violation(inst, z) == 0.0
    ref = build_full_lp(inst)
    pyo.SolverFactory("appsi_highs").solve(ref)
    opt = pyo.value(ref.objective)
    assert res.objective_bound <= opt <= res.incumbent_objective
    assert pyo.value(model.objective) == pytest.approx(res.incumbent_objective, rel=1e-12)
    with pytest.raises(ModelStructureError, match="mdp_slack"):
        SolverFactory("mdp_ipm").solve(build_full_lp(inst, mdp_slack=1e-3))
    with pytest.raises(SolverOptionError, match=r"unknown options \['blocks'\]"):
        SolverFactory("mdp_ipm").solve(model, solver_options={"blocks": 3})
    legacy = pyo.SolverFactory("mdp_ipm").solve(build_full_lp(inst), options={"gap": 1e-5})
    assert legacy.solver.termination_condition == pyo.TerminationCondition.feasible
    assert not pyo.check_optimal_termination(legacy)


def full_lp_dual_check(model, duals):
    """Reduced costs ``c - A'dual`` of every variable of a ``build_full_lp`` model (a minimisation)
    from the model's own constraints, the duals' sign errors, and the dual objective."""
    from pyomo.repn import generate_standard_repn

    reduced = {id(v): (v, 0.0) for v in model.z.values()}
    for v in model.z.values():
        reduced[id(v)] = (v, 0.0)
    cost = generate_standard_repn(model.objective.expr)
    for v, c in zip(cost.linear_vars, cost.linear_coefs, strict=True):
        reduced[id(v)] = (v, reduced[id(v)][1] + c)
    sign_errors, dual_objective = 0, 0.0
    for con in model.component_data_objects(pyo.Constraint, active=True):
        y = duals[con]
        if con.equality:
            dual_objective += y * pyo.value(con.upper)
        else:  # every inequality is an upper bound: its dual must be <= 0 in a minimisation
            assert con.lower is None
            sign_errors += y > 0
            dual_objective += y * pyo.value(con.upper)
        repn = generate_standard_repn(con.body)
        for v, a in zip(repn.linear_vars, repn.linear_coefs, strict=True):
            reduced[id(v)] = (v, reduced[id(v)][1] - a * y)
    return np.array([rc for _, rc in reduced.values()]), sign_errors, dual_objective


@pytest.mark.parametrize("presolve, system", [(True, "dense"), (False, "dense"), (True, "band"), (False, "band")])
def test_ipm_duals_certify_its_bound(presolve, system):
    """The duals are a dual feasible point of the full LP (every reduced cost >= 0, every mDP row's
    dual <= 0), their dual objective is the reported bound, and it is within the gap of HiGHS."""
    from pyomo.contrib.solver.common.util import NoDualsError

    from dpmodels import instances

    # eta = 2 km: cells two apart in a row are neighbours, implied through the cell between them
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=5, epsilon=1.0, eta=2.0)
    model = build_full_lp(inst)
    res = SolverFactory("mdp_ipm").solve(model, gap=1e-4, presolve=presolve, system=system)
    assert res.extra_info["Newton system"] == system
    duals = res.solution_loader.get_duals()
    assert len(duals) == len(model.mdp) + len(model.unit)
    reduced, sign_errors, dual_objective = full_lp_dual_check(model, duals)
    assert sign_errors == 0 and reduced.min() >= -1e-9
    assert dual_objective == pytest.approx(res.objective_bound, rel=1e-9)
    ref = SolverFactory("highs").solve(build_full_lp(inst))
    opt = ref.incumbent_objective
    assert res.objective_bound <= opt + 1e-9 <= res.incumbent_objective + 2e-9
    assert opt - dual_objective <= 1e-4 * res.incumbent_objective + 1e-12
    if presolve:  # the rows presolve leaves out carry no multiplier
        assert res.extra_info["pairs implied (presolve)"] > 0
        assert sum(duals[c] == 0 for c in model.mdp.values()) >= res.extra_info["pairs implied (presolve)"] * inst.K
    # a dual import suffix is not an edit: the model is solved, and the suffix filled (legacy API, or
    # the new API's load_solution)
    for legacy in (True, False):
        with_suffix = build_full_lp(inst)
        with_suffix.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        if legacy:
            pyo.SolverFactory("mdp_ipm").solve(with_suffix, options={"gap": 1e-4, "presolve": presolve})
        else:
            SolverFactory("mdp_ipm").solve(with_suffix, gap=1e-4, presolve=presolve).solution_loader.load_solution()
        assert len(with_suffix.dual) == len(with_suffix.mdp) + len(with_suffix.unit)
        filled = {c.index(): with_suffix.dual[c] for c in with_suffix.unit.values()}
        assert filled == pytest.approx({c.index(): duals[model.unit[c.index()]] for c in with_suffix.unit.values()})
    # Benders assembles no full-LP duals
    bres = SolverFactory("mdp_benders").solve(build_full_lp(inst), gap=1e-4)
    with pytest.raises(NoDualsError):
        bres.solution_loader.get_duals()


def test_bad_gap_and_oversized_instances_are_refused():
    inst = random_instance(0, 4, 2, 1.0, 2.0)
    with pytest.raises(DataValidationError, match="gap"):
        structured_ipm(inst, gap=1.5)
    from dpmodels.metricdp.ipm import linalg

    old = linalg.MAX_BLOCK_BYTES
    try:
        linalg.MAX_BLOCK_BYTES = 100
        for system in ("auto", "band", "dense"):
            with pytest.raises(DataValidationError, match="GB"):
                structured_ipm(inst, system=system)
    finally:
        linalg.MAX_BLOCK_BYTES = old
    with pytest.raises(DataValidationError, match="system"):
        structured_ipm(inst, system="sparse")


@pytest.mark.parametrize("eps", [0.3, np.log(3), 2.5])
def test_randomized_response_closed_form(eps):
    """Spec worked example A: two records at distance 1, swap costs; the optimum is 1 / (1 + e^eps)."""
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    inst = MDPInstance(d, np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.5, 0.5]), float(eps), 1.0)
    res = structured_ipm(inst, gap=1e-9)
    exact = 1 / (1 + np.exp(eps))
    assert res.lower_bound <= exact + 1e-12 <= res.upper_bound + 2e-12
    assert res.upper_bound == pytest.approx(exact, rel=1e-8)


def test_single_record_and_isolated_records():
    one = MDPInstance(np.zeros((1, 1)), np.array([[1.0, 2.0, 0.5]]), np.array([1.0]), 1.0, 1.0)
    assert structured_ipm(one, gap=1e-8).upper_bound == pytest.approx(0.5, rel=1e-8)
    far = np.array([[0.0, 5.0], [5.0, 0.0]])  # no neighbours within eta: each record takes its cheapest output
    two = MDPInstance(far, np.array([[1.0, 3.0], [2.0, 4.0]]), np.array([0.5, 0.5]), 1.0, 1.0)
    assert structured_ipm(two, gap=1e-8).upper_bound == pytest.approx(1.5, rel=1e-8)


def test_blocks_no_ridge_can_fix_end_in_a_clear_breakdown():
    from dpmodels.metricdp.ipm.linalg import NumericalBreakdown, _schur_factor, invert_blocks

    spd = np.array([[[2.0, 1.0], [1.0, 2.0]]])
    np.testing.assert_allclose(invert_blocks(spd.copy())[0], np.linalg.inv(spd[0]), rtol=1e-14)
    with pytest.raises(NumericalBreakdown):
        invert_blocks(-np.eye(2)[None].copy())
    with pytest.raises(NumericalBreakdown):
        _schur_factor(invert_blocks(np.full((1, 2, 2), np.nan)).sum(axis=0))
    with pytest.raises(NumericalBreakdown):
        _schur_factor(np.array([[1.0, 2.0], [2.0, 1.0]]))  # indefinite
