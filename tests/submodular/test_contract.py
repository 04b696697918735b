"""The submodular family under the plugin contract: registered formulations with typed payloads,
one tiny example each, plugins on payloads (``solve_data``), complete loaded solutions and honest
statuses (the heuristics and mechanisms are ``feasible``, the matroid greedy ``optimal``)."""

import numpy as np
import pyomo.environ as pyo
import pytest
from submodular_cases import KINDS, make

import dpmodels
from dpmodels import instances
from dpmodels.core.capabilities import declared_class
from dpmodels.core.errors import ModelStructureError
from dpmodels.core.formulations import formulations, model_class
from dpmodels.core.marker import get_marker
from dpmodels.submodular.algorithms import greedy, k_greedy
from dpmodels.submodular.models import (
    LiftLPPayload,
    MatroidLPPayload,
    SubmodularPayload,
    build_matroid_lp,
    build_multilinear_relaxation,
)

FLAGS = {
    "submodular.matroid_lp": (MatroidLPPayload, True, "linear"),  # the 0/1 program, built relaxed by default
    "submodular.multilinear": (SubmodularPayload, False, "polynomial"),
    "submodular.coverage_milp": (SubmodularPayload, True, "linear"),
    "submodular.facility_milp": (SubmodularPayload, True, "linear"),
    "submodular.kcoverage_milp": (SubmodularPayload, True, "linear"),
    "submodular.lift_lp": (LiftLPPayload, False, "linear"),
}


def assert_feasible(model, tol=1e-9):
    for var in model.component_data_objects(pyo.Var):
        assert var.value is not None, var.name
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert con.lower is None or body >= pyo.value(con.lower) - tol, con.name
        assert con.upper is None or body <= pyo.value(con.upper) + tol, con.name


def test_every_builder_is_registered_with_honest_flags_and_an_example():
    assert {f.name for f in formulations("submodular")} == set(FLAGS)
    for form in formulations("submodular"):
        payload, integer, objective = FLAGS[form.name]
        assert (form.payload, form.integer, form.objective) == (payload, integer, objective)
        model = instances.example(form.name)
        marker = get_marker(model)
        assert marker.formulation == form.name and isinstance(marker.data, payload)
        if objective != "polynomial":  # the declared class is the built one
            relaxed = bool(marker.options.get("relax", False))
            assert declared_class(model) == model_class(model) == form.problem_class(relaxed)
        else:  # the multilinear extension: declared NLP (no LP/QP backend is offered it)
            assert declared_class(model) == "NLP"
    for name in ("submodular.coverage_milp", "submodular.facility_milp", "submodular.kcoverage_milp"):
        res = dpmodels.solve(instances.example(name), "scip")
        assert res.termination_condition.name == "convergenceCriteriaSatisfied"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("base", [False, True])
def test_matroid_greedy_is_exact_and_loads_a_complete_solution(kind, base):
    """On a graphic matroid the loaded point includes Martin's arc flows (every variable set,
    every constraint met); the status is optimal in both APIs."""
    M = make(kind)
    w = np.random.default_rng(2).normal(size=M.n)
    model = build_matroid_lp(M, w, base=base)
    res = dpmodels.solve(model, "submodular_matroid_greedy")
    assert res.solution_status.name == "optimal" and res.extra_info.exact is True
    assert_feasible(model)
    ref = dpmodels.solve(build_matroid_lp(M, w, base=base), "highs")
    assert pyo.value(model.obj) == pytest.approx(res.incumbent_objective) == pytest.approx(ref.incumbent_objective)
    legacy = pyo.SolverFactory("submodular_matroid_greedy").solve(build_matroid_lp(M, w, base=base))
    assert pyo.check_optimal_termination(legacy)
    from dpmodels.solvers.submodular_matroid import MatroidGreedySolver

    y = MatroidGreedySolver.solve_data(MatroidLPPayload(M, w, base))
    assert float(w @ y) == pytest.approx(res.incumbent_objective)


def test_heuristics_and_mechanisms_report_feasible_in_both_apis():
    trap = instances.load("submodular/trap")
    for solver, options in (
        ("submodular_cg", {"T": 2, "seed": 0}),
        ("submodular_private_cg", {"epsilon": 1.0, "T": 2, "seed": 0}),
    ):
        model = build_multilinear_relaxation(trap.function, trap.matroid)
        res = dpmodels.solve(model, solver, **options)
        assert res.termination_condition.name == "convergenceCriteriaSatisfied"
        assert res.solution_status.name == "feasible" and res.extra_info.exact is False
        assert res.objective_bound is None
        legacy = pyo.SolverFactory(solver).solve(
            build_multilinear_relaxation(trap.function, trap.matroid), options=options
        )
        assert legacy.solver.termination_condition == pyo.TerminationCondition.feasible
        assert not pyo.check_optimal_termination(legacy)
    with pytest.raises(ValueError, match="rounding"):  # private rounding is swap (or none): no pipage
        dpmodels.solve(
            build_multilinear_relaxation(trap.function, trap.matroid),
            "submodular_private_cg",
            epsilon=1.0,
            rounding="pipage",
        )


def test_multilinear_on_a_graphic_matroid_loads_martin_flows_with_the_rounded_forest():
    inst = instances.generate("submodular/coverage", seed=1, n=9, users=20, rank=4, matroid="graphic")
    model = build_multilinear_relaxation(inst.function, inst.matroid)
    res = dpmodels.solve(model, "submodular_cg", seed=0)
    assert_feasible(model)
    assert pyo.value(model.obj) == pytest.approx(res.incumbent_objective)


def test_greedy_plugin_on_payloads():
    from dpmodels.solvers.submodular_greedy import SubmodularGreedySolver

    cov = instances.generate("submodular/coverage", seed=1, n=9, users=20, rank=3, matroid="partition")
    res = SubmodularGreedySolver.solve_data(SubmodularPayload(cov.function, cov.matroid))
    assert np.array_equal(res.S, greedy(cov.function, cov.matroid).S)
    kcov = instances.load("submodular/k-coverage-example")
    res = SubmodularGreedySolver.solve_data(SubmodularPayload(kcov.function, kcov.matroid))
    assert np.array_equal(res.S, k_greedy(kcov.function, kcov.matroid).S)
    with pytest.raises(ModelStructureError, match="greedy does not solve a k-coverage function"):
        SubmodularGreedySolver.solve_data(SubmodularPayload(kcov.function, kcov.matroid), algorithm="greedy")
    with pytest.raises(ModelStructureError, match="alg3 does not solve a set function"):
        SubmodularGreedySolver.solve_data(SubmodularPayload(cov.function, cov.matroid), algorithm="alg3", epsilon=1.0)
