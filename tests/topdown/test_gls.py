"""The tree GLS of TopDown's measurements: the Pyomo model ``topdown.gls`` solved by Clarabel and HiGHS
equals the ``topdown_gls`` plugin, the adapter equals a dense GLS solved by numpy, and a
measurement file gives the same estimate as the measurements it was written from.  Grouped child
totals (issue 25) are imposed by the model and the plugin alike, and group totals the invariant
totals contradict are refused when the knowledge is checked.

Oracles: Clarabel and HiGHS (independent QP solvers) on the very model the plugin solves; the
dense GLS and the KKT GLS of ``tests/helpers/gls_oracle.py`` on the problem built from a synthetic
census.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo
import pytest
from gls_oracle import dense_gls, kkt_gls, kron_marginal, noisy_queries, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.results import SolutionStatus

import dpmodels
from dpmodels import instances
from dpmodels.core.errors import DataValidationError
from dpmodels.core.tree_gls import TreeGLSProblem
from dpmodels.topdown.compare_estimators import compare_estimators
from dpmodels.topdown.data import ChildGroup, TopDownData
from dpmodels.topdown.driver import topdown
from dpmodels.topdown.gls import gls_estimate, gls_from_set, gls_problem
from dpmodels.topdown.gls_model import build_gls, gls_values
from dpmodels.topdown.measurements import measurement_set, measurements_from_set, public_facts
from dpmodels.topdown.mechanism import measure


def _small_census(seed: int = 0, **options):
    return instances.generate(
        "topdown/synthetic", seed=seed, fanout=(1, 2, 1, 1, 2), races=1, mean_block_population=8.0, **options
    )


def _random_problem(seed: int, groups: bool = False) -> TreeGLSProblem:
    """A random tree with two query sets and a root total; with ``groups``, some siblings held to their sum."""
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, int(rng.integers(4 if groups else 2, 8)))
    truth = tree.aggregate(rng.integers(0, 9, (len(tree.leaves), 4)).astype(float))
    matrices = [kron_marginal((2, 2), {0, 1}), kron_marginal((2, 2), {1})]
    scale = rng.uniform(0.5, 3.0, tree.n_regions)
    queries = noisy_queries(rng, tree, truth, matrices, [scale, 3 * scale])
    held = []
    for parent in tree.internal if groups else ():
        kids = tree.children(int(parent))
        if len(kids) >= 2 and rng.random() < 0.7:
            pick = sorted(int(k) for k in rng.choice(kids, int(rng.integers(1, len(kids))), replace=False))
            held.append((tuple(pick), float(truth[pick].sum())))
    return TreeGLSProblem(tree, 4, queries, {0: float(truth[0].sum())}, zeros=[2], group_totals=tuple(held))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_model_solved_by_clarabel_equals_the_plugin(seed):
    problem = _random_problem(seed)
    ours = build_gls(problem)
    res = dpmodels.solve(ours, "topdown_gls")
    assert res.solution_status == SolutionStatus.optimal
    theirs = build_gls(problem)
    other = dpmodels.solve(theirs, "clarabel")
    assert other.solution_status == SolutionStatus.optimal
    np.testing.assert_allclose(gls_values(ours), gls_values(theirs), atol=1e-5)
    assert res.incumbent_objective == pytest.approx(other.incumbent_objective, rel=1e-6, abs=1e-6)
    assert pyo.value(ours.objective) == pytest.approx(res.incumbent_objective, rel=1e-9)


def test_the_example_solved_by_highs_equals_the_plugin_in_both_apis():
    ours, theirs = instances.example("topdown.gls"), instances.example("topdown.gls")
    res = dpmodels.solve(ours, "topdown_gls")
    dpmodels.solve(theirs, "highs")
    np.testing.assert_allclose(gls_values(ours), gls_values(theirs), atol=1e-6)
    legacy = pyo.SolverFactory("topdown_gls").solve(instances.example("topdown.gls"))
    assert pyo.check_optimal_termination(legacy)
    variance = res.extra_info.gls.variance
    assert variance.shape == (6, 4) and (variance[:, 3] == 0).all() and (variance[1:, :3] > 0).all()


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_group_totals_in_the_model_solved_by_clarabel_and_highs_equal_the_plugin(seed):
    problem = _random_problem(seed, groups=True)
    ours = build_gls(problem)
    res = dpmodels.solve(ours, "topdown_gls")
    assert res.solution_status == SolutionStatus.optimal
    assert len(ours.group_totals) == len(problem.group_totals)
    estimate = gls_values(ours)
    for regions, total in problem.group_totals:
        assert estimate[list(regions)].sum() == pytest.approx(total, abs=1e-8)
    for solver in ("clarabel", "highs"):
        theirs = build_gls(problem)
        other = dpmodels.solve(theirs, solver)
        assert other.solution_status == SolutionStatus.optimal, solver
        np.testing.assert_allclose(gls_values(theirs), estimate, atol=1e-5, err_msg=solver)
        assert other.incumbent_objective == pytest.approx(res.incumbent_objective, rel=1e-6, abs=1e-6)


def _grouped_census(seed: int = 0) -> TopDownData:
    """One state of three counties (their totals not invariant); the first two held to their sum."""
    data = instances.generate(
        "topdown/synthetic", seed=seed, fanout=(1, 3, 1, 1, 2), races=1, mean_block_population=8.0
    )
    geo = data.geography
    totals = np.asarray(data.node_histograms_all().sum(axis=1)).ravel()
    counties = [geo.names[c] for c in geo.children(geo.children(0)[0])]
    assert geo.level[geo.index[counties[0]]] > data.knowledge.total_level
    group = ChildGroup(tuple(counties[:2]), int(sum(totals[geo.index[c]] for c in counties[:2])))
    knowledge = replace(data.knowledge, child_groups=(group,))
    return TopDownData(data.schema, geo, data.leaf_counts, knowledge, name="census with a group")


def test_grouped_child_totals_give_the_kkt_gls_and_hold():
    data = _grouped_census()
    measured = measure(data, 2, rng=np.random.default_rng(3))
    problem = gls_problem(measured, data.knowledge, data.schema, data.geography)
    result = gls_estimate(measured, data.knowledge, data.schema, data.geography)
    est, var, total_var = kkt_gls(problem)
    np.testing.assert_allclose(result.estimate, est, rtol=1e-8, atol=1e-8 * np.abs(est).max())
    np.testing.assert_allclose(result.variance, var, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(result.total_variance, total_var, rtol=1e-8, atol=1e-8)
    index = data.geography.index
    for group in data.knowledge.child_groups:
        rows = [index[r] for r in group.regions]
        assert result.totals[rows].sum() == pytest.approx(group.total, abs=1e-8)
        assert (result.total_variance[rows] > 0).all()  # each county stays uncertain, only their sum is exact
    invariant = data.knowledge.invariant_totals
    np.testing.assert_allclose(result.totals[: len(invariant)], invariant, atol=1e-8)


def test_the_estimator_comparison_takes_a_census_with_groups():
    data = _grouped_census(seed=1)
    found = compare_estimators(data, epsilons=(2,), runs=2, estimators=["GLS", "TopDown"], seed=5)
    gls = found.summary.set_index(["estimator", "level"]).loc["GLS"]
    assert gls.loc[[1, 2], "total L1 error"].max() == pytest.approx(0.0, abs=1e-6)  # nation and state invariant
    assert set(found.per_run["estimator"]) == {"GLS", "TopDown"}


def test_group_totals_that_contradict_the_invariant_totals_are_refused_by_the_check():
    data = _grouped_census()
    geo, kn = data.geography, data.knowledge
    state = int(geo.children(0)[0])
    counties = tuple(geo.names[c] for c in geo.children(state))
    state_total = int(kn.invariant_totals[state])
    for groups, word in [
        ((ChildGroup(counties, state_total + 1),), "not the invariant total"),  # all the children
        ((ChildGroup(counties[:1], state_total), ChildGroup(counties[1:2], 1)), "more than the invariant total"),
    ]:
        with pytest.raises(DataValidationError, match=word):
            replace(kn, child_groups=groups).check(geo)
        with pytest.raises(DataValidationError, match=word):  # and so never reach the GLS
            gls_problem(measure(data, 2, rng=1), replace(kn, child_groups=groups), data.schema, geo)
    two = instances.generate("topdown/synthetic", seed=0, fanout=(2, 1, 1, 1, 2), races=1, mean_block_population=8.0)
    first = int(two.geography.children(0)[0])  # a state: its total is invariant
    wrong = ChildGroup((two.geography.names[first],), int(two.knowledge.invariant_totals[first]) - 1)
    with pytest.raises(DataValidationError, match="not the sum of its regions' invariant totals"):
        replace(two.knowledge, child_groups=(wrong,)).check(two.geography)
    replace(kn, child_groups=(ChildGroup(counties, state_total),)).check(geo)  # consistent: accepted


def test_topdown_measurements_give_the_dense_gls_and_keep_the_facts():
    data = _small_census()
    measured = measure(data, 2, rng=np.random.default_rng(1))
    problem = gls_problem(measured, data.knowledge, data.schema, data.geography)
    assert [q.name for q in problem.queries] == [q.name for q in measured.strategy.queries]
    result = gls_estimate(measured, data.knowledge, data.schema, data.geography)
    est, var, total_var = dense_gls(problem)
    np.testing.assert_allclose(result.estimate, est, rtol=1e-8, atol=1e-8 * np.abs(est).max())
    np.testing.assert_allclose(result.variance, var, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(result.total_variance, total_var, rtol=1e-8, atol=1e-8)
    zeros = np.asarray(data.knowledge.structural_zeros)
    assert (result.estimate[:, zeros] == 0).all()
    invariant = data.knowledge.invariant_totals
    np.testing.assert_allclose(result.totals[: len(invariant)], invariant, atol=1e-8)
    np.testing.assert_allclose(data.geography.consistency_residual(result.estimate), 0.0, atol=1e-8)


def test_a_measurement_file_gives_the_same_estimate():
    data = _small_census(seed=2, gq_share=0.0, edits=False)
    measured = measure(data, 1, rng=np.random.default_rng(4))
    kn = data.knowledge
    plain = type(kn)(kn.invariant_totals, kn.total_level)  # the file format carries totals only
    facts = public_facts(data.schema, data.geography, plain, measured.strategy)
    from_file = gls_from_set(measurement_set(measured, facts, "test"))
    direct = gls_estimate(measured, plain, data.schema, data.geography)
    np.testing.assert_allclose(from_file.estimate, direct.estimate, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(from_file.variance, direct.variance, rtol=1e-12)


def test_a_measurement_file_carries_the_group_totals():
    """The facts hold the grouped child totals (``child_groups``): the estimate from the file is the
    direct one with the groups, and the group holds exactly."""
    data = _grouped_census(seed=1)
    measured = measure(data, 2, rng=np.random.default_rng(5))
    kn = type(data.knowledge)(  # the format carries totals and groups, not GQ facts, zeros or edits
        data.knowledge.invariant_totals, data.knowledge.total_level, child_groups=data.knowledge.child_groups
    )
    facts = public_facts(data.schema, data.geography, kn, measured.strategy)
    assert facts["child_groups"] == [{"regions": list(g.regions), "total": g.total} for g in kn.child_groups]
    facts = json.loads(json.dumps(facts))  # as written to and read from a facts file
    from_file = gls_from_set(measurement_set(measured, facts, "test"))
    direct = gls_estimate(measured, kn, data.schema, data.geography)
    np.testing.assert_allclose(from_file.estimate, direct.estimate, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(from_file.variance, direct.variance, rtol=1e-12)
    group = kn.child_groups[0]
    rows = [data.geography.index[r] for r in group.regions]
    assert from_file.totals[rows].sum() == pytest.approx(group.total, abs=1e-8)
    back, public = measurements_from_set(measurement_set(measured, facts, "test"))  # TopDown from the file
    again = topdown(back, public.knowledge, public.schema, public.geography)
    assert again.node_counts[rows].sum() == group.total
    expected = topdown(measured, kn, data.schema, data.geography)
    assert (again.node_counts != expected.node_counts).nnz == 0


@pytest.mark.parametrize(
    "groups, message",
    [
        ({"regions": ["a"], "total": 1}, "must be a list"),
        ([{"regions": ["a"]}], r"child_groups\[0\] must be"),
        ([{"regions": "a", "total": 1}], "regions a list of names"),
        ([{"regions": ["a"], "total": "1"}], "regions a list of names"),
        ([{"regions": ["a"], "total": 1.5}], "total must be a count"),
    ],
)
def test_malformed_group_facts_are_refused_by_name(groups, message):
    from dpmodels.core.errors import DataValidationError
    from dpmodels.topdown.measurements import PublicInputs

    data = _grouped_census()
    plain = type(data.knowledge)(data.knowledge.invariant_totals, data.knowledge.total_level)
    facts = public_facts(data.schema, data.geography, plain, measure(data, 1, rng=0).strategy)
    with pytest.raises(DataValidationError, match=message):
        PublicInputs({**facts, "child_groups": groups})
