"""The IPM's primal recovery: the mDP closure against shortest paths, purified points exactly mDP
and never below the LP optimum (HiGHS), and the run that stops earlier because of them."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from mdp_cases import random_instance
from scipy.sparse.csgraph import shortest_path

from dpmodels import instances
from dpmodels.metricdp.ipm import structured_ipm
from dpmodels.metricdp.ipm.recovery import purify
from dpmodels.metricdp.lp import full_lp
from dpmodels.metricdp.privacy_audit import expected_loss, is_exactly_mdp, mdp_closure, row_sum_error


def closure_by_shortest_paths(inst, z):
    """``max_i z_ik exp(-eps D_ij)`` with D the graph's shortest paths (Dijkstra): the oracle."""
    g = inst.graph
    graph = sp.csr_matrix((g.dist + 1e-300, (g.src, g.dst)), shape=(inst.N, inst.N))
    dist = shortest_path(graph, directed=True)
    with np.errstate(over="ignore"):
        reach = np.exp(-inst.epsilon * dist)  # 0 where unreachable
    np.fill_diagonal(reach, 1.0)
    return (reach[:, :, None] * z[:, None, :]).max(axis=0)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 14),
    st.integers(1, 5),
    st.sampled_from([0.5, 2.0, 8.0]),
    st.sampled_from([0.8, 1.5, 3.0]),
    st.floats(0.0, 0.9),
)
def test_closure_is_the_least_mdp_matrix_above_its_input(seed, n, k, eps, eta, sparsity):
    inst = random_instance(seed, n, k, eps, eta)
    rng = np.random.default_rng(seed)
    z = rng.random((n, k)) * (rng.random((n, k)) > sparsity)
    closed = mdp_closure(inst, z)
    assert (closed >= z).all()
    g = inst.graph
    assert (closed[g.src] <= g.coef[:, None] * closed[g.dst] * (1 + 1e-12)).all()  # every mDP row
    np.testing.assert_allclose(closed, closure_by_shortest_paths(inst, z), rtol=1e-12, atol=0)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 12), st.integers(1, 5), st.sampled_from([0.5, 2.0, 6.0]))
def test_purified_points_are_exactly_mdp_and_never_below_the_optimum(seed, n, k, eps):
    inst = random_instance(seed, n, k, eps, 1.5)
    rng = np.random.default_rng(seed)
    x = rng.dirichlet(np.ones(k), size=n).T  # any positive iterate, output-major
    zx = rng.random((k, n)) * rng.choice([1e-3, 1.0, 1e3])
    z, loss, weight = purify(inst, x, zx)
    assert is_exactly_mdp(inst, z) and row_sum_error(z) <= 1e-12 and 0.0 <= weight <= 1.0
    assert loss == pytest.approx(expected_loss(inst, z), rel=1e-12)
    opt = full_lp(inst).solve().objective
    assert loss >= opt - 1e-9 * max(1.0, abs(opt))


def test_purified_upper_bounds_end_the_eps_10_grid_earlier():
    """eps = 10/km on a 1 km grid (the optimum nearly deterministic): the purified points give
    the certified upper bound at the end, the run stops at the gap, and its mechanism passes the
    exact audit and lies within the gap of HiGHS's optimum."""
    inst = instances.generate("mdp/grid", seed=0, rows=6, cols=8, K=12, epsilon=10.0, eta=2.0)
    res = structured_ipm(inst, gap=1e-4)
    assert res.status == "gap reached"
    assert res.history["UB from"].iloc[-1] == "purified"
    last = res.history.iloc[-1]
    assert last["purified UB"] == pytest.approx(res.upper_bound, rel=1e-15)
    assert is_exactly_mdp(inst, res.z)
    opt = full_lp(inst).solve().objective
    assert res.lower_bound <= opt * (1 + 1e-7) and opt <= res.upper_bound * (1 + 1e-7)
    assert res.upper_bound - res.lower_bound <= 1e-4 * res.upper_bound
