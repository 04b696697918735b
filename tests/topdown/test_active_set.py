"""The exact active-set L2 (:mod:`dpmodels.topdown.active_set`) against independent solvers.

Oracles: HiGHS's QP solver on random QPs of the handled shape, Clarabel at a tight tolerance on node
solves with marginals, group-quarters flows and edits, and Clarabel through Pyomo on the same
``build_l2`` model.  The certificate is tested to refuse a point that is not a KKT point, and the
solver to report, never hide, a run it could not finish.
"""

from __future__ import annotations

import dataclasses

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

import dpmodels
from dpmodels.core.highs import new_highs
from dpmodels.topdown.active_set import _Arrays, _certified, applies, solve_l2_active_set
from dpmodels.topdown.bench import random_node_problem
from dpmodels.topdown.compiled import LinearSystem, l2_system, solve_l2_clarabel
from dpmodels.topdown.forced_zeros import expanded, without_forced_zeros
from dpmodels.topdown.models import build_l2, histogram_values
from dpmodels.topdown.node_data import Edit, WeightedQuery
from dpmodels.topdown.node_options import NodeOptions
from dpmodels.topdown.solve import fit_l2


# ---------------------------------------------------------------- random QPs of the handled shape
def random_qp(seed: int, n: int, n_eq: int, n_ub: int) -> LinearSystem:
    """A feasible, bounded QP: diagonal ``D >= 0`` (a quarter of the columns without curvature, all
    bounded below with ``c >= 0`` so the objective is bounded), rows built around a feasible point."""
    rng = np.random.default_rng(seed)
    flat = rng.random(n) < 0.25
    d = np.where(flat, 0.0, rng.uniform(0.5, 4.0, n))
    lb = np.where(flat | (rng.random(n) < 0.8), rng.integers(-1, 2, n).astype(float), -np.inf)
    c = np.where(flat, rng.uniform(0.0, 2.0, n), rng.normal(0, 3, n))
    point = np.where(np.isfinite(lb), lb, 0.0) + rng.exponential(1.0, n) * (rng.random(n) < 0.6)
    a_eq = sp.random(n_eq, n, density=0.3, random_state=rng, data_rvs=lambda k: rng.integers(-2, 3, k)).tocsr()
    a_ub = sp.random(n_ub, n, density=0.3, random_state=rng, data_rvs=lambda k: rng.integers(-2, 3, k)).tocsr()
    slack = rng.exponential(1.0, n_ub) * (rng.random(n_ub) < 0.5)
    return LinearSystem(
        sp.diags(d, format="csc"), c, 0.0, a_eq, a_eq @ point, a_ub, a_ub @ point + slack, lb, np.full(n, np.inf), n
    )


def highs_qp(system: LinearSystem) -> float | None:
    """HiGHS's QP solver on the same system (an independent active-set code): the optimal value."""
    h = new_highs()
    lp = highspy.HighsLp()
    a = sp.vstack([system.a_eq, system.a_ub], format="csc")
    lp.num_col_, lp.num_row_ = system.n, a.shape[0]
    lp.col_cost_ = system.c
    lp.col_lower_ = np.where(np.isfinite(system.lb), system.lb, -highspy.kHighsInf)
    lp.col_upper_ = np.full(system.n, highspy.kHighsInf)
    lp.row_lower_ = np.concatenate([system.b_eq, np.full(system.a_ub.shape[0], -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([system.b_eq, system.b_ub])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    model = highspy.HighsModel()
    model.lp_ = lp
    hessian = highspy.HighsHessian()
    upper = sp.triu(system.P).tocsc()
    hessian.dim_, hessian.format_ = system.n, highspy.HessianFormat.kTriangular
    hessian.start_, hessian.index_, hessian.value_ = upper.indptr, upper.indices, upper.data
    model.hessian_ = hessian
    h.passModel(model)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getInfo().objective_function_value)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(4, 40), st.integers(0, 12), st.integers(0, 6))
def test_random_qps_reach_the_highs_optimum(seed, n, n_eq, n_ub):
    system = random_qp(seed, n, min(n_eq, n - 1), n_ub)
    reference = highs_qp(system)
    result = solve_l2_active_set(system)
    assert reference is not None  # feasible and bounded by construction
    if result.status != "optimal":  # may happen (cycling is possible); then nothing is claimed
        assert result.x is None and result.objective is None
        return
    assert result.objective == pytest.approx(reference, rel=1e-7, abs=1e-7)
    x = result.x
    assert np.all(x >= system.lb - 1e-9)
    np.testing.assert_allclose(system.a_eq @ x, system.b_eq, atol=1e-8)
    assert np.all(system.a_ub @ x <= system.b_ub + 1e-8)


def test_the_random_qps_are_solved_not_refused():
    """Most random QPs end at a certified optimum (a solver that always gave up would pass above)."""
    results = [solve_l2_active_set(random_qp(seed, 30, 8, 4)).status for seed in range(40)]
    assert results.count("optimal") >= 36, results


# ---------------------------------------------------------------- node solves
def with_marginals(problem, seed: int):
    """Each child also measured on its type totals and its total (the sums form's variables)."""
    rng = np.random.default_rng(seed)
    types = problem.types()
    by_type = sp.csr_matrix((np.ones(problem.n), (types, np.arange(problem.n))), shape=(types.max() + 1, problem.n))
    total = sp.csr_matrix(np.ones((1, problem.n)))
    children = []
    for child in problem.children:
        detailed = child.queries[0].values
        extra = [
            WeightedQuery("types", by_type, by_type @ detailed + rng.normal(0, 2, by_type.shape[0]), 0.5, False),
            WeightedQuery("total", total, total @ detailed + rng.normal(0, 2, 1), 0.25, False),
        ]
        children.append(dataclasses.replace(child, queries=[*child.queries, *extra]))
    return dataclasses.replace(problem, children=children)


def node_problem(seed: int, m: int, n: int, edit: bool):
    problem = with_marginals(random_node_problem(seed, m, n), seed)
    if edit:
        coef = np.where(np.arange(n) % 8 == 0, 4.0, np.where(np.arange(n) % 8 == 1, -1.0, 0.0))
        problem = dataclasses.replace(problem, edits=(Edit("kids per adult", coef),))
    return problem


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 8), st.integers(8, 48), st.booleans())
def test_node_solves_reach_the_clarabel_optimum(seed, m, n, edit):
    """Marginals, flows and edits: the certified optimum is Clarabel's (tight) value, and the
    histogram is unique (strictly convex in it), so the two agree within Clarabel's accuracy."""
    problem = node_problem(seed, m, n, edit)
    system = l2_system(problem)
    reduced, keep = without_forced_zeros(system)
    assert applies(reduced)
    result = solve_l2_active_set(reduced)
    x, _, objective = solve_l2_clarabel(reduced, tol=1e-11)
    if x is None or result.status != "optimal":  # infeasible, or the method cycled: nothing is claimed
        assert result.x is None and result.objective is None
        return
    assert result.objective == pytest.approx(objective, rel=1e-8, abs=1e-8)
    assert result.objective <= objective + 1e-9 * max(1.0, abs(objective))  # no worse than the IPM
    full = expanded(result.x, keep, system.n)
    np.testing.assert_allclose(full[: system.n_hist], expanded(x, keep, system.n)[: system.n_hist], atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6), st.booleans())
def test_the_plugin_solves_the_pyomo_model_and_loads_every_variable(seed, edit):
    problem = node_problem(seed, 3, 16, edit)
    model = build_l2(problem)
    res = dpmodels.solve(model, "topdown_active_set_l2")
    ref = dpmodels.solve(build_l2(problem), "clarabel")
    if res.solution_status != SolutionStatus.optimal:  # the method cycled: no solution, and not called optimal
        assert res.solution_status == SolutionStatus.noSolution
        assert res.termination_condition != TerminationCondition.convergenceCriteriaSatisfied
        return
    assert res.incumbent_objective == pytest.approx(ref.incumbent_objective, rel=1e-6, abs=1e-6)
    import pyomo.environ as pyo

    for var in model.component_data_objects(pyo.Var):
        assert var.value is not None, var.name
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert con.lower is None or body >= pyo.value(con.lower) - 1e-7, con.name
        assert con.upper is None or body <= pyo.value(con.upper) + 1e-7, con.name
    assert pyo.value(model.objective) == pytest.approx(res.incumbent_objective, rel=1e-9, abs=1e-9)
    assert histogram_values(model).shape == (problem.m, problem.n)


def test_most_node_solves_are_solved_not_refused():
    results = [solve_l2_active_set(without_forced_zeros(l2_system(node_problem(s, 6, 32, True)))[0]) for s in range(40)]
    assert sum(r.status == "optimal" for r in results) >= 36, [r.status for r in results]


def test_a_cycling_solve_falls_back_to_clarabel_in_the_driver():
    """This node solve makes the method cycle (an active set whose rows cannot all hold gives huge
    multipliers, and the sets repeat); the driver says so and Clarabel solves it."""
    problem = node_problem(17393, 7, 18, True)
    assert solve_l2_active_set(without_forced_zeros(l2_system(problem))[0]).status == "cycle"
    h_fast, _, log = fit_l2(problem, NodeOptions())
    h_ref, _, _ = fit_l2(problem, NodeOptions(l2="clarabel"))
    assert log[0]["method"] == "clarabel (active set: cycle)"
    np.testing.assert_array_equal(h_fast, h_ref)


def test_an_unfinished_run_loads_nothing_and_is_not_optimal():
    problem = node_problem(3, 6, 40, True)
    assert solve_l2_active_set(without_forced_zeros(l2_system(problem))[0]).iterations > 1
    res = dpmodels.solve(build_l2(problem), "topdown_active_set_l2", max_iter=1)
    assert res.termination_condition == TerminationCondition.iterationLimit
    assert res.solution_status == SolutionStatus.noSolution


def test_the_certificate_refuses_a_point_that_is_not_a_kkt_point():
    """``_certified`` is what makes the result an optimum: a fixed point moved off its row, or with
    a multiplier of the wrong sign, is refused."""
    system = without_forced_zeros(l2_system(node_problem(5, 4, 24, True)))[0]
    result = solve_l2_active_set(system)
    assert result.status == "optimal"
    z = result.x
    b = np.concatenate([system.b_eq, system.b_ub])
    az = np.concatenate([system.a_eq @ z, system.a_ub @ z])
    active = np.isfinite(system.lb) & (z == system.lb)
    lam = np.zeros(len(b))
    nu = system.P @ z + system.c  # stationarity does not hold with these multipliers
    q = _Arrays.of(system, 1e-9)
    assert _certified(system, q, z, lam, nu, active, az, 1).status == "kkt residual"
    moved = z + 0.5
    az_moved = np.concatenate([system.a_eq @ moved, system.a_ub @ moved])
    refused = _certified(system, q, moved, lam, np.zeros_like(z), np.zeros_like(active), az_moved, 1)
    assert refused.status == "kkt residual"


def test_the_driver_solves_with_it_and_says_so():
    problem = node_problem(11, 5, 32, True)
    h_fast, _, log_fast = fit_l2(problem, NodeOptions())
    h_ref, _, log_ref = fit_l2(problem, NodeOptions(l2="clarabel"))
    assert log_fast[-1]["method"] == "active_set" and log_ref[-1]["method"] == "clarabel"
    np.testing.assert_allclose(h_fast, h_ref, atol=1e-4)


def test_a_system_of_another_shape_is_refused():
    system = random_qp(0, 10, 3, 2)
    with pytest.raises(ValueError, match="diagonal"):
        solve_l2_active_set(dataclasses.replace(system, ub=np.ones(10)))


def test_the_pyomo_path_runs_the_plugin_on_the_model():
    problem = node_problem(11, 5, 32, True)
    h_model, _, log = fit_l2(problem, NodeOptions(l2="topdown_active_set_l2", path="pyomo"))
    h_matrix, _, _ = fit_l2(problem, NodeOptions(l2="topdown_active_set_l2"))
    assert log[-1]["method"] == "topdown_active_set_l2" and log[-1]["status"] == "convergenceCriteriaSatisfied"
    np.testing.assert_allclose(h_model, h_matrix, atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**6), st.booleans())
def test_a_certified_solve_at_the_scale_of_a_state_passes_the_driver_checks(seed, edit):
    """Counts of tens of millions (a whole state's root solve): a certified point is primal feasible
    within PRIMAL_TOL absolute, so the driver's absolute checks pass, and the certificate refuses a
    point with a cell at -1e-3 (a tolerance relative to the rows' size let cells at -4e-3 through on
    the whole largest state's root, and the driver refused them)."""
    from dpmodels.topdown.active_set import PRIMAL_TOL
    from dpmodels.topdown.verify import verify_children

    small = random_node_problem(seed, 4, 24, flows=False)
    big = 10**7
    children = [
        dataclasses.replace(c, queries=[dataclasses.replace(q, values=q.values * big) for q in c.queries])
        for c in small.children
    ]
    problem = dataclasses.replace(small, parent=small.parent * big, children=children)
    if edit:
        coef = np.where(np.arange(24) % 8 == 0, 4.0, np.where(np.arange(24) % 8 == 1, -1.0, 0.0))
        problem = dataclasses.replace(problem, edits=(Edit("kids per adult", coef),))
    system = l2_system(problem)
    reduced, keep = without_forced_zeros(system)
    result = solve_l2_active_set(reduced)
    if result.status != "optimal":
        return
    q = _Arrays.of(reduced, 1e-9)
    off = result.x.copy()
    at_bound = np.flatnonzero(np.isfinite(reduced.lb) & (result.x <= reduced.lb + PRIMAL_TOL))
    off[at_bound[0]] -= 1e-3  # a column at its bound pushed 1e-3 below it
    az = np.concatenate([reduced.a_eq @ off, reduced.a_ub @ off])
    no_dual = np.zeros(reduced.n)  # dual residuals all 0: only the primal check can refuse the point
    refused = _certified(reduced, q, off, np.zeros(len(q.b)), no_dual, np.zeros(reduced.n, bool), az, 1)
    assert refused.status == "kkt residual"
    x = expanded(result.x, keep, system.n)
    assert x[: system.n_hist].min() >= -PRIMAL_TOL
    hist = x[: system.n_hist].reshape(problem.m, problem.n)
    assert verify_children(problem, hist, integral=False, edits=edit).ok
    h, _, log = fit_l2(problem, NodeOptions())
    assert h is not None and log[-1]["status"] == "convergenceCriteriaSatisfied"


def test_a_certified_point_the_checks_refuse_goes_to_clarabel(monkeypatch):
    """The driver's own checks have the last word: were they to refuse a certified point (never
    seen since the absolute primal tolerance), Clarabel solves the QP again and the log says so."""
    import dpmodels.topdown.solve as solve_module

    problem = node_problem(11, 5, 32, True)
    checks = solve_module._verified
    calls = []

    def refuse_first(*args, **kwargs):
        calls.append(1)
        return len(calls) > 1 and checks(*args, **kwargs)

    monkeypatch.setattr(solve_module, "_verified", refuse_first)
    h, _, log = fit_l2(problem, NodeOptions())
    assert log[0]["method"] == "clarabel (active set: checks)" and log[0]["status"] == "convergenceCriteriaSatisfied"
    np.testing.assert_allclose(h, fit_l2(problem, NodeOptions(l2="clarabel"))[0], atol=1e-12)
