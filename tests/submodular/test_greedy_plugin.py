"""``submodular_greedy`` on the exact MILPs: loaded points are feasible MILP solutions worth F(S)."""

import numpy as np
import pyomo.environ as pyo
import pytest

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.submodular.algorithms import greedy, k_greedy
from dpmodels.submodular.mechanism.greedy import mitrovic_private_greedy, private_k_greedy_sampled
from dpmodels.submodular.models import build_coverage_milp, build_facility_milp, build_kcoverage_milp


def assert_feasible(model, tol=1e-9):
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert con.lower is None or body >= pyo.value(con.lower) - tol, con.name
        assert con.upper is None or body <= pyo.value(con.upper) + tol, con.name
    for var in model.component_data_objects(pyo.Var):
        assert var.value is not None, var.name
        assert var.lb is None or var.value >= var.lb - tol
        assert var.ub is None or var.value <= var.ub + tol
        if var.is_integer():
            assert abs(var.value - round(var.value)) <= tol


@pytest.mark.parametrize("kind", ["uniform", "partition", "graphic"])
@pytest.mark.parametrize("algorithm", ["greedy", "mitrovic"])
def test_coverage_and_facility_milps(kind, algorithm):
    rank = 4 if kind == "graphic" else 3
    cov = instances.generate("submodular/coverage", seed=1, n=9, users=20, rank=rank, matroid=kind)
    fac = instances.generate("submodular/facility", seed=1, n=9, customers=15, rank=rank, matroid=kind)
    for inst, build in ((cov, build_coverage_milp), (fac, build_facility_milp)):
        model = build(inst.function, inst.matroid)
        res = dpmodels.solve(model, "submodular_greedy", algorithm=algorithm, epsilon=2.0, seed=3)
        assert_feasible(model)
        S = np.array([pyo.value(model.s[e]) for e in range(inst.function.n)]) > 0.5
        direct = (
            greedy(inst.function, inst.matroid)
            if algorithm == "greedy"
            else mitrovic_private_greedy(inst.function, inst.matroid, 2.0, seed=3)
        )
        assert np.array_equal(S, direct.S)
        assert pyo.value(model.obj) == pytest.approx(inst.function(S)) == pytest.approx(res.incumbent_objective)
        assert res.solution_status.name == "feasible"
        if algorithm == "mitrovic":
            assert res.extra_info.privacy["basic_epsilon"] == pytest.approx(2.0 * inst.matroid.r)


@pytest.mark.parametrize("algorithm", ["k_greedy", "alg3", "alg4"])
def test_kcoverage_milp(algorithm):
    inst = instances.generate("submodular/k-coverage", seed=2, n=8, users=20, k=3, rank=3)
    model = build_kcoverage_milp(inst.function, inst.matroid)
    res = dpmodels.solve(model, "submodular_greedy", algorithm=algorithm, epsilon=1.0, seed=0, gamma=0.2)
    assert_feasible(model)
    x = np.zeros(inst.function.n, int)
    for (e, i), var in model.s.items():
        if var.value > 0.5:
            x[e] = i
    assert pyo.value(model.obj) == pytest.approx(inst.function(x)) == pytest.approx(res.incumbent_objective)
    if algorithm == "k_greedy":
        assert np.array_equal(x, k_greedy(inst.function, inst.matroid).S)
    if algorithm == "alg4":
        direct = private_k_greedy_sampled(inst.function, inst.matroid, 1.0, gamma=0.2, seed=0)
        assert np.array_equal(x, direct.S)


def test_refusals():
    ex2 = instances.load("submodular/k-coverage-example")
    model = build_kcoverage_milp(ex2.function, ex2.matroid)
    with pytest.raises(ModelStructureError, match="does not solve"):
        dpmodels.solve(model, "submodular_greedy", algorithm="greedy")
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        dpmodels.solve(model, "submodular_greedy", algorithm="alg3")
