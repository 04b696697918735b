"""The tree GLS of TopDown's measurements: the Pyomo model ``topdown.gls`` solved by Clarabel and HiGHS
equals the ``topdown_gls`` plugin, the adapter equals a dense GLS solved by numpy, and a
measurement file gives the same estimate as the measurements it was written from.

Oracles: Clarabel and HiGHS (independent QP solvers) on the very model the plugin solves; the
dense GLS of ``tests/helpers/gls_oracle.py`` on the problem built from a synthetic census.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
from gls_oracle import dense_gls, kron_marginal, noisy_queries, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.results import SolutionStatus

import dpmodels
from dpmodels import instances
from dpmodels.core.tree_gls import TreeGLSProblem
from dpmodels.topdown.gls import gls_estimate, gls_from_set, gls_problem
from dpmodels.topdown.gls_model import build_gls, gls_values
from dpmodels.topdown.measurements import measurement_set, public_facts
from dpmodels.topdown.mechanism import measure


def _small_census(seed: int = 0, **options):
    return instances.generate(
        "topdown/synthetic", seed=seed, fanout=(1, 2, 1, 1, 2), races=1, mean_block_population=8.0, **options
    )


def _random_problem(seed: int) -> TreeGLSProblem:
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, int(rng.integers(2, 7)))
    truth = tree.aggregate(rng.integers(0, 9, (len(tree.leaves), 4)).astype(float))
    matrices = [kron_marginal((2, 2), {0, 1}), kron_marginal((2, 2), {1})]
    scale = rng.uniform(0.5, 3.0, tree.n_regions)
    queries = noisy_queries(rng, tree, truth, matrices, [scale, 3 * scale])
    return TreeGLSProblem(tree, 4, queries, {0: float(truth[0].sum())}, zeros=[2])


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
