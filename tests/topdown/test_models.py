"""TopDown Pyomo models and plugins against the spec's worked examples and oracles (spec 6.2-6.3)."""

import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.factory import SolverFactory

import dpmodels
from dpmodels.core.errors import InfeasibleDomainError, ModelStructureError
from dpmodels.core.marker import get_marker
from dpmodels.topdown.data import Edit, FlowData
from dpmodels.topdown.failsafe_models import FailsafeL1Payload, FailsafeL2Payload, build_failsafe_l1, build_failsafe_l2
from dpmodels.topdown.flow import SCALE, solve_flow_rounding
from dpmodels.topdown.implied import flows_hold
from dpmodels.topdown.models import L2Payload, RoundingPayload, build_l1, build_l2, histogram_values
from dpmodels.topdown.node_data import ChildSpec, NodeProblem, WeightedQuery, split_floor
from dpmodels.topdown.tree_l2 import simplex_projection
from dpmodels.topdown.tum import tum_certificate


def l1_distance(model) -> float:
    return float(np.abs(histogram_values(model) - get_marker(model).data.hstar).sum())


def t7_problem():
    """T7: types A (cells 0-1) and B (cells 2-4); leaf 1 {A,B} N=4, leaf 2 {B} N=5; P = 9."""
    flows = FlowData(np.array([[True, True], [False, True]]), np.zeros((2, 2), int), np.array([4, 5]))
    return NodeProblem(np.arange(5), [ChildSpec(0, [], flows=flows)], root_total=9, cell_type=np.array([0, 0, 1, 1, 1]))


T7_HSTAR = np.array([[2.48, 1.47, 1.36, 1.35, 2.34]])


# ---------------------------------------------------------------- worked examples
@pytest.mark.parametrize("backend", ["highs", "topdown_flow"])
def test_t6_root_largest_remainder(backend):
    problem = NodeProblem(np.arange(4), [ChildSpec(0, [])], root_total=8)
    m = build_l1(problem, np.array([[2.6, 1.3, 0.7, 3.4]]))
    dpmodels.solve(m, backend)
    np.testing.assert_array_equal(histogram_values(m), [[3, 1, 1, 3]])
    assert l1_distance(m) == pytest.approx(1.4)


@pytest.mark.parametrize("objective", ["l1", "paper"])
@pytest.mark.parametrize("backend", ["highs", "topdown_flow"])
def test_t7_flow_constraints_bind(backend, objective):
    m = build_l1(t7_problem(), T7_HSTAR, objective=objective)
    dpmodels.solve(m, backend)
    np.testing.assert_array_equal(histogram_values(m), [[3, 1, 2, 1, 2]])
    assert l1_distance(m) == pytest.approx(2.32)
    assert {k: round(pyo.value(v)) for k, v in m.F.items()} == {(0, 0, 0): 4, (0, 1, 0): 0, (0, 1, 1): 5}
    assert [pyo.value(m.GQ[0, g]) for g in (0, 1)] == [4, 5] and [pyo.value(m.CB[0, c]) for c in (0, 1)] == [4, 5]


def test_t7_unconstrained_rounding_is_not_extendable():
    """Largest remainder ignoring the flows gives [3,2,1,1,2] (L1 2.10), which breaks A <= 4."""
    plain = NodeProblem(np.arange(5), [ChildSpec(0, [])], root_total=9)
    m = build_l1(plain, T7_HSTAR)
    dpmodels.solve(m, "highs")
    np.testing.assert_array_equal(histogram_values(m), [[3, 2, 1, 1, 2]])
    assert l1_distance(m) == pytest.approx(2.10)
    flows = t7_problem().children[0].flows
    assert not flows_hold(flows, np.array([0, 0, 1, 1, 1]), histogram_values(m)[0])
    assert flows_hold(flows, np.array([0, 0, 1, 1, 1]), np.array([3, 1, 2, 1, 2]))


@pytest.mark.parametrize("backend", ["highs", "topdown_flow"])
def test_t8_child_parent_sums_only(backend):
    problem = NodeProblem(np.arange(2), [ChildSpec(i, []) for i in range(3)], parent=np.array([5, 3]))
    m = build_l1(problem, np.array([[1.5, 0.2], [2.25, 1.9], [1.25, 0.9]]))
    dpmodels.solve(m, backend)
    np.testing.assert_array_equal(histogram_values(m), [[2, 0], [2, 2], [1, 1]])
    assert l1_distance(m) == pytest.approx(1.4)


@settings(max_examples=30)
@given(st.integers(0, 10**6))
def test_t9_literal_box_is_fractional_corrected_box_is_integral(seed):
    """Erratum 1: the printed box |H - H*| <= 1 has fractional LP optima; [floor, floor+1] does not."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    hstar = rng.uniform(1, 5, n)  # bounds H* - 1 stay positive and fractional, as in the spec's check
    hstar *= np.round(hstar.sum()) / hstar.sum()
    total = int(round(hstar.sum()))
    literal = pyo.ConcreteModel()
    literal.h = pyo.Var(range(n), bounds=lambda m, i: (max(0.0, hstar[i] - 1), hstar[i] + 1))
    literal.total = pyo.Constraint(expr=sum(literal.h.values()) == total)
    frac = hstar - np.floor(hstar)
    literal.obj = pyo.Objective(expr=sum(-frac[i] * (literal.h[i] - np.floor(hstar[i])) for i in range(n)))
    SolverFactory("highs").solve(literal, solver_options={"solver": "simplex"})
    corrected = build_l1(NodeProblem(np.arange(n), [ChildSpec(0, [])], root_total=total), hstar[None], relax=True)
    assert tum_certificate(corrected).holds
    SolverFactory("highs").solve(corrected, solver_options={"solver": "simplex"})
    vals = histogram_values(corrected)
    assert np.allclose(vals, np.round(vals), atol=1e-9)
    lit = np.array([pyo.value(literal.h[i]) for i in range(n)])
    if not np.allclose(frac, np.round(frac)):
        assert not np.allclose(lit, np.round(lit), atol=1e-6)


# ---------------------------------------------------------------- random instances
def _random_problem(rng, child: bool, with_flows: bool, n_types=2, other=2, zeros=None, fixed=True):
    """Children with measured detailed histograms and GQ networks built from true leaf data.

    ``fixed=False``: the networks have lower bounds only (no invariant combination populations)
    and every child of a child solve has its invariant total instead."""
    n_cells = n_types * other
    cell_type = np.repeat(np.arange(n_types), other)
    m = int(rng.integers(2, 4)) if child else 1
    truth = np.zeros((m, n_cells), dtype=np.int64)
    specs = []
    for t in range(m):
        leaves = int(rng.integers(1, 4))
        combos, lowers, pops = [], [], []
        for _ in range(leaves):
            support = rng.random(n_types) < 0.6
            support[rng.integers(n_types)] = True
            low = np.where(support, rng.integers(0, 3, n_types), 0)
            leaf = np.zeros(n_cells, dtype=np.int64)
            for g in np.flatnonzero(support):
                cells = np.flatnonzero((cell_type == g) & (True if zeros is None else ~zeros))
                if len(cells) == 0:  # every cell of this type is a structural zero: the type is absent
                    support[g], low[g] = False, 0
                    continue
                np.add.at(leaf, rng.choice(cells, low[g] + int(rng.integers(0, 4))), 1)
            combos.append(support)
            lowers.append(low)
            pops.append(leaf.sum())
            truth[t] += leaf
        flows = FlowData.from_units(np.array(combos), np.array(lowers), pops if fixed else None) if with_flows else None
        noisy = truth[t] + rng.normal(0, 1.5, n_cells)
        specs.append([flows, noisy])
    parent = truth.sum(axis=0)
    cells = np.flatnonzero(parent > 0) if child else np.arange(n_cells)
    identity = sp.identity(len(cells), format="csr")
    children = [
        ChildSpec(
            t,
            [WeightedQuery("detailed", identity, noisy[cells], 1.0, True)],
            int(truth[t].sum()) if (not fixed and child) or not (with_flows or child) else None,
            flows,
        )
        for t, (flows, noisy) in enumerate(specs)
    ]
    if child:
        return NodeProblem(cells, children, parent=parent[cells], cell_type=cell_type)
    return NodeProblem(cells, children, root_total=int(truth.sum()), cell_type=cell_type)


@settings(max_examples=40)
@given(st.integers(0, 10**6), st.booleans(), st.booleans())
@example(seed=356, child=True, with_flows=False)
def test_rounding_properties(seed, child, with_flows):
    """Spec 6.3 items 1, 2, 3, 4, 5, 6, 7: integral, within floor+1, sums and GQ facts exact,
    LP = MIP under the certificate, min-cost flow = LP, objective = L1 distance - sum phi."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(rng, child, with_flows)
    l2 = build_l2(problem)
    dpmodels.solve(l2, "clarabel")
    hstar = histogram_values(l2)
    low, phi = split_floor(hstar)
    lp = build_l1(problem, hstar, relax=True)
    assert tum_certificate(lp).holds
    lp_res = dpmodels.solve(lp, "highs", options={"solver": "simplex"})
    mip = build_l1(problem, hstar)
    mip_res = dpmodels.solve(mip, "highs")
    flow_values, flow_obj = solve_flow_rounding(problem, hstar)
    lp_values = histogram_values(lp)
    assert np.allclose(lp_values, np.round(lp_values))
    # every H* integral (seed 356): no variable is left to round, HiGHS calls the empty model "unknown"
    # and reports no objective; the objective is then its constant, 0
    mip_obj = mip_res.incumbent_objective if mip.nvariables() else pyo.value(mip.objective)
    lp_obj = lp_res.incumbent_objective if lp.nvariables() else pyo.value(lp.objective)
    assert lp_obj == pytest.approx(mip_obj, abs=1e-7)
    assert flow_obj == pytest.approx(mip_obj, abs=problem.m * problem.n / SCALE + 1e-9)
    for values in (np.round(lp_values), histogram_values(mip), flow_values):
        assert ((values == low) | (values == low + 1)).all()
        assert mip_obj + phi.sum() == pytest.approx(np.abs(values - hstar).sum(), abs=1e-6)
        if child:
            np.testing.assert_array_equal(values.sum(axis=0), problem.parent)
        else:
            assert values.sum() == problem.root_total
        for t, c in enumerate(problem.children):
            if c.flows is not None:
                assert flows_hold(c.flows, problem.types(), values[t])


@settings(max_examples=40)
@given(st.integers(0, 10**6), st.integers(1, 5), st.integers(1, 6))
def test_largest_remainder_oracle(seed, m, n):
    """Item 8: with parent sums only, the optimum rounds up the largest fractions per cell."""
    rng = np.random.default_rng(seed)
    hstar = rng.uniform(0, 4, (m, n))
    parent = np.round(hstar.sum(axis=0)).astype(int)
    hstar *= (parent / np.maximum(hstar.sum(axis=0), 1e-9))[None]
    problem = NodeProblem(np.arange(n), [ChildSpec(t, []) for t in range(m)], parent=parent)
    model = build_l1(problem, hstar)
    dpmodels.solve(model, "highs")
    low, phi = split_floor(hstar)
    expected = low.copy()
    for j in range(n):
        need = parent[j] - low[:, j].sum()
        expected[np.argsort(-phi[:, j], kind="stable")[:need], j] += 1
    assert np.abs(histogram_values(model) - hstar).sum() == pytest.approx(np.abs(expected - hstar).sum(), abs=1e-9)


@settings(max_examples=40)
@given(st.integers(0, 10**6), st.integers(1, 6), st.integers(1, 8))
def test_l2_tree_solver_equals_qp(seed, m, n):
    """Item 9: identity measurements + parent sums: the closed form equals clarabel and highs."""
    rng = np.random.default_rng(seed)
    parent = rng.integers(1, 20, n)
    children = [
        ChildSpec(t, [WeightedQuery("detailed", sp.identity(n, format="csr"), rng.normal(parent / m, 3), w, True)])
        for t, w in enumerate(rng.uniform(0.2, 2, m))
    ]
    problem = NodeProblem(np.arange(n), children, parent=parent)
    values = {}
    for backend in ("topdown_tree_l2", "clarabel", "highs"):
        model = build_l2(problem)
        res = dpmodels.solve(model, backend)
        values[backend] = (histogram_values(model), res.incumbent_objective)
    tree = values["topdown_tree_l2"][1]
    assert tree == pytest.approx(values["highs"][1], rel=1e-6, abs=1e-6)  # active set: exact
    # Clarabel stops at its interior-point tolerances (seed 4, m = n = 3: 1.3e-5 above a zero
    # bound, objective 1.4e-6 relative above the optimum); no feasible point beats the closed form
    assert tree == pytest.approx(values["clarabel"][1], rel=1e-5, abs=1e-6)
    assert tree <= values["clarabel"][1] + 1e-7 * max(1.0, abs(tree))
    for backend in ("clarabel", "highs"):
        np.testing.assert_allclose(values["topdown_tree_l2"][0], values[backend][0], atol=1e-3)  # IPM accuracy


def test_simplex_projection_matches_the_unconstrained_formula():
    """Without active non-negativity, equal weights give h = m + (target - sum m) / children."""
    means = np.array([[5.0, 3.0], [6.0, 4.0], [7.0, 5.0]])
    out = simplex_projection(means, np.ones((3, 1)), np.array([21.0, 15.0]))
    np.testing.assert_allclose(out, means + (np.array([21.0, 15.0]) - means.sum(axis=0)) / 3)


# ---------------------------------------------------------------- structure and refusals
def test_component_names_and_failsafe_models():
    rng = np.random.default_rng(3)
    problem = _random_problem(rng, child=True, with_flows=True)
    problem.free_marginal = sp.csr_matrix(np.ones((1, problem.cell_type.size)))
    l2 = build_l2(problem)
    for name in ("H", "parent_sum", "gq_def", "flow_out", "flow_in", "comb_pop", "F", "GQ", "CB"):
        assert hasattr(l2, name), name
    dpmodels.solve(l2, "clarabel")
    hstar = histogram_values(l2)
    p1 = build_failsafe_l2(problem, 1)
    res = dpmodels.solve(p1, "highs")
    assert res.incumbent_objective == pytest.approx(0, abs=1e-6)  # a feasible parent needs no slack
    p2 = build_failsafe_l2(problem, 2, 0.0)
    assert hasattr(p2, "fs_budget") and hasattr(p2, "fs_marg") and hasattr(p2, "fs_slack_pos")
    q1 = build_failsafe_l1(problem, hstar, 1)
    assert dpmodels.solve(q1, "highs").incumbent_objective == pytest.approx(0, abs=1e-6)


def test_edits_break_the_certificate_and_the_flow_rounder_refuses():
    problem = NodeProblem(
        np.arange(2),
        [ChildSpec(i, []) for i in range(3)],
        parent=np.array([5, 3]),
        edits=(Edit("e", np.array([4.0, -1.0])),),
    )
    hstar = np.array([[1.5, 0.2], [2.25, 1.9], [1.25, 0.9]])
    model = build_l1(problem, hstar, relax=True)
    cert = tum_certificate(model)
    assert not cert.holds and "coefficient" in cert.reason
    with pytest.raises(ModelStructureError, match="edit"):
        dpmodels.solve(model, "topdown_flow")
    assert dpmodels.solve(build_l1(problem, hstar, relax=True, edits=False), "topdown_flow").incumbent_objective < 0


def test_tree_solver_refuses_flows_and_marginals():
    rng = np.random.default_rng(5)
    with pytest.raises(ModelStructureError, match="flow"):
        dpmodels.solve(build_l2(_random_problem(rng, child=True, with_flows=True)), "topdown_tree_l2")
    q = WeightedQuery("margin", sp.csr_matrix(np.ones((1, 2))), np.array([3.0]), 1.0, False)
    problem = NodeProblem(np.arange(2), [ChildSpec(0, [q]), ChildSpec(1, [q])], parent=np.array([2, 2]))
    with pytest.raises(ModelStructureError, match="identity"):
        dpmodels.solve(build_l2(problem), "topdown_tree_l2")


def test_edited_rounding_model_is_refused():
    m = build_l1(t7_problem(), T7_HSTAR, relax=True)
    m.extra = pyo.Constraint(expr=m.y[0, 0] == 0)
    with pytest.raises(ModelStructureError, match="edited"):
        dpmodels.solve(m, "topdown_flow")


# ---------------------------------------------------------------- the compiled path
@settings(max_examples=25)
@given(st.integers(0, 10**6), st.integers(2, 6), st.integers(8, 40), st.booleans())
def test_compiled_matrices_reach_the_pyomo_optima(seed, m, n, with_edit):
    """The matrix form (GQ and CB eliminated) has the same L2, LP and MIP optima as the models."""
    import dataclasses

    from dpmodels.topdown.bench import random_node_problem
    from dpmodels.topdown.compiled import l1_system, l2_system, solve_l1_highs, solve_l2_clarabel

    problem = random_node_problem(seed, m, n)
    if with_edit:
        coef = np.where(np.arange(n) % 8 == 0, 4.0, np.where(np.arange(n) % 8 == 1, -1.0, 0.0))
        problem = dataclasses.replace(problem, edits=(Edit("kids per adult", coef),))
    model = build_l2(problem)
    res = dpmodels.solve(model, "clarabel")
    system = l2_system(problem)
    x, status, objective = solve_l2_clarabel(system)
    if res.incumbent_objective is None:
        assert x is None
        return
    assert objective == pytest.approx(res.incumbent_objective, rel=1e-6, abs=1e-6)
    np.testing.assert_allclose(x[: system.n_hist].reshape(problem.m, problem.n), histogram_values(model), atol=1e-3)
    hstar = histogram_values(model)
    for integer in (False, True):
        l1 = build_l1(problem, hstar, relax=not integer)
        ref = dpmodels.solve(l1, "highs")
        compiled, _ = l1_system(problem, hstar)
        _, _, obj = solve_l1_highs(compiled, integer=integer)
        if ref.incumbent_objective is None:
            assert obj is None
        else:
            assert obj == pytest.approx(ref.incumbent_objective, abs=1e-6)


@settings(max_examples=20)
@given(st.integers(0, 10**6))
def test_structural_zeros_keep_the_certificate(seed):
    """Theorem 8: leaves that never use a zero set Z give parents that are 0 on Z; those cells
    get no variables, the rounding stays TU and its LP optimum is the MIP optimum."""
    rng = np.random.default_rng(seed)
    zeros = rng.random(8) < 0.3
    problem = _random_problem(rng, child=True, with_flows=True, n_types=2, other=4, zeros=zeros)
    assert not np.isin(problem.cells, np.flatnonzero(zeros)).any()
    l2 = build_l2(problem)
    dpmodels.solve(l2, "clarabel")
    hstar = histogram_values(l2)
    lp = build_l1(problem, hstar, relax=True)
    assert tum_certificate(lp).holds
    lp_res = dpmodels.solve(lp, "highs", options={"solver": "simplex"})
    mip_res = dpmodels.solve(build_l1(problem, hstar), "highs")
    assert lp_res.incumbent_objective == pytest.approx(mip_res.incumbent_objective, abs=1e-7)


# ---------------------------------------------------------------- constant rows (issue: SCIP and trivial constraints)
def test_scip_solves_the_l1_example_and_agrees_with_highs_and_the_flow_rounder():
    """Cell 2 of the example has no rounding variable: its parent-sum row used to be a trivial
    constraint (``Constraint.Feasible``), which SCIP's interface refused (TrivialRelationalExpression)."""
    from dpmodels import instances

    model = instances.example("topdown.l1")
    assert all(x != 2 for _, x in model.y) and 2 not in model.parent_sum  # the row is checked and omitted
    objectives = {}
    for solver in ("scip_direct", "highs", "topdown_flow"):
        m = model.clone()
        res = dpmodels.solve(m, solver)
        assert res.solution_status.name == "optimal", solver
        objectives[solver] = res.incumbent_objective
        np.testing.assert_array_equal(histogram_values(m), [[1, 0, 1, 1], [2, 2, 1, 0]])
    assert objectives["scip_direct"] == pytest.approx(-0.6, abs=1e-9)
    assert objectives["highs"] == pytest.approx(objectives["scip_direct"], abs=1e-9)
    assert objectives["topdown_flow"] == pytest.approx(objectives["scip_direct"], abs=1e-9)


FORMULATIONS = [f.name for f in dpmodels.core.formulations.formulations("topdown")]


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_no_example_model_has_a_constraint_without_variables(formulation):
    from dpmodels import instances

    model = instances.example(formulation)
    for con in model.component_data_objects(pyo.Constraint, active=True):
        assert con.body.polynomial_degree() != 0, f"{formulation}: {con.name} has no variable"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_rounding_models_of_integral_cells_solve_with_scip(seed):
    """Child solves where some cells' floors already meet the parent: no constant row is built,
    and SCIP, HiGHS and the flow rounder agree."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(rng, child=True, with_flows=bool(rng.integers(2)))
    hstar = rng.uniform(0, 3, (problem.m, problem.n))
    hstar *= (problem.parent / np.maximum(hstar.sum(axis=0), 1e-9))[None]
    fixed_cells = rng.random(problem.n) < 0.5
    fixed_cells[rng.integers(problem.n)] = (
        False  # some rounding is left (HiGHS says "unknown" on a model without variables)
    )
    hstar[:, fixed_cells] = 0.0
    hstar[0, fixed_cells] = problem.parent[fixed_cells]  # integral columns summing to the parent
    try:
        model = build_l1(problem, hstar)
    except InfeasibleDomainError as err:  # a constant row the floors violate: named, never built
        assert "[" in err.field
        return
    for con in model.component_data_objects(pyo.Constraint, active=True):
        assert con.body.polynomial_degree() != 0, con.name
    results = {s: dpmodels.solve(model.clone(), s) for s in ("scip_direct", "highs")}
    statuses = {s: r.termination_condition for s, r in results.items()}
    assert statuses["scip_direct"] == statuses["highs"]
    if statuses["highs"].name == "convergenceCriteriaSatisfied":
        assert results["scip_direct"].incumbent_objective == pytest.approx(
            results["highs"].incumbent_objective, abs=1e-6
        )
        _, flow_obj = solve_flow_rounding(problem, hstar)
        assert flow_obj == pytest.approx(results["highs"].incumbent_objective, abs=problem.m * problem.n / SCALE + 1e-9)


def test_a_violated_constant_row_is_refused_by_name():
    """Floors that already meet every parent leave no variable; a child total they miss is a
    proof of infeasibility, reported with the row's name (it used to be a trivial constraint)."""
    hstar = np.array([[1.0, 0.0], [1.0, 1.0]])
    ok = NodeProblem(np.arange(2), [ChildSpec(0, [], total=1), ChildSpec(1, [])], parent=np.array([2, 1]))
    assert len(build_l1(ok, hstar).child_total) == 0  # satisfied by the constants: omitted
    bad = NodeProblem(np.arange(2), [ChildSpec(0, [], total=2), ChildSpec(1, [])], parent=np.array([2, 1]))
    with pytest.raises(InfeasibleDomainError, match=r"child_total\[0\]"):
        build_l1(bad, hstar)
    edit = Edit("four per adult", np.array([1.0, -4.0]))
    with pytest.raises(InfeasibleDomainError, match=r"edit\[1,0\].*four per adult"):
        build_l1(
            NodeProblem(np.arange(2), [ChildSpec(0, []), ChildSpec(1, [])], parent=np.array([2, 1]), edits=(edit,)),
            hstar,
        )


def test_an_edit_on_inactive_cells_is_no_row_of_the_l2_model():
    q = WeightedQuery("detailed", sp.identity(2, format="csr"), np.array([1.0, 2.0]), 1.0, True)
    edit = Edit("inactive only", np.array([0.0, 0.0, 1.0]))
    problem = NodeProblem(
        np.array([0, 1]), [ChildSpec(0, [q]), ChildSpec(1, [q])], parent=np.array([2, 3]), edits=(edit,)
    )
    model = build_l2(problem)
    assert len(model.edit) == 0
    assert dpmodels.solve(model, "scip_direct").termination_condition.name == "convergenceCriteriaSatisfied"


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_flow_rounder_honours_child_totals_with_lower_bound_only_networks(seed):
    """A child with a group-quarters network without invariant populations and an invariant
    total: the rounding network must route exactly that total (it used to drain into the free
    sink and ignore it, returning a rounding that broke the child total)."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(rng, child=True, with_flows=True, fixed=False)
    assert all(c.total is not None and not c.flows.fixed for c in problem.children)
    l2 = build_l2(problem)
    dpmodels.solve(l2, "clarabel")
    hstar = histogram_values(l2)
    mip = build_l1(problem, hstar)
    mip_res = dpmodels.solve(mip, "highs")
    try:
        values, flow_obj = solve_flow_rounding(problem, hstar)
    except InfeasibleDomainError:
        assert mip_res.termination_condition.name != "convergenceCriteriaSatisfied"
        return
    assert flow_obj == pytest.approx(mip_res.incumbent_objective, abs=problem.m * problem.n / SCALE + 1e-9)
    np.testing.assert_array_equal(values.sum(axis=1), [c.total for c in problem.children])
    np.testing.assert_array_equal(values.sum(axis=0), problem.parent)


def test_payloads_are_typed():
    from dpmodels import instances
    from dpmodels.topdown.gls_model import GLSPayload

    expected = {
        "topdown.l2": L2Payload,
        "topdown.l1": RoundingPayload,
        "topdown.failsafe_l2.phase1": FailsafeL2Payload,
        "topdown.failsafe_l2.phase2": FailsafeL2Payload,
        "topdown.failsafe_l1.phase1": FailsafeL1Payload,
        "topdown.failsafe_l1.phase2": FailsafeL1Payload,
        "topdown.gls": GLSPayload,
    }
    assert set(expected) == set(FORMULATIONS)
    for name, payload in expected.items():
        marker = get_marker(instances.example(name))
        assert isinstance(marker.data, payload) and marker.formulation == name
    l1 = get_marker(instances.example("topdown.l1")).data
    assert l1.l1_constant == pytest.approx(l1.fraction.sum()) and l1.objective == "l1"
    assert get_marker(instances.example("topdown.failsafe_l1.phase2")).data.d_star == 2.0


def _assert_loaded_point_is_feasible(model) -> None:
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert not con.has_lb() or body >= pyo.value(con.lower) - 1e-6, con.name
        assert not con.has_ub() or body <= pyo.value(con.upper) + 1e-6, con.name
    for var in model.component_data_objects(pyo.Var):
        assert var.value is not None, f"{var.name} was not loaded"
        assert not var.has_lb() or var.value >= var.lb - 1e-9, var.name
        assert not var.has_ub() or var.value <= var.ub + 1e-9, var.name


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.booleans(), st.booleans())
def test_flow_rounder_loads_every_variable_of_the_model(seed, child, fixed):
    """topdown_flow loads y and the group-quarters variables GQ, F, CB (the network's own flows):
    the loaded point satisfies every row of the model and its objective is the model's."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(rng, child, with_flows=True, fixed=fixed)
    l2 = build_l2(problem)
    dpmodels.solve(l2, "clarabel")
    model = build_l1(problem, histogram_values(l2))
    res = dpmodels.solve(model, "topdown_flow")
    if res.termination_condition.name == "provenInfeasible":  # no flow: the MILP has no solution either
        assert dpmodels.solve(model, "highs").termination_condition.name != "convergenceCriteriaSatisfied"
        return
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    _assert_loaded_point_is_feasible(model)
    assert pyo.value(model.objective) == pytest.approx(res.incumbent_objective, abs=1e-9)


def test_flow_rounder_proves_an_infeasible_rounding():
    """T7's network with floors of type A (5) above the only combination admitting A (N = 4):
    no rounding exists; the network proves it (provenInfeasible, no solution), as HiGHS does."""
    hstar = np.array([[3.2, 2.1, 1.0, 1.0, 1.7]])
    res = dpmodels.solve(build_l1(t7_problem(), hstar), "topdown_flow")
    assert res.termination_condition.name == "provenInfeasible" and res.solution_status.name == "noSolution"
    assert "no feasible flow" in res.extra_info.reason
    assert dpmodels.solve(build_l1(t7_problem(), hstar), "highs").termination_condition.name in (
        "provenInfeasible",
        "infeasibleOrUnbounded",
    )
