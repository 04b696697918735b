"""UFL MIP / LP, the tree model, the exact tree DP plugin and the LB9 LP (spec 5, 7.1 oracle 8)."""

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import ModelStructureError, PrivacyParameterError
from dpmodels.core.relax import relax_integer_vars
from dpmodels.facility.data import UFLInstance
from dpmodels.facility.hst import tree_cost
from dpmodels.facility.hst_optimum import lb9, tree_dp
from dpmodels.facility.models import build_lb9_lp, build_tree_model, build_ufl_mip, open_sites, solve_reference
from dpmodels.instances.facility import star_opt, two_point_opt

seeds = st.integers(0, 10_000)


def random_instance(seed, lam=1.5):
    rng = np.random.default_rng(seed)
    return instances.generate(
        "facility/random-hst",
        seed=seed,
        depth=int(rng.integers(2, 5)),
        max_branch=3,
        lam=lam,
        f=float(rng.uniform(0.5, 12)),
        max_count=4,
    )


def test_example_d_star_mip_equals_lp_equals_closed_form():
    m, n, f = 16, 8, 1.0
    r = f / np.sqrt(m)
    N = np.array([1, 1, 16, 1, 1, 16, 1, 1])
    d = np.full((n + 1, n + 1), 2 * r)
    d[0, :] = d[:, 0] = r
    np.fill_diagonal(d, 0)
    inst = UFLInstance(d=d, f=f, N=np.r_[0, N])
    assert star_opt(N, m, f, r) == pytest.approx(4.5)
    for solver in ("highs", "scip"):
        assert solve_reference(build_ufl_mip(inst), solver) == pytest.approx(4.5)
        assert solve_reference(build_ufl_mip(inst, relax=True), solver) == pytest.approx(4.5)


@pytest.mark.parametrize("N", [1, 3, 16])
def test_two_point_mip_matches_the_cost_table(N):
    inst = instances.generate("facility/two-point", m=16, N=N, f=2.0)
    model = build_ufl_mip(inst)
    assert solve_reference(model) == pytest.approx(two_point_opt(N, 16, 2.0))
    assert (0 in open_sites(model)) == (N > 4)  # open a iff N f/√m > f


@settings(max_examples=6)
@given(seeds)
def test_star_metric_mip_matches_closed_form(seed):
    inst = instances.generate("facility/star-metric", seed=seed, m=9, n=6, f=1.5)
    assert solve_reference(build_ufl_mip(inst)) == pytest.approx(inst.info["opt"])


@settings(max_examples=12)
@given(seeds, st.sampled_from([1.2, 1.5, 1.9]))
def test_tree_dp_equals_tree_mip_highs_and_scip(seed, lam):
    inst = random_instance(seed, lam)
    model = build_tree_model(inst)
    res = dpmodels.solve(model, "facility_tree_dp")
    dp_value = res.incumbent_objective
    assert pyo.value(model.obj) == pytest.approx(dp_value, rel=1e-9, abs=1e-9)
    sites = inst.tree.leaf_node[open_sites(model)]
    assert tree_cost(inst.tree, inst.f, inst.N, sites) == pytest.approx(dp_value, rel=1e-9, abs=1e-9)
    for solver in ("highs", "scip"):
        mip = solve_reference(build_tree_model(inst), solver)
        assert dp_value == pytest.approx(mip, rel=1e-6, abs=1e-9)


@settings(max_examples=10)
@given(seeds)
def test_optimum_ordering_lb9_internal_leaves(seed):
    inst = random_instance(seed)
    internal = solve_reference(build_tree_model(inst, sites="all_nodes"))
    leaves = tree_dp(inst).objective
    bound = lb9(inst.tree, inst.f, inst.N)[0]
    assert bound <= internal + 1e-9
    assert internal <= leaves + 1e-9
    assert leaves <= 2 * internal + 1e-9
    lp = solve_reference(build_ufl_mip(inst, relax=True, sites="all_nodes"))
    assert lp <= internal + 1e-9
    assert solve_reference(build_lb9_lp(inst)) == pytest.approx(bound, rel=1e-9, abs=1e-9)


def test_example_a_optima():
    inst = instances.load("facility/example-a")
    assert tree_dp(inst).objective == pytest.approx(9.0)
    assert sorted(tree_dp(inst).locations) == [0, 2, 7]
    assert solve_reference(build_tree_model(inst, sites="all_nodes")) == pytest.approx(9.0)
    assert tree_dp(instances.load("facility/example-a", f=3.1)).objective == pytest.approx(9.3)
    assert tree_dp(instances.load("facility/example-b")).objective == pytest.approx(12.0)


def test_plugins_refuse_what_they_cannot_solve():
    inst = instances.load("facility/example-a")
    with pytest.raises(ModelStructureError, match="sites='all_nodes'"):
        dpmodels.solve(build_tree_model(inst, sites="all_nodes"), "facility_tree_dp")
    with pytest.raises(ModelStructureError, match="relaxation"):
        dpmodels.solve(relax_integer_vars(build_tree_model(inst)), "facility_tree_dp")
    edited = build_tree_model(inst)
    edited.y[0].fix(1)
    with pytest.raises(ModelStructureError, match="edited"):
        dpmodels.solve(edited, "facility_tree_dp")
    with pytest.raises(ModelStructureError, match="does not solve formulation"):
        dpmodels.solve(build_lb9_lp(inst), "facility_tree_dp")
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        dpmodels.solve(build_tree_model(inst), "facility_mechanism")
    with pytest.raises(ModelStructureError, match="forced_open"):
        dpmodels.solve(build_ufl_mip(inst, forced_open=[0]), "facility_tree_dp")
    # the relaxed model is still an ordinary LP for general solvers
    assert solve_reference(relax_integer_vars(build_tree_model(inst))) <= 9.0 + 1e-9


def test_forced_open_sites_are_honoured_by_the_mip():
    inst = instances.load("facility/example-a")
    assert solve_reference(build_ufl_mip(inst, forced_open=[5])) == pytest.approx(12.0)


@pytest.mark.parametrize("seed", [3, 8])
def test_tree_dp_equals_mip_on_larger_trees(seed):
    inst = instances.generate("facility/random-hst", seed=seed, depth=5, max_branch=4, f=9.0, max_count=5)
    assert inst.n >= 60
    assert tree_dp(inst).objective == pytest.approx(solve_reference(build_tree_model(inst)), rel=1e-6)


# ------------------------------------------------------------------ registry, payloads, examples
FORMULATIONS = [f.name for f in dpmodels.core.formulations.formulations("facility")]


def test_formulations_are_registered_with_typed_payloads():
    from dpmodels.core.marker import get_marker
    from dpmodels.facility.models import AntichainPayload, UFLPayload

    expected = {"facility.ufl": UFLPayload, "facility.tree": UFLPayload, "facility.lb9": AntichainPayload}
    assert set(FORMULATIONS) == set(expected)
    for name, payload in expected.items():
        marker = get_marker(instances.example(name))
        assert marker.formulation == name and isinstance(marker.data, payload)
    ufl = get_marker(build_ufl_mip(instances.load("facility/example-a"), forced_open=[5, 0])).data
    assert ufl.sites == "leaves" and ufl.forced_open == (0, 5) and ufl.c.shape == (ufl.I.size, ufl.J.size)
    assert get_marker(instances.example("facility.ufl")).data.sites == "locations"


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_no_example_model_has_a_constraint_without_variables(formulation):
    model = instances.example(formulation)
    for con in model.component_data_objects(pyo.Constraint, active=True):
        assert con.body.polynomial_degree() != 0, f"{formulation}: {con.name} has no variable"
    assert len(list(model.component_data_objects(pyo.Constraint, active=True))) > 0


def test_examples_solve_with_highs_scip_and_the_plugins():
    expected = {"facility.ufl": 4.5, "facility.tree": 9.0, "facility.lb9": 6.75}
    for name, value in expected.items():
        for solver in ("highs", "scip"):
            assert solve_reference(instances.example(name), solver) == pytest.approx(value)
    assert dpmodels.solve(instances.example("facility.tree"), "facility_tree_dp").incumbent_objective == 9.0
    res = dpmodels.solve(instances.example("facility.ufl"), "facility_mechanism", epsilon=1.0, seed=0)
    assert res.solution_status.name == "feasible" and res.incumbent_objective >= 4.5 - 1e-9


def test_mechanism_options_are_declared_and_checked():
    from dpmodels.core.errors import SolverOptionError
    from dpmodels.solvers import load_plugin

    cls = load_plugin("facility_mechanism")
    assert cls.exact is False
    assert set(cls.option_defaults()) == {"epsilon", "seed", "algorithm", "lam", "radius_mode"}
    model = instances.example("facility.tree")
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        dpmodels.solve(model, "facility_mechanism", epsilon=-1.0)
    with pytest.raises(ValueError, match="algorithm"):  # refused by the option's domain, before any draw
        dpmodels.solve(model, "facility_mechanism", epsilon=1.0, algorithm="bogus")
    with pytest.raises(SolverOptionError, match="algorithm"):
        cls.solve_data(dpmodels.core.get_marker(model).data, epsilon=1.0, algorithm="bogus")
    with pytest.raises(SolverOptionError, match="time_limit"):
        dpmodels.solve(model, "facility_mechanism", epsilon=1.0, time_limit=5)
    payload = dpmodels.core.get_marker(model).data
    run = cls.solve_data(payload, epsilon=1.0, seed=0)
    res = dpmodels.solve(model, "facility_mechanism", epsilon=1.0, seed=0)
    assert res.extra_info.R == run.R.tolist()
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        cls.solve_data(payload)
