"""Metric-DP LPs and Benders against the spec's worked examples and oracles (spec 9)."""

import math
import re
import warnings

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.contrib.solver.common.factory import SolverFactory

from dpmodels.core.errors import DataValidationError, PrivacyParameterError
from dpmodels.metricdp.benders import driver as B
from dpmodels.metricdp.benders import master as BM
from dpmodels.metricdp.benders import subproblems as BS
from dpmodels.metricdp.data import MDPInstance, Partition, euclidean_distances
from dpmodels.metricdp.lp import full_lp
from dpmodels.metricdp.mechanism import exponential_mechanism
from dpmodels.metricdp.models import build_full_lp, perturbation_matrix
from dpmodels.metricdp.privacy_audit import (
    expected_loss,
    max_additive_mdp_gap,
    max_mdp_violation,
    max_path_violation,
    repair,
    row_sum_error,
)


def line(eps, n=6):
    x = np.arange(float(n))[:, None]
    d = euclidean_distances(x)
    return MDPInstance(d, d, np.full(n, 1 / n), eps, 1.0, d_ro=d, features=x)


def grid(eps, eta, rows=5, cols=6):
    xy = np.array([(r, c) for r in range(rows) for c in range(cols)], float)
    d = euclidean_distances(xy)
    return MDPInstance(d, d, np.full(len(xy), 1 / len(xy)), eps, eta, d_ro=d, features=xy)


def quadrants(rows=5, cols=6):
    return np.array([2 * (r >= 3) + (c >= 3) for r in range(rows) for c in range(cols)])


def lp_optimum(instance):
    res = full_lp(instance).solve()
    return res.objective, res.x.reshape(instance.N, instance.K)


# ---------------------------------------------------------------- worked examples
def test_example_a_randomized_response():
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    inst = MDPInstance(d, np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.5, 0.5]), math.log(3), 1.0)
    value, z = lp_optimum(inst)
    assert value == pytest.approx(0.25, abs=1e-12)
    np.testing.assert_allclose(z, [[0.75, 0.25], [0.25, 0.75]], atol=1e-9)
    for eps in (0.3, 1.0, 2.5):
        assert lp_optimum(inst.with_privacy(epsilon=eps))[0] == pytest.approx(1 / (1 + math.exp(eps)), abs=1e-12)


@pytest.mark.parametrize(
    "eps, lp, expmech",
    [
        (0.5, 1.060537196514428, 1.4945510318446749),
        (1.0, 0.6271188067275644, 1.1197994969030083),
        (2.0, 0.22257494170720515, 0.6315310794280821),
    ],
)
def test_example_b_line(eps, lp, expmech):
    inst = line(eps)
    value, z = lp_optimum(inst)
    assert value == pytest.approx(lp, rel=1e-9)
    assert expected_loss(inst, exponential_mechanism(inst)) == pytest.approx(expmech, rel=1e-9)
    assert row_sum_error(z) < 1e-9 and max_additive_mdp_gap(inst, z) < 1e-9  # HiGHS met its rows
    assert max_path_violation(inst, z) < 1e-9  # D = d on a line: full mDP for all pairs
    assert max_mdp_violation(inst, repair(inst, z)[0]) == 0.0  # and its repair is exactly private


@pytest.mark.parametrize(
    "eps, eta, lp, expmech, boundary, internal",
    [
        pytest.param(1.0, 1.5, 1.2354151447, 1.979055, 18, [4, 4, 2, 2], marks=pytest.mark.slow),  # ~11 s
        (2.0, 1.0, 0.4107434282, 1.299387, 18, [4, 4, 2, 2]),
        (0.5, 2.0, 1.7214170308, 2.392603, 28, [1, 1, 0, 0]),
    ],
)
def test_example_c_grid(eps, eta, lp, expmech, boundary, internal):
    inst = grid(eps, eta)
    assert lp_optimum(inst)[0] == pytest.approx(lp, abs=1e-9)
    assert expected_loss(inst, exponential_mechanism(inst)) == pytest.approx(expmech, abs=1e-6)
    part = Partition.from_labels(quadrants(), inst.graph)
    assert len(part.all_boundary) == boundary and [len(x) for x in part.internal] == internal
    for init in ("none", "two-hop", "all", "lazy"):
        res = B.benders(inst, part, gap=1e-7, init_cuts=init)
        assert res.upper_bound == pytest.approx(lp, rel=1e-6)
        assert expected_loss(inst, res.z) == pytest.approx(res.upper_bound, rel=1e-9)


# ---------------------------------------------------------------- Benders = full LP
@pytest.mark.parametrize(
    "labels",
    [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2], [0] * 6, [0, 1, 2, 3, 4, 5], [0, 1, 0, 1, 0, 1], [2, 2, 0, 0, 0, 1]],
)
@pytest.mark.parametrize("stabilize", [1.0, 0.5])
def test_benders_equals_the_full_lp_for_any_partition(labels, stabilize):
    """Spec 9.1 item 4, including one block (no boundary) and blocks without internal records;
    plain Kelley (the paper) and in-out stabilised separation."""
    inst = line(1.0)
    value, _ = lp_optimum(inst)
    res = B.benders(inst, Partition.from_labels(labels, inst.graph), gap=1e-9, stabilize=stabilize)
    assert res.status in ("optimal", "gap reached")
    assert res.upper_bound == pytest.approx(value, rel=1e-7)
    assert res.lower_bound <= value + 1e-9
    assert row_sum_error(res.z) < 1e-7 and max_mdp_violation(inst, res.z) == 0.0


@settings(max_examples=20)
@given(
    st.integers(0, 10**6),
    st.integers(1, 5),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.sampled_from([1.0, 1.5]),
    st.sampled_from([1.0, 0.5, 0.2]),
)
def test_benders_bounds_and_cuts_on_random_partitions(seed, m, eps, eta, stabilize):
    """Items 4-6: LB non-decreasing, LB <= LP* <= UB at every iteration, every cut valid at the
    restriction of the full-LP optimum; also for cuts separated at in-out (stabilised) points."""
    inst = grid(eps, eta, 4, 5)
    labels = np.random.default_rng(seed).integers(0, m, inst.N)
    part = Partition.from_labels(labels, inst.graph)
    value, zstar = lp_optimum(inst)
    cuts = []
    original = BM.Master.add_cut

    def record(self, block, cols, const, coeff):
        cuts.append((block, cols, const, coeff))
        return original(self, block, cols, const, coeff)

    BM.Master.add_cut = record
    try:
        res = B.benders(inst, part, gap=1e-8, stabilize=stabilize)
    finally:
        BM.Master.add_cut = original
    h = res.history
    assert (np.diff(h["LB"]) >= -1e-9).all()
    assert (h["LB"] <= value + 1e-7).all()
    assert (h["UB_t"].dropna() >= value - 1e-7).all()
    assert res.upper_bound == pytest.approx(value, rel=1e-6)
    zy = zstar[part.all_boundary].ravel()
    wstar = {b: float(inst.weighted_cost[x].ravel() @ zstar[x].ravel()) for b, x in enumerate(part.internal)}
    for block, cols, const, coeff in cuts:
        phi = const + coeff @ zy[cols]
        if block is None:
            assert phi <= 1e-6
        else:
            assert phi <= wstar[block] + 1e-6


@pytest.mark.parametrize("stabilize", [0.0, -0.5, 1.5])
def test_stabilize_outside_its_range_is_refused(stabilize):
    inst = line(1.0)
    with pytest.raises(DataValidationError, match="stabilize"):
        B.benders(inst, Partition.from_labels([0, 0, 0, 1, 1, 1], inst.graph), stabilize=stabilize)


def test_paper_literal_cut_gives_an_invalid_bound():
    """Negative oracle (spec 9.5, erratum A1): adding c_Y z_Y to the optimality cut double counts."""
    inst = line(1.0)
    value, _ = lp_optimum(inst)
    part = Partition.from_labels([0, 0, 0, 1, 1, 1], inst.graph)
    y = part.all_boundary
    original = BM.Master.add_cut

    def literal(self, block, cols, const, coeff):
        if block is not None:  # + c_{Y_l} z_{Y_l}: the block's own boundary records
            coeff = coeff.copy()
            mine = np.isin(y[cols // inst.K], part.boundary[block])
            coeff[mine] += inst.weighted_cost[y[cols // inst.K], cols % inst.K][mine]
        return original(self, block, cols, const, coeff)

    BM.Master.add_cut = literal
    try:
        res = B.benders(inst, part, gap=1e-9, max_iter=50)
    finally:
        BM.Master.add_cut = original
    assert res.lower_bound > value + 1e-3  # an invalid "lower bound": the paper-literal cut is wrong
    honest = B.benders(inst, part, gap=1e-9)
    assert honest.lower_bound <= value + 1e-9


# ---------------------------------------------------------------- structural properties
def test_components_solve_independently():
    """Property 3.1: two far-apart clusters; the optimum is the sum of per-cluster optima."""
    pts = np.array([[0.0], [1.0], [2.0], [100.0], [101.0]])
    d = euclidean_distances(pts)
    cost = d[:, [0, 2, 3, 4]]
    inst = MDPInstance(d, cost, np.full(5, 0.2), 1.0, 1.0)
    assert len(np.unique(inst.graph.components)) == 2
    parts = 0.0
    for members in ([0, 1, 2], [3, 4]):
        mass = 0.2 * len(members)  # the cluster's prior mass, renormalised inside the cluster
        sub = MDPInstance(d[np.ix_(members, members)], cost[members], np.full(len(members), 0.2 / mass), 1.0, 1.0)
        parts += mass * lp_optimum(sub)[0]
    assert lp_optimum(inst)[0] == pytest.approx(parts, rel=1e-9)


def test_dominance_and_monotonicity():
    """Items 8-9: LP <= exponential mechanism; LP non-increasing in eps, non-decreasing in eta."""
    base = grid(1.0, 1.0, 4, 4)
    for eps in (0.5, 1.0, 2.0):
        inst = base.with_privacy(epsilon=eps)
        z = exponential_mechanism(inst)
        assert lp_optimum(inst)[0] <= expected_loss(inst, z) + 1e-12
        assert max_mdp_violation(inst, z) == 0.0 and max_path_violation(inst, z) < 1e-12
    by_eps = [lp_optimum(base.with_privacy(epsilon=e))[0] for e in (0.25, 0.5, 1.0, 2.0, 4.0)]
    assert all(a >= b - 1e-12 for a, b in zip(by_eps, by_eps[1:], strict=False))
    by_eta = [lp_optimum(base.with_privacy(eta=h))[0] for h in (1.0, 1.5, 2.0, 3.0)]
    assert all(a <= b + 1e-12 for a, b in zip(by_eta, by_eta[1:], strict=False))


@settings(max_examples=30)
@given(st.integers(0, 10**6), st.integers(1, 6))
def test_partition_bookkeeping(seed, m):
    """Item 10: X and Y split each block, cross pairs have boundary ends, sizes add up."""
    inst = grid(1.0, 1.5, 4, 5)
    labels = np.random.default_rng(seed).integers(0, m, inst.N)
    part = Partition.from_labels(labels, inst.graph)
    g = inst.graph
    for b in range(part.M):
        block = np.flatnonzero(part.labels == b)
        assert set(block) == set(part.boundary[b]) | set(part.internal[b])
        assert not set(part.boundary[b]) & set(part.internal[b])
    cross = part.labels[g.src] != part.labels[g.dst]
    assert np.isin(g.src[cross], part.all_boundary).all()
    from_internal = np.isin(g.src, np.concatenate(part.internal))
    assert (part.labels[g.src[from_internal]] == part.labels[g.dst[from_internal]]).all()
    subs = BS.build_subproblems(inst, part, part.all_boundary)
    assert [s.a.shape[1] for s in subs] == [len(x) * inst.K for x in part.internal if len(x)]


# ---------------------------------------------------------------- Pyomo models and the plugin
def test_pyomo_full_lp_matches_the_matrix_lp():
    inst = grid(1.0, 1.5)
    m = build_full_lp(inst)
    res = SolverFactory("highs").solve(m)
    assert res.incumbent_objective == pytest.approx(lp_optimum(inst)[0], rel=1e-9)
    assert max_additive_mdp_gap(inst, perturbation_matrix(m, inst, raw=True)) < 1e-9  # HiGHS met its rows
    assert max_mdp_violation(inst, perturbation_matrix(m, inst)) == 0.0  # the returned matrix is private


def test_benders_plugin_solves_the_full_model():
    inst = grid(2.0, 1.0)
    m = build_full_lp(inst)
    res = SolverFactory("mdp_benders").solve(m, partition=quadrants(), gap=1e-8)
    assert res.incumbent_objective == pytest.approx(0.4107434282, rel=1e-6)
    assert res.objective_bound <= res.incumbent_objective + 1e-12
    assert pyo.value(m.objective) == pytest.approx(res.incumbent_objective, rel=1e-9)
    assert list(res.extra_info.history.columns)[:4] == ["iteration", "LB", "UB_t", "best UB"]
    assert res.solution_status.name == "feasible"  # a certified gap, not a proof: never "optimal"
    slack = build_full_lp(inst, mdp_slack=0.01)
    with pytest.raises(Exception, match="relaxations"):
        SolverFactory("mdp_benders").solve(slack)


def test_benders_default_blocks_fit_the_model_and_too_many_are_refused():
    """Issue: the old default blocks=25 failed on a 12-record model (k-means needs M <= N).  The
    default is min(25, max(1, N // 20)) (the paper's 25 blocks for 500 records); a given number
    above N is refused, naming ``blocks``, by the plugin and by solve_data."""
    from dpmodels import instances
    from dpmodels.core.errors import SolverOptionError
    from dpmodels.metricdp.models import FullLPPayload
    from dpmodels.solvers.mdp_benders import MDPBendersSolver, default_blocks

    assert [default_blocks(n) for n in (1, 12, 39, 40, 80, 500, 5000)] == [1, 1, 1, 2, 4, 25, 25]
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=4, epsilon=1.0, eta=1.5)
    value, _ = lp_optimum(inst)
    model = build_full_lp(inst)
    res = SolverFactory("mdp_benders").solve(model)
    assert res.termination_condition.name == "convergenceCriteriaSatisfied"
    assert res.objective_bound <= value + 1e-9 and res.incumbent_objective == pytest.approx(value, rel=1e-3)
    for blocks in (2, 12):  # any number up to N fits (12: every record its own block)
        res = SolverFactory("mdp_benders").solve(build_full_lp(inst), blocks=blocks, gap=1e-6)
        assert res.incumbent_objective == pytest.approx(value, rel=1e-5)
    with pytest.raises(SolverOptionError, match="blocks=13 exceeds the model's 12 records"):
        SolverFactory("mdp_benders").solve(build_full_lp(inst), blocks=13)
    with pytest.raises(SolverOptionError, match="blocks=25 exceeds"):
        MDPBendersSolver.solve_data(FullLPPayload(inst), blocks=25)
    with pytest.raises(ValueError, match="blocks"):
        SolverFactory("mdp_benders").solve(build_full_lp(inst), blocks=0)
    assert MDPBendersSolver.solve_data(FullLPPayload(inst), blocks=3).upper_bound == pytest.approx(value, rel=1e-3)


@pytest.mark.parametrize("solver", ["mdp_benders", "mdp_ipm"])
def test_mdp_plugins_log_iterations_under_tee_and_honour_time_limits(solver, capsys):
    from dpmodels import instances

    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=4, K=4, epsilon=1.0, eta=1.5)
    SolverFactory(solver).solve(build_full_lp(inst))
    assert "iteration" not in capsys.readouterr().out
    res = SolverFactory(solver).solve(build_full_lp(inst), tee=True)
    out = capsys.readouterr().out
    lines = re.findall(r"iteration +\d+ +LB", out)
    assert lines and len(lines) == res.extra_info.iterations
    res = SolverFactory(solver).solve(
        build_full_lp(inst), time_limit=0.0, raise_exception_on_nonoptimal_result=False, load_solutions=False
    )
    assert res.termination_condition.name == "maxTimeLimit" and res.extra_info.status == "time limit"
    assert res.incumbent_objective is None


# ---------------------------------------------------------------- validation
def test_bad_instances_are_refused():
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    c = np.ones((2, 2))
    p = np.array([0.5, 0.5])
    with pytest.raises(DataValidationError, match="symmetric"):
        MDPInstance(np.array([[0.0, 1.0], [2.0, 0.0]]), c, p, 1.0, 1.0)
    with pytest.raises(DataValidationError, match="non-negative"):
        MDPInstance(-d, c, p, 1.0, 1.0)
    with pytest.raises(DataValidationError, match="sum to 1"):
        MDPInstance(d, c, np.array([0.5, 0.6]), 1.0, 1.0)
    with pytest.raises(DataValidationError, match="cost"):
        MDPInstance(d, -c, p, 1.0, 1.0)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        MDPInstance(d, c, p, 0.0, 1.0)
    with pytest.raises(PrivacyParameterError, match="overflows"):
        MDPInstance(d, c, p, 800.0, 1.0)
    with pytest.warns(RuntimeWarning, match="badly scaled"):
        MDPInstance(d, c, p, 30.0, 1.0)
    with pytest.warns(RuntimeWarning, match="certified"):
        MDPInstance(d, c, p, 10.0, 2.0)  # the paper grid at eps = 10/km: HiGHS's simplex measured suboptimal
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MDPInstance(d, c, p, 9.0, 2.0)
