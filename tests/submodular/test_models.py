"""Exact MILPs against brute force, the LP upper bound, the multilinear model and its plugins (spec 6, 8.1)."""

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError, ModelStructureError
from dpmodels.submodular.algorithms import brute_force_opt, k_brute_force_opt
from dpmodels.submodular.models import (
    build_coverage_milp,
    build_facility_milp,
    build_kcoverage_milp,
    build_lift_lp,
    build_multilinear_relaxation,
)
from dpmodels.submodular.objectives import multilinear

MATROIDS = ["uniform", "partition", "graphic"]

EXACT = {"mip_rel_gap": 0.0}  # prove optimality, not HiGHS's default 1e-4 gap


def coverage(seed, kind):
    rank = 4 if kind == "graphic" else 3  # graphic: 5 vertices carry the 9 edges
    return instances.generate(
        "submodular/coverage", seed=seed, n=9, users=14, degree=2.0, rank=rank, matroid=kind, weighted=True
    )


@settings(max_examples=8)
@given(seed=st.integers(0, 10**5), kind=st.sampled_from(MATROIDS))
def test_coverage_milp_equals_brute_force_and_lp_bounds_it(seed, kind):
    inst = coverage(seed, kind)
    opt, _ = brute_force_opt(inst.function, inst.matroid)
    milp = dpmodels.solve(build_coverage_milp(inst.function, inst.matroid), "highs", options=EXACT)
    assert milp.incumbent_objective == pytest.approx(opt, abs=1e-6)
    lp_model = build_coverage_milp(inst.function, inst.matroid, relax=True)
    lp = dpmodels.solve(lp_model, "highs")
    assert lp.incumbent_objective >= opt - 1e-6
    y = np.clip([pyo.value(lp_model.s[e]) for e in range(inst.function.n)], 0, 1)
    # f(y) >= (1 - 1/e) L(y) for coverage (spec 6.4)
    assert multilinear(inst.function, y) >= (1 - 1 / np.e) * lp.incumbent_objective - 1e-6


@settings(max_examples=6)
@given(seed=st.integers(0, 10**5), kind=st.sampled_from(["uniform", "partition"]))
def test_facility_milp_equals_brute_force(seed, kind):
    inst = instances.generate("submodular/facility", seed=seed, n=8, customers=12, nearest=3, rank=3, matroid=kind)
    opt, _ = brute_force_opt(inst.function, inst.matroid)
    res = dpmodels.solve(build_facility_milp(inst.function, inst.matroid), "highs", options=EXACT)
    assert res.incumbent_objective == pytest.approx(opt, abs=1e-6)
    relaxed = dpmodels.solve(build_facility_milp(inst.function, inst.matroid, relax=True), "highs")
    assert relaxed.incumbent_objective >= opt - 1e-6


@settings(max_examples=6)
@given(seed=st.integers(0, 10**5))
def test_kcoverage_milp_equals_brute_force(seed):
    inst = instances.generate("submodular/k-coverage", seed=seed, n=5, users=8, k=2, rank=2)
    opt, _ = k_brute_force_opt(inst.function, inst.matroid)
    res = dpmodels.solve(build_kcoverage_milp(inst.function, inst.matroid), "highs", options=EXACT)
    assert res.incumbent_objective == pytest.approx(opt, abs=1e-6)


def test_worked_examples_opt():
    trap = instances.load("submodular/trap")
    assert dpmodels.solve(
        build_coverage_milp(trap.function, trap.matroid), "highs"
    ).incumbent_objective == pytest.approx(2.0)
    ex2 = instances.load("submodular/k-coverage-example")
    assert dpmodels.solve(build_kcoverage_milp(ex2.function, ex2.matroid), "scip").incumbent_objective == pytest.approx(
        5.0
    )
    value, s = k_brute_force_opt(ex2.function, ex2.matroid)
    assert value == 5.0 and (s != 0).sum() == ex2.matroid.r  # Lemma 5.1: support size r


def test_multilinear_model_objective_and_plugins():
    trap = instances.load("submodular/trap")
    model = build_multilinear_relaxation(trap.function, trap.matroid)
    for e, v in enumerate([0.3, 0.6, 0.9]):
        model.y[e].value = v
    assert pyo.value(model.obj) == pytest.approx(1.56, abs=1e-12)
    res = dpmodels.solve(model, "submodular_cg", T=2, rounding="none")
    assert res.incumbent_objective == pytest.approx(1.55, abs=1e-12)
    assert [pyo.value(model.y[e]) for e in range(3)] == pytest.approx([0.5, 0.5, 1.0])
    assert pyo.value(model.obj) == pytest.approx(1.55, abs=1e-12)
    res = dpmodels.solve(model, "submodular_cg", T=2, direction="highs", rounding="none")
    assert res.incumbent_objective == pytest.approx(1.55, abs=1e-12)
    res = dpmodels.solve(model, "submodular_cg", T=2, seed=3)
    S = np.array([pyo.value(model.y[e]) for e in range(3)]) > 0.5
    assert trap.matroid.is_independent(S) and S.sum() == 2 and res.incumbent_objective == trap.function(S)
    res = dpmodels.solve(model, "submodular_private_cg", epsilon=1.0, T=2, seed=0)
    assert res.extra_info.privacy["basic_epsilon"] == pytest.approx(8.0)
    milp = build_coverage_milp(trap.function, trap.matroid)
    with pytest.raises(ModelStructureError, match="does not solve"):
        dpmodels.solve(milp, "submodular_cg")


def test_lift_lp_decomposes_a_polytope_point():
    trap = instances.load("submodular/trap")
    y = np.array([0.5, 0.25, 0.5])
    bases = trap.matroid.bases()
    m = build_lift_lp(trap.matroid, y, bases)
    dpmodels.solve(m, "highs", raise_on_nonoptimal=True)
    lam = np.array([pyo.value(m.lam[b]) for b in range(len(bases))])
    assert lam.sum() == pytest.approx(1) and np.all(lam @ np.array(bases, float) >= y - 1e-9)
    with pytest.raises(DataValidationError, match="polytope"):
        build_lift_lp(trap.matroid, np.array([1.0, 1.0, 0.0]), bases)


def test_models_refuse_mismatched_inputs():
    trap = instances.load("submodular/trap")
    other = instances.generate("submodular/coverage", n=5, rank=2)
    with pytest.raises(DataValidationError, match="matroid"):
        build_coverage_milp(trap.function, other.matroid)
    with pytest.raises(DataValidationError, match="FacilityLocation"):
        build_facility_milp(trap.function, trap.matroid)


def test_private_plugin_needs_epsilon_and_matches_solve_data():
    from dpmodels.core.errors import PrivacyParameterError
    from dpmodels.submodular.mechanism.continuous import private_continuous_greedy

    trap = instances.load("submodular/trap")
    model = build_multilinear_relaxation(trap.function, trap.matroid)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        dpmodels.solve(model, "submodular_private_cg")
    res = dpmodels.solve(model, "submodular_private_cg", epsilon=0.5, T=2, seed=4, rounding="none")
    direct = private_continuous_greedy(trap.function, trap.matroid, 0.5, T=2, seed=4, rounding="none")
    assert [pyo.value(model.y[e]) for e in range(3)] == pytest.approx(direct.x.tolist())
    assert res.incumbent_objective == pytest.approx(direct.value)


def test_column_generation_lifts_points_beyond_enumeration():
    """40 elements: the lift by column generation dominates x with a convex combination of bases."""
    from dpmodels.submodular.rounding import lift_to_bases

    inst = instances.generate("submodular/coverage", seed=0, n=40, rank=6, matroid="partition", blocks=3)
    M = inst.matroid
    rng = np.random.default_rng(0)
    x = np.mean([M.sample_base(rng.normal(size=40), rng) for _ in range(7)], axis=0) * 0.8
    parts = lift_to_bases(M, x)
    assert all(M.is_independent(B) and B.sum() == M.r for B, _ in parts)
    assert sum(lam for _, lam in parts) == pytest.approx(1.0)
    assert np.all(sum(lam * B for B, lam in parts) >= x - 1e-9)


def test_private_plugin_algorithm_2_and_grid_cover():
    trap = instances.load("submodular/trap")
    model = build_multilinear_relaxation(trap.function, trap.matroid)
    res = dpmodels.solve(model, "submodular_private_cg", epsilon=1.0, algorithm="alg2", T=2, seed=1)
    S = np.array([pyo.value(model.y[e]) for e in range(3)]) > 0.5
    assert trap.matroid.is_independent(S) and S.sum() == 2
    assert res.extra_info.privacy["basic_epsilon"] == pytest.approx(2 * (2 * 1.0 * 2 + 1.0))
    res = dpmodels.solve(model, "submodular_private_cg", epsilon=1.0, cover="grid", q=2, T=2, seed=1)
    S = np.array([pyo.value(model.y[e]) for e in range(3)]) > 0.5
    assert trap.matroid.is_independent(S) and res.incumbent_objective == trap.function(S)
